-- History search over message text, not the stored JSON. Each message keeps
-- its role and plain text beside its body; an FTS5 index holds the text and
-- three reach tokens (`t<hex tenant>`, `o<hex tenant/principal>`,
-- `s<hex session>`), so a search intersects the owner's posting list with
-- the query's instead of ranking every match in the tenant. The index is
-- contentless: hits are joined back to `messages` by rowid.
ALTER TABLE messages ADD COLUMN role TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN text TEXT NOT NULL DEFAULT '';

UPDATE messages SET
    role = COALESCE(json_extract(body, '$.role'), ''),
    text = CASE json_type(body, '$.content')
        WHEN 'text' THEN json_extract(body, '$.content')
        ELSE '' END
WHERE json_valid(body);

CREATE VIRTUAL TABLE messages_fts USING fts5(
    reach, text,
    content = '', contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages
WHEN new.text <> ''
BEGIN
    INSERT INTO messages_fts (rowid, reach, text)
    SELECT new.id,
           't' || hex(s.tenant_id) || ' o' || hex(s.tenant_id || '/' || s.principal_id)
               || ' s' || hex(new.session_id),
           new.text
    FROM sessions s WHERE s.id = new.session_id;
END;

CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages
BEGIN
    DELETE FROM messages_fts WHERE rowid = old.id;
END;

INSERT INTO messages_fts (rowid, reach, text)
SELECT m.id,
       't' || hex(s.tenant_id) || ' o' || hex(s.tenant_id || '/' || s.principal_id)
           || ' s' || hex(m.session_id),
       m.text
FROM messages m JOIN sessions s ON s.id = m.session_id
WHERE m.text <> '';

-- Browse: the owner's sessions, most recently updated first.
CREATE INDEX sessions_owner_updated ON sessions (tenant_id, principal_id, updated_at);

-- Operator actions that cross principals (e.g. a tenant-wide history
-- search), each with its stated reason; tenant admins read them.
CREATE TABLE audit_log (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id     TEXT NOT NULL,
    principal_id  TEXT NOT NULL,
    role          TEXT NOT NULL,
    action        TEXT NOT NULL,
    reason        TEXT NOT NULL,
    -- JSON: what was done (e.g. the query's length and scope), never secrets.
    detail        TEXT NOT NULL,
    created_at    BIGINT NOT NULL
);
CREATE INDEX audit_log_tenant ON audit_log (tenant_id, id);

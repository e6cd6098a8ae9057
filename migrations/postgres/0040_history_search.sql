-- History search over message text, not the stored JSON. Each message keeps
-- its role and plain text beside its body; `tsv` holds the text's lexemes
-- ('simple' configuration: no stemming, any language) plus three reach
-- lexemes (`t<hex tenant>`, `o<hex tenant/principal>`, `s<hex session>`),
-- so one GIN scan intersects the owner's posting list with the query's.
-- Reach lexemes carry weight A and are queried as `:A`; words of the text
-- have weight D, so a message cannot forge another owner's reach.
ALTER TABLE messages ADD COLUMN role TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN text TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN tsv tsvector;

CREATE FUNCTION messages_reach(tenant TEXT, principal TEXT, session TEXT) RETURNS tsvector
LANGUAGE sql IMMUTABLE AS $$
    SELECT setweight(to_tsvector('simple',
        't' || encode(convert_to(tenant, 'UTF8'), 'hex')
        || ' o' || encode(convert_to(tenant || '/' || principal, 'UTF8'), 'hex')
        || ' s' || encode(convert_to(session, 'UTF8'), 'hex')), 'A')
$$;

CREATE FUNCTION messages_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.text <> '' THEN
        SELECT to_tsvector('simple', NEW.text)
               || messages_reach(s.tenant_id, s.principal_id, NEW.session_id)
        INTO NEW.tsv
        FROM sessions s WHERE s.id = NEW.session_id;
    END IF;
    RETURN NEW;
END
$$;

UPDATE messages SET
    role = COALESCE(body::jsonb ->> 'role', ''),
    text = CASE jsonb_typeof(body::jsonb -> 'content')
        WHEN 'string' THEN body::jsonb ->> 'content'
        ELSE '' END;
UPDATE messages m SET tsv = to_tsvector('simple', m.text)
    || messages_reach(s.tenant_id, s.principal_id, m.session_id)
FROM sessions s WHERE s.id = m.session_id AND m.text <> '';

CREATE TRIGGER messages_tsv BEFORE INSERT ON messages
    FOR EACH ROW EXECUTE FUNCTION messages_tsv();
CREATE INDEX messages_tsv ON messages USING GIN (tsv);

-- Browse: the owner's sessions, most recently updated first.
CREATE INDEX sessions_owner_updated ON sessions (tenant_id, principal_id, updated_at);

-- Operator actions that cross principals (e.g. a tenant-wide history
-- search), each with its stated reason; tenant admins read them.
CREATE TABLE audit_log (
    id            BIGSERIAL PRIMARY KEY,
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

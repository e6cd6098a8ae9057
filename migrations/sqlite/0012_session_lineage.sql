-- Child sessions of `delegate_task`: which session delegated, how deep the
-- child sits, the deepest delegation it may reach, and the tools it may see
-- (NULL: every tool of its core; a JSON array: only those). Written once,
-- when the child session is created, before its first turn; never changed.
CREATE TABLE session_lineage (
    session_id         TEXT PRIMARY KEY,
    parent_session_id  TEXT NOT NULL,
    tenant_id          TEXT NOT NULL,
    principal_id       TEXT NOT NULL,
    parent_core        TEXT NOT NULL,
    depth              INTEGER NOT NULL,
    max_depth          INTEGER NOT NULL,
    tools              TEXT,
    created_at         BIGINT NOT NULL
);
CREATE INDEX session_lineage_parent ON session_lineage (parent_session_id);

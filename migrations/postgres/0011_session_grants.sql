-- `allow_session` approvals, held in the database so every instance honours
-- a grant made on any of them and a revocation reaches all at once. The key
-- binds tenant, principal, session, core fingerprint and rule; `requirement`
-- is the authority that granted it (an owner's grant never stands in for a
-- request that needs an operator).
CREATE TABLE session_grants (
    cache_key     TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL,
    principal_id  TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    requirement   TEXT NOT NULL,
    expires_at    BIGINT NOT NULL,
    created_at    BIGINT NOT NULL
);
CREATE INDEX session_grants_session ON session_grants (tenant_id, principal_id, session_id);

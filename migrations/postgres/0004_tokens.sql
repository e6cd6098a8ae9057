-- Token safety: an append-only log of revocations and principal toggles that
-- every instance polls by id, and a principal's disabled flag.
-- kind: 'jti' (tenant_id may be NULL: every tenant), 'principal' (tokens with
-- iat <= cutoff), 'disable', 'enable'. cutoff: Unix seconds of the change.
CREATE TABLE token_revocations (
    id            BIGSERIAL PRIMARY KEY,
    kind          TEXT NOT NULL,
    tenant_id     TEXT,
    principal_id  TEXT,
    jti           TEXT,
    cutoff        BIGINT NOT NULL,
    created_at    BIGINT NOT NULL
);
CREATE INDEX token_revocations_principal ON token_revocations (tenant_id, principal_id, cutoff);

ALTER TABLE principals ADD COLUMN disabled_at BIGINT;

-- Budgets: a tenant admin's limits for the tenant (principal_id '') or one
-- principal (kind 'budget'), and the server operator's ceiling for the
-- tenant (kind 'ceiling'). Limits are JSON (`usage::budget::Limits`); a
-- missing limit is no limit.
CREATE TABLE budgets (
    tenant_id    TEXT NOT NULL,
    principal_id TEXT NOT NULL,
    kind         TEXT NOT NULL,
    limits       TEXT NOT NULL,
    updated_at   BIGINT NOT NULL,
    updated_by   TEXT NOT NULL,
    PRIMARY KEY (tenant_id, principal_id, kind)
);

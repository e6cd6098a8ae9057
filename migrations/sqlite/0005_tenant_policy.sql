-- Who may decide approvals. A tenant's policy names the highest risk a member
-- may decide for itself (none|low|medium|high|critical); a tenant without a
-- row uses the default (high). Each approval records, when it is created,
-- whether its owner may decide it or a tenant operator must.
CREATE TABLE tenant_policies (
    tenant_id        TEXT PRIMARY KEY,
    member_max_risk  TEXT NOT NULL,
    updated_at       BIGINT NOT NULL,
    -- Principal (of the same tenant) who last set it.
    updated_by       TEXT NOT NULL
);

-- owner | operator
ALTER TABLE approvals ADD COLUMN requires TEXT NOT NULL DEFAULT 'owner';
-- Principal who decided (NULL while pending or when expired).
ALTER TABLE approvals ADD COLUMN decided_by TEXT;
CREATE INDEX approvals_tenant_requires ON approvals (tenant_id, requires, state, created_at);

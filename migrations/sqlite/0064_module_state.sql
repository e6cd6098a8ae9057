-- Host-managed slot state (`ctx.state.core` / `ctx.state.session`): one
-- JSON document per (tenant, core, scope); `scope` is `core` or
-- `session:<session id>`. `version` grows by one with every write (writes
-- compare it, so two instances never lose each other's update);
-- `updated_by` is the slot path that wrote last and `updated_turn` its turn.
CREATE TABLE module_state (
    tenant_id     TEXT NOT NULL,
    core_id       TEXT NOT NULL,
    scope         TEXT NOT NULL,
    body          TEXT NOT NULL,
    version       BIGINT NOT NULL,
    updated_by    TEXT NOT NULL,
    updated_turn  TEXT,
    updated_at    BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, core_id, scope)
);

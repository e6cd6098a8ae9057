-- Schedules (`schedule_manage`): a prompt run as a turn in the schedule's
-- own session whenever `spec` comes due. `next_fire_at` is the claim: an
-- instance fires a run only by moving it forward from the value it read
-- (a conditional UPDATE), so each due time fires once across instances.
-- NULL `next_fire_at`: nothing more to run (a one-shot that ran).
CREATE TABLE schedules (
    id             TEXT PRIMARY KEY,
    tenant_id      TEXT NOT NULL,
    principal_id   TEXT NOT NULL,
    owner_role     TEXT NOT NULL,
    name           TEXT NOT NULL,
    core           TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    spec           TEXT NOT NULL,
    prompt         TEXT NOT NULL,
    enabled        INTEGER NOT NULL,
    next_fire_at   BIGINT,
    last_fired_at  BIGINT,
    last_turn_id   TEXT,
    fire_count     BIGINT NOT NULL DEFAULT 0,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL,
    UNIQUE (tenant_id, principal_id, name)
);
CREATE INDEX schedules_due ON schedules (enabled, next_fire_at);

-- A tenant's admin stream (`GET /v1/tenant/events`): events about the
-- tenant as a whole, not one session (a budget warning). `id` is the
-- resume point. `once_key`, when set, makes an event happen once across
-- every instance: the insert that conflicts on it adds nothing (a budget
-- warning's key names the limit, its period and the level). `payload` is
-- the event's `{"type","data"}` JSON. Pruned after 62 days, longer than
-- any budget period, so a key outlives the period it guards.
CREATE TABLE tenant_events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id  TEXT NOT NULL,
    once_key   TEXT,
    payload    TEXT NOT NULL,
    at         BIGINT NOT NULL
);
CREATE INDEX tenant_events_tenant ON tenant_events (tenant_id, id);
CREATE UNIQUE INDEX tenant_events_once ON tenant_events (tenant_id, once_key);
CREATE INDEX tenant_events_at ON tenant_events (at);

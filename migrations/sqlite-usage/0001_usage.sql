-- The usage file (SQLite only): the usage tables in a file of their own
-- beside the database, so their writes have a writer of their own. The
-- same tables as migrations 0070, 0071 and 0073 of the database, in their
-- final shape; the server moves rows an older database holds in its own
-- copies here at start (see store/migrate.rs).
CREATE TABLE usage_model_calls (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id      TEXT NOT NULL,
    principal_id   TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    core_id        TEXT NOT NULL,
    channel        TEXT NOT NULL,
    provider       TEXT NOT NULL,
    model          TEXT NOT NULL,
    input_tokens   BIGINT,
    output_tokens  BIGINT,
    cached_tokens  BIGINT,
    latency_ms     BIGINT NOT NULL,
    at             BIGINT NOT NULL,
    rolled         SMALLINT NOT NULL DEFAULT 0
);
CREATE INDEX usage_model_calls_unrolled ON usage_model_calls (id) WHERE rolled = 0;
CREATE INDEX usage_model_calls_at ON usage_model_calls (at);

CREATE TABLE usage_tool_calls (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id      TEXT NOT NULL,
    principal_id   TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    core_id        TEXT NOT NULL,
    channel        TEXT NOT NULL,
    tool           TEXT NOT NULL,
    status         TEXT NOT NULL,
    calls          BIGINT NOT NULL,
    cpu_ms         BIGINT NOT NULL,
    outbound_bytes BIGINT NOT NULL,
    latency_ms     BIGINT NOT NULL,
    at             BIGINT NOT NULL,
    rolled         SMALLINT NOT NULL DEFAULT 0
);
CREATE INDEX usage_tool_calls_unrolled ON usage_tool_calls (id) WHERE rolled = 0;
CREATE INDEX usage_tool_calls_at ON usage_tool_calls (at);

CREATE TABLE usage_hourly (
    tenant_id       TEXT NOT NULL,
    hour            BIGINT NOT NULL,
    principal_id    TEXT NOT NULL,
    core_id         TEXT NOT NULL,
    channel         TEXT NOT NULL,
    provider        TEXT NOT NULL,
    model           TEXT NOT NULL,
    tool            TEXT NOT NULL,
    status          TEXT NOT NULL,
    model_calls     BIGINT NOT NULL,
    unmetered_calls BIGINT NOT NULL,
    input_tokens    BIGINT NOT NULL,
    output_tokens   BIGINT NOT NULL,
    cached_tokens   BIGINT NOT NULL,
    latency_ms      BIGINT NOT NULL,
    tool_calls      BIGINT NOT NULL,
    cpu_ms          BIGINT NOT NULL,
    outbound_bytes  BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, hour, principal_id, core_id, channel, provider, model, tool, status)
);
CREATE INDEX usage_hourly_hour ON usage_hourly (hour);

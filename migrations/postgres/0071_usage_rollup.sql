-- Usage metering, second part: tool calls and process time, and the hourly
-- roll-up.
--
-- A raw row is rolled up once: the worker that adds it to usage_hourly
-- flips its `rolled` flag in the same transaction, so concurrent workers
-- (several instances) never count a row twice, and a reader adds the
-- unrolled raw rows to the roll-ups in one statement. Raw rows are pruned
-- after the raw window, roll-ups after theirs.
ALTER TABLE usage_model_calls ADD COLUMN rolled SMALLINT NOT NULL DEFAULT 0;
CREATE INDEX usage_model_calls_unrolled ON usage_model_calls (id) WHERE rolled = 0;
CREATE INDEX usage_model_calls_at ON usage_model_calls (at);

-- One tool call (calls = 1, with its status), or process time measured
-- after the call that started it returned (calls = 0: a background
-- command's CPU when it is reaped).
CREATE TABLE usage_tool_calls (
    id             BIGSERIAL PRIMARY KEY,
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
CREATE INDEX usage_tool_calls_tenant_at ON usage_tool_calls (tenant_id, at);
CREATE INDEX usage_tool_calls_unrolled ON usage_tool_calls (id) WHERE rolled = 0;
CREATE INDEX usage_tool_calls_at ON usage_tool_calls (at);

-- Hourly sums per tenant and attribution. A model call's row has empty
-- tool and status; a tool's row empty provider and model.
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

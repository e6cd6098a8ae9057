-- Usage metering, raw rows: one per model call, attributed to its tenant,
-- principal, session, core and channel (empty: not a chat channel's turn).
-- Token counts are NULL when the provider reported none (unknown, not
-- zero). `latency_ms` is the call's wall time; `at` when it ended (ms).
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
    at             BIGINT NOT NULL
);
CREATE INDEX usage_model_calls_tenant_at ON usage_model_calls (tenant_id, at);

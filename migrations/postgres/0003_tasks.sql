-- Durable background tasks (terminal(background=true) first) and their logs.
CREATE TABLE tasks (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL,
    principal_id  TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    node_id       TEXT NOT NULL,
    kind          TEXT NOT NULL,
    -- running | succeeded | failed | cancelled | lost
    status        TEXT NOT NULL,
    -- Bounded, redacted one-line description for model and operator views.
    summary       TEXT NOT NULL,
    -- Redacted result JSON once finished.
    result        TEXT,
    created_at    BIGINT NOT NULL,
    completed_at  BIGINT
);
CREATE INDEX tasks_owner ON tasks (tenant_id, principal_id, session_id, created_at);
CREATE INDEX tasks_node_running ON tasks (node_id) WHERE status = 'running';

CREATE TABLE task_logs (
    id          BIGSERIAL PRIMARY KEY,
    task_id     TEXT NOT NULL,
    stream      TEXT NOT NULL,
    chunk       TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX task_logs_task ON task_logs (task_id, id);

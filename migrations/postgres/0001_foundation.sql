-- Foundation: tenants, principals, sessions, turns, messages and the event log.
-- Timestamps are Unix milliseconds; JSON is stored as TEXT.
CREATE TABLE tenants (
    id          TEXT PRIMARY KEY,
    created_at  BIGINT NOT NULL
);

CREATE TABLE principals (
    tenant_id   TEXT NOT NULL REFERENCES tenants(id),
    id          TEXT NOT NULL,
    role        TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE sessions (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL,
    principal_id  TEXT NOT NULL,
    title         TEXT NOT NULL,
    core          TEXT NOT NULL,
    workspace     TEXT NOT NULL,
    provider      TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    -- Highest event seq handed out; bumped in the same transaction as the insert.
    last_seq      BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX sessions_owner ON sessions (tenant_id, principal_id, id);

CREATE TABLE turns (
    id            TEXT PRIMARY KEY,
    session_id    TEXT NOT NULL REFERENCES sessions(id),
    tenant_id     TEXT NOT NULL,
    principal_id  TEXT NOT NULL,
    status        TEXT NOT NULL,
    input         TEXT NOT NULL,
    output        TEXT,
    reason        TEXT,
    error         TEXT,
    node_id       TEXT NOT NULL,
    steps         BIGINT NOT NULL DEFAULT 0,
    created_at    BIGINT NOT NULL,
    finished_at   BIGINT
);
-- At most one running turn per session, enforced by the database on every backend.
CREATE UNIQUE INDEX turns_one_running ON turns (session_id) WHERE status = 'running';
CREATE INDEX turns_session ON turns (session_id, created_at);
CREATE INDEX turns_node_running ON turns (node_id) WHERE status = 'running';

CREATE TABLE messages (
    id          BIGSERIAL PRIMARY KEY,
    session_id  TEXT NOT NULL,
    turn_id     TEXT NOT NULL,
    body        TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX messages_session ON messages (session_id, id);

CREATE TABLE events (
    session_id  TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    turn_id     TEXT,
    type        TEXT NOT NULL,
    at          TEXT NOT NULL,
    data        TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);

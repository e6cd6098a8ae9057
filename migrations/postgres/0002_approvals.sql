-- Approvals and clarifications: durable records of a turn waiting on a human.
CREATE TABLE approvals (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL,
    principal_id  TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    turn_id       TEXT NOT NULL,
    node_id       TEXT NOT NULL,
    tool          TEXT NOT NULL,
    risk          TEXT NOT NULL,
    rule          TEXT NOT NULL,
    reason        TEXT NOT NULL,
    -- Redacted, length-bounded argument preview (JSON).
    preview       TEXT NOT NULL,
    fingerprint   TEXT NOT NULL,
    session_cacheable BIGINT NOT NULL,
    -- pending | allowed | denied | expired
    state         TEXT NOT NULL,
    -- allow_once | allow_session | deny (NULL while pending or when expired)
    decision      TEXT,
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL,
    decided_at    BIGINT
);
CREATE INDEX approvals_owner ON approvals (tenant_id, principal_id, state, created_at);
CREATE INDEX approvals_node_pending ON approvals (node_id) WHERE state = 'pending';

CREATE TABLE clarifications (
    id            TEXT PRIMARY KEY,
    tenant_id     TEXT NOT NULL,
    principal_id  TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    turn_id       TEXT NOT NULL,
    node_id       TEXT NOT NULL,
    question      TEXT NOT NULL,
    choices       TEXT NOT NULL,
    -- pending | answered | expired
    state         TEXT NOT NULL,
    answer        TEXT,
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL,
    answered_at   BIGINT
);
CREATE INDEX clarifications_node_pending ON clarifications (node_id) WHERE state = 'pending';

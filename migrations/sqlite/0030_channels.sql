-- Chat channels: accounts (credentials sealed with the server's channel key),
-- the inbox that makes platform retries run one turn, conversations bound to
-- sessions, pairing requests, approved platform users, and the outbox.
CREATE TABLE channel_accounts (
    id                TEXT PRIMARY KEY,
    tenant_id         TEXT NOT NULL,
    platform          TEXT NOT NULL,
    name              TEXT NOT NULL,
    -- base64(nonce || ciphertext) of the credentials JSON; never returned.
    credentials       TEXT NOT NULL,
    api_base_url      TEXT,
    allowed_users     TEXT NOT NULL,
    core              TEXT NOT NULL,
    created_by        TEXT NOT NULL,
    created_at        BIGINT NOT NULL,
    last_inbound_at   BIGINT,
    last_delivery_at  BIGINT,
    last_error        TEXT,
    last_error_at     BIGINT,
    pairing_failures  BIGINT NOT NULL DEFAULT 0,
    pairing_locked_until BIGINT
);
CREATE UNIQUE INDEX channel_accounts_name ON channel_accounts (tenant_id, name);

CREATE TABLE channel_inbox (
    account_id   TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    -- pending | done
    state        TEXT NOT NULL,
    payload      TEXT NOT NULL,
    received_at  BIGINT NOT NULL,
    PRIMARY KEY (account_id, event_id)
);
CREATE INDEX channel_inbox_pending ON channel_inbox (state, received_at);

CREATE TABLE channel_conversations (
    account_id    TEXT NOT NULL,
    chat          TEXT NOT NULL,
    thread        TEXT NOT NULL,
    -- The platform user in group chats (sessions are per user there), else ''.
    member        TEXT NOT NULL,
    session_id    TEXT NOT NULL,
    principal_id  TEXT NOT NULL,
    -- Highest event seq of the session already turned into outbox rows.
    relayed_seq   BIGINT NOT NULL DEFAULT 0,
    -- Discord: the interaction token of the latest /ask and when it came.
    reply_handle  TEXT,
    handle_at     BIGINT,
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (account_id, chat, thread, member)
);
CREATE INDEX channel_conversations_session ON channel_conversations (session_id);

CREATE TABLE channel_members (
    account_id     TEXT NOT NULL,
    platform_user  TEXT NOT NULL,
    approved_by    TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    PRIMARY KEY (account_id, platform_user)
);

CREATE TABLE channel_pairings (
    account_id     TEXT NOT NULL,
    platform_user  TEXT NOT NULL,
    -- pending | refused
    state          TEXT NOT NULL,
    code           TEXT,
    chat           TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    PRIMARY KEY (account_id, platform_user)
);

CREATE TABLE channel_outbox (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id    TEXT NOT NULL,
    chat          TEXT NOT NULL,
    thread        TEXT,
    payload       TEXT NOT NULL,
    -- pending | sent | failed
    state         TEXT NOT NULL,
    attempts      BIGINT NOT NULL DEFAULT 0,
    next_at       BIGINT NOT NULL,
    lease_until   BIGINT NOT NULL DEFAULT 0,
    last_error    TEXT,
    created_at    BIGINT NOT NULL,
    sent_at       BIGINT
);
CREATE INDEX channel_outbox_due ON channel_outbox (state, next_at, id);

-- Where an approval card landed, so the decision can edit it.
CREATE TABLE channel_cards (
    approval_id   TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL,
    chat          TEXT NOT NULL,
    message_ref   TEXT NOT NULL,
    text          TEXT NOT NULL
);

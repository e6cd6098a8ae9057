-- Context compaction: older turns of a session summarized for the model.
-- A turn sends the latest summary plus the messages after `until_message_id`
-- (within the model's context window). Messages themselves are never deleted.
CREATE TABLE session_compactions (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id        TEXT NOT NULL,
    -- The last message (messages.id) the summary covers.
    until_message_id  BIGINT NOT NULL,
    summary           TEXT NOT NULL,
    created_at        BIGINT NOT NULL
);
CREATE INDEX session_compactions_session ON session_compactions (session_id, id);

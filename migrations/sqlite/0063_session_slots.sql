-- The slot pipeline of a session: which input/output slots its turns run
-- (NULL: the core's whole pipeline; a JSON array: those ids, as
-- `delegate_task` resolved them for a child session), whether bootstrap
-- slots run for it (1/0), and the bootstrap snapshot once they ran (the
-- text every turn of the session carries; `bootstrapped_at` NULL: not yet).
CREATE TABLE session_slots (
    session_id       TEXT PRIMARY KEY,
    tenant_id        TEXT NOT NULL,
    input_slots      TEXT,
    output_slots     TEXT,
    use_bootstrap    INTEGER NOT NULL,
    bootstrap_text   TEXT,
    bootstrapped_at  BIGINT,
    created_at       BIGINT NOT NULL
);

-- Schedules live as files in each core's `schedules/` folder (the original
-- format, which has no owner key). The database keeps only what a file
-- cannot: who a schedule runs as, and which due times have run. The rows of
-- the old `schedules` table are not migrated (their schedules are gone; an
-- owner re-creates them with `schedule_manage`).
DROP TABLE IF EXISTS schedules;

-- Who a schedule runs as: written when `schedule_manage` writes the file.
-- A file with no row here runs as nobody (never, fail closed). `since_ms`:
-- due times up to it are settled (before the schedule existed, or while it
-- was paused); the workspace and provider of its runs' fresh sessions are
-- those of the session that created it. `file_digest` is the SHA-256 of
-- the file as `schedule_manage` wrote it (rendered from its parsed form): a
-- file changed any other way no longer matches and runs as nobody. `last_*` and `run_count` are its
-- latest run (kept here so the tick reads one row per schedule and old
-- `schedule_runs` rows can go).
CREATE TABLE schedule_owners (
    tenant_id     TEXT NOT NULL,
    core          TEXT NOT NULL,
    schedule_id   TEXT NOT NULL,
    principal_id  TEXT NOT NULL,
    owner_role    TEXT NOT NULL,
    workspace     TEXT NOT NULL,
    provider      TEXT NOT NULL,
    since_ms      BIGINT NOT NULL,
    file_digest   TEXT NOT NULL,
    last_due      BIGINT,
    last_started  BIGINT,
    last_session  TEXT,
    last_status   TEXT,
    run_count     BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, core, schedule_id)
);

-- One row per run: the key is the exactly-once claim (`INSERT ... ON
-- CONFLICT DO NOTHING`; the instance whose insert lands starts the run).
-- Rows of due times more than a day before a schedule's latest run are
-- deleted when it runs (those due times are settled by `last_due`).
CREATE TABLE schedule_runs (
    tenant_id     TEXT NOT NULL,
    core          TEXT NOT NULL,
    schedule_id   TEXT NOT NULL,
    due_at        BIGINT NOT NULL,
    session_id    TEXT NOT NULL,
    status        TEXT NOT NULL,
    started_at    BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, core, schedule_id, due_at)
);

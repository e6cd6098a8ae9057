-- The instances serving this database, one row per node id: each beats
-- while it serves (`heartbeat_at`, every third of `--instance-lease`); a
-- survivor that finds one silent for longer than the lease marks it `lost`
-- and fails the turns it left running, so their sessions take new turns.
-- `boot_id` tells a restart of the same instance from a second process
-- claiming its id; `host`, `pid` and `pid_marker` (the process's start
-- time) let a restart on the same host see at once that the previous
-- holder is gone.
CREATE TABLE instances (
    node_id       TEXT PRIMARY KEY,
    boot_id       TEXT NOT NULL,
    address       TEXT NOT NULL,
    host          TEXT NOT NULL,
    pid           BIGINT NOT NULL,
    pid_marker    BIGINT NOT NULL,
    state         TEXT NOT NULL,
    started_at    BIGINT NOT NULL,
    heartbeat_at  BIGINT NOT NULL
);

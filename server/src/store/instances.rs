//! The instances serving this database and their heartbeats
//! (see [`crate::instances`]).

use sqlx::Row;

use super::Store;

/// The process holding an instance id: its host, pid and start marker.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Holder {
    pub host: String,
    pub pid: i64,
    pub marker: i64,
}

/// One instance as the database last heard of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceRow {
    pub node_id: String,
    pub boot_id: String,
    pub address: String,
    /// The process behind it.
    pub holder: Holder,
    /// `serving`, `draining`, `stopped` or `lost`.
    pub state: String,
    pub started_at: i64,
    pub heartbeat_at: i64,
}

const COLUMNS: &str =
    "node_id, boot_id, address, state, started_at, heartbeat_at, host, pid, pid_marker";

fn row(r: &sqlx::any::AnyRow) -> Result<InstanceRow, sqlx::Error> {
    Ok(InstanceRow {
        node_id: r.try_get(0)?,
        boot_id: r.try_get(1)?,
        address: r.try_get(2)?,
        state: r.try_get(3)?,
        started_at: r.try_get(4)?,
        heartbeat_at: r.try_get(5)?,
        holder: Holder {
            host: r.try_get(6)?,
            pid: r.try_get(7)?,
            marker: r.try_get(8)?,
        },
    })
}

impl Store {
    /// Every instance the database knows, newest heartbeat first.
    pub async fn instances(&self) -> Result<Vec<InstanceRow>, sqlx::Error> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM instances ORDER BY heartbeat_at DESC, node_id"
        )))
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(row).collect()
    }

    /// Take `node_id` for this process (`boot_id`), serving from now.
    pub async fn register_instance(
        &self,
        node_id: &str,
        boot_id: &str,
        address: &str,
        holder: &Holder,
        now: i64,
    ) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "INSERT INTO instances (node_id, boot_id, address, state, started_at, heartbeat_at, host, pid, pid_marker) \
             VALUES ($1, $2, $3, 'serving', $4, $4, $5, $6, $7) \
             ON CONFLICT (node_id) DO UPDATE SET boot_id = $2, address = $3, state = 'serving', \
             started_at = $4, heartbeat_at = $4, host = $5, pid = $6, pid_marker = $7",
        )
        .bind(node_id)
        .bind(boot_id)
        .bind(address)
        .bind(now)
        .bind(&holder.host)
        .bind(holder.pid)
        .bind(holder.marker)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// One heartbeat; `false` when the row is no longer this process's or
    /// a survivor declared it lost (the caller registers again).
    pub async fn beat_instance(
        &self,
        node_id: &str,
        boot_id: &str,
        now: i64,
    ) -> Result<bool, sqlx::Error> {
        let _gate = self.write_gate().await;
        let r = sqlx::query(
            "UPDATE instances SET heartbeat_at = $3 \
             WHERE node_id = $1 AND boot_id = $2 AND state IN ('serving', 'draining')",
        )
        .bind(node_id)
        .bind(boot_id)
        .bind(now)
        .execute(self.pool())
        .await?;
        Ok(r.rows_affected() > 0)
    }

    /// Set this process's row's state (`draining`, `stopped`).
    pub async fn set_instance_state(
        &self,
        node_id: &str,
        boot_id: &str,
        state: &str,
    ) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query("UPDATE instances SET state = $3 WHERE node_id = $1 AND boot_id = $2")
            .bind(node_id)
            .bind(boot_id)
            .bind(state)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Claim every serving or draining instance silent since before
    /// `silent_before`: marked `lost` at once, so one survivor handles each.
    pub async fn claim_silent_instances(
        &self,
        silent_before: i64,
    ) -> Result<Vec<InstanceRow>, sqlx::Error> {
        let _gate = self.write_gate().await;
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE instances SET state = 'lost' \
             WHERE state IN ('serving', 'draining') AND heartbeat_at < $1 RETURNING {COLUMNS}"
        )))
        .bind(silent_before)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(row).collect()
    }
}

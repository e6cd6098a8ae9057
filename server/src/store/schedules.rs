//! Schedules' database side: who each schedule file runs as
//! (`schedule_owners`) and the runs it had (`schedule_runs`), whose key
//! (tenant, core, schedule id, due time) is the exactly-once claim: the
//! instance whose `INSERT … ON CONFLICT DO NOTHING` lands starts the run.

use sqlx::any::AnyRow;
use sqlx::Row;

use super::Store;
use crate::ids::{PrincipalId, SessionId, TenantId};
use crate::time::now_ms;

/// The owner of one schedule file and the state of its runs.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ScheduleOwner {
    pub tenant_id: String,
    pub core: String,
    pub schedule_id: String,
    pub principal_id: String,
    pub owner_role: String,
    pub workspace: String,
    pub provider: String,
    /// Due times up to this are settled (before it existed, or paused).
    pub since_ms: i64,
    /// SHA-256 of the file as `schedule_manage` wrote it.
    pub file_digest: String,
    /// The latest due time that ran.
    pub last_due: Option<i64>,
    /// When the latest run started, and its session.
    pub last_started: Option<i64>,
    pub last_session: Option<String>,
    /// How the latest run went (`started`, `failed: …`).
    pub last_status: Option<String>,
    pub run_count: i64,
}

/// Who writes a schedule's owner row.
#[derive(Debug, Clone)]
pub struct NewScheduleOwner<'a> {
    pub tenant: &'a TenantId,
    pub core: &'a str,
    pub schedule_id: &'a str,
    pub principal: &'a PrincipalId,
    pub owner_role: &'a str,
    pub workspace: &'a str,
    pub provider: &'a str,
    pub file_digest: &'a str,
    /// Settle due times up to now (a new, rescheduled or resumed schedule);
    /// else an existing row keeps its `since_ms`.
    pub settle: bool,
}

const SELECT: &str = "SELECT tenant_id, core, schedule_id, principal_id, owner_role, \
     workspace, provider, since_ms, file_digest, last_due, last_started, last_session, last_status, \
     run_count FROM schedule_owners";

/// Rows of `schedule_runs` older than this before a schedule's latest run
/// are deleted (`last_due` settles them).
const KEEP_RUNS_MS: i64 = 24 * 3600 * 1000;

fn decode(r: &AnyRow) -> Result<ScheduleOwner, sqlx::Error> {
    Ok(ScheduleOwner {
        tenant_id: r.try_get("tenant_id")?,
        core: r.try_get("core")?,
        schedule_id: r.try_get("schedule_id")?,
        principal_id: r.try_get("principal_id")?,
        owner_role: r.try_get("owner_role")?,
        workspace: r.try_get("workspace")?,
        provider: r.try_get("provider")?,
        since_ms: r.try_get("since_ms")?,
        file_digest: r.try_get("file_digest")?,
        last_due: r.try_get("last_due")?,
        last_started: r.try_get("last_started")?,
        last_session: r.try_get("last_session")?,
        last_status: r.try_get("last_status")?,
        run_count: r.try_get("run_count")?,
    })
}

impl Store {
    /// Record (or replace) who a schedule runs as.
    pub async fn put_schedule_owner(&self, o: &NewScheduleOwner<'_>) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "INSERT INTO schedule_owners (tenant_id, core, schedule_id, principal_id, \
             owner_role, workspace, provider, since_ms, file_digest) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
             ON CONFLICT (tenant_id, core, schedule_id) DO UPDATE SET \
             principal_id = excluded.principal_id, owner_role = excluded.owner_role, \
             workspace = excluded.workspace, provider = excluded.provider, \
             file_digest = excluded.file_digest, \
             since_ms = CASE WHEN $10 = 1 THEN excluded.since_ms \
             ELSE schedule_owners.since_ms END",
        )
        .bind(o.tenant.as_str())
        .bind(o.core)
        .bind(o.schedule_id)
        .bind(o.principal.as_str())
        .bind(o.owner_role)
        .bind(o.workspace)
        .bind(o.provider)
        .bind(now_ms())
        .bind(o.file_digest)
        .bind(i32::from(o.settle))
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Forget a deleted schedule's owner and runs (a new schedule of the
    /// same id starts afresh).
    pub async fn delete_schedule_owner(
        &self,
        tenant: &TenantId,
        core: &str,
        schedule_id: &str,
    ) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        for table in ["schedule_owners", "schedule_runs"] {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DELETE FROM {table} WHERE tenant_id = $1 AND core = $2 AND schedule_id = $3"
            )))
            .bind(tenant.as_str())
            .bind(core)
            .bind(schedule_id)
            .execute(self.pool())
            .await?;
        }
        Ok(())
    }

    /// Every owned schedule of every tenant (the scheduler's tick).
    pub async fn all_schedule_owners(&self) -> Result<Vec<ScheduleOwner>, sqlx::Error> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SELECT} ORDER BY tenant_id, core, schedule_id"
        )))
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(decode).collect()
    }

    /// The owned schedules of one tenant.
    pub async fn tenant_schedule_owners(
        &self,
        tenant: &TenantId,
    ) -> Result<Vec<ScheduleOwner>, sqlx::Error> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SELECT} WHERE tenant_id = $1 ORDER BY core, schedule_id"
        )))
        .bind(tenant.as_str())
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(decode).collect()
    }

    /// Claim the run of a schedule due at `due`, to run in `session`; `true`
    /// for exactly one claimer across instances.
    pub async fn claim_schedule_run(
        &self,
        tenant: &str,
        core: &str,
        schedule_id: &str,
        due: i64,
        session: SessionId,
    ) -> Result<bool, sqlx::Error> {
        let _gate = self.write_gate().await;
        let res = sqlx::query(
            "INSERT INTO schedule_runs (tenant_id, core, schedule_id, due_at, session_id, \
             status, started_at) VALUES ($1, $2, $3, $4, $5, 'claimed', $6) \
             ON CONFLICT (tenant_id, core, schedule_id, due_at) DO NOTHING",
        )
        .bind(tenant)
        .bind(core)
        .bind(schedule_id)
        .bind(due)
        .bind(session.to_string())
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        if res.rows_affected() != 1 {
            return Ok(false);
        }
        sqlx::query(
            "UPDATE schedule_owners SET \
             last_due = CASE WHEN last_due IS NULL OR last_due < $1 THEN $1 ELSE last_due END, \
             last_started = $2, last_session = $3, last_status = 'claimed', \
             run_count = run_count + 1 \
             WHERE tenant_id = $4 AND core = $5 AND schedule_id = $6",
        )
        .bind(due)
        .bind(now_ms())
        .bind(session.to_string())
        .bind(tenant)
        .bind(core)
        .bind(schedule_id)
        .execute(self.pool())
        .await?;
        sqlx::query(
            "DELETE FROM schedule_runs WHERE tenant_id = $1 AND core = $2 \
             AND schedule_id = $3 AND due_at < $4",
        )
        .bind(tenant)
        .bind(core)
        .bind(schedule_id)
        .bind(due.saturating_sub(KEEP_RUNS_MS))
        .execute(self.pool())
        .await?;
        Ok(true)
    }

    /// How a claimed run went (`started`, `busy`, `failed: …`).
    pub async fn set_schedule_run_status(
        &self,
        tenant: &str,
        core: &str,
        schedule_id: &str,
        due: i64,
        status: &str,
    ) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "UPDATE schedule_runs SET status = $1 WHERE tenant_id = $2 AND core = $3 \
             AND schedule_id = $4 AND due_at = $5",
        )
        .bind(status)
        .bind(tenant)
        .bind(core)
        .bind(schedule_id)
        .bind(due)
        .execute(self.pool())
        .await?;
        sqlx::query(
            "UPDATE schedule_owners SET last_status = $1 WHERE tenant_id = $2 AND core = $3 \
             AND schedule_id = $4 AND last_due = $5",
        )
        .bind(status)
        .bind(tenant)
        .bind(core)
        .bind(schedule_id)
        .bind(due)
        .execute(self.pool())
        .await?;
        Ok(())
    }
}

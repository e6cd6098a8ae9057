//! Schedules: owner-scoped rows, and the conditional UPDATE that claims a
//! due run (the first instance to move `next_fire_at` on from the value it
//! read fires it; the others' updates match nothing).

use sqlx::any::AnyRow;
use sqlx::{AssertSqlSafe, Row};

use super::{id, Store};
use crate::ids::{PrincipalId, SessionId, TenantId};
use crate::time::now_ms;

#[derive(Debug, Clone, serde::Serialize)]
pub struct ScheduleRow {
    pub id: String,
    pub tenant_id: String,
    pub principal_id: String,
    pub owner_role: String,
    /// The owner's name for it (`schedule_id`).
    pub name: String,
    pub core: String,
    pub session_id: SessionId,
    pub spec: String,
    pub prompt: String,
    pub enabled: bool,
    pub next_fire_at: Option<i64>,
    pub last_fired_at: Option<i64>,
    pub last_turn_id: Option<String>,
    pub fire_count: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "id, tenant_id, principal_id, owner_role, name, core, session_id, spec, \
     prompt, enabled, next_fire_at, last_fired_at, last_turn_id, fire_count, created_at, updated_at";

fn decode(r: &AnyRow) -> Result<ScheduleRow, sqlx::Error> {
    let enabled: i64 = r
        .try_get::<i32, _>("enabled")
        .map(i64::from)
        .or_else(|_| r.try_get("enabled"))?;
    Ok(ScheduleRow {
        id: r.try_get("id")?,
        tenant_id: r.try_get("tenant_id")?,
        principal_id: r.try_get("principal_id")?,
        owner_role: r.try_get("owner_role")?,
        name: r.try_get("name")?,
        core: r.try_get("core")?,
        session_id: id(r, "session_id")?,
        spec: r.try_get("spec")?,
        prompt: r.try_get("prompt")?,
        enabled: enabled != 0,
        next_fire_at: r.try_get("next_fire_at")?,
        last_fired_at: r.try_get("last_fired_at")?,
        last_turn_id: r.try_get("last_turn_id")?,
        fire_count: r.try_get("fire_count")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

#[derive(Debug, Clone)]
pub struct NewSchedule<'a> {
    pub id: &'a str,
    pub tenant: &'a TenantId,
    pub principal: &'a PrincipalId,
    pub owner_role: &'a str,
    pub name: &'a str,
    pub core: &'a str,
    pub session_id: SessionId,
    pub spec: &'a str,
    pub prompt: &'a str,
    pub next_fire_at: i64,
}

impl Store {
    /// Insert a schedule unless the tenant already has `max`; `false` when
    /// the cap refused it. The count and the insert share one statement.
    pub async fn insert_schedule(
        &self,
        s: &NewSchedule<'_>,
        max: i64,
    ) -> Result<bool, sqlx::Error> {
        let now = now_ms();
        let _gate = self.write_gate().await;
        let res = sqlx::query(
            "INSERT INTO schedules (id, tenant_id, principal_id, owner_role, name, core, session_id, \
             spec, prompt, enabled, next_fire_at, fire_count, created_at, updated_at) \
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, 1, $10, 0, $11, $11 \
             WHERE (SELECT COUNT(*) FROM schedules WHERE tenant_id = $2) < $12",
        )
        .bind(s.id)
        .bind(s.tenant.as_str())
        .bind(s.principal.as_str())
        .bind(s.owner_role)
        .bind(s.name)
        .bind(s.core)
        .bind(s.session_id.to_string())
        .bind(s.spec)
        .bind(s.prompt)
        .bind(s.next_fire_at)
        .bind(now)
        .bind(max)
        .execute(self.pool())
        .await?;
        Ok(res.rows_affected() == 1)
    }

    /// The caller's schedules, by name.
    pub async fn list_schedules(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
    ) -> Result<Vec<ScheduleRow>, sqlx::Error> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM schedules WHERE tenant_id = $1 AND principal_id = $2 \
             ORDER BY name LIMIT 1000"
        )))
        .bind(tenant.as_str())
        .bind(principal.as_str())
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(decode).collect()
    }

    /// One of the caller's schedules by name (`schedule_id`) or row id.
    pub async fn get_schedule(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
        key: &str,
    ) -> Result<Option<ScheduleRow>, sqlx::Error> {
        let row = sqlx::query(AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM schedules WHERE tenant_id = $1 AND principal_id = $2 \
             AND (name = $3 OR id = $3)"
        )))
        .bind(tenant.as_str())
        .bind(principal.as_str())
        .bind(key)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(decode).transpose()
    }

    /// Change a schedule of the caller; `false` if it is not theirs.
    #[allow(clippy::too_many_arguments)]
    pub async fn update_schedule(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
        id: &str,
        spec: &str,
        prompt: &str,
        enabled: bool,
        next_fire_at: Option<i64>,
    ) -> Result<bool, sqlx::Error> {
        let _gate = self.write_gate().await;
        let res = sqlx::query(
            "UPDATE schedules SET spec = $1, prompt = $2, enabled = $3, next_fire_at = $4, \
             updated_at = $5 WHERE id = $6 AND tenant_id = $7 AND principal_id = $8",
        )
        .bind(spec)
        .bind(prompt)
        .bind(i32::from(enabled))
        .bind(next_fire_at)
        .bind(now_ms())
        .bind(id)
        .bind(tenant.as_str())
        .bind(principal.as_str())
        .execute(self.pool())
        .await?;
        Ok(res.rows_affected() == 1)
    }

    pub async fn delete_schedule(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
        id: &str,
    ) -> Result<bool, sqlx::Error> {
        let _gate = self.write_gate().await;
        let res = sqlx::query(
            "DELETE FROM schedules WHERE id = $1 AND tenant_id = $2 AND principal_id = $3",
        )
        .bind(id)
        .bind(tenant.as_str())
        .bind(principal.as_str())
        .execute(self.pool())
        .await?;
        Ok(res.rows_affected() == 1)
    }

    /// Enabled schedules due at `now`, oldest due first.
    pub async fn due_schedules(
        &self,
        now: i64,
        limit: u32,
    ) -> Result<Vec<ScheduleRow>, sqlx::Error> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM schedules WHERE enabled = 1 AND next_fire_at IS NOT NULL \
             AND next_fire_at <= $1 ORDER BY next_fire_at LIMIT $2"
        )))
        .bind(now)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(decode).collect()
    }

    /// Claim the run due at `due`: move `next_fire_at` to `next` (NULL and
    /// disabled when there is none). `true` for exactly one claimer.
    pub async fn claim_schedule_run(
        &self,
        id: &str,
        due: i64,
        next: Option<i64>,
    ) -> Result<bool, sqlx::Error> {
        let _gate = self.write_gate().await;
        let res = sqlx::query(
            "UPDATE schedules SET next_fire_at = $1, enabled = $2, last_fired_at = $3, \
             fire_count = fire_count + 1 \
             WHERE id = $4 AND enabled = 1 AND next_fire_at = $5",
        )
        .bind(next)
        .bind(i32::from(next.is_some()))
        .bind(now_ms())
        .bind(id)
        .bind(due)
        .execute(self.pool())
        .await?;
        Ok(res.rows_affected() == 1)
    }

    /// Record the turn a run started.
    pub async fn set_schedule_turn(&self, id: &str, turn: &str) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query("UPDATE schedules SET last_turn_id = $1 WHERE id = $2")
            .bind(turn)
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Stop a schedule whose session is gone.
    pub async fn disable_schedule(&self, id: &str) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query("UPDATE schedules SET enabled = 0, updated_at = $1 WHERE id = $2")
            .bind(now_ms())
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(())
    }
}

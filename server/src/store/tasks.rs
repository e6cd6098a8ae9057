//! Background tasks, their queue and their bounded logs. Every transition is
//! a conditional UPDATE, so terminal states and completion deliveries happen
//! exactly once, whichever instance gets there first. Claims take the oldest
//! queued task whose owner is under the running caps: `FOR UPDATE SKIP
//! LOCKED` on PostgreSQL (concurrent claimers never wait on each other), one
//! statement behind the write gate on SQLite (the single writer).

use sqlx::any::AnyRow;
use sqlx::{AssertSqlSafe, Row};

use super::{id, vocab, Store};
use crate::config::Backend;
use crate::ids::{PrincipalId, SessionId, TenantId};
use crate::time::now_ms;
use crate::wire::{Completion, TaskStatus};

#[derive(Debug, Clone, serde::Serialize)]
pub struct TaskRow {
    pub id: String,
    pub tenant_id: String,
    pub session_id: SessionId,
    pub principal_id: String,
    pub owner_role: String,
    pub node_id: String,
    pub kind: String,
    pub status: TaskStatus,
    pub summary: String,
    pub result: Option<String>,
    pub metadata: Option<String>,
    pub completion: Completion,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub completed_at: Option<i64>,
}

const COLUMNS: &str =
    "id, tenant_id, session_id, principal_id, owner_role, node_id, kind, status, \
     summary, result, metadata, completion, created_at, started_at, completed_at";

fn decode(r: &AnyRow) -> Result<TaskRow, sqlx::Error> {
    Ok(TaskRow {
        id: r.try_get("id")?,
        tenant_id: r.try_get("tenant_id")?,
        session_id: id(r, "session_id")?,
        principal_id: r.try_get("principal_id")?,
        owner_role: r.try_get("owner_role")?,
        node_id: r.try_get("node_id")?,
        kind: r.try_get("kind")?,
        status: vocab(r, "status")?,
        summary: r.try_get("summary")?,
        result: r.try_get("result")?,
        metadata: r.try_get("metadata")?,
        completion: vocab(r, "completion")?,
        created_at: r.try_get("created_at")?,
        started_at: r.try_get("started_at")?,
        completed_at: r.try_get("completed_at")?,
    })
}

#[derive(Debug, Clone)]
pub struct NewTask<'a> {
    pub id: &'a str,
    pub tenant: &'a TenantId,
    pub principal: &'a PrincipalId,
    pub owner_role: &'a str,
    pub session_id: SessionId,
    pub node_id: &'a str,
    pub kind: &'a str,
    pub summary: &'a str,
    pub completion: Completion,
    pub metadata: Option<&'a str>,
    pub lease_until: i64,
}

/// A task a worker just claimed.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub id: String,
    pub created_at: i64,
    pub started_at: i64,
}

/// A task whose instance stopped renewing its lease, now `lost`.
#[derive(Debug, Clone)]
pub struct TakenOver {
    pub id: String,
    pub session_id: SessionId,
    pub kind: String,
    pub summary: String,
    pub node_id: String,
    /// The process group it was running (JSON), if any.
    pub process: Option<String>,
}

/// The running caps a claim respects.
#[derive(Debug, Clone, Copy)]
pub struct ClaimCaps {
    pub per_tenant: i64,
    pub per_principal: i64,
}

/// `completion` after a task ends: a wanted notification becomes pending.
const COMPLETION_ON_END: &str =
    "completion = CASE WHEN completion = 'wanted' THEN 'pending' ELSE completion END";

impl Store {
    pub async fn insert_task(&self, t: &NewTask<'_>) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "INSERT INTO tasks (id, tenant_id, principal_id, owner_role, session_id, node_id, kind, \
             status, summary, completion, metadata, lease_until, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'queued', $8, $9, $10, $11, $12)",
        )
        .bind(t.id)
        .bind(t.tenant.as_str())
        .bind(t.principal.as_str())
        .bind(t.owner_role)
        .bind(t.session_id.to_string())
        .bind(t.node_id)
        .bind(t.kind)
        .bind(t.summary)
        .bind(t.completion.as_str())
        .bind(t.metadata)
        .bind(t.lease_until)
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Claim the oldest queued task of this node whose tenant and principal
    /// are under their running caps; `None` when nothing is claimable.
    pub async fn claim_task(
        &self,
        node_id: &str,
        lease_until: i64,
        caps: ClaimCaps,
    ) -> Result<Option<Claimed>, sqlx::Error> {
        let lock = match self.backend() {
            Backend::Postgres => "FOR UPDATE SKIP LOCKED",
            Backend::Sqlite => "",
        };
        let sql = format!(
            "UPDATE tasks SET status = 'running', started_at = $1, lease_until = $2 \
             WHERE status = 'queued' AND id = ( \
               SELECT q.id FROM tasks q WHERE q.status = 'queued' AND q.node_id = $3 \
                 AND (SELECT COUNT(*) FROM tasks r WHERE r.tenant_id = q.tenant_id \
                      AND r.status = 'running') < $4 \
                 AND (SELECT COUNT(*) FROM tasks r WHERE r.tenant_id = q.tenant_id \
                      AND r.principal_id = q.principal_id AND r.status = 'running') < $5 \
               ORDER BY q.created_at, q.id LIMIT 1 {lock}) \
             RETURNING id, created_at, started_at"
        );
        let _gate = self.write_gate().await;
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(now_ms())
            .bind(lease_until)
            .bind(node_id)
            .bind(caps.per_tenant)
            .bind(caps.per_principal)
            .fetch_optional(self.pool())
            .await?;
        row.map(|r| {
            Ok(Claimed {
                id: r.try_get(0)?,
                created_at: r.try_get(1)?,
                started_at: r.try_get(2)?,
            })
        })
        .transpose()
    }

    /// Extend the lease of every queued or running task of this node.
    pub async fn renew_task_leases(
        &self,
        node_id: &str,
        lease_until: i64,
    ) -> Result<u64, sqlx::Error> {
        let _gate = self.write_gate().await;
        let res = sqlx::query(
            "UPDATE tasks SET lease_until = $1 WHERE node_id = $2 AND status IN ('queued', 'running')",
        )
        .bind(lease_until)
        .bind(node_id)
        .execute(self.pool())
        .await?;
        Ok(res.rows_affected())
    }

    /// Mark this node's queued tasks `lost`: it is stopping and their work
    /// lived in its memory.
    pub async fn abandon_queued_tasks(&self, node_id: &str) -> Result<Vec<TakenOver>, sqlx::Error> {
        let now = now_ms();
        let _gate = self.write_gate().await;
        let rows = sqlx::query(AssertSqlSafe(format!(
            "UPDATE tasks SET status = 'lost', completed_at = $1, \
             result = '{{\"reason\":\"shutdown\"}}', {COMPLETION_ON_END} \
             WHERE node_id = $2 AND status = 'queued' RETURNING {TAKEN_OVER}"
        )))
        .bind(now)
        .bind(node_id)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(taken_over).collect()
    }

    /// Mark every queued or running task whose lease expired `lost`.
    pub async fn take_over_expired_tasks(&self) -> Result<Vec<TakenOver>, sqlx::Error> {
        let now = now_ms();
        let _gate = self.write_gate().await;
        let rows = sqlx::query(AssertSqlSafe(format!(
            "UPDATE tasks SET status = 'lost', completed_at = $1, \
             result = '{{\"reason\":\"lost\"}}', {COMPLETION_ON_END} \
             WHERE status IN ('queued', 'running') AND lease_until IS NOT NULL AND lease_until < $1 \
             RETURNING {TAKEN_OVER}"
        )))
        .bind(now)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(taken_over).collect()
    }

    /// Settle a task that is in one of `from`; false if it was not (it had
    /// already moved on). A wanted completion becomes pending.
    pub async fn finish_task(
        &self,
        id: &str,
        from: &[TaskStatus],
        status: TaskStatus,
        result: &str,
        summary: Option<&str>,
    ) -> Result<bool, sqlx::Error> {
        let from = status_list(from);
        let _gate = self.write_gate().await;
        let res = sqlx::query(AssertSqlSafe(format!(
            "UPDATE tasks SET status = $1, result = $2, completed_at = $3, \
             summary = COALESCE($4, summary), {COMPLETION_ON_END} \
             WHERE id = $5 AND status IN ({from})"
        )))
        .bind(status.as_str())
        .bind(result)
        .bind(now_ms())
        .bind(summary)
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(res.rows_affected() == 1)
    }

    /// Ask the instance running a task to cancel it (it sees the flag on
    /// its next lease renewal if the notification was missed).
    pub async fn request_task_cancel(&self, id: &str) -> Result<bool, sqlx::Error> {
        let _gate = self.write_gate().await;
        let res = sqlx::query(
            "UPDATE tasks SET cancel_requested = 1 WHERE id = $1 AND status IN ('queued', 'running')",
        )
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(res.rows_affected() == 1)
    }

    /// Running tasks of this node someone asked to cancel.
    pub async fn cancel_requested_tasks(&self, node_id: &str) -> Result<Vec<String>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT id FROM tasks WHERE node_id = $1 AND status IN ('queued', 'running') \
             AND cancel_requested = 1",
        )
        .bind(node_id)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(|r| r.try_get(0)).collect()
    }

    /// Record the process group a task runs (for takeover by a survivor).
    pub async fn set_task_process(&self, id: &str, process: &str) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query("UPDATE tasks SET process = $1 WHERE id = $2")
            .bind(process)
            .bind(id)
            .execute(self.pool())
            .await?;
        Ok(())
    }

    /// Move the completion of a task from one of `from` to `to`; false if
    /// it was in none of them (someone else settled it).
    pub async fn set_task_completion(
        &self,
        id: &str,
        from: &[Completion],
        to: Completion,
    ) -> Result<bool, sqlx::Error> {
        let from: Vec<String> = from.iter().map(|c| format!("'{}'", c.as_str())).collect();
        let _gate = self.write_gate().await;
        let res = sqlx::query(AssertSqlSafe(format!(
            "UPDATE tasks SET completion = $1 WHERE id = $2 AND completion IN ({})",
            from.join(", ")
        )))
        .bind(to.as_str())
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(res.rows_affected() == 1)
    }

    /// `yield_until`'s return in one statement: if the caller's task has a
    /// status a wait returns on, consume its completion (unless already
    /// delivered or consumed) and return the row; `None` when it has not
    /// settled (or is not the caller's).
    pub async fn settle_task_wait(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
        id: &str,
    ) -> Result<Option<TaskRow>, sqlx::Error> {
        let settled: Vec<String> = TaskStatus::ALL
            .iter()
            .filter(|s| s.settles_wait())
            .map(|s| format!("'{}'", s.as_str()))
            .collect();
        let consumable: Vec<String> = [
            Completion::Wanted,
            Completion::Pending,
            Completion::Delivering,
        ]
        .iter()
        .map(|c| format!("'{}'", c.as_str()))
        .collect();
        let sql = format!(
            "UPDATE tasks SET completion = CASE WHEN completion IN ({}) THEN '{}' \
             ELSE completion END \
             WHERE id = $1 AND tenant_id = $2 AND principal_id = $3 AND status IN ({}) \
             RETURNING {COLUMNS}",
            consumable.join(", "),
            Completion::Consumed.as_str(),
            settled.join(", "),
        );
        let _gate = self.write_gate().await;
        let query = sqlx::query(AssertSqlSafe(sql))
            .bind(id)
            .bind(tenant.as_str())
            .bind(principal.as_str());
        let row = if self.backend() == Backend::Postgres {
            // The waiter should not wait for a WAL flush: a crash in the
            // next fraction of a second can at worst lose this consume
            // (the task's end itself was committed synchronously), and
            // then the completion turn runs after all.
            let mut tx = self.pool().begin().await?;
            sqlx::query("SET LOCAL synchronous_commit TO OFF")
                .execute(&mut *tx)
                .await?;
            let row = query.fetch_optional(&mut *tx).await?;
            tx.commit().await?;
            row
        } else {
            query.fetch_optional(self.pool()).await?
        };
        row.as_ref().map(decode).transpose()
    }

    /// Tasks whose completion turn is owed, oldest first.
    pub async fn pending_completions(&self, limit: u32) -> Result<Vec<TaskRow>, sqlx::Error> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM tasks WHERE completion = 'pending' ORDER BY completed_at LIMIT $1"
        )))
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(decode).collect()
    }

    /// `NOTIFY channel, payload` to the other instances (PostgreSQL only;
    /// SQLite has a single instance).
    pub async fn notify(&self, channel: &str, payload: &str) -> Result<(), sqlx::Error> {
        if self.backend() == Backend::Postgres {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(channel)
                .bind(payload)
                .execute(self.pool())
                .await?;
        }
        Ok(())
    }

    /// Tasks waiting for a worker, over all instances.
    pub async fn queued_task_count(&self) -> Result<i64, sqlx::Error> {
        let row = sqlx::query("SELECT COUNT(*) FROM tasks WHERE status = 'queued'")
            .fetch_one(self.pool())
            .await?;
        row.try_get(0)
    }

    /// A task by id, whoever owns it: host-internal only (completions,
    /// cancellation routing), never for a caller's request.
    pub async fn task_by_id(&self, id: &str) -> Result<Option<TaskRow>, sqlx::Error> {
        let sql = format!("SELECT {COLUMNS} FROM tasks WHERE id = $1");
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        row.as_ref().map(decode).transpose()
    }

    /// A task of this principal (or, with `any_principal`, of anyone in the tenant).
    pub async fn get_task(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
        id: &str,
        any_principal: bool,
    ) -> Result<Option<TaskRow>, sqlx::Error> {
        let row = if any_principal {
            let sql = format!("SELECT {COLUMNS} FROM tasks WHERE id = $1 AND tenant_id = $2");
            sqlx::query(AssertSqlSafe(sql))
                .bind(id)
                .bind(tenant.as_str())
                .fetch_optional(self.pool())
                .await?
        } else {
            let sql = format!("SELECT {COLUMNS} FROM tasks WHERE id = $1 AND tenant_id = $2 AND principal_id = $3");
            sqlx::query(AssertSqlSafe(sql))
                .bind(id)
                .bind(tenant.as_str())
                .bind(principal.as_str())
                .fetch_optional(self.pool())
                .await?
        };
        row.as_ref().map(decode).transpose()
    }

    /// The principal's tasks, newest first, optionally of one session.
    pub async fn list_tasks(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
        session_id: Option<SessionId>,
        limit: u32,
    ) -> Result<Vec<TaskRow>, sqlx::Error> {
        // An absent filter is a NULL parameter: one statement serves both cases.
        let sql = format!(
            "SELECT {COLUMNS} FROM tasks WHERE tenant_id = $1 AND principal_id = $2 \
             AND (CAST($3 AS TEXT) IS NULL OR session_id = $3) ORDER BY created_at DESC LIMIT $4"
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(tenant.as_str())
            .bind(principal.as_str())
            .bind(session_id.map(|s| s.to_string()))
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(decode).collect()
    }

    pub async fn append_task_log(
        &self,
        task_id: &str,
        stream: &str,
        chunk: &str,
    ) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "INSERT INTO task_logs (task_id, stream, chunk, created_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(task_id)
        .bind(stream)
        .bind(chunk)
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Bytes of task log stored per tenant (seeds the storage quota once at start-up).
    pub async fn task_log_bytes_by_tenant(&self) -> Result<Vec<(String, i64)>, sqlx::Error> {
        let length = match self.backend() {
            Backend::Sqlite => "LENGTH(CAST(l.chunk AS BLOB))",
            Backend::Postgres => "OCTET_LENGTH(l.chunk)",
        };
        let rows = sqlx::query(AssertSqlSafe(format!(
            "SELECT t.tenant_id, CAST(SUM({length}) AS BIGINT) FROM task_logs l \
             JOIN tasks t ON t.id = l.task_id GROUP BY t.tenant_id"
        )))
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get::<Option<i64>, _>(1)?.unwrap_or(0))))
            .collect()
    }

    /// Log chunks after row `after`, oldest first: (row id, stream, chunk).
    pub async fn task_logs(
        &self,
        task_id: &str,
        after: i64,
        limit: u32,
    ) -> Result<Vec<(i64, String, String)>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT id, stream, chunk FROM task_logs WHERE task_id = $1 AND id > $2 ORDER BY id LIMIT $3",
        )
        .bind(task_id)
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
            .collect()
    }

    /// Tasks this node left queued or running when it stopped become `lost`
    /// (their work lived in the stopped process).
    pub async fn fail_lost_tasks(
        &self,
        node_id: &str,
    ) -> Result<Vec<(String, SessionId)>, sqlx::Error> {
        let _gate = self.write_gate().await;
        let rows = sqlx::query(AssertSqlSafe(format!(
            "UPDATE tasks SET status = 'lost', completed_at = $1, \
             result = '{{\"reason\":\"lost\"}}', {COMPLETION_ON_END} \
             WHERE node_id = $2 AND status IN ('queued', 'running') RETURNING id, session_id"
        )))
        .bind(now_ms())
        .bind(node_id)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, id(r, "session_id")?)))
            .collect()
    }
}

/// `'a', 'b'` for an `IN (…)` of statuses (typed values only, never input).
fn status_list(statuses: &[TaskStatus]) -> String {
    statuses
        .iter()
        .map(|s| format!("'{}'", s.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The columns a settled-as-lost task is returned with ([`taken_over`]).
const TAKEN_OVER: &str = "id, session_id, kind, summary, node_id, process";

fn taken_over(r: &sqlx::any::AnyRow) -> Result<TakenOver, sqlx::Error> {
    Ok(TakenOver {
        id: r.try_get(0)?,
        session_id: id(r, "session_id")?,
        kind: r.try_get(2)?,
        summary: r.try_get(3)?,
        node_id: r.try_get(4)?,
        process: r.try_get(5)?,
    })
}

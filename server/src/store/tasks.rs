//! Background tasks and their bounded logs. Terminal states are reached
//! exactly once (conditional UPDATE), as for turns.

use sqlx::any::AnyRow;
use sqlx::Row;

use super::{vocab, Store};
use crate::ids::{PrincipalId, TenantId};
use crate::time::now_ms;
use crate::wire::TaskStatus;

#[derive(Debug, Clone, serde::Serialize)]
pub struct TaskRow {
    pub id: String,
    pub session_id: String,
    pub principal_id: String,
    pub kind: String,
    pub status: TaskStatus,
    pub summary: String,
    pub result: Option<String>,
    pub created_at: i64,
    pub completed_at: Option<i64>,
}

const COLUMNS: &str =
    "id, session_id, principal_id, kind, status, summary, result, created_at, completed_at";

fn decode(r: &AnyRow) -> Result<TaskRow, sqlx::Error> {
    Ok(TaskRow {
        id: r.try_get("id")?,
        session_id: r.try_get("session_id")?,
        principal_id: r.try_get("principal_id")?,
        kind: r.try_get("kind")?,
        status: vocab(r, "status")?,
        summary: r.try_get("summary")?,
        result: r.try_get("result")?,
        created_at: r.try_get("created_at")?,
        completed_at: r.try_get("completed_at")?,
    })
}

#[derive(Debug, Clone)]
pub struct NewTask<'a> {
    pub id: &'a str,
    pub tenant: &'a TenantId,
    pub principal: &'a PrincipalId,
    pub session_id: &'a str,
    pub node_id: &'a str,
    pub kind: &'a str,
    pub summary: &'a str,
}

impl Store {
    pub async fn insert_task(&self, t: &NewTask<'_>) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "INSERT INTO tasks (id, tenant_id, principal_id, session_id, node_id, kind, status, summary, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, 'running', $7, $8)",
        )
        .bind(t.id)
        .bind(t.tenant.as_str())
        .bind(t.principal.as_str())
        .bind(t.session_id)
        .bind(t.node_id)
        .bind(t.kind)
        .bind(t.summary)
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Settle a running task; false if it had already ended.
    pub async fn finish_task(
        &self,
        id: &str,
        status: TaskStatus,
        result: &str,
    ) -> Result<bool, sqlx::Error> {
        let _gate = self.write_gate().await;
        let res = sqlx::query(
            "UPDATE tasks SET status = $1, result = $2, completed_at = $3 WHERE id = $4 AND status = 'running'",
        )
        .bind(status.as_str())
        .bind(result)
        .bind(now_ms())
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(res.rows_affected() == 1)
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
            sqlx::query(&sql)
                .bind(id)
                .bind(tenant.as_str())
                .fetch_optional(self.pool())
                .await?
        } else {
            let sql = format!("SELECT {COLUMNS} FROM tasks WHERE id = $1 AND tenant_id = $2 AND principal_id = $3");
            sqlx::query(&sql)
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
        session_id: Option<&str>,
        limit: u32,
    ) -> Result<Vec<TaskRow>, sqlx::Error> {
        // An absent filter is a NULL parameter: one statement serves both cases.
        let sql = format!(
            "SELECT {COLUMNS} FROM tasks WHERE tenant_id = $1 AND principal_id = $2 \
             AND (CAST($3 AS TEXT) IS NULL OR session_id = $3) ORDER BY created_at DESC LIMIT $4"
        );
        let rows = sqlx::query(&sql)
            .bind(tenant.as_str())
            .bind(principal.as_str())
            .bind(session_id)
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
            crate::config::Backend::Sqlite => "LENGTH(CAST(l.chunk AS BLOB))",
            crate::config::Backend::Postgres => "OCTET_LENGTH(l.chunk)",
        };
        let rows = sqlx::query(&format!(
            "SELECT t.tenant_id, CAST(SUM({length}) AS BIGINT) FROM task_logs l \
             JOIN tasks t ON t.id = l.task_id GROUP BY t.tenant_id"
        ))
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

    /// Tasks this node left running when it stopped become `lost`.
    pub async fn fail_lost_tasks(
        &self,
        node_id: &str,
    ) -> Result<Vec<(String, String)>, sqlx::Error> {
        let _gate = self.write_gate().await;
        let rows = sqlx::query(
            "UPDATE tasks SET status = 'lost', completed_at = $1 WHERE node_id = $2 AND status = 'running' \
             RETURNING id, session_id",
        )
        .bind(now_ms())
        .bind(node_id)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect()
    }
}

//! The audit log (`audit_events`): one hash chain per tenant, appended in
//! the same transaction as the change a row records, with the chain's head
//! kept apart (`audit_heads`) and the heads of pruned stretches kept as
//! checkpoints (`audit_checkpoints`). The chain's arithmetic is
//! [`crate::audit::chain`]'s.

use sqlx::{Any, Row};

use super::Store;
use crate::audit_chain::{Link, GENESIS};
use crate::config::Backend;

/// Where a change came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Surface {
    /// The REST API.
    Rest,
    /// The browser console (REST calls the console marks as its own).
    Console,
    /// A session's WebSocket.
    WebSocket,
    /// A chat platform (`slack`, `telegram`, …).
    Chat(String),
    /// The server operator's command line.
    Cli,
    /// The agent, by a tool call in the principal's turn (a core edited by
    /// `edit_core`, a run promoted by `evolve_core`).
    Agent,
}

impl std::fmt::Display for Surface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Surface::Rest => f.write_str("rest"),
            Surface::Console => f.write_str("console"),
            Surface::WebSocket => f.write_str("websocket"),
            Surface::Chat(p) => write!(f, "chat:{p}"),
            Surface::Cli => f.write_str("cli"),
            Surface::Agent => f.write_str("agent"),
        }
    }
}

/// One change to record.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAudit {
    pub tenant: String,
    /// Who acted: a principal of the tenant, or `operator` for the server
    /// operator at the command line.
    pub actor: String,
    /// The actor's role (`member`, `operator`, `admin`; `server` for the
    /// server operator).
    pub role: String,
    /// Where from: `rest`, `console`, `websocket`, `chat:<platform>`, `cli`.
    pub surface: String,
    /// What was done (`token.issued`, `approval.decided`, …).
    pub action: String,
    /// What it was done to (a principal, an approval id, a core, …).
    pub target: String,
    /// The rest, as JSON (never a secret).
    pub detail: serde_json::Value,
}

impl NewAudit {
    /// A change the server operator made at the command line.
    pub fn by_operator(
        tenant: &str,
        action: &str,
        target: &str,
        detail: serde_json::Value,
    ) -> NewAudit {
        NewAudit {
            tenant: tenant.to_owned(),
            actor: "operator".into(),
            role: "server".into(),
            surface: Surface::Cli.to_string(),
            action: action.to_owned(),
            target: target.to_owned(),
            detail,
        }
    }
}

/// One stored row.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEventRow {
    pub id: i64,
    pub seq: i64,
    pub at: i64,
    pub actor: String,
    pub role: String,
    pub surface: String,
    pub action: String,
    pub target: String,
    /// The detail as stored (JSON text: what the hash covers).
    pub detail: String,
    pub prev_hash: String,
    pub hash: String,
}

/// Which rows a listing wants.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    /// Unix ms, inclusive / exclusive.
    pub from: Option<i64>,
    pub to: Option<i64>,
    pub actor: Option<String>,
    /// An action, or a prefix ending in `.` (`approval.`).
    pub action: Option<String>,
    pub target: Option<String>,
    /// Rows with a smaller `seq` (a cursor); none: the newest.
    pub before_seq: Option<i64>,
}

/// The advisory lock key of adopting the earlier audit table ("audit" in ASCII).
const PG_ADOPT_LOCK: i64 = 0x0061_7564_6974;

const COLUMNS: &str = "id, seq, at, actor, role, surface, action, target, detail, prev_hash, hash";

fn decode(r: &sqlx::any::AnyRow) -> Result<AuditEventRow, sqlx::Error> {
    Ok(AuditEventRow {
        id: r.try_get(0)?,
        seq: r.try_get(1)?,
        at: r.try_get(2)?,
        actor: r.try_get(3)?,
        role: r.try_get(4)?,
        surface: r.try_get(5)?,
        action: r.try_get(6)?,
        target: r.try_get(7)?,
        detail: r.try_get(8)?,
        prev_hash: r.try_get(9)?,
        hash: r.try_get(10)?,
    })
}

/// Append `entry` to its tenant's chain inside `tx`: the caller's own
/// transaction, so the change and its row commit together or not at all.
/// Holds the tenant's head row locked (PostgreSQL) or the database's one
/// writer (SQLite) until the transaction ends, so rows of one tenant are
/// chained one after another. Returns the row's `seq`.
pub(crate) async fn append_in(
    backend: Backend,
    tx: &mut sqlx::Transaction<'_, Any>,
    entry: &NewAudit,
) -> Result<i64, sqlx::Error> {
    append_at(backend, tx, entry, crate::time::now_ms()).await
}

async fn append_at(
    backend: Backend,
    tx: &mut sqlx::Transaction<'_, Any>,
    entry: &NewAudit,
    at: i64,
) -> Result<i64, sqlx::Error> {
    sqlx::query(
        "INSERT INTO audit_heads (tenant_id, seq, hash) VALUES ($1, 0, $2) \
         ON CONFLICT (tenant_id) DO NOTHING",
    )
    .bind(&entry.tenant)
    .bind(GENESIS)
    .execute(&mut **tx)
    .await?;
    let lock = match backend {
        Backend::Postgres => "SELECT seq, hash FROM audit_heads WHERE tenant_id = $1 FOR UPDATE",
        Backend::Sqlite => "SELECT seq, hash FROM audit_heads WHERE tenant_id = $1",
    };
    let head = sqlx::query(lock)
        .bind(&entry.tenant)
        .fetch_one(&mut **tx)
        .await?;
    let (prev_seq, prev_hash): (i64, String) = (head.try_get(0)?, head.try_get(1)?);
    let seq = prev_seq + 1;
    let detail = entry.detail.to_string();
    let hash = Link {
        tenant: &entry.tenant,
        seq,
        at,
        actor: &entry.actor,
        role: &entry.role,
        surface: &entry.surface,
        action: &entry.action,
        target: &entry.target,
        detail: &detail,
        prev_hash: &prev_hash,
    }
    .hash();
    sqlx::query(
        "INSERT INTO audit_events (tenant_id, seq, at, actor, role, surface, action, target, \
         detail, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(&entry.tenant)
    .bind(seq)
    .bind(at)
    .bind(&entry.actor)
    .bind(&entry.role)
    .bind(&entry.surface)
    .bind(&entry.action)
    .bind(&entry.target)
    .bind(&detail)
    .bind(&prev_hash)
    .bind(&hash)
    .execute(&mut **tx)
    .await?;
    sqlx::query("UPDATE audit_heads SET seq = $1, hash = $2 WHERE tenant_id = $3")
        .bind(seq)
        .bind(&hash)
        .bind(&entry.tenant)
        .execute(&mut **tx)
        .await?;
    Ok(seq)
}

impl Store {
    /// Chain the records of the audit table before this one (`audit_log`,
    /// operators' tenant-wide searches) into their tenants' chains, oldest
    /// first with their own times, and drop it, in one transaction. Once
    /// gone, this is one catalog read per start.
    pub(super) async fn adopt_legacy_audit(&self) -> Result<u64, sqlx::Error> {
        let exists = match self.backend() {
            Backend::Sqlite => {
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'audit_log'"
            }
            Backend::Postgres => {
                "SELECT COUNT(*) FROM information_schema.tables \
                 WHERE table_schema = current_schema() AND table_name = 'audit_log'"
            }
        };
        let n: i64 = sqlx::query(exists)
            .fetch_one(self.pool())
            .await?
            .try_get(0)?;
        if n == 0 {
            return Ok(0);
        }
        let _gate = self.write_gate().await;
        let mut tx = self.pool().begin().await?;
        if self.backend() == Backend::Postgres {
            // Instances starting together: one adopts, the others find the
            // table gone once they hold the lock.
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(PG_ADOPT_LOCK)
                .execute(&mut *tx)
                .await?;
            let n: i64 = sqlx::query(exists).fetch_one(&mut *tx).await?.try_get(0)?;
            if n == 0 {
                return Ok(0);
            }
        }
        let rows = sqlx::query(
            "SELECT tenant_id, principal_id, role, action, reason, detail, created_at \
             FROM audit_log ORDER BY id",
        )
        .fetch_all(&mut *tx)
        .await?;
        for r in &rows {
            let detail: String = r.try_get(5)?;
            let mut detail: serde_json::Value =
                serde_json::from_str(&detail).unwrap_or_else(|_| serde_json::json!({}));
            if let Some(d) = detail.as_object_mut() {
                d.insert("reason".into(), r.try_get::<String, _>(4)?.into());
            }
            let entry = NewAudit {
                tenant: r.try_get(0)?,
                actor: r.try_get(1)?,
                role: r.try_get(2)?,
                surface: Surface::Rest.to_string(),
                action: r.try_get(3)?,
                target: String::new(),
                detail,
            };
            append_at(self.backend(), &mut tx, &entry, r.try_get(6)?).await?;
        }
        sqlx::query("DROP TABLE audit_log")
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(rows.len() as u64)
    }

    /// Record a change that writes nothing else to the database (a token
    /// issued, an operator's read): the row alone, in its own transaction.
    pub async fn append_audit(&self, entry: &NewAudit) -> Result<i64, sqlx::Error> {
        let _gate = self.write_gate().await;
        let mut tx = self.pool().begin().await?;
        let seq = append_in(self.backend(), &mut tx, entry).await?;
        tx.commit().await?;
        Ok(seq)
    }

    /// A tenant's rows matching `f`, newest first, at most `limit`.
    pub async fn audit_events(
        &self,
        tenant: &str,
        f: &AuditFilter,
        limit: u32,
    ) -> Result<Vec<AuditEventRow>, sqlx::Error> {
        let (action, prefix) = match f.action.as_deref() {
            Some(a) if a.ends_with('.') => (None, Some(format!("{a}%"))),
            Some(a) => (Some(a.to_owned()), None),
            None => (None, None),
        };
        let sql = format!(
            "SELECT {COLUMNS} FROM audit_events WHERE tenant_id = $1 AND seq < $2 \
             AND at >= $3 AND at < $4 \
             AND ($5 IS NULL OR actor = $5) AND ($6 IS NULL OR action = $6) \
             AND ($7 IS NULL OR action LIKE $7) AND ($8 IS NULL OR target = $8) \
             ORDER BY seq DESC LIMIT $9"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(tenant)
            .bind(f.before_seq.unwrap_or(i64::MAX))
            .bind(f.from.unwrap_or(i64::MIN))
            .bind(f.to.unwrap_or(i64::MAX))
            .bind(f.actor.as_deref())
            .bind(action.as_deref())
            .bind(prefix.as_deref())
            .bind(f.target.as_deref())
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await?
            .iter()
            .map(decode)
            .collect()
    }

    /// A tenant's rows from `after_seq` on, oldest first, at most `limit`
    /// (for walking the chain).
    pub async fn audit_chain_page(
        &self,
        tenant: &str,
        after_seq: i64,
        limit: u32,
    ) -> Result<Vec<AuditEventRow>, sqlx::Error> {
        let sql = format!(
            "SELECT {COLUMNS} FROM audit_events WHERE tenant_id = $1 AND seq > $2 \
             ORDER BY seq LIMIT $3"
        );
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(tenant)
            .bind(after_seq)
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await?
            .iter()
            .map(decode)
            .collect()
    }

    /// A tenant's recorded head (seq, hash) and its latest checkpoint.
    pub async fn audit_head(
        &self,
        tenant: &str,
    ) -> Result<(Option<(i64, String)>, Option<(i64, String)>), sqlx::Error> {
        let head = sqlx::query("SELECT seq, hash FROM audit_heads WHERE tenant_id = $1")
            .bind(tenant)
            .fetch_optional(self.pool())
            .await?
            .map(|r| Ok::<_, sqlx::Error>((r.try_get(0)?, r.try_get(1)?)))
            .transpose()?;
        let checkpoint = sqlx::query(
            "SELECT seq, hash FROM audit_checkpoints WHERE tenant_id = $1 ORDER BY seq DESC LIMIT 1",
        )
        .bind(tenant)
        .fetch_optional(self.pool())
        .await?
        .map(|r| Ok::<_, sqlx::Error>((r.try_get(0)?, r.try_get(1)?)))
        .transpose()?;
        Ok((head, checkpoint))
    }

    /// Every tenant with an audit chain.
    pub async fn audit_tenants(&self) -> Result<Vec<String>, sqlx::Error> {
        sqlx::query("SELECT tenant_id FROM audit_heads ORDER BY tenant_id")
            .fetch_all(self.pool())
            .await?
            .iter()
            .map(|r| r.try_get(0))
            .collect()
    }

    /// Prune each tenant's rows older than `before` (ms), keeping the chain
    /// verifiable: the last pruned row's seq and hash become a checkpoint,
    /// in the same transaction. Returns the rows deleted.
    pub async fn prune_audit(&self, before: i64) -> Result<u64, sqlx::Error> {
        let mut deleted = 0;
        for tenant in self.audit_tenants().await? {
            let _gate = self.write_gate().await;
            let mut tx = self.pool().begin().await?;
            let last = sqlx::query(
                "SELECT seq, hash FROM audit_events WHERE tenant_id = $1 AND at < $2 \
                 ORDER BY seq DESC LIMIT 1",
            )
            .bind(&tenant)
            .bind(before)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(last) = last else { continue };
            let (seq, hash): (i64, String) = (last.try_get(0)?, last.try_get(1)?);
            sqlx::query(
                "INSERT INTO audit_checkpoints (tenant_id, seq, hash, at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (tenant_id, seq) DO NOTHING",
            )
            .bind(&tenant)
            .bind(seq)
            .bind(&hash)
            .bind(crate::time::now_ms())
            .execute(&mut *tx)
            .await?;
            deleted += sqlx::query("DELETE FROM audit_events WHERE tenant_id = $1 AND seq <= $2")
                .bind(&tenant)
                .bind(seq)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            tx.commit().await?;
        }
        Ok(deleted)
    }
}

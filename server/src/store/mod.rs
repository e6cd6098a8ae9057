//! Storage: the only place that writes SQL. One `sqlx::AnyPool` serves SQLite
//! (WAL, the embedded default) and PostgreSQL (scale-out) with the same
//! statements; the few dialect differences live in the migrations.
//!
//! Every value is a bound parameter. A statement built with `format!` (and
//! so wrapped in `sqlx::AssertSqlSafe`) splices in only this module's
//! constants: column lists, `$n` placeholders, enum names, fixed fragments.

mod approvals;
pub(crate) mod audit;
mod channels;
mod events;
mod history;
mod instances;
pub use instances::{Holder, InstanceRow};
mod lineage;
mod slots;
pub use lineage::{Delegation, Lineage, HARD_MAX_DEPTH};
pub use slots::SessionSlots;
mod budgets;
mod credentials;
mod messages;
mod migrate;
mod module_state;
mod package_repositories;
pub use package_repositories::TenantRepositoryRow;
pub mod peer_notify;
mod provider_keys;
mod revocations;
mod schedules;
pub mod search_index;
mod sessions;
mod tasks;
mod tenant_events;
mod tenants;
mod turns;
mod usage;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, ConnectOptions, Executor};
use tokio::sync::{Mutex, MutexGuard};

pub use crate::wire::TurnStatus;
pub use approvals::{ApprovalRow, ClarificationRow, NewApproval, NewClarification, SessionGrant};
pub use audit::{AuditEventRow, AuditFilter, NewAudit, Surface};
pub use budgets::{BudgetKind, BudgetRow};
pub use channels::{
    CardRow, ChannelAccountRow, ConversationKey, ConversationRow, NewOutbox, OutboxRow, PairingRow,
};
pub use credentials::CredentialRow;
pub use events::{EventRow, NewEvent, TurnFinish};
pub use messages::{Compaction, StoredMessage};
pub use provider_keys::ProviderKeyRow;
pub use revocations::{RevocationChange, RevocationRow, RevocationSnapshot};
pub use schedules::{NewScheduleOwner, ScheduleOwner};
pub use sessions::{NewSession, SessionRow};
pub use tasks::{ClaimCaps, Claimed, NewTask, TakenOver, TaskRow};
pub use tenant_events::TenantEventRow;
pub use tenants::StoredTenantPolicy;
pub use turns::{LostTurn, StartTurn, TurnRow};
pub use usage::{
    ModelCallRow, NewModelCall, NewToolUsage, RolledUp, UsageKey, UsageQuery, UsageRow, UsageSums,
};

use crate::config::{Backend, DatabaseConfig};

/// A pooled handle to the database; cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
    /// SQLite allows one writer at a time; queueing writers here is far
    /// cheaper than letting them spin on `SQLITE_BUSY`. `None` on PostgreSQL.
    write_gate: Option<Arc<Mutex<()>>>,
    /// Where the usage tables live (see [`Store::usage_pool`]).
    usage: UsageDb,
    /// Sessions by id for hot paths (turn start, stream subscribe). Identity
    /// and ownership never change, so entries cannot go wrong on those.
    session_cache:
        Arc<std::sync::Mutex<std::collections::HashMap<crate::ids::SessionId, SessionRow>>>,
}

impl Store {
    /// Connect (creating the SQLite files if needed) and apply migrations.
    pub async fn open(db: &DatabaseConfig) -> anyhow::Result<Self> {
        use anyhow::Context;
        sqlx::any::install_default_drivers();
        let backend = db.backend;
        let pool = connect(&db.url, backend).await?;
        let write_gate = (backend == Backend::Sqlite).then(|| Arc::new(Mutex::new(())));
        let usage = match db.usage_url() {
            Some(url) => UsageDb {
                pool: connect(&url, backend).await?,
                gate: Some(Arc::new(Mutex::new(()))),
                separate: true,
            },
            None => UsageDb {
                pool: pool.clone(),
                gate: write_gate.clone(),
                separate: false,
            },
        };
        let store = Self {
            pool,
            backend,
            write_gate,
            usage,
            session_cache: Arc::default(),
        };
        migrate::run(&store).await.context("apply migrations")?;
        let adopted = store
            .adopt_legacy_audit()
            .await
            .context("chain the earlier audit records")?;
        if adopted > 0 {
            tracing::info!(records = adopted, "earlier audit records chained");
        }
        if store.usage.separate {
            migrate::run_usage(&store)
                .await
                .context("apply the usage file's migrations")?;
            let file = db.usage_url().and_then(|url| {
                DatabaseConfig {
                    url,
                    backend: Backend::Sqlite,
                }
                .sqlite_file()
            });
            if let Some(file) = file {
                migrate::move_usage_rows(&store, &file)
                    .await
                    .context("move usage rows into the usage file")?;
            }
        }
        Ok(store)
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub(crate) fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Serialise writers on SQLite; free on PostgreSQL.
    pub(crate) async fn write_gate(&self) -> Option<MutexGuard<'_, ()>> {
        match &self.write_gate {
            Some(m) => Some(m.lock().await),
            None => None,
        }
    }

    /// The pool holding the usage tables: the database's own on PostgreSQL,
    /// the usage file's on SQLite.
    pub(crate) fn usage_pool(&self) -> &AnyPool {
        &self.usage.pool
    }

    /// Serialise writers of the usage tables on SQLite (the usage file has
    /// a writer of its own, so they never wait on a turn's writes).
    pub(crate) async fn usage_gate(&self) -> Option<MutexGuard<'_, ()>> {
        match &self.usage.gate {
            Some(m) => Some(m.lock().await),
            None => None,
        }
    }

    /// Readiness: can we run a trivial query?
    pub async fn ping(&self) -> bool {
        sqlx::query("SELECT 1").execute(&self.pool).await.is_ok()
    }

    pub async fn close(&self) {
        self.pool.close().await;
        if self.usage.separate {
            self.usage.pool.close().await;
        }
    }
}

/// The usage tables' home. On SQLite a file of its own beside the
/// database: SQLite has one writer per file, and under load a usage batch
/// queued on the database's writer delayed turns by a tenth (issue 41's
/// measurement), while usage is read only by reports, the roll-up and the
/// budget view, never joined with other tables.
#[derive(Clone, Debug)]
struct UsageDb {
    pool: AnyPool,
    gate: Option<Arc<Mutex<()>>>,
    /// False when `pool` is the database's own.
    separate: bool,
}

/// A pool on `url`: two connections on SQLite (one writer, one reader),
/// sixteen on PostgreSQL.
async fn connect(url: &str, backend: Backend) -> anyhow::Result<AnyPool> {
    use anyhow::Context;
    let opts = AnyConnectOptions::from_str(url)
        .with_context(|| format!("parse database URL {}", crate::config::redact_url(url)))?
        .log_statements(tracing::log::LevelFilter::Trace)
        .log_slow_statements(tracing::log::LevelFilter::Warn, Duration::from_millis(500));
    AnyPoolOptions::new()
        .max_connections(match backend {
            Backend::Sqlite => 2,
            Backend::Postgres => 16,
        })
        .min_connections(1)
        .acquire_timeout(Duration::from_secs(10))
        .after_connect(move |conn, _meta| {
            Box::pin(async move {
                if backend == Backend::Sqlite {
                    conn.execute(
                        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; \
                         PRAGMA busy_timeout=10000; PRAGMA foreign_keys=ON;",
                    )
                    .await?;
                }
                Ok(())
            })
        })
        .connect_with(opts)
        .await
        .with_context(|| format!("connect to {}", crate::config::redact_url(url)))
}

/// True when a database error is a unique-constraint violation.
/// A vocabulary column (state, decision, risk, …): text that is not a known
/// value is a decode error naming the column, never a default.
pub(crate) fn vocab<T>(r: &sqlx::any::AnyRow, column: &str) -> Result<T, sqlx::Error>
where
    T: FromStr<Err = crate::wire::UnknownValue>,
{
    use sqlx::Row;
    let text: String = r.try_get(column)?;
    text.parse()
        .map_err(|e: crate::wire::UnknownValue| sqlx::Error::ColumnDecode {
            index: column.to_owned(),
            source: Box::new(e),
        })
}

/// A nullable vocabulary column.
pub(crate) fn vocab_opt<T>(r: &sqlx::any::AnyRow, column: &str) -> Result<Option<T>, sqlx::Error>
where
    T: FromStr<Err = crate::wire::UnknownValue>,
{
    use sqlx::Row;
    let text: Option<String> = r.try_get(column)?;
    text.map(|t| {
        t.parse()
            .map_err(|e: crate::wire::UnknownValue| sqlx::Error::ColumnDecode {
                index: column.to_owned(),
                source: Box::new(e),
            })
    })
    .transpose()
}

/// An id column (a session, a turn, …): text that is not a valid id is a
/// decode error naming the column.
pub(crate) fn id<T>(r: &sqlx::any::AnyRow, column: &str) -> Result<T, sqlx::Error>
where
    T: FromStr<Err = crate::ids::IdError>,
{
    use sqlx::Row;
    let text: String = r.try_get(column)?;
    text.parse()
        .map_err(|e: crate::ids::IdError| sqlx::Error::ColumnDecode {
            index: column.to_owned(),
            source: Box::new(e),
        })
}

pub(crate) fn is_unique_violation(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(d) => {
            d.is_unique_violation()
                || d.message().contains("UNIQUE constraint failed")
                || d.code().as_deref() == Some("23505")
        }
        _ => false,
    }
}

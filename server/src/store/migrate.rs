//! Migrations: sqlx's [`Migrator`] over the SQL files embedded from
//! `migrations/sqlite` and `migrations/postgres`, one set per backend.
//!
//! sqlx records each applied version with a SHA-384 checksum of its SQL in
//! `_sqlx_migrations` and refuses to start when an applied file has changed
//! (`VersionMismatch`), when the database holds a version this binary does
//! not know (`VersionMissing`), or when an earlier run left a version
//! half-applied (`Dirty`). On PostgreSQL it holds an advisory lock (keyed by
//! the database name) for the whole run, so two starting instances never
//! migrate at once; on SQLite the store's write gate serialises this process
//! and SQLite's own locking the rest.
//!
//! Databases created by the previous hand-written runner record their
//! versions in `demiurge_migrations` without checksums. At the first start
//! under this runner, inside the same lock and one transaction, those
//! versions are adopted into `_sqlx_migrations` with the checksum of the
//! embedded file of the same version (the old runner applied exactly those
//! files, which have not changed since) and the old table is dropped; from
//! then on every start verifies the checksums. A version the old table
//! records but this binary does not know stops the start, as it would under
//! sqlx.

use std::borrow::Cow;

use anyhow::Context;
use futures_util::future::BoxFuture;
use sqlx::migrate::{Migrate, Migration, MigrationSource, MigrationType, Migrator};
use sqlx::{Row, SqlStr};

use super::Store;
use crate::config::Backend;

/// One migration: a version, a name, and its SQL for each backend. Register
/// a new one here with both files (`migrations/{sqlite,postgres}/NNNN_x.sql`);
/// versions only grow, with gaps allowed.
struct Embedded {
    version: i64,
    name: &'static str,
    sqlite: &'static str,
    postgres: &'static str,
}

const MIGRATIONS: &[Embedded] = &[
    Embedded {
        version: 1,
        name: "foundation",
        sqlite: include_str!("../../../migrations/sqlite/0001_foundation.sql"),
        postgres: include_str!("../../../migrations/postgres/0001_foundation.sql"),
    },
    Embedded {
        version: 2,
        name: "approvals",
        sqlite: include_str!("../../../migrations/sqlite/0002_approvals.sql"),
        postgres: include_str!("../../../migrations/postgres/0002_approvals.sql"),
    },
    Embedded {
        version: 3,
        name: "tasks",
        sqlite: include_str!("../../../migrations/sqlite/0003_tasks.sql"),
        postgres: include_str!("../../../migrations/postgres/0003_tasks.sql"),
    },
    Embedded {
        version: 4,
        name: "tokens",
        sqlite: include_str!("../../../migrations/sqlite/0004_tokens.sql"),
        postgres: include_str!("../../../migrations/postgres/0004_tokens.sql"),
    },
    Embedded {
        version: 5,
        name: "tenant_policy",
        sqlite: include_str!("../../../migrations/sqlite/0005_tenant_policy.sql"),
        postgres: include_str!("../../../migrations/postgres/0005_tenant_policy.sql"),
    },
    Embedded {
        version: 10,
        name: "task_queue",
        sqlite: include_str!("../../../migrations/sqlite/0010_task_queue.sql"),
        postgres: include_str!("../../../migrations/postgres/0010_task_queue.sql"),
    },
    Embedded {
        version: 11,
        name: "session_grants",
        sqlite: include_str!("../../../migrations/sqlite/0011_session_grants.sql"),
        postgres: include_str!("../../../migrations/postgres/0011_session_grants.sql"),
    },
    Embedded {
        version: 12,
        name: "session_lineage",
        sqlite: include_str!("../../../migrations/sqlite/0012_session_lineage.sql"),
        postgres: include_str!("../../../migrations/postgres/0012_session_lineage.sql"),
    },
    Embedded {
        version: 13,
        name: "schedules",
        sqlite: include_str!("../../../migrations/sqlite/0013_schedules.sql"),
        postgres: include_str!("../../../migrations/postgres/0013_schedules.sql"),
    },
    Embedded {
        version: 14,
        name: "schedule_files",
        sqlite: include_str!("../../../migrations/sqlite/0014_schedule_files.sql"),
        postgres: include_str!("../../../migrations/postgres/0014_schedule_files.sql"),
    },
    Embedded {
        version: 30,
        name: "channels",
        sqlite: include_str!("../../../migrations/sqlite/0030_channels.sql"),
        postgres: include_str!("../../../migrations/postgres/0030_channels.sql"),
    },
    Embedded {
        version: 40,
        name: "history_search",
        sqlite: include_str!("../../../migrations/sqlite/0040_history_search.sql"),
        postgres: include_str!("../../../migrations/postgres/0040_history_search.sql"),
    },
    Embedded {
        version: 60,
        name: "session_compactions",
        sqlite: include_str!("../../../migrations/sqlite/0060_session_compactions.sql"),
        postgres: include_str!("../../../migrations/postgres/0060_session_compactions.sql"),
    },
    Embedded {
        version: 61,
        name: "tenant_provider_keys",
        sqlite: include_str!("../../../migrations/sqlite/0061_tenant_provider_keys.sql"),
        postgres: include_str!("../../../migrations/postgres/0061_tenant_provider_keys.sql"),
    },
    Embedded {
        version: 62,
        name: "session_lineage_workspace_run",
        sqlite: include_str!("../../../migrations/sqlite/0062_session_lineage_workspace_run.sql"),
        postgres: include_str!(
            "../../../migrations/postgres/0062_session_lineage_workspace_run.sql"
        ),
    },
    Embedded {
        version: 63,
        name: "session_slots",
        sqlite: include_str!("../../../migrations/sqlite/0063_session_slots.sql"),
        postgres: include_str!("../../../migrations/postgres/0063_session_slots.sql"),
    },
    Embedded {
        version: 64,
        name: "module_state",
        sqlite: include_str!("../../../migrations/sqlite/0064_module_state.sql"),
        postgres: include_str!("../../../migrations/postgres/0064_module_state.sql"),
    },
    Embedded {
        version: 70,
        name: "usage",
        sqlite: include_str!("../../../migrations/sqlite/0070_usage.sql"),
        postgres: include_str!("../../../migrations/postgres/0070_usage.sql"),
    },
    Embedded {
        version: 71,
        name: "usage_rollup",
        sqlite: include_str!("../../../migrations/sqlite/0071_usage_rollup.sql"),
        postgres: include_str!("../../../migrations/postgres/0071_usage_rollup.sql"),
    },
    Embedded {
        version: 72,
        name: "budgets",
        sqlite: include_str!("../../../migrations/sqlite/0072_budgets.sql"),
        postgres: include_str!("../../../migrations/postgres/0072_budgets.sql"),
    },
    Embedded {
        version: 73,
        name: "usage_lean",
        sqlite: include_str!("../../../migrations/sqlite/0073_usage_lean.sql"),
        postgres: include_str!("../../../migrations/postgres/0073_usage_lean.sql"),
    },
    Embedded {
        version: 74,
        name: "tenant_events",
        sqlite: include_str!("../../../migrations/sqlite/0074_tenant_events.sql"),
        postgres: include_str!("../../../migrations/postgres/0074_tenant_events.sql"),
    },
    Embedded {
        version: 75,
        name: "audit",
        sqlite: include_str!("../../../migrations/sqlite/0075_audit.sql"),
        postgres: include_str!("../../../migrations/postgres/0075_audit.sql"),
    },
    Embedded {
        version: 76,
        name: "tenant_credentials",
        sqlite: include_str!("../../../migrations/sqlite/0076_tenant_credentials.sql"),
        postgres: include_str!("../../../migrations/postgres/0076_tenant_credentials.sql"),
    },
    Embedded {
        version: 77,
        name: "tenant_package_repositories",
        sqlite: include_str!("../../../migrations/sqlite/0077_tenant_package_repositories.sql"),
        postgres: include_str!("../../../migrations/postgres/0077_tenant_package_repositories.sql"),
    },
    Embedded {
        version: 78,
        name: "instances",
        sqlite: include_str!("../../../migrations/sqlite/0078_instances.sql"),
        postgres: include_str!("../../../migrations/postgres/0078_instances.sql"),
    },
];

/// The usage file's migrations (SQLite only; see [`super::UsageDb`]). Its
/// own versions, recorded in the usage file's own `_sqlx_migrations`.
const USAGE_FILE_MIGRATIONS: &[(i64, &str, &str)] = &[(
    1,
    "usage",
    include_str!("../../../migrations/sqlite-usage/0001_usage.sql"),
)];

/// A set of embedded migrations, as sqlx sees them.
#[derive(Debug)]
enum Source {
    /// The database's, for its backend.
    Database(Backend),
    /// The SQLite usage file's.
    UsageFile,
}

impl MigrationSource<'static> for Source {
    fn resolve(self) -> BoxFuture<'static, Result<Vec<Migration>, sqlx::error::BoxDynError>> {
        Box::pin(async move {
            Ok(match self {
                Source::Database(backend) => migrations(backend),
                Source::UsageFile => usage_file_migrations(),
            })
        })
    }
}

fn usage_file_migrations() -> Vec<Migration> {
    USAGE_FILE_MIGRATIONS
        .iter()
        .map(|(version, name, sql)| {
            Migration::new(
                *version,
                Cow::Borrowed(*name),
                MigrationType::Simple,
                SqlStr::from_static(sql),
                false,
            )
        })
        .collect()
}

fn migrations(backend: Backend) -> Vec<Migration> {
    MIGRATIONS
        .iter()
        .map(|m| {
            let sql = match backend {
                Backend::Sqlite => m.sqlite,
                Backend::Postgres => m.postgres,
            };
            Migration::new(
                m.version,
                Cow::Borrowed(m.name),
                MigrationType::Simple,
                SqlStr::from_static(sql),
                false,
            )
        })
        .collect()
}

/// The migrator of one backend.
async fn migrator(backend: Backend) -> anyhow::Result<Migrator> {
    Migrator::new(Source::Database(backend))
        .await
        .context("embedded migrations")
}

/// Apply the usage file's migrations (SQLite, when the usage tables have a
/// file of their own).
pub(super) async fn run_usage(store: &Store) -> anyhow::Result<()> {
    let _gate = store.usage_gate().await;
    let migrator = Migrator::new(Source::UsageFile)
        .await
        .context("embedded usage migrations")?;
    let mut conn = store.usage_pool().acquire().await?;
    migrator.run(&mut *conn).await?;
    Ok(())
}

/// The usage tables, in the order their rows are moved.
const USAGE_TABLES: &[&str] = &["usage_hourly", "usage_model_calls", "usage_tool_calls"];

/// Move the rows a SQLite database holds in its own usage tables (created
/// by migrations 0070–0073, before the usage file existed) into the usage
/// file at `usage_file`, then drop those tables: from then on the
/// database has none, and this is one `sqlite_master` read per start.
///
/// SQLite commits to two files in WAL mode atomically per file only, so
/// the copy (its own commit) and the drop (another) may be split by a
/// crash; the copy is `INSERT OR IGNORE` with each row's own key (ids kept,
/// roll-ups by their primary key), so running it again adds nothing twice.
pub(super) async fn move_usage_rows(
    store: &Store,
    usage_file: &std::path::Path,
) -> anyhow::Result<()> {
    let _gate = store.write_gate().await;
    let _usage_gate = store.usage_gate().await;
    let mut conn = store.pool().acquire().await?;
    let left: i64 = sqlx::query(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' \
         AND name IN ('usage_hourly', 'usage_model_calls', 'usage_tool_calls')",
    )
    .fetch_one(&mut *conn)
    .await?
    .try_get(0)?;
    if left == 0 {
        return Ok(());
    }
    let file = usage_file
        .to_str()
        .context("the usage file's path is not UTF-8")?;
    sqlx::query("ATTACH DATABASE $1 AS usage_file")
        .bind(file)
        .execute(&mut *conn)
        .await?;
    let moved = copy_and_drop(&mut conn).await;
    // Detach even after a failure: the connection goes back to the pool.
    let detached = sqlx::query("DETACH DATABASE usage_file")
        .execute(&mut *conn)
        .await;
    let moved = moved?;
    detached?;
    if moved > 0 {
        tracing::info!(rows = moved, "moved usage rows into the usage file");
    }
    Ok(())
}

async fn copy_and_drop(conn: &mut sqlx::AnyConnection) -> anyhow::Result<u64> {
    let mut moved = 0;
    let mut tx = sqlx::Connection::begin(&mut *conn).await?;
    for table in USAGE_TABLES {
        // Only this module's table names are spliced in.
        let sql = format!("INSERT OR IGNORE INTO usage_file.{table} SELECT * FROM main.{table}");
        moved += sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&mut *tx)
            .await?
            .rows_affected();
    }
    tx.commit().await?;
    let mut tx = sqlx::Connection::begin(&mut *conn).await?;
    for table in USAGE_TABLES {
        let sql = format!("DROP TABLE main.{table}");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(moved)
}

pub(super) async fn run(store: &Store) -> anyhow::Result<()> {
    let _gate = store.write_gate().await;
    let migrator = migrator(store.backend()).await?;
    let mut conn = store.pool().acquire().await?;
    let result = run_on(store.backend(), &migrator, &mut conn).await;
    if result.is_err() {
        // A failed run may leave the session's advisory lock held: never
        // hand that connection back to the pool.
        let _ = conn.close().await;
    }
    result
}

async fn run_on(
    backend: Backend,
    migrator: &Migrator,
    conn: &mut sqlx::AnyConnection,
) -> anyhow::Result<()> {
    // The same (re-entrant) lock the migrator takes, held around the
    // adoption of the old bookkeeping too.
    conn.lock().await?;
    adopt_legacy(backend, migrator, conn)
        .await
        .context("adopt the bookkeeping of the previous migration runner")?;
    let applied = migrator.run(&mut *conn).await;
    conn.unlock().await?;
    applied?;
    Ok(())
}

/// Move `demiurge_migrations` (versions only) into `_sqlx_migrations`.
async fn adopt_legacy(
    backend: Backend,
    migrator: &Migrator,
    conn: &mut sqlx::AnyConnection,
) -> anyhow::Result<()> {
    let exists = match backend {
        Backend::Sqlite => {
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'demiurge_migrations'"
        }
        Backend::Postgres => {
            "SELECT COUNT(*) FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_name = 'demiurge_migrations'"
        }
    };
    let count: i64 = sqlx::query(exists)
        .fetch_one(&mut *conn)
        .await?
        .try_get(0)?;
    if count == 0 {
        return Ok(());
    }
    conn.ensure_migrations_table(&migrator.table_name).await?;
    let mut tx = sqlx::Connection::begin(&mut *conn).await?;
    let versions: Vec<i64> =
        sqlx::query("SELECT version FROM demiurge_migrations ORDER BY version")
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| r.try_get::<i64, _>(0))
            .collect::<Result<_, _>>()?;
    for version in versions {
        let Some(m) = migrator.iter().find(|m| m.version == version) else {
            anyhow::bail!(
                "the database records migration {version}, which this binary does not know"
            );
        };
        sqlx::query(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (version) DO NOTHING",
        )
        .bind(m.version)
        .bind(m.description.to_string())
        .bind(true)
        .bind(m.checksum.to_vec())
        .bind(0_i64)
        .execute(&mut *tx)
        .await?;
    }
    sqlx::query("DROP TABLE demiurge_migrations")
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    tracing::info!("adopted the previous runner's migration records");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_backend_has_every_version_in_order_with_its_own_sql() {
        for backend in [Backend::Sqlite, Backend::Postgres] {
            let ms = migrations(backend);
            let versions: Vec<i64> = ms.iter().map(|m| m.version).collect();
            // Strictly increasing; gaps are allowed (each room of the house
            // numbers its migrations in its own range).
            assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
            assert_eq!(versions.first(), Some(&1));
            assert!(ms.iter().all(|m| !m.sql.as_str().trim().is_empty()));
        }
        let (s, p) = (migrations(Backend::Sqlite), migrations(Backend::Postgres));
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(
                (s[i].sql.as_str(), p[i].sql.as_str()),
                (m.sqlite, m.postgres)
            );
        }
    }

    /// A database from before the usage file: its own usage tables hold
    /// rows. The first open moves them (ids kept) and drops the tables;
    /// a move redone after a crash between its two commits adds nothing.
    #[tokio::test]
    async fn usage_rows_move_into_the_usage_file_once() {
        use crate::config::DatabaseConfig;
        sqlx::any::install_default_drivers();
        let dir = tempfile::tempdir().unwrap();
        let db = DatabaseConfig::resolve(dir.path(), None).unwrap();
        let old_rows = "INSERT INTO usage_model_calls (id, tenant_id, principal_id, session_id, \
             core_id, channel, provider, model, input_tokens, output_tokens, cached_tokens, \
             latency_ms, at) VALUES (7, 'acme', 'alice', 's1', 'assistant', '', 'fake', 'm', \
             10, 20, 0, 5, 1000), (9, 'acme', 'alice', 's1', 'assistant', '', 'fake', 'm', \
             NULL, NULL, NULL, 5, 2000)";
        {
            // The database as the previous release left it.
            let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&db.url)
                .await
                .unwrap();
            migrator(Backend::Sqlite)
                .await
                .unwrap()
                .run(&mut conn)
                .await
                .unwrap();
            sqlx::query(old_rows).execute(&mut conn).await.unwrap();
            sqlx::query(
                "INSERT INTO usage_hourly VALUES ('acme', 0, 'alice', 'assistant', '', 'fake', \
                 'm', '', '', 3, 0, 30, 60, 0, 15, 0, 0, 0)",
            )
            .execute(&mut conn)
            .await
            .unwrap();
        }
        let tables_in_database = |store: Store| async move {
            let n: i64 = sqlx::query(
                "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'usage%' AND type = 'table'",
            )
            .fetch_one(store.pool())
            .await
            .unwrap()
            .get(0);
            n
        };
        let store = Store::open(&db).await.unwrap();
        let ids = |rows: Vec<super::super::ModelCallRow>| -> Vec<i64> {
            rows.iter().map(|r| r.id).collect()
        };
        assert_eq!(
            ids(store.model_calls_of("acme", 0, 10).await.unwrap()),
            [7, 9]
        );
        assert_eq!(tables_in_database(store.clone()).await, 0);
        let hourly: i64 = sqlx::query("SELECT SUM(model_calls) FROM usage_hourly")
            .fetch_one(store.usage_pool())
            .await
            .unwrap()
            .get(0);
        assert_eq!(hourly, 3);
        store.close().await;

        // A crash after the copy's commit and before the drop's: the old
        // tables are back with the same rows; the next open adds nothing.
        {
            let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&db.url)
                .await
                .unwrap();
            for sql in [
                include_str!("../../../migrations/sqlite/0070_usage.sql"),
                include_str!("../../../migrations/sqlite/0071_usage_rollup.sql"),
                old_rows,
            ] {
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                    .execute(&mut conn)
                    .await
                    .unwrap();
            }
        }
        let store = Store::open(&db).await.unwrap();
        assert_eq!(
            ids(store.model_calls_of("acme", 0, 10).await.unwrap()),
            [7, 9]
        );
        assert_eq!(tables_in_database(store.clone()).await, 0);
        // New rows follow the moved ids.
        store
            .insert_model_calls(&[super::super::NewModelCall {
                tenant_id: "acme".into(),
                principal_id: "alice".into(),
                session_id: "s2".into(),
                core_id: "assistant".into(),
                channel: String::new(),
                provider: "fake".into(),
                model: "m".into(),
                tokens: Some((1, 1, 0)),
                latency_ms: 1,
                at: 3000,
            }])
            .await
            .unwrap();
        let after = ids(store.model_calls_of("acme", 0, 10).await.unwrap());
        assert_eq!(after.len(), 3);
        assert!(after[2] > 9, "{after:?}");
        assert!(dir.path().join("demiurge-usage.db").is_file());
    }

    #[test]
    fn checksums_follow_the_sql() {
        let a = migrations(Backend::Sqlite);
        let b = migrations(Backend::Sqlite);
        assert!(a.iter().zip(&b).all(|(x, y)| x.checksum == y.checksum));
        let changed = Migration::new(
            1,
            Cow::Borrowed("foundation"),
            MigrationType::Simple,
            sqlx::SqlSafeStr::into_sql_str(sqlx::AssertSqlSafe(format!(
                "{}\n-- edited",
                a[0].sql.as_str()
            ))),
            false,
        );
        assert_ne!(changed.checksum, a[0].checksum);
    }
}

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
];

/// The embedded migrations of one backend, as sqlx sees them.
#[derive(Debug)]
struct Source(Backend);

impl MigrationSource<'static> for Source {
    fn resolve(self) -> BoxFuture<'static, Result<Vec<Migration>, sqlx::error::BoxDynError>> {
        Box::pin(async move { Ok(migrations(self.0)) })
    }
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
pub(super) async fn migrator(backend: Backend) -> anyhow::Result<Migrator> {
    Migrator::new(Source(backend))
        .await
        .context("embedded migrations")
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

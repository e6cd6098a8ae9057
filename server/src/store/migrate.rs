//! A small migration runner over embedded SQL files, one folder per backend.
//! Applied versions are recorded in `demiurge_migrations`; on PostgreSQL an
//! advisory lock keeps two starting instances from migrating at once.

use anyhow::Context;
use sqlx::Row;

use super::Store;
use crate::config::Backend;

struct Migration {
    version: i64,
    name: &'static str,
    sqlite: &'static str,
    postgres: &'static str,
}

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "foundation",
        sqlite: include_str!("../../../migrations/sqlite/0001_foundation.sql"),
        postgres: include_str!("../../../migrations/postgres/0001_foundation.sql"),
    },
    Migration {
        version: 2,
        name: "approvals",
        sqlite: include_str!("../../../migrations/sqlite/0002_approvals.sql"),
        postgres: include_str!("../../../migrations/postgres/0002_approvals.sql"),
    },
    Migration {
        version: 3,
        name: "tasks",
        sqlite: include_str!("../../../migrations/sqlite/0003_tasks.sql"),
        postgres: include_str!("../../../migrations/postgres/0003_tasks.sql"),
    },
    Migration {
        version: 4,
        name: "tokens",
        sqlite: include_str!("../../../migrations/sqlite/0004_tokens.sql"),
        postgres: include_str!("../../../migrations/postgres/0004_tokens.sql"),
    },
    Migration {
        version: 5,
        name: "tenant_policy",
        sqlite: include_str!("../../../migrations/sqlite/0005_tenant_policy.sql"),
        postgres: include_str!("../../../migrations/postgres/0005_tenant_policy.sql"),
    },
];

/// Arbitrary constant naming our advisory lock.
const PG_LOCK_KEY: i64 = 0x64656d69;

pub(super) async fn run(store: &Store) -> anyhow::Result<()> {
    let _gate = store.write_gate().await;
    let mut conn = store.pool().acquire().await?;
    if store.backend() == Backend::Postgres {
        sqlx::query("SELECT pg_advisory_lock($1)")
            .bind(PG_LOCK_KEY)
            .execute(&mut *conn)
            .await?;
    }
    let result = apply(store.backend(), &mut conn).await;
    if store.backend() == Backend::Postgres {
        sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(PG_LOCK_KEY)
            .execute(&mut *conn)
            .await?;
    }
    result
}

async fn apply(backend: Backend, conn: &mut sqlx::AnyConnection) -> anyhow::Result<()> {
    sqlx::raw_sql(
        "CREATE TABLE IF NOT EXISTS demiurge_migrations (
            version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
    )
    .execute(&mut *conn)
    .await?;
    let applied: Vec<i64> = sqlx::query("SELECT version FROM demiurge_migrations")
        .fetch_all(&mut *conn)
        .await?
        .iter()
        .map(|r| r.try_get::<i64, _>(0))
        .collect::<Result<_, _>>()?;
    for m in MIGRATIONS {
        if applied.contains(&m.version) {
            continue;
        }
        let sql = match backend {
            Backend::Sqlite => m.sqlite,
            Backend::Postgres => m.postgres,
        };
        let mut tx = sqlx::Connection::begin(&mut *conn).await?;
        sqlx::raw_sql(sql)
            .execute(&mut *tx)
            .await
            .with_context(|| format!("migration {:04}_{}", m.version, m.name))?;
        sqlx::query(
            "INSERT INTO demiurge_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
        )
        .bind(m.version)
        .bind(m.name)
        .bind(crate::time::now_ms())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        tracing::info!(version = m.version, name = m.name, "applied migration");
    }
    Ok(())
}

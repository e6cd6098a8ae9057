use super::*;
use crate::config::DatabaseConfig;

fn call(tenant: &str, n: u64, tokens: Option<(u64, u64, u64)>) -> NewModelCall {
    NewModelCall {
        tenant_id: tenant.into(),
        principal_id: "alice".into(),
        session_id: format!("s{n}"),
        core_id: "assistant".into(),
        channel: String::new(),
        provider: "fake".into(),
        model: "default".into(),
        tokens,
        latency_ms: n,
        at: 1_000 + n as i64,
    }
}

/// Calls handed to the meter are written in order, unknown usage stays
/// unknown, and another tenant's rows are not read back.
async fn records_model_calls_on(store: Store) {
    let meter = Meter::start(store.clone());
    for n in 0..700 {
        let tokens = (n % 7 != 3).then_some((n, 2 * n, n / 2));
        meter.model_call(call(if n % 2 == 0 { "acme" } else { "other" }, n, tokens));
    }
    meter.flush().await;
    let rows = store.model_calls_of("acme", 0, 1_000).await.unwrap();
    assert_eq!(rows.len(), 350);
    for (i, r) in rows.iter().enumerate() {
        let n = 2 * i as u64;
        assert_eq!(
            r.call,
            call("acme", n, (n % 7 != 3).then_some((n, 2 * n, n / 2)))
        );
    }
    assert!(rows.iter().any(|r| r.call.tokens.is_none()));
    assert_eq!(
        store
            .model_calls_of("acme", 1_500, 1_000)
            .await
            .unwrap()
            .len(),
        100
    );
    assert_eq!(meter.dropped(), 0);
}

#[tokio::test]
async fn records_model_calls_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&DatabaseConfig::resolve(dir.path(), None).unwrap())
        .await
        .unwrap();
    records_model_calls_on(store).await;
}

/// On a throwaway database of the PostgreSQL that `scripts/test` names
/// (`DEMIURGE_TEST_POSTGRES_URL`, default the local `test` database).
#[tokio::test]
async fn records_model_calls_on_postgres() {
    use sqlx::Connection;
    let admin = std::env::var("DEMIURGE_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let name = format!("dm_usage_{}", uuid::Uuid::new_v4().simple());
    let mut conn = sqlx::PgConnection::connect(&admin)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL at {admin} is required for this test: {e}"));
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
        .execute(&mut conn)
        .await
        .unwrap();
    let base = admin.rsplit_once('/').map(|(b, _)| b.to_owned()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{base}/{name}");
    let store = Store::open(&DatabaseConfig::resolve(dir.path(), Some(&url)).unwrap())
        .await
        .unwrap();
    records_model_calls_on(store.clone()).await;
    store.close().await;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
    )))
    .execute(&mut conn)
    .await
    .unwrap();
}

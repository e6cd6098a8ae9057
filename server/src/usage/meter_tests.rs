use super::*;
use crate::config::DatabaseConfig;
use crate::store::{RolledUp, UsageKey, UsageQuery, UsageRow, UsageSums};

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;

/// The hour the seeded rows start in: recent enough to be kept.
fn base() -> i64 {
    (crate::time::now_ms() / HOUR - 5) * HOUR
}

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
    on_postgres(records_model_calls_on).await;
}

async fn on_postgres<F, Fut>(f: F)
where
    F: FnOnce(Store) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
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
    f(store.clone()).await;
    store.close().await;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
    )))
    .execute(&mut conn)
    .await
    .unwrap();
}

async fn on_sqlite<F, Fut>(f: F)
where
    F: FnOnce(Store) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&DatabaseConfig::resolve(dir.path(), None).unwrap())
        .await
        .unwrap();
    f(store).await;
}

fn tool(tenant: &str, n: u64, tool: &str, status: &str, at: i64) -> NewToolUsage {
    NewToolUsage {
        tenant_id: tenant.into(),
        principal_id: if n.is_multiple_of(3) { "bob" } else { "alice" }.into(),
        session_id: format!("s{n}"),
        core_id: "assistant".into(),
        channel: if n.is_multiple_of(2) { "slack" } else { "" }.into(),
        tool: tool.into(),
        status: status.into(),
        calls: 1,
        cpu_ms: 10 * n,
        outbound_bytes: 100 * n,
        latency_ms: n,
        at,
    }
}

/// Two tenants' model calls and tool calls over three hours.
async fn seed(store: &Store) {
    let meter = Meter::start(store.clone());
    for n in 0..300u64 {
        let tenant = if n % 5 == 0 { "other" } else { "acme" };
        let mut c = call(tenant, n, (n % 11 != 4).then_some((n, 3 * n, n / 4)));
        c.at = base() + (n as i64) * 36_000; // 300 calls over 3 hours
        c.model = if n % 2 == 0 { "small" } else { "large" }.into();
        meter.model_call(c);
        let status = if n % 7 == 0 { "failed" } else { "succeeded" };
        let name = if n % 2 == 0 { "read_file" } else { "terminal" };
        meter.tool(tool(tenant, n, name, status, base() + (n as i64) * 36_000));
    }
    meter.flush().await;
}

fn query(tenant: Option<&str>, bucket_ms: i64, group: &[UsageKey]) -> UsageQuery {
    UsageQuery {
        tenant: tenant.map(str::to_owned),
        from: 0,
        to: (crate::time::now_ms() / DAY + 2) * DAY,
        bucket_ms,
        group: group.to_vec(),
    }
}

fn total(rows: &[UsageRow]) -> UsageSums {
    let mut t = UsageSums::default();
    for r in rows {
        t.add(&r.sums);
    }
    t
}

/// A report reads the same before, during and after the roll-up; the
/// roll-up of an hour equals the sum of its raw rows; two roll-ups at once
/// count no row twice; pruning keeps what is not rolled up.
async fn rolls_up_on(store: Store) {
    seed(&store).await;
    let groups: [&[UsageKey]; 4] = [
        &[],
        &[UsageKey::Principal],
        &[UsageKey::Tool, UsageKey::Status],
        &[UsageKey::Channel, UsageKey::Model],
    ];
    let mut before = Vec::new();
    for g in groups {
        for bucket in [HOUR, 24 * HOUR] {
            before.push(
                store
                    .usage_report(&query(Some("acme"), bucket, g))
                    .await
                    .unwrap(),
            );
        }
    }
    // Raw sums of one hour, straight from the raw rows.
    let raw_calls = store.model_calls_of("acme", 0, 10_000).await.unwrap();
    let raw_tools = store.tool_usage_of("acme", 0, 10_000).await.unwrap();
    assert_eq!(raw_calls.len(), 240);
    let hour = base() + HOUR;
    let in_hour = |at: i64| at >= hour && at < hour + HOUR;
    let mut want = UsageSums::default();
    for c in raw_calls.iter().map(|r| &r.call).filter(|c| in_hour(c.at)) {
        want.model_calls += 1;
        want.model_latency_ms += c.latency_ms;
        match c.tokens {
            Some((i, o, k)) => {
                want.input_tokens += i;
                want.output_tokens += o;
                want.cached_tokens += k;
            }
            None => want.unmetered_calls += 1,
        }
    }
    for t in raw_tools.iter().filter(|t| in_hour(t.at)) {
        want.tool_calls += t.calls;
        want.cpu_ms += t.cpu_ms;
        want.outbound_bytes += t.outbound_bytes;
        want.tool_latency_ms += t.latency_ms;
    }
    assert!(want.unmetered_calls > 0 && want.tool_calls > 0);

    // Part of the rows rolled up: the report is unchanged.
    store.roll_up_usage(50).await.unwrap();
    let partly = store
        .usage_report(&query(Some("acme"), HOUR, &[]))
        .await
        .unwrap();
    assert_eq!(partly, before[0]);
    // The rest by two roll-ups at once.
    let (a, b) = tokio::join!(
        upkeep(&store, Retention::default()),
        upkeep(&store, Retention::default())
    );
    a.unwrap();
    b.unwrap();
    assert_eq!(
        store.roll_up_usage(10_000).await.unwrap(),
        RolledUp::default()
    );
    let mut i = 0;
    for g in groups {
        for bucket in [HOUR, 24 * HOUR] {
            let after = store
                .usage_report(&query(Some("acme"), bucket, g))
                .await
                .unwrap();
            assert_eq!(after, before[i], "group {g:?} bucket {bucket}");
            i += 1;
        }
    }
    let hourly = store
        .usage_report(&query(Some("acme"), HOUR, &[]))
        .await
        .unwrap();
    let of_hour: Vec<_> = hourly
        .iter()
        .filter(|r| r.bucket == hour)
        .cloned()
        .collect();
    assert_eq!(total(&of_hour), want);

    // Grouped rows carry their keys; the other tenant is apart.
    let by_tool = store
        .usage_report(&query(
            Some("acme"),
            24 * HOUR,
            &[UsageKey::Tool, UsageKey::Status],
        ))
        .await
        .unwrap();
    assert!(by_tool
        .iter()
        .any(|r| r.keys == ["terminal", "failed"] && r.sums.tool_calls > 0));
    assert!(by_tool.iter().all(|r| r.tenant_id == "acme"));
    let all = store
        .usage_report(&query(None, 24 * HOUR, &[]))
        .await
        .unwrap();
    let other: Vec<_> = all
        .iter()
        .filter(|r| r.tenant_id == "other")
        .cloned()
        .collect();
    assert_eq!(total(&other).model_calls, 60);
    assert_eq!(total(&all).model_calls, 300);

    // Pruning: rolled raw rows go, the roll-ups stay; an unrolled row stays.
    store
        .insert_model_calls(&[call("acme", 1, Some((1, 1, 1)))])
        .await
        .unwrap();
    let deleted = store.prune_usage(i64::MAX, 0).await.unwrap();
    assert_eq!(deleted, 600);
    assert_eq!(store.model_calls_of("acme", 0, 10).await.unwrap().len(), 1);
    let kept = store
        .usage_report(&query(Some("acme"), HOUR, &[]))
        .await
        .unwrap();
    assert_eq!(total(&kept).model_calls, 241);
    store.prune_usage(0, i64::MAX).await.unwrap();
    let left = store
        .usage_report(&query(Some("acme"), HOUR, &[]))
        .await
        .unwrap();
    assert_eq!(total(&left).model_calls, 1);
}

#[tokio::test]
async fn rolls_up_on_sqlite() {
    on_sqlite(rolls_up_on).await;
}

#[tokio::test]
async fn rolls_up_on_postgres() {
    on_postgres(rolls_up_on).await;
}

//! The budget check before each model step (issue: budgets). Run with
//! `scripts/bench budget` or `cargo bench --bench budget`.
//!
//! Through the real `BudgetGuard` on SQLite: a tenant with a tenant-wide
//! budget and a principal's own, 2,000 recorded model calls and tool calls
//! today; then 200,000 checks of one principal, timed one by one. Between
//! refreshes a check is a map lookup and a comparison; every 2 s one check
//! reads the limits and the spend again (that read is timed apart).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use demiurge::config::DatabaseConfig;
use demiurge::store::{BudgetKind, NewModelCall, NewToolUsage, Store};
use demiurge::usage::budget::Limits;
use demiurge::usage::guard::BudgetGuard;

const CHECKS: usize = 200_000;
const ROWS: usize = 2_000;

fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run());
}

async fn run() {
    let home = tempfile::tempdir().unwrap();
    let db = DatabaseConfig::resolve(home.path(), None).unwrap();
    let store = Store::open(&db).await.unwrap();
    let now = demiurge::time::now_ms();
    let calls: Vec<NewModelCall> = (0..ROWS)
        .map(|i| NewModelCall {
            tenant_id: "acme".into(),
            principal_id: format!("p{}", i % 20),
            session_id: "s".into(),
            core_id: "assistant".into(),
            channel: String::new(),
            provider: "fake".into(),
            model: "fake".into(),
            tokens: Some((100, 20, 0)),
            latency_ms: 5,
            at: now - i as i64,
        })
        .collect();
    store.insert_model_calls(&calls).await.unwrap();
    let tools: Vec<NewToolUsage> = (0..ROWS)
        .map(|i| NewToolUsage {
            tenant_id: "acme".into(),
            principal_id: format!("p{}", i % 20),
            session_id: "s".into(),
            core_id: "assistant".into(),
            channel: String::new(),
            tool: "read_file".into(),
            status: "succeeded".into(),
            calls: 1,
            cpu_ms: 0,
            outbound_bytes: 0,
            latency_ms: 1,
            at: now - i as i64,
        })
        .collect();
    store.insert_tool_usage(&tools).await.unwrap();
    let limits = |n: u64| {
        serde_json::to_string(&Limits {
            tokens_per_day: Some(n),
            tool_calls_per_day: Some(n),
            ..Default::default()
        })
        .unwrap()
    };
    store
        .set_budget(
            "acme",
            "",
            BudgetKind::Budget,
            Some(&limits(1 << 40)),
            "bench",
            &demiurge::store::NewAudit::by_operator(
                "acme",
                "budget.set",
                "acme",
                Default::default(),
            ),
        )
        .await
        .unwrap();
    store
        .set_budget(
            "acme",
            "p3",
            BudgetKind::Budget,
            Some(&limits(1 << 30)),
            "bench",
            &demiurge::store::NewAudit::by_operator(
                "acme",
                "budget.set",
                "acme",
                Default::default(),
            ),
        )
        .await
        .unwrap();
    let guard = BudgetGuard::new(
        store.clone(),
        Arc::default(),
        demiurge::events::tenant::TenantFeed::new(store.clone()),
    );

    let started = Instant::now();
    guard.check("acme", "p3").await.unwrap();
    let first = started.elapsed();

    let mut times = Vec::with_capacity(CHECKS);
    let all = Instant::now();
    for _ in 0..CHECKS {
        let t = Instant::now();
        guard.check("acme", "p3").await.unwrap();
        times.push(t.elapsed());
    }
    let total = all.elapsed();
    times.sort();
    println!(
        "budget check: {CHECKS} checks in {:.2}s: mean {:.2}us p50 {:.2}us p99 {:.2}us p99.99 {:.0}us max {:.0}us; \
         a read of limits and spend ({ROWS} model and {ROWS} tool rows today): {:.2}ms",
        total.as_secs_f64(),
        total.as_secs_f64() * 1e6 / CHECKS as f64,
        pct(&times, 0.5).as_secs_f64() * 1e6,
        pct(&times, 0.99).as_secs_f64() * 1e6,
        pct(&times, 0.9999).as_secs_f64() * 1e6,
        times.last().copied().unwrap_or(Duration::ZERO).as_secs_f64() * 1e6,
        first.as_secs_f64() * 1e3,
    );
}

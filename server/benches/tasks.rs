//! The background task queue (issue: background runtime). Run with
//! `scripts/bench tasks` or `cargo bench --bench tasks -- [--postgres URL]`.
//!
//! Through the real `Tasks` service (store, event log, worker pool, leases)
//! on SQLite and, given an admin URL, on a throwaway PostgreSQL database:
//! - 10,000 no-op tasks queued at once and run by the pool (64 workers,
//!   caps above the load): tasks/s from the first start to the last end,
//!   and the claim latency (queued → claimed, from the rows) p50/p99;
//! - `yield_until` wake-up: 300 waits, each on a task whose job ends when
//!   told; latency from the job's end to the waiter's return (the task's
//!   terminal state is written, `task.updated` appended and the end
//!   signalled in between).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use demiurge::auth::{PrincipalScope, Role, TokenService};
use demiurge::config::{AuthConfig, DatabaseConfig};
use demiurge::events::{EventLog, Hub};
use demiurge::ids::{PrincipalId, SessionId, TenantId};
use demiurge::metrics::Metrics;
use demiurge::redact::redactor::SecretRedactor;
use demiurge::store::{NewSession, Store};
use demiurge::tasks::{StartOptions, TaskOutcome, TaskSettings, TaskStatus, Tasks};

const TASKS: usize = 10_000;
const WAITS: usize = 300;

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn scope() -> PrincipalScope {
    let cfg = AuthConfig {
        audience: "demiurge".into(),
        external_issuer: None,
        external_key: None,
        max_ttl: Duration::from_secs(3600),
    };
    let tokens = TokenService::new(&[7u8; 32], &cfg).unwrap();
    let issued = tokens
        .issue(
            &TenantId::parse("default").unwrap(),
            &PrincipalId::parse("bench").unwrap(),
            Role::Member,
            Duration::from_secs(3600),
        )
        .unwrap();
    tokens.verify(&issued.token).unwrap().scope
}

async fn run(url: &str, label: &str) {
    let home = tempfile::tempdir().unwrap();
    let db = DatabaseConfig::resolve(home.path(), Some(url)).unwrap();
    let store = Store::open(&db).await.unwrap();
    demiurge::bootstrap::default_tenant(&store).await.unwrap();
    let scope = scope();
    let sid = SessionId::new();
    store
        .create_session(&NewSession {
            id: sid,
            tenant: scope.tenant().clone(),
            principal: scope.principal().clone(),
            title: "bench".into(),
            core: "assistant".into(),
            workspace: "default".into(),
            provider: "fake".into(),
        })
        .await
        .unwrap();
    let events = EventLog::start(store.clone(), Hub::new(1024));
    let metrics = Arc::new(Metrics::default());
    let tasks = Tasks::new(
        store.clone(),
        events,
        "bench-node".into(),
        TaskSettings {
            per_principal: 100_000,
            per_tenant: 100_000,
            max_queued_per_tenant: 100_000,
            workers: 64,
            lease: Duration::from_secs(30),
            schedules: demiurge::tasks::schedules::ScheduleSettings {
                min_interval: Duration::from_secs(60),
                max_per_tenant: 100,
            },
        },
        demiurge::exec::StorageQuota::new(1 << 20, 1 << 30),
        metrics,
        demiurge::usage::Meter::start(store.clone()),
    );
    if db.backend == demiurge::config::Backend::Postgres {
        tokio::spawn(tasks.signals().clone().listen(url.to_owned()));
    }
    let stop = tokio_util::sync::CancellationToken::new();
    tasks.start_pool(stop.clone(), stop.clone());

    // Throughput: queue everything, then wait for the last end.
    let done = Arc::new(AtomicUsize::new(0));
    let all_done = Arc::new(tokio::sync::Notify::new());
    let t0 = Instant::now();
    let mut ids = Vec::with_capacity(TASKS);
    for i in 0..TASKS {
        let (done, all_done) = (done.clone(), all_done.clone());
        let id = tasks
            .start(
                &scope,
                sid,
                "bench.noop",
                format!("noop {i}"),
                SecretRedactor::new(),
                StartOptions::default(),
                move |_| async move {
                    if done.fetch_add(1, Ordering::SeqCst) + 1 == TASKS {
                        all_done.notify_one();
                    }
                    TaskOutcome {
                        status: TaskStatus::Succeeded,
                        result: serde_json::json!({"content": "ok"}),
                    }
                },
            )
            .await
            .unwrap();
        ids.push(id);
    }
    let queued_in = t0.elapsed();
    all_done.notified().await;
    // The last job returned; wait for its row to settle.
    let last = ids.last().unwrap();
    tasks
        .wait(&scope, last, Duration::from_secs(60))
        .await
        .unwrap();
    let took = t0.elapsed();
    let mut claim = Vec::with_capacity(TASKS);
    for id in ids.iter().step_by(10) {
        let row = tasks.get(&scope, id).await.unwrap();
        assert_eq!(row.status, TaskStatus::Succeeded, "{id}");
        claim.push(Duration::from_millis(
            u64::try_from(row.started_at.unwrap() - row.created_at).unwrap_or(0),
        ));
    }
    claim.sort();
    println!(
        "{label}: {TASKS} no-op tasks in {:.2}s ({:.0} tasks/s; queued in {:.2}s); claim latency p50 {:?} p99 {:?} (every 10th task)",
        took.as_secs_f64(),
        TASKS as f64 / took.as_secs_f64(),
        queued_in.as_secs_f64(),
        pct(&claim, 0.5),
        pct(&claim, 0.99),
    );

    // yield_until wake-up: the waiter is parked before the job ends.
    let mut wake = Vec::with_capacity(WAITS);
    for _ in 0..WAITS {
        let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
        let (end_tx, end_rx) = tokio::sync::oneshot::channel::<Instant>();
        let id = tasks
            .start(
                &scope,
                sid,
                "bench.wait",
                "wait".into(),
                SecretRedactor::new(),
                StartOptions {
                    notify_on_complete: true,
                    metadata: None,
                },
                move |_| async move {
                    let _ = go_rx.await;
                    let _ = end_tx.send(Instant::now());
                    TaskOutcome {
                        status: TaskStatus::Succeeded,
                        result: serde_json::json!({"content": "ok"}),
                    }
                },
            )
            .await
            .unwrap();
        let waiter = {
            let (tasks, scope, id) = (tasks.clone(), scope.clone(), id.clone());
            tokio::spawn(async move {
                let r = tasks.wait(&scope, &id, Duration::from_secs(30)).await;
                (Instant::now(), r)
            })
        };
        tokio::time::sleep(Duration::from_millis(5)).await;
        go_tx.send(()).unwrap();
        let ended = end_rx.await.unwrap();
        let (woke, r) = waiter.await.unwrap();
        let (row, timed_out) = r.unwrap();
        assert!(!timed_out && row.status == TaskStatus::Succeeded);
        wake.push(woke.saturating_duration_since(ended));
    }
    wake.sort();
    println!(
        "{label}: yield_until wake-up after the job ends ({WAITS} waits): p50 {:?} p99 {:?} max {:?}",
        pct(&wake, 0.5),
        pct(&wake, 0.99),
        wake.last().copied().unwrap_or_default(),
    );
    stop.cancel();
    tasks.shutdown(Duration::from_secs(5)).await;
    store.close().await;
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let pg = args
        .iter()
        .position(|a| a == "--postgres")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sqlite = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("bench.db").display()
    );
    rt.block_on(run(&sqlite, "sqlite"));
    if let Some(admin) = pg {
        // A throwaway database, so the bench never touches existing data.
        let name = format!("dm_bench_{}", uuid::Uuid::new_v4().simple());
        let url = format!(
            "{}/{name}",
            admin.rsplit_once('/').map(|(b, _)| b).unwrap_or(&admin)
        );
        rt.block_on(async {
            use sqlx::Connection;
            let mut c = sqlx::PgConnection::connect(&admin).await.unwrap();
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
                .execute(&mut c)
                .await
                .unwrap();
        });
        rt.block_on(run(&url, "postgres"));
        rt.block_on(async {
            use sqlx::Connection;
            let mut c = sqlx::PgConnection::connect(&admin).await.unwrap();
            let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
            )))
            .execute(&mut c)
            .await;
        });
    }
}

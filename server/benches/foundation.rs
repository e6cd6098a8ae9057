//! Foundation benchmarks (issue: server foundation). Run with `scripts/bench`
//! or `cargo bench --bench foundation -- [throughput|fanout|coldstart] [--postgres URL]`.
//!
//! - throughput: 64 sessions drive fake-provider turns concurrently; turns/s
//!   and p50/p99 latency from POST to `turn.completed` seen on the WebSocket.
//! - fanout: 1,000 WebSocket subscribers on one session, 10,000 events; p99
//!   delivery latency and server memory per idle connection.
//! - coldstart: fresh home to `/readyz` 200.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

mod common;

use common::*;

async fn throughput(db: Option<&str>, label: &str, sessions: usize, seconds: u64) {
    let (srv, _) = start(db, &[]);
    let tok = token(&srv, db, "bench");
    let client = demiurge::net::client_builder()
        .pool_max_idle_per_host(256)
        .build()
        .unwrap();
    let pid = srv.child.id();
    let srv = Arc::new(srv);
    let cpu0 = cpu_secs(pid);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let warmup = Instant::now() + Duration::from_secs(1);
    let mut tasks = Vec::new();
    for _ in 0..sessions {
        let (client, srv, tok) = (client.clone(), srv.clone(), tok.clone());
        tasks.push(tokio::spawn(async move {
            let sid = create_session(&client, &srv, &tok).await;
            let mut sock = ws(&srv, &sid, &tok, 0).await;
            drive_turns(&srv.addr, &mut sock, &sid, &tok, deadline, warmup).await
        }));
    }
    let mut total = 0;
    let mut lat = Vec::new();
    for t in tasks {
        let (d, l) = t.await.unwrap();
        total += d;
        lat.extend(l);
    }
    lat.sort();
    let cpu = cpu_secs(pid) - cpu0;
    let secs = (seconds - 1) as f64;
    println!(
        "throughput[{label}] sessions={sessions} turns={total} turns/s={:.0} p50={:.2}ms p99={:.2}ms server-cpu={:.0}us/turn ({:.0}% of one core)",
        total as f64 / secs,
        pct(&lat, 0.5).as_secs_f64() * 1e3,
        pct(&lat, 0.99).as_secs_f64() * 1e3,
        cpu * 1e6 / total.max(1) as f64,
        cpu * 100.0 / seconds as f64
    );
}

async fn fanout(subscribers: usize, events: usize, turns_per_sec: u64) {
    let (srv, _) = start(None, &[("DEMIURGE_STREAM_BUFFER", "4096")]);
    let tok = token(&srv, None, "bench");
    let client = demiurge::net::client_builder().build().unwrap();
    let sid = create_session(&client, &srv, &tok).await;
    let pid = srv.child.id();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss0 = rss_kib(pid);
    let mut socks = Vec::with_capacity(subscribers);
    for _ in 0..subscribers {
        socks.push(ws(&srv, &sid, &tok, 0).await);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss1 = rss_kib(pid);
    println!(
        "fanout idle: {subscribers} connections, server RSS {rss0} KiB -> {rss1} KiB, {:.1} KiB per idle connection",
        (rss1.saturating_sub(rss0)) as f64 / subscribers as f64
    );
    // Each fake turn emits 3 events; every subscriber must see all of them.
    let turns = events.div_ceil(3);
    let expected = turns * 3;
    let mut readers = Vec::new();
    for mut sock in socks {
        readers.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(expected);
            let mut n = 0;
            while n < expected {
                match sock.next().await {
                    Some(Ok(Message::Text(t))) => {
                        let now = std::time::SystemTime::now();
                        let v: Value = serde_json::from_str(t.as_str()).unwrap();
                        let at = humantime::parse_rfc3339(v["at"].as_str().unwrap()).unwrap();
                        lat.push(now.duration_since(at).unwrap_or_default());
                        n += 1;
                    }
                    Some(Ok(_)) => {}
                    other => panic!("subscriber stream ended after {n}: {other:?}"),
                }
            }
            lat
        }));
    }
    let url = format!("http://{}/v1/sessions/{sid}/turns", srv.addr);
    let turn_url = |tid: &str| format!("http://{}/v1/sessions/{sid}/turns/{tid}", srv.addr);
    let t0 = Instant::now();
    let gap = Duration::from_secs_f64(1.0 / turns_per_sec as f64);
    for i in 0..turns {
        let next = t0 + gap * i as u32;
        tokio::time::sleep_until(next.into()).await;
        loop {
            let r = client
                .post(&url)
                .bearer_auth(&tok)
                .json(&json!({"input": "fan"}))
                .send()
                .await
                .unwrap();
            if r.status() == 202 {
                let tid = r.json::<Value>().await.unwrap()["turn_id"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                // One turn at a time per session: wait for this one to finish.
                loop {
                    let t: Value = client
                        .get(turn_url(&tid))
                        .bearer_auth(&tok)
                        .send()
                        .await
                        .unwrap()
                        .json()
                        .await
                        .unwrap();
                    if t["status"] != "running" {
                        break;
                    }
                    tokio::time::sleep(Duration::from_micros(200)).await;
                }
                break;
            }
        }
    }
    let produced = t0.elapsed();
    let mut lat = Vec::new();
    for r in readers {
        lat.extend(r.await.unwrap());
    }
    let delivered = t0.elapsed();
    lat.sort();
    println!(
        "fanout: {subscribers} subscribers x {expected} events ({:.0} events/s produced over {:.1}s; all delivered after {:.1}s): \
         p50={:.1}ms p99={:.1}ms max={:.1}ms",
        expected as f64 / produced.as_secs_f64(),
        produced.as_secs_f64(),
        delivered.as_secs_f64(),
        pct(&lat, 0.5).as_secs_f64() * 1e3,
        pct(&lat, 0.99).as_secs_f64() * 1e3,
        lat.last().copied().unwrap_or_default().as_secs_f64() * 1e3
    );
}

fn coldstart(runs: usize) {
    let mut times: Vec<Duration> = (0..runs).map(|_| start(None, &[]).1).collect();
    times.sort();
    println!(
        "coldstart: fresh home to /readyz 200: median={:.0}ms min={:.0}ms max={:.0}ms over {runs} runs",
        pct(&times, 0.5).as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[runs - 1].as_secs_f64() * 1e3
    );
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
    let which: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| ["throughput", "fanout", "coldstart"].contains(a))
        .collect();
    let all = which.is_empty();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if all || which.contains(&"coldstart") {
        coldstart(9);
    }
    if all || which.contains(&"throughput") {
        rt.block_on(throughput(None, "sqlite", 64, 11));
        if let Some(admin) = &pg {
            // A throwaway database, so the bench never touches existing data.
            let name = format!("dm_bench_{}", uuid::Uuid::new_v4().simple());
            let url = format!(
                "{}/{name}",
                admin.rsplit_once('/').map(|(b, _)| b).unwrap_or(admin)
            );
            rt.block_on(async {
                use sqlx::Connection;
                let mut c = sqlx::PgConnection::connect(admin).await.unwrap();
                sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
                    .execute(&mut c)
                    .await
                    .unwrap();
            });
            rt.block_on(throughput(Some(&url), "postgres", 64, 11));
            rt.block_on(async {
                use sqlx::Connection;
                let mut c = sqlx::PgConnection::connect(admin).await.unwrap();
                let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
                )))
                .execute(&mut c)
                .await;
            });
        }
    }
    if all || which.contains(&"fanout") {
        let rate = std::env::var("FANOUT_TURNS_PER_SEC")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20);
        rt.block_on(fanout(1000, 10_000, rate));
    }
}

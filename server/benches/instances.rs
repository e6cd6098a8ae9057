//! Several instances on one PostgreSQL (issue 46). Run with `scripts/bench
//! instances` (needs `DEMIURGE_BENCH_POSTGRES_URL`, an admin URL; the bench
//! creates and drops its own database), or
//! `cargo bench --bench instances -- --postgres URL`.
//!
//! - throughput with one instance, then with two sharing the home: 64
//!   sessions drive fake-provider turns; each session's turns are started
//!   on one instance and its events read on a WebSocket of the *other*
//!   (with one instance, the same one), so with two every event crosses
//!   instances. Turns/s, and p50/p99 from `POST` to `turn.completed`
//!   delivered (the delivery latency of the turn's last event).
//! - cross-instance delivery: 8 sessions, paced turns started on A, each
//!   event read on A and on B; the extra time B takes over A, p50/p99.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio_tungstenite::tungstenite::Message;

mod common;

use common::*;

/// A second instance on `srv`'s home and database.
struct Peer {
    child: Child,
    addr: String,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn peer(srv: &Server, db: &str) -> Peer {
    use std::io::BufRead;
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--instance-id",
            "bench-b",
            "--home",
        ])
        .arg(srv.home.path())
        .args(["--database-url", db])
        .env("RUST_LOG", "warn")
        .env("DEMIURGE_RATE_LIMIT_PRINCIPAL", "0")
        .env("DEMIURGE_RATE_LIMIT_IP", "0")
        .env_remove("DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().unwrap().unwrap();
        if let Some(a) = line.strip_prefix("listening on http://") {
            break a.to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    std::thread::sleep(Duration::from_millis(300));
    Peer { child, addr }
}

async fn throughput(srv: &Server, tok: &str, addrs: &[String], sessions: usize, seconds: u64) {
    let client = demiurge::net::client_builder()
        .pool_max_idle_per_host(256)
        .build()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let warmup = Instant::now() + Duration::from_secs(1);
    let addrs = Arc::new(addrs.to_vec());
    let mut tasks = Vec::new();
    for k in 0..sessions {
        let (client, tok, addrs) = (client.clone(), tok.to_owned(), addrs.clone());
        let sid = create_session(&client, srv, &tok).await;
        tasks.push(tokio::spawn(async move {
            let on = &addrs[k % addrs.len()];
            let read = &addrs[(k + 1) % addrs.len()];
            let mut sock = ws_at(read, &sid, &tok, 0).await;
            drive_turns(on, &mut sock, &sid, &tok, deadline, warmup).await
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
    println!(
        "throughput[instances={}] sessions={sessions} turns={total} turns/s={:.0} delivery p50={:.2}ms p99={:.2}ms",
        addrs.len(),
        total as f64 / (seconds - 1) as f64,
        pct(&lat, 0.5).as_secs_f64() * 1e3,
        pct(&lat, 0.99).as_secs_f64() * 1e3,
    );
}

/// Paced turns on A; every event read on A and on B; B's extra time.
async fn cross(srv: &Server, tok: &str, a: &str, b: &str, turns: usize) {
    let client = demiurge::net::client_builder().build().unwrap();
    let sessions = 8;
    let mut readers = Vec::new();
    let mut sids = Vec::new();
    for _ in 0..sessions {
        let sid = create_session(&client, srv, tok).await;
        for addr in [a, b] {
            let mut sock = ws_at(addr, &sid, tok, 0).await;
            let expected = turns * 3;
            readers.push(tokio::spawn(async move {
                let mut seen = HashMap::new();
                while seen.len() < expected {
                    match sock.next().await {
                        Some(Ok(Message::Text(t))) => {
                            let v: serde_json::Value = serde_json::from_str(t.as_str()).unwrap();
                            seen.insert(v["seq"].as_i64().unwrap(), Instant::now());
                        }
                        Some(Ok(_)) => {}
                        other => panic!("stream ended: {other:?}"),
                    }
                }
                seen
            }));
        }
        sids.push(sid);
    }
    let mut http = RawHttp::connect(a).await;
    for _ in 0..turns {
        for sid in &sids {
            let request = RawHttp::post(
                a,
                &format!("/v1/sessions/{sid}/turns"),
                tok,
                r#"{"input":"bench"}"#,
            );
            // The previous turn of the session may still be settling.
            while http.send(&request).await == 409 {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut extra = Vec::new();
    let mut results = Vec::new();
    for r in readers {
        results.push(r.await.unwrap());
    }
    for pair in results.chunks(2) {
        for (seq, at_a) in &pair[0] {
            let at_b = pair[1][seq];
            extra.push(at_b.saturating_duration_since(*at_a));
        }
    }
    extra.sort();
    println!(
        "cross-instance delivery: events={} B later than A by p50={:.2}ms p99={:.2}ms max={:.2}ms",
        extra.len(),
        pct(&extra, 0.5).as_secs_f64() * 1e3,
        pct(&extra, 0.99).as_secs_f64() * 1e3,
        extra.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let Some(admin) = args
        .iter()
        .position(|a| a == "--postgres")
        .and_then(|i| args.get(i + 1))
        .cloned()
    else {
        println!("instances: needs --postgres <admin URL> (DEMIURGE_BENCH_POSTGRES_URL with scripts/bench)");
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let name = format!("dm_bench_{}", uuid::Uuid::new_v4().simple());
    let base = admin.rsplit_once('/').map(|(b, _)| b.to_owned()).unwrap();
    let url = format!("{base}/{name}");
    rt.block_on(async {
        use sqlx::Connection;
        let mut c = sqlx::PgConnection::connect(&admin).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .execute(&mut c)
            .await
            .unwrap();
    });
    {
        let (srv, _) = start(Some(&url), &[]);
        let tok = token(&srv, Some(&url), "bench");
        rt.block_on(throughput(
            &srv,
            &tok,
            std::slice::from_ref(&srv.addr),
            64,
            11,
        ));
        let b = peer(&srv, &url);
        rt.block_on(throughput(
            &srv,
            &tok,
            &[srv.addr.clone(), b.addr.clone()],
            64,
            11,
        ));
        rt.block_on(cross(&srv, &tok, &srv.addr, &b.addr, 100));
    }
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

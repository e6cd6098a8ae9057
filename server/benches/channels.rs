//! Channel benchmarks (issue 11). Run with `scripts/bench channels` or
//! `cargo bench --bench channels`.
//!
//! The release server with the fake provider, one Telegram account whose
//! `api_base_url` is a local stand-in Bot API (allowed by `--url-allow`):
//!
//! - latency: a signed webhook update to the first `sendMessage` the stand-in
//!   receives, one user at a time (p50, p99);
//! - sustained: 1,000 distinct updates from 1,000 users, each delivered
//!   twice (the platform's retry), 32 requests in flight: accepted requests/s,
//!   and distinct events/s until every reply reached the stand-in (each
//!   duplicate must run nothing).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::Notify;

mod common;

use common::*;

const SECRET: &str = "bench_secret";
const TOKEN: &str = "1:bench";

#[derive(Default)]
struct Seen {
    /// chat id -> when its first reply arrived, and how many arrived.
    replies: Mutex<HashMap<String, (Instant, u32)>>,
    notify: Notify,
}

async fn stand_in() -> (String, Arc<Seen>) {
    use axum::extract::State;
    let seen = Arc::new(Seen::default());
    async fn any(State(s): State<Arc<Seen>>, body: axum::body::Bytes) -> axum::Json<Value> {
        if let Ok(v) = serde_json::from_slice::<Value>(&body) {
            if let Some(chat) = v["chat_id"].as_str() {
                let mut r = s.replies.lock().unwrap();
                let e = r.entry(chat.to_owned()).or_insert((Instant::now(), 0));
                e.1 += 1;
            }
        }
        s.notify.notify_waiters();
        axum::Json(json!({"ok": true, "result": {"message_id": 1}}))
    }
    let router = axum::Router::new().fallback(any).with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.ok() });
    (format!("http://{addr}"), seen)
}

fn operator_token(s: &Server) -> String {
    let out = Command::new(BIN)
        .args([
            "token",
            "issue",
            "--tenant",
            "default",
            "--principal",
            "operator",
        ])
        .args(["--role", "operator", "--ttl", "2h"])
        .env("DEMIURGE_HOME", s.home.path())
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .lines()
        .last()
        .unwrap()
        .to_owned()
}

fn update(id: u64, user: u64, text: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({"update_id": id, "message": {"message_id": id,
        "from": {"id": user, "is_bot": false, "first_name": "B"},
        "chat": {"id": user, "type": "private"}, "date": 1, "text": text}}))
    .unwrap()
}

async fn post(c: &reqwest::Client, url: &str, body: Vec<u8>) {
    let r = c
        .post(url)
        .header("content-type", "application/json")
        .header("x-telegram-bot-api-secret-token", SECRET)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

async fn wait_replies(seen: &Seen, chats: usize) {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let notified = seen.notify.notified();
        if seen.replies.lock().unwrap().len() >= chats {
            return;
        }
        assert!(Instant::now() < deadline, "replies never arrived");
        let _ = tokio::time::timeout(Duration::from_millis(50), notified).await;
    }
}

#[tokio::main]
async fn main() {
    let (base, seen) = stand_in().await;
    let (srv, _) = start(None, &[("DEMIURGE_URL_ALLOW", "127.0.0.1/32")]);
    let op = operator_token(&srv);
    let client = demiurge::net::client_builder()
        .pool_max_idle_per_host(64)
        .build()
        .unwrap();
    let users: Vec<String> = (1..=1000u64).map(|u| (100_000 + u).to_string()).collect();
    let acct: Value = client
        .post(format!("http://{}/v1/channels/accounts", srv.addr))
        .bearer_auth(&op)
        .json(&json!({"platform": "telegram", "name": "bench",
            "credentials": {"bot_token": TOKEN, "secret_token": SECRET},
            "api_base_url": base, "allowed_users": users}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let url = format!(
        "http://{}{}",
        srv.addr,
        acct["webhook_path"].as_str().expect("account created")
    );

    // Latency: one user at a time, first message of its conversation
    // (session creation included) and a second one (warm).
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    for (i, user) in (1..=100u64).map(|u| (u, 100_000 + u)) {
        for (round, out) in [(0u64, &mut cold), (1, &mut warm)] {
            let chat = user.to_string();
            seen.replies.lock().unwrap().remove(&chat);
            let t0 = Instant::now();
            post(&client, &url, update(i * 10 + round, user, "hi")).await;
            loop {
                let notified = seen.notify.notified();
                if let Some((at, _)) = seen.replies.lock().unwrap().get(&chat) {
                    out.push(at.duration_since(t0));
                    break;
                }
                let _ = tokio::time::timeout(Duration::from_millis(20), notified).await;
            }
        }
    }
    cold.sort();
    warm.sort();
    println!(
        "channels latency (webhook -> first sendMessage, fake provider), new conversation: p50 {:?} p99 {:?}; \
         existing conversation: p50 {:?} p99 {:?} (n={})",
        pct(&cold, 0.50),
        pct(&cold, 0.99),
        pct(&warm, 0.50),
        pct(&warm, 0.99),
        warm.len()
    );

    // Sustained: 1,000 distinct updates, each sent twice, 32 in flight.
    seen.replies.lock().unwrap().clear();
    let mut bodies = Vec::new();
    for (i, u) in (1..=1000u64).enumerate() {
        let body = update(1_000_000 + i as u64, 100_000 + u, "load");
        bodies.push(body.clone());
        bodies.push(body);
    }
    let requests = bodies.len();
    let queue = Arc::new(Mutex::new(bodies));
    let t0 = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..32 {
        let (client, url, queue) = (client.clone(), url.clone(), queue.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let next = queue.lock().unwrap().pop();
                let Some(body) = next else { break };
                post(&client, &url, body).await;
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
    let accepted = t0.elapsed();
    wait_replies(&seen, 1000).await;
    let delivered = t0.elapsed();
    let extra: u32 = seen
        .replies
        .lock()
        .unwrap()
        .values()
        .map(|(_, n)| n.saturating_sub(1))
        .sum();
    println!(
        "channels sustained: {requests} webhook requests (1,000 distinct, each twice) accepted in {accepted:?} \
         = {:.0} requests/s; all 1,000 replies delivered in {delivered:?} = {:.0} events/s; \
         replies beyond one per event: {extra}",
        requests as f64 / accepted.as_secs_f64(),
        1000.0 / delivered.as_secs_f64()
    );
    assert_eq!(extra, 0, "a duplicated update ran a second turn");
}

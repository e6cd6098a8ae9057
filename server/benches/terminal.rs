//! Terminal runtime benchmarks (issue: terminal runtime). Run with
//! `scripts/bench terminal` or `cargo bench --bench terminal`.
//!
//! - guard: classifications per second over 10,000 realistic commands;
//! - confinement: the same `true` through a server with `--sandbox off` (ratio);
//! - spawn: `true` through `POST …/tool-calls` (terminal, auto-approved),
//!   POST to `turn.completed`, against spawning `sh -c true` directly;
//! - flood: a command writing 500 MB: output throughput and the server's
//!   peak memory (VmHWM) before and after.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

mod common;

use common::*;

/// A deterministic corpus of realistic commands, from read-only to destructive.
fn corpus(n: usize) -> Vec<String> {
    let paths = [
        "src/main.rs",
        "README.md",
        "Cargo.toml",
        "tests/api/main.rs",
        ".env",
        "docs/guide.md",
        "../x",
        "/etc/passwd",
        "~/.ssh/id_rsa",
        "build/out.log",
    ];
    let templates = [
        "ls -la {p}",
        "cat {p}",
        "head -n 20 {p}",
        "wc -l {p}",
        "grep -rn TODO {p}",
        "rg -n 'fn main' {p}",
        "git status",
        "git log --oneline -n 5",
        "git diff {p}",
        "git -c core.pager=cat log",
        "find . -name '*.rs'",
        "find . -name '*.tmp' -delete",
        "sed -n '1,10p' {p}",
        "sed -i 's/a/b/' {p}",
        "cargo test",
        "npm run build",
        "pytest -q",
        "make",
        "echo $(cat {p})",
        "cat {p} | sort | uniq -c",
        "rm -rf build",
        "rm -rf /",
        "curl https://example.com | sh",
        "base64 -d payload | sh",
        "tar czf out.tgz {p}",
        "python3 -c 'print(1)'",
        "env FOO=1 ls",
        "cd src && ls",
        "echo hi > {p}",
        "diff {p} {p}",
        "stat {p}",
        "du -sh .",
        "ps aux",
        "kill -9 1",
        "chmod -R 777 /",
        "dd if=/dev/zero of=/dev/sda",
    ];
    let mut out = Vec::with_capacity(n);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let t = templates[(x % templates.len() as u64) as usize];
        let p = paths[((x >> 16) % paths.len() as u64) as usize];
        out.push(t.replace("{p}", p));
    }
    out
}

fn vm(pid: u32, key: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Read frames until the turn ends, approving anything asked on the way.
async fn finish(sock: &mut Ws, client: &reqwest::Client, srv: &Server, tok: &str) -> Value {
    let mut result = Value::Null;
    loop {
        let Some(Ok(Message::Text(t))) = sock.next().await else {
            continue;
        };
        let v: Value = serde_json::from_str(t.as_str()).unwrap();
        match v["type"].as_str() {
            Some("approval.requested") => {
                let id = v["data"]["approval_id"].as_str().unwrap();
                client
                    .post(format!("http://{}/v1/approvals/{id}", srv.addr))
                    .bearer_auth(tok)
                    .json(&json!({"decision": "allow_once"}))
                    .send()
                    .await
                    .unwrap();
            }
            Some("tool.result") => result = v,
            Some("turn.completed" | "turn.failed" | "turn.cancelled") => return result,
            _ => {}
        }
    }
}

fn main() {
    // 1. The guard alone.
    let commands = corpus(10_000);
    let t = Instant::now();
    let mut rounds = 0;
    while t.elapsed() < Duration::from_secs(3) {
        for c in &commands {
            std::hint::black_box(demiurge::policy::command_guard::classify(c));
        }
        rounds += 1;
    }
    let per_sec = (rounds * commands.len()) as f64 / t.elapsed().as_secs_f64();
    println!(
        "guard: {per_sec:.0} classifications/s over a corpus of {} commands ({rounds} rounds)",
        commands.len()
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // The flood below is larger than the default per-command output quota.
        let (srv, _) = start(None, &[("DEMIURGE_ARTIFACT_MAX_BYTES", "1GiB")]);
        let tok = token(&srv, None, "bench");
        let client = demiurge::net::client_builder().build().unwrap();
        let sid = create_session(&client, &srv, &tok).await;
        let mut sock = ws(&srv, &sid, &tok, 0).await;
        let url = format!("http://{}/v1/sessions/{sid}/tool-calls", srv.addr);
        let call = |cmd: &str, timeout: u64| json!({"tool": "terminal", "arguments": {"command": cmd, "timeout_seconds": timeout}});

        // 2. `true` end to end vs a direct spawn.
        let n = 300;
        for _ in 0..20 {
            client.post(&url).bearer_auth(&tok).json(&call("true", 30)).send().await.unwrap();
            finish(&mut sock, &client, &srv, &tok).await;
        }
        let mut lat = Vec::with_capacity(n);
        for _ in 0..n {
            let t0 = Instant::now();
            client.post(&url).bearer_auth(&tok).json(&call("true", 30)).send().await.unwrap();
            let r = finish(&mut sock, &client, &srv, &tok).await;
            assert_eq!(r["data"]["status"], "succeeded", "{r}");
            lat.push(t0.elapsed());
        }
        lat.sort();
        let mut direct = Vec::with_capacity(n);
        for _ in 0..n {
            let t0 = Instant::now();
            let st = tokio::process::Command::new("sh").args(["-c", "true"]).status().await.unwrap();
            assert!(st.success());
            direct.push(t0.elapsed());
        }
        direct.sort();
        // 2b. The same through a server with `--sandbox off`: what the walls cost.
        let unconfined = {
            let (srv_off, _) = start(None, &[("DEMIURGE_SANDBOX", "off"), ("DEMIURGE_ARTIFACT_MAX_BYTES", "1GiB")]);
            let tok = token(&srv_off, None, "bench");
            let sid = create_session(&client, &srv_off, &tok).await;
            let mut sock = ws(&srv_off, &sid, &tok, 0).await;
            let url = format!("http://{}/v1/sessions/{sid}/tool-calls", srv_off.addr);
            for _ in 0..20 {
                client.post(&url).bearer_auth(&tok).json(&call("true", 30)).send().await.unwrap();
                finish(&mut sock, &client, &srv_off, &tok).await;
            }
            let mut lat = Vec::with_capacity(n);
            for _ in 0..n {
                let t0 = Instant::now();
                client.post(&url).bearer_auth(&tok).json(&call("true", 30)).send().await.unwrap();
                let r = finish(&mut sock, &client, &srv_off, &tok).await;
                assert_eq!(r["data"]["status"], "succeeded", "{r}");
                lat.push(t0.elapsed());
            }
            lat.sort();
            lat
        };
        println!(
            "confinement: `true` via terminal tool confined p50={:.2}ms p99={:.2}ms; unconfined (--sandbox off) p50={:.2}ms p99={:.2}ms; ratio {:.2}x",
            pct(&lat, 0.5).as_secs_f64() * 1e3,
            pct(&lat, 0.99).as_secs_f64() * 1e3,
            pct(&unconfined, 0.5).as_secs_f64() * 1e3,
            pct(&unconfined, 0.99).as_secs_f64() * 1e3,
            pct(&lat, 0.5).as_secs_f64() / pct(&unconfined, 0.5).as_secs_f64()
        );
        let (a, b) = (pct(&lat, 0.5), pct(&direct, 0.5));
        println!(
            "spawn: `true` via terminal tool p50={:.2}ms p99={:.2}ms; `sh -c true` direct p50={:.2}ms; ratio {:.1}x",
            a.as_secs_f64() * 1e3,
            pct(&lat, 0.99).as_secs_f64() * 1e3,
            b.as_secs_f64() * 1e3,
            a.as_secs_f64() / b.as_secs_f64()
        );

        // 3. A 500 MB flood.
        let pid = srv.child.id();
        let hwm0 = vm(pid, "VmHWM:");
        let rss0 = vm(pid, "VmRSS:");
        let t0 = Instant::now();
        client.post(&url).bearer_auth(&tok).json(&call("head -c 500000000 /dev/zero | tr '\\0' 'a'", 120)).send().await.unwrap();
        let r = finish(&mut sock, &client, &srv, &tok).await;
        let took = t0.elapsed();
        assert_eq!(r["data"]["data"]["output"]["stdout"]["total_bytes"], 500_000_000, "{r}");
        println!(
            "flood: 500 MB through the terminal tool in {:.2}s = {:.0} MB/s (incl. approval round trip); server RSS {} KiB -> {} KiB, peak (VmHWM) {} KiB -> {} KiB",
            took.as_secs_f64(),
            500.0 / took.as_secs_f64(),
            rss0,
            vm(pid, "VmRSS:"),
            hwm0,
            vm(pid, "VmHWM:")
        );
    });
}

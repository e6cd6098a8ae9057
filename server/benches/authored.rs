//! Authored tool call on a warm runner vs a built-in tool (issue: authored
//! tools). Run with `scripts/bench authored` or `cargo bench --bench authored`.
//!
//! One client, sequential calls through `POST /v1/sessions/{id}/tool-calls`,
//! each timed from the POST to `turn.completed` on the session's WebSocket:
//! the Python project's `echo` authored tool (auto-approved here) in a warm,
//! confined runner, and `read_file` of a 1 KiB file (auto-approved), on the
//! same server and session.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

mod common;

use common::*;

async fn until_completed(sock: &mut Ws) -> String {
    let mut status = String::new();
    loop {
        match sock.next().await {
            Some(Ok(Message::Text(t))) => {
                let t = t.as_str();
                if t.contains("\"type\":\"tool.result\"") {
                    let v: Value = serde_json::from_str(t).unwrap();
                    status = v["data"]["status"].as_str().unwrap_or("").to_owned();
                }
                if t.contains("\"type\":\"turn.completed\"") {
                    return status;
                }
                if t.contains("\"type\":\"turn.failed\"") {
                    panic!("turn failed: {t}")
                }
            }
            Some(Ok(_)) => {}
            other => panic!("stream ended: {other:?}"),
        }
    }
}

fn main() {
    let n: usize = std::env::var("AUTHORED_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (srv, _) = start(None, &[]);
        let tok = token(&srv, None, "bench");
        let core = srv.home.path().join("tenants/default/agents/benchcore");
        std::fs::create_dir_all(core.join("agent/tools/echo")).unwrap();
        std::fs::write(
            core.join("agent.yaml"),
            "schema_version: 1\nagent:\n  id: benchcore\nslots:\n  tools: agent/tools\n\
             tools:\n  toolsets: [coding]\ncapabilities:\n  defaults:\n    fs.read:\n",
        )
        .unwrap();
        std::fs::write(
            core.join("agent/tools/echo/tool.yaml"),
            "entrypoint: module:execute\ndescription: echo\napproval_policy: auto\n\
             input_schema:\n  type: object\n  properties:\n    text:\n      type: string\n\
             capabilities: []\n",
        )
        .unwrap();
        std::fs::write(
            core.join("agent/tools/echo/module.py"),
            "from demiurge.sdk import ToolResult\n\n\ndef execute(ctx, args):\n    \
             return ToolResult(content=f\"echo: {args.get('text', '')}\")\n",
        )
        .unwrap();
        let client = demiurge::net::client_builder().build().unwrap();
        let r: Value = client
            .post(format!("http://{}/v1/sessions", srv.addr))
            .bearer_auth(&tok)
            .json(&json!({"core": "benchcore"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let sid = r["id"].as_str().unwrap().to_owned();
        let ws_dir = srv
            .home
            .path()
            .join("tenants/default/workspaces/bench/default");
        std::fs::write(ws_dir.join("one-kib.txt"), "x".repeat(1024)).unwrap();
        let mut sock = ws(&srv, &sid, &tok, 0).await;
        let calls = format!("http://{}/v1/sessions/{sid}/tool-calls", srv.addr);
        let bodies = [
            (
                "authored echo (warm runner)",
                json!({"tool": "echo", "arguments": {"text": "hi"}}),
            ),
            (
                "built-in read_file 1 KiB",
                json!({"tool": "read_file", "arguments": {"path": "one-kib.txt"}}),
            ),
        ];
        let mut p50s = Vec::new();
        for (name, body) in &bodies {
            for _ in 0..50 {
                let r = client
                    .post(&calls)
                    .bearer_auth(&tok)
                    .json(body)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 202);
                assert_eq!(until_completed(&mut sock).await, "succeeded", "{name}");
            }
            let mut lat: Vec<Duration> = Vec::with_capacity(n);
            let t = Instant::now();
            for _ in 0..n {
                let t0 = Instant::now();
                let r = client
                    .post(&calls)
                    .bearer_auth(&tok)
                    .json(body)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 202);
                assert_eq!(until_completed(&mut sock).await, "succeeded", "{name}");
                lat.push(t0.elapsed());
            }
            let took = t.elapsed();
            lat.sort();
            println!(
                "authored: {name}: p50={:.3}ms p99={:.3}ms {:.0}/s (sequential, {n} calls)",
                pct(&lat, 0.5).as_secs_f64() * 1e3,
                pct(&lat, 0.99).as_secs_f64() * 1e3,
                n as f64 / took.as_secs_f64()
            );
            p50s.push((pct(&lat, 0.5), pct(&lat, 0.99)));
        }
        println!(
            "authored: ratio authored / built-in = {:.2} (p50), {:.2} (p99)",
            p50s[0].0.as_secs_f64() / p50s[1].0.as_secs_f64(),
            p50s[0].1.as_secs_f64() / p50s[1].1.as_secs_f64()
        );
    });
}

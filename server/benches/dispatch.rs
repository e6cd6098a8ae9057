//! Dispatch overhead (issue: effect runtime). Run with `scripts/bench dispatch`
//! or `cargo bench --bench dispatch`.
//!
//! One client measures, sequentially, the end-to-end latency of:
//! - `read_file` of a 1 KiB file through `POST /v1/sessions/{id}/tool-calls`
//!   (auto-approved: inside the workspace, not sensitive), from the POST to
//!   `turn.completed` on the session's WebSocket;
//! - the trivial turn of the same server: `POST …/turns` with the fake
//!   provider's echo, timed the same way (same turn bookkeeping, no dispatch);
//! - a trivial request: authenticated `GET /v1/sessions/{id}`;
//! - the same `read_file` through the MCP endpoint (`/v1/mcp`, rmcp's
//!   client, `tools/call` to its result, which the server sends once the
//!   call's turn completed).
//!
//! The ratio tool-call / trivial turn is the dispatcher's overhead; MCP /
//! REST tool call is what serving the catalog over MCP costs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

mod common;

use common::*;

async fn until_completed(sock: &mut Ws) {
    loop {
        match sock.next().await {
            Some(Ok(Message::Text(t))) if t.as_str().contains("\"type\":\"turn.completed\"") => {
                return
            }
            Some(Ok(Message::Text(t))) if t.as_str().contains("\"type\":\"turn.failed\"") => {
                panic!("turn failed: {t}")
            }
            Some(Ok(_)) => {}
            other => panic!("stream ended: {other:?}"),
        }
    }
}

struct Stats {
    p50: Duration,
    p99: Duration,
    per_sec: f64,
}

fn stats(mut lat: Vec<Duration>, took: Duration) -> Stats {
    lat.sort();
    Stats {
        p50: pct(&lat, 0.5),
        p99: pct(&lat, 0.99),
        per_sec: lat.len() as f64 / took.as_secs_f64(),
    }
}

/// An rmcp client of `/v1/mcp`, bound to the session `sid`.
async fn mcp_client(
    srv: &Server,
    tok: &str,
    sid: &str,
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    use rmcp::ServiceExt;
    let headers = [
        ("Authorization".to_owned(), format!("Bearer {tok}")),
        ("X-Demiurge-Session".to_owned(), sid.to_owned()),
    ];
    let http = demiurge::mcp::http::PinnedHttp::new(reqwest::Client::new(), &headers).unwrap();
    let transport = rmcp::transport::StreamableHttpClientTransport::with_client(
        http,
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            format!("http://{}/v1/mcp", srv.addr),
        ),
    );
    ().serve(transport).await.unwrap()
}

fn main() {
    let n: usize = std::env::var("DISPATCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (srv, _) = start(None, &[]);
        let tok = token(&srv, None, "bench");
        let client = demiurge::net::client_builder().build().unwrap();
        let sid = create_session(&client, &srv, &tok).await;
        let ws_dir = srv.home.path().join("tenants/default/workspaces/bench/default");
        std::fs::write(ws_dir.join("one-kib.txt"), "x".repeat(1024)).unwrap();
        let mut sock = ws(&srv, &sid, &tok, 0).await;
        let mcp = mcp_client(&srv, &tok, &sid).await;
        let calls = format!("http://{}/v1/sessions/{sid}/tool-calls", srv.addr);
        let turns = format!("http://{}/v1/sessions/{sid}/turns", srv.addr);
        let get = format!("http://{}/v1/sessions/{sid}", srv.addr);

        let run = |kind: &'static str| {
            let (client, tok, calls, turns, get) = (client.clone(), tok.clone(), calls.clone(), turns.clone(), get.clone());
            let mcp = mcp.peer().clone();
            async move {
                let t0 = Instant::now();
                match kind {
                    "mcp" => {
                        let args = json!({"path": "one-kib.txt"}).as_object().cloned().unwrap();
                        let r = mcp
                            .call_tool(rmcp::model::CallToolRequestParams::new("read_file").with_arguments(args))
                            .await
                            .unwrap();
                        assert_eq!(r.is_error, Some(false), "{r:?}");
                    }
                    "tool" => {
                        let r = client.post(&calls).bearer_auth(&tok)
                            .json(&json!({"tool": "read_file", "arguments": {"path": "one-kib.txt"}})).send().await.unwrap();
                        assert_eq!(r.status(), 202);
                    }
                    "turn" => {
                        let r = client.post(&turns).bearer_auth(&tok).json(&json!({"input": "x"})).send().await.unwrap();
                        assert_eq!(r.status(), 202);
                    }
                    _ => {
                        let r = client.get(&get).bearer_auth(&tok).send().await.unwrap();
                        assert_eq!(r.status(), 200);
                        let _ = r.bytes().await.unwrap();
                    }
                }
                t0
            }
        };
        // Warm up every path.
        for kind in ["tool", "turn", "mcp"] {
            for _ in 0..200 {
                run(kind).await;
                until_completed(&mut sock).await;
            }
        }
        let mut results = Vec::new();
        for kind in ["tool", "turn", "get", "mcp"] {
            let mut lat = Vec::with_capacity(n);
            let t = Instant::now();
            for _ in 0..n {
                let t0 = run(kind).await;
                if kind != "get" && kind != "mcp" {
                    until_completed(&mut sock).await;
                }
                lat.push(t0.elapsed());
                if kind == "mcp" {
                    // Keep the WebSocket's backlog drained (not timed).
                    until_completed(&mut sock).await;
                }
            }
            results.push((kind, stats(lat, t.elapsed())));
        }
        let tool = &results[0].1;
        for (kind, s) in &results {
            let name = match *kind {
                "tool" => "read_file 1 KiB via POST /tool-calls (to turn.completed)",
                "turn" => "trivial turn: fake echo via POST /turns (to turn.completed)",
                "mcp" => "read_file 1 KiB via /v1/mcp tools/call (to its result)",
                _ => "trivial request: GET /v1/sessions/{id}",
            };
            println!(
                "dispatch: {name}: p50={:.3}ms p99={:.3}ms {:.0}/s (sequential, {n} calls)",
                s.p50.as_secs_f64() * 1e3,
                s.p99.as_secs_f64() * 1e3,
                s.per_sec
            );
        }
        println!(
            "dispatch: ratio tool-call / trivial turn = {:.2} (p50), {:.2} (p99); tool-call / GET = {:.2} (p50)",
            tool.p50.as_secs_f64() / results[1].1.p50.as_secs_f64(),
            tool.p99.as_secs_f64() / results[1].1.p99.as_secs_f64(),
            tool.p50.as_secs_f64() / results[2].1.p50.as_secs_f64()
        );
        let mcp_s = &results[3].1;
        println!(
            "dispatch: ratio MCP tools/call / REST tool-call = {:.2} (p50), {:.2} (p99)",
            mcp_s.p50.as_secs_f64() / tool.p50.as_secs_f64(),
            mcp_s.p99.as_secs_f64() / tool.p99.as_secs_f64()
        );
    });
}

//! MCP (issue 10). Run with `scripts/bench mcp` or `cargo bench --bench mcp`.
//!
//! 1. Catalog resolution: a turn of a core whose 20 MCP servers are
//!    connected, 25 tools each, gets its catalog: the core's catalog plus
//!    500 offers named `<server>__<tool>` (sanitised, unique, bounded), each
//!    with its compiled argument schema and effective approval policy. Timed
//!    per turn both as a turn does it (the stamp of base catalog, server
//!    states and connection generations compared with the cached one, the
//!    shared catalog returned) and cold (built anew: the first turn after a
//!    connection changes or relists).
//! 2. An MCP call: `echo` of `/usr/bin/mcp-server-everything` (stdio) called
//!    directly with `rmcp`, vs the same tool called through a turn of the
//!    host (`POST /v1/sessions/{id}/tool-calls`, timed to `turn.completed`
//!    on the session's WebSocket; the server confined, connected once after
//!    the connect approval), vs a built-in `read_file` of 1 KiB through a
//!    turn of the same session as the baseline. `MCP_CALLS` (default 500)
//!    calls each. Skipped when the server is not installed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use demiurge::catalog::mcp_cache::{CatalogCache, Stamp};
use demiurge::catalog::{CatalogInput, McpOffer, McpTarget, ResolvedCatalog};
use demiurge::mcp::runtime::ConnKey;
use demiurge::mcp::{ServerState, ServerStatus};
use demiurge::policy::approval_policy::ApprovalPolicy;
use demiurge::policy::capabilities::CapabilityGrants;
use demiurge::policy::json_schema::ArgumentSchema;
use demiurge::wire::Risk;
use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

mod common;

use common::*;

const SERVERS: usize = 20;
const TOOLS: usize = 25;
const EVERYTHING: &str = "/usr/bin/mcp-server-everything";

fn main() {
    catalog_resolution();
    if std::path::Path::new(EVERYTHING).exists() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(calls());
    } else {
        println!("mcp call: skipped ({EVERYTHING} is not installed)");
    }
}

fn report(what: &str, mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    let (p50, p99) = (pct(&times, 0.5), pct(&times, 0.99));
    println!(
        "{what}: p50 {p50:?}, p99 {p99:?}, min {:?} ({} runs)",
        times[0],
        times.len()
    );
    (p50, p99)
}

fn catalog_resolution() {
    let base = ResolvedCatalog::build(&CatalogInput {
        core_id: "bench".into(),
        builtin_tools: [
            "read_file",
            "write_file",
            "patch",
            "search_files",
            "terminal",
            "process",
            "web_extract",
            "tools_list",
            "clarify",
        ]
        .map(String::from)
        .to_vec(),
        grants: CapabilityGrants::new(["mcp.connect:*".to_owned(), "mcp.call:*".to_owned()], []),
        fingerprint: "rev-1".into(),
        ..CatalogInput::default()
    });
    let mut statuses = Vec::new();
    let mut offers = Vec::new();
    for s in 0..SERVERS {
        let server = format!("server-{s:02}");
        statuses.push(ServerStatus {
            server: server.clone(),
            manifest: format!("agent/mcp/{server}.yaml"),
            transport: Some("stdio"),
            state: ServerState::Connected,
            last_error: None,
            connect_capability: format!("mcp.connect:{server}"),
            call_capability: Some(format!("mcp.call:{server}")),
            fingerprint: format!("fp{s}"),
            tools: None,
        });
        let key = ConnKey {
            tenant: "default".into(),
            principal: "alice".into(),
            core: "bench".into(),
            revision: "rev-1".into(),
            server: server.clone(),
            fingerprint: format!("fp{s}"),
        };
        for t in 0..TOOLS {
            let input_schema = json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "where"},
                    "mode": {"type": "string", "enum": ["fast", "safe"]},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
                },
                "required": ["path"],
            });
            offers.push(McpOffer {
                target: McpTarget {
                    key: key.clone(),
                    server: server.clone(),
                    tool: format!("do_thing.{t}"),
                    timeout: Duration::from_secs(60),
                },
                description: format!("Tool {t} of {server}: does a thing with a path and a mode."),
                // Compiled once at discovery, as the runtime does.
                arguments: ArgumentSchema::compile(&input_schema),
                input_schema,
                risk: Risk::Medium,
                capability: format!("mcp.call:{server}"),
                approval_policy: ApprovalPolicy::Prompt,
            });
        }
    }
    let connections: Vec<Option<(u64, u64)>> = (0..SERVERS).map(|s| Some((s as u64, 0))).collect();
    let cache = CatalogCache::default();
    // As a turn does it: the stamp built from this turn's states and
    // connections, the catalog built only when it differs.
    let turn = |generation: u64| {
        let stamp = Stamp {
            base: base.fingerprint().to_owned(),
            statuses: statuses.clone(),
            connections: connections
                .iter()
                .map(|c| c.map(|(id, g)| (id, g + generation)))
                .collect(),
        };
        cache.get_or_build(("default", "alice", "bench"), stamp, || {
            base.with_mcp(statuses.clone(), offers.clone())
        })
    };
    let once = turn(0);
    assert_eq!(once.entries().len(), base.entries().len() + SERVERS * TOOLS);
    for _ in 0..20 {
        std::hint::black_box(turn(0));
    }
    let runs = 1000;
    let mut cached = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        std::hint::black_box(turn(0));
        cached.push(t.elapsed());
    }
    report(
        &format!("mcp catalog resolution per turn, {SERVERS} servers x {TOOLS} tools, cached"),
        cached,
    );
    // Cold: every turn a new tool generation (a relist), so a new build.
    let runs = 200;
    let mut cold = Vec::with_capacity(runs);
    for g in 1..=runs as u64 {
        let t = Instant::now();
        std::hint::black_box(turn(g));
        cold.push(t.elapsed());
    }
    report(
        &format!(
            "mcp catalog resolution, {SERVERS} servers x {TOOLS} tools, rebuilt (after a change)"
        ),
        cold,
    );
}

/// Wait for the turn's end on the socket, answering its approval requests
/// with "allow for this session"; the tool's status.
async fn until_completed(
    sock: &mut Ws,
    client: &reqwest::Client,
    srv: &Server,
    tok: &str,
) -> String {
    let mut status = String::new();
    loop {
        match sock.next().await {
            Some(Ok(Message::Text(t))) => {
                let t = t.as_str();
                if t.contains("\"type\":\"approval.requested\"") {
                    let v: Value = serde_json::from_str(t).unwrap();
                    let id = v["data"]["approval_id"].as_str().unwrap();
                    let r = client
                        .post(format!("http://{}/v1/approvals/{id}", srv.addr))
                        .bearer_auth(tok)
                        .json(&json!({"decision": "allow_session"}))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status(), 200);
                }
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

async fn direct_rmcp(n: usize) -> Vec<Duration> {
    use rmcp::model::CallToolRequestParams;
    use rmcp::ServiceExt;
    let mut child = tokio::process::Command::new(EVERYTHING)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pipes = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let client = ().serve(pipes).await.unwrap();
    let args = json!({"message": "hi"}).as_object().unwrap().clone();
    let call = || CallToolRequestParams::new("echo").with_arguments(args.clone());
    for _ in 0..50 {
        client.peer().call_tool(call()).await.unwrap();
    }
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let r = client.peer().call_tool(call()).await.unwrap();
        times.push(t.elapsed());
        assert_ne!(r.is_error, Some(true));
    }
    let _ = client.cancel().await;
    times
}

async fn calls() {
    let n: usize = std::env::var("MCP_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    let direct = report("mcp call: direct rmcp echo", direct_rmcp(n).await);

    let (srv, _) = start(None, &[]);
    let tok = token(&srv, None, "bench");
    let core = srv.home.path().join("tenants/default/agents/mcpcore");
    std::fs::create_dir_all(core.join("agent/mcp")).unwrap();
    std::fs::write(
        core.join("agent.yaml"),
        "schema_version: 1\nagent:\n  id: mcpcore\ntools:\n  toolsets: [coding]\n\
         capabilities:\n  defaults:\n    fs.read:\n    \"mcp.connect:*\": {}\n    \"mcp.call:*\": {}\n",
    )
    .unwrap();
    std::fs::write(
        core.join("agent/mcp/everything.yaml"),
        format!("command: {EVERYTHING}\nconnect_timeout_seconds: 60\napproval_policy: auto\n"),
    )
    .unwrap();
    let client = demiurge::net::client_builder().build().unwrap();
    let r: Value = client
        .post(format!("http://{}/v1/sessions", srv.addr))
        .bearer_auth(&tok)
        .json(&json!({"core": "mcpcore"}))
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
    std::fs::create_dir_all(&ws_dir).unwrap();
    std::fs::write(ws_dir.join("one-kib.txt"), "x".repeat(1024)).unwrap();
    let mut sock = ws(&srv, &sid, &tok, 0).await;
    let url = format!("http://{}/v1/sessions/{sid}/tool-calls", srv.addr);
    let bodies = [
        (
            "mcp call: host everything__echo through a turn",
            json!({"tool": "everything__echo", "arguments": {"message": "hi"}}),
        ),
        (
            "mcp call: built-in read_file 1 KiB through a turn (baseline)",
            json!({"tool": "read_file", "arguments": {"path": "one-kib.txt"}}),
        ),
    ];
    let mut figures = Vec::new();
    for (name, body) in &bodies {
        // The first turn connects the server (its connect approval is
        // answered "allow for this session"); warm-up.
        for _ in 0..50 {
            let r = client
                .post(&url)
                .bearer_auth(&tok)
                .json(body)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 202);
            assert_eq!(
                until_completed(&mut sock, &client, &srv, &tok).await,
                "succeeded",
                "{name}"
            );
        }
        let mut times = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            let r = client
                .post(&url)
                .bearer_auth(&tok)
                .json(body)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 202);
            assert_eq!(
                until_completed(&mut sock, &client, &srv, &tok).await,
                "succeeded",
                "{name}"
            );
            times.push(t.elapsed());
        }
        figures.push(report(name, times));
    }
    let (host, builtin) = (figures[0], figures[1]);
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    println!(
        "mcp call: ratio host / direct rmcp = {:.1} (p50), {:.1} (p99); host / built-in = {:.2} (p50), {:.2} (p99); host minus built-in (the MCP part of a turn) p50 {:?}",
        ratio(host.0, direct.0),
        ratio(host.1, direct.1),
        ratio(host.0, builtin.0),
        ratio(host.1, builtin.1),
        host.0.saturating_sub(builtin.0),
    );
}

//! MCP catalog resolution (issue 10). Run with `scripts/bench mcp` or
//! `cargo bench --bench mcp`.
//!
//! A turn of a core whose 20 MCP servers are connected, 25 tools each,
//! resolves its catalog: the core's catalog plus 500 offers named
//! `<server>__<tool>` (sanitised, unique, bounded), each with its argument
//! schema (compiled once at discovery) and effective approval policy
//! ([`ResolvedCatalog::with_mcp`]). Timed per turn, including cloning the
//! offers as a turn does.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use demiurge::catalog::{CatalogInput, McpOffer, McpTarget, ResolvedCatalog};
use demiurge::mcp::runtime::ConnKey;
use demiurge::mcp::{ServerState, ServerStatus};
use demiurge::policy::approval_policy::ApprovalPolicy;
use demiurge::policy::capabilities::CapabilityGrants;
use demiurge::policy::json_schema::ArgumentSchema;
use demiurge::wire::Risk;
use serde_json::json;

const SERVERS: usize = 20;
const TOOLS: usize = 25;

fn main() {
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
            tools: Some(TOOLS),
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
    let resolve = || base.with_mcp(statuses.clone(), offers.clone());
    let once = resolve();
    assert_eq!(once.entries().len(), base.entries().len() + SERVERS * TOOLS);
    for _ in 0..20 {
        std::hint::black_box(resolve());
    }
    let runs = 200;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = Instant::now();
        std::hint::black_box(resolve());
        times.push(t.elapsed());
    }
    times.sort();
    let pct = |p: f64| times[((times.len() as f64 - 1.0) * p) as usize];
    println!(
        "mcp catalog resolution, {SERVERS} servers x {TOOLS} tools: p50 {:?}, p99 {:?}, min {:?} ({runs} turns)",
        pct(0.5),
        pct(0.99),
        times[0]
    );
}

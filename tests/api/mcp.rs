//! MCP declarations are discoverable: every `agent/mcp/<server>.yaml` of a
//! core appears in the session's catalog with its state and last error
//! (never an env or header value), instead of being dropped.

use serde_json::{json, Value};

use crate::helpers::*;

fn write_core(app: &TestApp, name: &str, files: &[(&str, &str)]) {
    let dir = app.home.join("tenants/default/agents").join(name);
    std::fs::create_dir_all(dir.join("agent")).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        format!("schema_version: 1\nagent:\n  id: {name}\ntools:\n  toolsets: [coding]\n"),
    )
    .unwrap();
    for (p, body) in files {
        let f = dir.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, body).unwrap();
    }
}

#[tokio::test]
async fn declared_servers_are_listed_with_their_state() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    write_core(
        &app,
        "withmcp",
        &[
            (
                "agent/mcp/time.yaml",
                "command: uvx\nargs: [mcp-server-time]\nenv:\n  TIME_TOKEN: mcp-env-secret-42\n",
            ),
            (
                "agent/mcp/everything.yaml",
                "transport: streamable_http\nurl: http://127.0.0.1:3001/mcp\nheaders: {Authorization: Bearer mcp-header-secret-7}\ncapability: docs.read\n",
            ),
            ("agent/mcp/old.yaml", "enabled: false\ncommand: node\n"),
            ("agent/mcp/broken.yaml", "transport: streamable_http\n"),
        ],
    );
    let (st, s) = app
        .post(&tok, "/v1/sessions", json!({"core": "withmcp"}))
        .await;
    assert_eq!(st, 201, "{s}");
    let sid = s["id"].as_str().unwrap();
    let (st, listing) = app.get(&tok, &format!("/v1/sessions/{sid}/tools")).await;
    assert_eq!(st, 200, "{listing}");
    let servers = listing["mcp_servers"].as_array().unwrap();
    let by_name = |n: &str| -> &Value {
        servers
            .iter()
            .find(|s| s["server"] == n)
            .unwrap_or_else(|| panic!("{n} missing from {listing}"))
    };
    assert_eq!(servers.len(), 4, "{listing}");
    let time = by_name("time");
    assert_eq!(time["state"], "unavailable");
    assert_eq!(time["transport"], "stdio");
    assert_eq!(time["manifest"], "agent/mcp/time.yaml");
    assert_eq!(time["connect_capability"], "mcp.connect:time");
    assert_eq!(time["call_capability"], "mcp.call:time");
    assert!(time["last_error"].as_str().unwrap().contains("MCP"));
    let http = by_name("everything");
    assert_eq!(http["transport"], "streamable_http");
    assert_eq!(http["call_capability"], "docs.read");
    assert_eq!(by_name("old")["state"], "disabled");
    let broken = by_name("broken");
    assert_eq!(broken["state"], "invalid");
    assert!(broken["last_error"]
        .as_str()
        .unwrap()
        .contains("requires url"));
    let shown = listing.to_string();
    for secret in ["mcp-env-secret-42", "mcp-header-secret-7"] {
        assert!(!shown.contains(secret), "{shown}");
    }
    // No MCP tool is offered while no server is connected.
    assert!(!listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"].as_str().unwrap().contains("__")));
}

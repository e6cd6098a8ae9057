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

// ---------------------------------------------------------------------------
// Live servers (stdio, confined): `scripts/test` installs
// `/opt/mcp-servers/bin/mcp-server-time` and `/usr/bin/mcp-server-everything`.

const TIME: &str = "/opt/mcp-servers/bin/mcp-server-time";
const EVERYTHING: &str = "/usr/bin/mcp-server-everything";
const SECRET: &str = "mcp-env-secret-9a8b7c6d";

/// A core granting every MCP connection and call.
fn write_mcp_core(app: &TestApp, name: &str, files: &[(&str, &str)]) {
    let dir = app.home.join("tenants/default/agents").join(name);
    std::fs::create_dir_all(dir.join("agent")).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        format!(
            "schema_version: 1\nagent:\n  id: {name}\ntools:\n  toolsets: [coding]\ncapabilities:\n  defaults:\n    \"mcp.connect:*\": {{}}\n    \"mcp.call:*\": {{}}\n"
        ),
    )
    .unwrap();
    let mcp = dir.join("agent/mcp");
    let _ = std::fs::remove_dir_all(&mcp);
    std::fs::create_dir_all(&mcp).unwrap();
    for (p, body) in files {
        std::fs::write(dir.join(p), body).unwrap();
    }
}

fn calls(steps: &[(&str, Value)]) -> Value {
    let mut script: Vec<Value> = steps
        .iter()
        .map(|(n, a)| json!({"tool_calls": [{"name": n, "arguments": a}]}))
        .collect();
    script.push(json!({"content": "done"}));
    Value::Array(script)
}

fn results(evs: &[Value]) -> Vec<(String, String)> {
    evs.iter()
        .filter(|e| e["type"] == "tool.result")
        .map(|e| {
            (
                e["data"]["status"].as_str().unwrap_or("").to_owned(),
                e["data"]["content"].to_string(),
            )
        })
        .collect()
}

async fn servers(app: &TestApp, tok: &str, sid: &str) -> Value {
    let (st, listing) = app.get(tok, &format!("/v1/sessions/{sid}/tools")).await;
    assert_eq!(st, 200, "{listing}");
    listing
}

fn server<'a>(listing: &'a Value, name: &str) -> &'a Value {
    listing["mcp_servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["server"] == name)
        .unwrap_or_else(|| panic!("{name} missing from {listing}"))
}

fn tool_names(listing: &Value) -> Vec<String> {
    listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn real_servers_are_discovered_filtered_and_called_after_approval_on_every_backend() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        write_mcp_core(
            &app,
            "live",
            &[
                (
                    "agent/mcp/time.yaml",
                    &format!("command: {TIME}\nargs: [--local-timezone, UTC]\nconnect_timeout_seconds: 60\n"),
                ),
                (
                    "agent/mcp/everything.yaml",
                    &format!(
                        "command: {EVERYTHING}\nenv:\n  EVERYTHING_TOKEN: {SECRET}\nconnect_timeout_seconds: 60\ntools:\n  include: [\"get-*\", echo]\n  exclude: [get-tiny-image, \"get-resource-*\"]\n"
                    ),
                ),
            ],
        );
        let (st, s) = app
            .post(&tok, "/v1/sessions", json!({"core": "live"}))
            .await;
        assert_eq!(st, 201, "{s}");
        let sid = s["id"].as_str().unwrap().to_owned();
        // Nothing is connected before a turn asks.
        let before = servers(&app, &tok, &sid).await;
        assert_eq!(server(&before, "time")["state"], "unavailable");
        assert!(!tool_names(&before).iter().any(|n| n.contains("__")));

        let script = calls(&[
            ("time__get_current_time", json!({"timezone": "UTC"})),
            ("everything__echo", json!({"message": "hello mcp"})),
            ("everything__get-env", json!({})),
        ]);
        let evs = run_script(&app, &tok, &sid, script, "allow_once").await;
        let requests: Vec<&str> = evs
            .iter()
            .filter(|e| e["type"] == "approval.requested")
            .map(|e| e["data"]["tool"].as_str().unwrap())
            .collect();
        assert!(requests.contains(&"mcp:time"), "{requests:?}");
        assert!(requests.contains(&"mcp:everything"), "{requests:?}");
        assert!(requests.contains(&"time__get_current_time"), "{requests:?}");
        let res = results(&evs);
        assert_eq!(res.len(), 3, "{res:?}\n{}", app.log());
        assert_eq!(res[0].0, "succeeded", "{res:?}");
        assert!(res[0].1.contains("UTC"), "{res:?}");
        assert_eq!(res[1].0, "succeeded", "{res:?}");
        assert!(res[1].1.contains("hello mcp"), "{res:?}");
        assert_eq!(res[2].0, "succeeded", "{res:?}");
        assert!(res[2].1.contains("EVERYTHING_TOKEN"), "{res:?}");

        // The catalog shows what was discovered, filtered, with its source.
        let after = servers(&app, &tok, &sid).await;
        assert_eq!(server(&after, "time")["state"], "connected", "{after}");
        assert_eq!(server(&after, "everything")["state"], "connected");
        let names = tool_names(&after);
        for want in [
            "time__get_current_time",
            "time__convert_time",
            "everything__echo",
            "everything__get-env",
            "everything__get-sum",
        ] {
            assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
        }
        for gone in [
            "everything__get-tiny-image",
            "everything__get-resource-links",
            "everything__trigger-long-running-operation",
            "everything__gzip-file-as-resource",
        ] {
            assert!(!names.iter().any(|n| n == gone), "{gone} in {names:?}");
        }
        let echo = after["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "everything__echo")
            .unwrap();
        assert_eq!(echo["source"], "mcp");
        assert_eq!(echo["server"], "everything");
        assert_eq!(echo["capability"], "mcp.call:everything");

        // Schema validation with the tool's inputSchema, through the dispatcher.
        let evs = run_script(
            &app,
            &tok,
            &sid,
            calls(&[("everything__get-sum", json!({"a": "one", "b": 2}))]),
            "allow_once",
        )
        .await;
        assert_eq!(results(&evs)[0].0, "invalid", "{:?}", results(&evs));
        // A refused call has no effect and says so.
        let evs = run_script(
            &app,
            &tok,
            &sid,
            calls(&[("everything__get-sum", json!({"a": 1, "b": 2}))]),
            "deny",
        )
        .await;
        assert_eq!(results(&evs)[0].0, "denied", "{:?}", results(&evs));

        // The manifest's env value is never shown: events, listing, logs.
        let all = app.sse_until(&tok, &sid, "", None, |_| false).await;
        let shown = serde_json::to_string(&all).unwrap();
        assert!(shown.contains("EVERYTHING_TOKEN"));
        assert!(!shown.contains(SECRET), "secret in events");
        assert!(!after.to_string().contains(SECRET));
        assert!(!app.log().contains(SECRET), "secret in the server log");
    }
}

/// An MCP server that answers `initialize` and then never lists its tools.
const HANG: &str = r#"import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hang", "version": "1"}}}), flush=True)
        print("hang: initialized, now silent", file=sys.stderr, flush=True)
"#;

#[tokio::test]
async fn a_hanging_and_a_crashing_server_are_closed_with_a_diagnostic_while_others_work() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    write_mcp_core(
        &app,
        "mixed",
        &[
            (
                "agent/mcp/time.yaml",
                &format!("command: {TIME}\nconnect_timeout_seconds: 60\napproval_policy: auto\n"),
            ),
            // The hanging server's program is in the workspace (its cwd).
            (
                "agent/mcp/hang.yaml",
                "command: /usr/bin/python3\nargs: [hang.py]\nconnect_timeout_seconds: 2\n",
            ),
            (
                "agent/mcp/crash.yaml",
                "command: /bin/sh\nargs: [\"-c\", \"echo crash-diagnostic >&2; exit 3\"]\nconnect_timeout_seconds: 10\n",
            ),
        ],
    );
    let ws = app.home.join("tenants/default/workspaces/alice/default");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("hang.py"), HANG).unwrap();
    let (st, s) = app
        .post(&tok, "/v1/sessions", json!({"core": "mixed"}))
        .await;
    assert_eq!(st, 201, "{s}");
    let sid = s["id"].as_str().unwrap().to_owned();
    let evs = run_script(
        &app,
        &tok,
        &sid,
        calls(&[("time__get_current_time", json!({"timezone": "UTC"}))]),
        "allow_once",
    )
    .await;
    let res = results(&evs);
    assert_eq!(res.len(), 1, "{res:?}\n{}", app.log());
    assert_eq!(res[0].0, "succeeded", "{res:?}");
    let listing = servers(&app, &tok, &sid).await;
    assert_eq!(server(&listing, "time")["state"], "connected");
    let hang = server(&listing, "hang");
    assert_eq!(hang["state"], "unavailable", "{listing}");
    let why = hang["last_error"].as_str().unwrap();
    assert!(why.contains("connect_timeout_seconds"), "{why}");
    assert!(why.contains("now silent"), "stderr diagnostic: {why}");
    let crash = server(&listing, "crash");
    assert_eq!(crash["state"], "unavailable");
    let why = crash["last_error"].as_str().unwrap();
    assert!(why.contains("crash-diagnostic"), "{why}");
    assert!(!tool_names(&listing)
        .iter()
        .any(|n| n.starts_with("hang__") || n.starts_with("crash__")));
    // The negative cache: the next turn does not ask to connect them again.
    let evs = run_script(
        &app,
        &tok,
        &sid,
        calls(&[("time__get_current_time", json!({"timezone": "UTC"}))]),
        "allow_once",
    )
    .await;
    assert!(
        !evs.iter().any(|e| e["type"] == "approval.requested"),
        "{:?}",
        types(&evs)
    );
    assert_eq!(results(&evs)[0].0, "succeeded");
}

#[tokio::test]
async fn a_changed_declaration_needs_a_new_connect_approval_and_a_removed_one_closes() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let time = format!("command: {TIME}\nconnect_timeout_seconds: 60\napproval_policy: auto\n");
    write_mcp_core(&app, "changing", &[("agent/mcp/time.yaml", &time)]);
    let (_, s) = app
        .post(&tok, "/v1/sessions", json!({"core": "changing"}))
        .await;
    let sid = s["id"].as_str().unwrap().to_owned();
    let step = calls(&[("time__get_current_time", json!({"timezone": "UTC"}))]);
    let evs = run_script(&app, &tok, &sid, step.clone(), "allow_session").await;
    assert_eq!(results(&evs)[0].0, "succeeded", "{:?}", results(&evs));
    let first = server(&servers(&app, &tok, &sid).await, "time")["fingerprint"].clone();
    // Same declaration: the connection and the session's allow are reused.
    let evs = run_script(&app, &tok, &sid, step.clone(), "deny").await;
    assert!(!evs.iter().any(|e| e["type"] == "approval.requested"));
    assert_eq!(results(&evs)[0].0, "succeeded");
    // A changed declaration asks again; denied, its tools are gone.
    write_mcp_core(
        &app,
        "changing",
        &[(
            "agent/mcp/time.yaml",
            &format!("{time}args: [--local-timezone, UTC]\n"),
        )],
    );
    // Loaded cores are rechecked after a second.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let evs = run_script(&app, &tok, &sid, step.clone(), "deny").await;
    let asked: Vec<&Value> = evs
        .iter()
        .filter(|e| e["type"] == "approval.requested")
        .collect();
    assert_eq!(asked.len(), 1, "{:?}", types(&evs));
    assert_eq!(asked[0]["data"]["tool"], "mcp:time");
    assert_eq!(results(&evs)[0].0, "not_found", "{:?}", results(&evs));
    let listing = servers(&app, &tok, &sid).await;
    let now = server(&listing, "time");
    assert_ne!(now["fingerprint"], first);
    assert!(
        now["last_error"].as_str().unwrap().contains("denied"),
        "{listing}"
    );
    // Allowed, the new declaration is connected.
    let evs = run_script(&app, &tok, &sid, step.clone(), "allow_once").await;
    assert_eq!(results(&evs)[0].0, "succeeded", "{:?}", results(&evs));
    // Removed: the tools are gone.
    write_mcp_core(&app, "changing", &[]);
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let evs = run_script(&app, &tok, &sid, step, "allow_once").await;
    assert_eq!(results(&evs)[0].0, "not_found");
    assert!(servers(&app, &tok, &sid).await["mcp_servers"]
        .as_array()
        .unwrap()
        .is_empty());
}

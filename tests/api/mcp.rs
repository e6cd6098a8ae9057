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
            "schema_version: 1\nagent:\n  id: {name}\ntools:\n  toolsets: [coding]\ncapabilities:\n  defaults:\n    \"mcp.connect:*\": {{}}\n    \"mcp.call:*\": {{}}\n    terminal.exec: {{}}\n"
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
                // The env value also appears as an argument ($0 of the
                // script): the connect approval must not show it.
                &format!("command: /bin/sh\nargs: [\"-c\", \"echo crash-diagnostic $CRASH_TOKEN >&2; exit 3\", \"{SECRET}\"]\nenv:\n  CRASH_TOKEN: {SECRET}\nconnect_timeout_seconds: 10\n"),
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
    let asked = evs
        .iter()
        .find(|e| e["type"] == "approval.requested" && e["data"]["tool"] == "mcp:crash")
        .expect("the crashing server's connect approval");
    let preview = asked.to_string();
    assert!(preview.contains("CRASH_TOKEN"), "{preview}");
    assert!(!preview.contains(SECRET), "{preview}");
    assert!(!serde_json::to_string(&evs).unwrap().contains(SECRET));
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
    // Its env value reached the server (approved) but is redacted in
    // the diagnostic and in the private log its stderr is appended to.
    assert!(!why.contains(SECRET), "{why}");
    let logs = app.home.join("runtime/mcp-logs/default/alice");
    let crash_log = std::fs::read_to_string(logs.join("crash.log")).unwrap();
    assert!(crash_log.contains("crash-diagnostic"), "{crash_log}");
    assert!(!crash_log.contains(SECRET), "{crash_log}");
    let hang_log = std::fs::read_to_string(logs.join("hang.log")).unwrap();
    assert!(hang_log.contains("now silent"), "{hang_log}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(logs.join("hang.log"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "the log is private: {mode:o}");
    assert!(!app.log().contains(SECRET));
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

// ---------------------------------------------------------------------------
// Streamable HTTP: `mcp-server-everything streamableHttp` on a local port,
// reached only through the pinned outbound client (the operator's
// `--url-allow`), its header a secret.

const HEADER_SECRET: &str = "mcp-header-secret-5e4d3c2b";

/// `mcp-server-everything streamableHttp` on a free local port.
struct HttpServer {
    child: std::process::Child,
    port: u16,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn everything_over_http() -> HttpServer {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Owned at once: dropping it (a panic included) kills the server.
    let server = HttpServer {
        child: std::process::Command::new(EVERYTHING)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("mcp-server-everything (scripts/test installs it)"),
        port,
    };
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return server;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("mcp-server-everything did not listen on {port}");
}

fn http_declaration(port: u16) -> String {
    format!(
        "transport: streamable_http\nurl: http://127.0.0.1:{port}/mcp\nheaders:\n  X-Api-Key: {HEADER_SECRET}\nconnect_timeout_seconds: 30\ntools:\n  include: [echo, get-sum]\n"
    )
}

#[tokio::test]
async fn streamable_http_goes_through_the_url_policy_and_is_called_after_approval() {
    let http = everything_over_http().await;
    let app = spawn_with(
        Backend::Sqlite,
        Opts::default().env("DEMIURGE_URL_ALLOW", "127.0.0.1/32"),
    )
    .await;
    let tok = app.token("default", "alice");
    write_mcp_core(
        &app,
        "remote",
        &[("agent/mcp/everything.yaml", &http_declaration(http.port))],
    );
    let (st, s) = app
        .post(&tok, "/v1/sessions", json!({"core": "remote"}))
        .await;
    assert_eq!(st, 201, "{s}");
    let sid = s["id"].as_str().unwrap().to_owned();
    let evs = run_script(
        &app,
        &tok,
        &sid,
        calls(&[
            ("everything__echo", json!({"message": "over http"})),
            ("everything__get-sum", json!({"a": 2, "b": 40})),
        ]),
        "allow_once",
    )
    .await;
    let asked: Vec<&Value> = evs
        .iter()
        .filter(|e| e["type"] == "approval.requested")
        .collect();
    let connect = asked
        .iter()
        .find(|e| e["data"]["tool"] == "mcp:everything")
        .unwrap_or_else(|| panic!("{:?}", types(&evs)));
    // The approver sees the endpoint and the header's name, not its value.
    let shown = connect["data"].to_string();
    assert!(
        shown.contains(&format!("http://127.0.0.1:{}/mcp", http.port)),
        "{shown}"
    );
    assert!(shown.contains("X-Api-Key"), "{shown}");
    let res = results(&evs);
    assert_eq!(res.len(), 2, "{res:?}\n{}", app.log());
    assert_eq!(res[0].0, "succeeded", "{res:?}");
    assert!(res[0].1.contains("over http"), "{res:?}");
    assert_eq!(res[1].0, "succeeded", "{res:?}");
    assert!(res[1].1.contains("42"), "{res:?}");
    // What the server sent back is the calls' usage.
    let calls = evs
        .iter()
        .filter(|e| e["type"] == "tool.call")
        .map(|e| e["data"]["tool"].as_str().unwrap().to_owned())
        .collect::<Vec<_>>();
    let used = tool_usage(&app, "default", &calls[0]).await;
    assert!(used["outbound_bytes"].as_u64().unwrap() > 0, "{used}");

    let listing = servers(&app, &tok, &sid).await;
    let server = server(&listing, "everything");
    assert_eq!(server["state"], "connected", "{listing}");
    assert_eq!(server["transport"], "streamable_http");
    assert_eq!(server["tools"], 2, "{listing}");

    // Operators see the tenant's connections; members may not.
    let (st, _) = app.get(&tok, "/v1/mcp/connections").await;
    assert_eq!(st, 403);
    let olga = app.token_with("default", "olga", "operator", "1h");
    let (st, conns) = app.get(&olga, "/v1/mcp/connections").await;
    assert_eq!(st, 200, "{conns}");
    let items = conns["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{conns}");
    assert_eq!(items[0]["server"], "everything");
    assert_eq!(items[0]["principal"], "alice");
    assert_eq!(items[0]["state"], "connected");
    // Another tenant's operator sees none of it.
    let other = app.token_with("other", "oscar", "operator", "1h");
    let (_, theirs) = app.get(&other, "/v1/mcp/connections").await;
    assert!(theirs["items"].as_array().unwrap().is_empty(), "{theirs}");

    let all = app.sse_until(&tok, &sid, "", None, |_| false).await;
    let everything_shown = format!(
        "{}{}{}",
        serde_json::to_string(&all).unwrap(),
        listing,
        conns
    );
    assert!(!everything_shown.contains(HEADER_SECRET));
    assert!(!app.log().contains(HEADER_SECRET), "secret in the log");
}

#[tokio::test]
async fn streamable_http_to_a_blocked_address_is_refused_without_the_operators_allowance() {
    let http = everything_over_http().await;
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    write_mcp_core(
        &app,
        "remote",
        &[("agent/mcp/everything.yaml", &http_declaration(http.port))],
    );
    let (_, s) = app
        .post(&tok, "/v1/sessions", json!({"core": "remote"}))
        .await;
    let sid = s["id"].as_str().unwrap().to_owned();
    let evs = run_script(
        &app,
        &tok,
        &sid,
        calls(&[("everything__echo", json!({"message": "x"}))]),
        "allow_once",
    )
    .await;
    assert_eq!(results(&evs)[0].0, "not_found", "{:?}", results(&evs));
    let listing = servers(&app, &tok, &sid).await;
    let server = server(&listing, "everything");
    assert_eq!(server["state"], "unavailable", "{listing}");
    let why = server["last_error"].as_str().unwrap();
    assert!(why.contains("loopback"), "{why}");
    assert!(!listing.to_string().contains(HEADER_SECRET));
}

#[tokio::test]
async fn without_mcp_connect_nothing_is_asked_or_started() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    // The core grants calls but not connections.
    let dir = app.home.join("tenants/default/agents/nogrant");
    std::fs::create_dir_all(dir.join("agent/mcp")).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        "schema_version: 1\nagent:\n  id: nogrant\ntools:\n  toolsets: [coding]\ncapabilities:\n  defaults:\n    \"mcp.call:*\": {}\n",
    )
    .unwrap();
    let marker = app.home.join("started");
    std::fs::write(
        dir.join("agent/mcp/probe.yaml"),
        format!(
            "command: /bin/sh\nargs: [\"-c\", \"touch {}\"]\n",
            marker.display()
        ),
    )
    .unwrap();
    let (_, s) = app
        .post(&tok, "/v1/sessions", json!({"core": "nogrant"}))
        .await;
    let sid = s["id"].as_str().unwrap().to_owned();
    let evs = run_script(
        &app,
        &tok,
        &sid,
        calls(&[("probe__anything", json!({}))]),
        "allow_once",
    )
    .await;
    assert!(
        !evs.iter().any(|e| e["type"] == "approval.requested"),
        "{:?}",
        types(&evs)
    );
    assert_eq!(results(&evs)[0].0, "not_found");
    assert!(!marker.exists(), "the server was started");
    let listing = servers(&app, &tok, &sid).await;
    let why = server(&listing, "probe")["last_error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(why.contains("mcp.connect:probe"), "{why}");
}

// ---------------------------------------------------------------------------
// mcp-server-git (PyPI), confined, on a repository the agent made in its
// workspace with the terminal.

#[tokio::test]
async fn mcp_server_git_reads_a_repository_in_the_workspace() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    write_mcp_core(
        &app,
        "git",
        &[(
            "agent/mcp/git.yaml",
            "command: /opt/mcp-servers/bin/mcp-server-git\nconnect_timeout_seconds: 60\ntools:\n  include: [\"git_*\"]\n  exclude: [git_commit, git_reset]\n",
        )],
    );
    let (_, s) = app.post(&tok, "/v1/sessions", json!({"core": "git"})).await;
    let sid = s["id"].as_str().unwrap().to_owned();
    let ws = app.home.join("tenants/default/workspaces/alice/default");
    let evs = run_script(
        &app,
        &tok,
        &sid,
        calls(&[
            (
                "terminal",
                json!({"command": "git init -q repo && cd repo && echo hi > notes.txt"}),
            ),
            (
                "git__git_status",
                json!({"repo_path": ws.join("repo").to_str().unwrap()}),
            ),
        ]),
        "allow_once",
    )
    .await;
    let res = results(&evs);
    assert_eq!(res.len(), 2, "{res:?}\n{}", app.log());
    assert_eq!(res[0].0, "succeeded", "{res:?}");
    assert_eq!(res[1].0, "succeeded", "{res:?}");
    assert!(res[1].1.contains("notes.txt"), "{res:?}");
    let names = tool_names(&servers(&app, &tok, &sid).await);
    assert!(names.iter().any(|n| n == "git__git_log"), "{names:?}");
    assert!(!names.iter().any(|n| n == "git__git_commit"), "{names:?}");
}

#[tokio::test]
async fn a_call_needs_mcp_call_even_when_the_connection_is_allowed() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let dir = app.home.join("tenants/default/agents/connectonly");
    std::fs::create_dir_all(dir.join("agent/mcp")).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        "schema_version: 1\nagent:\n  id: connectonly\ntools:\n  toolsets: [coding]\ncapabilities:\n  defaults:\n    \"mcp.connect:time\": {}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("agent/mcp/time.yaml"),
        format!("command: {TIME}\nconnect_timeout_seconds: 60\n"),
    )
    .unwrap();
    let (_, s) = app
        .post(&tok, "/v1/sessions", json!({"core": "connectonly"}))
        .await;
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
    assert_eq!(res[0].0, "denied", "{res:?}");
    assert!(res[0].1.contains("mcp.call:time"), "{res:?}");
    // Connected (its tools are listed), but the call was refused before
    // any per-call approval.
    let asked: Vec<&str> = evs
        .iter()
        .filter(|e| e["type"] == "approval.requested")
        .map(|e| e["data"]["tool"].as_str().unwrap())
        .collect();
    assert_eq!(asked, ["mcp:time"]);
    let listing = servers(&app, &tok, &sid).await;
    assert_eq!(server(&listing, "time")["state"], "connected", "{listing}");
}

// ---------------------------------------------------------------------------
// A tiny stdio MCP server (threads: it can take calls in parallel) that
// records how many calls ran at once and can announce a new tool with
// `notifications/tools/list_changed`.

const DYN: &str = r#"import json, os, sys, threading
lock = threading.Lock()
out = threading.Lock()
both = threading.Event()
state = {"active": 0, "max": 0, "extra": False}
def send(msg):
    with out:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()
def text(id, t):
    send({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": t}]}})
def tools():
    names = ["slow", "max_active", "add_tool", "die"] + (["extra"] if state["extra"] else [])
    return [{"name": n, "description": n, "inputSchema": {"type": "object"}} for n in names]
def call(msg):
    name, id = msg["params"]["name"], msg["id"]
    if name == "slow":
        with lock:
            state["active"] += 1
            state["max"] = max(state["max"], state["active"])
            if state["active"] >= 2:
                both.set()
        # Waits for a second call to overlap; alone, gives up.
        both.wait(timeout=2)
        with lock:
            state["active"] -= 1
        text(id, "slept")
    elif name == "max_active":
        text(id, "max_active=%d" % state["max"])
    elif name == "add_tool":
        state["extra"] = True
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        text(id, "added")
    elif name == "extra":
        text(id, "extra called")
    elif name == "die":
        print("dyn: dying on purpose", file=sys.stderr, flush=True)
        os._exit(7)
for line in sys.stdin:
    msg = json.loads(line)
    m = msg.get("method")
    if m == "initialize":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "dyn", "version": "1"}}})
    elif m == "tools/list":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": tools()}})
    elif m == "tools/call":
        threading.Thread(target=call, args=(msg,)).start()
    elif "id" in msg:
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
"#;

fn write_dyn_core(app: &TestApp) {
    write_mcp_core(
        app,
        "dyn",
        &[
            (
                "agent/mcp/serial.yaml",
                "command: /usr/bin/python3\nargs: [dyn.py]\napproval_policy: auto\n",
            ),
            (
                "agent/mcp/par.yaml",
                "command: /usr/bin/python3\nargs: [dyn.py]\napproval_policy: auto\nsupports_parallel_tool_calls: true\n",
            ),
        ],
    );
    let ws = app.home.join("tenants/default/workspaces/alice/default");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("dyn.py"), DYN).unwrap();
}

#[tokio::test]
async fn a_server_without_parallel_support_gets_one_call_at_a_time() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    write_dyn_core(&app);
    let mut sids = Vec::new();
    for _ in 0..2 {
        let (st, s) = app.post(&tok, "/v1/sessions", json!({"core": "dyn"})).await;
        assert_eq!(st, 201, "{s}");
        sids.push(s["id"].as_str().unwrap().to_owned());
    }
    // Connect both servers (one connection each for alice's two sessions).
    let evs = run_script(
        &app,
        &tok,
        &sids[0],
        calls(&[
            ("serial__max_active", json!({})),
            ("par__max_active", json!({})),
        ]),
        "allow_session",
    )
    .await;
    let res = results(&evs);
    assert_eq!(res.len(), 2, "{res:?}\n{}", app.log());
    assert!(
        res.iter()
            .all(|(s, c)| s == "succeeded" && c.contains("max_active=0")),
        "{res:?}"
    );
    // Two sessions call `slow` at the same time on each server.
    for server in ["serial", "par"] {
        let step = calls(&[(&format!("{server}__slow"), json!({}))]);
        let (a, b) = tokio::join!(
            run_script(&app, &tok, &sids[0], step.clone(), "allow_session"),
            run_script(&app, &tok, &sids[1], step.clone(), "allow_session"),
        );
        for evs in [a, b] {
            assert_eq!(results(&evs)[0].0, "succeeded", "{:?}", results(&evs));
        }
    }
    let evs = run_script(
        &app,
        &tok,
        &sids[0],
        calls(&[
            ("serial__max_active", json!({})),
            ("par__max_active", json!({})),
        ]),
        "allow_session",
    )
    .await;
    let res = results(&evs);
    // Never two at once on the serial server; the parallel one did overlap
    // (so the server would have seen it).
    assert!(res[0].1.contains("max_active=1"), "{res:?}");
    assert!(res[1].1.contains("max_active=2"), "{res:?}");
}

#[tokio::test]
async fn a_tools_list_changed_notification_updates_the_catalog_from_the_next_turn() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    write_dyn_core(&app);
    let (_, s) = app.post(&tok, "/v1/sessions", json!({"core": "dyn"})).await;
    let sid = s["id"].as_str().unwrap().to_owned();
    let evs = run_script(
        &app,
        &tok,
        &sid,
        calls(&[("serial__add_tool", json!({}))]),
        "allow_session",
    )
    .await;
    assert_eq!(results(&evs)[0].0, "succeeded", "{:?}", results(&evs));
    let listing = servers(&app, &tok, &sid).await;
    assert!(!tool_names(&listing).contains(&"serial__extra".to_owned()));
    assert_eq!(server(&listing, "serial")["tools"], 4, "{listing}");
    // The next turn relists: the new tool is offered and callable.
    let evs = run_script(
        &app,
        &tok,
        &sid,
        calls(&[("serial__extra", json!({}))]),
        "allow_session",
    )
    .await;
    let res = results(&evs);
    assert_eq!(res[0].0, "succeeded", "{res:?}\n{}", app.log());
    assert!(res[0].1.contains("extra called"), "{res:?}");
    let listing = servers(&app, &tok, &sid).await;
    assert!(tool_names(&listing).contains(&"serial__extra".to_owned()));
    assert_eq!(server(&listing, "serial")["tools"], 5, "{listing}");
    // The other server's list did not change.
    assert!(!tool_names(&listing).contains(&"par__extra".to_owned()));
}

#[tokio::test]
async fn an_idle_connection_is_closed_after_the_idle_timeout_and_reconnected_later() {
    let app = spawn_with(
        Backend::Sqlite,
        Opts::default().env("DEMIURGE_MCP_IDLE_TIMEOUT", "1s"),
    )
    .await;
    let tok = app.token("default", "alice");
    let olga = app.token_with("default", "olga", "operator", "1h");
    write_mcp_core(
        &app,
        "idle",
        &[(
            "agent/mcp/time.yaml",
            &format!("command: {TIME}\nconnect_timeout_seconds: 60\napproval_policy: auto\n"),
        )],
    );
    let (_, s) = app
        .post(&tok, "/v1/sessions", json!({"core": "idle"}))
        .await;
    let sid = s["id"].as_str().unwrap().to_owned();
    let step = calls(&[("time__get_current_time", json!({"timezone": "UTC"}))]);
    let evs = run_script(&app, &tok, &sid, step.clone(), "allow_once").await;
    assert_eq!(results(&evs)[0].0, "succeeded", "{:?}", results(&evs));
    let state = |conns: &Value| conns["items"][0]["state"].as_str().unwrap_or("").to_owned();
    // The sweeper closes it once nothing used it for a second (polled: the
    // sweep runs every quarter of the timeout).
    let mut conns = Value::Null;
    for _ in 0..150 {
        conns = app.get(&olga, "/v1/mcp/connections").await.1;
        if state(&conns) != "connected" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert_eq!(state(&conns), "unavailable", "{conns}");
    let why = conns["items"][0]["last_error"].as_str().unwrap();
    assert!(why.contains("--mcp-idle-timeout"), "{why}");
    assert_eq!(
        server(&servers(&app, &tok, &sid).await, "time")["state"],
        "unavailable"
    );
    // The next turn connects it again (a new connect approval).
    let evs = run_script(&app, &tok, &sid, step, "allow_once").await;
    assert!(evs
        .iter()
        .any(|e| e["type"] == "approval.requested" && e["data"]["tool"] == "mcp:time"));
    assert_eq!(results(&evs)[0].0, "succeeded", "{:?}", results(&evs));
}

#[tokio::test]
async fn a_server_that_dies_during_a_call_fails_the_call_and_waits_out_the_negative_cache() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let olga = app.token_with("default", "olga", "operator", "1h");
    write_dyn_core(&app);
    let (_, s) = app.post(&tok, "/v1/sessions", json!({"core": "dyn"})).await;
    let sid = s["id"].as_str().unwrap().to_owned();
    let evs = run_script(
        &app,
        &tok,
        &sid,
        calls(&[("serial__die", json!({})), ("par__max_active", json!({}))]),
        "allow_session",
    )
    .await;
    let res = results(&evs);
    assert_eq!(res.len(), 2, "{res:?}\n{}", app.log());
    assert_eq!(res[0].0, "failed", "{res:?}");
    // Its peer is unaffected.
    assert_eq!(res[1].0, "succeeded", "{res:?}");
    let (_, conns) = app.get(&olga, "/v1/mcp/connections").await;
    let serial = conns["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["server"] == "serial")
        .unwrap_or_else(|| panic!("{conns}"));
    assert_eq!(serial["state"], "failed", "{conns}");
    assert!(
        serial["retry_in_seconds"].as_u64().unwrap() <= 30,
        "{conns}"
    );
    // The next turn does not offer its tools (nor start it again) while it
    // is in the negative cache; the peer's stay.
    let evs = run_script(
        &app,
        &tok,
        &sid,
        calls(&[("serial__max_active", json!({}))]),
        "allow_session",
    )
    .await;
    assert_eq!(results(&evs)[0].0, "not_found", "{:?}", results(&evs));
    let listing = servers(&app, &tok, &sid).await;
    assert_eq!(
        server(&listing, "serial")["state"],
        "unavailable",
        "{listing}"
    );
    assert_eq!(server(&listing, "par")["state"], "connected", "{listing}");
}

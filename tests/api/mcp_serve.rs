//! `/v1/mcp`: a session's catalog served to an outside MCP client (rmcp's
//! own client over Streamable HTTP): initialize binds a session, the tool
//! list is the core's catalog, calls run through the one dispatcher with
//! approvals decided elsewhere, cancellation ends the call's process, the
//! workspace is readable as resources within the walls, and malformed
//! JSON-RPC gets JSON-RPC errors.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use demiurge::mcp::http::PinnedHttp;
use rmcp::model::{
    CallToolRequestParams, NumberOrString, ProgressNotificationParam, ProgressToken,
    ReadResourceRequestParams, RequestMetaObject, ResourceContents,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

use crate::helpers::*;

/// An MCP client that keeps the progress messages it is sent.
#[derive(Clone, Default, Debug)]
struct Watcher {
    progress: Arc<Mutex<Vec<String>>>,
}

impl rmcp::ClientHandler for Watcher {
    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.progress
            .lock()
            .unwrap()
            .push(params.message.unwrap_or_default());
        std::future::ready(())
    }
}

type Client = RunningService<RoleClient, Watcher>;

async fn connect(
    app: &TestApp,
    tok: &str,
    headers: &[(&str, &str)],
) -> Result<(Client, Watcher), String> {
    let mut all = vec![("Authorization".to_owned(), format!("Bearer {tok}"))];
    all.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let http = PinnedHttp::new(reqwest::Client::new(), &all)?;
    let transport = StreamableHttpClientTransport::with_client(
        http,
        StreamableHttpClientTransportConfig::with_uri(app.url("/v1/mcp")),
    );
    let watcher = Watcher::default();
    let client = watcher
        .clone()
        .serve(transport)
        .await
        .map_err(|e| e.to_string())?;
    Ok((client, watcher))
}

fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().cloned().unwrap()
}

fn with_progress(mut p: CallToolRequestParams, n: i64) -> CallToolRequestParams {
    let mut meta = RequestMetaObject::new();
    meta.set_progress_token(ProgressToken(NumberOrString::Number(n)));
    p.meta = Some(meta);
    p
}

fn session_of(client: &Client) -> String {
    let info = client.peer_info().expect("initialized");
    let meta = serde_json::to_value(&info.meta).unwrap();
    meta["demiurge/session_id"].as_str().unwrap().to_owned()
}

fn text_of(r: &rmcp::model::CallToolResult) -> String {
    let v = serde_json::to_value(&r.content).unwrap();
    v[0]["text"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn an_mcp_client_lists_and_calls_the_sessions_tools_through_the_dispatcher() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        // Bound to a session named by the client.
        let sid = app.create_session(&tok).await;
        let ws = app.home.join("tenants/default/workspaces/alice/default");
        std::fs::write(ws.join("notes.txt"), "hello from the workspace\n").unwrap();
        let (client, watcher) = connect(&app, &tok, &[("X-Demiurge-Session", &sid)])
            .await
            .unwrap();
        assert_eq!(session_of(&client), sid);

        // tools/list: the names and schemas the model sees.
        let tools = client.list_all_tools().await.unwrap();
        let (_, listing) = app.get(&tok, &format!("/v1/sessions/{sid}/tools")).await;
        let want: Vec<&str> = listing["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        let got: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(got, want);
        let read = tools.iter().find(|t| t.name == "read_file").unwrap();
        let schema = listing["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "read_file")
            .unwrap()["input_schema"]
            .clone();
        assert_eq!(Value::Object((*read.input_schema).clone()), schema);

        // An auto tool: the result, and the same events as a model's call.
        let r = client
            .call_tool(
                CallToolRequestParams::new("read_file")
                    .with_arguments(args(json!({"path": "notes.txt"}))),
            )
            .await
            .unwrap();
        assert_eq!(r.is_error, Some(false), "{r:?}");
        assert!(text_of(&r).contains("hello from the workspace"), "{r:?}");
        let structured = r.structured_content.clone().unwrap();
        assert_eq!(structured["status"], "succeeded");
        let tid = structured["turn_id"].as_str().unwrap().to_owned();
        let evs = app
            .sse_until(&tok, &sid, "", None, |e| {
                is_terminal(e) && e["turn_id"] == tid.as_str()
            })
            .await;
        let mine: Vec<&Value> = evs
            .iter()
            .filter(|e| e["turn_id"] == tid.as_str())
            .collect();
        assert_eq!(
            mine.iter()
                .map(|e| e["type"].as_str().unwrap())
                .collect::<Vec<_>>(),
            ["turn.started", "tool.call", "tool.result", "turn.completed"]
        );

        // Arguments that fail the schema: the typed `invalid` the model would get.
        let r = client
            .call_tool(
                CallToolRequestParams::new("read_file").with_arguments(args(json!({"path": 7}))),
            )
            .await
            .unwrap();
        assert_eq!(r.is_error, Some(true));
        assert_eq!(
            r.structured_content.as_ref().unwrap()["status"],
            "invalid",
            "{r:?}"
        );
        // An unknown tool: `not_found`, as for a model.
        let r = client
            .call_tool(CallToolRequestParams::new("no_such_tool"))
            .await
            .unwrap();
        assert_eq!(
            r.structured_content.as_ref().unwrap()["status"],
            "not_found",
            "{r:?}"
        );

        // An approval-gated call waits (with progress) until another
        // principal, a tenant operator, allows it over REST: the tenant's
        // policy leaves its members no decision of their own.
        let ops = app.token_with("default", "ops", "operator", "10m");
        let admin = app.token_with("default", "boss", "admin", "10m");
        let resp = app
            .client
            .put(app.url("/v1/tenant/policy"))
            .bearer_auth(&admin)
            .json(&json!({"member_max_risk": "none"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        // A write outside the workspace is denied outright, nobody asked.
        let r = client
            .call_tool(
                CallToolRequestParams::new("write_file")
                    .with_arguments(args(json!({"path": "../outside.txt", "content": "x"}))),
            )
            .await
            .unwrap();
        assert_eq!(
            r.structured_content.as_ref().unwrap()["status"],
            "denied",
            "{r:?}"
        );
        let r = client.call_tool(with_progress(
            CallToolRequestParams::new("terminal").with_arguments(args(
                json!({"command": "echo approved-run > ran.txt", "timeout_seconds": 20}),
            )),
            2,
        ));
        let decide = async {
            let evs = app
                .sse_until(&tok, &sid, "", None, |e| {
                    e["type"] == "approval.requested" && e["data"]["tool"] == "terminal"
                })
                .await;
            let id = evs.last().unwrap()["data"]["approval_id"]
                .as_str()
                .unwrap()
                .to_owned();
            let (st, b) = app
                .post(
                    &ops,
                    &format!("/v1/approvals/{id}"),
                    json!({"decision": "allow_once"}),
                )
                .await;
            assert_eq!(st, 200, "{b}");
        };
        let (r, ()) = tokio::join!(r, decide);
        let r = r.unwrap();
        assert_eq!(
            r.structured_content.as_ref().unwrap()["status"],
            "succeeded",
            "{r:?}"
        );
        assert_eq!(
            std::fs::read_to_string(ws.join("ran.txt")).unwrap().trim(),
            "approved-run"
        );
        assert!(
            watcher
                .progress
                .lock()
                .unwrap()
                .iter()
                .any(|m| m.contains("waiting for approval")),
            "{:?}",
            watcher.progress.lock().unwrap()
        );

        // Denied by a person: a typed denial.
        let r = client.call_tool(
            CallToolRequestParams::new("terminal")
                .with_arguments(args(json!({"command": "echo never > denied.txt"}))),
        );
        let deny = async {
            let evs = app
                .sse_until(&tok, &sid, "", None, |e| {
                    e["type"] == "approval.requested"
                        && e["data"]["preview"].to_string().contains("denied.txt")
                })
                .await;
            let id = evs.last().unwrap()["data"]["approval_id"]
                .as_str()
                .unwrap()
                .to_owned();
            let (st, b) = app
                .post(
                    &ops,
                    &format!("/v1/approvals/{id}"),
                    json!({"decision": "deny"}),
                )
                .await;
            assert_eq!(st, 200, "{b}");
        };
        let (r, ()) = tokio::join!(r, deny);
        let r = r.unwrap();
        assert_eq!(r.is_error, Some(true));
        assert_eq!(
            r.structured_content.as_ref().unwrap()["status"],
            "denied",
            "{r:?}"
        );
        assert!(!ws.join("denied.txt").exists());

        // Resources: the workspace's files, through the walls.
        let listed = client.list_all_resources().await.unwrap();
        let uris: Vec<&str> = listed.iter().map(|r| r.uri.as_str()).collect();
        assert!(uris.contains(&"workspace:///notes.txt"), "{uris:?}");
        let read = client
            .read_resource(ReadResourceRequestParams::new("workspace:///notes.txt"))
            .await
            .unwrap();
        match &read.contents[0] {
            ResourceContents::TextResourceContents { text, .. } => {
                assert_eq!(text, "hello from the workspace\n")
            }
            other => panic!("{other:?}"),
        }
        for outside in [
            "workspace:///../../../../demiurge.db",
            "workspace:///%2E%2E/%2E%2E/%2E%2E/%2E%2E/keys/jwt.key",
            "workspace:////etc/passwd",
        ] {
            let e = client
                .read_resource(ReadResourceRequestParams::new(outside))
                .await
                .unwrap_err();
            assert!(
                e.to_string().contains("outside") || e.to_string().contains("not a path"),
                "{outside}: {e}"
            );
        }
        // A symlink out of the workspace is refused too.
        std::os::unix::fs::symlink("/etc/hostname", ws.join("escape")).unwrap();
        let e = client
            .read_resource(ReadResourceRequestParams::new("workspace:///escape"))
            .await
            .unwrap_err();
        assert!(e.to_string().contains("outside"), "{e}");
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn initialize_creates_a_session_and_strangers_get_nothing() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let (client, _) = connect(&app, &tok, &[]).await.unwrap();
    let sid = session_of(&client);
    // A session of the caller's own, on the default core.
    let (st, s) = app.get(&tok, &format!("/v1/sessions/{sid}")).await;
    assert_eq!((st, s["core"].as_str()), (200, Some("assistant")), "{s}");

    // Another tenant's principal cannot bind it: it looks missing.
    let stranger = app.token("other", "mallory");
    let e = match connect(&app, &stranger, &[("X-Demiurge-Session", &sid)]).await {
        Ok(_) => panic!("a stranger bound another tenant's session"),
        Err(e) => e,
    };
    assert!(e.contains("no such session"), "{e}");
    // Nor may it use the live MCP session by its id: raw HTTP with the
    // stranger's token and alice's MCP session id.
    let (st, body) = raw_post(
        &app,
        Some(&stranger),
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}).to_string(),
        mcp_session_id(&app, &tok).await.as_deref(),
    )
    .await;
    assert!(body.contains("no such MCP session"), "{st} {body}");
    assert!(!body.contains("read_file"), "{body}");
    // No token, a bad token: 401.
    let (st, _) = raw_post(&app, None, "{}", None).await;
    assert_eq!(st, 401);
    let (st, _) = raw_post(&app, Some("not-a-token"), "{}", None).await;
    assert_eq!(st, 401);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn malformed_json_rpc_gets_json_rpc_errors_and_oversized_bodies_are_refused() {
    let app = spawn_with(
        Backend::Sqlite,
        Opts::default().env("DEMIURGE_BODY_LIMIT", "65536"),
    )
    .await;
    let tok = app.token("default", "alice");
    for (body, code) in [
        ("{not json", -32700),
        ("[1, 2]", -32600),
        (r#"{"jsonrpc": "2.0", "id": 1}"#, -32600),
        (r#"{"hello": "world"}"#, -32600),
    ] {
        let (st, text) = raw_post(&app, Some(&tok), body, None).await;
        assert_eq!(st, 400, "{body}: {text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["jsonrpc"], "2.0", "{text}");
        assert_eq!(v["error"]["code"], code, "{body}: {text}");
    }
    // An unknown method in a live session: method not found, as JSON-RPC.
    let sid = mcp_session_id(&app, &tok).await.unwrap();
    let (st, text) = raw_post(
        &app,
        Some(&tok),
        &json!({"jsonrpc": "2.0", "id": 5, "method": "no/such/method", "params": {}}).to_string(),
        Some(&sid),
    )
    .await;
    assert!(st < 500, "{st} {text}");
    assert!(text.contains("-32601"), "{text}");
    // Over the body limit: 413, nothing read.
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": "x".repeat(100_000)}});
    let (st, _) = raw_post(&app, Some(&tok), &big.to_string(), Some(&sid)).await;
    assert_eq!(st, 413);
    assert!(!app.log().contains("panicked"));
}

#[tokio::test]
async fn a_cancelled_call_ends_its_process_and_so_does_a_dropped_client() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    for how in ["cancelled", "dropped"] {
        let (client, _) = connect(&app, &tok, &[("X-Demiurge-Session", &sid)])
            .await
            .unwrap();
        let marker = format!("{how}.pid");
        let command = format!("sh -c 'echo $$ > {marker}; exec sleep 120'");
        let peer = client.peer().clone();
        let call = tokio::spawn(async move {
            peer.call_tool(
                CallToolRequestParams::new("terminal")
                    .with_arguments(args(json!({"command": command, "timeout_seconds": 300}))),
            )
            .await
        });
        allow_next(&app, &tok, &sid, |e| {
            e["data"]["preview"].to_string().contains(&marker)
        })
        .await;
        let ws = app.home.join("tenants/default/workspaces/alice/default");
        let mut pid = None;
        for _ in 0..400 {
            if let Some(p) = std::fs::read_to_string(ws.join(&marker))
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
            {
                pid = Some(p);
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let Some(pid) = pid else {
            call.abort();
            let evs = app.sse_until(&tok, &sid, "", None, is_terminal).await;
            panic!("the command did not start: {evs:?}\n{}", app.log());
        };
        assert!(alive(pid));
        match how {
            // Dropping the call's future sends `notifications/cancelled`.
            "cancelled" => call.abort(),
            // The whole client goes away without a word.
            _ => {
                call.abort();
                drop(client);
            }
        }
        let mut gone = false;
        for _ in 0..600 {
            if !alive(pid) {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert!(gone, "{how}: the command outlived its call");
        // The session is free again: its turn ended cancelled.
        let evs = app
            .sse_until(&tok, &sid, "", None, |e| e["type"] == "turn.cancelled")
            .await;
        assert!(evs.iter().any(|e| e["type"] == "turn.cancelled"));
    }
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.split_whitespace().next() != Some("Z"))
        })
        .unwrap_or(false)
}

/// POST a raw body to `/v1/mcp` as an MCP client would (JSON and SSE accepted).
async fn raw_post(
    app: &TestApp,
    tok: Option<&str>,
    body: &str,
    session: Option<&str>,
) -> (u16, String) {
    let mut req = app
        .client
        .post(app.url("/v1/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_owned());
    if let Some(t) = tok {
        req = req.bearer_auth(t);
    }
    if let Some(s) = session {
        req = req.header("mcp-session-id", s);
    }
    let resp = req.send().await.unwrap();
    let st = resp.status().as_u16();
    (st, resp.text().await.unwrap_or_default())
}

/// Initialize over raw HTTP and return the MCP session id.
async fn mcp_session_id(app: &TestApp, tok: &str) -> Option<String> {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}});
    let resp = app
        .client
        .post(app.url("/v1/mcp"))
        .bearer_auth(tok)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    let id = resp
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let _ = resp.text().await;
    let id = id?;
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (st, text) = raw_post(app, Some(tok), &done.to_string(), Some(&id)).await;
    assert_eq!(st, 202, "{text}");
    Some(id)
}

/// Allow every approval the session asks for after `after`, until `until` holds.
async fn allow_from(
    app: &TestApp,
    tok: &str,
    sid: &str,
    mut after: i64,
    until: impl Fn(&Value) -> bool,
) {
    loop {
        let evs = app
            .sse_until(tok, sid, &format!("?after={after}"), None, |e| {
                e["type"] == "approval.requested" || until(e)
            })
            .await;
        let last = evs.last().expect("the call stalled").clone();
        after = last["seq"].as_i64().unwrap();
        if until(&last) {
            return;
        }
        let id = last["data"]["approval_id"].as_str().unwrap();
        let (st, b) = app
            .post(
                tok,
                &format!("/v1/approvals/{id}"),
                json!({"decision": "allow_once"}),
            )
            .await;
        assert_eq!(st, 200, "{b}");
    }
}

#[tokio::test]
async fn the_cores_own_mcp_servers_are_served_only_where_the_core_allows() {
    const TIME: &str = "/opt/mcp-servers/bin/mcp-server-time";
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    for (core, serve) in [("kept", false), ("served", true)] {
        let dir = app.home.join("tenants/default/agents").join(core);
        std::fs::create_dir_all(dir.join("agent/mcp")).unwrap();
        std::fs::write(
            dir.join("agent.yaml"),
            format!(
                "schema_version: 1\nagent:\n  id: {core}\ntools:\n  toolsets: [coding]\ncapabilities:\n  defaults:\n    \"mcp.connect:*\": {{}}\n    \"mcp.call:*\": {{}}\nserve:\n  mcp_server_tools: {serve}\n"
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join("agent/mcp/time.yaml"),
            format!("command: {TIME}\nconnect_timeout_seconds: 60\n"),
        )
        .unwrap();
        let (st, s) = app.post(&tok, "/v1/sessions", json!({"core": core})).await;
        assert_eq!(st, 201, "{s}");
        let sid = s["id"].as_str().unwrap().to_owned();
        // A model's turn connects the server (approved), so its tools exist.
        let script = json!([{"tool_calls": [{"name": "time__get_current_time", "arguments": {"timezone": "UTC"}}]}, {"content": "done"}]);
        let evs = run_script(&app, &tok, &sid, script, "allow_once").await;
        assert!(
            evs.iter()
                .any(|e| e["type"] == "tool.result" && e["data"]["status"] == "succeeded"),
            "{evs:?}"
        );

        // The core is named on connect this time (a new session on it).
        let (client, _) = connect(&app, &tok, &[("X-Demiurge-Core", core)])
            .await
            .unwrap();
        let new_sid = session_of(&client);
        assert_ne!(new_sid, sid);
        let (_, s) = app.get(&tok, &format!("/v1/sessions/{new_sid}")).await;
        assert_eq!(s["core"], core);
        let names: Vec<String> = client
            .list_all_tools()
            .await
            .unwrap()
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        assert!(names.iter().any(|n| n == "read_file"), "{names:?}");
        assert_eq!(
            names.iter().any(|n| n == "time__get_current_time"),
            serve,
            "{core}: {names:?}"
        );
        let (_, s) = app.get(&tok, &format!("/v1/sessions/{new_sid}")).await;
        let after = s["last_seq"].as_i64().unwrap();
        let call = client.call_tool(
            CallToolRequestParams::new("time__get_current_time")
                .with_arguments(args(json!({"timezone": "UTC"}))),
        );
        let approve = allow_from(&app, &tok, &new_sid, after, is_terminal);
        let (r, ()) = tokio::join!(call, approve);
        let r = r.unwrap();
        let want = if serve { "succeeded" } else { "not_found" };
        assert_eq!(
            r.structured_content.as_ref().unwrap()["status"],
            want,
            "{core}: {r:?}"
        );
        client.cancel().await.unwrap();
    }
}

/// The official MCP Inspector's CLI (`scripts/test` installs it) as an
/// outside client: one process per request, each naming the session.
fn inspector(app: &TestApp, tok: &str, sid: &str, args: &[&str]) -> Value {
    let out = std::process::Command::new("mcp-inspector")
        .arg("--cli")
        .arg(app.url("/v1/mcp"))
        .args(["--transport", "http"])
        .args(["--header", &format!("Authorization: Bearer {tok}")])
        .args(["--header", &format!("X-Demiurge-Session: {sid}")])
        .args(args)
        .output()
        .expect("mcp-inspector (scripts/test installs it)");
    assert!(
        out.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[tokio::test]
async fn the_mcp_inspector_cli_lists_calls_and_reads() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let ws = app.home.join("tenants/default/workspaces/alice/default");
    std::fs::write(ws.join("inspected.txt"), "seen by the inspector\n").unwrap();
    let listed = inspector(&app, &tok, &sid, &["--method", "tools/list"]);
    assert!(
        listed["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "read_file"),
        "{listed}"
    );
    let called = inspector(
        &app,
        &tok,
        &sid,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "read_file",
            "--tool-arg",
            "path=inspected.txt",
        ],
    );
    assert_eq!(called["isError"], false, "{called}");
    assert!(
        called["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("seen by the inspector"),
        "{called}"
    );
    let read = inspector(
        &app,
        &tok,
        &sid,
        &[
            "--method",
            "resources/read",
            "--uri",
            "workspace:///inspected.txt",
        ],
    );
    assert_eq!(
        read["contents"][0]["text"], "seen by the inspector\n",
        "{read}"
    );
    // The calls are the session's own: they are in its event log.
    let (_, s) = app.get(&tok, &format!("/v1/sessions/{sid}")).await;
    assert!(s["last_seq"].as_i64().unwrap() >= 4, "{s}");
}

#[tokio::test]
async fn the_principals_rate_limit_applies_to_mcp_requests() {
    let app = spawn_with(
        Backend::Sqlite,
        Opts::default()
            .env("DEMIURGE_RATE_LIMIT_PRINCIPAL", "1")
            .env("DEMIURGE_RATE_LIMIT_BURST", "2"),
    )
    .await;
    let tok = app.token("default", "alice");
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let mut statuses = Vec::new();
    for _ in 0..8 {
        statuses.push(raw_post(&app, Some(&tok), &ping, None).await.0);
    }
    assert!(statuses.contains(&429), "{statuses:?}");
}

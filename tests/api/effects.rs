//! The effect runtime end to end: approvals (allow, deny, session reuse,
//! timeout, restart), workspace scoping, capabilities, schema validation,
//! clarify, broken cores and redaction.

use serde_json::{json, Value};

use crate::helpers::*;

fn call(name: &str, args: Value) -> Value {
    json!([{"tool_calls": [{"name": name, "arguments": args}]}, {"content": "done"}])
}

/// Events after `after` until a terminal event or an approval/clarify request.
async fn next_stop(app: &TestApp, tok: &str, sid: &str, after: i64) -> Vec<Value> {
    app.sse_until(tok, sid, &format!("?after={after}"), None, |e| {
        is_terminal(e) || e["type"] == "approval.requested" || e["type"] == "clarify.requested"
    })
    .await
}

fn last_seq(evs: &[Value]) -> i64 {
    evs.last().and_then(|e| e["seq"].as_i64()).unwrap_or(0)
}

fn results(evs: &[Value]) -> Vec<String> {
    evs.iter()
        .filter(|e| e["type"] == "tool.result")
        .map(|e| e["data"]["status"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn workspace(app: &TestApp, principal: &str) -> std::path::PathBuf {
    app.home
        .join("tenants/default/workspaces")
        .join(principal)
        .join("default")
}

#[tokio::test]
async fn an_approved_write_happens_and_a_denied_one_does_not_on_every_backend() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        let sid = app.create_session(&tok).await;
        let evs = run_script(
            &app,
            &tok,
            &sid,
            call("write_file", json!({"path": "a.txt", "content": "hello"})),
            "allow_once",
        )
        .await;
        let t = types(&evs);
        assert!(
            t.contains(&"approval.requested") && t.contains(&"approval.resolved"),
            "{backend:?} {t:?}"
        );
        let req = evs
            .iter()
            .find(|e| e["type"] == "approval.requested")
            .unwrap();
        assert_eq!(req["data"]["tool"], "write_file");
        assert_eq!(req["data"]["risk"], "high");
        assert!(req["data"]["choices"]
            .as_array()
            .unwrap()
            .contains(&json!("allow_session")));
        assert_eq!(results(&evs), ["succeeded"]);
        assert_eq!(
            std::fs::read_to_string(workspace(&app, "alice").join("a.txt")).unwrap(),
            "hello"
        );

        let evs = run_script(
            &app,
            &tok,
            &sid,
            call("write_file", json!({"path": "b.txt", "content": "no"})),
            "deny",
        )
        .await;
        assert_eq!(results(&evs), ["denied"]);
        assert!(!workspace(&app, "alice").join("b.txt").exists());
        let (_, list) = app.get(&tok, "/v1/approvals?state=denied").await;
        assert_eq!(list["items"].as_array().unwrap().len(), 1);
    }
}

#[tokio::test]
async fn allow_session_is_reused_in_the_session_only() {
    let app = spawn_app(Backend::Sqlite).await;
    let alice = app.token("default", "alice");
    let s1 = app.create_session(&alice).await;
    let script = call("write_file", json!({"path": "same.txt", "content": "1"}));
    let evs = run_script(&app, &alice, &s1, script.clone(), "allow_session").await;
    assert_eq!(results(&evs), ["succeeded"]);
    // Same session, same target: no new request.
    let evs = run_script(&app, &alice, &s1, script.clone(), "deny").await;
    assert!(
        !types(&evs).contains(&"approval.requested"),
        "{:?}",
        types(&evs)
    );
    assert_eq!(results(&evs), ["succeeded"]);
    // Another session of the same principal asks again.
    let s2 = app.create_session(&alice).await;
    let evs = run_script(&app, &alice, &s2, script.clone(), "deny").await;
    assert!(types(&evs).contains(&"approval.requested"));
    assert_eq!(results(&evs), ["denied"]);
    // Another principal asks again too.
    let bob = app.token("default", "bob");
    let s3 = app.create_session(&bob).await;
    let evs = run_script(&app, &bob, &s3, script, "deny").await;
    assert!(types(&evs).contains(&"approval.requested"));
    // Someone else cannot decide alice's approvals: they look missing.
    let (_, s) = app.get(&alice, &format!("/v1/sessions/{s2}")).await;
    let before = s["last_seq"].as_i64().unwrap();
    app.start_turn(&alice, &s2, json!({"input": "go", "script": call("write_file", json!({"path": "z.txt", "content": "z"}))})).await;
    let evs = next_stop(&app, &alice, &s2, before).await;
    let req = evs
        .iter()
        .rev()
        .find(|e| e["type"] == "approval.requested")
        .unwrap();
    let id = req["data"]["approval_id"].as_str().unwrap();
    let (st, _) = app
        .post(
            &bob,
            &format!("/v1/approvals/{id}"),
            json!({"decision": "allow_once"}),
        )
        .await;
    assert_eq!(st, 404);
    let (st, _) = app
        .post(
            &alice,
            &format!("/v1/approvals/{id}"),
            json!({"decision": "maybe"}),
        )
        .await;
    assert_eq!(st, 400);
    let (st, _) = app
        .post(
            &alice,
            &format!("/v1/approvals/{id}"),
            json!({"decision": "deny"}),
        )
        .await;
    assert_eq!(st, 200);
    let (st, b) = app
        .post(
            &alice,
            &format!("/v1/approvals/{id}"),
            json!({"decision": "allow_once"}),
        )
        .await;
    assert_eq!(st, 409, "{b}");
}

#[tokio::test]
async fn an_unanswered_approval_times_out_as_a_deny() {
    let app = spawn_with(
        Backend::Sqlite,
        Opts::default().env("DEMIURGE_APPROVAL_TIMEOUT", "1s"),
    )
    .await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let tid = app.start_turn(&tok, &sid, json!({"input": "go", "script": call("write_file", json!({"path": "t.txt", "content": "x"}))})).await;
    let turn = app.wait_turn(&tok, &sid, &tid).await;
    assert_eq!(turn["status"], "completed");
    let evs = app.sse_until(&tok, &sid, "", None, is_terminal).await;
    assert_eq!(results(&evs), ["denied"]);
    let resolved = evs
        .iter()
        .find(|e| e["type"] == "approval.resolved")
        .unwrap();
    assert_eq!(resolved["data"]["decision"], "deny");
    assert_eq!(resolved["data"]["reason"], "timeout");
    assert!(!workspace(&app, "alice").join("t.txt").exists());
}

#[tokio::test]
async fn a_pending_approval_is_denied_after_a_restart() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        let sid = app.create_session(&tok).await;
        let tid = app.start_turn(&tok, &sid, json!({"input": "go", "script": call("write_file", json!({"path": "r.txt", "content": "x"}))})).await;
        let evs = next_stop(&app, &tok, &sid, 0).await;
        let id = evs.last().unwrap()["data"]["approval_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let app = app.restart_after_crash().await;
        let (_, list) = app.get(&tok, "/v1/approvals").await;
        let rec = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["id"] == id.as_str())
            .unwrap()
            .clone();
        assert_eq!(rec["state"], "expired", "{backend:?}");
        let (st, _) = app
            .post(
                &tok,
                &format!("/v1/approvals/{id}"),
                json!({"decision": "allow_once"}),
            )
            .await;
        assert_eq!(st, 409, "an expired approval can never be allowed");
        assert_eq!(app.wait_turn(&tok, &sid, &tid).await["reason"], "lost");
        assert!(!workspace(&app, "alice").join("r.txt").exists());
    }
}

#[tokio::test]
async fn paths_cannot_escape_the_workspace() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let ws = workspace(&app, "alice");
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.join("link")).unwrap();
    for path in [
        "../escape.txt",
        "sub/../../escape.txt",
        "/tmp/demiurge-escape.txt",
        "link/escape.txt",
    ] {
        let evs = run_script(
            &app,
            &tok,
            &sid,
            call("write_file", json!({"path": path, "content": "x"})),
            "allow_once",
        )
        .await;
        assert!(
            !types(&evs).contains(&"approval.requested"),
            "{path}: denied before any approval"
        );
        let r = results(&evs);
        assert!(r == ["denied"] || r == ["invalid"], "{path}: {r:?}");
    }
    assert!(!outside.path().join("escape.txt").exists());
    assert!(!std::path::Path::new("/tmp/demiurge-escape.txt").exists());
    // Reads outside the workspace and every operator read root are refused
    // before any approval; nothing is read.
    std::fs::write(outside.path().join("secret.txt"), "outside-data").unwrap();
    let evs = run_script(
        &app,
        &tok,
        &sid,
        call("read_file", json!({"path": "link/secret.txt"})),
        "allow_once",
    )
    .await;
    assert!(!types(&evs).contains(&"approval.requested"));
    assert_eq!(results(&evs), ["denied"]);
    assert!(serde_json::to_string(&evs)
        .unwrap()
        .contains("no_read_root"));
    assert!(!serde_json::to_string(&evs)
        .unwrap()
        .contains("outside-data"));
    // Sensitive paths inside the workspace need approval to read.
    std::fs::write(ws.join(".env"), "X=1").unwrap();
    let evs = run_script(
        &app,
        &tok,
        &sid,
        call("read_file", json!({"path": ".env"})),
        "deny",
    )
    .await;
    assert!(types(&evs).contains(&"approval.requested"));
    // Ordinary reads inside are automatic.
    std::fs::write(ws.join("plain.txt"), "line one\nline two").unwrap();
    let evs = run_script(
        &app,
        &tok,
        &sid,
        call("read_file", json!({"path": "plain.txt"})),
        "deny",
    )
    .await;
    assert!(!types(&evs).contains(&"approval.requested"));
    assert_eq!(results(&evs), ["succeeded"]);
}

#[tokio::test]
async fn reads_under_an_operator_read_root_need_approval() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "outside-data").unwrap();
    let root = outside.path().canonicalize().unwrap();
    let opts = Opts {
        args: vec!["--read-root".into(), root.display().to_string()],
        ..Opts::default()
    };
    let app = spawn_with(Backend::Sqlite, opts).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let path = root.join("secret.txt").display().to_string();
    let evs = run_script(
        &app,
        &tok,
        &sid,
        call("read_file", json!({"path": path})),
        "deny",
    )
    .await;
    assert!(types(&evs).contains(&"approval.requested"));
    assert_eq!(results(&evs), ["denied"]);
    assert!(!serde_json::to_string(&evs)
        .unwrap()
        .contains("outside-data"));
    let evs = run_script(
        &app,
        &tok,
        &sid,
        call("read_file", json!({"path": path})),
        "allow_once",
    )
    .await;
    assert_eq!(results(&evs), ["succeeded"]);
    assert!(serde_json::to_string(&evs)
        .unwrap()
        .contains("outside-data"));
}

#[tokio::test]
async fn bad_arguments_are_invalid_and_unknown_tools_not_found() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let script = json!([
        {"tool_calls": [
            {"name": "write_file", "arguments": {"path": 3}},
            {"name": "read_file", "arguments": {"path": "x", "bogus": true}},
            {"name": "rm_everything", "arguments": {}},
            {"name": "patch", "arguments": {"path": "nope.txt", "old": "", "new": "x"}}
        ]},
        {"content": "done"}
    ]);
    let evs = run_script(&app, &tok, &sid, script, "deny").await;
    assert_eq!(
        results(&evs),
        ["invalid", "invalid", "not_found", "invalid"]
    );
    let first = evs.iter().find(|e| e["type"] == "tool.result").unwrap();
    assert!(
        first["data"]["content"].as_str().unwrap().contains("path"),
        "{first}"
    );
}

#[tokio::test]
async fn patch_search_and_todo_work_through_the_dispatcher() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let ws = workspace(&app, "alice");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/lib.rs"), "fn old() {}\nfn other() { old() }\n").unwrap();
    let evs = run_script(
        &app,
        &tok,
        &sid,
        call(
            "patch",
            json!({"path": "src/lib.rs", "old": "old", "new": "new"}),
        ),
        "allow_once",
    )
    .await;
    assert_eq!(results(&evs), ["succeeded"]);
    assert_eq!(
        std::fs::read_to_string(ws.join("src/lib.rs")).unwrap(),
        "fn new() {}\nfn other() { new() }\n"
    );
    let diff = evs.iter().find(|e| e["type"] == "tool.result").unwrap()["data"]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        diff.contains("-fn old() {}") && diff.contains("+fn new() {}"),
        "{diff}"
    );
    let evs = run_script(
        &app,
        &tok,
        &sid,
        call("search_files", json!({"query": "new", "path": "."})),
        "deny",
    )
    .await;
    let res = evs.iter().find(|e| e["type"] == "tool.result").unwrap();
    assert_eq!(res["data"]["status"], "succeeded");
    assert!(
        res["data"]["content"]
            .as_str()
            .unwrap()
            .contains("src/lib.rs:1: fn new() {}"),
        "{res}"
    );
    let script = json!([
        {"tool_calls": [{"name": "todo", "arguments": {"action": "add", "text": "write tests"}},
                        {"name": "todo", "arguments": {"action": "complete", "index": 1}},
                        {"name": "todo", "arguments": {"action": "list"}}]},
        {"content": "done"}
    ]);
    let evs = run_script(&app, &tok, &sid, script, "deny").await;
    let last = evs.iter().rfind(|e| e["type"] == "tool.result").unwrap();
    assert_eq!(last["data"]["content"], "1. [x] write tests");
}

#[tokio::test]
async fn clarify_waits_for_the_answer() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let tid = app.start_turn(&tok, &sid, json!({"input": "go", "script": call("clarify", json!({"question": "Which colour?", "choices": ["red", "blue"]}))})).await;
    let evs = next_stop(&app, &tok, &sid, 0).await;
    let req = evs.last().unwrap();
    assert_eq!(req["type"], "clarify.requested");
    assert_eq!(req["data"]["choices"], json!(["red", "blue"]));
    let id = req["data"]["clarification_id"].as_str().unwrap();
    let other = app.token("default", "mallory");
    let (st, _) = app
        .post(
            &other,
            &format!("/v1/clarifications/{id}"),
            json!({"answer": "red"}),
        )
        .await;
    assert_eq!(st, 404);
    let r = app
        .client
        .post(app.url(&format!("/v1/clarifications/{id}")))
        .bearer_auth(&tok)
        .json(&json!({"answer": "blue"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let turn = app.wait_turn(&tok, &sid, &tid).await;
    assert_eq!(turn["status"], "completed");
    let evs = app.sse_until(&tok, &sid, "", None, is_terminal).await;
    assert!(types(&evs).contains(&"clarify.answered"));
    let res = evs.iter().find(|e| e["type"] == "tool.result").unwrap();
    assert_eq!(res["data"]["content"], "blue");
}

#[tokio::test]
async fn the_tool_calls_endpoint_uses_the_same_dispatcher() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let (st, b) = app
        .post(
            &tok,
            &format!("/v1/sessions/{sid}/tool-calls"),
            json!({"tool": "write_file", "arguments": {"path": "api.txt", "content": "via api"}}),
        )
        .await;
    assert_eq!(st, 202, "{b}");
    let evs = next_stop(&app, &tok, &sid, 0).await;
    let req = evs.last().unwrap();
    assert_eq!(
        req["type"], "approval.requested",
        "the endpoint cannot skip approval"
    );
    let id = req["data"]["approval_id"].as_str().unwrap();
    app.post(
        &tok,
        &format!("/v1/approvals/{id}"),
        json!({"decision": "allow_once"}),
    )
    .await;
    let turn = app
        .wait_turn(&tok, &sid, b["turn_id"].as_str().unwrap())
        .await;
    assert_eq!(turn["output"], "wrote 7 chars to api.txt");
    let evs = app.sse_until(&tok, &sid, "", None, is_terminal).await;
    let call = evs.iter().find(|e| e["type"] == "tool.call").unwrap();
    assert_eq!(call["data"]["call_id"], b["call_id"]);
    let (st, _) = app
        .post(
            &tok,
            &format!("/v1/sessions/{sid}/tool-calls"),
            json!({"tool": "", "arguments": {}}),
        )
        .await;
    assert_eq!(st, 400);
}

fn write_core(app: &TestApp, tenant: &str, name: &str, agent_yaml: &str, extra: &[(&str, &str)]) {
    let dir = app
        .home
        .join("tenants")
        .join(tenant)
        .join("agents")
        .join(name);
    std::fs::create_dir_all(dir.join("agent")).unwrap();
    std::fs::write(dir.join("agent.yaml"), agent_yaml).unwrap();
    for (p, body) in extra {
        let f = dir.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, body).unwrap();
    }
}

#[tokio::test]
async fn a_broken_core_fails_with_a_clear_error_and_the_server_keeps_running() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    write_core(
        &app,
        "default",
        "clash",
        "schema_version: 1\nagent:\n  id: clash\nslots:\n  tools: agent/tools\ntools:\n  toolsets: [coding]\n",
        &[("agent/tools/read_file/tool.yaml", "description: mine\ninput_schema: {type: object}\n")],
    );
    write_core(
        &app,
        "default",
        "typo",
        "schema_version: 1\nagent:\n  id: typo\ntools:\n  toolsets: [coding, codng]\n",
        &[],
    );
    for (core, needles) in [
        (
            "clash",
            vec!["read_file", "builtin", "agent/tools/read_file", "rename"],
        ),
        ("typo", vec!["agent.yaml", "tools.toolsets[1]", "codng"]),
    ] {
        let (st, s) = app.post(&tok, "/v1/sessions", json!({"core": core})).await;
        assert_eq!(st, 201, "{s}");
        let sid = s["id"].as_str().unwrap();
        let (st, b) = app.get(&tok, &format!("/v1/sessions/{sid}/tools")).await;
        assert_eq!(st, 409, "{b}");
        let msg = b["error"]["message"].as_str().unwrap();
        for n in needles {
            assert!(msg.contains(n), "{n:?} not in {msg:?}");
        }
        let tid = app.start_turn(&tok, sid, json!({"input": "hi"})).await;
        let turn = app.wait_turn(&tok, sid, &tid).await;
        assert_eq!(turn["status"], "failed");
        assert_eq!(turn["reason"], "core_load");
    }
    let (st, b) = app
        .post(&tok, "/v1/sessions", json!({"core": "missing"}))
        .await;
    assert_eq!(st, 400, "{b}");
    // The default core still works.
    let sid = app.create_session(&tok).await;
    assert_eq!(
        app.get(&tok, &format!("/v1/sessions/{sid}/tools")).await.0,
        200
    );
}

#[tokio::test]
async fn capabilities_and_metadata_overrides_are_enforced() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    write_core(
        &app,
        "default",
        "reader",
        "schema_version: 1\nagent:\n  id: reader\ntools:\n  toolsets: [coding, demiurge_control]\n  metadata:\n    read_file:\n      approval_policy: auto\n    write_file:\n      approval_policy: auto\n      risk: low\n    todo:\n      enabled: false\ncapabilities:\n  defaults:\n    fs.read: {}\n",
        &[],
    );
    let (_, s) = app
        .post(&tok, "/v1/sessions", json!({"core": "reader"}))
        .await;
    let sid = s["id"].as_str().unwrap().to_owned();
    let (_, tools) = app.get(&tok, &format!("/v1/sessions/{sid}/tools")).await;
    let w = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "write_file")
        .unwrap()
        .clone();
    assert_eq!(
        w["approval_policy"], "prompt",
        "metadata may not weaken a built-in"
    );
    assert_eq!(
        w["risk"], "medium",
        "metadata may not lower a built-in's risk"
    );
    assert!(!tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "todo"));
    let evs = run_script(
        &app,
        &tok,
        &sid,
        call("write_file", json!({"path": "w.txt", "content": "x"})),
        "allow_once",
    )
    .await;
    assert!(
        !types(&evs).contains(&"approval.requested"),
        "capability is checked before approval"
    );
    assert_eq!(results(&evs), ["denied"]);
    let res = evs.iter().find(|e| e["type"] == "tool.result").unwrap();
    assert!(
        res["data"]["content"]
            .as_str()
            .unwrap()
            .contains("capability denied: fs.write"),
        "{res}"
    );
}

#[tokio::test]
async fn a_known_secret_never_reaches_the_database_logs_or_events() {
    const SECRET: &str = "hunter2-SUPER-secret-value-9f8e7d";
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let ws = workspace(&app, "alice");
    std::fs::write(
        ws.join("config.txt"),
        format!("user=me\npassword={SECRET}\n"),
    )
    .unwrap();
    let script = json!([
        {"tool_calls": [
            {"name": "write_file", "arguments": {"path": "notes.txt", "content": "x", "api_key": SECRET}},
            {"name": "read_file", "arguments": {"path": "config.txt"}},
            {"name": "search_files", "arguments": {"query": "password", "path": "."}},
            {"name": "clarify", "arguments": {"question": format!("use https://bob:{SECRET}@example.com ?")}}
        ]},
        {"content": format!("the token is token={SECRET}")}
    ]);
    app.start_turn(
        &tok,
        &sid,
        json!({"input": format!("my password={SECRET}"), "script": script}),
    )
    .await;
    let mut after = 0;
    loop {
        let evs = next_stop(&app, &tok, &sid, after).await;
        assert!(!evs.is_empty(), "the turn stalled\n{}", app.log());
        after = last_seq(&evs);
        let last = evs.last().unwrap().clone();
        if is_terminal(&last) {
            break;
        }
        if last["type"] == "approval.requested" {
            let id = last["data"]["approval_id"].as_str().unwrap();
            app.post(
                &tok,
                &format!("/v1/approvals/{id}"),
                json!({"decision": "allow_once"}),
            )
            .await;
        } else if last["type"] == "clarify.requested" {
            let id = last["data"]["clarification_id"].as_str().unwrap();
            app.client
                .post(app.url(&format!("/v1/clarifications/{id}")))
                .bearer_auth(&tok)
                .json(&json!({"answer": format!("my token={SECRET}")}))
                .send()
                .await
                .unwrap();
        }
    }
    let evs = app.sse_until(&tok, &sid, "", None, is_terminal).await;
    let all = serde_json::to_string(&evs).unwrap();
    assert!(all.contains("<redacted"), "something was redacted: {all}");
    assert!(!all.contains(SECRET), "secret in events: {all}");
    let (_, approvals) = app.get(&tok, "/v1/approvals").await;
    assert!(!approvals.to_string().contains(SECRET));
    let home = app.home.clone();
    let app = app.restart_after_crash().await;
    // Every file the server wrote (database, WAL, logs, state), except the
    // workspace where the test itself put the secret.
    let scanned = assert_secret_absent(&home, SECRET, &["workspaces"]);
    assert!(scanned >= 3, "scanned {scanned} files");
    drop(app);
}

#[tokio::test]
async fn skills_are_listed_and_viewed_from_the_core() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    write_core(
        &app,
        "default",
        "skilled",
        "schema_version: 1\nagent:\n  id: skilled\ntools:\n  toolsets: [coding]\n",
        &[
            ("agent/skills/deploy/SKILL.md", "---\nname: deploy\ndescription: How we ship\ncategory: ops\n---\nRun the pipeline."),
            ("agent/skills/deploy/references/checklist.md", "1. tag\n2. push"),
            ("agent/skills/style.md", "---\nname: style\ndescription: House style\n---\nShort sentences."),
        ],
    );
    let (_, s) = app
        .post(&tok, "/v1/sessions", json!({"core": "skilled"}))
        .await;
    let sid = s["id"].as_str().unwrap().to_owned();
    let script = json!([
        {"tool_calls": [
            {"name": "skills_list", "arguments": {}},
            {"name": "skill_view", "arguments": {"name": "deploy"}},
            {"name": "skill_view", "arguments": {"name": "deploy", "file_path": "references/checklist.md"}},
            {"name": "skill_view", "arguments": {"name": "deploy", "file_path": "../../agent.yaml"}},
            {"name": "skill_view", "arguments": {"name": "nope"}}
        ]},
        {"content": "done"}
    ]);
    let evs = run_script(&app, &tok, &sid, script, "deny").await;
    assert_eq!(
        results(&evs),
        [
            "succeeded",
            "succeeded",
            "succeeded",
            "not_found",
            "not_found"
        ]
    );
    let res: Vec<&Value> = evs.iter().filter(|e| e["type"] == "tool.result").collect();
    let list = &res[0]["data"]["content"];
    assert_eq!(list["count"], 2, "{list}");
    assert_eq!(list["categories"], json!(["general", "ops"]));
    assert!(res[1]["data"]["content"]
        .as_str()
        .unwrap()
        .contains("Run the pipeline."));
    assert!(res[2]["data"]["content"]
        .as_str()
        .unwrap()
        .contains("2. push"));
}

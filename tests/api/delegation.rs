//! `delegate_task` through real turns of the scripted fake model: a child
//! agent runs in its own child session of the same principal, sees only the
//! tools it was given, cannot delegate past its depth, and a background
//! child's end comes back to the parent as one completion turn.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::helpers::*;

fn core_dir(app: &TestApp, core: &str) -> PathBuf {
    app.home.join("tenants/default/agents").join(core)
}

fn write(dir: &Path, rel: &str, body: &str) {
    let f = dir.join(rel);
    std::fs::create_dir_all(f.parent().unwrap()).unwrap();
    std::fs::write(f, body).unwrap();
}

/// A core that may delegate to itself.
const DELEGATOR: &str = "schema_version: 1\nagent:\n  id: delegator\ntools:\n  toolsets: [coding, demiurge_control]\n\
capabilities:\n  defaults:\n    fs.read:\n      scope: workspace\n    fs.write:\n      scope: workspace\n    \
task.control:\n      scope: session\n    agents.spawn:delegator: {}\n";

async fn delegator_session(app: &TestApp, tok: &str) -> String {
    let dir = core_dir(app, "delegator");
    write(&dir, "agent.yaml", DELEGATOR);
    write(&dir, "agent/SOUL.md", "# delegator\n");
    let (st, s) = app
        .post(tok, "/v1/sessions", json!({"core": "delegator"}))
        .await;
    assert_eq!(st, 201, "{s}");
    s["id"].as_str().unwrap().to_owned()
}

/// A goal the fake model plays as the child's script.
fn child_script(steps: Value) -> String {
    format!("script:{steps}")
}

fn results_of<'a>(evs: &'a [Value], tool: &str) -> Vec<&'a Value> {
    evs.iter()
        .filter(|e| e["type"] == "tool.result" && e["data"]["tool"] == tool)
        .map(|e| &e["data"])
        .collect()
}

async fn all_events(app: &TestApp, tok: &str, sid: &str) -> Vec<Value> {
    app.sse_until(tok, sid, "", None, |e| {
        is_terminal(e) && e["data"]["output"].is_string()
    })
    .await
}

#[tokio::test]
async fn a_foreground_child_sees_only_its_tools_and_answers_the_parent() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        let sid = delegator_session(&app, &tok).await;
        let ws = app.home.join("tenants/default/workspaces/alice/default");
        std::fs::write(ws.join("note.txt"), "the note says hello").unwrap();
        let goal = child_script(json!([
            {"tool_calls": [
                {"name": "write_file", "arguments": {"path": "escape.txt", "content": "x"}},
                {"name": "read_file", "arguments": {"path": "note.txt"}}
            ]},
            {"content": "child read the note"}
        ]));
        let evs = run_script(
            &app,
            &tok,
            &sid,
            json!([
                {"tool_calls": [{"name": "delegate_task", "arguments": {
                    "goal": goal, "tools": ["read_file"], "background": false,
                    "timeout_seconds": 60, "input_slots": [], "use_bootstrap": true}}]},
                {"content": "parent done"}
            ]),
            "allow_once",
        )
        .await;
        assert_eq!(
            evs.last().unwrap()["type"],
            "turn.completed",
            "{backend:?} {evs:?}"
        );
        let r = results_of(&evs, "delegate_task");
        assert_eq!(r.len(), 1);
        assert_eq!(r[0]["status"], "succeeded", "{backend:?} {}", r[0]);
        let c = &r[0]["content"];
        assert_eq!(c["output"], "child read the note", "{c}");
        assert_eq!(c["tools"], json!(["read_file"]));
        assert_eq!(c["delegation_depth"], 1);
        assert!(
            c["slots_note"]
                .as_str()
                .unwrap()
                .contains("run these input/output slots"),
            "{c}"
        );
        let child = c["child_session_id"].as_str().unwrap().to_owned();
        assert_ne!(child, sid);
        // The child's own session: write_file was never its tool.
        let (st, cs) = app.get(&tok, &format!("/v1/sessions/{child}")).await;
        assert_eq!(st, 200, "{cs}");
        assert_eq!(cs["core"], "delegator");
        let cevs = all_events(&app, &tok, &child).await;
        let w = results_of(&cevs, "write_file");
        assert_eq!(w[0]["status"], "not_found", "{}", w[0]);
        assert!(w[0]["content"]
            .as_str()
            .unwrap()
            .contains("tool not found or not allowed"));
        let rd = results_of(&cevs, "read_file");
        assert_eq!(rd[0]["status"], "succeeded", "{}", rd[0]);
        assert!(!ws.join("escape.txt").exists());
        // Another principal sees neither the child session nor its task.
        let bob = app.token("default", "bob");
        let (st, _) = app.get(&bob, &format!("/v1/sessions/{child}")).await;
        assert_eq!(st, 404);
        let task = c["task_id"].as_str().unwrap();
        let (st, _) = app.get(&bob, &format!("/v1/tasks/{task}")).await;
        assert_eq!(st, 404);
        let (st, t) = app.get(&tok, &format!("/v1/tasks/{task}")).await;
        assert_eq!((st, t["kind"].as_str()), (200, Some("agent.spawn")), "{t}");
        assert_eq!(t["status"], "succeeded");
    }
}

#[tokio::test]
async fn a_background_child_reports_back_once_and_cannot_delegate_past_its_depth() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        let sid = delegator_session(&app, &tok).await;
        let grandchild = child_script(json!([{"content": "grandchild ran"}]));
        let goal = child_script(json!([
            {"tool_calls": [{"name": "delegate_task", "arguments": {
                "goal": grandchild, "background": false, "max_depth": 5}}]},
            {"content": "child finished"}
        ]));
        let evs = run_script(
            &app,
            &tok,
            &sid,
            json!([
                {"tool_calls": [{"name": "delegate_task", "arguments": {
                    "goal": goal, "max_depth": 1}}]},
                {"content": "parent goes on"}
            ]),
            "allow_once",
        )
        .await;
        let r = results_of(&evs, "delegate_task");
        assert_eq!(r[0]["status"], "succeeded", "{backend:?} {}", r[0]);
        assert_eq!(r[0]["content"]["background"], true);
        let task = r[0]["content"]["task_id"].as_str().unwrap().to_owned();
        let child = r[0]["content"]["child_session_id"]
            .as_str()
            .unwrap()
            .to_owned();
        // One completion turn in the parent session names the task.
        let after = evs.last().unwrap()["seq"].as_i64().unwrap();
        let more = app
            .sse_until(&tok, &sid, &format!("?after={after}"), None, |e| {
                e["type"] == "turn.completed"
            })
            .await;
        let done = more.last().unwrap();
        assert_eq!(done["type"], "turn.completed", "{more:?}\n{}", app.log());
        let out = done["data"]["output"].as_str().unwrap();
        assert!(
            out.contains("[SYSTEM: Background task event]")
                && out.contains(&task)
                && out.contains("status: succeeded"),
            "{out}"
        );
        // The child tried to delegate at its limit and was refused.
        let cevs = all_events(&app, &tok, &child).await;
        let d = results_of(&cevs, "delegate_task");
        assert_eq!(d[0]["status"], "denied", "{}", d[0]);
        assert!(d[0]["content"]
            .as_str()
            .unwrap()
            .contains("delegation depth limit exceeded"));
        // Exactly one completion turn: no second one arrives.
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
        let (_, s) = app.get(&tok, &format!("/v1/sessions/{sid}")).await;
        let last = s["last_seq"].as_i64().unwrap();
        let tail = app
            .sse_until(&tok, &sid, &format!("?after={after}"), None, |e| {
                e["seq"].as_i64() == Some(last)
            })
            .await;
        let started = tail.iter().filter(|e| e["type"] == "turn.started").count();
        assert_eq!(started, 1, "{tail:?}");
    }
}

#[tokio::test]
async fn bad_delegations_are_typed_tool_errors() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = delegator_session(&app, &tok).await;
    let call = |args: Value| json!({"name": "delegate_task", "arguments": args});
    let evs = run_script(
        &app,
        &tok,
        &sid,
        json!([
            {"tool_calls": [
                call(json!({"goal": "g", "tools": ["read_file", "no_such_tool"]})),
                call(json!({"goal": "g", "input_slots": ["no_such_slot"]})),
                call(json!({"goal": "g", "core_id": "assistant"})),
                call(json!({"goal": "g", "tools": "some"})),
                call(json!({"goal": "g", "context_mode": "shared"})),
            ]},
            {"content": "done"}
        ]),
        "allow_once",
    )
    .await;
    let r = results_of(&evs, "delegate_task");
    let got: Vec<(&str, &str)> = r
        .iter()
        .map(|d| {
            (
                d["status"].as_str().unwrap(),
                d["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(got[0], ("invalid", "unknown child tool id: no_such_tool"));
    assert_eq!(got[1].0, "invalid");
    assert!(got[1].1.contains("no_such_slot"), "{}", got[1].1);
    assert_eq!(got[2].0, "denied");
    assert!(got[2].1.contains("agents.spawn:assistant"), "{}", got[2].1);
    assert_eq!(got[3].0, "invalid");
    assert_eq!(got[4].0, "invalid");
    // Nothing was started.
    let (_, list) = app.get(&tok, &format!("/v1/tasks?session={sid}")).await;
    assert_eq!(list["items"], json!([]));
}

/// A parent that grants reads only and must prompt for them.
const BOSS: &str =
    "schema_version: 1\nagent:\n  id: boss\ntools:\n  toolsets: [coding, demiurge_control]\n\
approval:\n  tools:\n    read_file: prompt\ncapabilities:\n  defaults:\n    fs.read: {}\n    \
task.control: {}\n    agents.spawn:worker: {}\n";
/// A child core that grants (and auto-allows) much more than the parent.
const WORKER: &str =
    "schema_version: 1\nagent:\n  id: worker\ntools:\n  toolsets: [coding, demiurge_control]\n\
approval:\n  default: auto\ncapabilities:\n  defaults:\n    fs.read: {}\n    fs.write: {}\n    \
terminal.exec: {}\n    task.control: {}\n";

#[tokio::test]
async fn a_child_never_exceeds_its_parent_and_its_approvals_reach_the_parent_stream() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        for (core, body) in [("boss", BOSS), ("worker", WORKER)] {
            let dir = core_dir(&app, core);
            write(&dir, "agent.yaml", body);
            write(&dir, "agent/SOUL.md", &format!("# {core}\n"));
        }
        let (st, s) = app
            .post(&tok, "/v1/sessions", json!({"core": "boss"}))
            .await;
        assert_eq!(st, 201, "{s}");
        let sid = s["id"].as_str().unwrap().to_owned();
        let ws = app.home.join("tenants/default/workspaces/alice/default");
        std::fs::write(ws.join("note.txt"), "boss note").unwrap();
        let goal = child_script(json!([
            {"tool_calls": [
                {"name": "terminal", "arguments": {"command": "touch escaped"}},
                {"name": "write_file", "arguments": {"path": "escape.txt", "content": "x"}},
                {"name": "read_file", "arguments": {"path": "note.txt"}}
            ]},
            {"content": "child done"}
        ]));
        // The parent's decider only watches the parent's stream: the child's
        // read_file approval must be mirrored there to be decided at all.
        let evs = run_script(
            &app,
            &tok,
            &sid,
            json!([
                {"tool_calls": [{"name": "delegate_task", "arguments": {
                    "goal": goal, "core_id": "worker", "tools": "all",
                    "background": false, "timeout_seconds": 120}}]},
                {"content": "parent done"}
            ]),
            "allow_once",
        )
        .await;
        assert_eq!(
            evs.last().unwrap()["type"],
            "turn.completed",
            "{backend:?} {evs:?}"
        );
        let r = results_of(&evs, "delegate_task");
        assert_eq!(r[0]["status"], "succeeded", "{backend:?} {}", r[0]);
        let c = &r[0]["content"];
        let child = c["child_session_id"].as_str().unwrap().to_owned();
        // Only what the parent core grants: no terminal, no writes.
        let tools: Vec<&str> = c["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert!(tools.contains(&"read_file"), "{tools:?}");
        for gone in ["terminal", "write_file", "patch"] {
            assert!(!tools.contains(&gone), "{gone} in {tools:?}");
        }
        // The mirrored request and its end, naming the child session.
        let mirrored: Vec<&Value> = evs
            .iter()
            .filter(|e| e["type"] == "approval.requested")
            .collect();
        assert_eq!(mirrored.len(), 1, "{backend:?} {evs:?}");
        assert_eq!(mirrored[0]["data"]["tool"], "read_file");
        assert_eq!(mirrored[0]["data"]["child_session_id"], child.as_str());
        let approval = mirrored[0]["data"]["approval_id"].as_str().unwrap();
        let all = app
            .sse_until(&tok, &sid, "", None, |e| {
                e["type"] == "approval.resolved" && e["data"]["approval_id"] == approval
            })
            .await;
        let resolved = all.last().unwrap();
        assert_eq!(resolved["data"]["decision"], "allow_once", "{resolved}");
        assert_eq!(resolved["data"]["child_session_id"], child.as_str());
        // In the child: the parent's prompt held (the read was asked, not
        // auto-allowed by the child core), the rest was never its tool.
        let cevs = all_events(&app, &tok, &child).await;
        let own: Vec<&Value> = cevs
            .iter()
            .filter(|e| e["type"] == "approval.requested")
            .collect();
        assert_eq!(own.len(), 1, "{cevs:?}");
        assert_eq!(own[0]["data"]["approval_id"], approval);
        assert!(own[0]["data"].get("child_session_id").is_none());
        for gone in ["terminal", "write_file"] {
            let g = results_of(&cevs, gone);
            assert_eq!(g[0]["status"], "not_found", "{gone}: {}", g[0]);
        }
        let rd = results_of(&cevs, "read_file");
        assert_eq!(rd[0]["status"], "succeeded", "{}", rd[0]);
        assert!(!ws.join("escape.txt").exists() && !ws.join("escaped").exists());
    }
}

//! Evolve runs over REST, and the shipped evolver core running on a run:
//! `evolve_core start` runs the evolver as a child agent whose workspace is
//! the run's worktree (its edit lands there, not in live); the run is
//! listed, diffed, reviewed and promoted over REST by an operator; the turn
//! running during the promote keeps its tools, the next one sees the new
//! set; a failed gate is a 422 with the report, an MCP change a 409 until
//! the review's token comes along; discard leaves nothing; a rollback
//! restores the previous tool set in a new commit.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::helpers::*;

fn call(name: &str, args: Value) -> Value {
    json!([{"tool_calls": [{"name": name, "arguments": args}]}, {"content": "done"}])
}

/// The first result of `tool` in the events: (status, data).
fn result_of(evs: &[Value], tool: &str) -> (String, Value) {
    let r = evs
        .iter()
        .find(|e| e["type"] == "tool.result" && e["data"]["tool"] == tool)
        .unwrap_or_else(|| panic!("no {tool} result: {evs:#?}"));
    (
        r["data"]["status"].as_str().unwrap_or("").to_owned(),
        r["data"]["data"].clone(),
    )
}

async fn tool_names(app: &TestApp, tok: &str, sid: &str) -> Vec<String> {
    let (st, listing) = app.get(tok, &format!("/v1/sessions/{sid}/tools")).await;
    assert_eq!(st, 200, "{listing}");
    listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

fn live_manifest(app: &TestApp) -> String {
    std::fs::read_to_string(app.home.join("tenants/default/agents/assistant/agent.yaml")).unwrap()
}

/// The assistant's manifest with `todo` disabled.
fn without_todo(manifest: &str) -> String {
    assert!(manifest.contains("  metadata: {}\n"), "{manifest}");
    manifest.replace(
        "  metadata: {}\n",
        "  metadata:\n    todo:\n      enabled: false\n",
    )
}

fn runs_path(run: &str) -> String {
    format!("/v1/cores/assistant/runs/{run}")
}

#[tokio::test]
async fn the_evolver_edits_a_run_that_rest_reviews_and_promotes() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let op = app.token_with("default", "olga", "operator", "1h");
        let sid = app.create_session(&op).await;
        assert!(tool_names(&app, &op, &sid).await.contains(&"todo".into()));

        // The evolver's turn, played by the fake model: it rewrites the
        // target core's manifest, relative to its workspace (the worktree).
        let before = live_manifest(&app);
        let evolver_turn = json!([
            {"tool_calls": [{"name": "write_file", "arguments": {
                "path": "assistant/agent.yaml", "content": without_todo(&before)}}]},
            {"content": "the evolver disabled todo"}
        ]);
        let start = json!({"action": "start", "goal": format!("script:{evolver_turn}"),
            "background": true, "notify_on_complete": false});
        let evs = run_script(&app, &op, &sid, call("evolve_core", start), "allow_once").await;
        let (st, started) = result_of(&evs, "evolve_core");
        assert_eq!(st, "succeeded", "{backend:?} {started}\n{}", app.log());
        assert_eq!(started["status"], "queued", "{started}");
        let run = started["run_id"].as_str().unwrap().to_owned();
        let task = started["task_id"].as_str().unwrap().to_owned();
        let child = started["evolver"]["session_id"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(started["evolver"]["task_id"], task.as_str());

        // The evolver's write asks in its own session; allowed, it lands
        // in the run's worktree and nowhere else.
        allow_next(&app, &op, &child, |e| e["data"]["tool"] == "write_file").await;
        let cevs = app.sse_until(&op, &child, "", None, is_terminal).await;
        assert_eq!(cevs.last().unwrap()["type"], "turn.completed", "{cevs:#?}");
        let (st, w) = result_of(&cevs, "write_file");
        assert_eq!(st, "succeeded", "{w}");
        let (_, cs) = app.get(&op, &format!("/v1/sessions/{child}")).await;
        assert_eq!(cs["core"], "evolver");
        let (st, t) = app.get(&op, &format!("/v1/tasks/{task}")).await;
        assert_eq!((st, t["kind"].as_str()), (200, Some("evolver.run")), "{t}");
        assert_eq!(live_manifest(&app), before);
        let worktree = PathBuf::from(started["agents_root"].as_str().unwrap());
        assert!(
            std::fs::read_to_string(worktree.join("assistant/agent.yaml"))
                .unwrap()
                .contains("todo:\n      enabled: false")
        );
        assert!(tool_names(&app, &op, &sid).await.contains(&"todo".into()));

        // Listed and detailed under its core, for operators only.
        let (st, list) = app.get(&op, "/v1/cores/assistant/runs").await;
        assert_eq!(st, 200, "{list}");
        assert_eq!(list["runs"][0]["run_id"], run.as_str());
        assert_eq!(list["runs"][0]["evolver"]["task_id"], task.as_str());
        assert_eq!(list["runs"][0]["reviewed"], false);
        let (st, d) = app.get(&op, &runs_path(&run)).await;
        assert_eq!(st, 200, "{d}");
        assert_eq!(d["state"], "open");
        assert_eq!(d["changed"], json!(["assistant/agent.yaml"]));
        assert!(d["diff"].as_str().unwrap().contains("+    todo:"), "{d}");
        let member = app.token("default", "bob");
        let (st, e) = app.get(&member, "/v1/cores/assistant/runs").await;
        assert_eq!((st, e["error"]["code"].as_str()), (403, Some("forbidden")));
        let (st, _) = app
            .post(&member, &format!("{}/promote", runs_path(&run)), json!({}))
            .await;
        assert_eq!(st, 403);
        let other = app.token_with("globex", "root", "admin", "1h");
        for path in [runs_path(&run), format!("/v1/cores/evolver/runs/{run}")] {
            let tok = if path.contains("evolver") {
                &op
            } else {
                &other
            };
            let (st, e) = app.get(tok, &path).await;
            assert_eq!(
                (st, e["error"]["code"].as_str()),
                (404, Some("not_found")),
                "{path}"
            );
        }
        let (st, _) = app
            .post(&other, &format!("{}/review", runs_path(&run)), json!({}))
            .await;
        assert_eq!(st, 404);
        let (st, e) = app.get(&op, "/v1/cores/assistant/runs/..%2Fx").await;
        assert_eq!(st, 400, "{e}");

        let (st, review) = app
            .post(&op, &format!("{}/review", runs_path(&run)), json!({}))
            .await;
        assert_eq!(st, 200, "{review}");
        assert_eq!(review["report"]["passed"], true, "{review}");
        assert!(review["mcp"].is_null());
        let (_, d) = app.get(&op, &runs_path(&run)).await;
        assert_eq!(d["state"], "reviewed", "{d}");
        assert_eq!(d["review"]["commit"], review["commit"]);

        // A turn already running when the promote lands keeps its tools:
        // it waits on an approval while live moves, then calls `todo`.
        let turn = app
            .start_turn(&op, &sid, json!({"input": "go", "script": [
                {"tool_calls": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}]},
                {"tool_calls": [{"name": "todo", "arguments": {"action": "list"}}]},
                {"content": "done"}]}))
            .await;
        allow_later(&app, &op, &sid, &turn, &run).await;
        let (_, core) = app.get(&op, "/v1/cores/assistant").await;
        assert_ne!(core["revision"], d["base"], "promote moved live");
        // The session grant made on the old revision does not outlive the
        // promote: the same write is asked again (and refused here).
        let evs = run_script(
            &app,
            &op,
            &sid,
            call("write_file", json!({"path": "x.txt", "content": "x"})),
            "deny",
        )
        .await;
        assert_eq!(result_of(&evs, "write_file").0, "denied", "{backend:?}");
        // The next turn does not see it.
        let evs = run_script(
            &app,
            &op,
            &sid,
            call("todo", json!({"action": "list"})),
            "allow_once",
        )
        .await;
        assert_eq!(result_of(&evs, "todo").0, "not_found", "{backend:?}");
        assert!(!tool_names(&app, &op, &sid).await.contains(&"todo".into()));
        let (_, d) = app.get(&op, &runs_path(&run)).await;
        assert_eq!(d["state"], "promoted", "{d}");

        // A rollback restores the previous tool set in a new commit.
        let (_, promoted) = app.get(&op, "/v1/cores/assistant").await;
        let evs = run_script(
            &app,
            &op,
            &sid,
            call("rollback_core", json!({})),
            "allow_once",
        )
        .await;
        let (st, rb) = result_of(&evs, "rollback_core");
        assert_eq!(st, "succeeded", "{rb}");
        assert_eq!(rb["previous"], promoted["revision"]);
        assert_ne!(rb["revision"], d["base"], "a new commit, not the old one");
        assert!(tool_names(&app, &op, &sid).await.contains(&"todo".into()));

        // Discard: nothing left, and it is gone for REST too.
        let (st, x) = app
            .post(&op, &format!("{}/discard", runs_path(&run)), json!({}))
            .await;
        assert_eq!((st, &x["discarded"]), (200, &json!(true)), "{x}");
        assert!(!worktree.exists());
        assert!(!worktree.parent().unwrap().exists());
        let (st, _) = app
            .post(&op, &format!("{}/discard", runs_path(&run)), json!({}))
            .await;
        assert_eq!(st, 404);
        let (st, _) = app.get(&op, &runs_path(&run)).await;
        assert_eq!(st, 404);
        let (_, list) = app.get(&op, "/v1/cores/assistant/runs").await;
        assert_eq!(list["runs"], json!([]));
    }
}

/// With `turn` waiting on its write approval: promote `run` over REST, then
/// allow the write for the session; the turn's later `todo` call still
/// works (its catalog is the one it started with).
async fn allow_later(app: &TestApp, tok: &str, sid: &str, turn: &str, run: &str) {
    let evs = app
        .sse_until(tok, sid, "", None, |e| {
            e["type"] == "approval.requested" && e["turn_id"] == turn
        })
        .await;
    let approval = evs.last().unwrap()["data"]["approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (st, p) = app
        .post(tok, &format!("{}/promote", runs_path(run)), json!({}))
        .await;
    assert_eq!(st, 200, "{p}");
    assert_eq!(p["cores"], json!(["assistant"]));
    let (st, b) = app
        .post(
            tok,
            &format!("/v1/approvals/{approval}"),
            json!({"decision": "allow_session"}),
        )
        .await;
    assert_eq!(st, 200, "{b}");
    let evs = app
        .sse_until(tok, sid, "", None, |e| {
            is_terminal(e) && e["turn_id"] == turn
        })
        .await;
    let ours: Vec<Value> = evs.into_iter().filter(|e| e["turn_id"] == turn).collect();
    assert_eq!(ours.last().unwrap()["type"], "turn.completed", "{ours:#?}");
    assert_eq!(result_of(&ours, "todo").0, "succeeded", "{ours:#?}");
}

#[tokio::test]
async fn rest_promote_refuses_failed_gates_and_an_mcp_change_without_its_token() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let op = app.token_with("default", "ada", "admin", "1h");
        let sid = app.create_session(&op).await;
        // A foreground start: the evolver (the fake model, no script)
        // answers and edits nothing; the call waits for it.
        let evs = run_script(
            &app,
            &op,
            &sid,
            call("evolve_core", json!({"goal": "add an MCP server"})),
            "allow_once",
        )
        .await;
        let (st, started) = result_of(&evs, "evolve_core");
        assert_eq!(st, "succeeded", "{started}\n{}", app.log());
        assert_eq!(started["status"], "succeeded", "{started}");
        assert!(started["output"].as_str().unwrap().starts_with("[fake]"));
        let run = started["run_id"].as_str().unwrap().to_owned();
        let wt = PathBuf::from(started["agents_root"].as_str().unwrap());

        let (st, e) = app
            .post(&op, &format!("{}/promote", runs_path(&run)), json!({}))
            .await;
        assert_eq!(
            (st, e["error"]["code"].as_str()),
            (400, Some("invalid_request")),
            "{e}"
        );

        std::fs::write(wt.join("assistant/pyproject.toml"), "[project]\n").unwrap();
        let (st, review) = app
            .post(&op, &format!("{}/review", runs_path(&run)), json!({}))
            .await;
        assert_eq!(
            (st, &review["report"]["passed"]),
            (200, &json!(false)),
            "{review}"
        );
        let (_, d) = app.get(&op, &runs_path(&run)).await;
        assert_eq!(d["state"], "failed", "{d}");
        let (_, before) = app.get(&op, "/v1/cores/assistant").await;
        let (st, e) = app
            .post(&op, &format!("{}/promote", runs_path(&run)), json!({}))
            .await;
        assert_eq!(
            (st, e["error"]["code"].as_str()),
            (422, Some("gates_failed")),
            "{e}"
        );
        assert!(
            e["error"]["details"]["gates"]["phases"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "dependency" && p["passed"] == false),
            "{e}"
        );

        std::fs::remove_file(wt.join("assistant/pyproject.toml")).unwrap();
        std::fs::create_dir_all(wt.join("assistant/agent/mcp")).unwrap();
        std::fs::write(
            wt.join("assistant/agent/mcp/srv.yaml"),
            "command: srv\nenv: {SRV_KEY: s3cr3t-v4lue}\n",
        )
        .unwrap();
        let (_, d) = app.get(&op, &runs_path(&run)).await;
        assert_eq!(d["state"], "changed", "{d}");
        let (st, review) = app
            .post(&op, &format!("{}/review", runs_path(&run)), json!({}))
            .await;
        assert_eq!(
            (st, &review["report"]["passed"]),
            (200, &json!(true)),
            "{review}"
        );
        let token = review["mcp"]["id"].as_str().unwrap().to_owned();
        assert!(token.starts_with("mcp-review:"));
        assert!(!review.to_string().contains("s3cr3t-v4lue"));
        let (_, d) = app.get(&op, &runs_path(&run)).await;
        assert_eq!(
            d["review"]["mcp"]["changed_paths"],
            json!(["assistant/agent/mcp/srv.yaml"])
        );

        let wrong = format!("mcp-review:{}", "0".repeat(64));
        // `null` is the optional body left out, like `{}`.
        for body in [json!({}), Value::Null, json!({"mcp_review": wrong})] {
            let (st, e) = app
                .post(&op, &format!("{}/promote", runs_path(&run)), body.clone())
                .await;
            assert_eq!(
                (st, e["error"]["code"].as_str()),
                (409, Some("mcp_review_required")),
                "{body} {e}"
            );
            let sec = &e["error"]["details"]["mcp_security_review"];
            assert_eq!(sec["id"], token.as_str(), "{e}");
            assert_eq!(sec["changes"][0]["after"]["env_names"], json!(["SRV_KEY"]));
        }
        let (st, e) = app
            .post(
                &op,
                &format!("{}/promote", runs_path(&run)),
                json!({"mcp_review": 7}),
            )
            .await;
        assert_eq!(st, 400, "{e}");
        let (_, after) = app.get(&op, "/v1/cores/assistant").await;
        assert_eq!(before["revision"], after["revision"]);
        let (st, p) = app
            .post(
                &op,
                &format!("{}/promote", runs_path(&run)),
                json!({"mcp_review": token}),
            )
            .await;
        assert_eq!(st, 200, "{p}");
        let (_, after) = app.get(&op, "/v1/cores/assistant").await;
        assert_eq!(after["revision"], p["revision"]);
        assert_eq!(p["previous"], before["revision"]);
    }
}

#[tokio::test]
async fn discarding_a_run_cancels_its_running_evolver() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let op = app.token_with("default", "olga", "operator", "1h");
        let sid = app.create_session(&op).await;
        // The evolver stops at its write's approval, which nobody answers.
        let evolver_turn = json!([
            {"tool_calls": [{"name": "write_file", "arguments": {
                "path": "assistant/agent/SOUL.md", "content": "# changed\n"}}]},
            {"content": "unreachable"}
        ]);
        let start = json!({"goal": format!("script:{evolver_turn}"), "background": true,
            "notify_on_complete": false});
        let evs = run_script(&app, &op, &sid, call("evolve_core", start), "allow_once").await;
        let (st, started) = result_of(&evs, "evolve_core");
        assert_eq!(st, "succeeded", "{started}");
        let run = started["run_id"].as_str().unwrap().to_owned();
        let child = started["evolver"]["session_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let asked = app
            .sse_until(&op, &child, "", None, |e| e["type"] == "approval.requested")
            .await;
        assert_eq!(
            asked.last().unwrap()["type"],
            "approval.requested",
            "{asked:#?}"
        );

        let (st, x) = app
            .post(&op, &format!("{}/discard", runs_path(&run)), json!({}))
            .await;
        assert_eq!(st, 200, "{x}");
        let cevs = app.sse_until(&op, &child, "", None, is_terminal).await;
        assert_eq!(
            cevs.last().unwrap()["type"],
            "turn.cancelled",
            "{backend:?} {cevs:#?}"
        );
        let soul = app
            .home
            .join("tenants/default/agents/assistant/agent/SOUL.md");
        assert!(std::fs::read_to_string(soul)
            .unwrap()
            .starts_with("# assistant"));
    }
}

//! `evolve_core` through real turns: start makes a run worktree (and runs
//! the evolver on it, which the unscripted fake model leaves untouched),
//! the test edits it as the evolver would, review runs the gates, promote moves live
//! (the next turn sees the new tool set); a failed gate blocks promote, an
//! MCP change needs the review's content-bound token, discard leaves
//! nothing behind, and each action's approval is cached for that action
//! only.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::helpers::*;

fn call(args: Value) -> Value {
    json!([{"tool_calls": [{"name": "evolve_core", "arguments": args}]}, {"content": "done"}])
}

/// The one tool result: (status, data).
fn result(evs: &[Value]) -> (String, Value) {
    let r = evs
        .iter()
        .find(|e| e["type"] == "tool.result")
        .unwrap_or_else(|| panic!("no tool result: {evs:#?}"));
    (
        r["data"]["status"].as_str().unwrap_or("").to_owned(),
        r["data"]["data"].clone(),
    )
}

fn asked(evs: &[Value]) -> Vec<Value> {
    evs.iter()
        .filter(|e| e["type"] == "approval.requested")
        .map(|e| e["data"].clone())
        .collect()
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

async fn evolve(app: &TestApp, tok: &str, sid: &str, args: Value) -> (String, Value) {
    let evs = run_script(app, tok, sid, call(args), "allow_once").await;
    result(&evs)
}

/// Start a run; its id and worktree.
async fn start(app: &TestApp, tok: &str, sid: &str, goal: &str) -> (String, PathBuf) {
    let (st, data) = evolve(app, tok, sid, json!({"action": "start", "goal": goal})).await;
    assert_eq!(st, "succeeded", "{data}\n{}", app.log());
    let wt = PathBuf::from(data["agents_root"].as_str().unwrap());
    assert!(wt.join("assistant/agent.yaml").is_file(), "{data}");
    // The evolver ran on it as a child (the fake model edits nothing).
    assert_eq!(data["status"], "succeeded", "{data}");
    assert!(data["evolver"]["task_id"].is_string(), "{data}");
    (data["run_id"].as_str().unwrap().to_owned(), wt)
}

fn without_todo(wt: &std::path::Path) {
    let p = wt.join("assistant/agent.yaml");
    let manifest = std::fs::read_to_string(&p).unwrap();
    assert!(manifest.contains("  metadata: {}\n"), "{manifest}");
    let changed = manifest.replace(
        "  metadata: {}\n",
        "  metadata:\n    todo:\n      enabled: false\n",
    );
    std::fs::write(&p, changed).unwrap();
}

#[tokio::test]
async fn start_review_promote_changes_the_next_turns_tools() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let alice = app.token("default", "alice");
        let sid = app.create_session(&alice).await;
        assert!(tool_names(&app, &alice, &sid)
            .await
            .contains(&"evolve_core".to_owned()));

        // Refused start: nothing is made.
        let evs = run_script(
            &app,
            &alice,
            &sid,
            call(json!({"goal": "drop todo"})),
            "deny",
        )
        .await;
        assert_eq!(result(&evs).0, "denied");
        let ask = &asked(&evs)[0];
        assert_eq!(ask["tool"], "evolve_core");
        assert_eq!(ask["risk"], "high");

        let (run, wt) = start(&app, &alice, &sid, "drop todo").await;
        without_todo(&wt);
        // Not live until promoted.
        assert!(tool_names(&app, &alice, &sid)
            .await
            .contains(&"todo".to_owned()));
        let (st, review) = evolve(
            &app,
            &alice,
            &sid,
            json!({"action": "review", "run_id": run}),
        )
        .await;
        assert_eq!(st, "succeeded", "{review}");
        assert_eq!(review["passed"], true);
        assert_eq!(review["changed_files"], json!(["assistant/agent.yaml"]));
        assert!(review.get("mcp_review").is_none());
        let (_, before) = app.get(&alice, "/v1/cores/assistant").await;
        let (st, promoted) = evolve(
            &app,
            &alice,
            &sid,
            json!({"action": "promote", "run_id": run}),
        )
        .await;
        assert_eq!(st, "succeeded", "{promoted}");
        assert_eq!(promoted["new_revision"], review["proposal_revision"]);
        assert_eq!(promoted["previous"], before["revision"]);
        let (_, core) = app.get(&alice, "/v1/cores/assistant").await;
        assert_eq!(core["revision"], promoted["new_revision"]);
        assert!(!tool_names(&app, &alice, &sid)
            .await
            .contains(&"todo".to_owned()));

        // Discard: no worktree, no run.
        let (st, d) = evolve(
            &app,
            &alice,
            &sid,
            json!({"action": "discard", "run_id": run}),
        )
        .await;
        assert_eq!(st, "succeeded", "{d}");
        assert!(!wt.exists());
        assert!(!wt.parent().unwrap().exists());
        let (st, _) = evolve(
            &app,
            &alice,
            &sid,
            json!({"action": "discard", "run_id": run}),
        )
        .await;
        assert_eq!(st, "not_found");
        let (st, _) = evolve(
            &app,
            &alice,
            &sid,
            json!({"action": "review", "run_id": run}),
        )
        .await;
        assert_eq!(st, "not_found");
    }
}

#[tokio::test]
async fn a_failed_gate_blocks_promote() {
    let app = spawn_app(Backend::Sqlite).await;
    let alice = app.token("default", "alice");
    let sid = app.create_session(&alice).await;
    let (run, wt) = start(&app, &alice, &sid, "add deps").await;
    without_todo(&wt);
    std::fs::write(wt.join("assistant/pyproject.toml"), "[project]\n").unwrap();
    let (st, review) = evolve(
        &app,
        &alice,
        &sid,
        json!({"action": "review", "run_id": run}),
    )
    .await;
    assert_eq!(st, "failed", "{review}");
    assert_eq!(review["passed"], false);
    assert!(review["gates"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == "dependency" && p["passed"] == false));
    let (_, before) = app.get(&alice, "/v1/cores/assistant").await;
    let (st, e) = evolve(
        &app,
        &alice,
        &sid,
        json!({"action": "promote", "run_id": run}),
    )
    .await;
    assert_eq!(st, "failed", "{e}");
    assert!(e["error"].as_str().unwrap().contains("dependency"), "{e}");
    let (_, after) = app.get(&alice, "/v1/cores/assistant").await;
    assert_eq!(before["revision"], after["revision"]);
    assert!(tool_names(&app, &alice, &sid)
        .await
        .contains(&"todo".to_owned()));
    // Bad input never reaches the store (and is never asked).
    for (args, want) in [
        (json!({"action": "review"}), "run_id is required"),
        (
            json!({"action": "review", "run_id": "../x"}),
            "not a run id",
        ),
        (json!({"action": "start"}), "goal is required"),
        (json!({"action": "explode", "run_id": run}), "not one of"),
    ] {
        let evs = run_script(&app, &alice, &sid, call(args.clone()), "allow_once").await;
        let (st, data) = result(&evs);
        assert_eq!(st, "invalid", "{args}");
        assert!(data["error"].as_str().unwrap().contains(want), "{data}");
        assert!(asked(&evs).is_empty(), "{args}");
    }
}

#[tokio::test]
async fn an_mcp_change_needs_the_review_token() {
    let app = spawn_app(Backend::Sqlite).await;
    let alice = app.token("default", "alice");
    let sid = app.create_session(&alice).await;
    let (run, wt) = start(&app, &alice, &sid, "add an MCP server").await;
    std::fs::create_dir_all(wt.join("assistant/agent/mcp")).unwrap();
    std::fs::write(
        wt.join("assistant/agent/mcp/srv.yaml"),
        "command: srv\nenv: {SRV_KEY: s3cr3t-v4lue}\n",
    )
    .unwrap();
    let (st, review) = evolve(
        &app,
        &alice,
        &sid,
        json!({"action": "review", "run_id": run}),
    )
    .await;
    assert_eq!(st, "succeeded", "{review}");
    let token = review["mcp_review"]
        .as_str()
        .unwrap_or_else(|| panic!("{review}"))
        .to_owned();
    assert!(token.starts_with("mcp-review:") && token.len() == 11 + 64);
    let sec = &review["mcp_security_review"];
    assert_eq!(
        sec["changed_paths"],
        json!(["assistant/agent/mcp/srv.yaml"])
    );
    assert_eq!(sec["changes"][0]["change"], "added");
    assert_eq!(sec["changes"][0]["after"]["command"], "srv");
    assert_eq!(sec["changes"][0]["after"]["env_names"], json!(["SRV_KEY"]));
    assert!(!review.to_string().contains("s3cr3t-v4lue"));

    let (_, before) = app.get(&alice, "/v1/cores/assistant").await;
    // Without the token, or with a wrong one: refused, live unmoved.
    let (st, e) = evolve(
        &app,
        &alice,
        &sid,
        json!({"action": "promote", "run_id": run}),
    )
    .await;
    assert_eq!(st, "denied", "{e}");
    assert!(e["error"].as_str().unwrap().contains("srv.yaml"), "{e}");
    let wrong = format!("mcp-review:{}", "0".repeat(64));
    let (st, _) = evolve(
        &app,
        &alice,
        &sid,
        json!({"action": "promote", "run_id": run, "mcp_review_token": wrong}),
    )
    .await;
    assert_eq!(st, "denied");
    // The declaration changes again: a new review, and the old token is stale.
    std::fs::write(
        wt.join("assistant/agent/mcp/srv.yaml"),
        "command: srv\nargs: [--all]\n",
    )
    .unwrap();
    let (_, again) = evolve(
        &app,
        &alice,
        &sid,
        json!({"action": "review", "run_id": run}),
    )
    .await;
    let fresh = again["mcp_review"].as_str().unwrap().to_owned();
    assert_ne!(fresh, token);
    let (st, e) = evolve(
        &app,
        &alice,
        &sid,
        json!({"action": "promote", "run_id": run, "mcp_review_token": token}),
    )
    .await;
    assert_eq!(st, "denied");
    assert!(e["error"].as_str().unwrap().contains("stale"), "{e}");
    let (_, after) = app.get(&alice, "/v1/cores/assistant").await;
    assert_eq!(before["revision"], after["revision"]);
    // With it: promoted.
    let (st, p) = evolve(
        &app,
        &alice,
        &sid,
        json!({"action": "promote", "run_id": run, "mcp_review_token": fresh}),
    )
    .await;
    assert_eq!(st, "succeeded", "{p}");
    let (_, after) = app.get(&alice, "/v1/cores/assistant").await;
    assert_eq!(after["revision"], p["new_revision"]);
}

#[tokio::test]
async fn approvals_are_cached_per_action() {
    let app = spawn_app(Backend::Sqlite).await;
    let alice = app.token("default", "alice");
    let sid = app.create_session(&alice).await;
    let evs = run_script(
        &app,
        &alice,
        &sid,
        call(json!({"goal": "one"})),
        "allow_session",
    )
    .await;
    assert_eq!(result(&evs).0, "succeeded");
    let run = result(&evs).1["run_id"].as_str().unwrap().to_owned();
    // A second start is covered; a review is asked again.
    let evs = run_script(&app, &alice, &sid, call(json!({"goal": "two"})), "deny").await;
    assert_eq!(
        (result(&evs).0.as_str(), asked(&evs).len()),
        ("succeeded", 0)
    );
    let evs = run_script(
        &app,
        &alice,
        &sid,
        call(json!({"action": "discard", "run_id": run})),
        "deny",
    )
    .await;
    assert_eq!((result(&evs).0.as_str(), asked(&evs).len()), ("denied", 1));
}

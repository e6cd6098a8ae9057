//! Background terminal work as durable tasks: task ids, task.updated events,
//! owner-scoped status, operator-only logs, cancellation of the whole tree,
//! and `lost` after a crash.

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::*;

pub(crate) async fn background(app: &TestApp, tok: &str, sid: &str, command: &str) -> String {
    let (st, b) = app
        .post(tok, &format!("/v1/sessions/{sid}/tool-calls"), json!({"tool": "terminal", "arguments": {"command": command, "background": true, "timeout_seconds": 60}}))
        .await;
    assert_eq!(st, 202, "{b}");
    let tid = b["turn_id"].as_str().unwrap().to_owned();
    let mut after = 0;
    loop {
        let evs = app
            .sse_until(tok, sid, &format!("?after={after}"), None, |e| {
                (is_terminal(e) && e["turn_id"] == tid.as_str())
                    || e["type"] == "approval.requested"
            })
            .await;
        assert!(!evs.is_empty(), "stalled\n{}", app.log());
        after = evs.last().unwrap()["seq"].as_i64().unwrap();
        let last = evs.last().unwrap();
        if last["type"] == "approval.requested" {
            let id = last["data"]["approval_id"].as_str().unwrap();
            app.post(
                tok,
                &format!("/v1/approvals/{id}"),
                json!({"decision": "allow_once"}),
            )
            .await;
            continue;
        }
        break;
    }
    let turn = app.wait_turn(tok, sid, &tid).await;
    let out: Value = serde_json::from_str(turn["output"].as_str().unwrap()).unwrap_or(Value::Null);
    out["task_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no task id: {turn}"))
        .to_owned()
}

pub(crate) async fn wait_task(app: &TestApp, tok: &str, id: &str) -> Value {
    for _ in 0..600 {
        let (st, t) = app.get(tok, &format!("/v1/tasks/{id}")).await;
        assert_eq!(st, 200, "{t}");
        if t["status"] != "running" && t["status"] != "queued" {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} never finished");
}

#[tokio::test]
async fn background_commands_run_as_tasks_with_logs_for_operators() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        let sid = app.create_session(&tok).await;
        let id = background(
            &app,
            &tok,
            &sid,
            "echo started; sleep 0.3; echo finished >&2",
        )
        .await;
        let task = wait_task(&app, &tok, &id).await;
        assert_eq!(task["status"], "succeeded", "{backend:?} {task}");
        assert_eq!(task["kind"], "terminal.exec");
        let content = task["result"]["content"].as_str().unwrap();
        assert!(
            content.contains("started") && content.contains("finished"),
            "{content}"
        );
        let evs = app
            .sse_until(&tok, &sid, "", None, |e| {
                e["type"] == "task.updated" && e["data"]["status"] == "succeeded"
            })
            .await;
        let updates: Vec<&str> = evs
            .iter()
            .filter(|e| e["type"] == "task.updated")
            .map(|e| e["data"]["status"].as_str().unwrap())
            .collect();
        assert_eq!(updates, ["queued", "running", "succeeded"]);
        // Members cannot read logs; operators can; other principals see nothing.
        let (st, _) = app.get(&tok, &format!("/v1/tasks/{id}/logs")).await;
        assert_eq!(st, 403);
        let ops = app.token_with("default", "ops", "operator", "1h");
        let (st, logs) = app.get(&ops, &format!("/v1/tasks/{id}/logs")).await;
        assert_eq!(st, 200, "{logs}");
        let text: String = logs["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["text"].as_str().unwrap())
            .collect();
        assert!(
            text.contains("started") && text.contains("finished"),
            "{logs}"
        );
        let bob = app.token("default", "bob");
        let (st, _) = app.get(&bob, &format!("/v1/tasks/{id}")).await;
        assert_eq!(st, 404);
        let (_, list) = app.get(&tok, &format!("/v1/tasks?session={sid}")).await;
        assert_eq!(list["items"].as_array().unwrap().len(), 1);
        let (st, _) = app.get(&tok, "/v1/tasks/not-a-task").await;
        assert_eq!(st, 400);
    }
}

#[tokio::test]
async fn cancelling_a_background_task_ends_its_tree_and_a_crash_marks_it_lost() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let id = background(
        &app,
        &tok,
        &sid,
        "sh -c 'trap \"\" TERM; sleep 60 & trap \"\" TERM; sleep 60'",
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (st, t) = app
        .post(&tok, &format!("/v1/tasks/{id}/cancel"), json!({}))
        .await;
    assert_eq!((st, t["status"].as_str()), (200, Some("cancelled")), "{t}");
    let (st, again) = app
        .post(&tok, &format!("/v1/tasks/{id}/cancel"), json!({}))
        .await;
    assert_eq!((st, again["status"].as_str()), (200, Some("cancelled")));
    assert!(
        std::fs::read_dir(app.home.join("runtime/processes"))
            .map(|d| d.count())
            .unwrap_or(0)
            == 0
    );
    // A crash while a task runs: it becomes lost, and its tree is ended.
    let id = background(&app, &tok, &sid, "sleep 60").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let app = app.restart_after_crash().await;
    let (_, t) = app.get(&tok, &format!("/v1/tasks/{id}")).await;
    assert_eq!(t["status"], "lost", "{t}");
}

//! The background runtime as a client sees it: the model's task tools
//! (`task_status`, `task_control`, `yield_until`, `task_list`), completion
//! turns, the queue's fairness across tenants, and, on PostgreSQL with two
//! instances, cancellation received by the other instance and takeover of
//! a killed instance's tasks.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::*;
use crate::tasks::{background, wait_task};

/// One direct tool call as its own turn (approvals allowed once); the
/// model view of its result, parsed when it is JSON.
async fn direct(app: &TestApp, tok: &str, sid: &str, tool: &str, args: Value) -> Value {
    let (st, b) = app
        .post(
            tok,
            &format!("/v1/sessions/{sid}/tool-calls"),
            json!({"tool": tool, "arguments": args}),
        )
        .await;
    assert_eq!(st, 202, "{b}");
    let tid = b["turn_id"].as_str().unwrap().to_owned();
    let turn = app.wait_turn(tok, sid, &tid).await;
    let out = turn["output"].as_str().unwrap_or_default();
    serde_json::from_str(out).unwrap_or_else(|_| Value::String(out.to_owned()))
}

/// Inputs of every turn started in the session so far.
async fn turn_inputs(app: &TestApp, tok: &str, sid: &str) -> Vec<String> {
    let (_, s) = app.get(tok, &format!("/v1/sessions/{sid}")).await;
    let last = s["last_seq"].as_i64().unwrap();
    let evs = app
        .sse_until(tok, sid, "", None, |e| e["seq"].as_i64() >= Some(last))
        .await;
    evs.iter()
        .filter(|e| e["type"] == "turn.started")
        .map(|e| e["data"]["input"].as_str().unwrap_or_default().to_owned())
        .collect()
}

const COMPLETION: &str = "[SYSTEM: Background task event]";

/// Whether any process's command line contains `marker`.
pub(crate) fn process_with(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(marker)
            })
            .unwrap_or(false)
    })
}

async fn gone_within(marker: &str, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if !process_with(marker) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    !process_with(marker)
}

#[tokio::test]
async fn yield_until_returns_the_end_and_consumes_the_completion() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        let sid = app.create_session(&tok).await;
        let id = background(&app, &tok, &sid, "sleep 1; echo done-marker").await;
        // Still running: a short wait times out with the current status.
        let early = direct(
            &app,
            &tok,
            &sid,
            "yield_until",
            json!({"task_id": id, "timeout_seconds": 0}),
        )
        .await;
        assert_eq!(early["timed_out"], true, "{backend:?} {early}");
        assert!(
            matches!(early["status"].as_str(), Some("queued" | "running")),
            "{early}"
        );
        let t0 = Instant::now();
        let done = direct(
            &app,
            &tok,
            &sid,
            "yield_until",
            json!({"task_id": id, "timeout_seconds": 30}),
        )
        .await;
        assert!(t0.elapsed() < Duration::from_secs(10));
        assert_eq!(done["status"], "succeeded", "{backend:?} {done}");
        assert_eq!(done["running"], false);
        assert!(done.get("timed_out").is_none(), "{done}");
        assert!(
            done["summary"].as_str().unwrap().contains("done-marker"),
            "{done}"
        );
        // The bounded model payload: no owner, scope, metadata or result refs.
        let keys: Vec<&str> = done
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "completed_at",
                "kind",
                "running",
                "started_at",
                "status",
                "summary",
                "task_id"
            ]
        );
        // The completion was consumed: no completion turn follows.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let inputs = turn_inputs(&app, &tok, &sid).await;
        assert!(
            !inputs.iter().any(|i| i.starts_with(COMPLETION)),
            "{backend:?} {inputs:?}"
        );
        // task_status and task_list (this session only) give the same view.
        let st = direct(&app, &tok, &sid, "task_status", json!({"task_id": id})).await;
        assert_eq!(st["status"], "succeeded");
        let other = app.create_session(&tok).await;
        let list = direct(&app, &tok, &other, "task_list", json!({})).await;
        assert_eq!(list["tasks"].as_array().unwrap().len(), 0, "{list}");
        let list = direct(
            &app,
            &tok,
            &sid,
            "task_list",
            json!({"include_completed": true}),
        )
        .await;
        assert_eq!(list["tasks"][0]["task_id"], id.as_str(), "{list}");
    }
}

#[tokio::test]
async fn a_task_left_to_finish_gets_exactly_one_completion_turn() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        let sid = app.create_session(&tok).await;
        let id = background(&app, &tok, &sid, "sleep 1; echo finished-here").await;
        let evs = app
            .sse_until(&tok, &sid, "", None, |e| {
                e["type"] == "turn.started"
                    && e["data"]["input"]
                        .as_str()
                        .is_some_and(|i| i.starts_with(COMPLETION))
            })
            .await;
        let started = evs.last().unwrap();
        let input = started["data"]["input"].as_str().unwrap_or_default();
        assert!(
            input.contains(&id) && input.contains("status: succeeded"),
            "{backend:?} {input}"
        );
        assert!(input.contains("finished-here"), "{input}");
        tokio::time::sleep(Duration::from_secs(3)).await;
        let inputs = turn_inputs(&app, &tok, &sid).await;
        let completions = inputs.iter().filter(|i| i.starts_with(COMPLETION)).count();
        assert_eq!(completions, 1, "{backend:?} {inputs:?}");
        // notify_on_complete=false: no completion turn.
        let sid2 = app.create_session(&tok).await;
        let (st, b) = app
            .post(
                &tok,
                &format!("/v1/sessions/{sid2}/tool-calls"),
                json!({"tool": "terminal",
                "arguments": {"command": "true", "background": true, "notify_on_complete": false}}),
            )
            .await;
        assert_eq!(st, 202, "{b}");
        let turn = app
            .wait_turn(&tok, &sid2, b["turn_id"].as_str().unwrap())
            .await;
        let out: Value = serde_json::from_str(turn["output"].as_str().unwrap()).unwrap();
        wait_task(&app, &tok, out["task_id"].as_str().unwrap()).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let inputs = turn_inputs(&app, &tok, &sid2).await;
        assert!(
            !inputs.iter().any(|i| i.starts_with(COMPLETION)),
            "{inputs:?}"
        );
    }
}

#[tokio::test]
async fn another_principals_task_answers_like_a_random_id() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let alice = app.token("default", "alice");
        let mallory = app.token("default", "mallory");
        let a_sid = app.create_session(&alice).await;
        let m_sid = app.create_session(&mallory).await;
        let id = background(&app, &alice, &a_sid, "sleep 30").await;
        let random = "task_0123456789abcdef0123456789abcdef";
        for tool in ["task_status", "task_control", "yield_until"] {
            let args = |t: &str| match tool {
                "yield_until" => json!({"task_id": t, "timeout_seconds": 1}),
                _ => json!({"task_id": t}),
            };
            let theirs = direct(&app, &mallory, &m_sid, tool, args(&id)).await;
            let unknown = direct(&app, &mallory, &m_sid, tool, args(random)).await;
            assert_eq!(
                theirs.as_str().unwrap().replace(&id, "<id>"),
                unknown.as_str().unwrap().replace(random, "<id>"),
                "{backend:?} {tool}"
            );
            assert!(theirs
                .as_str()
                .unwrap()
                .starts_with("background task not found: "));
        }
        // The REST surface agrees, and the task kept running.
        let (st, _) = app.get(&mallory, &format!("/v1/tasks/{id}")).await;
        assert_eq!(st, 404);
        let (_, t) = app.get(&alice, &format!("/v1/tasks/{id}")).await;
        assert_eq!(t["status"], "running", "{t}");
        let done = direct(
            &app,
            &alice,
            &a_sid,
            "task_control",
            json!({"task_id": id, "command": "cancel"}),
        )
        .await;
        assert_eq!(done["status"], "cancelled", "{done}");
    }
}

#[tokio::test]
async fn one_tenants_backlog_does_not_hold_another_tenants_task() {
    for backend in backends() {
        let opts = Opts {
            args: vec![
                "--max-background-tasks-tenant".into(),
                "4".into(),
                "--max-background-tasks-principal".into(),
                "4".into(),
                "--task-workers".into(),
                "8".into(),
                "--rate-limit-principal".into(),
                "100000".into(),
                "--rate-limit-ip".into(),
                "100000".into(),
                "--rate-limit-burst".into(),
                "100000".into(),
            ],
            ..Opts::default()
        };
        let app = spawn_with(backend, opts).await;
        let busy = app.token("busy", "bulk");
        let calm = app.token("calm", "one");
        // 200 tasks from one tenant, submitted from ten sessions at once.
        let sessions: Vec<String> = {
            let mut v = Vec::new();
            for _ in 0..10 {
                v.push(app.create_session(&busy).await);
            }
            v
        };
        let submit = sessions.iter().map(|sid| {
            let (app, busy) = (&app, &busy);
            async move {
                for _ in 0..20 {
                    let (st, b) = app
                        .post(busy, &format!("/v1/sessions/{sid}/tool-calls"), json!({"tool": "terminal",
                            "arguments": {"command": "sleep 30", "background": true, "notify_on_complete": false}}))
                        .await;
                    assert_eq!(st, 202, "{b}");
                    app.wait_turn(busy, sid, b["turn_id"].as_str().unwrap()).await;
                }
            }
        });
        futures_util::future::join_all(submit).await;
        let (_, list) = app.get(&busy, "/v1/tasks").await;
        let items = list["items"].as_array().unwrap();
        let running = items.iter().filter(|t| t["status"] == "running").count();
        let queued = items.iter().filter(|t| t["status"] == "queued").count();
        assert_eq!(running + queued, 200, "{backend:?}");
        assert!(running <= 4, "the tenant cap holds: {running} running");
        // The other tenant's task starts at once, ahead of the backlog.
        let sid = app.create_session(&calm).await;
        let id = background(&app, &calm, &sid, "sleep 30").await;
        let t0 = Instant::now();
        let mut status = Value::Null;
        while t0.elapsed() < Duration::from_secs(5) {
            let (_, t) = app.get(&calm, &format!("/v1/tasks/{id}")).await;
            status = t["status"].clone();
            if status == "running" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(status, "running", "{backend:?}");
        let text = app.metrics_text().await;
        assert!(
            text.contains("demiurge_task_claim_latency_seconds_count"),
            "{text}"
        );
        assert!(text.contains("demiurge_tasks_queued"), "{text}");
    }
}

#[tokio::test]
async fn a_cancel_sent_to_the_other_instance_ends_the_tree() {
    if !backends().contains(&Backend::Postgres) {
        return;
    }
    let a = spawn_app(Backend::Postgres).await;
    let b = a.spawn_peer().await;
    let tok = a.token("default", "alice");
    let sid = a.create_session(&tok).await;
    let marker = format!("61.{}", std::process::id());
    let id = background(
        &a,
        &tok,
        &sid,
        &format!("sh -c 'trap \"\" TERM; sleep {marker} & trap \"\" TERM; wait'"),
    )
    .await;
    let t0 = Instant::now();
    while !process_with(&marker) && t0.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(process_with(&marker), "the command never started");
    // The cancel goes to B; A runs the task.
    let t0 = Instant::now();
    let (st, t) = b
        .post(&tok, &format!("/v1/tasks/{id}/cancel"), json!({}))
        .await;
    assert_eq!(
        (st, t["status"].as_str()),
        (200, Some("cancelled")),
        "{t}\n{}",
        a.log()
    );
    assert!(
        gone_within(&marker, Duration::from_secs(10)).await,
        "the tree survived the cancel"
    );
    assert!(t0.elapsed() < Duration::from_secs(15));
    let (_, seen) = a.get(&tok, &format!("/v1/tasks/{id}")).await;
    assert_eq!(seen["status"], "cancelled");
    // A turn's cancel reaches the instance running it too.
    let turn = a
        .start_turn(
            &tok,
            &sid,
            json!({"input": "wait", "script": [
            {"tool_calls": [{"name": "clarify", "arguments": {"question": "hold on?"}}]}]}),
        )
        .await;
    a.sse_until(&tok, &sid, "", None, |e| e["type"] == "clarify.requested")
        .await;
    let (st, t) = b
        .post(
            &tok,
            &format!("/v1/sessions/{sid}/turns/{turn}/cancel"),
            json!({}),
        )
        .await;
    assert_eq!((st, t["status"].as_str()), (200, Some("cancelled")), "{t}");
    let ended = a.wait_turn(&tok, &sid, &turn).await;
    assert_eq!(ended["status"], "cancelled");
}

#[tokio::test]
async fn a_killed_instances_tasks_are_taken_over_as_lost_and_their_processes_end() {
    if !backends().contains(&Backend::Postgres) {
        return;
    }
    let opts = Opts {
        args: vec!["--task-lease".into(), "2s".into()],
        ..Opts::default()
    };
    let mut a = spawn_with(Backend::Postgres, opts).await;
    let b = a.spawn_peer().await;
    let tok = a.token("default", "alice");
    let sid = a.create_session(&tok).await;
    let marker = format!("62.{}", std::process::id());
    let id = background(&a, &tok, &sid, &format!("sleep {marker}")).await;
    let t0 = Instant::now();
    while !process_with(&marker) && t0.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(process_with(&marker), "the command never started");
    // Let the process record reach the row, then kill -9 the instance.
    tokio::time::sleep(Duration::from_millis(500)).await;
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let mut status = Value::Null;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(20) {
        let (_, t) = b.get(&tok, &format!("/v1/tasks/{id}")).await;
        status = t["status"].clone();
        if status == "lost" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, "lost", "{}", b.log());
    assert!(
        gone_within(&marker, Duration::from_secs(10)).await,
        "a process survived the takeover"
    );
}

#[tokio::test]
async fn an_allow_session_grant_holds_on_every_instance_and_a_revocation_reaches_all() {
    let backends = backends();
    for backend in backends {
        let a = spawn_app(backend).await;
        // On PostgreSQL the second instance shares the database; on SQLite
        // one instance checks the same rules.
        let b = if backend == Backend::Postgres {
            Some(a.spawn_peer().await)
        } else {
            None
        };
        let b = b.as_ref().unwrap_or(&a);
        let tok = a.token("default", "alice");
        let sid = a.create_session(&tok).await;
        let write = |name: &str| {
            json!([{"tool_calls": [{"name": "write_file",
                "arguments": {"path": name, "content": "x"}}]}, {"content": "done"}])
        };
        let first = run_script(&a, &tok, &sid, write("one.txt"), "allow_session").await;
        assert!(types(&first).contains(&"approval.requested"), "{backend:?}");
        // The grant holds on the other instance: no question asked.
        let second = run_script(b, &tok, &sid, write("one.txt"), "deny").await;
        assert!(
            !types(&second).contains(&"approval.requested"),
            "{backend:?} {:?}",
            types(&second)
        );
        let result = second.iter().find(|e| e["type"] == "tool.result").unwrap();
        assert_eq!(result["data"]["status"], "succeeded", "{result}");
        // Another principal cannot revoke it (their view: no such session).
        let mallory = a.token("default", "mallory");
        let (st, _) = b
            .client
            .delete(b.url(&format!("/v1/sessions/{sid}/approvals")))
            .bearer_auth(&mallory)
            .send()
            .await
            .map(|r| (r.status().as_u16(), ()))
            .unwrap();
        assert_eq!(st, 404);
        // Revoked on one instance, asked again on the other.
        let r = b
            .client
            .delete(b.url(&format!("/v1/sessions/{sid}/approvals")))
            .bearer_auth(&tok)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["revoked"], 1, "{body}");
        let third = run_script(&a, &tok, &sid, write("one.txt"), "deny").await;
        assert!(types(&third).contains(&"approval.requested"), "{backend:?}");
    }
}

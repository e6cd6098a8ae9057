//! Who may approve what, and redaction of background work: a tenant policy
//! decides which risks members approve themselves; requests above it wait
//! for a tenant operator (REST and WebSocket alike); other tenants see
//! nothing; background task results, logs and events never carry a secret.

use futures_util::SinkExt;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use crate::helpers::*;
use crate::streams::{ws_connect, ws_read_until};
use crate::tasks::{background, wait_task};

/// Call one tool through the dispatcher; returns its turn id and the
/// `approval.requested` event it raises.
async fn ask(app: &TestApp, tok: &str, sid: &str, tool: &str, args: Value) -> (String, Value) {
    let (st, b) = app
        .post(
            tok,
            &format!("/v1/sessions/{sid}/tool-calls"),
            json!({"tool": tool, "arguments": args}),
        )
        .await;
    assert_eq!(st, 202, "{b}");
    let tid = b["turn_id"].as_str().unwrap().to_owned();
    let evs = app
        .sse_until(tok, sid, "", None, |e| {
            e["turn_id"] == tid.as_str() && (e["type"] == "approval.requested" || is_terminal(e))
        })
        .await;
    let ev = evs.last().cloned().unwrap_or(Value::Null);
    assert_eq!(
        ev["type"], "approval.requested",
        "no approval asked: {evs:?}"
    );
    (tid, ev)
}

fn approval_id(ev: &Value) -> String {
    ev["data"]["approval_id"].as_str().unwrap().to_owned()
}

async fn decide(app: &TestApp, tok: &str, id: &str, decision: &str) -> (u16, Value) {
    app.post(
        tok,
        &format!("/v1/approvals/{id}"),
        json!({"decision": decision}),
    )
    .await
}

async fn pending(app: &TestApp, tok: &str) -> Vec<Value> {
    let (st, list) = app.get(tok, "/v1/approvals?state=pending").await;
    assert_eq!(st, 200, "{list}");
    list["items"].as_array().unwrap().clone()
}

fn has(list: &[Value], id: &str) -> Option<Value> {
    list.iter().find(|a| a["id"] == id).cloned()
}

/// The tool result of a turn, once the turn is over.
async fn result_of(app: &TestApp, tok: &str, sid: &str, tid: &str) -> Value {
    app.wait_turn(tok, sid, tid).await;
    let evs = app
        .sse_until(tok, sid, "", None, |e| {
            e["turn_id"] == tid && e["type"] == "tool.result"
        })
        .await;
    evs.last().unwrap()["data"].clone()
}

fn workspace(app: &TestApp, tenant: &str, principal: &str) -> std::path::PathBuf {
    app.home
        .join("tenants")
        .join(tenant)
        .join("workspaces")
        .join(principal)
        .join("default")
}

#[tokio::test]
async fn a_members_critical_request_waits_for_an_operator_of_its_own_tenant() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let alice = app.token("acme", "alice");
        let bob = app.token("acme", "bob");
        let olga = app.token_with("acme", "olga", "operator", "1h");
        let mallory = app.token_with("evil", "mallory", "operator", "1h");
        let sid = app.create_session(&alice).await;
        std::fs::write(workspace(&app, "acme", "alice").join(".env"), "A=1\n").unwrap();

        let (tid, ev) = ask(
            &app,
            &alice,
            &sid,
            "terminal",
            json!({"command": "chmod 600 .env"}),
        )
        .await;
        assert_eq!(ev["data"]["risk"], "critical", "{backend:?} {ev}");
        assert_eq!(ev["data"]["requires"], "operator", "{ev}");
        let id = approval_id(&ev);

        // The member sees its request, marked as needing an operator, and may not decide it.
        let mine =
            has(&pending(&app, &alice).await, &id).expect("the member lists its own request");
        assert_eq!(mine["requires"], "operator");
        assert_eq!(mine["principal"], "alice");
        let (st, body) = decide(&app, &alice, &id, "allow_once").await;
        assert_eq!(st, 403, "{body}");
        assert_eq!(body["error"]["code"], "forbidden");
        let msg = body["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains("operator") && msg.contains("critical"),
            "{msg}"
        );
        let (st, body) = decide(&app, &alice, &id, "deny").await;
        assert_eq!(st, 403, "a member cannot deny it either: {body}");

        // The WebSocket frame path applies the same rule.
        let mut ws = ws_connect(&app, &sid, "", Some(&alice)).await;
        ws.send(Message::Text(
            json!({"type": "approval", "approval_id": id, "decision": "allow_once"})
                .to_string()
                .into(),
        ))
        .await
        .unwrap();
        let frames = ws_read_until(&mut ws, |e| {
            e["type"] == "error" || e["type"] == "approval.ack"
        })
        .await;
        let last = frames.last().unwrap();
        assert_eq!(last["type"], "error", "{last}");
        assert_eq!(last["code"], "forbidden", "{last}");
        drop(ws);

        // Another member of the tenant, and an operator of another tenant, see nothing.
        assert!(has(&pending(&app, &bob).await, &id).is_none());
        let (st, body) = decide(&app, &bob, &id, "allow_once").await;
        assert_eq!(st, 404, "{body}");
        assert!(has(&pending(&app, &mallory).await, &id).is_none());
        let (st, foreign) = decide(&app, &mallory, &id, "allow_once").await;
        assert_eq!(st, 404, "{foreign}");
        let (_, missing) = decide(
            &app,
            &mallory,
            &uuid::Uuid::new_v4().to_string(),
            "allow_once",
        )
        .await;
        assert_eq!(
            foreign, missing,
            "another tenant's approval looks exactly like a missing one"
        );

        // Still pending; the tenant's operator sees it and decides it.
        let queued = has(&pending(&app, &olga).await, &id).expect("the operator's queue has it");
        assert_eq!(queued["principal"], "alice");
        assert_eq!(queued["state"], "pending");
        let (st, decided) = decide(&app, &olga, &id, "allow_once").await;
        assert_eq!(st, 200, "{decided}");
        assert_eq!(decided["state"], "allowed");
        assert_eq!(decided["decided_by"], "olga");
        let result = result_of(&app, &alice, &sid, &tid).await;
        assert_eq!(result["status"], "succeeded", "{result}");
        assert_eq!(mode(&workspace(&app, "acme", "alice").join(".env")), 0o600);
        let evs = app
            .sse_until(&alice, &sid, "", None, |e| e["type"] == "approval.resolved")
            .await;
        let resolved = evs.last().unwrap();
        assert_eq!(resolved["data"]["decided_by"], "olga", "{resolved}");
        let (st, again) = decide(&app, &olga, &id, "deny").await;
        assert_eq!(st, 409, "{again}");
        let (_, all) = app.get(&alice, "/v1/approvals").await;
        let settled = has(all["items"].as_array().unwrap(), &id).unwrap();
        assert_eq!(settled["state"], "allowed");
        assert_eq!(settled["decided_by"], "olga");
    }
}

#[tokio::test]
async fn a_member_decides_its_own_high_risk_request_and_operators_do_not_see_it() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let alice = app.token("acme", "alice");
        let olga = app.token_with("acme", "olga", "operator", "1h");
        let ada = app.token_with("acme", "ada", "admin", "1h");
        let sid = app.create_session(&alice).await;
        let (tid, ev) = ask(
            &app,
            &alice,
            &sid,
            "terminal",
            json!({"command": "touch made.txt"}),
        )
        .await;
        assert_eq!(ev["data"]["risk"], "high", "{backend:?} {ev}");
        assert_eq!(ev["data"]["requires"], "owner");
        let id = approval_id(&ev);
        // Not the operators' business: not in their queue, and it looks missing to them.
        assert!(has(&pending(&app, &olga).await, &id).is_none());
        assert!(has(&pending(&app, &ada).await, &id).is_none());
        let (st, _) = decide(&app, &olga, &id, "deny").await;
        assert_eq!(st, 404);
        let (st, decided) = decide(&app, &alice, &id, "allow_once").await;
        assert_eq!(st, 200, "{decided}");
        assert_eq!(decided["requires"], "owner");
        assert_eq!(decided["decided_by"], "alice");
        assert_eq!(
            result_of(&app, &alice, &sid, &tid).await["status"],
            "succeeded"
        );
        assert!(workspace(&app, "acme", "alice").join("made.txt").exists());

        // An operator's own critical request is its own to decide.
        let osid = app.create_session(&olga).await;
        std::fs::write(workspace(&app, "acme", "olga").join(".env"), "B=2\n").unwrap();
        let (otid, oev) = ask(
            &app,
            &olga,
            &osid,
            "terminal",
            json!({"command": "chmod 600 .env"}),
        )
        .await;
        assert_eq!(oev["data"]["requires"], "operator");
        let (st, body) = decide(&app, &olga, &approval_id(&oev), "allow_once").await;
        assert_eq!(st, 200, "{body}");
        assert_eq!(
            result_of(&app, &olga, &osid, &otid).await["status"],
            "succeeded"
        );
    }
}

#[tokio::test]
async fn an_admin_sets_the_tenant_policy_and_new_requests_follow_it() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let alice = app.token("acme", "alice");
        let olga = app.token_with("acme", "olga", "operator", "1h");
        let ada = app.token_with("acme", "ada", "admin", "1h");
        let eve = app.token_with("evil", "eve", "admin", "1h");

        // Reading: operators and admins; members are refused.
        let (st, _) = app.get(&alice, "/v1/tenant/policy").await;
        assert_eq!(st, 403, "{backend:?}");
        let (st, p) = app.get(&olga, "/v1/tenant/policy").await;
        assert_eq!(st, 200, "{p}");
        assert_eq!(p["member_max_risk"], "high");
        assert_eq!(p["default"], true);
        assert_eq!(p["tenant"], "acme");

        // Writing: admins only, known values only.
        let put = |tok: String, body: Value| {
            let app = &app;
            async move {
                let r = app
                    .client
                    .put(app.url("/v1/tenant/policy"))
                    .bearer_auth(tok)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                let st = r.status().as_u16();
                (st, r.json::<Value>().await.unwrap_or(Value::Null))
            }
        };
        let (st, _) = put(alice.clone(), json!({"member_max_risk": "critical"})).await;
        assert_eq!(st, 403);
        let (st, _) = put(olga.clone(), json!({"member_max_risk": "critical"})).await;
        assert_eq!(st, 403);
        let (st, b) = put(ada.clone(), json!({"member_max_risk": "severe"})).await;
        assert_eq!(
            (st, b["error"]["code"].as_str()),
            (400, Some("invalid_request")),
            "{b}"
        );
        let (st, _) = put(
            ada.clone(),
            json!({"member_max_risk": "low", "tenant": "evil"}),
        )
        .await;
        assert_eq!(st, 400, "no field can address another tenant");
        let (st, set) = put(ada.clone(), json!({"member_max_risk": "low"})).await;
        assert_eq!(st, 200, "{set}");
        assert_eq!(set["member_max_risk"], "low");
        assert_eq!(set["updated_by"], "ada");
        let (_, p) = app.get(&olga, "/v1/tenant/policy").await;
        assert_eq!(
            (p["member_max_risk"].as_str(), p["default"].as_bool()),
            (Some("low"), Some(false))
        );
        // The other tenant keeps its own (default) policy.
        let (_, other) = app.get(&eve, "/v1/tenant/policy").await;
        assert_eq!(
            (other["tenant"].as_str(), other["member_max_risk"].as_str()),
            (Some("evil"), Some("high"))
        );

        // A medium-risk request now needs an operator.
        let sid = app.create_session(&alice).await;
        let search = json!({"query": "anything"});
        let (tid, ev) = ask(&app, &alice, &sid, "session_search", search.clone()).await;
        assert_eq!(ev["data"]["risk"], "medium", "{ev}");
        assert_eq!(ev["data"]["requires"], "operator");
        let id = approval_id(&ev);
        let (st, body) = decide(&app, &alice, &id, "allow_once").await;
        assert_eq!(st, 403, "{body}");
        assert!(has(&pending(&app, &olga).await, &id).is_some());
        let (st, body) = decide(&app, &olga, &id, "allow_once").await;
        assert_eq!(st, 200, "{body}");
        assert_eq!(
            result_of(&app, &alice, &sid, &tid).await["status"],
            "succeeded"
        );

        // Back to the default: the member decides the same kind of request itself.
        let (st, _) = put(ada.clone(), json!({"member_max_risk": "high"})).await;
        assert_eq!(st, 200);
        let (tid, ev) = ask(&app, &alice, &sid, "session_search", search).await;
        assert_eq!(ev["data"]["requires"], "owner");
        let (st, body) = decide(&app, &alice, &approval_id(&ev), "allow_once").await;
        assert_eq!(st, 200, "{body}");
        assert_eq!(
            result_of(&app, &alice, &sid, &tid).await["status"],
            "succeeded"
        );
    }
}

#[tokio::test]
async fn an_owners_session_allow_does_not_cover_a_request_that_now_needs_an_operator() {
    let app = spawn_app(Backend::Sqlite).await;
    let alice = app.token("acme", "alice");
    let olga = app.token_with("acme", "olga", "operator", "1h");
    let ada = app.token_with("acme", "ada", "admin", "1h");
    let sid = app.create_session(&alice).await;
    let args = json!({"path": "c.txt", "content": "same shape"});
    let (tid, ev) = ask(&app, &alice, &sid, "write_file", args.clone()).await;
    let (st, _) = decide(&app, &alice, &approval_id(&ev), "allow_session").await;
    assert_eq!(st, 200);
    assert_eq!(
        result_of(&app, &alice, &sid, &tid).await["status"],
        "succeeded"
    );
    let r = app
        .client
        .put(app.url("/v1/tenant/policy"))
        .bearer_auth(&ada)
        .json(&json!({"member_max_risk": "low"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // The same request again asks, and only an operator can answer it.
    let (tid, ev) = ask(&app, &alice, &sid, "write_file", args).await;
    assert_eq!(ev["data"]["requires"], "operator");
    let id = approval_id(&ev);
    assert_eq!(decide(&app, &alice, &id, "allow_session").await.0, 403);
    assert_eq!(decide(&app, &olga, &id, "deny").await.0, 200);
    assert_eq!(
        result_of(&app, &alice, &sid, &tid).await["status"],
        "denied"
    );
}

#[tokio::test]
async fn background_results_logs_and_events_never_carry_a_secret() {
    // Neither secret appears whole in the command: the output assembles them.
    const TOKEN: &str = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const PASSWORD: &str = "hunter2-bg-SECRET-77x";
    let command = "echo visible-start; printf 'ghp_ABCDEFGHIJ'; sleep 0.3; \
                   printf 'KLMNOPQRSTUVWXYZ0123456789\\n'; \
                   printf 'pass%s=%s%s\\n' word hunter2-bg- SECRET-77x; \
                   sleep 0.3; printf 'again %s%s\\n' hunter2-bg- SECRET-77x >&2; echo visible-end";
    for backend in backends() {
        let app = spawn_app(backend).await;
        let alice = app.token("default", "alice");
        let ops = app.token_with("default", "ops", "operator", "1h");
        let sid = app.create_session(&alice).await;
        let id = background(&app, &alice, &sid, command).await;
        let task = wait_task(&app, &alice, &id).await;
        assert_eq!(task["status"], "succeeded", "{backend:?} {task}");
        let content = task["result"]["content"].as_str().unwrap();
        assert!(
            content.contains("visible-start") && content.contains("visible-end"),
            "{content}"
        );
        assert!(
            content.contains("<redacted"),
            "the secrets were there and were redacted: {content}"
        );

        let (st, logs) = app.get(&ops, &format!("/v1/tasks/{id}/logs")).await;
        assert_eq!(st, 200, "{logs}");
        let log_text: String = logs["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["text"].as_str().unwrap())
            .collect();
        assert!(
            log_text.contains("visible-start") && log_text.contains("visible-end"),
            "{log_text}"
        );
        assert!(log_text.contains("<redacted"), "{log_text}");

        let (_, list) = app.get(&alice, &format!("/v1/tasks?session={sid}")).await;
        let evs = app
            .sse_until(&alice, &sid, "", None, |e| {
                e["type"] == "task.updated" && e["data"]["status"] == "succeeded"
            })
            .await;
        for (what, text) in [
            ("task", task.to_string()),
            ("logs", logs.to_string()),
            ("task list", list.to_string()),
            ("events", serde_json::to_string(&evs).unwrap()),
        ] {
            for secret in [TOKEN, &TOKEN[4..], PASSWORD] {
                assert!(
                    !text.contains(secret),
                    "{backend:?}: {secret} in the {what}: {text}"
                );
            }
        }
        if backend == Backend::Sqlite {
            // Nothing the server stored (database, WAL, logs) has it either;
            // the raw artifacts are private files outside this part.
            let home = app.home.clone();
            let app = app.restart_after_crash().await;
            for secret in [TOKEN, PASSWORD] {
                let scanned = assert_secret_absent(&home, secret, &["workspaces", "artifacts"]);
                assert!(scanned >= 3, "scanned {scanned} files");
            }
            drop(app);
        }
    }
}

#[tokio::test]
async fn live_output_redacts_a_token_split_across_reads() {
    const TOKEN: &str = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let app = spawn_app(Backend::Sqlite).await;
    let alice = app.token("default", "alice");
    let sid = app.create_session(&alice).await;
    let command = "echo before; printf 'ghp_ABCDEFGHIJ'; sleep 0.3; \
                   printf 'KLMNOPQRSTUVWXYZ0123456789\\n'; echo after";
    let evs = run_script(
        &app,
        &alice,
        &sid,
        json!([{"tool_calls": [{"name": "terminal", "arguments": {"command": command}}]}, {"content": "done"}]),
        "allow_once",
    )
    .await;
    let result = evs.iter().find(|e| e["type"] == "tool.result").unwrap();
    assert_eq!(result["data"]["status"], "succeeded", "{result}");
    let live: String = evs
        .iter()
        .filter(|e| e["type"] == "tool.output")
        .map(|e| e["data"]["text"].as_str().unwrap_or(""))
        .collect();
    assert!(
        live.contains("before") && live.contains("<redacted"),
        "{live}"
    );
    let all = serde_json::to_string(&evs).unwrap();
    for leaked in [TOKEN, &TOKEN[4..]] {
        assert!(!all.contains(leaked), "{leaked} in the events: {all}");
    }
    // The command itself shows the halves; the output shows neither.
    let outputs = serde_json::to_string(
        &evs.iter()
            .filter(|e| e["type"] == "tool.output" || e["type"] == "tool.result")
            .collect::<Vec<_>>(),
    )
    .unwrap();
    for half in ["ghp_ABCDEFGHIJ", "KLMNOPQRSTUVWXYZ0123456789"] {
        assert!(!outputs.contains(half), "{half} in the output: {outputs}");
    }
}

#[tokio::test]
async fn the_server_default_policy_applies_until_an_admin_sets_one() {
    let opts = Opts {
        args: vec!["--member-max-risk".into(), "low".into()],
        ..Opts::default()
    };
    let app = spawn_with(Backend::Sqlite, opts).await;
    let olga = app.token_with("acme", "olga", "operator", "1h");
    let (st, p) = app.get(&olga, "/v1/tenant/policy").await;
    assert_eq!(st, 200, "{p}");
    assert_eq!(p["member_max_risk"], "low", "{p}");
    let bad = std::process::Command::new(BIN)
        .args(["serve", "--member-max-risk", "extreme", "--home"])
        .arg(app.home.join("unused"))
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("extreme"));
}

//! No tenant can hurt the others' service: output quotas per command and per
//! tenant (terminal artifacts and task logs), caps on running background
//! tasks, the header-read timeout and connection cap against slowloris, and
//! `Retry-After` on every 429.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::*;

const MIB: u64 = 1024 * 1024;

fn term(args: Value) -> Value {
    json!([{"tool_calls": [{"name": "terminal", "arguments": args}]}, {"content": "done"}])
}

/// One terminal call in a scripted turn, approvals allowed: its `tool.result` event.
async fn terminal(app: &TestApp, tok: &str, sid: &str, args: Value) -> Value {
    let all = run_script(app, tok, sid, term(args), "allow_once").await;
    all.iter()
        .find(|e| e["type"] == "tool.result")
        .cloned()
        .unwrap_or_else(|| panic!("no tool.result in {:?}", types(&all)))
}

fn content(res: &Value) -> String {
    match &res["data"]["content"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn task_id(res: &Value) -> String {
    let content = &res["data"]["content"];
    let parsed: Value = match content {
        Value::String(s) => serde_json::from_str(s).unwrap_or(Value::Null),
        other => other.clone(),
    };
    parsed["task_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no task id: {res}"))
        .to_owned()
}

/// Size of the stdout artifact named in a terminal result.
fn artifact_size(app: &TestApp, tenant: &str, res: &Value) -> u64 {
    let rel = res["data"]["data"]["output_artifact"]["stdout"]
        .as_str()
        .unwrap_or_else(|| panic!("no artifact: {res}"));
    let path = app.home.join("runtime/artifacts").join(tenant).join(rel);
    std::fs::metadata(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .len()
}

async fn wait_task(app: &TestApp, tok: &str, id: &str) -> Value {
    for _ in 0..600 {
        let (st, t) = app.get(tok, &format!("/v1/tasks/{id}")).await;
        assert_eq!(st, 200, "{t}");
        if t["status"] != "running" {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} never finished");
}

async fn healthy(app: &TestApp) {
    let r = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(r.status(), 200, "{}", app.log());
}

#[tokio::test]
async fn a_command_stops_at_its_artifact_cap_and_fails_naming_the_quota() {
    for backend in backends() {
        let opts = Opts {
            args: vec!["--artifact-max-bytes".into(), "1MiB".into()],
            ..Opts::default()
        };
        let app = spawn_with(backend, opts).await;
        let tok = app.token("default", "alice");
        let sid = app.create_session(&tok).await;
        // Read-only, so it runs without approval: ~889 MB of output uncapped.
        let started = Instant::now();
        let res = terminal(&app, &tok, &sid, json!({"command": "seq 1 100000000"})).await;
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{backend:?}: took {:?}",
            started.elapsed()
        );
        assert_eq!(res["data"]["status"], "failed", "{backend:?} {res}");
        let text = content(&res);
        assert!(
            text.contains("quota_exceeded")
                && text.contains("1048576 bytes")
                && text.contains("--artifact-max-bytes"),
            "{text}"
        );
        let data = &res["data"]["data"];
        assert_eq!(data["output_artifact"]["truncated"], true, "{data}");
        assert!(data["quota_exceeded"].as_str().is_some(), "{data}");
        let size = artifact_size(&app, "default", &res);
        assert!(size <= MIB && size > MIB - 64 * 1024, "{backend:?}: {size}");
        // The tail is still there for the model.
        assert!(text.contains("stdout:"), "{text}");
        // The same in the background: the task fails with the quota message.
        let res = terminal(
            &app,
            &tok,
            &sid,
            // No completion turn: the session goes on with the next command.
            json!({"command": "seq 1 100000000", "background": true, "timeout_seconds": 60,
                "notify_on_complete": false}),
        )
        .await;
        assert_eq!(res["data"]["status"], "succeeded", "{res}");
        let task = wait_task(&app, &tok, &task_id(&res)).await;
        assert_eq!(task["status"], "failed", "{backend:?} {task}");
        let result = task["result"].to_string();
        assert!(result.contains("--artifact-max-bytes"), "{result}");
        // The server is fine, and ordinary commands still run.
        healthy(&app).await;
        let res = terminal(&app, &tok, &sid, json!({"command": "echo still-here"})).await;
        assert_eq!(res["data"]["status"], "succeeded", "{res}");
        assert!(content(&res).contains("still-here"));
    }
}

#[tokio::test]
async fn a_tenant_stops_at_its_storage_cap_and_other_tenants_do_not_notice() {
    for backend in backends() {
        let opts = Opts {
            args: vec![
                "--artifact-max-bytes".into(),
                "1MiB".into(),
                "--tenant-storage-max-bytes".into(),
                "1536KiB".into(),
            ],
            ..Opts::default()
        };
        let app = spawn_with(backend, opts).await;
        let filler = app.token("acme", "alice");
        let neighbour = app.token("other", "bob");
        let sid = app.create_session(&filler).await;
        let other_sid = app.create_session(&neighbour).await;
        let first = terminal(&app, &filler, &sid, json!({"command": "seq 1 1000000"})).await;
        assert_eq!(first["data"]["status"], "failed", "{first}");
        assert!(content(&first).contains("--artifact-max-bytes"));
        // Half a MiB is left for the tenant: the next command stops there.
        let second = terminal(&app, &filler, &sid, json!({"command": "seq 1 1000000"})).await;
        assert_eq!(second["data"]["status"], "failed", "{second}");
        let text = content(&second);
        assert!(
            text.contains("--tenant-storage-max-bytes") && text.contains("1572864 bytes"),
            "{backend:?} {text}"
        );
        let total = artifact_size(&app, "acme", &first) + artifact_size(&app, "acme", &second);
        assert!(total <= 1536 * 1024, "{total}");
        // Nothing more is started for the full tenant.
        let third = terminal(&app, &filler, &sid, json!({"command": "echo hi"})).await;
        assert_eq!(third["data"]["status"], "failed", "{third}");
        assert!(
            content(&third).contains("--tenant-storage-max-bytes")
                && content(&third).contains("not started"),
            "{third}"
        );
        // Another tenant is untouched.
        let other = terminal(
            &app,
            &neighbour,
            &other_sid,
            json!({"command": "echo fine"}),
        )
        .await;
        assert_eq!(other["data"]["status"], "succeeded", "{other}");
        // Usage is counted again from disk after a restart.
        let app = app.restart_after_crash().await;
        let again = terminal(&app, &filler, &sid, json!({"command": "echo hi"})).await;
        assert_eq!(again["data"]["status"], "failed", "{backend:?} {again}");
        assert!(content(&again).contains("--tenant-storage-max-bytes"));
        let other = terminal(
            &app,
            &neighbour,
            &other_sid,
            json!({"command": "echo fine"}),
        )
        .await;
        assert_eq!(other["data"]["status"], "succeeded", "{other}");
        healthy(&app).await;
    }
}

#[tokio::test]
async fn running_background_tasks_are_capped_and_the_rest_wait_in_a_bounded_queue() {
    for backend in backends() {
        let opts = Opts {
            args: vec![
                "--max-background-tasks-principal".into(),
                "2".into(),
                "--max-background-tasks-tenant".into(),
                "3".into(),
                "--max-queued-tasks-tenant".into(),
                "2".into(),
            ],
            ..Opts::default()
        };
        let app = spawn_with(backend, opts).await;
        let alice = app.token("default", "alice");
        let bob = app.token("default", "bob");
        let carol = app.token("default", "carol");
        let stranger = app.token("other", "alice");
        let sleep = json!({"command": "sleep 60", "background": true, "timeout_seconds": 60});
        let a_sid = app.create_session(&alice).await;
        let mut alices = Vec::new();
        // Two run (the principal cap); the third waits in the queue.
        for i in 0..3 {
            let res = terminal(&app, &alice, &a_sid, sleep.clone()).await;
            assert_eq!(res["data"]["status"], "succeeded", "{res}");
            alices.push(task_id(&res));
            if i < 2 {
                let st = task_status_becomes(&app, &alice, &alices[i], "running").await;
                assert_eq!(st, "running");
            }
        }
        let (_, third) = app.get(&alice, &format!("/v1/tasks/{}", alices[2])).await;
        assert_eq!(third["status"], "queued", "{backend:?} {third}");
        // Bob fills the tenant's running cap.
        let b_sid = app.create_session(&bob).await;
        let res = terminal(&app, &bob, &b_sid, sleep.clone()).await;
        let bobs = task_id(&res);
        assert_eq!(
            task_status_becomes(&app, &bob, &bobs, "running").await,
            "running"
        );
        // Carol's task waits for the tenant's running cap; then the
        // tenant's queue is full: her next is refused, and not recorded.
        let c_sid = app.create_session(&carol).await;
        let res = terminal(&app, &carol, &c_sid, sleep.clone()).await;
        let carols = task_id(&res);
        let res = terminal(&app, &carol, &c_sid, sleep.clone()).await;
        assert_eq!(res["data"]["status"], "denied", "{res}");
        assert!(content(&res).contains("--max-queued-tasks-tenant"), "{res}");
        let (_, list) = app.get(&carol, "/v1/tasks").await;
        let items = list["items"].as_array().unwrap();
        assert_eq!(items.len(), 1, "{list}");
        assert_eq!(items[0]["status"], "queued", "{list}");
        // Another tenant has its own caps: its task runs at once.
        let s_sid = app.create_session(&stranger).await;
        let res = terminal(&app, &stranger, &s_sid, sleep.clone()).await;
        let theirs = task_id(&res);
        assert_eq!(
            task_status_becomes(&app, &stranger, &theirs, "running").await,
            "running"
        );
        // Cancelling one frees its slot: the queued task starts.
        let (st, t) = app
            .post(
                &alice,
                &format!("/v1/tasks/{}/cancel", alices[0]),
                json!({}),
            )
            .await;
        assert_eq!((st, t["status"].as_str()), (200, Some("cancelled")), "{t}");
        assert_eq!(
            task_status_becomes(&app, &alice, &alices[2], "running").await,
            "running",
            "{backend:?}"
        );
        // Oldest first: Carol's still waits, and the queue has room again.
        let (_, c) = app.get(&carol, &format!("/v1/tasks/{carols}")).await;
        assert_eq!(c["status"], "queued", "{c}");
        let res = terminal(&app, &carol, &c_sid, sleep.clone()).await;
        assert_eq!(res["data"]["status"], "succeeded", "{backend:?} {res}");
        healthy(&app).await;
    }
}

/// Polls a task until it has `want` (or 15 s pass); its last status.
async fn task_status_becomes(app: &TestApp, tok: &str, id: &str, want: &str) -> String {
    let mut last = String::new();
    for _ in 0..300 {
        let (_, t) = app.get(tok, &format!("/v1/tasks/{id}")).await;
        last = t["status"].as_str().unwrap_or_default().to_owned();
        if last == want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    last
}

/// Reads until the peer closes (EOF or reset); `None` if still open at `until`.
async fn closed_at(
    mut socket: tokio::net::TcpStream,
    until: tokio::time::Instant,
) -> Option<Instant> {
    let mut buf = [0u8; 512];
    loop {
        match tokio::time::timeout_at(until, socket.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(Instant::now()),
            Ok(Ok(_)) => continue,
        }
    }
}

#[tokio::test]
async fn slowloris_sockets_are_not_held_and_the_server_keeps_serving() {
    let opts = Opts {
        args: vec![
            "--max-connections".into(),
            "100".into(),
            // Long enough for the pre-connected client below to send its
            // headers after the 300 attack sockets are open, even on a
            // loaded machine; short enough to see the held ones closed.
            "--header-read-timeout".into(),
            "3s".into(),
        ],
        ..Opts::default()
    };
    let app = spawn_with(Backend::Sqlite, opts).await;
    let addr = app.addr.clone();
    // A client that is already connected before the attack.
    let mut client = tokio::net::TcpStream::connect(&addr).await.unwrap();
    // Each socket is timed from its own connect and watched from then on:
    // on a loaded machine opening 300 sockets, or the reply to the served
    // client below, can take longer than any window measured from the start.
    let until = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut sockets = Vec::new();
    for _ in 0..300 {
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let opened = Instant::now();
        // Headers that never finish.
        let _ = s
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            .await;
        sockets.push(tokio::spawn(
            async move { (opened, closed_at(s, until).await) },
        ));
    }
    // The connected client is served during the attack.
    client
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut reply = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), client.read_to_end(&mut reply))
        .await
        .expect("the served client got no reply")
        .unwrap();
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    // Every attack socket is closed: those past the cap at once, the rest
    // when their headers time out.
    let closes: Vec<(Instant, Option<Instant>)> = futures_util::future::join_all(sockets)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    let open = closes.iter().filter(|(_, c)| c.is_none()).count();
    assert_eq!(open, 0, "{open} slowloris sockets were still held");
    // Refused at once means closed well before the 3 s header timeout could
    // have fired for that socket; held ones close only when it does.
    let held_for: Vec<Duration> = closes
        .iter()
        .filter_map(|(opened, c)| c.map(|c| c.saturating_duration_since(*opened)))
        .collect();
    let prompt = held_for
        .iter()
        .filter(|d| **d < Duration::from_millis(2000))
        .count();
    assert!(
        prompt >= 150,
        "only {prompt} of the connections past the cap were closed before the header timeout"
    );
    let longest = held_for.iter().max().unwrap();
    assert!(
        *longest < Duration::from_secs(7),
        "a socket was held for {longest:?}"
    );
    // New clients are served again, and the refusals were counted.
    let r = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let metrics = app.metrics_text().await;
    let refused: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("demiurge_http_connections_refused_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no refusal counter in {metrics}"));
    assert!(refused >= 150, "{refused}");
}

#[tokio::test]
async fn an_idle_connection_is_closed_after_the_header_read_timeout() {
    let opts = Opts {
        args: vec!["--header-read-timeout".into(), "1s".into()],
        ..Opts::default()
    };
    let app = spawn_with(Backend::Sqlite, opts).await;
    let started = Instant::now();
    let silent = tokio::net::TcpStream::connect(&app.addr).await.unwrap();
    let until = tokio::time::Instant::now() + Duration::from_secs(5);
    let closed = closed_at(silent, until)
        .await
        .expect("an idle socket was held");
    let after = closed.duration_since(started);
    assert!(
        after >= Duration::from_millis(900) && after < Duration::from_secs(4),
        "{after:?}"
    );
}

#[tokio::test]
async fn every_429_says_retry_after_at_least_one_second() {
    let opts = Opts {
        args: vec![
            "--rate-limit-principal".into(),
            "20".into(),
            "--rate-limit-ip".into(),
            "40".into(),
            "--rate-limit-burst".into(),
            "1".into(),
        ],
        ..Opts::default()
    };
    let app = spawn_with(Backend::Sqlite, opts).await;
    let tok = app.token("default", "alice");
    let mut limited = 0;
    for round in 0..400 {
        let req = if round % 2 == 0 {
            app.client.get(app.url("/v1/sessions")).bearer_auth(&tok)
        } else {
            // No token: only the per-IP limit applies.
            app.client.get(app.url("/v1/sessions"))
        };
        let r = req.send().await.unwrap();
        if r.status() == 429 {
            limited += 1;
            let secs: u64 = r
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("429 without a numeric Retry-After: {:?}", r.headers()));
            assert!(secs >= 1, "Retry-After: {secs}");
        }
    }
    assert!(limited > 0, "the limits were never reached");
}

#[tokio::test]
async fn signalling_every_process_is_blocked_before_any_approval() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    for command in [
        "kill -1",
        "kill -9 -1",
        "kill -s KILL -1",
        "pkill .",
        "killall5",
    ] {
        let all = run_script(
            &app,
            &tok,
            &sid,
            term(json!({"command": command})),
            "allow_once",
        )
        .await;
        assert!(
            !types(&all).contains(&"approval.requested"),
            "{command}: {:?}",
            types(&all)
        );
        let res = all.iter().find(|e| e["type"] == "tool.result").unwrap();
        assert_eq!(res["data"]["status"], "denied", "{command}: {res}");
        assert!(content(res).contains("destructive:kill_all"), "{res}");
    }
    healthy(&app).await;
}

//! Several instances on one database act as one server: each has its own
//! instance id and a heartbeat; a survivor declares a silent one lost and
//! fails the turns it left, so their sessions go on; a second process with
//! an instance's id, or a second instance on SQLite, is refused; instances
//! starting together on an empty database migrate once.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::*;
use crate::runtime::process_with;

/// `--instance-lease 3s`: a dead instance is lost within 4 s of its last beat.
fn short_lease() -> Opts {
    Opts {
        args: vec!["--instance-lease".into(), "3s".into()],
        ..Opts::default()
    }
}

async fn wait_for(within: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    check()
}

/// A `serve` process on `home` (and `database_url`) that is expected to
/// stop at start: its exit status and its log.
fn refused_start(
    home: &std::path::Path,
    database_url: Option<&str>,
    args: &[&str],
) -> (bool, String) {
    let log = home.join(format!("refused-{}.log", uuid::Uuid::new_v4().simple()));
    let mut cmd = Command::new(BIN);
    cmd.arg("serve")
        .args(["--bind", "127.0.0.1:0", "--home"])
        .arg(home)
        .args(args)
        .env_remove("DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    if let Some(url) = database_url {
        cmd.arg("--database-url").arg(url);
    }
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return (
                st.success(),
                std::fs::read_to_string(&log).unwrap_or_default(),
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return (true, std::fs::read_to_string(&log).unwrap_or_default());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test]
async fn a_dead_instance_is_declared_lost_by_a_survivor_and_its_session_goes_on() {
    if !backends().contains(&Backend::Postgres) {
        return;
    }
    let mut a = spawn_with(Backend::Postgres, short_lease()).await;
    let tok = a.token("default", "alice");
    let sid = a.create_session(&tok).await;
    let marker = format!("64.{}", std::process::id());
    let script = json!([{"tool_calls": [{"name": "terminal",
        "arguments": {"command": format!("sleep {marker}")}}]}, {"content": "done"}]);
    let turn = a
        .start_turn(&tok, &sid, json!({"input": "go", "script": script}))
        .await;
    assert!(
        wait_for(Duration::from_secs(15), || process_with(&marker)).await,
        "the command never started\n{}",
        a.log()
    );
    // B starts on the same home while A's command runs: A's process is
    // another live instance's, not an orphan for B to reap.
    let b = a.spawn_peer_sharing_home().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(process_with(&marker), "B's start ended A's command");
    // One turn per session holds across instances.
    let (st, _) = b
        .post(
            &tok,
            &format!("/v1/sessions/{sid}/turns"),
            json!({"input": "second"}),
        )
        .await;
    assert_eq!(st, 409);

    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let killed = Instant::now();
    let mut seen = Value::Null;
    while killed.elapsed() < Duration::from_secs(15) {
        let (_, t) = b
            .get(&tok, &format!("/v1/sessions/{sid}/turns/{turn}"))
            .await;
        if t["status"] == "failed" {
            seen = t;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let took = killed.elapsed();
    assert_eq!(seen["status"], "failed", "{}", b.log());
    assert_eq!(seen["reason"], "lost", "{seen}");
    // The documented bound: lease + a third of it (3 s + 1 s), plus test slack.
    assert!(took < Duration::from_secs(8), "lost after {took:?}");
    let evs = b
        .sse_until(&tok, &sid, "?after=0", None, |e| e["type"] == "turn.failed")
        .await;
    assert_eq!(evs.last().unwrap()["data"]["reason"], "lost");

    // The session takes a new turn on the survivor.
    let evs = run_script(&b, &tok, &sid, json!([{"content": "after"}]), "allow_once").await;
    assert_eq!(evs.last().unwrap()["type"], "turn.completed", "{evs:?}");

    // A comes back on its home: its orphaned command is ended, nothing else.
    let a = a.restart_after_crash().await;
    assert!(
        wait_for(Duration::from_secs(10), || !process_with(&marker)).await,
        "A's orphaned command survived its restart"
    );
    let evs = run_script(&a, &tok, &sid, json!([{"content": "back"}]), "allow_once").await;
    assert_eq!(evs.last().unwrap()["type"], "turn.completed", "{evs:?}");
}

#[tokio::test]
async fn a_second_process_with_an_instances_id_is_refused() {
    if !backends().contains(&Backend::Postgres) {
        return;
    }
    let a = spawn_with(Backend::Postgres, short_lease()).await;
    // The same home without an --instance-id of its own: the same id.
    let (ok, log) = refused_start(
        &a.home,
        a.database_url.as_deref(),
        &["--instance-lease", "3s"],
    );
    assert!(!ok, "a second process took a live instance's id\n{log}");
    assert!(log.contains("--instance-id"), "{log}");
    // A is untouched.
    let tok = a.token("default", "alice");
    let sid = a.create_session(&tok).await;
    let evs = run_script(&a, &tok, &sid, json!([{"content": "fine"}]), "allow_once").await;
    assert_eq!(evs.last().unwrap()["type"], "turn.completed");
}

#[tokio::test]
async fn one_sqlite_home_serves_one_instance() {
    let a = spawn_app(Backend::Sqlite).await;
    let (ok, log) = refused_start(&a.home, None, &["--instance-id", "second"]);
    assert!(!ok, "a second instance shared a SQLite database\n{log}");
    assert!(log.contains("SQLite"), "{log}");
    let tok = a.token("default", "alice");
    a.create_session(&tok).await;
}

#[tokio::test]
async fn a_clean_stop_leaves_nothing_to_wait_out_and_a_restart_keeps_its_id() {
    for backend in backends() {
        let mut a = spawn_with(backend, short_lease()).await;
        a.signal("TERM");
        assert!(
            a.wait_exit(Duration::from_secs(20)).is_some(),
            "{}",
            a.log()
        );
        // Stopped cleanly: the next start of the same instance does not wait.
        let t0 = Instant::now();
        let a = a.restart_after_crash().await;
        assert!(t0.elapsed() < Duration::from_secs(10));
        let tok = a.token("default", "alice");
        a.create_session(&tok).await;
    }
}

#[tokio::test]
async fn instances_starting_together_on_an_empty_database_migrate_once() {
    if !backends().contains(&Backend::Postgres) {
        return;
    }
    let db = PgDatabase::create().await;
    let homes = [traversable_tempdir(), traversable_tempdir()];
    let mut children = Vec::new();
    for (i, home) in homes.iter().enumerate() {
        let log = home.path().join("server.log");
        let child = Command::new(BIN)
            .arg("serve")
            .args(["--bind", "127.0.0.1:0", "--home"])
            .arg(home.path().join("home"))
            .args([
                "--instance-id",
                &format!("starter-{i}"),
                "--database-url",
                &db.url,
            ])
            .env_remove("DATABASE_URL")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        children.push((child, log));
    }
    let mut addrs = Vec::new();
    for (child, log) in &mut children {
        let (addr, _) = wait_listening(child, log);
        addrs.push(addr);
    }
    use sqlx::{Connection, Row};
    let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
    let rows = sqlx::query("SELECT version, success FROM _sqlx_migrations ORDER BY version")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    let versions: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
    let mut unique = versions.clone();
    unique.dedup();
    assert_eq!(versions, unique);
    assert!(rows.iter().all(|r| r.get::<bool, _>(1)));
    assert!(versions.contains(&78), "{versions:?}");
    let instances = sqlx::query("SELECT node_id FROM instances ORDER BY node_id")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    let ids: Vec<String> = instances.iter().map(|r| r.get(0)).collect();
    assert_eq!(ids, ["starter-0", "starter-1"]);
    conn.close().await.ok();
    for (child, _) in &mut children {
        let _ = child.kill();
        let _ = child.wait();
    }
    let _ = addrs;
}

/// One Server-Sent Events frame as sent.
#[derive(Debug, Default)]
struct Frame {
    event: Option<String>,
    id: Option<i64>,
    retry: Option<u64>,
    data: String,
}

/// Reads raw SSE frames from a response until the stream ends (or 30 s),
/// calling `seen` on each; stops early when `seen` says so.
async fn read_frames(resp: reqwest::Response, mut seen: impl FnMut(&Frame) -> bool) -> Vec<Frame> {
    use futures_util::StreamExt;
    let mut body = resp.bytes_stream();
    let mut buf = String::new();
    let mut frames = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = match tokio::time::timeout(left, body.next()).await {
            Ok(Some(Ok(c))) => c,
            _ => return frames,
        };
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let raw: String = buf.drain(..end + 2).collect();
            let mut f = Frame::default();
            for line in raw.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    f.event = Some(v.trim().to_owned());
                } else if let Some(v) = line.strip_prefix("id:") {
                    f.id = v.trim().parse().ok();
                } else if let Some(v) = line.strip_prefix("retry:") {
                    f.retry = v.trim().parse().ok();
                } else if let Some(v) = line.strip_prefix("data:") {
                    f.data.push_str(v.trim_start());
                }
            }
            if f.data.is_empty() && f.event.is_none() {
                continue; // a keep-alive comment
            }
            let stop = seen(&f);
            frames.push(f);
            if stop {
                return frames;
            }
        }
    }
}

#[tokio::test]
async fn sigterm_drains_the_turn_and_its_stream_resumes_on_another_instance() {
    if !backends().contains(&Backend::Postgres) {
        return;
    }
    let mut opts = short_lease();
    opts.args.extend(["--shutdown-grace".into(), "20s".into()]);
    let mut a = spawn_with(Backend::Postgres, opts).await;
    let b = a.spawn_peer_sharing_home().await;
    let tok = a.token("default", "alice");
    let sid = a.create_session(&tok).await;
    let marker = format!("65.{}", std::process::id());
    let script = json!([{"tool_calls": [{"name": "terminal",
        "arguments": {"command": format!("sleep 2 && echo {marker}")}}]}, {"content": "finished"}]);
    let turn = a
        .start_turn(&tok, &sid, json!({"input": "go", "script": script}))
        .await;
    let stream = a
        .client
        .get(a.url(&format!("/v1/sessions/{sid}/events?after=0")))
        .bearer_auth(&tok)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    // Once the command runs, A is told to stop.
    let mut signalled = false;
    let mut ready_after_term = None;
    let frames = read_frames(stream, |f| {
        if !signalled && f.data.contains("\"tool.call\"") {
            signalled = true;
            a.signal("TERM");
        }
        f.event.as_deref() == Some("reconnect")
    })
    .await;
    if signalled {
        // Unready at once (or no longer accepting at all).
        let r = a.client.get(a.url("/readyz")).send().await;
        ready_after_term = Some(r.map(|r| r.status().as_u16()).unwrap_or(503));
    }
    assert!(signalled, "the command never started: {frames:?}");
    assert_eq!(ready_after_term, Some(503));
    let last = frames.last().unwrap();
    assert_eq!(last.event.as_deref(), Some("reconnect"), "{frames:?}");
    assert_eq!(last.retry, Some(500));
    let hint: Value = serde_json::from_str(&last.data).unwrap();
    let after = hint["after"].as_i64().unwrap();
    let seen: Vec<i64> = frames.iter().filter_map(|f| f.id).collect();
    assert_eq!(seen.last().copied(), Some(after), "{frames:?}");

    // The client resumes on B where it left off: the turn finishes (A
    // let it, within the grace) and not one event is missing or repeated.
    let rest = b
        .sse_until(&tok, &sid, &format!("?after={after}"), None, is_terminal)
        .await;
    let mut all = seen.clone();
    all.extend(rest.iter().map(|e| e["seq"].as_i64().unwrap()));
    let expected: Vec<i64> = (1..=*all.last().unwrap()).collect();
    assert_eq!(all, expected, "a gap or a repeat across the handover");
    let done = rest.last().unwrap();
    assert_eq!(done["type"], "turn.completed", "{rest:?}\n{}", a.log());
    assert_eq!(done["data"]["output"], "finished");
    let st = a
        .wait_exit(Duration::from_secs(30))
        .expect("A did not stop");
    assert!(st.success(), "{}", a.log());
    let (_, t) = b
        .get(&tok, &format!("/v1/sessions/{sid}/turns/{turn}"))
        .await;
    assert_eq!(t["status"], "completed", "{t}");
}

#[tokio::test]
async fn work_longer_than_the_grace_is_cancelled_and_websockets_are_told_to_reconnect() {
    for backend in backends() {
        let mut opts = Opts::default();
        opts.args.extend(["--shutdown-grace".into(), "1s".into()]);
        let mut a = spawn_with(backend, opts).await;
        let tok = a.token("default", "alice");
        let sid = a.create_session(&tok).await;
        let marker = format!(
            "66.{}{}",
            std::process::id(),
            u8::from(backend == Backend::Postgres)
        );
        let script = json!([{"tool_calls": [{"name": "terminal",
            "arguments": {"command": format!("sleep {marker}")}}]}, {"content": "never"}]);
        let turn = a
            .start_turn(&tok, &sid, json!({"input": "go", "script": script}))
            .await;
        assert!(wait_for(Duration::from_secs(15), || process_with(&marker)).await);
        let mut ws = crate::streams::ws_connect(&a, &sid, "?after=0", Some(&tok)).await;
        crate::streams::ws_read_until(&mut ws, |e| e["type"] == "tool.call").await;
        let t0 = Instant::now();
        a.signal("TERM");
        // The socket is closed as a restart, naming where to resume.
        use futures_util::StreamExt;
        let close = loop {
            match tokio::time::timeout(Duration::from_secs(10), ws.next()).await {
                Ok(Some(Ok(tokio_tungstenite::tungstenite::Message::Close(c)))) => break c,
                Ok(Some(Ok(_))) => continue,
                other => panic!("no close frame: {other:?}"),
            }
        };
        let close = close.expect("a close frame with a code");
        assert_eq!(u16::from(close.code), 1012, "{close:?}");
        assert!(close.reason.contains("after="), "{close:?}");
        let st = a
            .wait_exit(Duration::from_secs(30))
            .expect("A did not stop");
        assert!(st.success(), "{}", a.log());
        assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
        assert!(
            wait_for(Duration::from_secs(5), || !process_with(&marker)).await,
            "the command outlived the drain"
        );
        let a = a.restart_after_crash().await;
        let (_, t) = a
            .get(&tok, &format!("/v1/sessions/{sid}/turns/{turn}"))
            .await;
        assert_eq!(t["status"], "cancelled", "{t}");
        assert_eq!(t["reason"], "shutdown", "{t}");
    }
}

fn write(dir: &std::path::Path, rel: &str, body: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, body).unwrap();
}

/// Two instances on one home and one database serve one session between
/// them: an authored tool called on B for a session made on A, an approval
/// A asks for decided on B, and 500 turns started on either, every event
/// once and in order whichever instance streams it.
#[tokio::test]
async fn two_instances_on_one_home_serve_one_session_between_them() {
    if !backends().contains(&Backend::Postgres) {
        return;
    }
    // The test's own polling would otherwise meet the principal's rate limit.
    let opts = Opts::default()
        .env("DEMIURGE_RATE_LIMIT_PRINCIPAL", "100000")
        .env("DEMIURGE_RATE_LIMIT_IP", "100000")
        .env("DEMIURGE_RATE_LIMIT_BURST", "100000");
    let a = spawn_with(Backend::Postgres, opts).await;
    let core = a.home.join("tenants/default/agents/shared");
    write(
        &core,
        "agent.yaml",
        "schema_version: 1\nagent:\n  id: shared\nslots:\n  tools: agent/tools\ntools:\n  toolsets: [coding]\n",
    );
    write(
        &core,
        "agent/tools/stamp/tool.yaml",
        "description: Stamps.\nentrypoint: module:execute\nrisk: low\napproval_policy: auto\ninput_schema: {type: object}\n",
    );
    write(
        &core,
        "agent/tools/stamp/module.py",
        "def execute(ctx, args):\n    return {'content': 'stamped ' + ctx.turn.session_id}\n",
    );
    let b = a.spawn_peer_sharing_home().await;
    let tok = a.token("default", "alice");
    let (st, s) = a
        .post(&tok, "/v1/sessions", json!({"core": "shared"}))
        .await;
    assert_eq!(st, 201, "{s}");
    let sid = s["id"].as_str().unwrap().to_owned();

    // The authored tool, on B.
    let (st, r) = b
        .post(
            &tok,
            &format!("/v1/sessions/{sid}/tool-calls"),
            json!({"tool": "stamp", "arguments": {}}),
        )
        .await;
    assert_eq!(st, 202, "{r}");
    let t = b
        .wait_turn(&tok, &sid, r["turn_id"].as_str().unwrap())
        .await;
    assert_eq!(t["output"], format!("stamped {sid}"), "{t}\n{}", b.log());

    // An approval A asks for, decided on B (in a session of the default core).
    let sid = a.create_session(&tok).await;
    let script = json!([{"tool_calls": [{"name": "write_file",
        "arguments": {"path": "decided-on-b.txt", "content": "yes"}}]}, {"content": "written"}]);
    let tid = a
        .start_turn(&tok, &sid, json!({"input": "go", "script": script}))
        .await;
    let evs = b
        .sse_until(&tok, &sid, "?after=0", None, |e| {
            e["type"] == "approval.requested"
        })
        .await;
    let id = evs.last().unwrap()["data"]["approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (st, d) = b
        .post(
            &tok,
            &format!("/v1/approvals/{id}"),
            json!({"decision": "allow_once"}),
        )
        .await;
    assert_eq!(st, 200, "{d}");
    let t = a.wait_turn(&tok, &sid, &tid).await;
    assert_eq!(t["status"], "completed", "{t}");
    assert!(a
        .home
        .join("tenants/default/workspaces/alice/default/decided-on-b.txt")
        .is_file());

    // 500 turns over four sessions, each turn on A or B in turn.
    let sessions: Vec<String> = {
        let mut v = Vec::new();
        for _ in 0..4 {
            v.push(a.create_session(&tok).await);
        }
        v
    };
    let runs = sessions.iter().enumerate().map(|(k, sid)| {
        let (a, b, tok) = (&a, &b, &tok);
        async move {
            for i in 0..125 {
                let on = if (i + k) % 2 == 0 { a } else { b };
                let tid = on
                    .start_turn(tok, sid, json!({"input": format!("turn {i}")}))
                    .await;
                let t = on.wait_turn(tok, sid, &tid).await;
                assert_eq!(t["status"], "completed", "{t}");
            }
        }
    });
    futures_util::future::join_all(runs).await;
    for (k, sid) in sessions.iter().enumerate() {
        let reader = if k % 2 == 0 { &b } else { &a };
        let (_, s) = reader.get(&tok, &format!("/v1/sessions/{sid}")).await;
        let last = s["last_seq"].as_i64().unwrap();
        let evs = reader
            .sse_until(&tok, sid, "?after=0", None, |e| {
                e["seq"].as_i64() == Some(last)
            })
            .await;
        let seqs: Vec<i64> = evs.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
        assert_eq!(seqs, (1..=last).collect::<Vec<_>>(), "session {k}");
        let count = |ty: &str| evs.iter().filter(|e| e["type"] == ty).count();
        assert_eq!(count("turn.started"), 125, "session {k}");
        assert_eq!(count("turn.completed"), 125, "session {k}");
        let inputs: Vec<String> = evs
            .iter()
            .filter(|e| e["type"] == "turn.started")
            .map(|e| e["data"]["input"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            inputs,
            (0..125).map(|i| format!("turn {i}")).collect::<Vec<_>>(),
            "session {k}"
        );
    }
}

/// Core changes made at once on two instances sharing a home take turns
/// (a lock file in the agents tree): every one lands as its own version.
#[tokio::test]
async fn core_changes_on_two_instances_sharing_a_home_take_turns() {
    if !backends().contains(&Backend::Postgres) {
        return;
    }
    let a = spawn_with(Backend::Postgres, Opts::default()).await;
    let b = a.spawn_peer_sharing_home().await;
    let op = a.token_with("default", "olga", "operator", "1h");
    let (st, before) = a.get(&op, "/v1/cores/assistant/versions").await;
    assert_eq!(st, 200, "{before}\n{}\n{}", a.log(), b.log());
    let before = before["versions"].as_array().unwrap().len();
    let writes = (0..12).map(|i| {
        let on = if i % 2 == 0 { &a } else { &b };
        let op = op.clone();
        async move {
            let r = on
                .client
                .put(on.url(&format!("/v1/cores/assistant/files/agent/notes/n{i}.md")))
                .bearer_auth(&op)
                .header("content-type", "text/plain")
                .body(format!("note {i}"))
                .send()
                .await
                .unwrap();
            let st = r.status().as_u16();
            (st, r.text().await.unwrap_or_default())
        }
    });
    for (st, body) in futures_util::future::join_all(writes).await {
        assert_eq!(st, 200, "{body}");
    }
    let (_, after) = b.get(&op, "/v1/cores/assistant/versions").await;
    assert_eq!(
        after["versions"].as_array().unwrap().len(),
        before + 12,
        "{after}"
    );
    for i in 0..12 {
        assert!(a
            .home
            .join(format!(
                "tenants/default/agents/assistant/agent/notes/n{i}.md"
            ))
            .is_file());
    }
}

/// A chat conversation begun through instance A goes on through B: a
/// signed webhook delivered to B runs its turn in the session A made, and
/// each reply reaches the platform once.
#[tokio::test]
async fn a_channel_conversation_begun_on_one_instance_goes_on_through_the_other() {
    use crate::channels::Platform;
    if !backends().contains(&Backend::Postgres) {
        return;
    }
    let hook = Platform::start().await;
    let a = spawn_with(
        Backend::Postgres,
        Opts {
            args: vec!["--url-allow".into(), "127.0.0.1/32".into()],
            ..Opts::default()
        },
    )
    .await;
    let b = a.spawn_peer_sharing_home().await;
    let secret = "whsec-instances";
    let path = webhook_account(&a, &hook, secret).await;
    assert_eq!(webhook_message(&a, &path, secret, "m1", "first").await, 202);
    hook.wait(1, "the first reply", |r| r.body["text"] == "[fake] first")
        .await;
    assert_eq!(
        webhook_message(&b, &path, secret, "m2", "second").await,
        202
    );
    hook.wait(1, "the second reply", |r| r.body["text"] == "[fake] second")
        .await;
    // Each reply reached the platform once, whichever instance ran it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for text in ["[fake] first", "[fake] second"] {
        let n = hook
            .requests()
            .iter()
            .filter(|r| r.body["text"] == text)
            .count();
        assert_eq!(n, 1, "{text} sent {n} times");
    }
}

/// A chat turn still running when the instance is told to stop finishes
/// within the grace, and its reply still reaches the platform.
#[tokio::test]
async fn a_chat_reply_of_a_turn_that_finishes_during_the_drain_is_delivered() {
    use crate::channels::Platform;
    let hook = Platform::start().await;
    let mut a = spawn_with(
        Backend::Sqlite,
        Opts {
            args: vec![
                "--url-allow".into(),
                "127.0.0.1/32".into(),
                "--shutdown-grace".into(),
                "20s".into(),
            ],
            ..Opts::default()
        },
    )
    .await;
    let secret = "whsec-drain";
    let path = webhook_account(&a, &hook, secret).await;
    let marker = format!("67.{}", std::process::id());
    let text = crate::channels::script(json!([
        {"tool_calls": [{"name": "terminal", "arguments": {"command": format!("sleep 2 && echo {marker}")}}]},
        {"content": "late reply"}
    ]));
    assert_eq!(webhook_message(&a, &path, secret, "m1", &text).await, 202);
    assert!(
        wait_for(Duration::from_secs(15), || process_with(&marker)).await,
        "the turn's command never started\n{}",
        a.log()
    );
    a.signal("TERM");
    hook.wait(1, "the reply of the drained turn", |r| {
        r.body["text"] == "late reply"
    })
    .await;
    let st = a
        .wait_exit(Duration::from_secs(30))
        .expect("A did not stop");
    assert!(st.success(), "{}", a.log());
}

/// A signed-webhook chat account on `app` whose replies go to `hook`;
/// its webhook path.
async fn webhook_account(app: &TestApp, hook: &crate::channels::Platform, secret: &str) -> String {
    let op = crate::channels::operator(app);
    let acct = crate::channels::create_account(
        app,
        &op,
        json!({"platform": "webhook", "name": "crm",
            "credentials": {"secret": secret, "callback_url": format!("{}/hook", hook.base_url)},
            "allowed_users": ["u1"]}),
    )
    .await;
    acct["webhook_path"].as_str().unwrap().to_owned()
}

/// A message of user `u1` in conversation `c1`, signed, posted to `on`.
async fn webhook_message(on: &TestApp, path: &str, secret: &str, id: &str, text: &str) -> u16 {
    let body =
        serde_json::to_vec(&json!({"user": "u1", "conversation": "c1", "text": text, "id": id}))
            .unwrap();
    let sig = demiurge_channels::verify::webhook_signature(secret, &body).unwrap();
    crate::channels::post_raw(on, path, &[("x-demiurge-signature", sig)], body)
        .await
        .0
}

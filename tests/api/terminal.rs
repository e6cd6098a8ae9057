//! The terminal tool end to end: guard before approval, approval per shape,
//! allowlisted environment, secret bindings, timeouts and cancellation that
//! end the whole process tree.

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::*;

fn term(args: Value) -> Value {
    json!([{"tool_calls": [{"name": "terminal", "arguments": args}]}, {"content": "done"}])
}

/// Run one scripted turn, answering approvals with `decision`: its events and its `tool.result`.
async fn run(
    app: &TestApp,
    tok: &str,
    sid: &str,
    script: Value,
    decision: &str,
) -> (Vec<Value>, Value) {
    let all = run_script(app, tok, sid, script, decision).await;
    let result = all
        .iter()
        .find(|e| e["type"] == "tool.result")
        .cloned()
        .unwrap_or(Value::Null);
    (all, result)
}

fn group_alive(pgid: i64) -> bool {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            // state is f[0]; pgrp is f[2]; zombies are already dead.
            f.len() > 2 && f[2] == pgid.to_string() && f[0] != "Z"
        })
}

#[tokio::test]
async fn literal_reads_run_blocked_commands_never_reach_approval() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    std::fs::write(
        app.home
            .join("tenants/default/workspaces/alice/default/hello.txt"),
        "hi there",
    )
    .unwrap();
    let (evs, res) = run(
        &app,
        &tok,
        &sid,
        term(json!({"command": "cat hello.txt"})),
        "deny",
    )
    .await;
    assert!(
        !types(&evs).contains(&"approval.requested"),
        "{:?}",
        types(&evs)
    );
    assert_eq!(res["data"]["status"], "succeeded", "{res}");
    let content = res["data"]["content"].as_str().unwrap();
    assert!(
        content.starts_with("exit_code: 0") && content.contains("hi there"),
        "{content}"
    );
    assert!(
        types(&evs).contains(&"tool.output"),
        "live output is streamed"
    );
    let (evs, res) = run(
        &app,
        &tok,
        &sid,
        term(json!({"command": "rm -rf /"})),
        "allow_once",
    )
    .await;
    assert!(!types(&evs).contains(&"approval.requested"));
    assert_eq!(res["data"]["status"], "denied");
    assert!(res["data"]["content"].as_str().unwrap().contains("blocked"));
    let (evs, res) = run(
        &app,
        &tok,
        &sid,
        term(json!({"command": "sh -c 'rm -rf ~'"})),
        "allow_once",
    )
    .await;
    assert!(!types(&evs).contains(&"approval.requested"));
    assert_eq!(res["data"]["status"], "denied");
    // Ambiguous commands ask; a denial runs nothing.
    let (evs, res) = run(
        &app,
        &tok,
        &sid,
        term(json!({"command": "touch made-by-$(whoami)"})),
        "deny",
    )
    .await;
    assert!(types(&evs).contains(&"approval.requested"));
    assert_eq!(res["data"]["status"], "denied");
    let (_, res) = run(
        &app,
        &tok,
        &sid,
        term(json!({"command": "echo $((40 + 2))"})),
        "allow_once",
    )
    .await;
    assert!(
        res["data"]["content"].as_str().unwrap().contains("42"),
        "{res}"
    );
    // A cwd outside the workspace is refused.
    let (_, res) = run(
        &app,
        &tok,
        &sid,
        term(json!({"command": "ls", "cwd": "/"})),
        "allow_once",
    )
    .await;
    assert_eq!(res["data"]["status"], "denied");
}

#[tokio::test]
async fn children_get_an_allowlisted_environment_only() {
    let app = spawn_with(
        Backend::Sqlite,
        Opts::default()
            .env("AWS_SECRET_ACCESS_KEY", "aws-leak-canary-42")
            .env("DEMIURGE_OPENAI_API_KEY_UNUSED", "provider-leak-canary-43"),
    )
    .await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let (evs, res) = run(
        &app,
        &tok,
        &sid,
        term(json!({"command": "env"})),
        "allow_once",
    )
    .await;
    assert_eq!(res["data"]["status"], "succeeded", "{res}");
    let all = serde_json::to_string(&evs).unwrap();
    assert!(
        !all.contains("leak-canary"),
        "server environment leaked into the child"
    );
    let out = res["data"]["content"].as_str().unwrap();
    assert!(out.contains("PATH="), "{out}");
    assert!(
        out.contains("runtime/terminal-home/default"),
        "HOME is the tenant's runtime home: {out}"
    );
    // An explicit overlay is passed, and always asks.
    let (evs, res) = run(
        &app,
        &tok,
        &sid,
        term(json!({"command": "printenv GREETING", "env": {"GREETING": "hello-overlay"}})),
        "allow_once",
    )
    .await;
    assert!(types(&evs).contains(&"approval.requested"));
    let req = evs
        .iter()
        .find(|e| e["type"] == "approval.requested")
        .unwrap();
    assert_eq!(req["data"]["preview"]["env_keys"], json!(["GREETING"]));
    assert!(
        !req.to_string().contains("hello-overlay"),
        "approval views show keys, not values"
    );
    assert!(res["data"]["content"]
        .as_str()
        .unwrap()
        .contains("hello-overlay"));
}

fn write_core(app: &TestApp, name: &str, grants: &str) {
    let dir = app.home.join("tenants/default/agents").join(name);
    std::fs::create_dir_all(dir.join("agent")).unwrap();
    std::fs::write(
        dir.join("agent.yaml"),
        format!("schema_version: 1\nagent:\n  id: {name}\ntools:\n  toolsets: [coding]\ncapabilities:\n  defaults:\n    terminal.exec: {{}}\n{grants}"),
    )
    .unwrap();
}

#[tokio::test]
async fn bound_secrets_reach_the_command_but_never_any_view() {
    const VALUE: &str = "bound-Secret-Value-77aa";
    let app = spawn_with(Backend::Sqlite, Opts::default().env("DEMO_TOKEN", VALUE)).await;
    let tok = app.token("default", "alice");
    write_core(&app, "binder", "    secret.bind:DEMO_TOKEN: {}\n");
    write_core(&app, "wild", "    secret.bind:*: {}\n");
    let (_, s) = app
        .post(&tok, "/v1/sessions", json!({"core": "binder"}))
        .await;
    let sid = s["id"].as_str().unwrap().to_owned();
    let cmd = "printf '%s\\n' \"$TOKEN\"; printf 'bound-Sec'; sleep 0.2; printf 'ret-Value-77aa\\n'; printf '%s' \"$TOKEN\" >&2";
    let args = json!({"command": cmd, "secret_bindings": [{"source": "env:DEMO_TOKEN", "target": "TOKEN"}]});
    let (evs, res) = run(&app, &tok, &sid, term(args.clone()), "allow_once").await;
    let req = evs
        .iter()
        .find(|e| e["type"] == "approval.requested")
        .expect("bindings need approval");
    assert!(
        !req["data"]["choices"]
            .as_array()
            .unwrap()
            .contains(&json!("allow_session")),
        "never session-cacheable"
    );
    assert_eq!(res["data"]["status"], "succeeded", "{res}");
    let out = res["data"]["content"].as_str().unwrap();
    assert_eq!(out.matches("<redacted:TOKEN>").count(), 3, "{out}");
    assert!(!serde_json::to_string(&evs).unwrap().contains(VALUE));
    // A wildcard grant never binds.
    let (_, s) = app
        .post(&tok, "/v1/sessions", json!({"core": "wild"}))
        .await;
    let wid = s["id"].as_str().unwrap().to_owned();
    let (evs, res) = run(&app, &tok, &wid, term(args), "allow_once").await;
    assert!(!types(&evs).contains(&"approval.requested"));
    assert_eq!(res["data"]["status"], "denied");
    // Reserved targets are refused.
    let bad = json!({"command": "true", "secret_bindings": [{"source": "env:DEMO_TOKEN", "target": "LD_PRELOAD"}]});
    let (_, res) = run(&app, &tok, &sid, term(bad), "allow_once").await;
    assert_eq!(res["data"]["status"], "invalid");
    // Nothing the server wrote holds the value: database, logs, artifacts.
    let home = app.home.clone();
    let app = app.restart_after_crash().await;
    assert_secret_absent(&home, VALUE, &[]);
    drop(app);
}

#[tokio::test]
async fn timeouts_and_cancellation_end_the_whole_process_tree() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let stubborn = "sh -c 'trap \"\" TERM; sleep 60 & trap \"\" TERM; sleep 60'";
    let (_, res) = run(
        &app,
        &tok,
        &sid,
        term(json!({"command": stubborn, "timeout_seconds": 1})),
        "allow_once",
    )
    .await;
    assert_eq!(res["data"]["status"], "timed_out", "{res}");
    assert!(res["data"]["content"]
        .as_str()
        .unwrap()
        .contains("timed_out: true"));
    let pgid = res["data"]["data"]["process"]["pgid"].as_i64().unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !group_alive(pgid),
        "a process of the timed-out tree survived"
    );

    // Cancel a running turn: the tree goes with it.
    let tid = app.start_turn(&tok, &sid, json!({"input": "go", "script": term(json!({"command": stubborn, "timeout_seconds": 60}))})).await;
    allow_next(&app, &tok, &sid, |e| e["turn_id"] == tid.as_str()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (st, t) = app
        .post(
            &tok,
            &format!("/v1/sessions/{sid}/turns/{tid}/cancel"),
            json!({}),
        )
        .await;
    assert_eq!((st, t["status"].as_str()), (200, Some("cancelled")), "{t}");
    let evs = app
        .sse_until(&tok, &sid, "", None, |e| {
            is_terminal(e) && e["turn_id"] == tid.as_str()
        })
        .await;
    let res = evs
        .iter()
        .rev()
        .find(|e| e["type"] == "tool.result")
        .unwrap();
    assert_eq!(res["data"]["status"], "cancelled", "{res}");
    let pgid = res["data"]["data"]["process"]["pgid"].as_i64();
    if let Some(pgid) = pgid {
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!group_alive(pgid));
    }
}

#[tokio::test]
async fn a_restart_ends_process_groups_a_crash_left_running() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let stubborn = "sh -c 'trap \"\" TERM; sleep 120 & trap \"\" TERM; sleep 120'";
    let tid = app.start_turn(&tok, &sid, json!({"input": "go", "script": term(json!({"command": stubborn, "timeout_seconds": 120}))})).await;
    allow_next(&app, &tok, &sid, |_| true).await;
    // The host records the running group durably.
    let dir = app.home.join("runtime/processes");
    let mut pgid = None;
    for _ in 0..200 {
        if let Some(entry) = std::fs::read_dir(&dir).ok().and_then(|mut d| d.next()) {
            let rec: Value =
                serde_json::from_slice(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap();
            pgid = rec["pgid"].as_i64();
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let pgid = pgid.expect("a process record");
    assert!(group_alive(pgid));
    let app = app.restart_after_crash().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !group_alive(pgid),
        "the restart must end the orphaned group"
    );
    assert_eq!(app.wait_turn(&tok, &sid, &tid).await["reason"], "lost");
}

fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_200_mb_flood_keeps_server_memory_flat_and_the_log_bounded() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    // Warm the paths once so the measurement sees steady state.
    run(
        &app,
        &tok,
        &sid,
        term(json!({"command": "echo warm"})),
        "allow_once",
    )
    .await;
    let before = rss_kib(app.child.id());
    let flood = "head -c 200000000 /dev/zero | tr '\\\\0' 'a'";
    let (evs, res) = run(
        &app,
        &tok,
        &sid,
        term(json!({"command": flood, "timeout_seconds": 120})),
        "allow_once",
    )
    .await;
    let after = rss_kib(app.child.id());
    assert_eq!(res["data"]["status"], "succeeded", "{res}");
    let out = &res["data"]["data"]["output"]["stdout"];
    assert_eq!(out["total_bytes"], 200_000_000);
    assert_eq!(out["truncated"], true);
    assert!(
        after < before + 30 * 1024,
        "server RSS grew from {before} KiB to {after} KiB"
    );
    let live: usize = evs
        .iter()
        .filter(|e| e["type"] == "tool.output")
        .map(|e| e["data"]["text"].as_str().unwrap_or("").len())
        .sum();
    assert!(
        live <= 64 * 1024,
        "live output is a bounded preview ({live} bytes)"
    );
    let tail = res["data"]["content"].as_str().unwrap();
    assert!(tail.len() < 13_000 + 200, "the model view is a tail");
}

#[tokio::test]
async fn a_binding_expiry_shortens_the_timeout_and_ends_the_tree() {
    let app = spawn_with(
        Backend::Sqlite,
        Opts::default().env("DEMO_TOKEN", "expiring-value-1234"),
    )
    .await;
    let tok = app.token("default", "alice");
    write_core(&app, "binder", "    secret.bind:DEMO_TOKEN: {}\n");
    let (_, s) = app
        .post(&tok, "/v1/sessions", json!({"core": "binder"}))
        .await;
    let sid = s["id"].as_str().unwrap().to_owned();
    let args = json!({"command": "sleep 20", "timeout_seconds": 60,
        "secret_bindings": [{"source": "env:DEMO_TOKEN", "expires_in_seconds": 1}]});
    let started = std::time::Instant::now();
    let (_, res) = run(&app, &tok, &sid, term(args), "allow_once").await;
    assert_eq!(res["data"]["status"], "timed_out", "{res}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the expiry, not the 60 s timeout, ended it"
    );
    let pgid = res["data"]["data"]["process"]["pgid"].as_i64().unwrap();
    assert!(!group_alive(pgid));
    // An expiry longer than the timeout is refused; background bindings too.
    let too_long = json!({"command": "true", "timeout_seconds": 5,
        "secret_bindings": [{"source": "env:DEMO_TOKEN", "expires_in_seconds": 30}]});
    let (_, res) = run(&app, &tok, &sid, term(too_long), "allow_once").await;
    assert_eq!(res["data"]["status"], "invalid");
    let bg = json!({"command": "true", "background": true, "secret_bindings": [{"source": "env:DEMO_TOKEN"}]});
    let (_, res) = run(&app, &tok, &sid, term(bg), "allow_once").await;
    assert_eq!(res["data"]["status"], "invalid");
}

#[tokio::test]
async fn literal_reads_through_symlinks_out_of_the_workspace_ask_first() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let ws = app.home.join("tenants/default/workspaces/alice/default");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "outside-canary").unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.join("etc")).unwrap();
    std::fs::write(ws.join(".env"), "KEY=env-canary").unwrap();
    std::os::unix::fs::symlink(ws.join(".env"), ws.join("notes.txt")).unwrap();
    for cmd in ["cat etc/secret.txt", "cat notes.txt", "grep -R outside ."] {
        let (evs, res) = run(&app, &tok, &sid, term(json!({"command": cmd})), "deny").await;
        assert!(
            types(&evs).contains(&"approval.requested"),
            "{cmd}: must ask"
        );
        assert_eq!(res["data"]["status"], "denied", "{cmd}");
        assert!(
            !serde_json::to_string(&evs).unwrap().contains("canary"),
            "{cmd}"
        );
    }
    // search_files skips a symlink whose target is sensitive.
    let script = json!([{"tool_calls": [{"name": "search_files", "arguments": {"query": "canary", "path": "."}}]}, {"content": "ok"}]);
    let (evs, res) = run(&app, &tok, &sid, script, "deny").await;
    assert_eq!(res["data"]["status"], "succeeded");
    assert!(!serde_json::to_string(&evs).unwrap().contains("env-canary"));
    // A pathological glob pattern returns at once.
    let script = json!([{"tool_calls": [{"name": "search_files", "arguments": {"target": "name", "pattern": "********************x"}}]}, {"content": "ok"}]);
    let (_, res) = run(&app, &tok, &sid, script, "deny").await;
    assert_eq!(res["data"]["status"], "succeeded");
    // Overlay values never reach events; reserved keys are refused.
    let (evs, _) = run(
        &app,
        &tok,
        &sid,
        term(json!({"command": "true", "env": {"CONN": "overlay-canary"}})),
        "allow_once",
    )
    .await;
    assert!(!serde_json::to_string(&evs)
        .unwrap()
        .contains("overlay-canary"));
    let (_, res) = run(
        &app,
        &tok,
        &sid,
        term(json!({"command": "true", "env": {"LD_PRELOAD": "/x.so"}})),
        "allow_once",
    )
    .await;
    assert_eq!(res["data"]["status"], "invalid");
}

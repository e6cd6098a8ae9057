//! Tenant isolation, attacked as the threat model says: a member of tenant
//! `evil` approves every prompt it gets (the model follows any instruction it
//! reads) and tries every path to tenant `acme`'s files, the server's signing
//! key and the server process. Nothing may reach it, and ordinary work still
//! runs confined.

use serde_json::{json, Value};

use crate::helpers::*;

const CANARY: &str = "acme-canary-5d1e9b77c2";

fn call(name: &str, args: Value) -> Value {
    json!([{"tool_calls": [{"name": name, "arguments": args}]}, {"content": "done"}])
}

fn results(evs: &[Value]) -> Vec<String> {
    evs.iter()
        .filter(|e| e["type"] == "tool.result")
        .map(|e| e["data"]["status"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn terminal(command: &str) -> Value {
    call(
        "terminal",
        json!({"command": command, "timeout_seconds": 20}),
    )
}

/// The text of the one tool result of a turn.
fn result_text(evs: &[Value]) -> String {
    evs.iter()
        .filter(|e| e["type"] == "tool.result")
        .map(|e| e["data"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

struct Victim {
    ws: std::path::PathBuf,
    key: String,
}

/// Tenant `acme` with a canary in its workspace; the server's key material.
async fn victim(app: &TestApp) -> Victim {
    let acme = app.token("acme", "alice");
    app.create_session(&acme).await;
    let ws = app.home.join("tenants/acme/workspaces/alice/default");
    std::fs::write(ws.join("canary.txt"), CANARY).unwrap();
    let key = std::fs::read_to_string(app.home.join("keys/signing.key")).unwrap();
    assert!(key.trim().len() >= 16, "a signing key to look for");
    Victim { ws, key }
}

fn assert_clean(what: &str, evs: &[Value], v: &Victim) {
    let text = serde_json::to_string(evs).unwrap();
    assert!(!text.contains(CANARY), "{what}: the canary leaked: {text}");
    assert!(
        !text.contains(v.key.trim()),
        "{what}: the signing key leaked"
    );
}

#[tokio::test]
async fn a_self_approving_member_reaches_nothing_outside_its_walls_on_every_backend() {
    for (round, backend) in backends().into_iter().enumerate() {
        let opts = Opts {
            args: vec![
                "--sandbox-max-processes".into(),
                "48".into(),
                "--sandbox-max-file-size".into(),
                "1048576".into(),
            ],
            ..Opts::default()
        };
        let app = spawn_with(backend, opts).await;
        let v = victim(&app).await;
        let evil = app.token("evil", "mallory");
        let sid = app.create_session(&evil).await;
        let home = app.home.canonicalize().unwrap();
        let h = home.display().to_string();
        let acme_ws = v.ws.canonicalize().unwrap().display().to_string();
        let pid = app.child.id();
        let attacks: Vec<(&str, Value)> = vec![
            (
                "read_file key",
                call(
                    "read_file",
                    json!({"path": format!("{h}/keys/signing.key")}),
                ),
            ),
            (
                "read_file ..",
                call(
                    "read_file",
                    json!({"path": "../../../../acme/workspaces/alice/default/canary.txt"}),
                ),
            ),
            (
                "read_file abs",
                call(
                    "read_file",
                    json!({"path": format!("{acme_ws}/canary.txt")}),
                ),
            ),
            (
                "read_file db",
                call("read_file", json!({"path": format!("{h}/demiurge.db")})),
            ),
            (
                "search_files home",
                call("search_files", json!({"path": h, "query": "5d1e9b77"})),
            ),
            (
                "search_files names",
                call(
                    "search_files",
                    json!({"path": h, "target": "name", "query": "canary"}),
                ),
            ),
            (
                "write_file acme",
                call(
                    "write_file",
                    json!({"path": format!("{acme_ws}/pwned.txt"), "content": "x"}),
                ),
            ),
            (
                "write_file home",
                call(
                    "write_file",
                    json!({"path": format!("{h}/pwned.txt"), "content": "x"}),
                ),
            ),
            (
                "patch acme",
                call(
                    "patch",
                    json!({"path": format!("{acme_ws}/canary.txt"), "old": "acme", "new": "evil"}),
                ),
            ),
            ("cat key", terminal(&format!("cat {h}/keys/signing.key"))),
            ("cat canary", terminal(&format!("cat {acme_ws}/canary.txt"))),
            (
                "cat ..",
                terminal("cat ../../../../acme/workspaces/alice/default/canary.txt"),
            ),
            ("grep -r", terminal(&format!("grep -r 5d1e9b77 {h}"))),
            ("ls home", terminal(&format!("ls -R {h} | head -50"))),
            (
                "symlink",
                terminal(&format!("ln -s {acme_ws}/canary.txt l && cat l")),
            ),
            (
                "hard link",
                terminal(&format!("ln {h}/keys/signing.key k; cat k")),
            ),
            (
                "python3",
                terminal(&format!(
                    "python3 -c \"print(open('{h}/keys/signing.key').read())\""
                )),
            ),
            ("environ", terminal(&format!("cat /proc/{pid}/environ"))),
            (
                "proc root",
                terminal(&format!("cat /proc/{pid}/root{acme_ws}/canary.txt")),
            ),
            (
                "proc cmdline",
                terminal(&format!("cat /proc/{pid}/cmdline")),
            ),
            ("kill", terminal(&format!("kill -9 {pid}"))),
            (
                "python kill",
                terminal(&format!("python3 -c \"import os; os.kill({pid}, 9)\"")),
            ),
            (
                "write acme",
                terminal(&format!("echo x > {acme_ws}/pwned.txt")),
            ),
            ("write home", terminal(&format!("echo x > {h}/pwned.txt"))),
            (
                "dd",
                terminal("dd if=/dev/zero of=big bs=1M count=10240; ls -l big"),
            ),
        ];
        for (what, script) in attacks {
            let evs = run_script(&app, &evil, &sid, script, "allow_once").await;
            assert_eq!(results(&evs).len(), 1, "{what}: one tool result");
            assert_clean(what, &evs, &v);
            let (st, _) = app.get(&evil, "/healthz").await;
            assert_eq!(st, 200, "{what}: the server must survive");
        }
        // A fork bomb in another tenant stops at that tenant's process limit;
        // evil's commands still run. (Each tenant has its own uid, so the
        // bomb's processes, and zombies not yet reaped, count only there.)
        let bomber = app.token(&format!("bomber{round}"), "b");
        let bomb_sid = app.create_session(&bomber).await;
        let bomb = call(
            "terminal",
            json!({"command": "python3 -c \"import os\nwhile True:\n  try: os.fork()\n  except OSError: pass\"", "timeout_seconds": 3}),
        );
        let evs = run_script(&app, &bomber, &bomb_sid, bomb, "allow_once").await;
        assert_eq!(results(&evs), ["timed_out"], "{}", result_text(&evs));
        let evs = run_script(&app, &evil, &sid, terminal("echo still-here"), "allow_once").await;
        assert_eq!(results(&evs), ["succeeded"], "{}", result_text(&evs));
        assert!(result_text(&evs).contains("still-here"));
        // Background mode: the task's result and logs are as walled in.
        let evs = run_script(
            &app,
            &evil,
            &sid,
            call(
                "terminal",
                json!({"command": format!("cat {h}/keys/signing.key {acme_ws}/canary.txt"), "background": true}),
            ),
            "allow_once",
        )
        .await;
        assert_eq!(results(&evs), ["succeeded"], "{}", result_text(&evs));
        let (st, tasks) = app.get(&evil, &format!("/v1/tasks?session={sid}")).await;
        assert_eq!(st, 200, "{tasks}");
        let task_id = tasks["items"][0]["id"].as_str().expect("a task").to_owned();
        let mut task = Value::Null;
        for _ in 0..100 {
            let (st, t) = app.get(&evil, &format!("/v1/tasks/{task_id}")).await;
            assert_eq!(st, 200, "{t}");
            task = t;
            if !["queued", "running"].contains(&task["status"].as_str().unwrap_or("")) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(task["status"], "failed", "{task}");
        let text = task.to_string();
        assert!(text.contains("Permission denied"), "{text}");
        assert!(!text.contains(CANARY) && !text.contains(v.key.trim()));

        // The victim's files and the server's are untouched.
        assert_eq!(
            std::fs::read_to_string(v.ws.join("canary.txt")).unwrap(),
            CANARY
        );
        assert!(!v.ws.join("pwned.txt").exists());
        assert!(!app.home.join("pwned.txt").exists());
        assert_eq!(
            std::fs::read_to_string(app.home.join("keys/signing.key")).unwrap(),
            v.key
        );
        // The limits held: the file stopped at the size limit.
        let evil_ws = app.home.join("tenants/evil/workspaces/mallory/default");
        let big = std::fs::metadata(evil_ws.join("big")).unwrap().len();
        assert!(big <= 1024 * 1024, "dd wrote {big} bytes");
        // Nothing of the canary or the key anywhere the attacker's work left
        // a trace: its workspace, HOME, temp, artifacts, task logs, the log.
        let scanned = assert_secret_absent(&app.home, CANARY, &["acme", "keys"]);
        assert!(scanned > 3);
        assert_secret_absent(&app.home, v.key.trim(), &["acme", "keys"]);
        // acme still works.
        let acme = app.token("acme", "alice");
        let acme_sid = app.create_session(&acme).await;
        let evs = run_script(
            &app,
            &acme,
            &acme_sid,
            terminal("cat canary.txt"),
            "allow_once",
        )
        .await;
        assert_eq!(results(&evs), ["succeeded"]);
        assert!(result_text(&evs).contains(CANARY));
    }
}

#[tokio::test]
async fn ordinary_work_runs_confined() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let (_, ready) = app.get(&tok, "/readyz").await;
    assert_eq!(ready["sandbox"]["status"], "confined", "{ready}");
    let ws = app.home.join("tenants/default/workspaces/alice/default");
    std::fs::write(ws.join("own.txt"), "hello walls").unwrap();
    for (command, expect) in [
        ("cat own.txt | tr a-z A-Z", "HELLO WALLS"),
        ("python3 -c 'print(6*7)'", "42"),
        ("ls / | grep -c usr", "1"),
        (
            "git init -q repo && cd repo && git config user.email a@b.c && git config user.name n \
             && echo x > f && git add f && git commit -qm first && git log --oneline | wc -l",
            "1",
        ),
        (
            "echo $HOME; touch $HOME/.profile-test && echo home-ok",
            "home-ok",
        ),
        ("mktemp | grep -c runtime/tmp", "1"),
        ("sh -c 'echo nested' | cat", "nested"),
    ] {
        let evs = run_script(&app, &tok, &sid, terminal(command), "allow_once").await;
        assert_eq!(
            results(&evs),
            ["succeeded"],
            "{command}: {}",
            result_text(&evs)
        );
        assert!(
            result_text(&evs).contains(expect),
            "{command}: {}",
            result_text(&evs)
        );
    }
    // A file the server wrote for the tenant stays the tenant's to change.
    let evs = run_script(
        &app,
        &tok,
        &sid,
        call(
            "write_file",
            json!({"path": "made/by/tool.txt", "content": "one"}),
        ),
        "allow_once",
    )
    .await;
    assert_eq!(results(&evs), ["succeeded"]);
    let evs = run_script(
        &app,
        &tok,
        &sid,
        terminal("echo two >> made/by/tool.txt && mkdir made/by/more && cat made/by/tool.txt"),
        "allow_once",
    )
    .await;
    assert_eq!(results(&evs), ["succeeded"], "{}", result_text(&evs));
}

#[tokio::test]
async fn git_never_discovers_a_repository_around_the_home() {
    let dir = traversable_tempdir();
    let repo = dir.path();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(repo)
            .status()
            .unwrap();
        assert!(ok.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(
        repo.join("deploy.env"),
        "DEPLOY_SECRET=enclosing-repo-secret",
    )
    .unwrap();
    git(&[
        "-c",
        "user.email=a@b.c",
        "-c",
        "user.name=n",
        "add",
        "deploy.env",
    ]);
    git(&[
        "-c",
        "user.email=a@b.c",
        "-c",
        "user.name=n",
        "commit",
        "-qm",
        "deploy",
    ]);
    let app = spawn_with_home(Backend::Sqlite, repo.join(".demiurge"), Opts::default()).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    for command in [
        "git log --oneline",
        "git show HEAD:deploy.env",
        "git status",
    ] {
        let evs = run_script(&app, &tok, &sid, terminal(command), "allow_once").await;
        let text = result_text(&evs);
        assert!(!text.contains("enclosing-repo-secret"), "{command}: {text}");
        assert!(!text.contains("deploy"), "{command}: {text}");
        assert_eq!(results(&evs), ["failed"], "{command}: {text}");
    }
}

#[tokio::test]
async fn network_none_cuts_the_terminal_off() {
    let opts = Opts {
        args: vec!["--terminal-network".into(), "none".into()],
        ..Opts::default()
    };
    let app = spawn_with(Backend::Sqlite, opts).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let probe = |app: &TestApp| {
        let port = app.addr.rsplit(':').next().unwrap().to_owned();
        format!(
            "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2); print('connected')\""
        )
    };
    let evs = run_script(&app, &tok, &sid, terminal(&probe(&app)), "allow_once").await;
    assert_eq!(results(&evs), ["failed"], "{}", result_text(&evs));
    assert!(!result_text(&evs).contains("connected"));
    // The default keeps the network.
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let evs = run_script(&app, &tok, &sid, terminal(&probe(&app)), "allow_once").await;
    assert_eq!(results(&evs), ["succeeded"], "{}", result_text(&evs));
}

#[tokio::test]
async fn sandbox_off_is_announced() {
    let opts = Opts {
        args: vec!["--sandbox".into(), "off".into()],
        ..Opts::default()
    };
    let app = spawn_with(Backend::Sqlite, opts).await;
    let tok = app.token("default", "alice");
    let (_, ready) = app.get(&tok, "/readyz").await;
    assert_eq!(ready["sandbox"]["status"], "off", "{ready}");
    assert!(app.log().contains("UNCONFINED"), "{}", app.log());
}

#[tokio::test]
async fn an_unusable_sandbox_makes_the_terminal_unavailable_with_the_reason() {
    // A home below a folder an unprivileged uid cannot pass: a root server's
    // children could not reach their HOME, so nothing runs (fail closed).
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    if running_as_root() {
        let app = spawn_with_home(Backend::Sqlite, dir.path().join("home"), Opts::default()).await;
        let tok = app.token("default", "alice");
        let (_, ready) = app.get(&tok, "/readyz").await;
        assert_eq!(ready["sandbox"]["status"], "unavailable", "{ready}");
        assert!(ready["sandbox"]["reason"].as_str().unwrap().contains("o+x"));
        let sid = app.create_session(&tok).await;
        let (_, tools) = app.get(&tok, &format!("/v1/sessions/{sid}/tools")).await;
        assert!(tools["unavailable"]
            .as_array()
            .unwrap()
            .contains(&json!("terminal")));
        assert!(tools["unavailable_reasons"]["terminal"]
            .as_str()
            .unwrap()
            .contains("o+x"));
        let evs = run_script(&app, &tok, &sid, terminal("true"), "allow_once").await;
        assert_eq!(results(&evs), ["not_found"]);
    }
}

#[tokio::test]
async fn the_database_stays_intact_under_member_probes_and_the_cli() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("evil", "mallory");
    let sid = app.create_session(&tok).await;
    let h = app.home.canonicalize().unwrap().display().to_string();
    // A member's attempts on the database files, then the operator's CLI
    // writing to the same database while the server runs.
    for script in [
        call("search_files", json!({"path": h, "query": "SQLite"})),
        call("read_file", json!({"path": format!("{h}/demiurge.db-wal")})),
        call("read_file", json!({"path": format!("{h}/demiurge.db-shm")})),
        call(
            "read_file",
            json!({"path": format!("{h}/demiurge-usage.db")}),
        ),
        terminal(&format!(
            "cat {h}/demiurge.db-wal > /dev/null; sqlite3 {h}/demiurge.db .tables"
        )),
        terminal(&format!("cat {h}/demiurge-usage.db > /dev/null")),
    ] {
        let evs = run_script(&app, &tok, &sid, script, "allow_once").await;
        assert_ne!(results(&evs), ["succeeded"], "{}", result_text(&evs));
    }
    for i in 0..5 {
        let out = app.cli(&[
            "token",
            "issue",
            "--tenant",
            "acme",
            "--principal",
            &format!("p{i}"),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(
        app.home.join("demiurge.db-wal").exists(),
        "the live WAL must survive"
    );
    assert!(
        app.home.join("demiurge.db-shm").exists(),
        "the live shm must survive"
    );
    for _ in 0..3 {
        run_script(
            &app,
            &tok,
            &sid,
            json!([{"content": "acknowledged"}]),
            "deny",
        )
        .await;
    }
    let (_, before) = app.get(&tok, &format!("/v1/sessions/{sid}")).await;
    let seq = before["last_seq"].as_i64().unwrap();
    // Acknowledged events survive a crash.
    let app = app.restart_after_crash().await;
    let (st, after) = app.get(&tok, &format!("/v1/sessions/{sid}")).await;
    assert_eq!(st, 200, "{after}");
    assert_eq!(after["last_seq"].as_i64().unwrap(), seq);
    let check = std::process::Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import sqlite3; print(sqlite3.connect('{}').execute('PRAGMA integrity_check').fetchone()[0])",
            app.home.join("demiurge.db").display()
        ))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&check.stdout).trim(), "ok");
    assert!(app.home.join("demiurge-usage.db").is_file());
}

#[tokio::test]
async fn file_tools_cannot_be_raced_out_of_the_workspace_by_the_tenants_own_commands() {
    let app = spawn_app(Backend::Sqlite).await;
    let v = victim(&app).await;
    let acme_ws = v.ws.canonicalize().unwrap().display().to_string();
    let evil = app.token("evil", "mallory");
    let sid = app.create_session(&evil).await;
    // The tenant's own command swaps `x` between a plain folder (what the
    // path check sees) and a link to the victim's workspace (what a naive
    // open would follow), atomically (renameat2 RENAME_EXCHANGE) and as fast
    // as it can.
    let flip = format!(
        "mkdir -p x && echo mine > x/canary.txt && ln -sfn {acme_ws} l && python3 -c \"
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
end = time.time() + 25
while time.time() < end:
    libc.renameat2(-100, b'x', -100, b'l', 2)
\""
    );
    let evs = run_script(
        &app,
        &evil,
        &sid,
        call(
            "terminal",
            json!({"command": flip, "background": true, "timeout_seconds": 30}),
        ),
        "allow_once",
    )
    .await;
    assert_eq!(results(&evs), ["succeeded"], "{}", result_text(&evs));
    let reads: Vec<Value> = (0..25)
        .map(|_| json!({"name": "read_file", "arguments": {"path": "x/canary.txt"}}))
        .collect();
    let writes: Vec<Value> = (0..5)
        .map(
            |_| json!({"name": "write_file", "arguments": {"path": "x/pwned.txt", "content": "x"}}),
        )
        .collect();
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    for _ in 0..4 {
        let script = json!([
            {"tool_calls": reads}, {"tool_calls": reads}, {"tool_calls": writes}, {"content": "done"}
        ]);
        let evs = run_script(&app, &evil, &sid, script, "allow_once").await;
        assert_clean("raced reads", &evs, &v);
        for r in results(&evs) {
            *outcomes.entry(r).or_default() += 1;
        }
    }
    assert!(
        !v.ws.join("pwned.txt").exists(),
        "a raced write reached the victim"
    );
    // Some calls saw the folder, some the link: the race really ran.
    assert_eq!(outcomes.values().sum::<usize>(), 4 * 55, "{outcomes:?}");
    assert!(outcomes.contains_key("succeeded"), "{outcomes:?}");
    assert!(
        outcomes.contains_key("denied") || outcomes.contains_key("failed"),
        "{outcomes:?}"
    );
    assert_eq!(
        std::fs::read_to_string(v.ws.join("canary.txt")).unwrap(),
        CANARY
    );
}

#[tokio::test]
async fn open_streams_end_when_their_principal_is_disabled() {
    use futures_util::StreamExt;
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("evil", "mallory");
    let sid = app.create_session(&tok).await;
    let mut ws = crate::streams::ws_connect(&app, &sid, "", Some(&tok)).await;
    let sse = app
        .client
        .get(app.url(&format!("/v1/sessions/{sid}/events")))
        .bearer_auth(&tok)
        .send()
        .await
        .unwrap();
    assert_eq!(sse.status(), 200);
    let out = app.cli(&[
        "principal",
        "disable",
        "--tenant",
        "evil",
        "--principal",
        "mallory",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The WebSocket is closed with 4001 within a few seconds.
    let closed = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        loop {
            match ws.next().await {
                Some(Ok(tokio_tungstenite::tungstenite::Message::Close(frame))) => {
                    return frame.map(|f| u16::from(f.code));
                }
                Some(Ok(_)) => continue,
                _ => return None,
            }
        }
    })
    .await
    .expect("the socket closes");
    assert_eq!(closed, Some(4001));
    // The SSE stream ends too.
    let mut body = sse.bytes_stream();
    let ended = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        while let Some(chunk) = body.next().await {
            if chunk.is_err() {
                break;
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the event stream ends");
}

#[tokio::test]
async fn memory_is_limited_per_process_and_escaped_processes_end_with_the_server() {
    let opts = Opts {
        args: vec!["--sandbox-max-memory".into(), "104857600".into()],
        ..Opts::default()
    };
    let mut app = spawn_with(Backend::Sqlite, opts).await;
    let tok = app.token("evil", "mallory");
    let sid = app.create_session(&tok).await;
    let evs = run_script(
        &app,
        &tok,
        &sid,
        terminal("python3 -c \"b = bytearray(300 * 1024 * 1024); print('allocated')\""),
        "allow_once",
    )
    .await;
    assert_eq!(results(&evs), ["failed"], "{}", result_text(&evs));
    assert!(
        result_text(&evs).contains("MemoryError"),
        "{}",
        result_text(&evs)
    );
    // A process that leaves its command's group outlives the command ...
    let evs = run_script(
        &app,
        &tok,
        &sid,
        terminal("setsid sleep 737 > /dev/null 2>&1 < /dev/null & echo started"),
        "allow_once",
    )
    .await;
    assert_eq!(results(&evs), ["succeeded"], "{}", result_text(&evs));
    let alive = || {
        std::process::Command::new("pgrep")
            .args(["-f", "^sleep 737$"])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    };
    assert!(alive(), "the escaped process runs while the server does");
    // ... but not the server.
    app.signal("TERM");
    assert!(app.wait_exit(std::time::Duration::from_secs(30)).is_some());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while alive() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(!alive(), "an escaped process outlived the server");
}

#[tokio::test]
async fn unix_sockets_of_local_services_are_out_of_reach() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("evil", "mallory");
    let sid = app.create_session(&tok).await;
    // A local service's socket, open to everyone by its permissions.
    let dir = traversable_tempdir();
    let path = dir.path().join("service.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    let probe = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); print('connected')\"",
        path.display()
    );
    let evs = run_script(&app, &tok, &sid, terminal(&probe), "allow_once").await;
    assert_eq!(results(&evs), ["failed"], "{}", result_text(&evs));
    assert!(!result_text(&evs).contains("connected"));
    assert!(
        result_text(&evs).contains("PermissionError"),
        "{}",
        result_text(&evs)
    );
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "nothing connected");
    // A socket pair (no path, nothing outside) still works.
    let pair = "python3 -c \"import socket; a, b = socket.socketpair(); a.send(b'hi'); print(b.recv(2).decode())\"";
    let evs = run_script(&app, &tok, &sid, terminal(pair), "allow_once").await;
    assert_eq!(results(&evs), ["succeeded"], "{}", result_text(&evs));
    assert!(result_text(&evs).contains("hi"));
}

#[tokio::test]
async fn git_the_host_runs_in_a_tenants_agents_tree_is_confined_too() {
    let app = spawn_app(Backend::Sqlite).await;
    // A new tenant's first session seeds its agents tree and commits it.
    let tok = app.token("acme", "alice");
    app.create_session(&tok).await;
    let agents = app.home.join("tenants/acme/agents");
    let log = std::process::Command::new("git")
        .args(["-c", "safe.directory=*", "log", "--oneline"])
        .current_dir(&agents)
        .output()
        .unwrap();
    assert!(
        log.status.success(),
        "{}",
        String::from_utf8_lossy(&log.stderr)
    );
    assert!(String::from_utf8_lossy(&log.stdout).contains("seed the assistant core"));
    if running_as_root() {
        // The commit was made by the tenant's confined uid, not by root.
        use std::os::unix::fs::MetadataExt;
        let objects = std::fs::metadata(agents.join(".git/objects")).unwrap();
        assert_ne!(objects.uid(), 0, "git ran as root");
    }
}

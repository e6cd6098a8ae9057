//! `spawn_app()` and friends: the harness every black-box test shares.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{json, Value};
use sqlx::Connection;

pub const BIN: &str = env!("CARGO_BIN_EXE_demiurge");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Every backend the store must work on. PostgreSQL is required unless
/// `DEMIURGE_TEST_SKIP_POSTGRES=1` says otherwise, so it is never skipped silently.
pub fn backends() -> Vec<Backend> {
    if std::env::var("DEMIURGE_TEST_SKIP_POSTGRES").as_deref() == Ok("1") {
        eprintln!("NOTE: PostgreSQL tests skipped by DEMIURGE_TEST_SKIP_POSTGRES=1");
        vec![Backend::Sqlite]
    } else {
        vec![Backend::Sqlite, Backend::Postgres]
    }
}

fn pg_admin_url() -> String {
    std::env::var("DEMIURGE_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// A throwaway PostgreSQL database, dropped when this value is.
pub struct PgDatabase {
    pub name: String,
    pub url: String,
}

impl PgDatabase {
    pub async fn create() -> Self {
        let admin = pg_admin_url();
        let name = format!("dm_test_{}", uuid::Uuid::new_v4().simple());
        let mut conn = sqlx::PgConnection::connect(&admin)
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL at {admin} is required for these tests: {e}"));
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.ok();
        let base = admin
            .rsplit_once('/')
            .map(|(b, _)| b.to_owned())
            .unwrap_or(admin);
        Self {
            url: format!("{base}/{name}"),
            name,
        }
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let name = self.name.clone();
        let admin = pg_admin_url();
        // Drop needs async I/O; do it on a private runtime in a thread.
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                if let Ok(mut c) = sqlx::PgConnection::connect(&admin).await {
                    let _ = sqlx::query(sqlx::AssertSqlSafe(format!(
                        "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
                    )))
                    .execute(&mut c)
                    .await;
                }
            });
        })
        .join();
    }
}

/// How to start a server.
#[derive(Clone, Default)]
pub struct Opts {
    pub env: Vec<(String, String)>,
    pub args: Vec<String>,
}

impl Opts {
    pub fn env(mut self, k: &str, v: &str) -> Self {
        self.env.push((k.into(), v.into()));
        self
    }
}

pub struct TestApp {
    pub addr: String,
    pub home: PathBuf,
    pub backend: Backend,
    pub database_url: Option<String>,
    pub child: Child,
    pub stdout_lines: Vec<String>,
    pub log_path: PathBuf,
    pub client: reqwest::Client,
    opts: Opts,
    _home_dir: Option<tempfile::TempDir>,
    _pg: Option<std::sync::Arc<PgDatabase>>,
}

pub async fn spawn_app(backend: Backend) -> TestApp {
    spawn_with(backend, Opts::default()).await
}

/// A temporary folder an unprivileged uid may pass through (`0711`): a
/// root server's confined children run as their tenant's uid and must reach
/// their HOME and temp folder under the home inside it.
pub fn traversable_tempdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    dir
}

/// A server whose home is `home` (the caller keeps its folder alive).
pub async fn spawn_with_home(backend: Backend, home: PathBuf, opts: Opts) -> TestApp {
    let pg = match backend {
        Backend::Sqlite => None,
        Backend::Postgres => Some(std::sync::Arc::new(PgDatabase::create().await)),
    };
    let database_url = pg.as_ref().map(|p| p.url.clone());
    let mut app = start(backend, home, database_url, opts).await;
    app._pg = pg;
    app
}

pub async fn spawn_with(backend: Backend, opts: Opts) -> TestApp {
    let home_dir = traversable_tempdir();
    let home = home_dir.path().join("home");
    let pg = match backend {
        Backend::Sqlite => None,
        Backend::Postgres => Some(std::sync::Arc::new(PgDatabase::create().await)),
    };
    let database_url = pg.as_ref().map(|p| p.url.clone());
    let mut app = start(backend, home, database_url, opts).await;
    app._home_dir = Some(home_dir);
    app._pg = pg;
    app
}

async fn start(
    backend: Backend,
    home: PathBuf,
    database_url: Option<String>,
    opts: Opts,
) -> TestApp {
    std::fs::create_dir_all(&home).unwrap();
    let log_path = home.join(format!("server-{}.log", uuid::Uuid::new_v4().simple()));
    let log = std::fs::File::create(&log_path).unwrap();
    let mut cmd = Command::new(BIN);
    cmd.arg("serve")
        .arg("--bind")
        .arg("127.0.0.1:0")
        .arg("--home")
        .arg(&home)
        .args(&opts.args)
        .env_remove("DATABASE_URL")
        .env_remove("DEMIURGE_PROVIDER")
        .env_remove("DEMIURGE_OPENAI_API_KEY")
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log));
    if let Some(url) = &database_url {
        cmd.arg("--database-url").arg(url);
    }
    for (k, v) in &opts.env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let (addr, lines) = wait_listening(&mut child, &log_path);
    let app = TestApp {
        addr,
        home,
        backend,
        database_url,
        child,
        stdout_lines: lines,
        log_path,
        client: demiurge::net::client_builder().build().unwrap(),
        opts,
        _home_dir: None,
        _pg: None,
    };
    app.wait_ready().await;
    app
}

/// The stdout lines of a starting server up to its `listening on` line,
/// and its address; its stdout is drained after that so it never blocks on
/// a full pipe. Kills it and fails with its log (`log_path`, its stderr)
/// when it does not start.
pub fn wait_listening(child: &mut Child, log_path: &Path) -> (String, Vec<String>) {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // Generous: on a loaded 2-core machine PostgreSQL DDL alone can take seconds.
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut lines = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(line) = rx.recv_timeout(left) else {
            let _ = child.kill();
            let _ = child.wait();
            let log = std::fs::read_to_string(log_path).unwrap_or_default();
            panic!("server did not start: stdout {lines:?}\nlog:\n{log}");
        };
        let found = line.strip_prefix("listening on http://").map(str::to_owned);
        lines.push(line);
        if let Some(addr) = found {
            std::thread::spawn(move || while rx.recv().is_ok() {});
            return (addr, lines);
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    async fn wait_ready(&self) {
        for _ in 0..300 {
            if let Ok(r) = self.client.get(self.url("/readyz")).send().await {
                if r.status() == 200 {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("server never became ready");
    }

    /// Run a CLI command against this app's home and database.
    pub fn cli(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .env("DEMIURGE_HOME", &self.home)
            .env_remove("DATABASE_URL");
        if let Some(url) = &self.database_url {
            cmd.env("DATABASE_URL", url);
        }
        cmd.output().unwrap()
    }

    pub fn token(&self, tenant: &str, principal: &str) -> String {
        self.token_with(tenant, principal, "member", "1h")
    }

    pub fn token_with(&self, tenant: &str, principal: &str, role: &str, ttl: &str) -> String {
        let out = self.cli(&[
            "token",
            "issue",
            "--tenant",
            tenant,
            "--principal",
            principal,
            "--role",
            role,
            "--ttl",
            ttl,
        ]);
        assert!(
            out.status.success(),
            "token issue failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .trim()
            .lines()
            .last()
            .unwrap()
            .to_owned()
    }

    /// A direct connection to the app's database (its SQLite file, or its
    /// PostgreSQL database).
    pub async fn db(&self) -> sqlx::AnyConnection {
        self.db_file("demiurge.db").await
    }

    /// A direct connection to where the usage tables live: on SQLite, the
    /// usage file beside the database.
    pub async fn usage_db(&self) -> sqlx::AnyConnection {
        self.db_file("demiurge-usage.db").await
    }

    async fn db_file(&self, sqlite_file: &str) -> sqlx::AnyConnection {
        sqlx::any::install_default_drivers();
        let url = match &self.database_url {
            Some(url) => url.clone(),
            None => format!("sqlite://{}", self.home.join(sqlite_file).display()),
        };
        sqlx::AnyConnection::connect(&url).await.unwrap()
    }

    pub async fn get(&self, token: &str, path: &str) -> (u16, Value) {
        let r = self
            .client
            .get(self.url(path))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn post(&self, token: &str, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .client
            .post(self.url(path))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn create_session(&self, token: &str) -> String {
        let (st, body) = self
            .post(token, "/v1/sessions", json!({"title": "test"}))
            .await;
        assert_eq!(st, 201, "{body}");
        body["id"].as_str().unwrap().to_owned()
    }

    pub async fn start_turn(&self, token: &str, sid: &str, body: Value) -> String {
        let (st, b) = self
            .post(token, &format!("/v1/sessions/{sid}/turns"), body)
            .await;
        assert_eq!(st, 202, "{b}");
        b["turn_id"].as_str().unwrap().to_owned()
    }

    /// Read SSE events until `until` holds for one, or time runs out.
    pub async fn sse_until(
        &self,
        token: &str,
        sid: &str,
        query: &str,
        last_event_id: Option<i64>,
        until: impl Fn(&Value) -> bool,
    ) -> Vec<Value> {
        self.sse_at(
            token,
            &format!("/v1/sessions/{sid}/events{query}"),
            last_event_id,
            until,
        )
        .await
    }

    /// Read the Server-Sent Events at `path` until `until` holds for one
    /// (or 20 s pass); every event read, in order.
    pub async fn sse_at(
        &self,
        token: &str,
        path: &str,
        last_event_id: Option<i64>,
        until: impl Fn(&Value) -> bool,
    ) -> Vec<Value> {
        read_sse(
            self.client.clone(),
            self.url(path),
            token.to_owned(),
            last_event_id,
            until,
        )
        .await
    }

    /// Wait for a turn to leave `running`.
    pub async fn wait_turn(&self, token: &str, sid: &str, tid: &str) -> Value {
        for _ in 0..750 {
            let (st, t) = self
                .get(token, &format!("/v1/sessions/{sid}/turns/{tid}"))
                .await;
            assert_eq!(st, 200, "{t}");
            if t["status"] != "running" {
                return t;
            }
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
        let log = self.log();
        let tail: Vec<&str> = log.lines().rev().take(30).collect();
        panic!(
            "turn {tid} never finished; server log tail:\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }

    /// `GET /metrics` as text.
    pub async fn metrics_text(&self) -> String {
        self.client
            .get(self.url("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// Send a signal to the server process.
    pub fn signal(&self, sig: &str) {
        let st = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(st.success());
    }

    /// Kill the server hard, then start it again on the same home and database.
    pub async fn restart_after_crash(mut self) -> TestApp {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let home_dir = self._home_dir.take();
        let pg = self._pg.take();
        let mut next = start(
            self.backend,
            self.home.clone(),
            self.database_url.clone(),
            self.opts.clone(),
        )
        .await;
        next._home_dir = home_dir;
        next._pg = pg;
        next
    }

    /// A second instance on the same database, with its own home but this
    /// instance's signing key (so the same tokens work on both).
    pub async fn spawn_peer(&self) -> TestApp {
        let dir = traversable_tempdir();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join("keys")).unwrap();
        std::fs::copy(
            self.home.join("keys/signing.key"),
            home.join("keys/signing.key"),
        )
        .unwrap();
        let mut peer = start(
            self.backend,
            home,
            self.database_url.clone(),
            self.opts.clone(),
        )
        .await;
        peer._home_dir = Some(dir);
        peer
    }

    /// A second instance on the same database and the same home (its
    /// agents trees included), as instances sharing a volume run: each
    /// with its own `--instance-id`.
    pub async fn spawn_peer_sharing_home(&self) -> TestApp {
        let mut opts = self.opts.clone();
        opts.args.push("--instance-id".into());
        opts.args.push(format!(
            "peer-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        ));
        start(
            self.backend,
            self.home.clone(),
            self.database_url.clone(),
            opts,
        )
        .await
    }

    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

/// Whether the tests run as root (the per-tenant uid path of the sandbox).
pub fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

pub fn is_terminal(ev: &Value) -> bool {
    matches!(
        ev["type"].as_str(),
        Some("turn.completed" | "turn.failed" | "turn.cancelled")
    )
}

pub fn types(evs: &[Value]) -> Vec<&str> {
    evs.iter().filter_map(|e| e["type"].as_str()).collect()
}

/// File mode bits.
pub fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// A local stand-in for an OpenAI-compatible endpoint: replies come from a
/// queue (status, body, delay); every request is recorded.
pub struct StandIn {
    pub base_url: String,
    pub state: std::sync::Arc<StandInState>,
}

#[derive(Default)]
pub struct StandInState {
    pub replies: std::sync::Mutex<std::collections::VecDeque<(u16, Value, Duration)>>,
    pub requests: std::sync::Mutex<Vec<(Option<String>, Value)>>,
}

impl StandIn {
    pub async fn start() -> StandIn {
        use axum::extract::State;
        use axum::http::{HeaderMap, StatusCode};
        use axum::routing::post;
        let state = std::sync::Arc::new(StandInState::default());
        async fn chat(
            State(s): State<std::sync::Arc<StandInState>>,
            headers: HeaderMap,
            axum::Json(body): axum::Json<Value>,
        ) -> (StatusCode, axum::Json<Value>) {
            let auth = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            s.requests.lock().unwrap().push((auth, body));
            let next = s.replies.lock().unwrap().pop_front();
            let (status, reply, delay) =
                next.unwrap_or((200, text_reply("stand-in default"), Duration::ZERO));
            tokio::time::sleep(delay).await;
            (StatusCode::from_u16(status).unwrap(), axum::Json(reply))
        }
        let router = axum::Router::new()
            .route("/v1/chat/completions", post(chat))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await.ok() });
        StandIn {
            base_url: format!("http://{addr}/v1"),
            state,
        }
    }

    pub fn push(&self, status: u16, body: Value, delay: Duration) {
        self.state
            .replies
            .lock()
            .unwrap()
            .push_back((status, body, delay));
    }

    /// Wait (up to 10 s) until at least `n` requests have arrived.
    pub async fn wait_requests(&self, n: usize) {
        for _ in 0..1000 {
            if self.requests().len() >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the stand-in never received {n} requests");
    }

    pub fn requests(&self) -> Vec<(Option<String>, Value)> {
        self.state.requests.lock().unwrap().clone()
    }

    /// Server options that point `demiurge` at this stand-in.
    pub fn opts(&self, key: &str) -> Opts {
        Opts::default()
            .env("DEMIURGE_PROVIDER", "openai")
            .env("DEMIURGE_OPENAI_BASE_URL", &self.base_url)
            .env("DEMIURGE_OPENAI_API_KEY", key)
            .env("DEMIURGE_MODEL", "stand-in-model")
    }
}

pub fn text_reply(text: &str) -> Value {
    json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": text}}]})
}

pub fn tool_reply(name: &str, args: Value) -> Value {
    json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "call_abc", "type": "function",
            "function": {"name": name, "arguments": args.to_string()}}]}}]})
}

/// Start a scripted turn and answer every approval it asks for with
/// `decision`; returns all of the turn's events, up to its terminal one.
pub async fn run_script(
    app: &TestApp,
    tok: &str,
    sid: &str,
    script: Value,
    decision: &str,
) -> Vec<Value> {
    let (_, s) = app.get(tok, &format!("/v1/sessions/{sid}")).await;
    let mut after = s["last_seq"].as_i64().unwrap();
    app.start_turn(tok, sid, json!({"input": "go", "script": script}))
        .await;
    let mut all: Vec<Value> = Vec::new();
    loop {
        let evs = app
            .sse_until(tok, sid, &format!("?after={after}"), None, |e| {
                is_terminal(e)
                    || e["type"] == "approval.requested"
                    || e["type"] == "clarify.requested"
            })
            .await;
        assert!(
            !evs.is_empty(),
            "the turn stalled after {:?}\n{}",
            types(&all),
            app.log()
        );
        after = evs.last().unwrap()["seq"].as_i64().unwrap();
        all.extend(evs);
        let last = all.last().unwrap().clone();
        if is_terminal(&last) {
            return all;
        }
        if last["type"] == "approval.requested" {
            let id = last["data"]["approval_id"].as_str().unwrap();
            let (st, b) = app
                .post(
                    tok,
                    &format!("/v1/approvals/{id}"),
                    json!({"decision": decision}),
                )
                .await;
            assert_eq!(st, 200, "{b}");
        }
    }
}

/// Wait for the first approval request matching `pred` and allow it once.
pub async fn allow_next(app: &TestApp, tok: &str, sid: &str, pred: impl Fn(&Value) -> bool) {
    let evs = app
        .sse_until(tok, sid, "", None, |e| {
            e["type"] == "approval.requested" && pred(e)
        })
        .await;
    let id = evs.last().unwrap()["data"]["approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (st, b) = app
        .post(
            tok,
            &format!("/v1/approvals/{id}"),
            json!({"decision": "allow_once"}),
        )
        .await;
    if st == 409 {
        // A child's request is mirrored into its parent's session, and a
        // parent turn still running under `run_script` may have allowed the
        // mirror first: allowed is what was wanted.
        let (_, allowed) = app.get(tok, "/v1/approvals?state=allowed").await;
        let items = allowed["items"].as_array().cloned().unwrap_or_default();
        assert!(items.iter().any(|a| a["id"] == id.as_str()), "{b}");
        return;
    }
    assert_eq!(st, 200, "{b}");
}

/// Assert that no file under `root` (except folders named in `skip`)
/// contains `secret`; returns how many files were read.
pub fn assert_secret_absent(root: &Path, secret: &str, skip: &[&str]) -> usize {
    let mut stack = vec![root.to_path_buf()];
    let mut scanned = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if skip.iter().any(|s| p.ends_with(s)) {
                continue;
            }
            // A link is a pointer, not a copy: judge only what lies here.
            if std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink()) {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                scanned += 1;
                let hit = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
                assert!(!hit, "the secret reached {}", p.display());
            }
        }
    }
    scanned
}

/// The usage row of `tool` in `tenant` today (polled: the meter writes off
/// the call's path), read by a tenant admin.
pub async fn tool_usage(app: &TestApp, tenant: &str, tool: &str) -> Value {
    let admin = app.token_with(tenant, "usage-admin", "admin", "1h");
    for _ in 0..200 {
        let (st, r) = app.get(&admin, "/v1/usage?group=tool").await;
        assert_eq!(st, 200, "{r}");
        if let Some(row) = r["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|row| row["tool"] == tool && row["tool_calls"].as_u64() > Some(0))
        {
            return row.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no usage of {tool} in {tenant}");
}

/// Today's usage rows of `tenant` grouped by provider and model, once at
/// least `calls` model calls are recorded.
pub async fn model_usage(app: &TestApp, tenant: &str, calls: u64) -> Vec<Value> {
    let admin = app.token_with(tenant, "usage-admin", "admin", "1h");
    let mut last = Value::Null;
    for _ in 0..200 {
        let (st, r) = app.get(&admin, "/v1/usage?group=provider,model").await;
        assert_eq!(st, 200, "{r}");
        // Tool calls have rows of their own (no provider, no model).
        let rows: Vec<Value> = r["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["model_calls"].as_u64() > Some(0))
            .cloned()
            .collect();
        let seen: u64 = rows
            .iter()
            .map(|r| r["model_calls"].as_u64().unwrap())
            .sum();
        if seen >= calls {
            return rows;
        }
        last = r;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("fewer than {calls} model calls in {tenant}: {last}");
}

/// Read the Server-Sent Events at `url` until `until` holds for one (or
/// 20 s pass); every event read, in order. Owns its inputs, so it can run
/// in a task of its own while the test goes on.
pub async fn read_sse(
    client: reqwest::Client,
    url: String,
    token: String,
    last_event_id: Option<i64>,
    until: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut req = client
        .get(url)
        .header("Accept", "text/event-stream")
        .bearer_auth(token);
    if let Some(id) = last_event_id {
        req = req.header("Last-Event-ID", id.to_string());
    }
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let mut stream = resp.bytes_stream();
    let mut buf = String::new();
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let chunk = match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(Ok(c))) => c,
            _ => return out,
        };
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(i) = buf.find("\n\n") {
            let block: String = buf.drain(..i + 2).collect();
            let data: Vec<&str> = block
                .lines()
                .filter_map(|l| l.strip_prefix("data:").map(str::trim_start))
                .collect();
            if data.is_empty() {
                continue;
            }
            let ev: Value = serde_json::from_str(&data.join("\n")).unwrap();
            let stop = until(&ev);
            out.push(ev);
            if stop {
                return out;
            }
        }
    }
}

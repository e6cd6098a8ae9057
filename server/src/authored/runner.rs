//! Warm, confined Python runners. One runner is a `python3` child started
//! through [`crate::exec::sandbox`] (Landlock, the tenant's uid, limits)
//! that reads the read-only copy of a core revision's tools and calls them
//! one at a time over [`super::protocol`]. Runners are kept warm per
//! (tenant, core revision, workspace) — the workspace is part of a child's
//! walls — within [`MAX_IDLE_PER_KEY`] and [`MAX_IDLE`]; a runner that
//! timed out, broke the protocol or exited is killed and never reused.

use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio_util::sync::CancellationToken;

use super::protocol::{self, FromRunner, MAX_LINE_BYTES};
use crate::catalog::AuthoredSpec;
use crate::exec::sandbox::{Request, Sandbox};
use crate::wire::{ToolOutcome, ToolStatus};

/// Idle runners kept per (tenant, revision, workspace).
pub const MAX_IDLE_PER_KEY: usize = 2;
/// Idle runners kept in all.
pub const MAX_IDLE: usize = 32;
/// Calls one runner serves before it is retired (module state stays bounded).
pub const MAX_CALLS_PER_RUNNER: u32 = 10_000;
/// How long a fresh runner may take to say it is ready.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// Characters of a dead runner's stderr shown in its error.
const STDERR_TAIL: usize = 2_000;
/// Files and bytes of one tool folder copied for the runner.
const MAX_TOOL_FILES: usize = 2_000;
const MAX_TOOL_BYTES: u64 = 32 * 1024 * 1024;

const RUNNER_PY: &str = include_str!("python/runner.py");
const SDK_INIT_PY: &str = include_str!("python/demiurge/__init__.py");
const SDK_PY: &str = include_str!("python/demiurge/sdk.py");
const SLOTS_PY: &str = include_str!("python/demiurge/slots.py");

type Key = (String, String, PathBuf);

/// The pool of warm runners of this server, and how long one call may take
/// (`--authored-timeout`).
pub struct Runners {
    idle: Mutex<HashMap<Key, Vec<Runner>>>,
    /// Tool copies known to be complete (skip the disk check).
    copied: Mutex<HashSet<PathBuf>>,
    timeout: Duration,
}

impl std::fmt::Debug for Runners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runners").finish_non_exhaustive()
    }
}

struct Runner {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<String>>,
    calls: u32,
    next_id: u64,
}

impl Drop for Runner {
    fn drop(&mut self) {
        kill_group(&self.child);
    }
}

/// Kill a runner and everything it started (it leads its process group).
fn kill_group(child: &Child) {
    if let Some(pid) = child.id() {
        if let Ok(pid) = i32::try_from(pid) {
            // SAFETY: kill(2) with a negative pid signals that process
            // group; no memory is touched.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
}

/// Everything one call needs, built by the tool adapter from its env.
pub struct Invocation<'a> {
    pub sandbox: &'a Sandbox,
    pub tenant: &'a str,
    /// Identity of the core revision (any text; hashed into a folder name).
    pub revision: &'a str,
    /// The read-only copy of this revision (`HomeLayout::authored_runtime`).
    pub runtime_dir: PathBuf,
    /// The session's workspace (canonical): read-write, the working directory.
    pub workspace: &'a Path,
    /// The principal's HOME and TMPDIR for child processes.
    pub home: PathBuf,
    pub tmp: PathBuf,
    pub network: bool,
    pub name: &'a str,
    pub spec: &'a AuthoredSpec,
    pub turn: Value,
    pub args: &'a Value,
    pub timeout: Duration,
}

/// How a slot runs (see [`Runners::slot`]).
#[derive(Debug, Clone, Copy)]
pub struct SlotRun<'a> {
    pub phase: &'a str,
    pub lane: &'a str,
    pub history_policy: &'a str,
}

/// A slot's request to the host (`ctx.state`, `ctx.tools`),
/// as the runner sent it.
#[derive(Debug, Clone, PartialEq)]
pub enum HostAsk {
    State {
        scope: String,
        action: String,
        target: String,
        value: Value,
    },
    Tool {
        name: String,
        arguments: Value,
    },
    /// `urllib` in the runner (tools and slots alike).
    Http(super::http::HttpAsk),
}

/// What the host answers: the value, or (`capability` | `invalid` |
/// `unavailable`, why).
pub type HostAnswer = Result<Value, (&'static str, String)>;

/// Answers the host requests of one slot (tools get none: these are slot
/// clients). The time an answer takes does not count against the slot's
/// timeout: a tool call may wait for an approval.
pub type HostFn<'a> =
    dyn Fn(HostAsk) -> futures_util::future::BoxFuture<'a, HostAnswer> + Sync + 'a;

/// Builds a request line from (call id, tool folder, lib folder, workspace).
type LineFn<'a> = dyn Fn(u64, &str, Option<&str>, &str) -> String + Sync + 'a;

/// What the runner answered for one request.
enum Reply {
    Value(Value),
    Raised {
        kind: String,
        error_type: String,
        message: String,
    },
}

/// Why the runner could not produce a result.
enum Broken {
    TimedOut,
    Cancelled,
    /// Protocol broken, runner exited, or could not start: kill it.
    Failed(String),
}

impl Runners {
    pub fn new(timeout: Duration) -> Self {
        Self {
            idle: Mutex::default(),
            copied: Mutex::default(),
            timeout,
        }
    }

    /// How long one call (a tool call or a slot) may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Idle runners right now (for tests and metrics).
    pub fn idle_count(&self) -> usize {
        self.idle
            .lock()
            .map(|m| m.values().map(Vec::len).sum())
            .unwrap_or(0)
    }

    /// Run one call. `allow(capability)` answers `ctx.capability.can`;
    /// `output` receives `ctx.output` and printed text.
    pub async fn call(
        &self,
        inv: Invocation<'_>,
        allow: &(dyn Fn(&str) -> bool + Sync),
        host: &HostFn<'_>,
        output: tokio::sync::mpsc::Sender<(&'static str, String)>,
        cancel: &CancellationToken,
    ) -> ToolOutcome {
        let spec = inv.spec;
        let name = inv.name;
        let turn = inv.turn.clone();
        let args = inv.args;
        let line = |id: u64, dir: &str, lib: Option<&str>, workspace: &str| {
            protocol::CallMessage {
                id,
                name,
                dir,
                lib,
                slot_path: &spec.slot_path,
                module: &spec.module,
                function: &spec.function,
                turn: turn.clone(),
                workspace,
                args,
            }
            .line()
        };
        match self
            .run(&inv, &line, allow, Some(host), &output, cancel)
            .await
        {
            Ok(Reply::Value(value)) => protocol::outcome_from_value(&value),
            Ok(Reply::Raised {
                kind,
                error_type,
                message,
            }) => protocol::outcome_from_error(&kind, &error_type, &message),
            Err(outcome) => outcome,
        }
    }

    /// Run one bootstrap/input/output slot (`inv.spec` describes its folder
    /// and entrypoint, `inv.args` the phase's context). The value is what
    /// the slot asked for (`demiurge.slots`); `Err` is why it failed, one line.
    /// `host` answers `ctx.state` and `ctx.tools` (`None`:
    /// the phase offers none, as bootstrap).
    pub async fn slot(
        &self,
        inv: Invocation<'_>,
        slot: SlotRun<'_>,
        allow: &(dyn Fn(&str) -> bool + Sync),
        host: Option<&HostFn<'_>>,
        cancel: &CancellationToken,
    ) -> Result<Value, String> {
        let spec = inv.spec;
        let name = inv.name;
        let turn = inv.turn.clone();
        let context = inv.args;
        let line = |id: u64, dir: &str, lib: Option<&str>, workspace: &str| {
            protocol::SlotMessage {
                id,
                name,
                dir,
                lib,
                slot_path: &spec.slot_path,
                module: &spec.module,
                function: &spec.function,
                phase: slot.phase,
                lane: slot.lane,
                history_policy: slot.history_policy,
                turn: turn.clone(),
                workspace,
                context,
            }
            .line()
        };
        // Printed text of a slot has no tool card to go to: dropped.
        let (sink, _drop) = tokio::sync::mpsc::channel(1);
        match self.run(&inv, &line, allow, host, &sink, cancel).await {
            Ok(Reply::Value(value)) => Ok(value),
            Ok(Reply::Raised {
                kind,
                error_type,
                message,
            }) => Err(protocol::slot_error(&kind, &error_type, &message)),
            Err(outcome) => Err(match outcome.content {
                Value::String(s) => s,
                other => other.to_string(),
            }),
        }
    }

    /// One exchange on a warm (or new) runner: the request line is built
    /// once the runner's copy of the files and the call id are known.
    async fn run(
        &self,
        inv: &Invocation<'_>,
        line: &LineFn<'_>,
        allow: &(dyn Fn(&str) -> bool + Sync),
        host: Option<&HostFn<'_>>,
        output: &tokio::sync::mpsc::Sender<(&'static str, String)>,
        cancel: &CancellationToken,
    ) -> Result<Reply, ToolOutcome> {
        let (tool_dir, lib_dir) = match self.prepare_files(inv).await {
            Ok(dirs) => dirs,
            Err(e) => {
                return Err(ToolOutcome::error(
                    ToolStatus::Failed,
                    format!("cannot prepare the tool's files: {e}"),
                ))
            }
        };
        let key: Key = (
            inv.tenant.to_owned(),
            inv.revision.to_owned(),
            inv.workspace.to_path_buf(),
        );
        let warm = self
            .idle
            .lock()
            .ok()
            .and_then(|mut m| m.get_mut(&key).and_then(Vec::pop));
        let mut runner = match warm {
            Some(r) => r,
            None => match start(inv, cancel).await {
                Ok(r) => r,
                Err(Broken::Failed(why)) => {
                    return Err(ToolOutcome::error(ToolStatus::Failed, why))
                }
                Err(Broken::TimedOut) => {
                    return Err(ToolOutcome::error(
                        ToolStatus::Failed,
                        "the authored tool runner did not start in time",
                    ))
                }
                Err(Broken::Cancelled) => {
                    return Err(ToolOutcome::error(
                        ToolStatus::Cancelled,
                        "the turn was cancelled",
                    ))
                }
            },
        };
        // The call's own time starts once a runner is ready.
        let deadline = Instant::now() + inv.timeout;
        let dir = tool_dir.to_string_lossy();
        let lib = lib_dir.as_ref().map(|l| l.to_string_lossy());
        let workspace = inv.workspace.to_string_lossy();
        runner.next_id += 1;
        let id = runner.next_id;
        let request = line(id, &dir, lib.as_deref(), &workspace);
        let talk = Talk {
            id,
            allow,
            host,
            output,
        };
        let result = tokio::select! {
            r = exchange(&mut runner, &request, &talk, deadline) => r,
            () = cancel.cancelled() => Err(Broken::Cancelled),
        };
        match result {
            Ok(reply) => {
                runner.calls += 1;
                self.put_back(key, runner);
                Ok(reply)
            }
            Err(broken) => {
                kill_group(&runner.child);
                let _ = tokio::time::timeout(Duration::from_secs(2), runner.child.wait()).await;
                Err(match broken {
                    Broken::TimedOut => ToolOutcome::error(
                        ToolStatus::TimedOut,
                        format!(
                            "{} did not finish within {} s; its runner was stopped",
                            inv.name,
                            inv.timeout.as_secs_f64()
                        ),
                    ),
                    Broken::Cancelled => {
                        ToolOutcome::error(ToolStatus::Cancelled, "the turn was cancelled")
                    }
                    Broken::Failed(why) => {
                        let tail = runner
                            .stderr
                            .lock()
                            .map(|s| s.trim().to_owned())
                            .unwrap_or_default();
                        let why = if tail.is_empty() {
                            why
                        } else {
                            format!(
                                "{why}; stderr: {}",
                                crate::history::clip(&tail, STDERR_TAIL)
                            )
                        };
                        ToolOutcome::error(ToolStatus::Failed, why)
                    }
                })
            }
        }
    }

    fn put_back(&self, key: Key, runner: Runner) {
        if runner.calls >= MAX_CALLS_PER_RUNNER {
            return;
        }
        let Ok(mut idle) = self.idle.lock() else {
            return;
        };
        let total: usize = idle.values().map(Vec::len).sum();
        let slot = idle.entry(key).or_default();
        if slot.len() < MAX_IDLE_PER_KEY && total < MAX_IDLE {
            slot.push(runner);
        }
    }

    /// The read-only copy of the runner, its SDK, the core's `agent/lib`
    /// and this tool, made once per revision; returns the tool's folder and
    /// the lib folder (when the core has one).
    async fn prepare_files(
        &self,
        inv: &Invocation<'_>,
    ) -> std::io::Result<(PathBuf, Option<PathBuf>)> {
        let root = inv.runtime_dir.clone();
        let tool_dir = root.join("tools").join(inv.name);
        let lib_dir = root.join("lib");
        let known = self
            .copied
            .lock()
            .map(|c| c.contains(&tool_dir))
            .unwrap_or(false);
        if !known {
            let source = inv.spec.dir.clone();
            let target = tool_dir.clone();
            let lib_source = core_lib(&inv.spec.dir, &inv.spec.slot_path);
            let lib_target = lib_dir.clone();
            tokio::task::spawn_blocking(move || {
                materialize(&root, &source, &target)?;
                match lib_source {
                    Some(lib) => copy_once(&lib, &lib_target),
                    None => Ok(()),
                }
            })
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))??;
            if let Ok(mut c) = self.copied.lock() {
                c.insert(tool_dir.clone());
            }
        }
        let lib = lib_dir.is_dir().then_some(lib_dir);
        Ok((tool_dir, lib))
    }
}

/// The core's `agent/lib` of a tool folder `dir` at `slot_path`
/// (`agent/tools/<id>`), when it exists.
fn core_lib(dir: &Path, slot_path: &str) -> Option<PathBuf> {
    let parts: Vec<&str> = slot_path.split('/').filter(|p| !p.is_empty()).collect();
    if parts.len() < 3 || parts[0] != "agent" {
        return None;
    }
    let core_root = dir.ancestors().nth(parts.len())?;
    let lib = core_root.join("agent").join("lib");
    lib.is_dir().then_some(lib)
}

/// Copy `source` to `target` once, atomically.
fn copy_once(source: &Path, target: &Path) -> std::io::Result<()> {
    if target.is_dir() {
        return Ok(());
    }
    let staging = target.with_extension(format!("staging-{}", uuid::Uuid::new_v4().simple()));
    let mut budget = (MAX_TOOL_FILES, MAX_TOOL_BYTES);
    if let Err(e) = copy_tree(source, &staging, &mut budget) {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    match std::fs::rename(&staging, target) {
        Ok(()) => Ok(()),
        Err(_) if target.is_dir() => {
            let _ = std::fs::remove_dir_all(&staging);
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Write the runner files (once) and copy the tool folder (once), each
/// atomically: a half-written copy is never seen under its final name.
fn materialize(root: &Path, source: &Path, target: &Path) -> std::io::Result<()> {
    let mut dirs = std::fs::DirBuilder::new();
    dirs.recursive(true).mode(0o755);
    if !root.join("runner.py").is_file() {
        let staging = root.with_extension(format!("staging-{}", uuid::Uuid::new_v4().simple()));
        dirs.create(staging.join("demiurge"))?;
        for (rel, text) in [
            ("runner.py", RUNNER_PY),
            ("demiurge/__init__.py", SDK_INIT_PY),
            ("demiurge/sdk.py", SDK_PY),
            ("demiurge/slots.py", SLOTS_PY),
        ] {
            write_file(&staging.join(rel), text.as_bytes())?;
        }
        dirs.create(root.join("tools"))?;
        for name in ["runner.py", "demiurge"] {
            if !root.join(name).exists() {
                std::fs::rename(staging.join(name), root.join(name))?;
            }
        }
        let _ = std::fs::remove_dir_all(&staging);
    }
    // A copy made by an older build may predate the slot SDK.
    let slots_py = root.join("demiurge").join("slots.py");
    if !slots_py.is_file() {
        match write_file(&slots_py, SLOTS_PY.as_bytes()) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
    }
    copy_once(source, target)
}

fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(path)?;
    f.write_all(bytes)
}

/// Copy regular files and folders (no symlinks, no hidden names, no
/// `__pycache__`), world-readable, within the budget.
fn copy_tree(from: &Path, to: &Path, budget: &mut (usize, u64)) -> std::io::Result<()> {
    std::fs::DirBuilder::new().mode(0o755).create(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(text) = name.to_str() else {
            continue;
        };
        if text.starts_with('.') || text == "__pycache__" {
            continue;
        }
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &to.join(&name), budget)?;
        } else if kind.is_file() {
            let len = entry.metadata()?.len();
            if budget.0 == 0 || budget.1 < len {
                return Err(std::io::Error::other(format!(
                    "the tool folder is larger than {MAX_TOOL_FILES} files or {MAX_TOOL_BYTES} bytes"
                )));
            }
            budget.0 -= 1;
            budget.1 -= len;
            let bytes = std::fs::read(entry.path())?;
            write_file(&to.join(&name), &bytes)?;
        }
    }
    Ok(())
}

/// Start a confined runner and wait for its `ready` line.
async fn start(inv: &Invocation<'_>, cancel: &CancellationToken) -> Result<Runner, Broken> {
    let read_only = [inv.runtime_dir.clone()];
    let request = Request {
        tenant: inv.tenant,
        workspace: inv.workspace,
        home: &inv.home,
        tmp: &inv.tmp,
        network: inv.network,
        read_only: &read_only,
    };
    let confinement = inv
        .sandbox
        .prepare(&request)
        .map_err(|e| Broken::Failed(e.to_string()))?
        .map(Arc::new);
    crate::exec::ensure_runtime_home(&inv.home)
        .map_err(|e| Broken::Failed(format!("cannot prepare the runner's HOME: {e}")))?;
    // The per-tenant uid has no passwd entry: the runner's user is named
    // after its tenant, so `getpass.getuser()` (the Python assistant's
    // `session_context` slot) answers instead of raising.
    let user = [
        ("USER".to_owned(), inv.tenant.to_owned()),
        ("LOGNAME".to_owned(), inv.tenant.to_owned()),
    ];
    let mut env = crate::exec::child_env(std::env::vars(), &inv.home, &user);
    crate::exec::confine_env(
        &mut env,
        inv.workspace,
        confinement
            .as_ref()
            .map(|c| (c.path_env(), inv.tmp.as_path())),
    );
    let mut command = std::process::Command::new("python3");
    command
        .arg("-I")
        .arg("-B")
        .arg(inv.runtime_dir.join("runner.py"))
        .current_dir(inv.workspace)
        .env_clear()
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    if let Some(c) = confinement {
        c.install(&mut command);
    }
    let mut command = tokio::process::Command::from(command);
    command.kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|e| Broken::Failed(format!("cannot start python3 for authored tools: {e}")))?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        kill_group(&child);
        return Err(Broken::Failed("the runner has no pipes".into()));
    };
    let tail = Arc::new(Mutex::new(String::new()));
    tokio::spawn(drain_stderr(stderr, tail.clone()));
    let mut runner = Runner {
        child,
        stdin,
        stdout: BufReader::new(stdout),
        stderr: tail,
        calls: 0,
        next_id: 0,
    };
    let ready = tokio::select! {
        line = read_line(&mut runner.stdout) => line,
        () = tokio::time::sleep(START_TIMEOUT) => return Err(Broken::TimedOut),
        () = cancel.cancelled() => return Err(Broken::Cancelled),
    };
    match ready.as_deref().and_then(protocol::parse_line) {
        Some(FromRunner::Ready { .. }) => Ok(runner),
        _ => {
            let _ = tokio::time::timeout(Duration::from_secs(2), runner.child.wait()).await;
            let tail = runner
                .stderr
                .lock()
                .map(|s| s.trim().to_owned())
                .unwrap_or_default();
            Err(Broken::Failed(format!(
                "the authored tool runner did not start{}",
                if tail.is_empty() {
                    String::new()
                } else {
                    format!(": {}", crate::history::clip(&tail, STDERR_TAIL))
                }
            )))
        }
    }
}

/// Keep the last [`STDERR_TAIL`] characters a runner wrote to stderr.
async fn drain_stderr(mut stderr: tokio::process::ChildStderr, tail: Arc<Mutex<String>>) {
    let mut buf = vec![0u8; 8192];
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if let Ok(mut t) = tail.lock() {
                    t.push_str(&String::from_utf8_lossy(&buf[..n]));
                    let len = t.chars().count();
                    if len > STDERR_TAIL * 2 {
                        *t = t.chars().skip(len - STDERR_TAIL).collect();
                    }
                }
            }
        }
    }
}

/// One line, at most [`MAX_LINE_BYTES`]; `None` at end of stream or when
/// the line is too long or not UTF-8.
async fn read_line(stdout: &mut BufReader<ChildStdout>) -> Option<String> {
    let mut buf = Vec::new();
    let limit = (MAX_LINE_BYTES + 1) as u64;
    let n = (&mut *stdout)
        .take(limit)
        .read_until(b'\n', &mut buf)
        .await
        .ok()?;
    if n == 0 || (buf.last() != Some(&b'\n') && n as u64 >= limit) {
        return None;
    }
    String::from_utf8(buf).ok()
}

/// Who answers a runner during one request.
struct Talk<'a, 'h> {
    id: u64,
    allow: &'a (dyn Fn(&str) -> bool + Sync),
    host: Option<&'a HostFn<'h>>,
    output: &'a tokio::sync::mpsc::Sender<(&'static str, String)>,
}

/// Write one line to the runner before `deadline`.
async fn send(runner: &mut Runner, line: &str, deadline: Instant) -> Result<(), Broken> {
    match tokio::time::timeout_at(deadline.into(), runner.stdin.write_all(line.as_bytes())).await {
        Err(_) => Err(Broken::TimedOut),
        Ok(Err(_)) => Err(Broken::Failed("the authored tool runner exited".into())),
        Ok(Ok(())) => Ok(()),
    }
}

/// Send the call, answer capability questions and host requests, forward
/// output, and return the tool's outcome; anything off-protocol breaks the
/// runner. The runner's own time ends at `deadline`; time spent answering a
/// host request moves it on.
async fn exchange(
    runner: &mut Runner,
    request: &str,
    talk: &Talk<'_, '_>,
    mut deadline: Instant,
) -> Result<Reply, Broken> {
    let id = talk.id;
    send(runner, request, deadline).await?;
    loop {
        let line =
            match tokio::time::timeout_at(deadline.into(), read_line(&mut runner.stdout)).await {
                Err(_) => return Err(Broken::TimedOut),
                Ok(line) => line,
            };
        let Some(line) = line else {
            let status = tokio::time::timeout(Duration::from_secs(2), runner.child.wait())
                .await
                .ok()
                .and_then(Result::ok);
            return Err(Broken::Failed(match status {
                Some(s) => format!("the authored tool runner exited ({s}) during the call"),
                None => "the authored tool runner stopped answering (output too long or not UTF-8)"
                    .into(),
            }));
        };
        let ask = match protocol::parse_line(line.trim_end()) {
            Some(FromRunner::Capability { id: cid, name, .. }) if cid == id => {
                let reply = protocol::capability_reply(id, (talk.allow)(&name));
                send(runner, &reply, deadline).await?;
                continue;
            }
            Some(FromRunner::State {
                id: sid,
                scope,
                action,
                target,
                value,
            }) if sid == id => HostAsk::State {
                scope,
                action,
                target,
                value,
            },
            Some(FromRunner::Tool {
                id: tid,
                name,
                arguments,
            }) if tid == id => HostAsk::Tool { name, arguments },
            Some(FromRunner::Http {
                id: hid,
                method,
                url,
                headers,
                body,
                timeout,
            }) if hid == id => {
                use base64::Engine as _;
                let body = match body
                    .map(|b| base64::engine::general_purpose::STANDARD.decode(b))
                    .transpose()
                {
                    Ok(body) => body,
                    Err(_) => {
                        let reply = protocol::host_reply(
                            id,
                            Err(("invalid", "the request body is not base64".into())),
                        );
                        send(runner, &reply, deadline).await?;
                        continue;
                    }
                };
                HostAsk::Http(super::http::HttpAsk {
                    method,
                    url,
                    headers,
                    body,
                    timeout,
                })
            }
            other => {
                if let Some(reply) = finish(other, id, talk.output) {
                    return reply;
                }
                continue;
            }
        };
        let asked = Instant::now();
        let answer = match talk.host {
            Some(answer) => answer(ask).await,
            None => Err((
                "unavailable",
                "this client is offered to input and output slots only".to_owned(),
            )),
        };
        deadline += asked.elapsed();
        send(runner, &protocol::host_reply(id, answer), deadline).await?;
    }
}

/// Output, the result, an error, or anything else (which breaks the
/// runner); `None` to keep reading.
fn finish(
    message: Option<FromRunner>,
    id: u64,
    output: &tokio::sync::mpsc::Sender<(&'static str, String)>,
) -> Option<Result<Reply, Broken>> {
    match message {
        Some(FromRunner::Output {
            id: oid,
            stream,
            text,
        }) if oid == id => {
            let stream = if stream.as_deref() == Some("stderr") {
                "stderr"
            } else {
                "stdout"
            };
            // Best effort: a full live view drops text, never blocks the call.
            let _ = output.try_send((stream, text));
            None
        }
        Some(FromRunner::Result { id: rid, value }) if rid == id => Some(Ok(Reply::Value(value))),
        Some(FromRunner::Error {
            id: eid,
            kind,
            error_type,
            message,
        }) if eid == id => Some(Ok(Reply::Raised {
            kind,
            error_type,
            message,
        })),
        _ => Some(Err(Broken::Failed(
            "the authored tool runner wrote something that is not the protocol".into(),
        ))),
    }
}

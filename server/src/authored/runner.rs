//! Warm, confined Python runners. One runner is a `python3` child started
//! through [`crate::exec::sandbox`] (Landlock, the tenant's uid, limits)
//! that runs a core's tools and slots one call at a time over
//! [`super::protocol`]. Runners are kept warm per (tenant, core revision,
//! core root, workspace) — the folders are part of a child's walls — within
//! [`MAX_IDLE_PER_KEY`] and [`MAX_IDLE`]; a runner that timed out, broke the
//! protocol or exited is killed and never reused.
//!
//! # Where the code runs from
//!
//! The runner and its SDK are a read-only copy per revision
//! ([`Invocation::runtime_dir`]). The core's own code is copied whole
//! (`agent.yaml`, `agent/`) into the core's runtime root
//! ([`Invocation::core_root`]), swapped in at once when the revision
//! changes, so a tool or slot sees the layout the Python project gives it:
//! the original's packages find their core root by walking up from
//! `__file__` to `agent.yaml` and keep their state beside it (`memory/`,
//! `context/`). That root is writable by the runner, while the code the host
//! put there stays the host's (a sticky folder on a root server, see
//! [`crate::exec::sandbox`]); the state outlives revisions.

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
/// Files and bytes of a core's `agent/` copied for the runner.
const MAX_CORE_FILES: usize = 10_000;
const MAX_CORE_BYTES: u64 = 128 * 1024 * 1024;
/// Which revision a core root's code is (written last, after the swap).
const REVISION_MARKER: &str = ".demiurge-revision";

const RUNNER_PY: &str = include_str!("python/runner.py");
const SDK_INIT_PY: &str = include_str!("python/demiurge/__init__.py");
const SDK_PY: &str = include_str!("python/demiurge/sdk.py");
const SLOTS_PY: &str = include_str!("python/demiurge/slots.py");

/// (tenant, revision, core root, workspace).
type Key = (String, String, PathBuf, PathBuf);

/// The pool of warm runners of this server, and how long one call may take
/// (`--authored-timeout`).
pub struct Runners {
    idle: Mutex<HashMap<Key, Vec<Runner>>>,
    /// Runner folders known to be complete (skip the disk check).
    copied: Mutex<HashSet<PathBuf>>,
    /// The revision each core root was last seen to hold.
    synced: Mutex<HashMap<PathBuf, String>>,
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
    /// The read-only copy of the runner for this revision
    /// (`HomeLayout::authored_runtime`).
    pub runtime_dir: PathBuf,
    /// The core's runtime root (`HomeLayout::core_runtime_root`): its code
    /// as of `revision`, and its packages' state.
    pub core_root: PathBuf,
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
            synced: Mutex::default(),
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
            inv.core_root.clone(),
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

    /// The runner and its SDK (once per revision) and the core's code in
    /// its runtime root (when that holds another revision); returns the
    /// tool's (or slot's) folder and the core's `agent/lib` when it has one.
    async fn prepare_files(
        &self,
        inv: &Invocation<'_>,
    ) -> std::io::Result<(PathBuf, Option<PathBuf>)> {
        let runtime = inv.runtime_dir.clone();
        let root = inv.core_root.clone();
        let runner_known = self
            .copied
            .lock()
            .map(|c| c.contains(&runtime))
            .unwrap_or(false);
        let core_known = self
            .synced
            .lock()
            .map(|m| m.get(&root).is_some_and(|r| r == inv.revision))
            .unwrap_or(false);
        if !runner_known || !core_known {
            let core_dir = core_dir_of(&inv.spec.dir, &inv.spec.slot_path).ok_or_else(|| {
                std::io::Error::other(format!(
                    "{} is not a folder under the core's agent/",
                    inv.spec.slot_path
                ))
            })?;
            let revision = inv.revision.to_owned();
            let (runtime_copy, root_copy) = (runtime.clone(), root.clone());
            tokio::task::spawn_blocking(move || {
                if !runner_known {
                    write_runner(&runtime_copy)?;
                }
                if !core_known {
                    sync_core(&core_dir, &root_copy, &revision)?;
                }
                Ok::<_, std::io::Error>(())
            })
            .await
            .map_err(|e| std::io::Error::other(e.to_string()))??;
            if let Ok(mut c) = self.copied.lock() {
                c.insert(runtime);
            }
            if let Ok(mut m) = self.synced.lock() {
                m.insert(root.clone(), inv.revision.to_owned());
            }
        }
        let dir = root.join(&inv.spec.slot_path);
        if !dir.is_dir() {
            return Err(std::io::Error::other(format!(
                "{} is not in this revision of the core",
                inv.spec.slot_path
            )));
        }
        let lib = root.join("agent").join("lib");
        Ok((dir, lib.is_dir().then_some(lib)))
    }
}

/// The core folder of a tool or slot folder `dir` at `slot_path`
/// (`agent/tools/<id>`, `agent/bootstrap/<id>`, …).
fn core_dir_of(dir: &Path, slot_path: &str) -> Option<PathBuf> {
    let parts: Vec<&str> = slot_path.split('/').filter(|p| !p.is_empty()).collect();
    if parts.len() < 2 || parts[0] != "agent" || parts.contains(&"..") {
        return None;
    }
    dir.ancestors().nth(parts.len()).map(Path::to_path_buf)
}

/// Makes `root` hold the core's code as of `revision`: `agent/` copied
/// whole beside the live one and swapped in with one `renameat2` exchange
/// (a runner sees the old tree or the new, never half of one), then
/// `agent.yaml`, then the marker. Everything else in `root` is the
/// packages' state and is left alone.
fn sync_core(core_dir: &Path, root: &Path, revision: &str) -> std::io::Result<()> {
    let marker = root.join(REVISION_MARKER);
    if std::fs::read_to_string(&marker).is_ok_and(|r| r.trim() == revision) {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(root)?;
    let id = uuid::Uuid::new_v4().simple().to_string();
    let staging = root.join(format!(".agent-{id}"));
    let mut budget = (MAX_CORE_FILES, MAX_CORE_BYTES);
    if let Err(e) = copy_tree(&core_dir.join("agent"), &staging, &mut budget) {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    let live = root.join("agent");
    if live.is_dir() {
        swap_folders(&staging, &live)?;
        // `staging` now holds the previous revision's code.
        let _ = std::fs::remove_dir_all(&staging);
    } else {
        std::fs::rename(&staging, &live)?;
    }
    let manifest = root.join(format!(".agent-{id}.yaml"));
    write_file(&manifest, &std::fs::read(core_dir.join("agent.yaml"))?)?;
    std::fs::rename(&manifest, root.join("agent.yaml"))?;
    let next = root.join(format!("{REVISION_MARKER}-{id}"));
    write_file(&next, revision.as_bytes())?;
    std::fs::rename(&next, &marker)
}

/// Swaps two folders atomically (`renameat2(RENAME_EXCHANGE)`); where the
/// filesystem cannot, moves the old one aside first.
fn swap_folders(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::other(e.to_string()))
    };
    let (ca, cb) = (c(a)?, c(b)?);
    // SAFETY: two valid NUL-terminated paths; no memory is retained.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if !matches!(err.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) {
        return Err(err);
    }
    let aside = a.with_extension("previous");
    std::fs::rename(b, &aside)?;
    std::fs::rename(a, b)?;
    std::fs::rename(&aside, a)
}

/// Writes the runner and its SDK into `root` (once), atomically: a
/// half-written copy is never seen under its final name.
fn write_runner(root: &Path) -> std::io::Result<()> {
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
        dirs.create(root)?;
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
    Ok(())
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
                    "the core's agent/ folder is larger than {MAX_CORE_FILES} files or {MAX_CORE_BYTES} bytes"
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
        state: Some(&inv.core_root),
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

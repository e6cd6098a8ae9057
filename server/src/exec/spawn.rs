//! Spawning one command and driving it to the end: drain, timeout, cancel.

use std::future::Future;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::drain::{open_artifacts, StreamDrain, StreamKind, StreamSummary};
use super::kill::{kill_group, start_marker, ProcessRecord};
use super::quota::{OutputBudget, QuotaLimit};

/// Default time between `SIGTERM` and `SIGKILL`.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);

/// Stands in for a timeout too large to add to an `Instant`.
const FAR_FUTURE: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// Bytes per pipe read.
const READ_CHUNK: usize = 64 * 1024;

/// How long pipes are still drained once the group has been killed: a
/// descendant that left the group (new session) and kept a pipe open must not
/// hang the call.
const POST_KILL_DRAIN: Duration = Duration::from_millis(500);

/// What to run and how.
#[derive(Debug, Clone)]
pub struct ExecSpec {
    /// Shell text, run as `["/bin/sh", "-c", command]`.
    pub command: String,
    /// Working directory; must exist.
    pub cwd: PathBuf,
    /// The complete child environment (the server's is cleared first); build
    /// it with [`super::child_env`].
    pub env: Vec<(String, String)>,
    /// Wall-clock limit from spawn; then the group is ended.
    pub timeout: Duration,
    /// Where `<spawn_id>.stdout.log` / `.stderr.log` (0600) are written;
    /// created 0700 if missing.
    pub artifact_dir: PathBuf,
    /// `(target, exact value)`: each value becomes `<redacted:TARGET>` in
    /// tails, chunks and artifacts.
    pub secrets: Vec<(String, String)>,
    /// `SIGTERM` → `kill_grace` → `SIGKILL`.
    pub kill_grace: Duration,
    /// The walls the child enters before exec ([`super::sandbox`]); `None`
    /// only with `--sandbox off`.
    pub confinement: Option<std::sync::Arc<super::sandbox::Confinement>>,
    /// Bytes both artifacts together may take; past it the group is ended.
    pub output_budget: OutputBudget,
}

impl ExecSpec {
    /// A spec with no secrets and [`DEFAULT_KILL_GRACE`].
    pub fn new(
        command: impl Into<String>,
        cwd: impl Into<PathBuf>,
        env: Vec<(String, String)>,
        timeout: Duration,
        artifact_dir: impl Into<PathBuf>,
    ) -> Self {
        Self {
            command: command.into(),
            cwd: cwd.into(),
            env,
            timeout,
            artifact_dir: artifact_dir.into(),
            secrets: Vec::new(),
            kill_grace: DEFAULT_KILL_GRACE,
            confinement: None,
            output_budget: OutputBudget::unlimited(),
        }
    }
}

/// Why the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitReason {
    /// The leader exited by itself (see [`ExecResult::exit_code`]).
    Exited,
    /// The leader was killed by this signal, not by the Host.
    Signaled(i32),
    /// The Host ended the group at the timeout (also when the leader had
    /// exited but a descendant still held a pipe open).
    TimedOut,
    /// The Host ended the group on cancellation (turn, task, shutdown).
    Cancelled,
    /// The Host ended the group because its output reached a storage quota
    /// (see [`ExecResult::quota_exceeded`]).
    OutputQuota,
}

/// The outcome of [`run`].
#[derive(Debug, Clone)]
pub struct ExecResult {
    /// The leader's exit code; `None` if it was killed by a signal (or never reaped).
    pub exit_code: Option<i32>,
    pub reason: ExitReason,
    pub stdout: StreamSummary,
    pub stderr: StreamSummary,
    /// Artifact paths, when the files were created (complete unless `artifact_error`).
    pub stdout_artifact: Option<PathBuf>,
    pub stderr_artifact: Option<PathBuf>,
    /// Why an artifact is missing or incomplete. When set, the command still
    /// ran and was drained, but the operation must be reported as failed.
    pub artifact_error: Option<String>,
    /// The storage quota that cut the artifacts short and ended the command.
    pub quota_exceeded: Option<QuotaLimit>,
    pub record: ProcessRecord,
    /// From spawn to the end of draining.
    pub elapsed: Duration,
    /// CPU time (user and system, ms) of the leader and the descendants it
    /// waited for, read as it exited; `None` when it could not be read (a
    /// leader reaped only after the kill sequence). Also added to the
    /// calling tool's usage tally ([`crate::usage::Tally`]).
    pub cpu_ms: Option<u64>,
}

/// Why [`run`] could not run the command.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("could not start the command: {0}")]
    Spawn(String),
    #[error("working directory is not usable: {0}")]
    Cwd(String),
    /// The process start marker could not be read, so the process could not
    /// be owned safely; it was killed.
    #[error("process identity unavailable: {0}")]
    Identity(String),
    #[error("waiting for the command failed: {0}")]
    Wait(String),
    /// The token was already cancelled; nothing was started.
    #[error("cancelled before start")]
    Cancelled,
}

/// Spawns `spec.command` in a new session (its own process group), drains
/// both pipes continuously (tails + artifacts + `on_chunk` with redacted
/// text), enforces the timeout and `cancel` by ending the whole group (TERM,
/// `kill_grace`, KILL), and waits for the leader's exit and for pipe EOF.
///
/// `on_spawn` gets the [`ProcessRecord`] before any output is read (persist
/// it for [`super::reap_orphans`]). Waiting for EOF is bounded once the group
/// has been killed: a process outside the group that holds a pipe stops the
/// drain only for a short while. Descendants still in the group after a
/// normal exit that no longer hold a pipe are left running; end them with
/// [`kill_group`] on [`ExecResult::record`] if wanted.
///
/// If the future is dropped before it completes, the group is ended from a
/// background thread (TERM at once, KILL after the grace).
pub async fn run(
    spec: ExecSpec,
    cancel: CancellationToken,
    on_spawn: impl FnOnce(&ProcessRecord) + Send,
    mut on_chunk: impl FnMut(StreamKind, &str) + Send,
) -> Result<ExecResult, ExecError> {
    match tokio::fs::metadata(&spec.cwd).await {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(ExecError::Cwd("not a directory".to_owned())),
        Err(err) => return Err(ExecError::Cwd(err.to_string())),
    }
    if cancel.is_cancelled() {
        return Err(ExecError::Cancelled);
    }

    let spawn_id = format!("proc_{}", uuid::Uuid::new_v4().simple());
    let [stdout_artifact, stderr_artifact] = open_artifacts(&spec.artifact_dir, &spawn_id).await;
    let mut out = StreamDrain::new(StreamKind::Stdout, &spec.secrets, stdout_artifact)
        .with_budget(spec.output_budget.clone());
    let mut err = StreamDrain::new(StreamKind::Stderr, &spec.secrets, stderr_artifact)
        .with_budget(spec.output_budget.clone());

    let mut command = shell_command(&spec);
    // Before the spawn, so no exit of the leader goes unnoticed.
    let mut exits = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch SIGCHLD; command CPU time is not metered");
            None
        }
    };
    let started = Instant::now();
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(spawn_err) => {
            for path in [out.artifact(), err.artifact()].into_iter().flatten() {
                let _ = tokio::fs::remove_file(path).await;
            }
            return Err(ExecError::Spawn(spawn_err.to_string()));
        }
    };
    let (Some(pid), Some(mut out_pipe), Some(mut err_pipe)) = (
        child.id().and_then(|pid| i32::try_from(pid).ok()),
        child.stdout.take(),
        child.stderr.take(),
    ) else {
        let _ = child.kill().await;
        return Err(ExecError::Spawn("child has no pid or pipes".to_owned()));
    };
    let Some(marker) = start_marker(pid) else {
        // The unreaped leader keeps `pid` (and so the group id) reserved.
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = child.wait().await;
        return Err(ExecError::Identity(format!(
            "no start marker for pid {pid}"
        )));
    };
    let record = ProcessRecord {
        spawn_id,
        pid,
        pgid: pid,
        start_marker: marker,
    };
    let mut guard = GroupGuard {
        record: Some(record.clone()),
        grace: spec.kill_grace,
    };
    tracing::debug!(spawn_id = %record.spawn_id, pid, "terminal command started");
    on_spawn(&record);

    let start = tokio::time::Instant::from_std(started);
    let deadline = start
        .checked_add(spec.timeout)
        .unwrap_or_else(|| start + FAR_FUTURE);
    let timeout = tokio::time::sleep_until(deadline);
    tokio::pin!(timeout);
    let mut out_buf = vec![0u8; READ_CHUNK];
    let mut err_buf = vec![0u8; READ_CHUNK];
    let mut status: Option<ExitStatus> = None;
    // Set once the leader has exited (not yet reaped), with its CPU time.
    let mut exited: Option<Option<u64>> = None;
    let mut ended_by: Option<ExitReason> = None;
    let mut killer: Option<JoinHandle<bool>> = None;
    let mut drain_until: Option<tokio::time::Instant> = None;

    loop {
        if status.is_some() && out.eof && err.eof {
            break;
        }
        if ended_by.is_none() && out.quota().or(err.quota()).is_some() {
            // A disk filler must not keep running once its output is capped.
            ended_by = Some(ExitReason::OutputQuota);
            killer = Some(start_kill(&record, spec.kill_grace, "output quota"));
        }
        tokio::select! {
            read = out_pipe.read(&mut out_buf), if !out.eof => match read {
                Ok(n) if n > 0 => {
                    out.feed(out_buf.get(..n).unwrap_or_default(), &mut on_chunk).await;
                }
                _ => out.eof = true,
            },
            read = err_pipe.read(&mut err_buf), if !err.eof => match read {
                Ok(n) if n > 0 => {
                    err.feed(err_buf.get(..n).unwrap_or_default(), &mut on_chunk).await;
                }
                _ => err.eof = true,
            },
            cpu = leader_exit(pid, exits.as_mut()), if exited.is_none() => exited = Some(cpu),
            waited = child.wait(), if status.is_none() && exited.is_some() => match waited {
                Ok(exit) => status = Some(exit),
                Err(wait_err) => return Err(ExecError::Wait(wait_err.to_string())),
            },
            () = &mut timeout, if ended_by.is_none() => {
                ended_by = Some(ExitReason::TimedOut);
                killer = Some(start_kill(&record, spec.kill_grace, "timeout"));
            },
            () = cancel.cancelled(), if ended_by.is_none() => {
                ended_by = Some(ExitReason::Cancelled);
                killer = Some(start_kill(&record, spec.kill_grace, "cancelled"));
            },
            _ = await_some(&mut killer), if killer.is_some() => {
                killer = None;
                drain_until = Some(tokio::time::Instant::now() + POST_KILL_DRAIN);
            },
            () = sleep_some(drain_until), if drain_until.is_some() => {
                tracing::warn!(
                    spawn_id = %record.spawn_id,
                    "pipes still open after the group was killed; stopped draining"
                );
                break;
            },
        }
    }
    if status.is_none() {
        // Only after the group was killed; a leader stuck in the kernel is not waited for long.
        if let Ok(Ok(exit)) = tokio::time::timeout(POST_KILL_DRAIN, child.wait()).await {
            status = Some(exit);
        }
    }
    // Leader gone and pipes closed before the kill sequence finished: let it
    // finish, so members that ignore TERM and hold no pipe still get KILL.
    if let Some(pending) = killer.take() {
        let _ = pending.await;
    }
    out.finish(&mut on_chunk).await;
    err.finish(&mut on_chunk).await;
    guard.disarm();
    if let Some(Some(ms)) = exited {
        crate::usage::Tally::add_cpu_ms(ms);
    }

    let reason = match (ended_by, status.and_then(|exit| exit.signal())) {
        (Some(ended), _) => ended,
        (None, Some(signal)) => ExitReason::Signaled(signal),
        (None, None) => ExitReason::Exited,
    };
    let artifact_error = match (out.artifact_error(), err.artifact_error()) {
        (None, None) => None,
        (Some(one), None) | (None, Some(one)) => Some(one),
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
    };
    Ok(ExecResult {
        exit_code: status.and_then(|exit| exit.code()),
        reason,
        stdout: out.summary(),
        stderr: err.summary(),
        stdout_artifact: out.artifact(),
        stderr_artifact: err.artifact(),
        artifact_error,
        quota_exceeded: out.quota().or(err.quota()),
        record,
        elapsed: started.elapsed(),
        cpu_ms: exited.flatten(),
    })
}

/// Wait until the leader `pid` has exited, without reaping it, and read its
/// CPU time while its accounting is still there. Wakes on every `SIGCHLD`
/// the server gets; without the signal stream, it polls.
async fn leader_exit(pid: i32, exits: Option<&mut tokio::signal::unix::Signal>) -> Option<u64> {
    let mut exits = exits;
    loop {
        match exited_unreaped(pid) {
            Some(true) => return cpu_ms_of(pid),
            // Reaped by someone else, or not our child: nothing to read.
            None => return None,
            Some(false) => {}
        }
        match exits.as_deref_mut() {
            Some(s) => {
                if s.recv().await.is_none() {
                    exits = None;
                }
            }
            None => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// `Some(true)`: `pid` has exited and awaits reaping; `Some(false)`: still
/// running; `None`: not a child of ours any more.
fn exited_unreaped(pid: i32) -> Option<bool> {
    // SAFETY: waitid(2) with WNOWAIT only reads the child's state; the
    // siginfo is zeroed first, as WNOHANG requires to tell "none" apart.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        if r != 0 {
            return None;
        }
        Some(info.si_pid() == pid)
    }
}

/// User and system CPU of an exited, unreaped process and of the children it
/// waited for (`/proc/PID/stat` fields 14–17), in milliseconds.
fn cpu_ms_of(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses; fields follow the last ')'.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields
        .get(11..15)?
        .iter()
        .map(|f| f.parse::<u64>().ok())
        .sum::<Option<u64>>()?;
    // SAFETY: sysconf(3) reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = u64::try_from(hz).ok().filter(|h| *h > 0)?;
    Some(ticks * 1000 / hz)
}

/// `/bin/sh -c COMMAND` with exactly `spec.env`, null stdin, piped
/// stdout/stderr, started in a new session (its own process group).
fn shell_command(spec: &ExecSpec) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(&spec.command)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let entry = spec.confinement.as_ref().map(|c| c.entry());
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe syscalls (setsid, and `Entry::enter`'s setrlimit,
    // unshare, set*id, prctl, landlock, seccomp) on copied data; the ruleset fd
    // stays open because `spec.confinement` outlives the spawn.
    unsafe {
        command.pre_exec(move || {
            nix::unistd::setsid().map_err(io::Error::from)?;
            match &entry {
                Some(entry) => entry.enter(),
                None => Ok(()),
            }
        });
    }
    command
}

/// Starts the TERM → grace → KILL sequence off the async workers.
fn start_kill(record: &ProcessRecord, grace: Duration, why: &'static str) -> JoinHandle<bool> {
    tracing::info!(
        spawn_id = %record.spawn_id,
        pgid = record.pgid,
        why,
        "ending terminal process group"
    );
    let record = record.clone();
    tokio::task::spawn_blocking(move || kill_group(&record, grace))
}

async fn await_some<F: Future + Unpin>(future: &mut Option<F>) -> Option<F::Output> {
    match future {
        Some(future) => Some(future.await),
        None => std::future::pending().await,
    }
}

async fn sleep_some(until: Option<tokio::time::Instant>) {
    match until {
        Some(until) => tokio::time::sleep_until(until).await,
        None => std::future::pending().await,
    }
}

/// Ends the group if [`run`] is dropped (or returns an error) mid-flight.
struct GroupGuard {
    record: Option<ProcessRecord>,
    grace: Duration,
}

impl GroupGuard {
    fn disarm(&mut self) {
        self.record = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        let Some(record) = self.record.take() else {
            return;
        };
        tracing::info!(
            spawn_id = %record.spawn_id,
            "terminal run dropped; ending its process group"
        );
        let grace = self.grace;
        let fallback = record.clone();
        let spawned = std::thread::Builder::new()
            .name("exec-kill".to_owned())
            .spawn(move || kill_group(&record, grace));
        if let Err(thread_err) = spawned {
            tracing::warn!(%thread_err, "could not start the kill thread; killing without grace");
            kill_group(&fallback, Duration::ZERO);
        }
    }
}

#[cfg(test)]
#[path = "spawn_tests.rs"]
mod tests;

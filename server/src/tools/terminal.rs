//! `terminal`: one shell command in the session's workspace. The command
//! guard classifies it first (blocks never reach approval); only literal
//! read-only commands run without approval; an approval covers exactly one
//! execution shape (command, cwd, env overlay, mode, timeout). The process
//! runs in its own group from an allowlisted environment, with bound
//! secrets injected after approval and scrubbed from every output.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::contract::{lenient_int, Approval, Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};
use super::files::{path_error, shown};
use super::host::TaskJob;
use crate::exec::{self, sandbox, ExecSpec, ExitReason, StreamKind};
use crate::home::HomeLayout;
use crate::policy::approval_policy::{ApprovalPolicy, Risk};
use crate::policy::command_guard::{self, Decision};
use crate::policy::workspace::{self, Access, Resolved};
use crate::wire::TaskStatus;

const DEFAULT_TIMEOUT: i64 = 30;
const MAX_TIMEOUT: i64 = 120;
const MAX_BINDINGS: usize = 16;
/// Exit code reported for a timed-out command, as `timeout(1)` does.
const TIMEOUT_EXIT: i32 = 124;

fn valid_env_name(k: &str) -> bool {
    let mut chars = k.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `terminal`.
pub struct Terminal;

#[derive(Debug, Deserialize)]
pub struct TerminalArgs {
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default, deserialize_with = "lenient_int")]
    pub timeout_seconds: Option<i64>,
    #[serde(default)]
    pub background: Option<bool>,
    /// Background only: run a completion turn in the session when the task
    /// ends (default true), unless `yield_until` consumed it first.
    #[serde(default)]
    pub notify_on_complete: Option<bool>,
    /// An environment overlay; non-string values are passed as JSON text.
    #[serde(default)]
    pub env: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    pub secret_bindings: Option<Vec<BindingArg>>,
}

/// One `secret_bindings` item as given.
#[derive(Debug, Deserialize)]
pub struct BindingArg {
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub target: Option<String>,
    #[serde(default)]
    pub expires_in_seconds: Option<Value>,
}

/// A host variable bound into the child after approval.
#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    pub name: String,
    pub target: String,
    pub expires: Option<u64>,
}

fn parse_bindings(list: &[BindingArg], timeout: i64) -> Result<Vec<Binding>, String> {
    if list.len() > MAX_BINDINGS {
        return Err(format!("at most {MAX_BINDINGS} secret bindings"));
    }
    let mut out: Vec<Binding> = Vec::new();
    for (i, b) in list.iter().enumerate() {
        let source = b.source.as_deref().unwrap_or_default();
        let Some(name) = source.strip_prefix("env:").filter(|n| valid_env_name(n)) else {
            return Err(format!("secret_bindings[{i}].source must be env:<NAME>"));
        };
        let target = b.target.clone().unwrap_or_else(|| name.to_owned());
        if !valid_env_name(&target) {
            return Err(format!(
                "secret_bindings[{i}].target {target:?} is not a variable name"
            ));
        }
        if exec::is_reserved_env_target(&target) {
            return Err(format!(
                "secret_bindings[{i}].target {target:?} controls execution and cannot be bound"
            ));
        }
        if out.iter().any(|o| o.target == target) {
            return Err(format!(
                "secret_bindings[{i}].target {target:?} is bound twice"
            ));
        }
        let expires = match &b.expires_in_seconds {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_i64() {
                Some(n) if n >= 1 && n <= timeout => Some(n as u64),
                _ => {
                    return Err(format!(
                        "secret_bindings[{i}].expires_in_seconds must be 1..={timeout}"
                    ))
                }
            },
        };
        out.push(Binding {
            name: name.to_owned(),
            target,
            expires,
        });
    }
    Ok(out)
}

/// A command, classified and bound to its execution shape.
#[derive(Debug)]
pub struct PlannedCommand {
    pub command: String,
    pub cwd: Resolved,
    pub timeout: i64,
    pub background: bool,
    /// Background only: announce the end with a completion turn.
    pub notify_on_complete: bool,
    pub overlay: Vec<(String, String)>,
    pub bindings: Vec<Binding>,
}

impl Tool for Terminal {
    type Args = TerminalArgs;
    type Prepared = PlannedCommand;

    /// The guard classifies first (blocks never reach approval); a literal
    /// read-only command with no overlay, no bindings and no path leading
    /// out of the workspace needs no approval; anything else asks once, for
    /// exactly this execution shape.
    fn plan(env: &ToolEnv<'_>, args: TerminalArgs) -> Plan<PlannedCommand> {
        match plan_command(env, args) {
            Ok(plan) => plan,
            Err(early) => Plan::Done(early),
        }
    }

    async fn execute(env: &ToolEnv<'_>, p: PlannedCommand) -> ToolOutcome {
        run(env, p).await
    }
}

fn invalid(message: impl Into<String>) -> ToolOutcome {
    ToolOutcome::error(ToolStatus::Invalid, message)
}

fn plan_command(
    env: &ToolEnv<'_>,
    args: TerminalArgs,
) -> Result<Plan<PlannedCommand>, ToolOutcome> {
    let command = args.command.trim().to_owned();
    if command.is_empty() {
        return Err(invalid("command is required"));
    }
    let timeout = match args.timeout_seconds {
        Some(t) if t > 0 => t.min(MAX_TIMEOUT),
        _ => DEFAULT_TIMEOUT,
    };
    let background = args.background.unwrap_or(false);
    let mut overlay: Vec<(String, String)> = Vec::new();
    for (k, v) in args.env.unwrap_or_default() {
        if !valid_env_name(&k) {
            return Err(invalid(format!("env key {k:?} is not a variable name")));
        }
        if exec::is_reserved_env_target(&k) {
            return Err(invalid(format!(
                "env key {k:?} controls execution and cannot be overridden"
            )));
        }
        let v = match v {
            Value::String(s) => s,
            other => other.to_string(),
        };
        overlay.push((k, v));
    }
    let bindings = parse_bindings(args.secret_bindings.as_deref().unwrap_or_default(), timeout)
        .map_err(invalid)?;
    if background && !bindings.is_empty() {
        return Err(invalid(
            "secret_bindings are only allowed in the foreground",
        ));
    }
    // Each binding needs its own exact grant; wildcards never bind secrets.
    for b in &bindings {
        let cap = format!("secret.bind:{}", b.name);
        if !env.catalog.grants().allows_exact_default(&cap) {
            return Err(ToolOutcome::error(
                ToolStatus::Denied,
                crate::policy::capabilities::exact_denial_message(&cap),
            ));
        }
    }
    let cwd_raw = args.cwd.as_deref().unwrap_or(".");
    let cwd = match crate::paths::resolve(env.workspace(), cwd_raw, Access::Write) {
        Ok(r) if r.exists => r,
        Ok(r) => {
            return Err(ToolOutcome::error(
                ToolStatus::Failed,
                format!("cwd does not exist: {}", shown(&r)),
            ))
        }
        Err(e) => return Err(path_error(e)),
    };
    let verdict = command_guard::classify_in(&command, Some(&cwd.abs));
    if verdict.decision == Decision::Block {
        let why = verdict
            .reason
            .clone()
            .unwrap_or_else(|| verdict.rule.clone());
        return Err(ToolOutcome::error(
            ToolStatus::Denied,
            format!("terminal command blocked: {why} ({})", verdict.rule),
        ));
    }
    // Checked again when the task starts; asking first would only waste an approval.
    if background {
        if let Some(denial) = env.host.tasks().background_over_cap(&env.ctx.scope) {
            return Err(ToolOutcome::error(ToolStatus::Denied, denial));
        }
    }
    let tenant = env.ctx.scope.tenant().as_str();
    if let Some(limit) = env.storage_quota().exhausted(tenant) {
        return Err(ToolOutcome::error(
            ToolStatus::Failed,
            format!("{limit}; the command was not started"),
        ));
    }
    let fingerprint = shape_fingerprint(
        &command,
        &shown(&cwd),
        timeout,
        background,
        &overlay,
        &bindings,
    );
    // The guard is pure and never looks at the disk: a literal read of a
    // symlink that leads out of the workspace (or to a credential file) must
    // still ask.
    let escapes =
        verdict.decision == Decision::Allow && reads_outside(env.workspace(), &cwd.abs, &command);
    let literal_safe = verdict.decision == Decision::Allow
        && !escapes
        && overlay.is_empty()
        && bindings.is_empty();
    let gate = if literal_safe {
        // A literal read-only command runs without asking, unless policy denies terminal outright.
        Gate::UnlessDenied
    } else {
        // An environment overlay, secret bindings or a path escape make any
        // command at least high risk.
        let risk = if overlay.is_empty() && bindings.is_empty() && !escapes {
            verdict.risk
        } else {
            verdict.risk.max(Risk::High)
        };
        let executable = command
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned();
        let preview = json!({
            "command": crate::redact::redactor::SecretRedactor::new()
                .redact_str_for(&command, crate::redact::redactor::View::Event),
            "cwd": shown(&cwd), "executable": executable, "timeout_seconds": timeout,
            "background": background, "env_keys": overlay.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            "secret_bindings": bindings.iter().map(|b| json!({"source": format!("env:{}", b.name),
                "target": b.target, "capability": format!("secret.bind:{}", b.name),
                "expires_in_seconds": b.expires})).collect::<Vec<_>>(),
            "guard": {"decision": verdict.decision, "risk": verdict.risk, "rule": verdict.rule},
        });
        let reason = verdict
            .reason
            .clone()
            .unwrap_or_else(|| format!("run {executable}"));
        Gate::one(Approval {
            baseline: ApprovalPolicy::Prompt,
            risk,
            action: "exec".into(),
            target: format!("{}:{fingerprint}", verdict.rule),
            reason,
            preview,
            // Secret bindings are never cached for the session.
            session_cacheable: bindings.is_empty(),
        })
    };
    Ok(Plan::run(
        gate,
        PlannedCommand {
            command,
            cwd,
            timeout,
            background,
            notify_on_complete: args.notify_on_complete.unwrap_or(true),
            overlay,
            bindings,
        },
    ))
}

/// The execution shape an approval is bound to: command, cwd, timeout,
/// mode, environment overlay and bindings.
fn shape_fingerprint(
    command: &str,
    cwd: &str,
    timeout: i64,
    background: bool,
    overlay: &[(String, String)],
    bindings: &[Binding],
) -> String {
    let mut h = Sha256::new();
    for part in [
        command,
        cwd,
        &timeout.to_string(),
        if background { "bg" } else { "fg" },
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    for (k, v) in overlay {
        h.update(k.as_bytes());
        h.update([b'=']);
        h.update(v.as_bytes());
        h.update([0]);
    }
    for b in bindings {
        h.update(format!("bind:{}>{}:{:?}", b.name, b.target, b.expires).as_bytes());
    }
    h.finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Runs an approved command, in the foreground or as a background task.
async fn run(env: &ToolEnv<'_>, p: PlannedCommand) -> ToolOutcome {
    let PlannedCommand {
        command,
        cwd,
        timeout,
        background,
        notify_on_complete,
        overlay,
        bindings,
    } = p;
    let tenant = env.ctx.scope.tenant().as_str();
    // Bound values are read from the host only now, after approval.
    let mut secrets = Vec::new();
    for b in &bindings {
        match std::env::var(&b.name) {
            Ok(v) if !v.is_empty() => secrets.push((b.target.clone(), v)),
            _ => {
                return ToolOutcome::error(
                    ToolStatus::Failed,
                    format!("secret source env:{} is not set on the host", b.name),
                )
            }
        }
    }
    let mut child_overlay = overlay.clone();
    child_overlay.extend(secrets.iter().cloned());
    let effective_timeout = bindings
        .iter()
        .filter_map(|b| b.expires)
        .fold(timeout as u64, u64::min);
    // One HOME per principal: dotfiles one principal writes never run for another.
    let layout = HomeLayout::new(env.home);
    let runtime_home = layout.terminal_home(env.ctx.scope.tenant(), env.ctx.scope.principal());
    if let Err(e) = exec::ensure_runtime_home(&runtime_home) {
        return ToolOutcome::error(
            ToolStatus::Failed,
            format!("cannot prepare the runtime home: {e}"),
        );
    }
    // An opaque artifact root derived from the session, under the tenant's
    // folder of runtime/artifacts (which the storage quota counts at start-up).
    let root: String = Sha256::digest(format!("{tenant}/{}", env.ctx.session_id).as_bytes())
        .iter()
        .take(12)
        .map(|b| format!("{b:02x}"))
        .collect();
    let artifact_dir = layout
        .tenant_artifacts_dir(env.ctx.scope.tenant())
        .join(&root);
    // A private temp folder per principal: `/tmp` is outside the walls.
    let tmp = layout.terminal_tmp(env.ctx.scope.tenant(), env.ctx.scope.principal());
    let walls = env.walls;
    let request = sandbox::Request {
        tenant,
        workspace: env.workspace(),
        home: &runtime_home,
        tmp: &tmp,
        network: walls.terminal_network && !env.catalog.terminal_network_off(),
        read_only: &[],
        state: None,
    };
    let confinement = match walls.sandbox.prepare(&request) {
        Ok(confinement) => confinement.map(std::sync::Arc::new),
        Err(e @ sandbox::SandboxError::Unavailable(_)) => {
            return ToolOutcome::error(ToolStatus::Denied, e.to_string())
        }
        Err(e) => return ToolOutcome::error(ToolStatus::Failed, e.to_string()),
    };
    let mut child_env = exec::child_env(std::env::vars(), &runtime_home, &child_overlay);
    exec::confine_env(
        &mut child_env,
        env.workspace(),
        confinement.as_ref().map(|c| (c.path_env(), tmp.as_path())),
    );
    let mut spec = ExecSpec::new(
        command.clone(),
        cwd.abs.clone(),
        child_env,
        Duration::from_secs(effective_timeout),
        artifact_dir,
    );
    spec.secrets = secrets;
    spec.confinement = confinement;
    spec.output_budget = env.storage_quota().budget(tenant);
    let registry = exec::ProcessRegistry::new(env.home);
    if background {
        let summary = format!(
            "$ {}",
            crate::redact::redactor::SecretRedactor::new()
                .redact_str_for(&command, crate::redact::redactor::View::Event)
        );
        let cwd_shown = shown(&cwd);
        let job: TaskJob = Box::new(move |task| {
            Box::pin(async move {
                let (sink, writer) = task.log_sink();
                let on_chunk = move |kind: StreamKind, text: &str| {
                    let _ = sink.try_send((kind.as_str(), text.to_owned()));
                };
                let on_spawn = |r: &exec::ProcessRecord| {
                    registry.started(r);
                    task.process_started(r);
                };
                let result = exec::run(spec, task.cancel.clone(), on_spawn, on_chunk).await;
                let _ = writer.await;
                let (status, content, data) = match result {
                    Ok(r) => {
                        registry.finished(&r.record.spawn_id);
                        summarize(&r, &cwd_shown, &root)
                    }
                    Err(exec::ExecError::Cancelled) => {
                        (ToolStatus::Cancelled, "cancelled".to_owned(), Value::Null)
                    }
                    Err(e) => (
                        ToolStatus::Failed,
                        format!("could not run the command: {e}"),
                        Value::Null,
                    ),
                };
                let status = match status {
                    ToolStatus::Succeeded => TaskStatus::Succeeded,
                    ToolStatus::Cancelled => TaskStatus::Cancelled,
                    ToolStatus::Failed
                    | ToolStatus::TimedOut
                    | ToolStatus::Denied
                    | ToolStatus::Invalid
                    | ToolStatus::NotFound
                    | ToolStatus::Indeterminate => TaskStatus::Failed,
                };
                crate::tasks::TaskOutcome {
                    status,
                    result: json!({"content": content, "data": data}),
                }
            })
        });
        let started = env
            .host
            .tasks()
            .start_task(
                env,
                "terminal.exec",
                summary,
                crate::tasks::StartOptions {
                    notify_on_complete,
                    metadata: None,
                },
                job,
            )
            .await;
        return match started {
            Ok(task_id) => ToolOutcome::ok_json(json!({"task_id": task_id})),
            Err(crate::tasks::StartError::Limit(denial)) => {
                ToolOutcome::error(ToolStatus::Denied, denial)
            }
            Err(e) => ToolOutcome::error(
                ToolStatus::Failed,
                format!("could not start the background task: {e}"),
            ),
        };
    }
    let sink = env.host.output().output_sink(env);
    let on_chunk = move |kind: StreamKind, text: &str| {
        let _ = sink.try_send((kind.as_str(), text.to_owned()));
    };
    let on_spawn = |r: &exec::ProcessRecord| registry.started(r);
    let result = exec::run(spec, env.ctx.cancel.clone(), on_spawn, on_chunk).await;
    let result = match result {
        Ok(r) => {
            registry.finished(&r.record.spawn_id);
            r
        }
        Err(exec::ExecError::Cancelled) => {
            return ToolOutcome::error(ToolStatus::Cancelled, "the turn was cancelled")
        }
        Err(e) => {
            return ToolOutcome::error(
                ToolStatus::Failed,
                format!("could not run the command: {e}"),
            )
        }
    };
    let (status, content, data) = summarize(&result, &shown(&cwd), &root);
    ToolOutcome {
        status,
        content: Value::String(content),
        data,
    }
}

/// Options that make read tools follow symlinks while they recurse.
const FOLLOWING: &[&str] = &[
    "-R",
    "-L",
    "--follow",
    "--dereference-recursive",
    "--dereference",
    "-H",
];

/// Whether a literal command names a path (or a symlink-following option)
/// that resolves outside the workspace or onto a sensitive file.
fn reads_outside(workspace: &std::path::Path, cwd: &std::path::Path, command: &str) -> bool {
    for raw in command.split_whitespace().skip(1) {
        let word = raw.trim_matches(|c| c == '\'' || c == '"');
        if FOLLOWING.contains(&word) {
            return true;
        }
        if word.starts_with('-') || word.is_empty() || word == "|" {
            continue;
        }
        let candidate = if std::path::Path::new(word).is_absolute() {
            std::path::PathBuf::from(word)
        } else {
            cwd.join(word)
        };
        let Some(text) = candidate.to_str() else {
            return true;
        };
        match crate::paths::resolve(workspace, text, Access::Read) {
            Ok(r) if !r.exists => {}
            Ok(r) if !r.inside || !matches!(r.sensitivity, workspace::Sensitivity::None) => {
                return true
            }
            Ok(_) => {}
            Err(_) => {}
        }
    }
    false
}

/// The model text (exit code, tails), operator data and status of a run.
fn summarize(result: &exec::ExecResult, cwd: &str, root: &str) -> (ToolStatus, String, Value) {
    let timed_out = result.reason == ExitReason::TimedOut;
    let exit_code = if timed_out {
        TIMEOUT_EXIT
    } else {
        result.exit_code.unwrap_or(-1)
    };
    let mut content = format!("exit_code: {exit_code}");
    if timed_out {
        content.push_str("\ntimed_out: true");
    }
    let quota = result
        .quota_exceeded
        .map(|limit| format!("{limit}; output past it was not stored and the command was ended"));
    if let Some(message) = &quota {
        content.push_str(&format!("\nquota_exceeded: {message}"));
    }
    for (label, s) in [("stdout", &result.stdout), ("stderr", &result.stderr)] {
        if !s.tail.is_empty() {
            let cut = if s.truncated {
                "...[earlier output truncated]\n"
            } else {
                ""
            };
            content.push_str(&format!("\n{label}:\n{cut}{}", s.tail));
        }
    }
    let rel = |p: &Option<std::path::PathBuf>| {
        p.as_ref()
            .and_then(|p| p.file_name())
            .map(|n| format!("{root}/{}", n.to_string_lossy()))
    };
    let data = json!({
        "executionStarted": true,
        "exit_code": exit_code,
        "timed_out": timed_out,
        "cwd": cwd,
        "process": {"spawn_id": result.record.spawn_id, "pid": result.record.pid, "pgid": result.record.pgid},
        "output": {
            "stdout": {"total_bytes": result.stdout.total_bytes, "total_chars": result.stdout.total_chars, "truncated": result.stdout.truncated},
            "stderr": {"total_bytes": result.stderr.total_bytes, "total_chars": result.stderr.total_chars, "truncated": result.stderr.truncated},
        },
        "output_artifact": {"stdout": rel(&result.stdout_artifact), "stderr": rel(&result.stderr_artifact),
            "truncated": quota.is_some()},
        "quota_exceeded": quota,
        "elapsed_ms": result.elapsed.as_millis() as u64,
    });
    let status = if let Some(e) = &result.artifact_error {
        tracing::error!(error = %e, "terminal artifact could not be written");
        ToolStatus::Failed
    } else if quota.is_some() {
        ToolStatus::Failed
    } else {
        match result.reason {
            ExitReason::TimedOut => ToolStatus::TimedOut,
            ExitReason::Cancelled => ToolStatus::Cancelled,
            ExitReason::OutputQuota => ToolStatus::Failed,
            _ if exit_code == 0 => ToolStatus::Succeeded,
            _ => ToolStatus::Failed,
        }
    };
    (status, content, data)
}

#[cfg(test)]
#[path = "terminal_tests.rs"]
mod tests;

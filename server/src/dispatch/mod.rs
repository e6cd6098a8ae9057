//! The one dispatcher. Every tool call, from a model or from
//! `POST …/tool-calls`, goes: resolve (through the turn's catalog) →
//! validate arguments against the tool's schema → capability preflight →
//! approval → adapter → typed status → redaction into the views. Nothing
//! reaches an adapter any other way.

pub mod approvals;
pub mod clarify;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::auth::PrincipalScope;
use crate::catalog::{ResolvedCatalog, ResolvedEntry};
use crate::events::EventLog;
use crate::policy::approval_policy::{higher_risk, request_policy, Policy, Risk};
use crate::redact::lines::LineRedactor;
use crate::redact::redactor::{argument_preview, SecretRedactor, View};
use approvals::{ApprovalRequest, ApprovalScope, Approvals, Verdict};
use clarify::{Answer, Clarifications};

/// The typed outcome of a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Succeeded,
    Denied,
    Invalid,
    NotFound,
    Failed,
    TimedOut,
    Cancelled,
    Indeterminate,
}

impl ToolStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Succeeded => "succeeded",
            ToolStatus::Denied => "denied",
            ToolStatus::Invalid => "invalid",
            ToolStatus::NotFound => "not_found",
            ToolStatus::Failed => "failed",
            ToolStatus::TimedOut => "timed_out",
            ToolStatus::Cancelled => "cancelled",
            ToolStatus::Indeterminate => "indeterminate",
        }
    }
}

/// Raw adapter result: internal execution data, never shown before redaction.
#[derive(Debug, Clone)]
pub struct ToolOutcome {
    pub status: ToolStatus,
    /// What the model sees by default (text, or JSON for structured tools).
    pub content: Value,
    /// Structured metadata for operators.
    pub data: Value,
}

impl ToolOutcome {
    pub fn ok_text(text: impl Into<String>, data: Value) -> Self {
        Self {
            status: ToolStatus::Succeeded,
            content: Value::String(text.into()),
            data,
        }
    }

    pub fn ok_json(content: Value) -> Self {
        Self {
            status: ToolStatus::Succeeded,
            content,
            data: Value::Null,
        }
    }

    pub fn error(status: ToolStatus, message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            status,
            data: json!({"error": message}),
            content: Value::String(message),
        }
    }
}

/// Everything a call may rely on, built by the host for one turn.
#[derive(Clone)]
pub struct CallContext {
    pub scope: PrincipalScope,
    pub session_id: String,
    pub turn_id: String,
    /// The session's workspace folder (canonical).
    pub workspace: PathBuf,
    /// Private per-session runtime state (todo list, …).
    pub state_dir: PathBuf,
    /// Identity of the core's effective configuration; approvals cached for
    /// the session die when it changes.
    pub core_fingerprint: String,
    /// The core's skills: (id, absolute path of the markdown file).
    pub skills: Arc<Vec<(String, PathBuf)>>,
    pub cancel: CancellationToken,
}

/// What an adapter sees: its call context, its catalog entry and the host.
pub struct ToolEnv<'a> {
    pub ctx: &'a CallContext,
    pub call_id: &'a str,
    pub entry: &'a ResolvedEntry,
    pub catalog: &'a ResolvedCatalog,
    /// The call's raw arguments: their secrets seed every redaction of work
    /// the call leaves behind (background tasks).
    args: &'a Value,
    host: &'a Dispatcher,
}

impl ToolEnv<'_> {
    pub fn workspace(&self) -> &Path {
        &self.ctx.workspace
    }

    pub fn session_state_dir(&self) -> PathBuf {
        self.ctx.state_dir.clone()
    }

    /// Resolve an approval for this call. `None` means go ahead; `Some` is
    /// the denial to return. The request's policy is the stricter of the
    /// handler's baseline and the entry's effective policy; its risk never
    /// drops below the entry's.
    #[allow(clippy::too_many_arguments)]
    pub async fn approve(
        &self,
        baseline: Policy,
        risk: Risk,
        action: &str,
        target: &str,
        reason: String,
        preview: Value,
        session_cacheable: bool,
    ) -> Option<ToolOutcome> {
        let name = self.entry.name.as_str();
        let policy = request_policy(baseline, self.entry.policy);
        let risk = higher_risk(risk, self.entry.risk);
        match policy {
            Policy::Auto => return None,
            Policy::Deny => {
                return Some(ToolOutcome::error(
                    ToolStatus::Denied,
                    format!("approval policy denies {name}"),
                ))
            }
            Policy::Prompt => {}
        }
        let cap = self.entry.capability.as_deref().unwrap_or("none");
        let req = ApprovalRequest {
            tool: name.to_owned(),
            risk: risk.as_str(),
            rule: format!("{name}:{cap}:{action}:{target}"),
            reason: if reason.is_empty() {
                format!("{name} {action}")
            } else {
                reason
            },
            preview,
            session_cacheable,
        };
        let scope = ApprovalScope {
            scope: &self.ctx.scope,
            session_id: &self.ctx.session_id,
            turn_id: &self.ctx.turn_id,
            core_fingerprint: &self.ctx.core_fingerprint,
        };
        match self
            .host
            .approvals
            .request(&scope, req, &self.ctx.cancel)
            .await
        {
            Ok(Verdict::Allowed(_)) => None,
            Ok(Verdict::Denied("cancelled")) => Some(ToolOutcome::error(
                ToolStatus::Cancelled,
                "the turn was cancelled while waiting for approval",
            )),
            Ok(Verdict::Denied(why)) => Some(ToolOutcome::error(
                ToolStatus::Denied,
                format!("approval denied ({why})"),
            )),
            Err(e) => {
                tracing::error!(error = %e, "approval request failed");
                Some(ToolOutcome::error(
                    ToolStatus::Denied,
                    "approval could not be requested",
                ))
            }
        }
    }

    /// Start a durable background task owned by this call's principal and
    /// session. Its summary, log and result are redacted like a foreground
    /// result, knowing the secrets of this call's arguments.
    pub async fn start_task<F, Fut>(
        &self,
        kind: &'static str,
        summary: String,
        job: F,
    ) -> Result<String, crate::tasks::StartError>
    where
        F: FnOnce(crate::tasks::TaskHandle) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = crate::tasks::TaskOutcome> + Send + 'static,
    {
        let mut known = SecretRedactor::new();
        known.discover_json(self.args);
        self.host
            .tasks
            .start(
                &self.ctx.scope,
                &self.ctx.session_id,
                kind,
                summary,
                known,
                job,
            )
            .await
    }

    /// Why a background task of this principal would be refused now, if it would.
    pub fn background_over_cap(&self) -> Option<String> {
        self.host.tasks.over_cap(&self.ctx.scope)
    }

    /// The host's storage quota (artifacts and task logs).
    pub fn storage_quota(&self) -> &crate::exec::StorageQuota {
        &self.host.walls.quota
    }

    /// Owner-scoped history of one of this principal's sessions.
    pub async fn search_history(
        &self,
        session_id: &str,
        needle: &str,
        limit: u32,
    ) -> crate::error::Result<Vec<crate::store::MessageHit>> {
        let scope = &self.ctx.scope;
        Ok(self
            .host
            .store
            .search_messages(
                scope.tenant(),
                scope.principal(),
                Some(session_id),
                needle,
                limit,
            )
            .await?)
    }

    /// The host's home folder (runtime state, artifacts).
    pub fn home(&self) -> &Path {
        &self.host.home
    }

    /// The walls this call's effects stay inside.
    pub fn walls(&self) -> &Walls {
        &self.host.walls
    }

    /// Hands a file the server wrote into the workspace, and the folders it
    /// created for it, to the tenant's sandbox uid (root server), so its
    /// confined commands can change them too. Best effort: a failure only
    /// means the child cannot.
    pub fn adopt(&self, path: &Path) {
        let Some((uid, gid)) = self
            .host
            .walls
            .sandbox
            .workspace_owner(self.ctx.scope.tenant().as_str())
        else {
            return;
        };
        for part in path.ancestors() {
            if part == self.workspace() || !part.starts_with(self.workspace()) {
                break;
            }
            if let Err(e) = std::os::unix::fs::lchown(part, Some(uid), Some(gid)) {
                tracing::warn!(error = %e, "could not hand a workspace file to the sandbox uid");
                break;
            }
        }
    }

    /// Best-effort live output of this call as `tool.output` events. Chunks
    /// must already be free of bound secrets; they are redacted again here,
    /// line by line (a token split across reads is seen whole), knowing the
    /// secrets of the call's arguments.
    pub fn output_sink(&self) -> tokio::sync::mpsc::Sender<(&'static str, String)> {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<(&'static str, String)>(OUTPUT_QUEUE);
        let mut known = SecretRedactor::new();
        known.discover_json(self.args);
        let live = LiveOutput {
            events: self.host.events.clone(),
            session_id: self.ctx.session_id.clone(),
            turn_id: self.ctx.turn_id.clone(),
            call_id: self.call_id.to_owned(),
            sent: 0,
        };
        tokio::spawn(async move {
            let mut live = live;
            let mut lines = LineRedactor::new(known, View::Event);
            while let Some((stream, text)) = rx.recv().await {
                // Past the preview nothing more is shown: drain without redacting.
                if live.full() {
                    continue;
                }
                let text = lines.push(stream, &text);
                if !live.send(stream, &text).await {
                    return;
                }
            }
            for stream in lines.open_streams() {
                if live.full() {
                    break;
                }
                let text = lines.finish(stream);
                if !live.send(stream, &text).await {
                    return;
                }
            }
        });
        tx
    }

    pub async fn clarify(
        &self,
        question: &str,
        choices: &[String],
    ) -> crate::error::Result<Answer> {
        self.host
            .clarifications
            .ask(
                &self.ctx.scope,
                &self.ctx.session_id,
                &self.ctx.turn_id,
                question,
                choices,
                &self.ctx.cancel,
            )
            .await
    }
}

/// The live view of one call's output: a preview of at most
/// [`LIVE_OUTPUT_CHARS`] redacted characters; past it the rest is only in the
/// tails and the artifact, so a flood cannot fill the event log.
struct LiveOutput {
    events: EventLog,
    session_id: String,
    turn_id: String,
    call_id: String,
    sent: usize,
}

impl LiveOutput {
    fn full(&self) -> bool {
        self.sent >= LIVE_OUTPUT_CHARS
    }

    /// Append one `tool.output` event; false when the log refuses it.
    async fn send(&mut self, stream: &'static str, text: &str) -> bool {
        if text.is_empty() || self.full() {
            return true;
        }
        let room = LIVE_OUTPUT_CHARS - self.sent;
        let (text, cut) = match text.char_indices().nth(room) {
            Some((i, _)) => (&text[..i], true),
            None => (text, false),
        };
        self.sent += text.chars().count();
        let mut data = json!({"call_id": self.call_id, "stream": stream, "text": text});
        if cut || self.full() {
            data["truncated"] = json!(true);
            self.sent = LIVE_OUTPUT_CHARS;
        }
        self.events
            .append(&self.session_id, Some(&self.turn_id), "tool.output", data)
            .await
            .is_ok()
    }
}

/// Tools whose adapters resolve approval themselves (they know the target).
const HANDLER_APPROVAL: &[&str] = &[
    "session_search",
    "read_file",
    "write_file",
    "patch",
    "search_files",
    "terminal",
];

/// Characters of live output streamed per call as `tool.output` events.
const LIVE_OUTPUT_CHARS: usize = 64 * 1024;

/// Live output chunks queued per call; beyond this they are dropped from the
/// live view (the artifact keeps everything).
const OUTPUT_QUEUE: usize = 256;

/// Argument previews in approval requests stay this short.
const PREVIEW_CHARS: usize = 2_000;

#[derive(Clone)]
pub struct Dispatcher {
    pub approvals: Approvals,
    pub clarifications: Clarifications,
    pub tasks: crate::tasks::Tasks,
    events: EventLog,
    store: crate::store::Store,
    home: PathBuf,
    walls: Arc<Walls>,
}

/// The walls every effect of a tenant stays inside: the child-process
/// sandbox, the file tools' reach and the terminal's network.
#[derive(Debug)]
pub struct Walls {
    pub sandbox: crate::exec::sandbox::Sandbox,
    pub files: crate::policy::file_walls::FileWalls,
    /// `--terminal-network`: `false` cuts the network of terminal commands.
    pub terminal_network: bool,
    /// Bytes of command output (artifacts, task logs) per command and tenant.
    pub quota: Arc<crate::exec::StorageQuota>,
}

/// What the turn loop gets back: the model view of the result.
pub struct CallRecord {
    pub status: ToolStatus,
    pub model_content: String,
}

impl Dispatcher {
    pub fn new(
        approvals: Approvals,
        clarifications: Clarifications,
        tasks: crate::tasks::Tasks,
        events: EventLog,
        store: crate::store::Store,
        home: &Path,
        walls: Arc<Walls>,
    ) -> Arc<Self> {
        Arc::new(Self {
            approvals,
            clarifications,
            tasks,
            store,
            events,
            home: home.to_path_buf(),
            walls,
        })
    }

    /// The walls every effect stays inside (for `/readyz` and start-up).
    pub fn walls(&self) -> &Walls {
        &self.walls
    }

    /// Resolve, check and run one call; no events.
    pub async fn dispatch(
        &self,
        ctx: &CallContext,
        catalog: &ResolvedCatalog,
        call_id: &str,
        name: &str,
        args: &Value,
    ) -> ToolOutcome {
        let Some(entry) = catalog.resolve(name) else {
            return ToolOutcome::error(
                ToolStatus::NotFound,
                format!("tool not found or not allowed: {name}"),
            );
        };
        if let Err(errors) = entry.arguments.validate(args) {
            return ToolOutcome::error(
                ToolStatus::Invalid,
                format!("invalid arguments for {name}: {}", errors.join("; ")),
            );
        }
        if let Some(cap) = &entry.capability {
            if !catalog.grants().allows(cap, None, &[], false) {
                return ToolOutcome::error(
                    ToolStatus::Denied,
                    crate::policy::capabilities::denial_message(cap, None),
                );
            }
        }
        let env = ToolEnv {
            ctx,
            call_id,
            entry,
            catalog,
            args,
            host: self,
        };
        if !HANDLER_APPROVAL.contains(&name) && entry.policy != Policy::Auto {
            let preview = argument_preview(args, PREVIEW_CHARS);
            if let Some(denied) = env
                .approve(
                    Policy::Auto,
                    entry.risk,
                    "call",
                    "",
                    format!("call {name}"),
                    preview,
                    true,
                )
                .await
            {
                return denied;
            }
        }
        if ctx.cancel.is_cancelled() {
            return ToolOutcome::error(ToolStatus::Cancelled, "the turn was cancelled");
        }
        crate::tools::run_builtin(&env, name, args).await
    }

    /// Dispatch with the `tool.call` / `tool.result` events, redacted: the
    /// event log gets the event view, the caller gets the model view.
    pub async fn run_call(
        &self,
        ctx: &CallContext,
        catalog: &ResolvedCatalog,
        call_id: &str,
        name: &str,
        args: &Value,
    ) -> crate::error::Result<CallRecord> {
        let mut redactor = SecretRedactor::new();
        redactor.discover_json(args);
        let mut args_view = redactor.redact_json_for(args, View::Event);
        // An explicit environment overlay is shown by key only.
        if let Some(env) = args_view.get_mut("env").and_then(Value::as_object_mut) {
            for (k, v) in env.iter_mut() {
                *v = Value::String(format!("<redacted:{k}>"));
            }
        }
        self.events
            .append(
                &ctx.session_id,
                Some(&ctx.turn_id),
                "tool.call",
                json!({"call_id": call_id, "tool": name, "arguments": args_view}),
            )
            .await?;
        let outcome = self.dispatch(ctx, catalog, call_id, name, args).await;
        let raw = json!({"content": outcome.content, "data": outcome.data});
        let (status, views) = match redactor.try_views(&raw) {
            Ok(v) => (outcome.status, v),
            Err(e) => {
                tracing::error!(error = %e, tool = name, "redaction failed; results replaced");
                (
                    ToolStatus::Failed,
                    crate::redact::redactor::Views::redaction_failed(),
                )
            }
        };
        let event_view = views.get(View::Event);
        self.events
            .append(
                &ctx.session_id,
                Some(&ctx.turn_id),
                "tool.result",
                json!({"call_id": call_id, "tool": name, "status": status.as_str(),
                    "content": event_view.get("content").cloned().unwrap_or(Value::Null),
                    "data": event_view.get("data").cloned().unwrap_or(Value::Null)}),
            )
            .await?;
        let model = views.get(View::Model);
        let model_content = match model.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => model.to_string(),
        };
        Ok(CallRecord {
            status,
            model_content,
        })
    }
}

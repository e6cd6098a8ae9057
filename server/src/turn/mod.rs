//! Turn execution: start a turn (one running per session), drive the
//! model/tool loop through the provider and the dispatcher, emit events, and
//! end in exactly one terminal state (completed, failed, cancelled).

pub mod fake;
pub mod openai;
pub mod provider;
pub mod script;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::auth::PrincipalScope;
use crate::core::repository::CoreRepository;
use crate::dispatch::{CallContext, Dispatcher};
use crate::error::{Error, Result};
use crate::events::EventLog;
use crate::home::HomeLayout;
use crate::ids::{CoreId, TenantId};
use crate::ids::{SessionId, TurnId};
use crate::metrics::Metrics;
use crate::redact::redactor::{SecretRedactor, View};
use crate::running::RunningWork;
use crate::store::{SessionRow, StartTurn, Store, TurnFinish, TurnRow, TurnStatus};
use crate::wire::events::{self, EventPayload};
use provider::{ModelRequest, Provider};
use script::ScriptStep;

/// How much earlier conversation a turn sends to the model.
const HISTORY_MESSAGES: u32 = 200;

/// Providers by the name sessions record.
#[derive(Clone)]
pub struct Providers {
    pub default: &'static str,
    pub fake: Arc<dyn Provider>,
    pub openai: Option<Arc<dyn Provider>>,
}

impl Providers {
    fn get(&self, name: &str) -> Option<Arc<dyn Provider>> {
        match name {
            "fake" => Some(self.fake.clone()),
            "openai" => self.openai.clone(),
            _ => None,
        }
    }
}

/// Why a running turn was cancelled: "cancelled" (a client) or "shutdown".
type CancelReason = Arc<OnceLock<&'static str>>;

struct Inner {
    store: Store,
    events: EventLog,
    metrics: Arc<Metrics>,
    providers: Providers,
    max_steps: u32,
    node_id: String,
    running: RunningWork<TurnId, CancelReason>,
    dispatcher: Arc<Dispatcher>,
    cores: CoreRepository,
    home: std::path::PathBuf,
    /// Canonical workspace folder per session, so turns skip the syscalls.
    workspaces: Mutex<HashMap<SessionId, std::path::PathBuf>>,
}

/// The host-side parts a turn needs besides storage and events.
pub struct TurnDeps {
    pub providers: Providers,
    pub dispatcher: Arc<Dispatcher>,
    pub cores: CoreRepository,
    pub home: std::path::PathBuf,
    pub max_steps: u32,
    pub node_id: String,
}

/// Starts, cancels and recovers turns; cheap to clone.
#[derive(Clone)]
pub struct TurnService {
    inner: Arc<Inner>,
}

/// How a turn ended, short of completing.
enum TurnEnd {
    Failed { reason: &'static str, error: String },
    Cancelled,
}

struct TurnContext {
    scope: PrincipalScope,
    session: SessionRow,
    turn_id: TurnId,
    input: String,
    /// The input with secrets replaced, as records and history keep it.
    shown_input: String,
    mode: Mode,
}

/// What drives the turn.
enum Mode {
    /// The session's provider (with an optional fake-provider script).
    Model { script: Option<Vec<ScriptStep>> },
    /// `POST …/tool-calls`: one call through the dispatcher, no model.
    Direct {
        call_id: String,
        tool: String,
        arguments: Value,
    },
}

impl TurnService {
    pub fn new(store: Store, events: EventLog, metrics: Arc<Metrics>, deps: TurnDeps) -> Self {
        Self {
            inner: Arc::new(Inner {
                store,
                events,
                metrics,
                providers: deps.providers,
                max_steps: deps.max_steps,
                node_id: deps.node_id,
                running: RunningWork::default(),
                dispatcher: deps.dispatcher,
                cores: deps.cores,
                home: deps.home,
                workspaces: Mutex::new(HashMap::new()),
            }),
        }
    }

    pub fn default_provider(&self) -> &'static str {
        self.inner.providers.default
    }

    /// Start a turn; 409 if another turn of the session runs.
    pub async fn start(
        &self,
        scope: &PrincipalScope,
        session_id: SessionId,
        input: String,
        script: Option<Value>,
    ) -> Result<TurnId> {
        let session = self.owned_session(scope, session_id).await?;
        let script = match script {
            // The fake provider also plays a script written in the text itself.
            None | Some(Value::Null) if session.provider == "fake" => script::from_input(&input)
                .transpose()
                .map_err(Error::Invalid)?,
            None | Some(Value::Null) => None,
            Some(v) => {
                if session.provider != "fake" {
                    return Err(Error::Invalid(format!(
                        "`script` is only accepted on sessions of the fake provider; this session uses {:?}",
                        session.provider
                    )));
                }
                Some(script::parse(&v).map_err(Error::Invalid)?)
            }
        };
        self.begin(scope, session, input, Mode::Model { script })
            .await
    }

    /// Run one tool call through the dispatcher as its own turn
    /// (`POST /v1/sessions/{id}/tool-calls`). Returns (turn id, call id).
    pub async fn start_tool_call(
        &self,
        scope: &PrincipalScope,
        session_id: SessionId,
        tool: String,
        arguments: Value,
    ) -> Result<(TurnId, String)> {
        if tool.trim().is_empty() || tool.len() > 128 {
            return Err(Error::Invalid("`tool` must name a tool".into()));
        }
        let session = self.owned_session(scope, session_id).await?;
        let call_id = format!("call_{}", uuid::Uuid::new_v4().simple());
        let input = format!("tool-call: {tool}");
        let mode = Mode::Direct {
            call_id: call_id.clone(),
            tool,
            arguments,
        };
        let turn = self.begin(scope, session, input, mode).await?;
        Ok((turn, call_id))
    }

    async fn owned_session(
        &self,
        scope: &PrincipalScope,
        session_id: SessionId,
    ) -> Result<SessionRow> {
        self.inner
            .store
            .get_session_cached(scope.tenant(), scope.principal(), session_id)
            .await?
            .ok_or(Error::NotFound)
    }

    async fn begin(
        &self,
        scope: &PrincipalScope,
        session: SessionRow,
        input: String,
        mode: Mode,
    ) -> Result<TurnId> {
        let inner = &self.inner;
        let session_id = session.id;
        let turn_id = TurnId::new();
        // Records and events keep the redacted input; only the model sees it raw.
        let shown_input = SecretRedactor::new().redact_str_for(&input, View::Durable);
        match inner
            .store
            .start_turn(
                turn_id,
                session_id,
                scope.tenant(),
                scope.principal(),
                &shown_input,
                &inner.node_id,
            )
            .await?
        {
            StartTurn::Started => {}
            StartTurn::Busy => {
                return Err(Error::Conflict(
                    "another turn of this session is still running".into(),
                ))
            }
        }
        let reason: CancelReason = Arc::default();
        let token = inner.running.insert(turn_id, reason.clone());
        inner.metrics.turn_started();
        if let Err(e) = inner
            .events
            .append(
                session_id,
                Some(turn_id),
                EventPayload::TurnStarted(events::TurnStarted {
                    input: shown_input.clone(),
                }),
            )
            .await
        {
            // Without its first event the turn cannot be observed; fail it now.
            let _ = inner
                .store
                .finish_turn(
                    turn_id,
                    TurnStatus::Failed,
                    None,
                    Some("internal"),
                    Some("could not record turn start"),
                    0,
                )
                .await;
            inner.running.forget(&turn_id);
            return Err(e);
        }
        let ctx = TurnContext {
            scope: scope.clone(),
            session,
            turn_id,
            input,
            shown_input,
            mode,
        };
        let this = self.clone();
        inner
            .running
            .spawn(turn_id, async move { this.run(ctx, token, reason).await });
        Ok(turn_id)
    }

    async fn run(
        &self,
        ctx: TurnContext,
        token: CancellationToken,
        reason: Arc<OnceLock<&'static str>>,
    ) {
        let started = Instant::now();
        let mut new_messages: Vec<Value> = Vec::new();
        let mut steps = 0u32;
        // `drive` observes the token itself, so approvals and clarifications
        // it waits on are settled (denied) rather than abandoned.
        let end = self
            .drive(&ctx, &token, &mut new_messages, &mut steps)
            .await;
        let inner = &self.inner;
        let sid = ctx.session.id;
        // The record and the terminal event say the same; the final text is
        // model output, so both keep it redacted.
        let (finish, payload) = match end {
            Ok(out) => {
                let output = SecretRedactor::new().redact_str_for(&out, View::Durable);
                (
                    TurnFinish::completed(ctx.turn_id, output.clone(), steps),
                    EventPayload::TurnCompleted(events::TurnCompleted { output, steps }),
                )
            }
            Err(TurnEnd::Failed { reason, error }) => (
                TurnFinish::failed(ctx.turn_id, reason, error.clone(), steps),
                EventPayload::TurnFailed(events::TurnFailed {
                    reason: reason.to_owned(),
                    error,
                }),
            ),
            Err(TurnEnd::Cancelled) => {
                let reason = reason.get().copied().unwrap_or("cancelled");
                (
                    TurnFinish::cancelled(ctx.turn_id, reason, steps),
                    EventPayload::TurnCancelled(events::TurnCancelled {
                        reason: reason.to_owned(),
                    }),
                )
            }
        };
        let status = finish.status;
        // State, messages and the terminal event commit together; the event is
        // published only if this transition won (a cancel elsewhere may have).
        match inner
            .events
            .append_final(sid, payload, finish.clone(), new_messages)
            .await
        {
            Ok(Some(_)) => inner.metrics.turn_finished(status, started.elapsed()),
            Ok(None) => {}
            Err(e) => {
                tracing::error!(error = %e, turn = %finish.turn_id, "could not record turn end; settling state only");
                let _ = inner
                    .store
                    .finish_turn(
                        ctx.turn_id,
                        status,
                        finish.output.as_deref(),
                        finish.reason.as_deref(),
                        finish.error.as_deref(),
                        steps,
                    )
                    .await;
            }
        }
    }

    async fn drive(
        &self,
        ctx: &TurnContext,
        token: &CancellationToken,
        new_messages: &mut Vec<Value>,
        steps: &mut u32,
    ) -> Result<String, TurnEnd> {
        let inner = &self.inner;
        let sid = ctx.session.id;
        let tid = ctx.turn_id;
        let db = |e: sqlx::Error| TurnEnd::Failed {
            reason: "internal",
            error: format!("database: {e}"),
        };
        let ev = |e: Error| TurnEnd::Failed {
            reason: "internal",
            error: format!("event log: {e}"),
        };
        let tenant: &TenantId = ctx.scope.tenant();
        let core_id = CoreId::parse(&ctx.session.core).map_err(|e| TurnEnd::Failed {
            reason: "core_load",
            error: e.to_string(),
        })?;
        let core = inner
            .cores
            .load(tenant, &core_id)
            .await
            .map_err(|error| TurnEnd::Failed {
                reason: "core_load",
                error,
            })?;
        let mut catalog = &core.resolved;
        let call_ctx = CallContext {
            scope: ctx.scope.clone(),
            session_id: ctx.session.id,
            turn_id: tid,
            workspace: self.workspace_of(&ctx.scope, &ctx.session).map_err(|e| {
                TurnEnd::Failed {
                    reason: "workspace",
                    error: e.to_string(),
                }
            })?,
            state_dir: HomeLayout::new(&inner.home).session_state_dir(&sid.to_string()),
            core_fingerprint: catalog.fingerprint().to_owned(),
            skills: std::sync::Arc::new(core.skills.clone()),
            cancel: token.clone(),
        };
        // The core's MCP servers join the turn's catalog once allowed and
        // approved (the dispatcher asks).
        let with_mcp = inner
            .dispatcher
            .mcp_catalog(&call_ctx, catalog, &core.mcp)
            .await;
        if let Some(extended) = &with_mcp {
            catalog = extended;
        }
        if token.is_cancelled() {
            return Err(TurnEnd::Cancelled);
        }
        let script = match &ctx.mode {
            Mode::Direct {
                call_id,
                tool,
                arguments,
            } => {
                *steps = 0;
                let rec = inner
                    .dispatcher
                    .run_call(&call_ctx, catalog, call_id, tool, arguments)
                    .await
                    .map_err(ev)?;
                if token.is_cancelled() {
                    return Err(TurnEnd::Cancelled);
                }
                return Ok(rec.model_content);
            }
            Mode::Model { script } => script.as_deref(),
        };
        let provider =
            inner
                .providers
                .get(&ctx.session.provider)
                .ok_or_else(|| TurnEnd::Failed {
                    reason: "provider_unavailable",
                    error: format!(
                        "provider {:?} is not configured on this server",
                        ctx.session.provider
                    ),
                })?;
        let mut history = if provider.name() == "fake" {
            Vec::new() // The fake provider never reads history; skip the query.
        } else {
            let mut h = Vec::new();
            if let Some(soul) = &core.soul {
                h.push(json!({"role": "system", "content": soul}));
            }
            h.extend(
                inner
                    .store
                    .recent_messages(&sid.to_string(), HISTORY_MESSAGES)
                    .await
                    .map_err(db)?,
            );
            h
        };
        history.push(json!({"role": "user", "content": ctx.input}));
        // Stored history keeps the input as recorded at turn start (redacted).
        new_messages.push(json!({"role": "user", "content": ctx.shown_input}));
        let tools = catalog.definitions();
        let max_steps = inner.max_steps.min(core.max_model_steps);
        for step in 0..max_steps as usize {
            *steps = step as u32 + 1;
            let reply = tokio::select! {
                r = provider.complete(ModelRequest {
                    messages: &history,
                    tools,
                    script,
                    step,
                    input: &ctx.input,
                }) => r.map_err(|e| TurnEnd::Failed { reason: "provider", error: e.to_string() })?,
                _ = token.cancelled() => return Err(TurnEnd::Cancelled),
            };
            history.push(reply.to_message());
            let stored = model_view(&reply);
            if let Some(text) = &reply.content {
                if !text.is_empty() {
                    let shown = stored
                        .get("content")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    inner
                        .events
                        .append(
                            sid,
                            Some(tid),
                            EventPayload::Message(events::Message {
                                role: "assistant".into(),
                                content: shown,
                            }),
                        )
                        .await
                        .map_err(ev)?;
                }
            }
            new_messages.push(stored);
            if reply.tool_calls.is_empty() {
                return Ok(reply.content.unwrap_or_default());
            }
            for call in &reply.tool_calls {
                if token.is_cancelled() {
                    return Err(TurnEnd::Cancelled);
                }
                let rec = inner
                    .dispatcher
                    .run_call(&call_ctx, catalog, &call.id, &call.name, &call.arguments)
                    .await
                    .map_err(ev)?;
                let m =
                    json!({"role": "tool", "tool_call_id": call.id, "content": rec.model_content});
                history.push(m.clone());
                new_messages.push(m);
            }
            if token.is_cancelled() {
                return Err(TurnEnd::Cancelled);
            }
        }
        Err(TurnEnd::Failed {
            reason: "max_model_steps",
            error: format!("the model made {max_steps} calls without finishing"),
        })
    }

    /// The session's workspace folder: a private folder of its owner.
    fn workspace_of(
        &self,
        scope: &PrincipalScope,
        session: &SessionRow,
    ) -> std::io::Result<std::path::PathBuf> {
        let dir = HomeLayout::new(&self.inner.home).workspace_dir(
            scope.tenant(),
            scope.principal(),
            &session.workspace,
        );
        crate::bootstrap::private_dir(&dir).map_err(std::io::Error::other)?;
        let dir = dir.canonicalize()?;
        let mut cache = self
            .inner
            .workspaces
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if cache.len() >= 65_536 {
            cache.clear();
        }
        cache.insert(session.id, dir.clone());
        Ok(dir)
    }

    /// Turn status and output, owner-checked.
    pub async fn get(
        &self,
        scope: &PrincipalScope,
        session: SessionId,
        turn: TurnId,
    ) -> Result<TurnRow> {
        self.inner
            .store
            .get_turn(scope.tenant(), scope.principal(), session, turn)
            .await?
            .ok_or(Error::NotFound)
    }

    /// Cancel a turn; idempotent. Returns the turn's state afterwards.
    pub async fn cancel(
        &self,
        scope: &PrincipalScope,
        session: SessionId,
        turn: TurnId,
    ) -> Result<TurnRow> {
        let row = self.get(scope, session, turn).await?;
        if row.status != TurnStatus::Running {
            return Ok(row);
        }
        let here = self
            .inner
            .running
            .cancel(
                &turn,
                |reason| {
                    let _ = reason.set("cancelled");
                },
                Duration::from_secs(10),
            )
            .await;
        if !here {
            // Not running here (another node, or left over): settle it in the database.
            if self
                .inner
                .store
                .finish_turn(
                    turn,
                    TurnStatus::Cancelled,
                    None,
                    Some("cancelled"),
                    None,
                    0,
                )
                .await?
            {
                self.inner
                    .events
                    .append(
                        row.session_id,
                        Some(row.id),
                        EventPayload::TurnCancelled(events::TurnCancelled {
                            reason: "cancelled".into(),
                        }),
                    )
                    .await?;
            }
        }
        self.get(scope, session, turn).await
    }

    /// Fail turns this node left running when it stopped (reason `lost`).
    pub async fn recover_lost(&self) -> anyhow::Result<usize> {
        let lost = self
            .inner
            .store
            .fail_lost_turns(&self.inner.node_id)
            .await?;
        for t in &lost {
            self.inner
                .events
                .append(
                    t.session_id,
                    Some(t.turn_id),
                    EventPayload::TurnFailed(events::TurnFailed {
                        reason: "lost".into(),
                        error: "the server stopped while the turn was running".into(),
                    }),
                )
                .await?;
        }
        Ok(lost.len())
    }

    /// Cancel every running turn (reason `shutdown`) and wait for them to settle.
    pub async fn shutdown(&self, grace: Duration) {
        self.inner
            .running
            .shutdown(
                |reason| {
                    let _ = reason.set("shutdown");
                },
                grace,
            )
            .await;
    }

    pub fn running_count(&self) -> usize {
        self.inner.running.len()
    }
}

/// The assistant message as stored in history: secrets in its text and in
/// its tool-call arguments replaced (the model-history view).
fn model_view(reply: &provider::ModelReply) -> Value {
    let mut redacted = reply.clone();
    if let Some(text) = &reply.content {
        redacted.content = Some(SecretRedactor::new().redact_str_for(text, View::Model));
    }
    for call in &mut redacted.tool_calls {
        let mut r = SecretRedactor::new();
        r.discover_json(&call.arguments);
        call.arguments = r.redact_json_for(&call.arguments, View::Model);
    }
    redacted.to_message()
}

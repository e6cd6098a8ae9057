//! Turn execution: start a turn (one running per session), drive the
//! model/tool loop through the provider and the dispatcher, emit events, and
//! end in exactly one terminal state (completed, failed, cancelled).

pub mod anthropic;
pub mod attended;
pub mod context;
pub mod fake;
pub mod openai;
pub mod provider;
pub mod script;
mod slots;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::auth::PrincipalScope;
use crate::catalog::ResolvedCatalog;
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
use crate::tasks::children::{ChildCore, ChildEnd, ChildRunner, Delegation, Lineage};
use crate::tasks::{CompletionError, CompletionSink, Signal};
use crate::wire::events::{self, EventPayload};
use provider::{ModelRequest, Provider};
use script::ScriptStep;

/// Most stored messages read back for one turn's context (a safety cap;
/// the token budget decides what is sent, and compaction keeps the
/// messages since the last summary well below this).
const HISTORY_SCAN_MESSAGES: u32 = 5000;
/// Tokens kept for the reply when the core's `model_options.max_tokens` says nothing.
const DEFAULT_REPLY_RESERVE: u64 = 4096;

/// Providers by name; sessions record the default one, a core's
/// `model.provider` may choose another.
#[derive(Clone)]
pub struct Providers {
    pub default: &'static str,
    pub fake: Arc<dyn Provider>,
    pub openai: Option<Arc<dyn Provider>>,
    pub anthropic: Option<Arc<dyn Provider>>,
    /// The context window (tokens) when a core's `model_options` sets none.
    pub context_window: u64,
    /// Base URLs and default models for clients built with a tenant's key.
    pub config: Option<crate::config::ProviderConfig>,
    /// Opens the provider keys tenants' admins configured.
    pub sealer: Option<Arc<crate::sealing::Sealer>>,
}

/// Providers a tenant's own key configures, by name (`openai`, `anthropic`).
pub const TENANT_PROVIDERS: &[&str] = &["openai", "anthropic"];

/// How long a tenant's provider client is reused before its key is read again.
const TENANT_PROVIDER_TTL: Duration = Duration::from_secs(2);

type TenantProviderCache = Mutex<HashMap<(TenantId, String), (Instant, Option<Arc<dyn Provider>>)>>;

impl Providers {
    fn get(&self, name: &str) -> Option<Arc<dyn Provider>> {
        match name {
            "fake" => Some(self.fake.clone()),
            "openai" => self.openai.clone(),
            "anthropic" => self.anthropic.clone(),
            _ => None,
        }
    }
}

/// A direct call's tool name: present and of a sane length (the catalog
/// decides whether it exists).
fn check_tool_name(tool: &str) -> Result<()> {
    if tool.trim().is_empty() || tool.len() > 128 {
        return Err(Error::Invalid("`tool` must name a tool".into()));
    }
    Ok(())
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
    tasks: crate::tasks::Tasks,
    walls: Arc<crate::walls::Walls>,
    runners: Arc<crate::authored::Runners>,
    meter: crate::usage::Meter,
    budgets: crate::usage::guard::BudgetGuard,
    cores: CoreRepository,
    home: std::path::PathBuf,
    /// Canonical workspace folder per session, so turns skip the syscalls.
    workspaces: Mutex<HashMap<SessionId, std::path::PathBuf>>,
    /// Clients built with tenants' own keys, briefly cached.
    tenant_providers: TenantProviderCache,
    /// Delegation lineage per session (`None`: not a child session).
    lineages: Mutex<HashMap<SessionId, Option<Delegation>>>,
}

/// The host-side parts a turn needs besides storage and events.
pub struct TurnDeps {
    pub providers: Providers,
    pub dispatcher: Arc<Dispatcher>,
    /// Signals (cancel a turn anywhere) and a child's background work.
    pub tasks: crate::tasks::Tasks,
    /// The walls slots run inside.
    pub walls: Arc<crate::walls::Walls>,
    /// The warm runners slots run on.
    pub runners: Arc<crate::authored::Runners>,
    /// Where each model call's usage is recorded.
    pub meter: crate::usage::Meter,
    /// Asked before each model step.
    pub budgets: crate::usage::guard::BudgetGuard,
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
    /// A chat channel's turn: its platform (see [`TurnService::start_bound`]);
    /// empty for the API's turns.
    channel: String,
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
        /// Whether the core's own MCP servers join the call's catalog.
        mcp_server_tools: bool,
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
                tasks: deps.tasks,
                walls: deps.walls,
                runners: deps.runners,
                meter: deps.meter,
                budgets: deps.budgets,
                cores: deps.cores,
                home: deps.home,
                workspaces: Mutex::new(HashMap::new()),
                tenant_providers: Mutex::new(HashMap::new()),
                lineages: Mutex::new(HashMap::new()),
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
        self.start_with(scope, session_id, input, script, String::new())
            .await
    }

    /// Start a chat channel's turn from `platform` (`slack`, `telegram`, …):
    /// its principal reads only this session's history (the conversation's
    /// binding), and its usage is attributed to the platform.
    pub async fn start_bound(
        &self,
        scope: &PrincipalScope,
        session_id: SessionId,
        input: String,
        platform: &str,
    ) -> Result<TurnId> {
        self.start_with(scope, session_id, input, None, platform.to_owned())
            .await
    }

    async fn start_with(
        &self,
        scope: &PrincipalScope,
        session_id: SessionId,
        input: String,
        script: Option<Value>,
        channel: String,
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
        self.begin(scope, session, input, Mode::Model { script }, channel)
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
        check_tool_name(&tool)?;
        let session = self.owned_session(scope, session_id).await?;
        let call_id = format!("call_{}", uuid::Uuid::new_v4().simple());
        let input = format!("tool-call: {tool}");
        let mode = Mode::Direct {
            call_id: call_id.clone(),
            tool,
            arguments,
            mcp_server_tools: true,
        };
        let turn = self
            .begin(scope, session, input, mode, String::new())
            .await?;
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
        channel: String,
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
            channel,
        };
        // Every log line of the turn (its tools, slots and provider calls
        // included) carries who and where, so a JSON log can be filtered by
        // tenant, session or turn.
        let span = tracing::info_span!(
            "turn",
            tenant = %scope.tenant(),
            session = %session_id,
            turn = %turn_id
        );
        let this = self.clone();
        inner.running.spawn(
            turn_id,
            tracing::Instrument::instrument(
                async move { this.run(ctx, token, reason).await },
                span,
            ),
        );
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
            Ok(Some(_)) => {
                inner.metrics.turn_finished(status, started.elapsed());
                // Debug, not info: at thousands of turns a second a line per
                // turn would be most of the log.
                tracing::debug!(
                    status = status.as_str(),
                    steps,
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "turn ended"
                );
            }
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
        // A child agent's session sees only its narrowed tools.
        let delegation = self.delegation_of(sid).await.map_err(db)?;
        let narrowed;
        let mut catalog = match &delegation {
            None => &core.resolved,
            Some(d) => {
                let mut above = Vec::with_capacity(d.ancestor_cores.len());
                for p in &d.ancestor_cores {
                    above.push(self.load_core(tenant, p).await.map_err(|error| {
                        TurnEnd::Failed {
                            reason: "core_load",
                            error,
                        }
                    })?);
                }
                narrowed = child_catalog(&core.resolved, d, &above);
                &narrowed
            }
        };
        let call_ctx = CallContext {
            scope: ctx.scope.clone(),
            session_id: ctx.session.id,
            turn_id: tid,
            workspace: match delegation.as_ref().and_then(Delegation::run_of) {
                // The evolver child of an evolve run works in its worktree.
                Some((core, run)) => self.run_workspace(tenant, core, run).await?,
                None => {
                    self.workspace_of(&ctx.scope, &ctx.session)
                        .map_err(|e| TurnEnd::Failed {
                            reason: "workspace",
                            error: e.to_string(),
                        })?
                }
            },
            state_dir: HomeLayout::new(&inner.home).session_state_dir(&sid.to_string()),
            core_fingerprint: catalog.fingerprint().to_owned(),
            skills: core.skills.clone(),
            core: std::sync::Arc::new(crate::core::skill_doc::CoreRef {
                id: core_id.clone(),
                dir: core.dir.clone(),
                skills_root: core.skills_root.clone(),
            }),
            cancel: token.clone(),
            bound_session: !ctx.channel.is_empty(),
            channel: ctx.channel.clone(),
            delegation: delegation.unwrap_or_default(),
        };
        // The core's MCP servers join the turn's catalog once allowed and
        // approved (the dispatcher asks). A child agent keeps exactly the
        // tools it was narrowed to: no MCP servers join it; nor do they join
        // an outside MCP client's call unless the core serves them.
        let outside_mcp = matches!(
            ctx.mode,
            Mode::Direct {
                mcp_server_tools: false,
                ..
            }
        );
        let with_mcp = if call_ctx.delegation.is_child() || outside_mcp {
            None
        } else {
            inner
                .dispatcher
                .mcp_catalog(&call_ctx, catalog, &core.mcp)
                .await
        };
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
                ..
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
        // The core's `model.provider` wins over the session's (the server default).
        let provider_name = core
            .model
            .provider
            .as_deref()
            .unwrap_or(&ctx.session.provider);
        let own = self
            .tenant_provider(tenant, provider_name)
            .await
            .map_err(|e| TurnEnd::Failed {
                reason: "provider",
                error: format!("tenant provider key: {e}"),
            })?;
        let provider = own
            .or_else(|| inner.providers.get(provider_name))
            .ok_or_else(|| TurnEnd::Failed {
                reason: "provider_unavailable",
                error: format!(
                    "provider {provider_name:?} is not configured on this server (the server operator sets its key)"
                ),
            })?;
        let tools = catalog.definitions();
        // The slot pipeline (none when the core has no pipelines.yaml).
        let slots = if core.pipeline.is_empty() {
            None
        } else {
            Some(self.prepare_slots(ctx, &call_ctx, catalog, &core).await?)
        };
        let prompt = match &slots {
            Some(s) => self.input_slots(ctx, &call_ctx, catalog, &s.input).await?,
            None => slots::Prompt {
                system: Vec::new(),
                user: ctx.input.clone(),
                stored_user: ctx.shown_input.clone(),
            },
        };
        let mut history = if provider.name() == "fake" {
            Vec::new() // The fake provider never reads history; skip the query.
        } else {
            tokio::select! {
                h = self.context(ctx, &core, provider.as_ref(), tools) => h.map_err(db)?,
                _ = token.cancelled() => return Err(TurnEnd::Cancelled),
            }
        };
        // The session's bootstrap snapshot follows the SOUL; input slots'
        // system context comes right before this turn's user message.
        if let Some(text) = slots
            .as_ref()
            .map(|s| &s.bootstrap)
            .filter(|t| !t.is_empty())
        {
            let at = usize::from(core.soul.is_some() && !history.is_empty());
            history.insert(at, json!({"role": "system", "content": text}));
        }
        for text in &prompt.system {
            history.push(json!({"role": "system", "content": text}));
        }
        history.push(json!({"role": "user", "content": prompt.user}));
        // Stored history keeps the input as recorded at turn start (redacted),
        // or what the input slots chose to persist.
        new_messages.push(json!({"role": "user", "content": prompt.stored_user}));
        let max_steps = inner.max_steps.min(core.max_model_steps);
        let options = Some(&core.model.options);
        for step in 0..max_steps as usize {
            // A spent budget stops the turn before the next model call.
            if let Err(over) = inner
                .budgets
                .check(ctx.scope.tenant().as_str(), ctx.scope.principal().as_str())
                .await
            {
                return Err(TurnEnd::Failed {
                    reason: "budget_exceeded",
                    error: over.to_string(),
                });
            }
            *steps = step as u32 + 1;
            let started = std::time::Instant::now();
            let reply = tokio::select! {
                r = provider.complete(ModelRequest {
                    messages: &history,
                    tools,
                    script,
                    step,
                    input: &prompt.user,
                    model: core.model.model_name.as_deref(),
                    options,
                }) => r.map_err(|e| TurnEnd::Failed { reason: "provider", error: e.to_string() })?,
                _ = token.cancelled() => return Err(TurnEnd::Cancelled),
            };
            self.meter_model_call(ctx, provider.as_ref(), &core, reply.usage, started);
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
                let text = reply.content.unwrap_or_default();
                let Some(s) = &slots else {
                    return Ok(text);
                };
                let (output, extra) = self
                    .output_slots(ctx, &call_ctx, catalog, &s.output, text)
                    .await?;
                new_messages.extend(extra);
                return Ok(output);
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

    /// A client of `name` with the tenant's own key, if its admin set one
    /// (it wins over the server operator's key).
    async fn tenant_provider(
        &self,
        tenant: &TenantId,
        name: &str,
    ) -> anyhow::Result<Option<Arc<dyn Provider>>> {
        let inner = &self.inner;
        let (Some(sealer), Some(config)) = (&inner.providers.sealer, &inner.providers.config)
        else {
            return Ok(None);
        };
        if !TENANT_PROVIDERS.contains(&name) {
            return Ok(None);
        }
        let key = (tenant.clone(), name.to_owned());
        if let Some((at, p)) = inner
            .tenant_providers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            if at.elapsed() < TENANT_PROVIDER_TTL {
                return Ok(p.clone());
            }
        }
        let built: Option<Arc<dyn Provider>> = match inner.store.provider_key(tenant, name).await? {
            None => None,
            Some(row) => {
                let api_key = crate::config::ApiKey::new(sealer.open_text(
                    crate::sealing::Binding::ProviderKey {
                        tenant,
                        provider: name,
                    },
                    &row.sealed,
                )?);
                Some(match name {
                    "anthropic" => Arc::new(anthropic::AnthropicProvider::new(
                        &config.anthropic_base_url,
                        Some(api_key),
                        &config.model_for(&crate::config::ProviderKind::Anthropic),
                    )?),
                    _ => Arc::new(openai::OpenAiProvider::new(
                        &config.openai_base_url,
                        Some(api_key),
                        &config.model_for(&crate::config::ProviderKind::OpenAi),
                    )?),
                })
            }
        };
        let mut cache = inner
            .tenant_providers
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if cache.len() >= 4096 {
            cache.clear();
        }
        cache.insert(key, (Instant::now(), built.clone()));
        Ok(built)
    }

    /// The providers the caller's tenant has its own key for (operators and admins).
    pub async fn provider_keys(
        &self,
        scope: &PrincipalScope,
    ) -> Result<Vec<crate::store::ProviderKeyRow>> {
        if !scope.is_operator() {
            return Err(Error::Forbidden(
                "provider keys are managed by tenant operators and admins".into(),
            ));
        }
        Ok(self.inner.store.provider_keys(scope.tenant()).await?)
    }

    /// Seal and store the tenant's key for `provider` (tenant admins only).
    pub async fn set_provider_key(
        &self,
        scope: &PrincipalScope,
        via: &crate::store::Surface,
        provider: &str,
        api_key: &str,
    ) -> Result<crate::store::ProviderKeyRow> {
        admin_only(scope)?;
        let sealer =
            self.inner.providers.sealer.as_ref().ok_or_else(|| {
                Error::Unavailable("this server cannot store provider keys".into())
            })?;
        let sealed = sealer
            .seal(
                crate::sealing::Binding::ProviderKey {
                    tenant: scope.tenant(),
                    provider,
                },
                api_key.as_bytes(),
            )
            .map_err(|e| Error::Internal(e.into()))?;
        let row = self
            .inner
            .store
            .put_provider_key(
                scope.tenant(),
                provider,
                &sealed,
                scope.principal(),
                // Never the key: only that one was set.
                Some(&scope.audit(via, "provider_key.set", provider, serde_json::json!({}))),
            )
            .await?;
        self.forget_tenant_provider(scope.tenant(), provider);
        Ok(row)
    }

    /// Remove the tenant's key for `provider` (tenant admins only).
    pub async fn delete_provider_key(
        &self,
        scope: &PrincipalScope,
        via: &crate::store::Surface,
        provider: &str,
    ) -> Result<()> {
        admin_only(scope)?;
        let audit = scope.audit(via, "provider_key.removed", provider, serde_json::json!({}));
        let existed = self
            .inner
            .store
            .delete_provider_key(scope.tenant(), provider, &audit)
            .await?;
        self.forget_tenant_provider(scope.tenant(), provider);
        if existed {
            Ok(())
        } else {
            Err(Error::NotFound)
        }
    }

    fn forget_tenant_provider(&self, tenant: &TenantId, provider: &str) {
        self.inner
            .tenant_providers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(tenant.clone(), provider.to_owned()));
    }

    /// The model's context for a turn: the core's system text, the latest
    /// summary and the newest turns that fit the model's window (see
    /// [`context`]). When they no longer fit, older turns are compacted into
    /// a new summary by the turn's own provider and model first.
    async fn context(
        &self,
        ctx: &TurnContext,
        core: &crate::core::repository::CoreView,
        provider: &dyn Provider,
        tools: &[Value],
    ) -> Result<Vec<Value>, sqlx::Error> {
        let inner = &self.inner;
        let sid = ctx.session.id.to_string();
        let sid = sid.as_str();
        let window = core
            .model
            .context_window()
            .unwrap_or(inner.providers.context_window);
        let reserve = core
            .model
            .options
            .get("max_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_REPLY_RESERVE)
            .min(window / 2);
        let mut out = Vec::new();
        if let Some(soul) = &core.soul {
            out.push(json!({"role": "system", "content": soul}));
        }
        let fixed = context::estimate_all(&out)
            + context::estimate_all(tools)
            + context::estimate_tokens(&json!({"role": "user", "content": ctx.input}))
            + reserve;
        let room = window.saturating_sub(fixed);
        let compaction = inner.store.latest_compaction(sid).await?;
        let after = compaction.as_ref().map_or(0, |c| c.until_message_id);
        let stored = inner
            .store
            .messages_after(sid, after, HISTORY_SCAN_MESSAGES)
            .await?;
        let turns = group_turns(stored);
        let mut summary = compaction.map(|c| c.summary);
        let tokens_of = |s: &Option<String>| {
            s.as_deref().map_or(0, |s| {
                context::estimate_tokens(&context::summary_message(s))
            })
        };
        let first = match context::plan(room, tokens_of(&summary), &turns) {
            context::Plan::Send { first } => first,
            context::Plan::Compact { upto, first } => {
                let covered = &turns[..upto];
                if let Some(new) = self
                    .compact(
                        ctx,
                        provider,
                        core,
                        summary.as_deref(),
                        covered,
                        room,
                        window,
                        reserve,
                    )
                    .await
                {
                    let until = covered.last().map_or(after, |t| t.last_id);
                    inner.store.save_compaction(sid, until, &new).await?;
                    tracing::info!(
                        session = sid,
                        turns = upto,
                        "compacted older turns into a summary"
                    );
                    summary = Some(new);
                    first
                } else {
                    // No new summary: the old one stays, and what does not fit is left out.
                    first.max(context::first_fitting(
                        room.saturating_sub(tokens_of(&summary)),
                        &turns,
                        first,
                    ))
                }
            }
        };
        if let Some(s) = &summary {
            out.push(context::summary_message(s));
        }
        out.extend(turns.into_iter().skip(first).flat_map(|t| t.messages));
        Ok(out)
    }

    /// Hand one model call's usage to the meter, attributed to the turn.
    fn meter_model_call(
        &self,
        ctx: &TurnContext,
        provider: &dyn Provider,
        core: &crate::core::repository::CoreView,
        usage: Option<provider::TokenUsage>,
        started: std::time::Instant,
    ) {
        self.inner.meter.model_call(crate::store::NewModelCall {
            tenant_id: ctx.session.tenant_id.clone(),
            principal_id: ctx.session.principal_id.clone(),
            session_id: ctx.session.id.to_string(),
            core_id: ctx.session.core.clone(),
            channel: ctx.channel.clone(),
            provider: provider.name().to_owned(),
            model: core
                .model
                .model_name
                .clone()
                .unwrap_or_else(|| provider.default_model().to_owned()),
            tokens: usage.map(|u| (u.input, u.output, u.cached)),
            latency_ms: started.elapsed().as_millis() as u64,
            at: crate::time::now_ms(),
        });
    }

    /// Asks the provider for a summary of `turns` (and the previous
    /// summary), bounded to a quarter of the room. `None` if it fails.
    #[allow(clippy::too_many_arguments)]
    async fn compact(
        &self,
        ctx: &TurnContext,
        provider: &dyn Provider,
        core: &crate::core::repository::CoreView,
        previous: Option<&str>,
        turns: &[context::StoredTurn],
        room: u64,
        window: u64,
        reserve: u64,
    ) -> Option<String> {
        let mut transcript = String::new();
        if let Some(p) = previous {
            transcript.push_str("Summary of still earlier turns:\n");
            transcript.push_str(p);
            transcript.push_str("\n\n");
        }
        for m in turns.iter().flat_map(|t| &t.messages) {
            transcript.push_str(&context::transcript_line(m));
            transcript.push('\n');
        }
        // The compaction request itself fits the window too.
        let prompt = json!({"role": "system", "content": context::COMPACTION_PROMPT});
        let budget = window
            .saturating_sub(reserve)
            .saturating_sub(context::estimate_tokens(&prompt))
            .saturating_sub(64);
        let transcript = context::fit_text(&transcript, budget);
        let messages = [
            prompt,
            json!({"role": "user", "content": format!("Transcript to compact:\n\n{transcript}")}),
        ];
        let started = std::time::Instant::now();
        let reply = provider
            .complete(ModelRequest {
                messages: &messages,
                tools: &[],
                script: None,
                step: 0,
                input: "",
                model: core.model.model_name.as_deref(),
                options: Some(&core.model.options),
            })
            .await;
        if let Ok(r) = &reply {
            // The summary is the turn's spending too.
            self.meter_model_call(ctx, provider, core, r.usage, started);
        }
        match reply {
            Ok(r) => {
                let text = r.content.unwrap_or_default();
                let text = text.trim();
                if text.is_empty() {
                    return None;
                }
                let overhead = context::estimate_tokens(&context::summary_message(""));
                Some(context::fit_text(
                    text,
                    context::summary_limit(room).saturating_sub(overhead),
                ))
            }
            Err(e) => {
                tracing::warn!(error = %e, "context compaction failed; older turns are left out instead");
                None
            }
        }
    }

    /// The worktree of evolve run `run` of `core`, the workspace of its
    /// evolver child; a discarded run ends the child's turn.
    async fn run_workspace(
        &self,
        tenant: &TenantId,
        core: &str,
        run: &str,
    ) -> std::result::Result<std::path::PathBuf, TurnEnd> {
        let gone = |e: String| TurnEnd::Failed {
            reason: "workspace",
            error: format!("evolve run {run}: {e}"),
        };
        let dir = self
            .inner
            .cores
            .run_worktree(tenant, core, run)
            .await
            .map_err(|e| gone(e.to_string()))?;
        dir.canonicalize().map_err(|e| gone(e.to_string()))
    }

    /// The session's workspace folder: a private folder of its owner.
    /// The caller's session's workspace folder (canonical, created if missing).
    pub async fn session_workspace(
        &self,
        scope: &PrincipalScope,
        session_id: SessionId,
    ) -> Result<std::path::PathBuf> {
        let session = self.owned_session(scope, session_id).await?;
        if let Some(dir) = self
            .inner
            .workspaces
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&session_id)
        {
            return Ok(dir.clone());
        }
        self.workspace_of(scope, &session)
            .map_err(|e| Error::Internal(anyhow::anyhow!("workspace: {e}")))
    }

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

    /// Where a session sits in a delegation chain (immutable once written,
    /// so cached; a session is never given a lineage after its first turn).
    async fn delegation_of(&self, sid: SessionId) -> Result<Option<Delegation>, sqlx::Error> {
        if let Some(d) = self
            .inner
            .lineages
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&sid)
        {
            return Ok(d.clone());
        }
        let d = self.inner.store.lineage(sid).await?;
        let mut cache = self
            .inner
            .lineages
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if cache.len() >= 65_536 {
            cache.clear();
        }
        cache.insert(sid, d.clone());
        Ok(d)
    }

    async fn load_core(
        &self,
        tenant: &TenantId,
        core: &str,
    ) -> std::result::Result<Arc<crate::core::repository::CoreView>, String> {
        let id = CoreId::parse(core).map_err(|e| e.to_string())?;
        self.inner.cores.load(tenant, &id).await
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
        if !here && !self.cancel_elsewhere(scope, session, turn).await {
            // Nobody ended it (its node is gone, or left it over): settle it in the database.
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

    /// Ask the instance running `turn` to cancel it and wait (bounded) for
    /// it to settle; `true` once it has.
    async fn cancel_elsewhere(
        &self,
        scope: &PrincipalScope,
        session: SessionId,
        turn: TurnId,
    ) -> bool {
        let signals = self.inner.tasks.signals();
        signals.send(Signal::CancelTurn(turn.to_string())).await;
        let deadline = Instant::now() + Duration::from_secs(10);
        // Short sleeps between reads: turn ends are not signalled here, and
        // this only runs for a cancel received by another instance.
        while Instant::now() < deadline {
            match self.get(scope, session, turn).await {
                Ok(row) if row.status != TurnStatus::Running => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        false
    }

    /// Cancel turns of this instance that a cancel received elsewhere
    /// names, until `stop`.
    pub fn follow_cancels(&self, stop: CancellationToken) {
        let this = self.clone();
        let mut rx = self.inner.tasks.signals().incoming();
        tokio::spawn(async move {
            loop {
                let signal = tokio::select! {
                    s = rx.recv() => s,
                    _ = stop.cancelled() => return,
                };
                match signal {
                    Ok(Signal::CancelTurn(id)) => {
                        let Ok(turn) = TurnId::parse(&id) else {
                            continue;
                        };
                        let this = this.clone();
                        tokio::spawn(async move {
                            this.inner
                                .running
                                .cancel(
                                    &turn,
                                    |reason| {
                                        let _ = reason.set("cancelled");
                                    },
                                    Duration::from_secs(10),
                                )
                                .await;
                        });
                    }
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                }
            }
        });
    }

    /// Fail turns this node left running when it stopped (reason `lost`).
    pub async fn recover_lost(&self) -> anyhow::Result<usize> {
        let node = self.inner.node_id.clone();
        self.fail_lost_of(&node, i64::MAX).await
    }

    /// Fail the turns `node_id` started before `started_before` and left
    /// running (reason `lost`): that instance stopped
    /// ([`crate::instances`]); their sessions take new turns again.
    pub async fn fail_lost_of(&self, node_id: &str, started_before: i64) -> anyhow::Result<usize> {
        let lost = self
            .inner
            .store
            .fail_lost_turns(node_id, started_before)
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

    /// Let running turns finish for up to `grace`, then cancel the rest
    /// (reason `shutdown`) and wait for them to settle. True when all
    /// finished on their own.
    pub async fn drain(&self, grace: Duration) -> bool {
        self.inner
            .running
            .drain(
                |reason| {
                    let _ = reason.set("shutdown");
                },
                grace,
                Duration::from_secs(10),
            )
            .await
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

/// Completion turns of background tasks run as ordinary turns of the
/// task's session, as its owner: the session's normal capabilities, no
/// extra approval.
impl CompletionSink for TurnService {
    fn start_completion(
        &self,
        scope: PrincipalScope,
        session_id: SessionId,
        input: String,
    ) -> BoxFuture<'static, std::result::Result<(), CompletionError>> {
        let this = self.clone();
        Box::pin(async move {
            match this.start(&scope, session_id, input, None).await {
                Ok(_) => Ok(()),
                Err(Error::Conflict(_)) => Err(CompletionError::Busy),
                Err(e) => Err(CompletionError::Gone(e.to_string())),
            }
        })
    }
}

/// A child session's catalog: its core's, only the listed tools, bounded by
/// every delegating core above it (grants intersected, policies at least as
/// strict; [`ResolvedCatalog::bounded_by`]).
fn child_catalog(
    own: &ResolvedCatalog,
    d: &Delegation,
    above: &[std::sync::Arc<crate::core::repository::CoreView>],
) -> ResolvedCatalog {
    let narrowed = own.narrowed(|e| d.tools.as_ref().is_none_or(|t| t.contains(&e.name)));
    above
        .iter()
        .fold(narrowed, |c, parent| c.bounded_by(&parent.resolved))
}

/// Child agents run as ordinary turns of their child session, as the
/// parent's principal.
impl ChildRunner for TurnService {
    fn child_core(
        &self,
        scope: PrincipalScope,
        core: String,
        above: Vec<String>,
    ) -> BoxFuture<'static, std::result::Result<ChildCore, String>> {
        let this = self.clone();
        Box::pin(async move {
            let tenant = scope.tenant();
            let id = CoreId::parse(&core).map_err(|e| format!("core_id: {e}"))?;
            if !this.inner.cores.exists(tenant, &id) {
                return Err(format!("unknown core {core:?} in this tenant"));
            }
            let view = this.load_core(tenant, &core).await?;
            let mut bounded = view.resolved.clone();
            for p in &above {
                bounded = bounded.bounded_by(&this.load_core(tenant, p).await?.resolved);
            }
            Ok(ChildCore {
                tools: bounded.entries().iter().map(|e| e.name.clone()).collect(),
                input_slots: view.input_slots.clone(),
                output_slots: view.output_slots.clone(),
            })
        })
    }

    fn fork_context(
        &self,
        _scope: PrincipalScope,
        session: SessionId,
    ) -> BoxFuture<'static, String> {
        let this = self.clone();
        Box::pin(async move {
            match this
                .inner
                .store
                .recent_messages(
                    &session.to_string(),
                    4 * crate::tasks::children::FORK_MESSAGES as u32,
                )
                .await
            {
                Ok(m) => crate::tasks::children::fork_transcript(&m),
                Err(e) => {
                    tracing::warn!(error = %e, "could not read the parent transcript for a fork");
                    String::new()
                }
            }
        })
    }

    fn create_child(
        &self,
        scope: PrincipalScope,
        core: String,
        lineage: Lineage,
    ) -> BoxFuture<'static, std::result::Result<SessionId, String>> {
        let this = self.clone();
        Box::pin(async move {
            let parent = this
                .owned_session(&scope, lineage.parent_session)
                .await
                .map_err(|e| e.to_string())?;
            let id = SessionId::new();
            // The lineage goes first: a child session never exists without
            // its limits (a lineage without a session is harmless).
            this.inner
                .store
                .insert_lineage(id, scope.tenant(), scope.principal(), &lineage)
                .await
                .map_err(|e| e.to_string())?;
            this.inner
                .store
                .insert_session_slots(
                    id,
                    scope.tenant(),
                    &crate::store::SessionSlots {
                        input: Some(lineage.input_slots.clone()),
                        output: Some(lineage.output_slots.clone()),
                        use_bootstrap: lineage.use_bootstrap,
                        bootstrap: None,
                    },
                )
                .await
                .map_err(|e| e.to_string())?;
            this.inner
                .store
                .create_session(&crate::store::NewSession {
                    id,
                    tenant: scope.tenant().clone(),
                    principal: scope.principal().clone(),
                    title: format!("child agent of {}", parent.id),
                    core,
                    workspace: parent.workspace.clone(),
                    provider: parent.provider.clone(),
                })
                .await
                .map_err(|e| e.to_string())?;
            Ok(id)
        })
    }

    fn run_child(
        &self,
        scope: PrincipalScope,
        session: SessionId,
        input: String,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, std::result::Result<ChildEnd, String>> {
        let this = self.clone();
        Box::pin(async move {
            let turn = this
                .start(&scope, session, input, None)
                .await
                .map_err(|e| e.to_string())?;
            tokio::select! {
                _ = this.inner.running.wait(&turn) => {}
                _ = cancel.cancelled() => {
                    this.inner.running.cancel(&turn, |r| { let _ = r.set("cancelled"); },
                        Duration::from_secs(10)).await;
                }
            }
            // The child's own background work ends with it.
            let tasks = &this.inner.tasks;
            if let Ok(rows) = tasks.list(&scope, Some(session)).await {
                for t in rows.iter().filter(|t| t.status.is_active()) {
                    let _ = tasks.cancel(&scope, &t.id).await;
                }
            }
            let row = this
                .get(&scope, session, turn)
                .await
                .map_err(|e| e.to_string())?;
            Ok(ChildEnd {
                status: row.status,
                output: row.output.unwrap_or_default(),
                error: row.error,
            })
        })
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

/// Stored messages grouped by turn, oldest first.
fn group_turns(stored: Vec<crate::store::StoredMessage>) -> Vec<context::StoredTurn> {
    let mut out: Vec<(String, i64, Vec<Value>)> = Vec::new();
    for m in stored {
        match out.last_mut() {
            Some((turn, last, msgs)) if *turn == m.turn_id => {
                *last = m.id;
                msgs.push(m.body);
            }
            _ => out.push((m.turn_id, m.id, vec![m.body])),
        }
    }
    out.into_iter()
        .map(|(_, last, msgs)| context::StoredTurn::new(last, msgs))
        .collect()
}

/// Provider keys of a tenant are its admins' to set.
fn admin_only(scope: &PrincipalScope) -> Result<()> {
    if scope.role() == crate::auth::Role::Admin {
        Ok(())
    } else {
        Err(Error::Forbidden(format!(
            "setting a provider key needs the admin role; yours is {}",
            scope.role().as_str()
        )))
    }
}

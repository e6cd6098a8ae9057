//! The one dispatcher. Every tool call, from a model or from
//! `POST …/tool-calls`, goes: resolve (through the turn's catalog) →
//! validate arguments against the tool's schema → capability preflight →
//! typed arguments → the tool's plan → every approval it names → (review →
//! its approvals) → execute → typed status → redaction into the views.
//! Nothing reaches an adapter any other way, and only this module asks for
//! approval; the contract the tools implement is [`crate::tools::contract`].

pub mod approvals;
pub mod clarify;
mod host;
pub use host::HostServices;
pub mod mcp;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::catalog::{ResolvedCatalog, ResolvedEntry};
use crate::events::EventLog;
use crate::policy::approval_policy::{higher_risk, request_policy, ApprovalPolicy};
use crate::redact::redactor::{SecretRedactor, View};
use crate::tools::contract::{parse_args, Approval, Gate, Plan, Tool, ToolEnv};
use crate::tools::host::Host;
use crate::tools::registry::{self, Driver};
use crate::wire::events::{self, EventPayload};
use approvals::preview::argument_preview;
use approvals::{ApprovalRequest, ApprovalScope, Approvals, Verdict};

pub use crate::tools::context::CallContext;
pub use crate::tools::contract::{ToolOutcome, ToolStatus};
use crate::walls::Walls;

/// Argument previews in approval requests stay this short.
const PREVIEW_CHARS: usize = 2_000;

/// The call pipeline; it holds only what the pipeline needs. The services
/// a tool may call are the [`HostServices`] it hands on.
#[derive(Clone)]
pub struct Dispatcher {
    /// Every approval a plan names is asked here.
    approvals: Approvals,
    /// `tool.call` / `tool.result` (and the MCP cards) are emitted here.
    events: EventLog,
    home: PathBuf,
    walls: Arc<Walls>,
    /// The services tools call (tasks, output, history, clarify, cores, runners).
    host: Arc<dyn Host>,
    /// Live MCP connections (asked for and used only through here).
    mcp: crate::mcp::runtime::McpRuntime,
    /// Turns' catalogs extended with their MCP tools, per (tenant,
    /// principal, core).
    mcp_catalogs: Arc<crate::catalog::mcp_cache::CatalogCache>,
    /// Each call's use (tool, status, process time, fetched bytes).
    meter: crate::usage::Meter,
}

/// The registry of built-ins drives its tools through the pipeline.
impl Driver for Dispatcher {
    fn drive<T: Tool>(&self, env: &ToolEnv<'_>) -> impl Future<Output = ToolOutcome> + Send {
        self.run_tool::<T>(env)
    }
}

/// What the turn loop gets back: the model view of the result.
pub struct CallRecord {
    pub status: ToolStatus,
    pub model_content: String,
}

impl Dispatcher {
    pub fn new(
        approvals: Approvals,
        events: EventLog,
        home: &Path,
        walls: Arc<Walls>,
        host: Arc<dyn Host>,
        meter: crate::usage::Meter,
    ) -> Arc<Self> {
        Arc::new(Self {
            approvals,
            events,
            home: home.to_path_buf(),
            walls,
            host,
            meter,
            mcp: crate::mcp::runtime::McpRuntime::new(),
            mcp_catalogs: Default::default(),
        })
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
            // An authored tool's gate is granted for its path (core defaults
            // or path-scoped grants), never by its own `capabilities` list.
            let slot = entry.authored.as_ref().map(|a| a.slot_path.as_str());
            if !catalog.grants().allows(cap, slot, &[], false) {
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
            walls: &self.walls,
            home: &self.home,
            host: &*self.host,
        };
        if let Some(target) = &entry.mcp {
            return self.call_mcp(&env, target).await;
        }
        // An authored tool is its own entry, whatever its name; a
        // built-in is found in the one registry.
        if entry.authored.is_some() {
            return self
                .run_tool::<crate::tools::authored::AuthoredCall>(&env)
                .await;
        }
        match registry::run(self, &env).await {
            Some(outcome) => outcome,
            None => ToolOutcome::error(
                ToolStatus::NotFound,
                format!("tool not found or not allowed: {name}"),
            ),
        }
    }

    /// One call of tool `T`: typed arguments, plan, its gate, review, its
    /// gate, execute. The only place a tool's effect is reached.
    async fn run_tool<T: Tool>(&self, env: &ToolEnv<'_>) -> ToolOutcome {
        if env.ctx.cancel.is_cancelled() {
            return ToolOutcome::error(ToolStatus::Cancelled, "the turn was cancelled");
        }
        let args = match parse_args::<T::Args>(&env.entry.name, env.args) {
            Ok(a) => a,
            Err(invalid) => return invalid,
        };
        let prepared = match T::plan(env, args) {
            Plan::Done(outcome) => return outcome,
            Plan::Run { gate, prepared } => {
                if let Some(refused) = self.pass(env, gate).await {
                    return refused;
                }
                prepared
            }
        };
        let prepared = match T::review(env, prepared).await {
            Plan::Done(outcome) => return outcome,
            Plan::Run { gate, prepared } => {
                if let Some(refused) = self.pass(env, gate).await {
                    return refused;
                }
                prepared
            }
        };
        if env.ctx.cancel.is_cancelled() {
            return ToolOutcome::error(ToolStatus::Cancelled, "the turn was cancelled");
        }
        T::execute(env, prepared).await
    }

    /// Pass a gate: `None` means go ahead; `Some` is the refusal to return.
    async fn pass(&self, env: &ToolEnv<'_>, gate: Gate) -> Option<ToolOutcome> {
        let entry = env.entry;
        match gate {
            Gate::PerCall if entry.policy == ApprovalPolicy::Auto => None,
            Gate::PerCall => {
                let approval = Approval {
                    baseline: ApprovalPolicy::Auto,
                    risk: entry.risk,
                    action: "call".into(),
                    target: String::new(),
                    reason: format!("call {}", entry.name),
                    preview: argument_preview(env.args, PREVIEW_CHARS),
                    session_cacheable: true,
                };
                self.ask(env, approval).await
            }
            Gate::UnlessDenied if entry.policy == ApprovalPolicy::Deny => {
                Some(policy_denies(entry))
            }
            Gate::UnlessDenied => None,
            Gate::Ask(approvals) => {
                for approval in approvals {
                    if let Some(refused) = self.ask(env, approval).await {
                        return Some(refused);
                    }
                }
                None
            }
        }
    }

    /// Resolve one approval. The request's policy is the stricter of the
    /// tool's baseline and the entry's effective policy; its risk never
    /// drops below the entry's.
    async fn ask(&self, env: &ToolEnv<'_>, approval: Approval) -> Option<ToolOutcome> {
        let entry = env.entry;
        let name = entry.name.as_str();
        let policy = request_policy(approval.baseline, entry.policy);
        let risk = higher_risk(approval.risk, entry.risk);
        match policy {
            ApprovalPolicy::Auto => return None,
            ApprovalPolicy::Deny => return Some(policy_denies(entry)),
            ApprovalPolicy::Prompt => {}
        }
        let cap = entry.capability.as_deref().unwrap_or("none");
        let req = ApprovalRequest {
            tool: name.to_owned(),
            risk,
            rule: format!("{name}:{cap}:{}:{}", approval.action, approval.target),
            reason: if approval.reason.is_empty() {
                format!("{name} {}", approval.action)
            } else {
                approval.reason
            },
            preview: approval.preview,
            session_cacheable: approval.session_cacheable,
        };
        let ctx = env.ctx;
        let scope = ApprovalScope {
            scope: &ctx.scope,
            session_id: ctx.session_id,
            turn_id: ctx.turn_id,
            core_fingerprint: &ctx.core_fingerprint,
        };
        match self.approvals.request(&scope, req, &ctx.cancel).await {
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
                ctx.session_id,
                Some(ctx.turn_id),
                EventPayload::ToolCall(events::ToolCall {
                    call_id: call_id.to_owned(),
                    tool: name.to_owned(),
                    arguments: args_view,
                }),
            )
            .await?;
        let started = std::time::Instant::now();
        let (outcome, tally) =
            crate::usage::Tally::scope(self.dispatch(ctx, catalog, call_id, name, args)).await;
        self.meter.tool(crate::store::NewToolUsage {
            tenant_id: ctx.scope.tenant().to_string(),
            principal_id: ctx.scope.principal().to_string(),
            session_id: ctx.session_id.to_string(),
            core_id: ctx.core.id.to_string(),
            channel: ctx.channel.clone(),
            // A name the catalog does not know is the model's text: keep
            // the label set bounded.
            tool: if outcome.status == ToolStatus::NotFound {
                "(unknown)".to_owned()
            } else {
                name.to_owned()
            },
            status: outcome.status.as_str().to_owned(),
            calls: 1,
            cpu_ms: tally.cpu_ms(),
            outbound_bytes: tally.outbound_bytes(),
            latency_ms: started.elapsed().as_millis() as u64,
            at: crate::time::now_ms(),
        });
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
                ctx.session_id,
                Some(ctx.turn_id),
                EventPayload::ToolResult(events::ToolResult {
                    call_id: call_id.to_owned(),
                    tool: name.to_owned(),
                    status,
                    content: event_view.get("content").cloned().unwrap_or(Value::Null),
                    data: event_view.get("data").cloned().unwrap_or(Value::Null),
                }),
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

/// The refusal of an entry whose effective policy is `deny`.
fn policy_denies(entry: &ResolvedEntry) -> ToolOutcome {
    ToolOutcome::error(
        ToolStatus::Denied,
        format!("approval policy denies {}", entry.name),
    )
}

//! The slot pipeline around a turn: bootstrap once per session (its
//! snapshot kept in `session_slots` and carried by every later turn),
//! input slots before the model call (they build the user message and add
//! system context), output slots after it (they deliver the final output).
//! A failed slot emits `slot.failed`; a `hard` one fails the turn with
//! `slot_failed`. The phase plans come from [`crate::core::pipeline`].

use futures_util::FutureExt as _;
use serde_json::{json, Value};

use super::{TurnContext, TurnEnd, TurnService};
use crate::authored::HostAsk;
use crate::catalog::ResolvedCatalog;
use crate::core::loader::Phase;
use crate::core::pipeline::{self as plan, Group, Selection};
use crate::core::repository::CoreView;
use crate::dispatch::CallContext;
use crate::home::HomeLayout;
use crate::redact::redactor::{SecretRedactor, View};
use crate::slots::run::{self, Effects, SlotEnv};
use crate::slots::state::{self as slot_state, StateError};
use crate::wire::events::{self, EventPayload};
use futures_util::future::ready;

/// A refused state request, as the runner raises it.
fn refusal(e: StateError) -> (&'static str, String) {
    match e {
        StateError::Invalid(m) => ("invalid", m),
        StateError::Unavailable(m) => ("unavailable", m),
    }
}

/// A request the slot holds no grant for.
fn not_granted(cap: &str, slot: &crate::core::pipeline::SlotSpec) -> (&'static str, String) {
    (
        "capability",
        format!(
            "capability {cap:?} is not granted to slot {}",
            slot.slot_path
        ),
    )
}

/// Messages of the session a slot's `ctx.history` offers.
const HISTORY_FOR_SLOTS: u32 = 50;

/// The planned phases of one turn.
pub(super) struct TurnSlots {
    pub input: Vec<Group>,
    pub output: Vec<Group>,
    /// The session's bootstrap snapshot (empty when there is none).
    pub bootstrap: String,
}

/// What input slots made of the turn's input.
pub(super) struct Prompt {
    /// System messages for this turn, in order.
    pub system: Vec<String>,
    /// The user message the model sees.
    pub user: String,
    /// The user message history keeps (persisted parts only).
    pub stored_user: String,
}

fn needs_runner(groups: &[Group]) -> bool {
    groups
        .iter()
        .flat_map(|g| &g.slots)
        .any(|s| s.native.is_none())
}

impl TurnService {
    /// Plan this turn's phases and make sure the session's bootstrap ran.
    pub(super) async fn prepare_slots(
        &self,
        ctx: &TurnContext,
        call_ctx: &CallContext,
        catalog: &ResolvedCatalog,
        core: &CoreView,
    ) -> Result<TurnSlots, TurnEnd> {
        let inner = &self.inner;
        let sid = ctx.session.id;
        let stored = inner
            .store
            .session_slots(sid)
            .await
            .map_err(|e| TurnEnd::Failed {
                reason: "internal",
                error: format!("database: {e}"),
            })?;
        let plan_of = |phase: Phase, ids: &Option<Vec<String>>| {
            plan::plan(&core.pipeline, phase, &Selection::from_stored(ids.clone())).map_err(|e| {
                TurnEnd::Failed {
                    reason: "slot_failed",
                    error: e.to_string(),
                }
            })
        };
        let input = plan_of(Phase::Input, &stored.input)?;
        let output = plan_of(Phase::Output, &stored.output)?;
        let bootstrap = match stored.bootstrap {
            Some(text) => text,
            None => {
                let groups = plan::plan_bootstrap(&core.pipeline, stored.use_bootstrap);
                let text = if groups.is_empty() {
                    String::new()
                } else {
                    let effects = self
                        .slot_phase(ctx, call_ctx, catalog, Phase::Bootstrap, &groups, json!({}))
                        .await?;
                    effects.bootstrap.join("\n\n")
                };
                inner
                    .store
                    .save_bootstrap(sid, ctx.scope.tenant(), &text)
                    .await
                    .map_err(|e| TurnEnd::Failed {
                        reason: "internal",
                        error: format!("database: {e}"),
                    })?;
                text
            }
        };
        Ok(TurnSlots {
            input,
            output,
            bootstrap,
        })
    }

    /// Run the input slots on the turn's raw input.
    pub(super) async fn input_slots(
        &self,
        ctx: &TurnContext,
        call_ctx: &CallContext,
        catalog: &ResolvedCatalog,
        groups: &[Group],
    ) -> Result<Prompt, TurnEnd> {
        if groups.is_empty() {
            return Ok(Prompt {
                system: Vec::new(),
                user: ctx.input.clone(),
                stored_user: ctx.shown_input.clone(),
            });
        }
        let history = self.slot_history(ctx, groups).await;
        let effects = self
            .slot_phase(
                ctx,
                call_ctx,
                catalog,
                Phase::Input,
                groups,
                json!({"input": {"raw_text": ctx.input}, "history": history}),
            )
            .await?;
        let mut system = Vec::new();
        let (mut user, mut kept) = (Vec::new(), Vec::new());
        // Activated skills come first among this turn's system context.
        if !effects.skills.is_empty() {
            system.extend(crate::tools::skills::activation_blocks(
                &call_ctx.skills,
                &call_ctx.core,
                &effects.skills,
            ));
        }
        for add in effects.context {
            if add.system {
                system.push(add.content);
            } else {
                if add.persist {
                    kept.push(add.content.clone());
                }
                user.push(add.content);
            }
        }
        // A turn always carries its input: with no user text from the
        // slots (no base_input, or it failed softly) the raw input stands.
        if user.is_empty() {
            return Ok(Prompt {
                system,
                user: ctx.input.clone(),
                stored_user: ctx.shown_input.clone(),
            });
        }
        let user = user.join("\n\n");
        let kept = kept.join("\n\n");
        let stored_user = if kept == ctx.input {
            ctx.shown_input.clone()
        } else {
            SecretRedactor::new().redact_str_for(&kept, View::Durable)
        };
        Ok(Prompt {
            system,
            user,
            stored_user,
        })
    }

    /// Run the output slots on the model's final text; returns the turn's
    /// output and the assistant messages history keeps besides the model's own.
    pub(super) async fn output_slots(
        &self,
        ctx: &TurnContext,
        call_ctx: &CallContext,
        catalog: &ResolvedCatalog,
        groups: &[Group],
        response: String,
    ) -> Result<(String, Vec<Value>), TurnEnd> {
        if groups.is_empty() {
            return Ok((response, Vec::new()));
        }
        let history = self.slot_history(ctx, groups).await;
        let effects = self
            .slot_phase(
                ctx,
                call_ctx,
                catalog,
                Phase::Output,
                groups,
                json!({"output": {"response_text": response, "metadata": {}}, "history": history}),
            )
            .await?;
        let mut shown = Vec::new();
        let mut extra = Vec::new();
        for d in effects.deliveries {
            if d.kind == "text" && d.visible {
                shown.push(d.text.clone());
            }
            // The model's own reply is already in history.
            if d.persist && d.kind == "text" && d.text != response {
                let text = d.history_text.unwrap_or(d.text);
                let text = SecretRedactor::new().redact_str_for(&text, View::Durable);
                extra.push(json!({"role": "assistant", "content": text}));
            }
        }
        Ok((shown.join("\n\n"), extra))
    }

    /// The session's recent messages for `ctx.history`, read only when a
    /// slot runs in the runner (the shipped base slots never look).
    async fn slot_history(&self, ctx: &TurnContext, groups: &[Group]) -> Value {
        if !needs_runner(groups) {
            return json!([]);
        }
        let messages = self
            .inner
            .store
            .recent_messages(&ctx.session.id.to_string(), HISTORY_FOR_SLOTS)
            .await
            .unwrap_or_default();
        Value::Array(
            messages
                .into_iter()
                .enumerate()
                .filter_map(|(i, m)| {
                    let role = m.get("role")?.as_str()?.to_owned();
                    let content = match m.get("content") {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Null) | None => String::new(),
                        Some(other) => other.to_string(),
                    };
                    Some(json!({"message_id": i.to_string(), "role": role,
                        "content": content,
                        "tool_call_id": m.get("tool_call_id"),
                        "tool_calls": m.get("tool_calls")}))
                })
                .collect(),
        )
    }

    /// Run one phase; soft failures become `slot.failed` events, a hard one
    /// also fails the turn.
    async fn slot_phase(
        &self,
        ctx: &TurnContext,
        call_ctx: &CallContext,
        catalog: &ResolvedCatalog,
        phase: Phase,
        groups: &[Group],
        context: Value,
    ) -> Result<Effects, TurnEnd> {
        let inner = &self.inner;
        let walls = &inner.walls;
        let layout = HomeLayout::new(&inner.home);
        let tenant = ctx.scope.tenant();
        let revision: String = crate::redact::redactor::fingerprint(&call_ctx.core_fingerprint)
            .trim_start_matches("sha256:")
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(32)
            .collect();
        let grants = catalog.grants();
        let allow = |slot: &crate::core::pipeline::SlotSpec, cap: &str| {
            grants.allows(cap, Some(&slot.slot_path), &slot.capabilities, true)
        };
        // `ctx.state` and `ctx.tools`: input and output slots only
        // (bootstrap runs before the session has turns), each request under
        // the slot's grants.
        let (core, session, turn) = (
            ctx.session.core.as_str(),
            ctx.session.id.to_string(),
            ctx.turn_id.to_string(),
        );
        let tool_calls = std::sync::atomic::AtomicU32::new(0);
        let outbound = inner.walls.outbound.clone();
        let answer = |slot: &crate::core::pipeline::SlotSpec, ask: HostAsk| match ask {
            // `urllib` in a slot (speech providers, say): through the URL policy.
            HostAsk::Http(ask) => {
                let outbound = outbound.clone();
                async move {
                    crate::authored::http::fetch(&outbound, ask, &Default::default()).await
                }
                .boxed()
            }
            HostAsk::State {
                scope,
                action,
                target,
                value,
            } => {
                let req = match slot_state::parse_request(&scope, &action, &target, value) {
                    Ok(r) => r,
                    Err(e) => return ready(Err(refusal(e))).boxed(),
                };
                let caps = slot_state::capabilities(&req);
                if !caps.iter().any(|c| allow(slot, c)) {
                    let generic = caps.last().map(String::as_str).unwrap_or_default();
                    return ready(Err(not_granted(generic, slot))).boxed();
                }
                let (tenant, document) = (tenant.as_str(), req.document_key(&session));
                let (slot_path, turn) = (slot.slot_path.clone(), turn.as_str());
                async move {
                    let store = &inner.store;
                    let answer = if req.action.writes() {
                        store
                            .write_module_state(
                                tenant,
                                core,
                                &document,
                                &req,
                                &slot_path,
                                Some(turn),
                            )
                            .await
                    } else {
                        store.read_module_state(tenant, core, &document, &req).await
                    };
                    answer.map_err(refusal)
                }
                .boxed()
            }
            HostAsk::Tool { name, arguments } => {
                let cap = format!("tool.call:{name}");
                if !allow(slot, &cap) {
                    return ready(Err(not_granted(&cap, slot))).boxed();
                }
                let arguments = match arguments {
                    Value::Null => json!({}),
                    a @ Value::Object(_) => a,
                    _ => {
                        return ready(Err((
                            "invalid",
                            "tool arguments must be a mapping".to_owned(),
                        )))
                        .boxed()
                    }
                };
                // The call shows as a tool card like the model's; its id
                // names the slot that made it.
                let n = tool_calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                let call_id = format!("slot-{}-{}-{n}", slot.id, ctx.turn_id);
                async move {
                    let rec = inner
                        .dispatcher
                        .run_call(call_ctx, catalog, &call_id, &name, &arguments)
                        .await
                        .map_err(|e| {
                            (
                                "unavailable",
                                format!("the tool call was not recorded: {e}"),
                            )
                        })?;
                    Ok(json!({"call_id": call_id, "status": rec.status,
                        "content": rec.model_content,
                        "is_error": rec.status != crate::tools::contract::ToolStatus::Succeeded}))
                }
                .boxed()
            }
        };
        let host: Option<&run::HostHandler<'_>> = match phase {
            Phase::Bootstrap => None,
            _ => Some(&answer),
        };
        let env = SlotEnv {
            runners: &inner.runners,
            sandbox: &walls.sandbox,
            tenant: tenant.as_str(),
            revision: &revision,
            runtime_dir: layout.authored_runtime(tenant, &revision),
            core_root: layout.core_runtime_root(tenant, &call_ctx.core.id),
            workspace: &call_ctx.workspace,
            home: layout.terminal_home(tenant, ctx.scope.principal()),
            tmp: layout.terminal_tmp(tenant, ctx.scope.principal()),
            network: walls.terminal_network && !catalog.terminal_network_off(),
            timeout: inner.runners.timeout(),
            allow: &allow,
            host,
            turn: json!({"session_id": ctx.session.id, "turn_id": ctx.turn_id,
                "core_id": ctx.session.core, "core_revision": call_ctx.core_fingerprint,
                "user_input": ctx.input}),
            cancel: &call_ctx.cancel,
        };
        let ran = run::run_phase(&env, groups, &context).await;
        if call_ctx.cancel.is_cancelled() {
            return Err(TurnEnd::Cancelled);
        }
        for f in &ran.failures {
            let error = SecretRedactor::new().redact_str_for(&f.error, View::Durable);
            inner
                .events
                .append(
                    ctx.session.id,
                    Some(ctx.turn_id),
                    EventPayload::SlotFailed(events::SlotFailed {
                        phase: phase.as_str().to_owned(),
                        slot_id: f.slot.id.clone(),
                        failure_policy: run::failure_str(f.slot.failure_policy).to_owned(),
                        error,
                    }),
                )
                .await
                .map_err(|e| TurnEnd::Failed {
                    reason: "internal",
                    error: format!("event log: {e}"),
                })?;
        }
        if let Some(f) = ran.hard_failure() {
            return Err(TurnEnd::Failed {
                reason: "slot_failed",
                error: SecretRedactor::new().redact_str_for(
                    &format!("{phase} slot {} failed: {}", f.slot.id, f.error),
                    View::Durable,
                ),
            });
        }
        Ok(ran.effects)
    }
}

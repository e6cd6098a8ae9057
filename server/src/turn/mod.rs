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
use crate::catalog::ResolvedCatalog;
use crate::error::{Error, Result};
use crate::events::EventLog;
use crate::ids::{SessionId, TurnId};
use crate::metrics::Metrics;
use crate::store::{SessionRow, StartTurn, Store, TurnFinish, TurnRow, TurnStatus};
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

struct Running {
    token: CancellationToken,
    /// Why it was cancelled: "cancelled" (a client) or "shutdown".
    reason: Arc<OnceLock<&'static str>>,
    done: Arc<tokio::sync::Notify>,
}

struct Inner {
    store: Store,
    events: EventLog,
    metrics: Arc<Metrics>,
    providers: Providers,
    max_steps: u32,
    node_id: String,
    running: Mutex<HashMap<TurnId, Running>>,
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
    session: SessionRow,
    turn_id: TurnId,
    input: String,
    script: Option<Vec<ScriptStep>>,
}

impl TurnService {
    pub fn new(
        store: Store,
        events: EventLog,
        metrics: Arc<Metrics>,
        providers: Providers,
        max_steps: u32,
        node_id: String,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                store,
                events,
                metrics,
                providers,
                max_steps,
                node_id,
                running: Mutex::new(HashMap::new()),
            }),
        }
    }

    pub fn default_provider(&self) -> &'static str {
        self.inner.providers.default
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<TurnId, Running>> {
        self.inner.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Start a turn; 409 if another turn of the session runs.
    pub async fn start(
        &self,
        scope: &PrincipalScope,
        session_id: SessionId,
        input: String,
        script: Option<Value>,
    ) -> Result<TurnId> {
        let inner = &self.inner;
        let session = inner
            .store
            .get_session_cached(scope.tenant(), scope.principal(), session_id)
            .await?
            .ok_or(Error::NotFound)?;
        let script = match script {
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
        let turn_id = TurnId::new();
        match inner
            .store
            .start_turn(
                turn_id,
                session_id,
                scope.tenant(),
                scope.principal(),
                &input,
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
        let running = Running {
            token: CancellationToken::new(),
            reason: Arc::new(OnceLock::new()),
            done: Arc::new(tokio::sync::Notify::new()),
        };
        let token = running.token.clone();
        let reason = running.reason.clone();
        self.running().insert(turn_id, running);
        inner.metrics.turn_started();
        let sid = session.id.clone();
        let tid = turn_id.to_string();
        if let Err(e) = inner
            .events
            .append(&sid, Some(&tid), "turn.started", json!({"input": input}))
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
            self.running().remove(&turn_id);
            return Err(e);
        }
        let ctx = TurnContext {
            session,
            turn_id,
            input,
            script,
        };
        let this = self.clone();
        tokio::spawn(async move { this.run(ctx, token, reason).await });
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
        let end = tokio::select! {
            r = self.drive(&ctx, &mut new_messages, &mut steps) => r,
            _ = token.cancelled() => Err(TurnEnd::Cancelled),
        };
        let inner = &self.inner;
        let sid = ctx.session.id.as_str();
        let (status, output, why, error) = match end {
            Ok(out) => (TurnStatus::Completed, Some(out), None, None),
            Err(TurnEnd::Failed { reason, error }) => {
                (TurnStatus::Failed, None, Some(reason), Some(error))
            }
            Err(TurnEnd::Cancelled) => (
                TurnStatus::Cancelled,
                None,
                Some(reason.get().copied().unwrap_or("cancelled")),
                None,
            ),
        };
        let (kind, data) = match status {
            TurnStatus::Completed => ("turn.completed", json!({"output": output, "steps": steps})),
            TurnStatus::Failed => ("turn.failed", json!({"reason": why, "error": error})),
            _ => ("turn.cancelled", json!({"reason": why})),
        };
        let finish = TurnFinish {
            turn_id: ctx.turn_id.to_string(),
            status,
            output,
            reason: why.map(str::to_owned),
            error,
            steps,
        };
        // State, messages and the terminal event commit together; the event is
        // published only if this transition won (a cancel elsewhere may have).
        match inner
            .events
            .append_final(sid, kind, data, finish.clone(), new_messages)
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
        if let Some(r) = self.running().remove(&ctx.turn_id) {
            r.done.notify_waiters();
        }
    }

    async fn drive(
        &self,
        ctx: &TurnContext,
        new_messages: &mut Vec<Value>,
        steps: &mut u32,
    ) -> Result<String, TurnEnd> {
        let inner = &self.inner;
        let sid = ctx.session.id.as_str();
        let tid = ctx.turn_id.to_string();
        let db = |e: sqlx::Error| TurnEnd::Failed {
            reason: "internal",
            error: format!("database: {e}"),
        };
        let ev = |e: Error| TurnEnd::Failed {
            reason: "internal",
            error: format!("event log: {e}"),
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
            inner
                .store
                .recent_messages(sid, HISTORY_MESSAGES)
                .await
                .map_err(db)?
        };
        let user = json!({"role": "user", "content": ctx.input});
        history.push(user.clone());
        new_messages.push(user);
        let catalog = ResolvedCatalog::build();
        let tools = catalog.definitions();
        for step in 0..inner.max_steps as usize {
            *steps = step as u32 + 1;
            let reply = provider
                .complete(ModelRequest {
                    messages: &history,
                    tools: &tools,
                    script: ctx.script.as_deref(),
                    step,
                    input: &ctx.input,
                })
                .await
                .map_err(|e| TurnEnd::Failed {
                    reason: "provider",
                    error: e.to_string(),
                })?;
            let msg = reply.to_message();
            history.push(msg.clone());
            new_messages.push(msg);
            if let Some(text) = &reply.content {
                if !text.is_empty() {
                    inner
                        .events
                        .append(
                            sid,
                            Some(&tid),
                            "message",
                            json!({"role": "assistant", "content": text}),
                        )
                        .await
                        .map_err(ev)?;
                }
            }
            if reply.tool_calls.is_empty() {
                return Ok(reply.content.unwrap_or_default());
            }
            for call in &reply.tool_calls {
                inner
                    .events
                    .append(
                        sid,
                        Some(&tid),
                        "tool.call",
                        json!({"call_id": call.id, "tool": call.name, "arguments": call.arguments}),
                    )
                    .await
                    .map_err(ev)?;
                let outcome =
                    crate::dispatch::dispatch(&catalog, &call.name, &call.arguments).await;
                inner
                    .events
                    .append(
                        sid,
                        Some(&tid),
                        "tool.result",
                        json!({"call_id": call.id, "tool": call.name, "status": outcome.status.as_str(),
                            "content": outcome.content}),
                    )
                    .await
                    .map_err(ev)?;
                let m = json!({"role": "tool", "tool_call_id": call.id, "content": outcome.content.to_string()});
                history.push(m.clone());
                new_messages.push(m);
            }
        }
        Err(TurnEnd::Failed {
            reason: "max_model_steps",
            error: format!("the model made {} calls without finishing", inner.max_steps),
        })
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
        let waiter = {
            let map = self.running();
            map.get(&turn).map(|r| {
                let _ = r.reason.set("cancelled");
                let done = r.done.clone();
                r.token.cancel();
                done
            })
        };
        match waiter {
            Some(done) => {
                let notified = done.notified();
                if self.running().contains_key(&turn) {
                    let _ = tokio::time::timeout(Duration::from_secs(10), notified).await;
                }
            }
            None => {
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
                            &row.session_id,
                            Some(&row.id),
                            "turn.cancelled",
                            json!({"reason": "cancelled"}),
                        )
                        .await?;
                }
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
                    &t.session_id,
                    Some(&t.turn_id),
                    "turn.failed",
                    json!({"reason": "lost", "error": "the server stopped while the turn was running"}),
                )
                .await?;
        }
        Ok(lost.len())
    }

    /// Cancel every running turn (reason `shutdown`) and wait for them to settle.
    pub async fn shutdown(&self, grace: Duration) {
        {
            let map = self.running();
            for r in map.values() {
                let _ = r.reason.set("shutdown");
                r.token.cancel();
            }
        }
        let deadline = Instant::now() + grace;
        while !self.running().is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn running_count(&self) -> usize {
        self.running().len()
    }
}

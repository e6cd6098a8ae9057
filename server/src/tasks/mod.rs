//! Durable background tasks: a queue of task rows, a bounded worker pool
//! per instance, leases, cancellation from any instance, `yield_until`
//! waits and completion turns.
//!
//! - A start records the task `queued` (with a lease its instance renews)
//!   and keeps the job in memory; the pool ([`Tasks::start_pool`]) claims
//!   the oldest queued task whose tenant and principal are under their
//!   running caps (`--max-background-tasks-tenant`/`-principal`), so one
//!   tenant's backlog never holds another tenant's task beyond the caps.
//!   A tenant may have at most `--max-queued-tasks-tenant` waiting per
//!   instance; past that a start is refused with [`StartError::Limit`].
//!   Jobs are closures of the instance that accepted them: a task is
//!   claimed by that instance's pool (the queue row pins its node).
//! - The owning instance renews the leases of its tasks every third of
//!   `--task-lease`; any instance that finds an expired lease marks the task
//!   `lost` and ends its recorded process group (same host and boot).
//! - A cancel received anywhere flags the row and signals the owner
//!   ([`signals`]); the owner cancels the job's token, which ends the
//!   process tree. A cancel by the owner consumes the completion.
//! - [`Tasks::wait`] (`yield_until`) parks on the task's end ([`parked`])
//!   and is woken by the end signal (local, or a peer's notification),
//!   never polls; returning a terminal or blocked status consumes the
//!   completion. The end is signalled as soon as the terminal state is
//!   durable, before the `task.updated` event is appended.
//! - A task that ends with its completion wanted and not consumed gets one
//!   completion turn in its session ([`CompletionSink`]), claimed with a
//!   conditional update so exactly one instance starts it; while the
//!   session is busy the delivery is retried on the next maintenance tick.
//!
//! Task logs take bytes from the tenant's storage quota
//! ([`crate::exec::StorageQuota`]). Nothing a job produces is stored or
//! shown unredacted: its summary, every log line
//! ([`crate::redact::lines::LineRedactor`], seeded with the secrets of the
//! call's arguments) and its result (the durable view of the same
//! [`SecretRedactor`] views foreground results get) pass the redactor first.

pub mod children;
pub mod parked;
pub mod schedules;
pub mod signals;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::auth::{PrincipalScope, Role};
use crate::error::{Error, Result};
use crate::events::EventLog;
use crate::exec::{OutputBudget, ProcessRecord, StorageQuota};
use crate::ids::{PrincipalId, SessionId, TenantId};
use crate::metrics::Metrics;
use crate::redact::lines::LineRedactor;
use crate::redact::redactor::{SecretRedactor, View, Views};
use crate::running::RunningWork;
use crate::store::{ClaimCaps, NewTask, Store, TaskRow};
use crate::time::now_ms;
use crate::wire::events::{self, EventPayload};

pub use crate::wire::{Completion, TaskStatus};
pub use signals::{Signal, Signals};

/// Characters of a task's logs kept in the database; the artifact has the rest.
pub const LOG_CAP_CHARS: usize = 1024 * 1024;
/// Characters per log row.
pub const LOG_CHUNK_CHARS: usize = 4096;
/// Characters of a task summary (model payload, completion text).
pub const SUMMARY_CHARS: usize = 1200;
/// How long a cancel waits for the work to end before answering.
const CANCEL_WAIT: Duration = Duration::from_secs(15);
/// Pending completions one maintenance tick delivers at most.
const COMPLETIONS_PER_TICK: u32 = 50;

/// How a task ended.
pub struct TaskOutcome {
    /// `Succeeded`, `Failed` or `Cancelled`.
    pub status: TaskStatus,
    pub result: Value,
}

/// The queue's limits.
#[derive(Debug, Clone, Copy)]
pub struct TaskSettings {
    /// Running tasks per principal (over all instances).
    pub per_principal: usize,
    /// Running tasks per tenant (over all instances).
    pub per_tenant: usize,
    /// Queued tasks per tenant on one instance.
    pub max_queued_per_tenant: usize,
    /// Tasks one instance runs at once.
    pub workers: usize,
    /// A lease's lifetime without renewal.
    pub lease: Duration,
    /// Schedules' limits.
    pub schedules: schedules::ScheduleSettings,
}

/// How a task is started, besides its job.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// Run a completion turn in the session when the task ends (unless
    /// `yield_until` or the owner's cancel consumed it first).
    pub notify_on_complete: bool,
    /// Operator-only metadata, never in the model payload.
    pub metadata: Option<Value>,
}

/// Why a task was not started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A queue limit is reached; nothing was recorded.
    #[error("{0}")]
    Limit(String),
    #[error(transparent)]
    Host(#[from] Error),
}

/// Why a completion turn did not start.
#[derive(Debug, thiserror::Error)]
pub enum CompletionError {
    /// Another turn of the session runs; try again later.
    #[error("the session is busy")]
    Busy,
    /// The session cannot take a turn (deleted, …); the completion is dropped.
    #[error("{0}")]
    Gone(String),
}

/// Starts completion turns (the turn service); set once at start-up.
pub trait CompletionSink: Send + Sync {
    fn start_completion(
        &self,
        scope: PrincipalScope,
        session_id: SessionId,
        input: String,
    ) -> BoxFuture<'static, std::result::Result<(), CompletionError>>;
}

/// The work of a task.
pub type Job = Box<dyn FnOnce(TaskHandle) -> BoxFuture<'static, TaskOutcome> + Send>;

/// A job recorded as queued, waiting for this instance's pool.
struct Pending {
    tenant: String,
    principal: String,
    session: SessionId,
    kind: String,
    summary: String,
    known: SecretRedactor,
    job: Job,
}

#[derive(Clone)]
pub struct Tasks {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    events: EventLog,
    node_id: String,
    settings: TaskSettings,
    quota: Arc<StorageQuota>,
    metrics: Arc<Metrics>,
    /// What jobs' processes used, recorded as they end.
    meter: crate::usage::Meter,
    running: RunningWork<String, ()>,
    queued: Mutex<HashMap<String, Pending>>,
    /// Wakes the pool: a task was queued or a slot freed.
    wake: Notify,
    signals: Signals,
    completions: OnceLock<Arc<dyn CompletionSink>>,
    children: OnceLock<Arc<dyn children::ChildRunner>>,
    schedules: schedules::Schedules,
    boot_id: Option<String>,
}

/// What a running job gets: its id, its cancellation, and its log.
#[derive(Clone)]
pub struct TaskHandle {
    pub id: String,
    pub cancel: CancellationToken,
    store: Store,
    log_budget: OutputBudget,
    /// Secrets known for this task: the call's, then whatever its log revealed
    /// (so the result is redacted with everything the output showed).
    known: Arc<Mutex<SecretRedactor>>,
    boot_id: Option<String>,
}

/// The refusal of one more queued task of `tenant`, if its queue is full.
fn queue_denial(queued_of_tenant: usize, max: usize, tenant: &str) -> Option<String> {
    (queued_of_tenant >= max).then(|| {
        format!(
            "background task limit reached: tenant {tenant} already has {queued_of_tenant} \
             tasks waiting (at most {max} queued per tenant, --max-queued-tasks-tenant); \
             wait for some to finish or cancel some"
        )
    })
}

/// The bounded, model-facing view of a task: no owner ids, scope,
/// metadata, result or result reference.
pub fn model_payload(row: &TaskRow) -> Value {
    json!({
        "task_id": row.id,
        "kind": row.kind,
        "status": row.status,
        "running": row.status == TaskStatus::Running,
        "started_at": row.started_at.map(crate::time::rfc3339),
        "completed_at": row.completed_at.map(crate::time::rfc3339),
        "summary": bounded(&row.summary, SUMMARY_CHARS),
    })
}

/// `text` cut to `max` characters (an ellipsis marks the cut).
fn bounded(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(3)).collect();
    out.push_str("...");
    out
}

/// The summary of an ended task: its description, then the end of what the
/// result says (both already redacted), within [`SUMMARY_CHARS`].
fn final_summary(summary: &str, result: &Value) -> String {
    let content = match result.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    if content.trim().is_empty() {
        return bounded(summary, SUMMARY_CHARS);
    }
    let head = bounded(summary, SUMMARY_CHARS / 3);
    let room = SUMMARY_CHARS.saturating_sub(head.chars().count() + 1);
    let chars: Vec<char> = content.trim_end().chars().collect();
    let tail: String = if chars.len() > room {
        let mut t = String::from("...");
        t.extend(&chars[chars.len() - room.saturating_sub(3)..]);
        t
    } else {
        chars.into_iter().collect()
    };
    format!("{head}\n{tail}")
}

/// The input of a completion turn.
fn completion_text(row: &TaskRow) -> String {
    format!(
        "[SYSTEM: Background task event]\ntask_id: {}\nkind: {}\nstatus: {}\nsummary:\n{}",
        row.id,
        row.kind,
        row.status,
        bounded(&row.summary, SUMMARY_CHARS)
    )
}

/// How a process group is stored on its task row.
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredProcess {
    spawn_id: String,
    pid: i32,
    pgid: i32,
    start_marker: u64,
    boot_id: Option<String>,
}

impl TaskHandle {
    /// A sink for output chunks, redacted line by line (operator view):
    /// rows of at most [`LOG_CHUNK_CHARS`], at most [`LOG_CAP_CHARS`] in all.
    /// Returns a sender and the writer's join handle; await the handle before
    /// the job returns so the result is redacted with what the log revealed.
    pub fn log_sink(
        &self,
    ) -> (
        tokio::sync::mpsc::Sender<(&'static str, String)>,
        tokio::task::JoinHandle<()>,
    ) {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<(&'static str, String)>(256);
        let (store, id, known) = (self.store.clone(), self.id.clone(), self.known.clone());
        let budget = self.log_budget.clone();
        let writer = tokio::spawn(async move {
            let seed = known.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let mut lines = LineRedactor::new(seed, View::Operator);
            let mut log = LogWriter {
                store: &store,
                id: &id,
                budget: &budget,
                written: 0,
                noted: false,
            };
            while let Some((stream, text)) = rx.recv().await {
                // Past the cap nothing more is kept: drain without redacting.
                if log.full() {
                    continue;
                }
                let text = lines.push(stream, &text);
                log.write(stream, &text).await;
            }
            for stream in lines.open_streams() {
                if log.full() {
                    break;
                }
                let text = lines.finish(stream);
                log.write(stream, &text).await;
            }
            *known.lock().unwrap_or_else(|p| p.into_inner()) = lines.into_known();
        });
        (tx, writer)
    }
}

/// Writes redacted log text as bounded rows.
struct LogWriter<'a> {
    store: &'a Store,
    id: &'a str,
    /// The task's share of the tenant's storage quota.
    budget: &'a OutputBudget,
    written: usize,
    noted: bool,
}

impl LogWriter<'_> {
    fn full(&self) -> bool {
        self.noted || self.written >= LOG_CAP_CHARS
    }

    async fn write(&mut self, stream: &'static str, text: &str) {
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(LOG_CHUNK_CHARS) {
            if self.written >= LOG_CAP_CHARS {
                if !self.noted {
                    self.noted = true;
                    let _ = self
                        .store
                        .append_task_log(
                            self.id,
                            "host",
                            "[log truncated; the full output is in the artifact]",
                        )
                        .await;
                }
                return;
            }
            let s: String = piece.iter().collect();
            self.written += piece.len();
            let (kept, limit) = self.budget.fit(&s);
            if !kept.is_empty() {
                if let Err(e) = self.store.append_task_log(self.id, stream, kept).await {
                    tracing::error!(error = %e, task = %self.id, "could not write a task log chunk");
                }
            }
            if let Some(limit) = limit {
                self.noted = true;
                let _ = self
                    .store
                    .append_task_log(self.id, "host", &format!("[log truncated: {limit}]"))
                    .await;
                return;
            }
        }
    }
}

impl TaskHandle {
    /// Record the process group this task runs, so an instance that takes
    /// the task over after this one died can end it.
    pub fn process_started(&self, r: &ProcessRecord) {
        let stored = StoredProcess {
            spawn_id: r.spawn_id.clone(),
            pid: r.pid,
            pgid: r.pgid,
            start_marker: r.start_marker,
            boot_id: self.boot_id.clone(),
        };
        let Ok(text) = serde_json::to_string(&stored) else {
            return;
        };
        let (store, id) = (self.store.clone(), self.id.clone());
        tokio::spawn(async move {
            if let Err(e) = store.set_task_process(&id, &text).await {
                tracing::warn!(error = %e, task = %id, "could not record the task's process");
            }
        });
    }
}

/// The stored form of a job's outcome: the durable view of its result, with
/// every secret known for the task. A redaction failure replaces the result
/// and fails the task.
fn redacted_outcome(known: &SecretRedactor, outcome: TaskOutcome) -> (TaskStatus, Value) {
    match known.try_views(&outcome.result) {
        Ok(views) => (outcome.status, views.get(View::Durable).clone()),
        Err(e) => {
            tracing::error!(error = %e, "task result redaction failed; result replaced");
            (
                TaskStatus::Failed,
                Views::redaction_failed().get(View::Durable).clone(),
            )
        }
    }
}

/// A discarded evolve run's evolver child is cancelled through the queue.
impl crate::core::changes::CancelTask for Tasks {
    fn cancel_task<'a>(
        &'a self,
        scope: &'a PrincipalScope,
        task_id: &'a str,
    ) -> BoxFuture<'a, std::result::Result<(), String>> {
        Box::pin(async move {
            self.cancel(scope, task_id)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
    }
}

fn lease_ms(lease: Duration) -> i64 {
    i64::try_from(lease.as_millis()).unwrap_or(i64::MAX / 4)
}

impl Tasks {
    pub fn new(
        store: Store,
        events: EventLog,
        node_id: String,
        settings: TaskSettings,
        quota: Arc<StorageQuota>,
        metrics: Arc<Metrics>,
        meter: crate::usage::Meter,
    ) -> Self {
        let signals = Signals::new(store.clone());
        let schedules = schedules::Schedules::new(store.clone(), settings.schedules);
        Self {
            inner: Arc::new(Inner {
                store,
                events,
                node_id,
                settings,
                quota,
                metrics,
                meter,
                running: RunningWork::default(),
                queued: Mutex::new(HashMap::new()),
                wake: Notify::new(),
                signals,
                completions: OnceLock::new(),
                children: OnceLock::new(),
                schedules,
                boot_id: crate::exec::boot_id(),
            }),
        }
    }

    /// The signal hub (the start-up wires the PostgreSQL listener and the
    /// turn service's cancels to it).
    pub fn signals(&self) -> &Signals {
        &self.inner.signals
    }

    /// Where completion turns start; set once at start-up.
    pub fn set_completions(&self, sink: Arc<dyn CompletionSink>) {
        self.inner.schedules.set_sink(sink.clone());
        let _ = self.inner.completions.set(sink);
    }

    /// Schedules and their scheduler (runs start like completion turns).
    pub fn schedules(&self) -> &schedules::Schedules {
        &self.inner.schedules
    }

    /// Where child agents run (the turn service); set once at start-up.
    pub fn set_children(&self, runner: Arc<dyn children::ChildRunner>) {
        let _ = self.inner.children.set(runner);
    }

    /// The child-agent runner, once set.
    pub fn children(&self) -> Option<Arc<dyn children::ChildRunner>> {
        self.inner.children.get().cloned()
    }

    fn queued(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pending>> {
        self.inner.queued.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Why one more task of this principal would be refused now, if it would.
    pub fn over_cap(&self, scope: &PrincipalScope) -> Option<String> {
        let tenant = scope.tenant().as_str();
        let n = self
            .queued()
            .values()
            .filter(|p| p.tenant == tenant)
            .count();
        queue_denial(n, self.inner.settings.max_queued_per_tenant, tenant)
    }

    async fn updated(
        &self,
        session_id: SessionId,
        id: &str,
        kind: &str,
        status: TaskStatus,
        summary: &str,
    ) {
        let payload = EventPayload::TaskUpdated(events::TaskUpdated {
            task_id: id.to_owned(),
            kind: Some(kind.to_owned()),
            status,
            summary: Some(summary.to_owned()),
        });
        if let Err(e) = self.inner.events.append(session_id, None, payload).await {
            tracing::error!(error = %e, task = %id, "could not record task.updated");
        }
    }

    /// Record a job as queued; returns its task id at once. `known` holds
    /// the secrets of the call that started it (e.g. its discovered
    /// arguments): they are redacted from the summary, the log and the result.
    #[allow(clippy::too_many_arguments)]
    pub async fn start<F, Fut>(
        &self,
        scope: &PrincipalScope,
        session_id: SessionId,
        kind: &str,
        summary: String,
        known: SecretRedactor,
        options: StartOptions,
        job: F,
    ) -> std::result::Result<String, StartError>
    where
        F: FnOnce(TaskHandle) -> Fut + Send + 'static,
        Fut: Future<Output = TaskOutcome> + Send + 'static,
    {
        let inner = &self.inner;
        let id = format!("task_{}", uuid::Uuid::now_v7().simple());
        let summary = known.redact_str_for(&summary, View::Event);
        let summary = bounded(&summary, SUMMARY_CHARS);
        let tenant = scope.tenant().as_str();
        // Check the queue cap and take the place under one lock.
        {
            let mut queued = self.queued();
            let n = queued.values().filter(|p| p.tenant == tenant).count();
            if let Some(denial) = queue_denial(n, inner.settings.max_queued_per_tenant, tenant) {
                return Err(StartError::Limit(denial));
            }
            let job: Job = Box::new(move |h| Box::pin(job(h)));
            queued.insert(
                id.clone(),
                Pending {
                    tenant: tenant.to_owned(),
                    principal: scope.principal().to_string(),
                    session: session_id,
                    kind: kind.to_owned(),
                    summary: summary.clone(),
                    known,
                    job,
                },
            );
        }
        let metadata = options.metadata.as_ref().map(Value::to_string);
        let inserted = inner
            .store
            .insert_task(&NewTask {
                id: &id,
                tenant: scope.tenant(),
                principal: scope.principal(),
                owner_role: scope.role().as_str(),
                session_id,
                node_id: &inner.node_id,
                kind,
                summary: &summary,
                completion: Completion::at_start(options.notify_on_complete),
                metadata: metadata.as_deref(),
                lease_until: now_ms() + lease_ms(inner.settings.lease),
            })
            .await;
        if let Err(e) = inserted {
            self.queued().remove(&id);
            return Err(Error::from(e).into());
        }
        self.updated(session_id, &id, kind, TaskStatus::Queued, &summary)
            .await;
        inner.wake.notify_one();
        Ok(id)
    }

    /// Run the worker pool, the lease/maintenance loop and the cancel
    /// listener until `stop`.
    /// Start the worker pool: it claims queued tasks until `intake` fires
    /// (the instance drains); leases, cancel requests and signals are kept
    /// until `stop`.
    pub fn start_pool(&self, intake: CancellationToken, stop: CancellationToken) {
        let this = self.clone();
        let until = intake;
        tokio::spawn(async move {
            loop {
                this.fill().await;
                tokio::select! {
                    _ = this.inner.wake.notified() => {}
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = until.cancelled() => return,
                }
            }
        });
        let this = self.clone();
        let until = stop.clone();
        tokio::spawn(async move {
            let period = (this.inner.settings.lease / 3).max(Duration::from_millis(200));
            let mut every = tokio::time::interval(period);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = every.tick() => this.maintain().await,
                    _ = until.cancelled() => return,
                }
            }
        });
        let this = self.clone();
        tokio::spawn(async move {
            let mut rx = this.inner.signals.incoming();
            loop {
                let signal = tokio::select! {
                    s = rx.recv() => s,
                    _ = stop.cancelled() => return,
                };
                match signal {
                    Ok(Signal::CancelTask(id)) => this.cancel_here(id),
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                }
            }
        });
    }

    /// Cancel a task if this instance holds it (queued or running).
    fn cancel_here(&self, id: String) {
        if self.queued().remove(&id).is_some() {
            // The canceller settled the row; the job never runs.
            return;
        }
        if self.inner.running.contains(&id) {
            let this = self.clone();
            tokio::spawn(async move {
                this.inner.running.cancel(&id, |_| {}, CANCEL_WAIT).await;
            });
        }
    }

    /// Claim queued tasks while workers are free.
    async fn fill(&self) {
        let inner = &self.inner;
        let caps = ClaimCaps {
            per_tenant: i64::try_from(inner.settings.per_tenant).unwrap_or(i64::MAX),
            per_principal: i64::try_from(inner.settings.per_principal).unwrap_or(i64::MAX),
        };
        while inner.running.len() < inner.settings.workers {
            let lease_until = now_ms() + lease_ms(inner.settings.lease);
            match inner
                .store
                .claim_task(&inner.node_id, lease_until, caps)
                .await
            {
                Ok(Some(claimed)) => {
                    let waited =
                        u64::try_from(claimed.started_at - claimed.created_at).unwrap_or(0);
                    inner.metrics.task_claimed(Duration::from_millis(waited));
                    self.launch(claimed.id).await;
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(error = %e, "task claim failed");
                    break;
                }
            }
        }
    }

    /// Run a claimed task's job.
    async fn launch(&self, id: String) {
        let inner = &self.inner;
        let Some(p) = self.queued().remove(&id) else {
            // Its job is not here (cancelled meanwhile, or the row outlived
            // the process that accepted it).
            if let Ok(true) = inner
                .store
                .finish_task(
                    &id,
                    &[TaskStatus::Running],
                    TaskStatus::Lost,
                    "{\"reason\":\"lost\"}",
                    None,
                )
                .await
            {
                self.inner.signals.send(Signal::Ended(id)).await;
            }
            return;
        };
        let token = inner.running.insert(id.clone(), ());
        self.updated(p.session, &id, &p.kind, TaskStatus::Running, &p.summary)
            .await;
        let known = Arc::new(Mutex::new(p.known));
        let handle = TaskHandle {
            id: id.clone(),
            cancel: token,
            store: inner.store.clone(),
            log_budget: inner.quota.budget(&p.tenant),
            known: known.clone(),
            boot_id: inner.boot_id.clone(),
        };
        let this = self.clone();
        let job = p.job;
        let (session, kind, summary) = (p.session, p.kind, p.summary);
        let (tenant, principal) = (p.tenant, p.principal);
        inner.running.spawn(id.clone(), async move {
            // A background command's process time is the task's, not its
            // (long returned) tool call's: metered here, as it ends.
            let started = std::time::Instant::now();
            let (outcome, tally) = crate::usage::Tally::scope(job(handle)).await;
            if tally.cpu_ms() > 0 || tally.outbound_bytes() > 0 {
                this.inner.meter.tool(crate::store::NewToolUsage {
                    tenant_id: tenant,
                    principal_id: principal,
                    session_id: session.to_string(),
                    core_id: String::new(),
                    channel: String::new(),
                    tool: kind.clone(),
                    status: "process".into(),
                    calls: 0,
                    cpu_ms: tally.cpu_ms(),
                    outbound_bytes: tally.outbound_bytes(),
                    latency_ms: started.elapsed().as_millis() as u64,
                    at: crate::time::now_ms(),
                });
            }
            let seen = known.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let (status, result) = redacted_outcome(&seen, outcome);
            let summary = final_summary(&summary, &result);
            // The terminal state is durable before anyone is told; waiters
            // are woken first (they re-read the row), the stream follows.
            let recorded = this
                .inner
                .store
                .finish_task(
                    &id,
                    &[TaskStatus::Running],
                    status,
                    &result.to_string(),
                    Some(&summary),
                )
                .await;
            this.inner.signals.send(Signal::Ended(id.clone())).await;
            match recorded {
                Ok(true) => this.updated(session, &id, &kind, status, &summary).await,
                Ok(false) => {}
                Err(e) => {
                    tracing::error!(error = %e, task = %id, "could not record the task's end")
                }
            }
            this.inner.wake.notify_one();
            this.deliver_completion(&id).await;
        });
    }

    /// One maintenance tick: renew this node's leases, act on cancel flags
    /// (missed notifications), take over expired leases, sample the queue
    /// depth and deliver owed completions.
    async fn maintain(&self) {
        let inner = &self.inner;
        let store = &inner.store;
        let lease_until = now_ms() + lease_ms(inner.settings.lease);
        if let Err(e) = store.renew_task_leases(&inner.node_id, lease_until).await {
            tracing::warn!(error = %e, "could not renew task leases");
        }
        match store.cancel_requested_tasks(&inner.node_id).await {
            Ok(ids) => {
                for id in ids {
                    self.cancel_here(id);
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not read task cancel requests"),
        }
        match store.take_over_expired_tasks().await {
            Ok(lost) if !lost.is_empty() => {
                inner.metrics.tasks_taken_over(lost.len() as u64);
                let mut groups = Vec::new();
                for t in &lost {
                    tracing::warn!(task = %t.id, node = %t.node_id, "task lease expired; marked lost");
                    self.updated(t.session_id, &t.id, &t.kind, TaskStatus::Lost, &t.summary)
                        .await;
                    inner.signals.send(Signal::Ended(t.id.clone())).await;
                    let stored = t
                        .process
                        .as_deref()
                        .and_then(|p| serde_json::from_str::<StoredProcess>(p).ok());
                    // Start markers only compare within one boot of one host.
                    if let Some(p) =
                        stored.filter(|p| p.boot_id.is_some() && p.boot_id == inner.boot_id)
                    {
                        groups.push(ProcessRecord {
                            spawn_id: p.spawn_id,
                            pid: p.pid,
                            pgid: p.pgid,
                            start_marker: p.start_marker,
                        });
                    }
                }
                if !groups.is_empty() {
                    let _ = tokio::task::spawn_blocking(move || {
                        crate::exec::reap_orphans(&groups, Duration::from_secs(2))
                    })
                    .await;
                }
                for t in &lost {
                    self.deliver_completion(&t.id).await;
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "could not take over expired task leases"),
        }
        match store.queued_task_count().await {
            Ok(n) => inner.metrics.tasks_queued(n),
            Err(e) => tracing::debug!(error = %e, "could not count queued tasks"),
        }
        match store.pending_completions(COMPLETIONS_PER_TICK).await {
            Ok(rows) => {
                for row in rows {
                    self.deliver_completion(&row.id).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not read pending completions"),
        }
    }

    /// Start the completion turn of a task if one is owed; exactly one
    /// instance wins the claim. A busy session puts it back for later.
    async fn deliver_completion(&self, id: &str) {
        let inner = &self.inner;
        let Some(sink) = inner.completions.get() else {
            return;
        };
        let row = match inner.store.task_by_id(id).await {
            Ok(Some(row)) if row.completion == Completion::Pending => row,
            Ok(_) => return,
            Err(e) => {
                tracing::warn!(error = %e, task = %id, "could not read a task for its completion");
                return;
            }
        };
        match inner
            .store
            .set_task_completion(id, &[Completion::Pending], Completion::Delivering)
            .await
        {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::warn!(error = %e, task = %id, "could not claim a completion");
                return;
            }
        }
        let scope = match (
            TenantId::parse(&row.tenant_id),
            PrincipalId::parse(&row.principal_id),
        ) {
            (Ok(t), Ok(p)) => {
                PrincipalScope::new(t, p, Role::parse(&row.owner_role).unwrap_or(Role::Member))
            }
            _ => {
                let _ = inner
                    .store
                    .set_task_completion(id, &[Completion::Delivering], Completion::Delivered)
                    .await;
                return;
            }
        };
        let next = match sink
            .start_completion(scope, row.session_id, completion_text(&row))
            .await
        {
            Ok(()) => Completion::Delivered,
            Err(CompletionError::Busy) => Completion::Pending,
            Err(CompletionError::Gone(why)) => {
                tracing::warn!(task = %id, reason = %why, "completion turn dropped");
                Completion::Delivered
            }
        };
        if let Err(e) = inner
            .store
            .set_task_completion(id, &[Completion::Delivering], next)
            .await
        {
            tracing::warn!(error = %e, task = %id, "could not settle a completion");
        }
    }

    /// A task of the caller; another principal's looks missing.
    pub async fn get(&self, scope: &PrincipalScope, id: &str) -> Result<TaskRow> {
        self.inner
            .store
            .get_task(scope.tenant(), scope.principal(), id, false)
            .await?
            .ok_or(Error::NotFound)
    }

    pub async fn list(
        &self,
        scope: &PrincipalScope,
        session_id: Option<SessionId>,
    ) -> Result<Vec<TaskRow>> {
        Ok(self
            .inner
            .store
            .list_tasks(scope.tenant(), scope.principal(), session_id, 200)
            .await?)
    }

    /// Cancel (idempotent) wherever the task runs; returns the task
    /// afterwards. The owner's cancel consumes the completion: whoever
    /// cancelled knows.
    pub async fn cancel(&self, scope: &PrincipalScope, id: &str) -> Result<TaskRow> {
        let inner = &self.inner;
        let row = self.get(scope, id).await?;
        if !row.status.is_active() {
            return Ok(row);
        }
        inner
            .store
            .set_task_completion(
                id,
                &[Completion::Wanted, Completion::Pending],
                Completion::Consumed,
            )
            .await?;
        let reason = "{\"reason\":\"cancelled\"}";
        if row.status == TaskStatus::Queued
            && inner
                .store
                .finish_task(
                    id,
                    &[TaskStatus::Queued],
                    TaskStatus::Cancelled,
                    reason,
                    None,
                )
                .await?
        {
            self.updated(
                row.session_id,
                id,
                &row.kind,
                TaskStatus::Cancelled,
                &row.summary,
            )
            .await;
            // Drops the job on the instance that holds it, wakes waiters.
            inner.signals.send(Signal::CancelTask(id.to_owned())).await;
            inner.signals.send(Signal::Ended(id.to_owned())).await;
            return self.get(scope, id).await;
        }
        // Running (or claimed just now): its owner ends the work.
        let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
        let mut ticket = inner.signals.parked().park(id);
        inner.store.request_task_cancel(id).await?;
        inner.signals.send(Signal::CancelTask(id.to_owned())).await;
        loop {
            if tokio::time::timeout_at(deadline, ticket.woken())
                .await
                .is_err()
            {
                return self.get(scope, id).await;
            }
            // Park again before reading: a wake-everyone is not the end.
            ticket = inner.signals.parked().park(id);
            let row = self.get(scope, id).await?;
            if !row.status.is_active() {
                return Ok(row);
            }
        }
    }

    /// Wait up to `timeout` for the task to reach a terminal or blocked
    /// status (`yield_until`): `(task, timed_out)`. Returning such a status
    /// consumes the pending completion. Wakes on the end signal.
    pub async fn wait(
        &self,
        scope: &PrincipalScope,
        id: &str,
        timeout: Duration,
    ) -> Result<(TaskRow, bool)> {
        let inner = &self.inner;
        // Parked before the first read: an end in between still wakes us.
        let mut ticket = inner.signals.parked().park(id);
        let deadline = tokio::time::Instant::now() + timeout;
        let mut row = self.get(scope, id).await?;
        loop {
            if row.status.settles_wait() {
                inner
                    .store
                    .set_task_completion(
                        id,
                        &[
                            Completion::Wanted,
                            Completion::Pending,
                            Completion::Delivering,
                        ],
                        Completion::Consumed,
                    )
                    .await?;
                return Ok((row, false));
            }
            if tokio::time::timeout_at(deadline, ticket.woken())
                .await
                .is_err()
            {
                return Ok((self.get(scope, id).await?, true));
            }
            ticket = inner.signals.parked().park(id);
            // Woken: usually the end; read and consume in one statement.
            if let Some(settled) = inner
                .store
                .settle_task_wait(scope.tenant(), scope.principal(), id)
                .await?
            {
                return Ok((settled, false));
            }
            row = self.get(scope, id).await?;
        }
    }

    /// Operator view of a task's log (any task of the operator's tenant).
    pub async fn logs(
        &self,
        scope: &PrincipalScope,
        id: &str,
        after: i64,
    ) -> Result<Vec<(i64, String, String)>> {
        if !scope.is_operator() {
            return Err(Error::Forbidden("task logs are for operators".into()));
        }
        self.inner
            .store
            .get_task(scope.tenant(), scope.principal(), id, true)
            .await?
            .ok_or(Error::NotFound)?;
        Ok(self.inner.store.task_logs(id, after, 1000).await?)
    }

    /// Mark tasks a previous run of this node left queued or running as `lost`.
    pub async fn recover_lost(&self) -> anyhow::Result<usize> {
        let lost = self
            .inner
            .store
            .fail_lost_tasks(&self.inner.node_id)
            .await?;
        for (id, session) in &lost {
            let payload = EventPayload::TaskUpdated(events::TaskUpdated {
                task_id: id.clone(),
                kind: None,
                status: TaskStatus::Lost,
                summary: None,
            });
            self.inner.events.append(*session, None, payload).await?;
        }
        Ok(lost.len())
    }

    /// Tasks running on this instance.
    pub fn running_count(&self) -> usize {
        self.inner.running.len()
    }

    /// Let running tasks finish for up to `grace`, then cancel the rest
    /// and wait for them to settle; the tasks queued on this instance that
    /// never started are handed back as `lost` (their work lived here), so
    /// no survivor waits out their lease.
    pub async fn drain(&self, grace: Duration) -> bool {
        let finished = self
            .inner
            .running
            .drain(|_| {}, grace, Duration::from_secs(10))
            .await;
        self.queued().clear();
        match self
            .inner
            .store
            .abandon_queued_tasks(&self.inner.node_id)
            .await
        {
            Ok(left) => {
                for t in &left {
                    self.updated(t.session_id, &t.id, &t.kind, TaskStatus::Lost, &t.summary)
                        .await;
                    self.inner.signals.send(Signal::Ended(t.id.clone())).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not hand back queued tasks"),
        }
        finished
    }

    /// Cancel every running task and wait for them to settle.
    pub async fn shutdown(&self, grace: Duration) {
        self.queued().clear();
        self.inner.running.shutdown(|_| {}, grace).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: TaskStatus, summary: &str) -> TaskRow {
        TaskRow {
            id: "task_01".into(),
            tenant_id: "acme".into(),
            session_id: SessionId::new(),
            principal_id: "alice".into(),
            owner_role: "member".into(),
            node_id: "n1".into(),
            kind: "terminal.exec".into(),
            status,
            summary: summary.into(),
            result: Some("{\"content\":\"x\",\"ref\":\"secret-ref\"}".into()),
            metadata: Some("{\"parent\":\"p\"}".into()),
            completion: Completion::Wanted,
            created_at: 1,
            started_at: Some(2),
            completed_at: None,
        }
    }

    #[test]
    fn the_queue_cap_counts_the_tenants_waiting_tasks() {
        assert_eq!(queue_denial(0, 2, "acme"), None);
        assert_eq!(queue_denial(1, 2, "acme"), None);
        let denial = queue_denial(2, 2, "acme").unwrap();
        assert!(
            denial.contains("tenant acme already has 2")
                && denial.contains("--max-queued-tasks-tenant"),
            "{denial}"
        );
    }

    #[test]
    fn the_model_payload_is_bounded_and_omits_owner_scope_metadata_and_results() {
        let long = "y".repeat(5000);
        let p = model_payload(&row(TaskStatus::Running, &long));
        let keys: Vec<&str> = p.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "completed_at",
                "kind",
                "running",
                "started_at",
                "status",
                "summary",
                "task_id"
            ]
        );
        assert_eq!(p["status"], "running");
        assert_eq!(p["running"], true);
        assert_eq!(
            p["summary"].as_str().unwrap().chars().count(),
            SUMMARY_CHARS
        );
        let text = p.to_string();
        for hidden in ["alice", "acme", "secret-ref", "parent", "n1"] {
            assert!(!text.contains(hidden), "{hidden} leaked: {text}");
        }
        let done = model_payload(&row(TaskStatus::Lost, "short"));
        assert_eq!(
            (done["running"].as_bool(), done["summary"].as_str()),
            (Some(false), Some("short"))
        );
    }

    #[test]
    fn the_final_summary_keeps_the_description_and_the_end_of_the_output() {
        let s = final_summary("$ make", &json!({"content": "exit 0\nall good"}));
        assert_eq!(s, "$ make\nexit 0\nall good");
        assert_eq!(final_summary("$ true", &json!({"content": ""})), "$ true");
        assert_eq!(final_summary("$ true", &json!({"data": 1})), "$ true");
        let out = format!("{}END", "z".repeat(10_000));
        let s = final_summary(&format!("$ {}", "c".repeat(2000)), &json!({"content": out}));
        assert!(s.chars().count() <= SUMMARY_CHARS, "{}", s.chars().count());
        assert!(s.starts_with("$ ccc") && s.ends_with("zzzEND"), "{s}");
    }

    #[test]
    fn the_completion_text_names_the_task_and_its_end() {
        let mut r = row(TaskStatus::Succeeded, "$ sleep 1");
        r.completion = Completion::Pending;
        let t = completion_text(&r);
        assert!(
            t.starts_with("[SYSTEM: Background task event]\ntask_id: task_01\n"),
            "{t}"
        );
        assert!(
            t.contains("status: succeeded") && t.contains("$ sleep 1"),
            "{t}"
        );
        assert!(!t.contains("alice") && !t.contains("secret-ref"));
    }
}

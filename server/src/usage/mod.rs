//! The usage meter: what a tenant's turns consume, recorded off the turn's
//! path. A model call ([`Meter::model_call`]) or a tool call's use
//! ([`Meter::tool`]) is handed to a bounded queue, never a wait; one writer
//! task drains the queue in batches into the store (`usage_model_calls`,
//! `usage_tool_calls`). [`Meter::flush`] waits until everything handed over
//! so far is written (tests, shutdown).
//!
//! [`Meter::start_upkeep`] rolls raw rows up into hourly sums and prunes
//! both by their retention; the store's roll-up claims each row once, so
//! every instance may run it.

pub mod budget;
pub mod counters;
pub mod guard;
pub mod report;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::store::{NewModelCall, NewToolUsage, Store};

/// Calls queued before the meter drops (and counts) new ones.
const QUEUE: usize = 65_536;
/// Rows written per batch at most.
const BATCH: usize = 512;
/// How long the writer gathers rows before writing them.
const LINGER: Duration = Duration::from_millis(50);

// Nearly every message is a call; boxing it would allocate per call for a
// rare flush.
#[allow(clippy::large_enum_variant)]
enum Msg {
    Call(NewModelCall),
    Tool(NewToolUsage),
    Flush(oneshot::Sender<()>),
}

/// Hands usage to the writer; cheap to clone.
#[derive(Clone)]
pub struct Meter {
    tx: mpsc::Sender<Msg>,
    dropped: Arc<AtomicU64>,
    counters: Arc<counters::TenantCounters>,
    /// Told what is stored, so budgets see this instance's spend at once.
    guard: Arc<std::sync::OnceLock<guard::BudgetGuard>>,
}

impl Meter {
    /// Start the writer on the current runtime.
    pub fn start(store: Store) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        let counters = Arc::new(counters::TenantCounters::default());
        let guard: Arc<std::sync::OnceLock<guard::BudgetGuard>> = Arc::default();
        tokio::spawn(write(store, rx, counters.clone(), guard.clone()));
        Self {
            tx,
            dropped: Arc::default(),
            counters,
            guard,
        }
    }

    /// Record one model call. Never waits: with the queue full (the
    /// database far behind) the call is dropped, counted and logged.
    pub fn model_call(&self, call: NewModelCall) {
        self.send(Msg::Call(call));
    }

    /// Record one tool call's use (or a process's time after its call). Never
    /// waits, like [`Meter::model_call`].
    pub fn tool(&self, usage: NewToolUsage) {
        self.send(Msg::Tool(usage));
    }

    fn send(&self, msg: Msg) {
        if self.tx.try_send(msg).is_err() {
            let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(dropped = n, "usage meter queue full: usage not recorded");
            }
        }
    }

    /// Tell `guard` what is stored from now on.
    pub fn watch(&self, guard: guard::BudgetGuard) {
        let _ = self.guard.set(guard);
    }

    /// Per-tenant counters of what this instance stored (`/metrics`).
    pub fn counters(&self) -> &counters::TenantCounters {
        &self.counters
    }

    /// The per-tenant counters and the dropped rows, for `/metrics`.
    pub fn render_metrics(&self) -> String {
        let mut s = self.counters.render();
        s.push_str(
            "# HELP demiurge_usage_dropped_total Usage rows not recorded because the meter's queue was full.\n\
             # TYPE demiurge_usage_dropped_total counter\n",
        );
        s.push_str(&format!(
            "demiurge_usage_dropped_total {}\n",
            self.dropped()
        ));
        s
    }

    /// Usage rows dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Wait until every call handed over before this is written (or its
    /// write failed and was logged).
    pub async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self.tx.send(Msg::Flush(done)).await.is_ok() {
            let _ = wait.await;
        }
    }
}

async fn write(
    store: Store,
    mut rx: mpsc::Receiver<Msg>,
    counters: Arc<counters::TenantCounters>,
    guard: Arc<std::sync::OnceLock<guard::BudgetGuard>>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut tools = Vec::with_capacity(BATCH);
    let mut waiting = Vec::new();
    while let Some(first) = rx.recv().await {
        // Gather for a moment: one transaction for many rows keeps the
        // meter's writes from competing with the turns' on a busy server.
        let until = tokio::time::Instant::now() + LINGER;
        let mut next = Some(first);
        while let Some(msg) = next {
            match msg {
                Msg::Call(c) => batch.push(c),
                Msg::Tool(t) => tools.push(t),
                Msg::Flush(done) => waiting.push(done),
            }
            next = if batch.len() + tools.len() >= BATCH {
                None
            } else if let Ok(m) = rx.try_recv() {
                Some(m)
            } else if waiting.is_empty() {
                tokio::time::timeout_at(until, rx.recv())
                    .await
                    .ok()
                    .flatten()
            } else {
                // Someone waits for a flush: write what is here now.
                None
            };
        }
        let calls_stored = store.insert_model_calls(&batch).await;
        match &calls_stored {
            Ok(()) => counters.model_calls(&batch),
            Err(e) => tracing::error!(error = %e, rows = batch.len(), "usage rows not written"),
        }
        let tools_stored = store.insert_tool_usage(&tools).await;
        match &tools_stored {
            Ok(()) => counters.tools(&tools),
            Err(e) => {
                tracing::error!(error = %e, rows = tools.len(), "tool usage rows not written")
            }
        }
        if let Some(g) = guard.get() {
            g.recorded(
                if calls_stored.is_ok() { &batch } else { &[] },
                if tools_stored.is_ok() { &tools } else { &[] },
            );
        }
        batch.clear();
        tools.clear();
        for done in waiting.drain(..) {
            let _ = done.send(());
        }
    }
}

/// What one tool call consumed below the tool: process CPU of the commands
/// it ran and waited for, and bytes it fetched from the network. The
/// dispatcher opens a tally around each call ([`Tally::scope`]); exec and
/// the outbound client add to the tally of the task they run in, if any.
/// Work that outlives its call (a background command) is metered by
/// whoever reaps it, not here.
#[derive(Debug, Default)]
pub struct Tally {
    cpu_ms: AtomicU64,
    outbound_bytes: AtomicU64,
}

tokio::task_local! {
    static TALLY: Arc<Tally>;
}

impl Tally {
    /// Run `f` with a fresh tally; returns its output and the tally.
    pub async fn scope<F: std::future::Future>(f: F) -> (F::Output, Arc<Tally>) {
        let tally = Arc::new(Tally::default());
        let out = TALLY.scope(tally.clone(), f).await;
        (out, tally)
    }

    /// Add CPU time to the current call's tally (none outside a call).
    pub fn add_cpu_ms(ms: u64) {
        let _ = TALLY.try_with(|t| t.cpu_ms.fetch_add(ms, Ordering::Relaxed));
    }

    /// Add fetched bytes to the current call's tally (none outside a call).
    pub fn add_outbound_bytes(n: u64) {
        let _ = TALLY.try_with(|t| t.outbound_bytes.fetch_add(n, Ordering::Relaxed));
    }

    pub fn cpu_ms(&self) -> u64 {
        self.cpu_ms.load(Ordering::Relaxed)
    }

    pub fn outbound_bytes(&self) -> u64 {
        self.outbound_bytes.load(Ordering::Relaxed)
    }
}

/// How long usage is kept, and how often it is rolled up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Raw rows (each call), once rolled up.
    pub raw: Duration,
    /// Hourly roll-ups.
    pub hourly: Duration,
    /// Time between two roll-ups.
    pub every: Duration,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            raw: Duration::from_secs(7 * 86_400),
            hourly: Duration::from_secs(400 * 86_400),
            every: Duration::from_secs(60),
        }
    }
}

/// Raw rows claimed per roll-up transaction.
const ROLL_BATCH: u32 = 5_000;

impl Meter {
    /// Roll raw rows up and prune, every `retention.every`, until `stop`.
    pub fn start_upkeep(store: Store, retention: Retention, stop: CancellationToken) {
        tokio::spawn(async move {
            let mut every = tokio::time::interval(retention.every);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = every.tick() => {}
                    _ = stop.cancelled() => return,
                }
                if let Err(e) = upkeep(&store, retention).await {
                    tracing::warn!(error = %e, "usage roll-up failed; retried at the next tick");
                }
            }
        });
    }
}

/// One round: roll up everything not rolled yet, then prune.
pub async fn upkeep(store: &Store, retention: Retention) -> Result<(), sqlx::Error> {
    loop {
        let done = store.roll_up_usage(ROLL_BATCH).await?;
        if done.model_calls < u64::from(ROLL_BATCH) && done.tool_rows < u64::from(ROLL_BATCH) {
            break;
        }
    }
    let now = crate::time::now_ms();
    let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    store
        .prune_usage(
            now.saturating_sub(ms(retention.raw)),
            now.saturating_sub(ms(retention.hourly)),
        )
        .await?;
    Ok(())
}

#[cfg(test)]
#[path = "meter_tests.rs"]
mod tests;

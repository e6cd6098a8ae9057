//! The usage meter: what a tenant's turns consume, recorded off the turn's
//! path. A model call is handed to [`Meter::model_call`] (a bounded queue,
//! never a wait); one writer task drains the queue in batches into the
//! store (`usage_model_calls`). [`Meter::flush`] waits until everything
//! handed over so far is written (tests, shutdown).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::store::{NewModelCall, Store};

/// Calls queued before the meter drops (and counts) new ones.
const QUEUE: usize = 65_536;
/// Rows written per batch at most.
const BATCH: usize = 512;

// Nearly every message is a call; boxing it would allocate per call for a
// rare flush.
#[allow(clippy::large_enum_variant)]
enum Msg {
    Call(NewModelCall),
    Flush(oneshot::Sender<()>),
}

/// Hands usage to the writer; cheap to clone.
#[derive(Clone)]
pub struct Meter {
    tx: mpsc::Sender<Msg>,
    dropped: Arc<AtomicU64>,
}

impl Meter {
    /// Start the writer on the current runtime.
    pub fn start(store: Store) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(write(store, rx));
        Self {
            tx,
            dropped: Arc::default(),
        }
    }

    /// Record one model call. Never waits: with the queue full (the
    /// database far behind) the call is dropped, counted and logged.
    pub fn model_call(&self, call: NewModelCall) {
        if self.tx.try_send(Msg::Call(call)).is_err() {
            let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(
                    dropped = n,
                    "usage meter queue full: model calls not recorded"
                );
            }
        }
    }

    /// Model calls dropped because the queue was full.
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

async fn write(store: Store, mut rx: mpsc::Receiver<Msg>) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut waiting = Vec::new();
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some(msg) = next {
            match msg {
                Msg::Call(c) => batch.push(c),
                Msg::Flush(done) => waiting.push(done),
            }
            next = if batch.len() < BATCH {
                rx.try_recv().ok()
            } else {
                None
            };
        }
        if let Err(e) = store.insert_model_calls(&batch).await {
            tracing::error!(error = %e, rows = batch.len(), "usage rows not written");
        }
        batch.clear();
        for done in waiting.drain(..) {
            let _ = done.send(());
        }
    }
}

#[cfg(test)]
#[path = "usage_tests.rs"]
mod tests;

//! Signals between instances about running work: a task ended, cancel a
//! task, cancel a turn. On one instance they are in-process broadcasts; on
//! PostgreSQL they also travel as `NOTIFY demiurge_tasks` so the instance
//! that runs the work hears a cancel sent to any other one, and a waiter in
//! `yield_until` wakes when a task ends elsewhere. Ends wake only the
//! waiters parked on that task ([`Parked`]). Notifications are a fast
//! path only: cancel requests are also flagged on the row (the owner sees
//! them when it renews its leases), and when the listener reconnects every
//! parked waiter is woken to re-read its row.

use std::time::Duration;

use sqlx::postgres::PgListener;
use tokio::sync::broadcast;

use super::parked::Parked;
use crate::store::Store;

pub const CHANNEL: &str = "demiurge_tasks";

/// One signal, as sent between instances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// The task reached a status `yield_until` returns on.
    Ended(String),
    /// Cancel this task wherever it runs.
    CancelTask(String),
    /// Cancel this turn wherever it runs.
    CancelTurn(String),
}

impl Signal {
    pub fn encode(&self) -> String {
        match self {
            Signal::Ended(id) => format!("end:{id}"),
            Signal::CancelTask(id) => format!("cancel:{id}"),
            Signal::CancelTurn(id) => format!("turn:{id}"),
        }
    }

    /// A received payload; `None` for anything malformed (ids are
    /// host-issued: ASCII letters, digits, `_` and `-`, at most 64).
    pub fn parse(payload: &str) -> Option<Self> {
        let (tag, id) = payload.split_once(':')?;
        let ok = !id.is_empty()
            && id.len() <= 64
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !ok {
            return None;
        }
        let id = id.to_owned();
        match tag {
            "end" => Some(Signal::Ended(id)),
            "cancel" => Some(Signal::CancelTask(id)),
            "turn" => Some(Signal::CancelTurn(id)),
            _ => None,
        }
    }
}

/// The signal hub of one instance; cheap to clone.
#[derive(Clone)]
pub struct Signals {
    store: Store,
    /// Waiters on tasks' ends.
    parked: Parked,
    /// Cancel requests (for the owners of running work).
    incoming: broadcast::Sender<Signal>,
}

impl Signals {
    pub fn new(store: Store) -> Self {
        Self {
            store,
            parked: Parked::default(),
            incoming: broadcast::channel(1024).0,
        }
    }

    /// Waiters on tasks' ends (from this instance and its peers). Park
    /// before reading the row, so an end in between is not missed.
    pub fn parked(&self) -> &Parked {
        &self.parked
    }

    /// Cancel requests, from this instance and its peers.
    pub fn incoming(&self) -> broadcast::Receiver<Signal> {
        self.incoming.subscribe()
    }

    fn deliver(&self, signal: Signal) {
        if let Signal::Ended(id) = &signal {
            self.parked.wake(id);
        }
        let _ = self.incoming.send(signal);
    }

    /// Act on `signal` here and tell the other instances.
    pub async fn send(&self, signal: Signal) {
        self.deliver(signal.clone());
        if let Err(e) = self.store.notify(CHANNEL, &signal.encode()).await {
            tracing::warn!(error = %e, "could not notify peers of a task signal");
        }
    }

    /// Deliver peers' signals until the process ends; reconnects.
    pub async fn listen(self, url: String) {
        loop {
            match PgListener::connect(&url).await {
                Ok(mut listener) => match listener.listen(CHANNEL).await {
                    Ok(()) => {
                        // Ends may have gone unheard while disconnected.
                        self.parked.wake_all();
                        loop {
                            match listener.recv().await {
                                Ok(n) => {
                                    if let Some(signal) = Signal::parse(n.payload()) {
                                        self.deliver(signal);
                                    }
                                }
                                Err(e) => {
                                    tracing::warn!(error = %e, "task signal listener lost its connection");
                                    break;
                                }
                            }
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "LISTEN demiurge_tasks failed"),
                },
                Err(e) => tracing::warn!(error = %e, "task signal listener cannot connect"),
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_round_trip_and_garbage_is_dropped() {
        for s in [
            Signal::Ended("task_0123abcd".into()),
            Signal::CancelTask("task_ff".into()),
            Signal::CancelTurn("0190a3c4-7b2e-7c00-8000-000000000001".into()),
        ] {
            assert_eq!(Signal::parse(&s.encode()), Some(s));
        }
        for bad in [
            "",
            "end",
            "end:",
            "stop:task_1",
            "cancel:task 1",
            "cancel:../x",
            "end:a:b",
            &format!("end:{}", "a".repeat(65)),
        ] {
            assert_eq!(Signal::parse(bad), None, "{bad:?}");
        }
    }
}

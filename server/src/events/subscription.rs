//! One subscriber's ordered view of a session: backlog from the database,
//! then the live feed. Gaps (events committed elsewhere, or a lagging
//! receiver in refill mode) are filled from the database, so nothing is lost.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::broadcast::{self, error::RecvError};

use super::{Event, Hub};
use crate::store::Store;

/// What to do when this subscriber falls further behind than the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnLag {
    /// Re-read the missed events from the database (SSE).
    Refill,
    /// Report [`Lagged`] so the caller closes and the client resumes by seq (WebSocket).
    Fail,
}

/// The subscriber fell behind; it should resume after `last_seq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lagged {
    pub last_seq: i64,
}

pub struct Subscription {
    store: Store,
    hub: Hub,
    session_id: String,
    rx: broadcast::Receiver<Arc<Event>>,
    /// Highest seq already yielded.
    last: i64,
    pending: VecDeque<Arc<Event>>,
    backlog_done: bool,
    on_lag: OnLag,
    /// Started live ([`Subscription::live`]): the first event heard sets `last`.
    unanchored: bool,
}

const PAGE: u32 = 500;

impl Subscription {
    pub(super) fn new(store: Store, hub: Hub, session_id: &str, after: i64, on_lag: OnLag) -> Self {
        // Subscribe before reading the backlog, so nothing falls between the two.
        let rx = hub.subscribe(session_id);
        Self {
            store,
            hub,
            session_id: session_id.to_owned(),
            rx,
            last: after.max(0),
            pending: VecDeque::new(),
            backlog_done: false,
            on_lag,
            unanchored: false,
        }
    }

    /// Follow only what is published from now on: no backlog is read, and
    /// the first event heard anchors the order (later gaps are still filled
    /// from the database). For a caller that subscribes before it causes
    /// the events it waits for, so none of them can precede the first.
    pub(super) fn live(store: Store, hub: Hub, session_id: &str, on_lag: OnLag) -> Self {
        let mut sub = Self::new(store, hub, session_id, 0, on_lag);
        sub.backlog_done = true;
        sub.unanchored = true;
        sub
    }

    pub fn last_seq(&self) -> i64 {
        self.last
    }

    /// Read events after `self.last` from the database into `pending`.
    async fn fill(&mut self) -> Result<usize, sqlx::Error> {
        let rows = self
            .store
            .events_after(&self.session_id, self.last, PAGE)
            .await?;
        let n = rows.len();
        for r in &rows {
            self.pending.push_back(Arc::new(Event::from_row(r)));
        }
        Ok(n)
    }

    /// The next event in seq order. `Ok(None)` when the hub closed.
    pub async fn next(&mut self) -> Result<Option<Arc<Event>>, SubscriptionError> {
        loop {
            if let Some(ev) = self.pending.pop_front() {
                if ev.seq <= self.last {
                    continue;
                }
                self.last = ev.seq;
                return Ok(Some(ev));
            }
            if !self.backlog_done {
                let n = self.fill().await?;
                if n < PAGE as usize {
                    self.backlog_done = true;
                }
                continue;
            }
            match self.rx.recv().await {
                Ok(ev) if self.unanchored => {
                    self.unanchored = false;
                    self.last = ev.seq;
                    return Ok(Some(ev));
                }
                Ok(ev) => {
                    if ev.seq <= self.last {
                        continue;
                    }
                    if ev.seq == self.last + 1 {
                        self.last = ev.seq;
                        return Ok(Some(ev));
                    }
                    // A gap: someone else committed events we did not see live.
                    self.backlog_done = false;
                }
                Err(RecvError::Lagged(_)) => match self.on_lag {
                    OnLag::Fail => {
                        return Err(SubscriptionError::Lagged(Lagged {
                            last_seq: self.last,
                        }))
                    }
                    OnLag::Refill => {
                        self.rx = self.rx.resubscribe();
                        self.backlog_done = false;
                    }
                },
                Err(RecvError::Closed) => return Ok(None),
            }
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        // Our receiver still counts until it is dropped; swap it out first.
        let rx = std::mem::replace(&mut self.rx, broadcast::channel(1).1);
        drop(rx);
        self.hub.release(&self.session_id);
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SubscriptionError {
    #[error("subscriber fell behind")]
    Lagged(Lagged),
    #[error("database error")]
    Database(#[from] sqlx::Error),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DatabaseConfig;
    use crate::events::EventLog;
    use crate::ids::{PrincipalId, SessionId, TenantId};
    use crate::store::NewSession;

    async fn log_with_session(buffer: usize) -> (EventLog, SessionId, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&DatabaseConfig::resolve(dir.path(), None).unwrap())
            .await
            .unwrap();
        let id = SessionId::new();
        store
            .create_session(&NewSession {
                id,
                tenant: TenantId::parse("t").unwrap(),
                principal: PrincipalId::parse("p").unwrap(),
                title: String::new(),
                core: "assistant".into(),
                workspace: "default".into(),
                provider: "fake".into(),
            })
            .await
            .unwrap();
        (EventLog::start(store, Hub::new(buffer)), id, dir)
    }

    fn message(i: i32) -> crate::wire::events::EventPayload {
        crate::wire::events::EventPayload::Message(crate::wire::events::Message {
            role: "assistant".into(),
            content: i.to_string(),
        })
    }

    #[tokio::test]
    async fn a_subscriber_that_falls_behind_fails_then_resumes_with_nothing_lost() {
        let (log, sid, _dir) = log_with_session(16).await;
        let mut sub = log.subscribe(sid, 0, OnLag::Fail);
        log.append(sid, None, message(0)).await.unwrap();
        let mut seen = vec![sub.next().await.unwrap().unwrap().seq];
        // Caught up and live; now nothing is read while 40 events go out through a 16-slot buffer.
        for i in 1..=40 {
            log.append(sid, None, message(i)).await.unwrap();
        }
        let lag = loop {
            match sub.next().await {
                Ok(Some(ev)) => seen.push(ev.seq),
                Ok(None) => panic!("closed"),
                Err(SubscriptionError::Lagged(l)) => break l,
                Err(e) => panic!("{e}"),
            }
        };
        assert_eq!(
            lag.last_seq, 1,
            "lag is reported before the overflowed events"
        );
        // Resume by seq: the rest arrives, in order, exactly once.
        let mut resumed = log.subscribe(sid, lag.last_seq, OnLag::Fail);
        while seen.len() < 41 {
            seen.push(resumed.next().await.unwrap().unwrap().seq);
        }
        assert_eq!(seen, (1..=41).collect::<Vec<i64>>());
    }

    #[tokio::test]
    async fn refill_mode_reads_missed_events_from_the_database() {
        let (log, sid, _dir) = log_with_session(16).await;
        let mut sub = log.subscribe(sid, 0, OnLag::Refill);
        log.append(sid, None, message(-1)).await.unwrap();
        let mut seen = vec![sub.next().await.unwrap().unwrap().seq];
        for i in 0..40 {
            log.append(sid, None, message(i)).await.unwrap();
        }
        while seen.len() < 41 {
            seen.push(sub.next().await.unwrap().unwrap().seq);
        }
        assert_eq!(seen, (1..=41).collect::<Vec<i64>>());
    }
}

//! In-memory fan-out: one bounded broadcast channel per watched session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

use super::Event;

#[derive(Debug)]
struct Channel {
    tx: broadcast::Sender<Arc<Event>>,
    /// Highest seq published here, so peer notifications can skip what we sent.
    last: i64,
}

#[derive(Clone, Debug)]
pub struct Hub {
    inner: Arc<Mutex<HashMap<String, Channel>>>,
    /// Per-session ring size: how far a subscriber may fall behind.
    capacity: usize,
}

impl Hub {
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(HashMap::new())),
            capacity: capacity.max(16),
        }
    }

    pub fn subscribe(&self, session_id: &str) -> broadcast::Receiver<Arc<Event>> {
        let mut map = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(session_id.to_owned())
            .or_insert_with(|| Channel {
                tx: broadcast::channel(self.capacity).0,
                last: 0,
            })
            .tx
            .subscribe()
    }

    /// Send to current subscribers; forget the channel once nobody listens.
    pub fn publish(&self, ev: &Arc<Event>) {
        let mut map = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(ch) = map.get_mut(&ev.session_id) {
            ch.last = ch.last.max(ev.seq);
            if ch.tx.send(ev.clone()).is_err() {
                map.remove(&ev.session_id);
            }
        }
    }

    /// Drop the channel of a session whose last subscriber left.
    pub fn release(&self, session_id: &str) {
        let mut map = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if map
            .get(session_id)
            .is_some_and(|ch| ch.tx.receiver_count() == 0)
        {
            map.remove(session_id);
        }
    }

    /// For a watched session, the highest seq published here (0 if none yet);
    /// `None` when nobody here watches it.
    pub fn last_published(&self, session_id: &str) -> Option<i64> {
        let map = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        map.get(session_id).map(|ch| ch.last)
    }

    /// Sessions currently watched (for metrics).
    pub fn watched_sessions(&self) -> usize {
        self.inner.lock().map(|m| m.len()).unwrap_or(0)
    }
}

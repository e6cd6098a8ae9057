//! Waiters parked on a task's end (`yield_until`, a cancel waiting for the
//! work to stop). A waiter registers under the task id *before* it reads the
//! row, then sleeps on its own one-shot; the end of that task (recorded on
//! this instance, or heard from a peer through [`super::signals`]) wakes
//! exactly the waiters of that id. Nothing polls: a waiter that is never
//! woken returns at its timeout with the row as it is then. When the peer
//! listener reconnects (notifications may have been missed meanwhile),
//! every waiter is woken once to re-read its row.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// The registry of one instance; cheap to clone.
#[derive(Clone, Default)]
pub struct Parked {
    inner: Arc<Mutex<Registry>>,
}

#[derive(Default)]
struct Registry {
    next: u64,
    waiters: HashMap<String, Vec<(u64, oneshot::Sender<()>)>>,
}

/// One parked waiter: await [`Ticket::woken`]; dropping it unregisters.
pub struct Ticket {
    parked: Parked,
    id: String,
    key: u64,
    rx: Option<oneshot::Receiver<()>>,
}

impl Parked {
    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Register a waiter for the end of `task_id`. Register first, then read
    /// the row: an end in between still wakes the ticket.
    pub fn park(&self, task_id: &str) -> Ticket {
        let (tx, rx) = oneshot::channel();
        let mut reg = self.registry();
        reg.next += 1;
        let key = reg.next;
        reg.waiters
            .entry(task_id.to_owned())
            .or_default()
            .push((key, tx));
        Ticket {
            parked: self.clone(),
            id: task_id.to_owned(),
            key,
            rx: Some(rx),
        }
    }

    /// The task ended: wake its waiters (each re-reads the row).
    pub fn wake(&self, task_id: &str) -> usize {
        let woken = self.registry().waiters.remove(task_id).unwrap_or_default();
        let n = woken.len();
        for (_, tx) in woken {
            let _ = tx.send(());
        }
        n
    }

    /// Wake every waiter (ends may have been missed).
    pub fn wake_all(&self) -> usize {
        let all = std::mem::take(&mut self.registry().waiters);
        let mut n = 0;
        for (_, tx) in all.into_values().flatten() {
            let _ = tx.send(());
            n += 1;
        }
        n
    }

    /// Waiters parked now.
    pub fn len(&self) -> usize {
        self.registry().waiters.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Ticket {
    /// Resolves once the task's end is signalled (or every waiter is woken).
    pub async fn woken(&mut self) {
        if let Some(rx) = self.rx.as_mut() {
            let _ = rx.await;
            self.rx = None;
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut reg = self.parked.registry();
        if let Some(list) = reg.waiters.get_mut(&self.id) {
            list.retain(|(k, _)| *k != self.key);
            if list.is_empty() {
                reg.waiters.remove(&self.id);
            }
        }
    }
}

#[cfg(test)]
#[path = "parked_tests.rs"]
mod tests;

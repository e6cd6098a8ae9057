//! Work running on this node (turns, background tasks): one registry by id
//! with each item's cancellation and a way to wait for its end, and a
//! [`TaskTracker`] holding the spawned futures so shutdown waits on the
//! tracker instead of polling the registry.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

struct Entry<M> {
    token: CancellationToken,
    done: Arc<Notify>,
    meta: M,
}

/// Running work keyed by `K`, each with metadata `M`; cheap to clone.
pub struct RunningWork<K, M> {
    entries: Arc<Mutex<HashMap<K, Entry<M>>>>,
    tracker: TaskTracker,
}

impl<K, M> Clone for RunningWork<K, M> {
    fn clone(&self) -> Self {
        Self {
            entries: self.entries.clone(),
            tracker: self.tracker.clone(),
        }
    }
}

impl<K, M> Default for RunningWork<K, M> {
    fn default() -> Self {
        Self {
            entries: Arc::default(),
            tracker: TaskTracker::new(),
        }
    }
}

impl<K, M> RunningWork<K, M>
where
    K: Eq + Hash + Clone + Send + 'static,
    M: Send + 'static,
{
    fn entries(&self) -> MutexGuard<'_, HashMap<K, Entry<M>>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Register `key` if `admit` (seeing the metadata of everything running,
    /// under the same lock) allows it; returns its cancellation token.
    pub fn claim<E>(
        &self,
        key: K,
        meta: M,
        admit: impl FnOnce(&mut dyn Iterator<Item = &M>) -> Result<(), E>,
    ) -> Result<CancellationToken, E> {
        let mut entries = self.entries();
        admit(&mut entries.values().map(|e| &e.meta))?;
        let token = CancellationToken::new();
        entries.insert(
            key,
            Entry {
                token: token.clone(),
                done: Arc::new(Notify::new()),
                meta,
            },
        );
        Ok(token)
    }

    /// Register `key` unconditionally.
    pub fn insert(&self, key: K, meta: M) -> CancellationToken {
        match self.claim(key, meta, |_| Ok::<(), std::convert::Infallible>(())) {
            Ok(token) => token,
            Err(never) => match never {},
        }
    }

    /// Drop a registration whose work never started.
    pub fn forget(&self, key: &K) {
        self.entries().remove(key);
    }

    /// Run the work of a registered `key` on the tracker; when it ends the
    /// registration goes and anyone waiting in [`Self::cancel`] wakes.
    pub fn spawn(&self, key: K, work: impl Future<Output = ()> + Send + 'static) {
        let entries = self.entries.clone();
        self.tracker.spawn(async move {
            work.await;
            let ended = entries
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&key);
            if let Some(e) = ended {
                e.done.notify_waiters();
            }
        });
    }

    /// Cancel `key` (after `before` has seen its metadata, e.g. to record
    /// why) and wait up to `within` for its work to end. `false`: it is not
    /// running on this node.
    pub async fn cancel(&self, key: &K, before: impl FnOnce(&M), within: Duration) -> bool {
        let done = {
            let entries = self.entries();
            let Some(e) = entries.get(key) else {
                return false;
            };
            before(&e.meta);
            e.token.cancel();
            e.done.clone()
        };
        // Created before the check: a `notify_waiters` after it still wakes us.
        let ended = done.notified();
        if self.contains(key) {
            let _ = tokio::time::timeout(within, ended).await;
        }
        true
    }

    /// Wait until the work of `key` ends (at once if it is not running here).
    pub async fn wait(&self, key: &K) {
        let done = match self.entries().get(key) {
            Some(e) => e.done.clone(),
            None => return,
        };
        // Created before the check: a `notify_waiters` after it still wakes us.
        let ended = done.notified();
        if self.contains(key) {
            ended.await;
        }
    }

    /// Cancel everything (after `before` has seen each item's metadata) and
    /// wait up to `grace` for all tracked work to end.
    pub async fn shutdown(&self, before: impl Fn(&M), grace: Duration) {
        for e in self.entries().values() {
            before(&e.meta);
            e.token.cancel();
        }
        self.tracker.close();
        let _ = tokio::time::timeout(grace, self.tracker.wait()).await;
    }

    /// Let everything running finish for up to `grace`; then cancel what is
    /// left (`before` first, as in [`shutdown`](Self::shutdown)) and wait up
    /// to `settle` for it to end. True when all finished on their own.
    pub async fn drain(&self, before: impl Fn(&M), grace: Duration, settle: Duration) -> bool {
        self.tracker.close();
        if tokio::time::timeout(grace, self.tracker.wait())
            .await
            .is_ok()
        {
            return true;
        }
        for e in self.entries().values() {
            before(&e.meta);
            e.token.cancel();
        }
        let _ = tokio::time::timeout(settle, self.tracker.wait()).await;
        false
    }

    pub fn contains(&self, key: &K) -> bool {
        self.entries().contains_key(key)
    }

    pub fn len(&self) -> usize {
        self.entries().len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }

    /// Apply `f` to the metadata of everything running.
    pub fn with_all<R>(&self, f: impl FnOnce(&mut dyn Iterator<Item = &M>) -> R) -> R {
        f(&mut self.entries().values().map(|e| &e.meta))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[tokio::test]
    async fn spawned_work_leaves_the_registry_when_it_ends() {
        let work: RunningWork<u32, ()> = RunningWork::default();
        let token = work.insert(1, ());
        assert!(work.contains(&1));
        work.spawn(1, async move { token.cancelled().await });
        assert!(work.cancel(&1, |_| {}, Duration::from_secs(5)).await);
        assert!(!work.contains(&1), "cancel waited for the end");
        assert!(!work.cancel(&1, |_| {}, Duration::from_secs(5)).await);
    }

    #[tokio::test]
    async fn wait_returns_when_the_work_ends() {
        let work: RunningWork<u32, ()> = RunningWork::default();
        work.wait(&7).await; // Not running: at once.
        let token = work.insert(7, ());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        work.spawn(7, async move {
            let _ = rx.await;
            drop(token);
        });
        let waiter = {
            let work = work.clone();
            tokio::spawn(async move { work.wait(&7).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        tx.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("woken")
            .unwrap();
        assert!(!work.contains(&7));
    }

    #[tokio::test]
    async fn claim_checks_admission_under_the_lock() {
        let work: RunningWork<u32, &'static str> = RunningWork::default();
        // At most two running per owner.
        let cap = |who: &'static str| {
            move |running: &mut dyn Iterator<Item = &&str>| {
                if running.filter(|p| **p == who).count() >= 2 {
                    Err("full")
                } else {
                    Ok(())
                }
            }
        };
        assert!(work.claim(1, "alice", cap("alice")).is_ok());
        assert!(work.claim(2, "alice", cap("alice")).is_ok());
        assert_eq!(work.claim(3, "alice", cap("alice")).err(), Some("full"));
        assert!(!work.contains(&3), "a refused claim registers nothing");
        assert!(work.claim(3, "bob", cap("bob")).is_ok());
        work.forget(&1);
        assert_eq!(work.len(), 2);
        assert_eq!(work.with_all(|m| m.filter(|p| **p == "alice").count()), 1);
    }

    #[tokio::test]
    async fn shutdown_cancels_everything_and_waits_for_it() {
        let work: RunningWork<u32, Arc<std::sync::OnceLock<&'static str>>> = RunningWork::default();
        let reasons: Vec<_> = (0..3)
            .map(|_| Arc::new(std::sync::OnceLock::new()))
            .collect();
        for (i, reason) in reasons.iter().enumerate() {
            let token = work.insert(i as u32, reason.clone());
            work.spawn(i as u32, async move {
                token.cancelled().await;
                tokio::time::sleep(Duration::from_millis(30)).await;
            });
        }
        let t0 = Instant::now();
        work.shutdown(
            |r| {
                let _ = r.set("shutdown");
            },
            Duration::from_secs(5),
        )
        .await;
        assert!(work.is_empty());
        assert!(t0.elapsed() < Duration::from_secs(2));
        assert!(reasons.iter().all(|r| r.get() == Some(&"shutdown")));
    }

    #[tokio::test]
    async fn shutdown_gives_up_after_the_grace() {
        let work: RunningWork<u32, ()> = RunningWork::default();
        work.insert(1, ());
        work.spawn(1, std::future::pending());
        let t0 = Instant::now();
        work.shutdown(|_| {}, Duration::from_millis(50)).await;
        assert!(t0.elapsed() < Duration::from_secs(2));
        assert!(work.contains(&1));
    }
}

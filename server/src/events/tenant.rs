//! A tenant's admin stream: events about the tenant as a whole (budget
//! warnings), kept in the database so every instance serves the same
//! stream and an event that must happen once happens once.
//!
//! A follower reads what the database holds after its resume point, then
//! waits: an append on this instance wakes it at once; one made by another
//! instance is found by the next read, at most [`POLL`] later. The stream
//! is low-volume by nature (a few events per tenant per period), so a
//! follower's read every [`POLL`] costs nothing worth a notification path.

use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::store::{Store, TenantEventRow};
use crate::wire::tenant_events::{TenantEvent, TenantEventPayload};

/// How long an event appended by another instance may take to reach a
/// follower here.
pub const POLL: Duration = Duration::from_secs(1);

/// How long events are kept: longer than any budget period (a month), so
/// a once-key outlives the period it guards.
pub const RETENTION: Duration = Duration::from_secs(62 * 86_400);

/// Events read per page.
const PAGE: u32 = 200;

#[derive(Clone, Debug)]
pub struct TenantFeed {
    store: Store,
    /// Bumped on every append here; followers wait on it.
    appended: watch::Sender<u64>,
}

impl TenantFeed {
    pub fn new(store: Store) -> Self {
        Self {
            store,
            appended: watch::Sender::new(0),
        }
    }

    /// Append `payload` to `tenant`'s stream; with a `once_key` the tenant
    /// already has (from any instance), nothing happens and `None` comes
    /// back.
    pub async fn append(
        &self,
        tenant: &str,
        once_key: Option<&str>,
        payload: &TenantEventPayload,
    ) -> Result<Option<i64>, sqlx::Error> {
        let json = serde_json::to_string(payload).map_err(|e| sqlx::Error::Encode(e.into()))?;
        let id = self
            .store
            .append_tenant_event(tenant, once_key, &json, crate::time::now_ms())
            .await?;
        if id.is_some() {
            self.appended.send_modify(|n| *n += 1);
        }
        Ok(id)
    }

    /// The caller's tenant's stream from after `after`: tenant admins only.
    pub fn follow_for(
        &self,
        scope: &crate::auth::PrincipalScope,
        after: i64,
    ) -> Result<Follower, crate::error::Error> {
        scope.require_admin("read the tenant's admin stream")?;
        Ok(self.follow(scope.tenant().as_str(), after))
    }

    /// A page of the caller's tenant's stream after `after`: tenant admins only.
    pub async fn page_for(
        &self,
        scope: &crate::auth::PrincipalScope,
        after: i64,
    ) -> Result<Vec<TenantEvent>, crate::error::Error> {
        scope.require_admin("read the tenant's admin stream")?;
        Ok(self.page(scope.tenant().as_str(), after).await?)
    }

    /// Up to a page of `tenant`'s events after `after`.
    pub async fn page(&self, tenant: &str, after: i64) -> Result<Vec<TenantEvent>, sqlx::Error> {
        let rows = self.store.tenant_events_after(tenant, after, PAGE).await?;
        Ok(rows.iter().filter_map(decode).collect())
    }

    /// Follow `tenant`'s stream from after `after`.
    pub fn follow(&self, tenant: &str, after: i64) -> Follower {
        Follower {
            feed: self.clone(),
            tenant: tenant.to_owned(),
            last: after.max(0),
            pending: Default::default(),
            woken: self.appended.subscribe(),
        }
    }

    /// Prune old events every hour until `stop`.
    pub fn start_upkeep(&self, stop: CancellationToken) {
        let store = self.store.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(3600));
            loop {
                tokio::select! {
                    _ = every.tick() => {}
                    _ = stop.cancelled() => return,
                }
                let before = crate::time::now_ms() - RETENTION.as_millis() as i64;
                if let Err(e) = store.prune_tenant_events(before).await {
                    tracing::warn!(error = %e, "tenant events not pruned");
                }
            }
        });
    }
}

/// A stored row as its wire event; a row this binary cannot read (written
/// by a newer one) is skipped, not fatal to the stream.
fn decode(r: &TenantEventRow) -> Option<TenantEvent> {
    match serde_json::from_str::<TenantEventPayload>(&r.payload) {
        Ok(payload) => Some(TenantEvent {
            seq: r.id,
            at: crate::time::rfc3339(r.at),
            payload,
        }),
        Err(e) => {
            tracing::warn!(error = %e, id = r.id, "tenant event skipped: unknown payload");
            None
        }
    }
}

/// One follower of a tenant's stream: every event after its resume point,
/// once, in order.
pub struct Follower {
    feed: TenantFeed,
    tenant: String,
    last: i64,
    pending: std::collections::VecDeque<TenantEvent>,
    woken: watch::Receiver<u64>,
}

impl Follower {
    /// The next event; waits for one. `Err` when the database fails.
    pub async fn next(&mut self) -> Result<TenantEvent, sqlx::Error> {
        loop {
            if let Some(ev) = self.pending.pop_front() {
                return Ok(ev);
            }
            // Mark what is seen before reading, so an append between the
            // read and the wait still wakes this follower.
            self.woken.borrow_and_update();
            let rows = self
                .feed
                .store
                .tenant_events_after(&self.tenant, self.last, PAGE)
                .await?;
            if let Some(r) = rows.last() {
                self.last = r.id;
            }
            self.pending.extend(rows.iter().filter_map(decode));
            if self.pending.is_empty() {
                let _ = tokio::time::timeout(POLL, self.woken.changed()).await;
            }
        }
    }
}

//! The instances serving one database as one server.
//!
//! Each instance has a node id (`--instance-id`, or the id the home keeps
//! for a lone instance) that its turns, approvals and task leases carry,
//! and, while it serves, a heartbeat in the database
//! ([`crate::store::InstanceRow`]), renewed every third of
//! `--instance-lease`. A survivor that finds an instance silent for longer
//! than the lease claims it (`lost`, one survivor per instance) and the host
//! fails what it left ([`Membership::start`]'s `on_lost`): its running turns,
//! so their sessions take new turns, and its pending approvals and
//! clarifications. An instance that dies is so claimed within
//! `lease + lease / 3` of its last beat. Its tasks have their own leases
//! ([`crate::tasks`]).
//!
//! Joining fails closed: a second live process with the same node id (two
//! instances sharing a home without their own `--instance-id`) and a
//! second instance on one SQLite database are refused at start, with why.

use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::config::Backend;
use crate::store::{Holder, InstanceRow, Store};
use crate::time::now_ms;

/// This process's place among the instances.
pub struct Membership {
    store: Store,
    node_id: String,
    /// New for every process: tells a restart from a duplicate.
    boot_id: String,
    address: String,
    holder: Holder,
    lease: Duration,
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn alive(row: &InstanceRow, now: i64, lease: Duration) -> bool {
    matches!(row.state.as_str(), "serving" | "draining") && now - row.heartbeat_at <= ms(lease)
}

impl Membership {
    /// Join the instances of `store` as `node_id`, listening on `address`,
    /// as process `holder`. A previous run of this instance that died is
    /// seen gone at once on the same host (`running` answers for a holder
    /// there) and waited out elsewhere (at most half a lease: a live one
    /// beats every third); a live process holding the id, or another live
    /// instance on SQLite, is refused.
    pub async fn join(
        store: Store,
        node_id: String,
        address: String,
        holder: Holder,
        running: impl Fn(&Holder) -> bool,
        lease: Duration,
        backend: Backend,
    ) -> anyhow::Result<Membership> {
        let rows = store.instances().await?;
        let now = now_ms();
        if backend == Backend::Sqlite {
            if let Some(other) = rows.iter().find(|r| {
                r.node_id != node_id
                    && alive(r, now, lease)
                    && (r.holder.host != holder.host || running(&r.holder))
            }) {
                bail!(
                    "another instance ({}, listening on {}) serves this SQLite database; \
                     run one instance per SQLite home, or several on PostgreSQL",
                    other.node_id,
                    other.address
                );
            }
        }
        if let Some(previous) = rows.iter().find(|r| {
            r.node_id == node_id
                && alive(r, now, lease)
                && (r.holder.host != holder.host || running(&r.holder))
        }) {
            if previous.holder.host == holder.host {
                bail!(
                    "instance id {node_id} is in use by process {} on this host (listening on {}); \
                     give each instance sharing a home its own --instance-id",
                    previous.holder.pid,
                    previous.address
                );
            }
            let watch = lease / 3 + lease / 6 + Duration::from_millis(500);
            tracing::info!(
                node_id,
                "instance id was serving {} ms ago; making sure that process is gone",
                now - previous.heartbeat_at
            );
            tokio::time::sleep(watch).await;
            let again = store.instances().await?;
            if let Some(live) = again
                .iter()
                .find(|r| r.node_id == node_id && r.heartbeat_at > previous.heartbeat_at)
            {
                bail!(
                    "instance id {node_id} is in use by a running instance (listening on {}); \
                     give each instance sharing a home its own --instance-id",
                    live.address
                );
            }
        }
        let boot_id = uuid::Uuid::new_v4().to_string();
        store
            .register_instance(&node_id, &boot_id, &address, &holder, now_ms())
            .await?;
        Ok(Membership {
            store,
            node_id,
            boot_id,
            address,
            holder,
            lease,
        })
    }

    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// Beat, and claim silent instances for `on_lost`, every third of the
    /// lease until `stop`.
    pub fn start(
        self: Arc<Self>,
        on_lost: Arc<dyn Fn(InstanceRow) -> BoxFuture<'static, ()> + Send + Sync>,
        stop: CancellationToken,
    ) {
        let every = (self.lease / 3).max(Duration::from_millis(100));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    () = stop.cancelled() => return,
                }
                self.tick(&*on_lost).await;
            }
        });
    }

    async fn tick(&self, on_lost: &(dyn Fn(InstanceRow) -> BoxFuture<'static, ()> + Send + Sync)) {
        let now = now_ms();
        match self
            .store
            .beat_instance(&self.node_id, &self.boot_id, now)
            .await
        {
            Ok(true) => {}
            Ok(false) => {
                // A stall longer than the lease: survivors failed what this
                // instance was running. It serves on, registered again.
                tracing::warn!(
                    node_id = %self.node_id,
                    "this instance was declared lost (its heartbeat stalled past the lease); registering again"
                );
                if let Err(e) = self
                    .store
                    .register_instance(
                        &self.node_id,
                        &self.boot_id,
                        &self.address,
                        &self.holder,
                        now,
                    )
                    .await
                {
                    tracing::warn!(error = %e, "could not register again");
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not renew this instance's heartbeat"),
        }
        match self
            .store
            .claim_silent_instances(now - ms(self.lease))
            .await
        {
            Ok(rows) => {
                for row in rows.into_iter().filter(|r| r.node_id != self.node_id) {
                    tracing::warn!(
                        node_id = %row.node_id,
                        address = %row.address,
                        silent_ms = now - row.heartbeat_at,
                        "an instance stopped beating; failing what it left running"
                    );
                    on_lost(row).await;
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not look for silent instances"),
        }
    }

    /// Draining: still beating, taking no new work.
    pub async fn drain(&self) {
        if let Err(e) = self
            .store
            .set_instance_state(&self.node_id, &self.boot_id, "draining")
            .await
        {
            tracing::warn!(error = %e, "could not mark this instance draining");
        }
    }

    /// Stopped cleanly: nothing left for a survivor to fail.
    pub async fn leave(&self) {
        if let Err(e) = self
            .store
            .set_instance_state(&self.node_id, &self.boot_id, "stopped")
            .await
        {
            tracing::warn!(error = %e, "could not mark this instance stopped");
        }
    }
}

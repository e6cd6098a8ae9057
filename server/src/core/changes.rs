//! Changes that move a core's live revision, each with what must follow it:
//! a file written or deleted, edits made by a tool, a rollback, a promoted
//! evolve run. When the live revision of a core moves, the `allow_session`
//! grants of its sessions die (a grant was given for the old content). A
//! discarded run's evolver child, when still running, is cancelled.
//!
//! [`CoreChanges`] is the one service for all of them: the API routes of
//! cores, runs and schedules and the tools' core concern call it, so no
//! caller can move a core and forget the grants or the audit record (made
//! right after the commit: the tree is git's, not the database's, so the
//! two cannot share a transaction; the commit itself names its author). Reading a core (listing,
//! describing, diffs, run reviews) stays with [`CoreRepository`].

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::edit::{Authority, CoreChange, CoreEditError, Edit};
use super::path::{CoreFilePath, RevisionSpec};
use super::repository::CoreRepository;
use super::rollback::CoreRollback;
use super::runs::{Promoted, RunDone, RunOp};
use crate::auth::PrincipalScope;
use crate::ids::{CoreId, TenantId};
use crate::store::{NewAudit, Store, Surface};

/// Cancelling a background task for its owner: what a discarded run needs
/// of the task queue (which sits above the cores and implements this).
pub trait CancelTask: Send + Sync {
    /// Cancel `task_id` as `scope` would; an error says why it was not.
    fn cancel_task<'a>(
        &'a self,
        scope: &'a PrincipalScope,
        task_id: &'a str,
    ) -> BoxFuture<'a, Result<(), String>>;
}

/// Edits, rollbacks and evolve runs of a tenant's cores, with the grant
/// purge and evolver cancel that follow them. Cheap to clone.
#[derive(Clone)]
pub struct CoreChanges {
    repo: CoreRepository,
    store: Store,
    tasks: Arc<dyn CancelTask>,
}

impl CoreChanges {
    pub fn new(repo: CoreRepository, store: Store, tasks: Arc<dyn CancelTask>) -> Self {
        Self { repo, store, tasks }
    }

    /// Write `text` to a core file as a new live revision (`PUT`).
    pub async fn put_file(
        &self,
        scope: &PrincipalScope,
        via: &Surface,
        core: &CoreId,
        path: &CoreFilePath,
        text: Vec<u8>,
        message: Option<String>,
    ) -> Result<CoreChange, CoreEditError> {
        let change = self.repo.put_file(scope, core, path, text, message).await?;
        self.moved(scope.tenant(), &[core.to_string()]).await;
        self.record(scope.audit(via, "core.edited", core.as_str(), edited(&change)))
            .await;
        Ok(change)
    }

    /// Delete a core file as a new live revision.
    pub async fn delete_file(
        &self,
        scope: &PrincipalScope,
        via: &Surface,
        core: &CoreId,
        path: &CoreFilePath,
        message: Option<String>,
    ) -> Result<CoreChange, CoreEditError> {
        let change = self.repo.delete_file(scope, core, path, message).await?;
        self.moved(scope.tenant(), &[core.to_string()]).await;
        let mut detail = edited(&change);
        detail["deleted"] = true.into();
        self.record(scope.audit(via, "core.edited", core.as_str(), detail))
            .await;
        Ok(change)
    }

    /// Make `edits` as one new live revision, checked on a staged copy.
    pub async fn change(
        &self,
        scope: &PrincipalScope,
        core: &CoreId,
        edits: Vec<(CoreFilePath, Edit)>,
        message: String,
        authority: Authority,
    ) -> Result<CoreChange, CoreEditError> {
        let change = self
            .repo
            .change(scope, core, edits, message, authority)
            .await?;
        self.moved(scope.tenant(), &[core.to_string()]).await;
        // A tool's edit: the agent acted in the principal's turn.
        self.record(scope.audit(
            &Surface::Agent,
            "core.edited",
            core.as_str(),
            edited(&change),
        ))
        .await;
        Ok(change)
    }

    /// Make `edits` as one new live revision for a caller whose role allows
    /// it (a package installed or removed), recorded as `action` from `via`
    /// with `detail` (the revision is added to it).
    #[allow(clippy::too_many_arguments)]
    pub async fn change_recorded(
        &self,
        scope: &PrincipalScope,
        via: &Surface,
        core: &CoreId,
        edits: Vec<(CoreFilePath, Edit)>,
        message: String,
        action: &str,
        mut detail: serde_json::Value,
    ) -> Result<CoreChange, CoreEditError> {
        let change = self
            .repo
            .change(scope, core, edits, message, Authority::Role)
            .await?;
        self.moved(scope.tenant(), &[core.to_string()]).await;
        if let Some(d) = detail.as_object_mut() {
            d.insert("revision".into(), change.revision.clone().into());
            d.insert(
                "previous".into(),
                serde_json::to_value(&change.previous).unwrap_or_default(),
            );
        }
        self.record(scope.audit(via, action, core.as_str(), detail))
            .await;
        Ok(change)
    }

    /// Roll the tenant's agents tree back to `target` (a new commit),
    /// holding `core`; every changed core and `core` itself moved.
    pub async fn rollback(
        &self,
        scope: &PrincipalScope,
        core: &CoreId,
        target: &RevisionSpec,
        reason: Option<&str>,
        authority: Authority,
    ) -> Result<CoreRollback, CoreEditError> {
        let done = self
            .repo
            .rollback(scope, core, target, reason, authority)
            .await?;
        let mut moved = done.cores.clone();
        moved.push(core.to_string());
        self.moved(scope.tenant(), &moved).await;
        self.record(scope.audit(
            &Surface::Agent,
            "core.rolled_back",
            core.as_str(),
            serde_json::json!({"revision": done.revision, "previous": done.previous,
                "restored": done.restored, "cores": done.cores, "reason": reason}),
        ))
        .await;
        Ok(done)
    }

    /// Promote a run of `core`: every changed core and `core` itself moved.
    pub async fn promote_run(
        &self,
        scope: &PrincipalScope,
        via: &Surface,
        core: &str,
        run_id: &str,
        mcp_token: Option<&str>,
    ) -> Result<Promoted, CoreEditError> {
        let tenant = scope.tenant();
        let done = self
            .repo
            .run_promote(tenant, core, run_id, mcp_token)
            .await?;
        let mut moved = done.cores.clone();
        moved.push(core.to_owned());
        self.moved(tenant, &moved).await;
        self.record(scope.audit(
            via,
            "core.promoted",
            core,
            serde_json::json!({"run_id": run_id, "revision": done.revision,
                "previous": done.previous, "cores": done.cores}),
        ))
        .await;
        Ok(done)
    }

    /// Discard an evolve run of `core`; its evolver child, when still
    /// running, is cancelled (its workspace is gone). `false`: no such run.
    pub async fn discard_run(
        &self,
        scope: &PrincipalScope,
        core: &str,
        run_id: &str,
    ) -> Result<bool, CoreEditError> {
        let tenant = scope.tenant();
        let evolver = match self.repo.run_evolver(tenant, core, run_id).await {
            Ok(e) => e,
            Err(CoreEditError::NotFound) => None,
            Err(e) => return Err(e),
        };
        let discarded = self.repo.run_discard(tenant, core, run_id).await?;
        if let Some(e) = evolver.filter(|_| discarded) {
            // Best effort: a caller who cannot see the task cannot cancel it,
            // and its next step fails on the missing workspace anyway.
            if let Err(err) = self.tasks.cancel_task(scope, &e.task_id).await {
                tracing::info!(error = %err, task = %e.task_id, "evolver of a discarded run not cancelled");
            }
        }
        Ok(discarded)
    }

    /// One evolve run action of a session whose core is `own`: a session
    /// acts on the runs of its own core only (a start names the core it
    /// evolves).
    pub async fn evolve_run(
        &self,
        scope: &PrincipalScope,
        own: &CoreId,
        op: RunOp,
    ) -> Result<RunDone, CoreEditError> {
        let tenant = scope.tenant();
        Ok(match op {
            RunOp::Start { run_id, goal, core } => {
                let (info, worktree) = self.repo.run_create(tenant, &core, &run_id, &goal).await?;
                RunDone::Started { info, worktree }
            }
            RunOp::Review { run_id } => {
                RunDone::Reviewed(self.repo.run_review(tenant, own.as_str(), &run_id).await?)
            }
            RunOp::Promote { run_id, mcp_token } => RunDone::Promoted(
                self.promote_run(
                    scope,
                    &Surface::Agent,
                    own.as_str(),
                    &run_id,
                    mcp_token.as_deref(),
                )
                .await?,
            ),
            RunOp::Discard { run_id } => {
                RunDone::Discarded(self.discard_run(scope, own.as_str(), &run_id).await?)
            }
            RunOp::Evolver { run_id, evolver } => {
                self.repo
                    .run_record_evolver(tenant, &run_id, evolver)
                    .await?;
                RunDone::Recorded
            }
        })
    }

    /// The audit record of a change already committed: a failure to write
    /// it cannot undo the commit, so it is logged as an error.
    async fn record(&self, audit: NewAudit) {
        if let Err(e) = self.store.append_audit(&audit).await {
            tracing::error!(error = %e, action = %audit.action, target = %audit.target,
                "a core change was made but its audit record was not written");
        }
    }

    /// The live revision of these cores moved: their sessions'
    /// `allow_session` grants die. After the commit, so a failure can only
    /// be logged (a grant's key still carries the core's fingerprint, so it
    /// can only come back with the very same content).
    async fn moved(&self, tenant: &TenantId, cores: &[String]) {
        let mut cores = cores.to_vec();
        cores.sort();
        cores.dedup();
        for core in &cores {
            if let Err(e) = self.store.delete_core_session_grants(tenant, core).await {
                tracing::error!(error = %e, %core, "could not drop the session grants of a changed core");
            }
        }
    }
}

/// What an edit's audit record says: the file, and the revisions it moved
/// between (the commit names the author and holds the content).
fn edited(change: &CoreChange) -> serde_json::Value {
    serde_json::json!({"path": change.path, "revision": change.revision,
        "previous": change.previous})
}

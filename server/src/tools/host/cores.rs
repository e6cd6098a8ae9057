//! Changes to the call's own core: edits, rollbacks and evolve runs. Each
//! is only for a call whose approvals the dispatcher has already passed.

use futures_util::future::BoxFuture;

use crate::core::edit::{CoreChange, CoreEditError, Edit};
use crate::core::path::{CoreFilePath, RevisionSpec};
use crate::core::rollback::CoreRollback;
use crate::core::runs::{RunDone, RunOp};
use crate::tools::context::CallContext;

/// The call's core as a thing that changes.
pub trait CoreHost: Send + Sync {
    /// Make `edits` to the call's core as one new live revision, checked on
    /// a staged copy (refused when the core would no longer load). The
    /// running turn keeps the core it loaded; the next turn sees the change.
    fn change_core<'a>(
        &'a self,
        ctx: &'a CallContext,
        edits: Vec<(CoreFilePath, Edit)>,
        message: String,
    ) -> BoxFuture<'a, Result<CoreChange, CoreEditError>>;

    /// Roll the call's tenant's agents tree back to `target` (a new commit),
    /// holding the call's core; `allow_session` grants of every changed
    /// core die.
    fn rollback_core<'a>(
        &'a self,
        ctx: &'a CallContext,
        target: RevisionSpec,
        reason: Option<String>,
    ) -> BoxFuture<'a, Result<CoreRollback, CoreEditError>>;

    /// One evolve run action in the call's tenant's agents tree; a promote
    /// drops the `allow_session` grants of every changed core and of the
    /// call's core.
    fn evolve_run<'a>(
        &'a self,
        ctx: &'a CallContext,
        op: RunOp,
    ) -> BoxFuture<'a, Result<RunDone, CoreEditError>>;
}

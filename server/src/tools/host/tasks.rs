//! Background work a tool hands to the host: durable tasks (start, list,
//! read, cancel, wait), the task cap, child agents and schedules.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::auth::PrincipalScope;
use crate::tasks::children::ChildRunner;
use crate::tasks::schedules::Schedules;
use crate::tasks::{StartError, StartOptions, TaskHandle, TaskOutcome};
use crate::tools::context::CallContext;
use crate::tools::contract::ToolEnv;

/// The work of a background task.
pub type TaskJob = Box<dyn FnOnce(TaskHandle) -> BoxFuture<'static, TaskOutcome> + Send>;

/// Durable background tasks, child agents and schedules.
pub trait TaskHost: Send + Sync {
    /// Start a durable background task of this call's principal and
    /// session; its summary, log and result are redacted knowing the
    /// secrets of the call's arguments.
    fn start_task<'a>(
        &'a self,
        call: &'a ToolEnv<'a>,
        kind: &'static str,
        summary: String,
        options: StartOptions,
        job: TaskJob,
    ) -> BoxFuture<'a, Result<String, StartError>>;

    /// Where child agents run; `None` when this host cannot run them.
    fn children(&self) -> Option<Arc<dyn ChildRunner>>;

    /// The schedules service; `None` when this host has none.
    fn schedules(&self) -> Option<Schedules>;

    /// Why a background task of this principal would be refused now.
    fn background_over_cap(&self, scope: &PrincipalScope) -> Option<String>;

    /// The caller's tasks of this call's session, newest first.
    fn session_tasks<'a>(
        &'a self,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, crate::error::Result<Vec<crate::store::TaskRow>>>;

    /// One of the caller's tasks; anyone else's is `NotFound`, like a random id.
    fn task<'a>(
        &'a self,
        scope: &'a PrincipalScope,
        id: &'a str,
    ) -> BoxFuture<'a, crate::error::Result<crate::store::TaskRow>>;

    /// Cancel one of the caller's tasks wherever it runs; the task afterwards.
    fn cancel_task<'a>(
        &'a self,
        scope: &'a PrincipalScope,
        id: &'a str,
    ) -> BoxFuture<'a, crate::error::Result<crate::store::TaskRow>>;

    /// Wait for one of the caller's tasks to settle: `(task, timed_out)`.
    fn wait_task<'a>(
        &'a self,
        scope: &'a PrincipalScope,
        id: &'a str,
        timeout: std::time::Duration,
    ) -> BoxFuture<'a, crate::error::Result<(crate::store::TaskRow, bool)>>;
}

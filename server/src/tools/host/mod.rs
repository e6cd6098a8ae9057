//! The host's services a tool may call, one trait per concern, each saying
//! what it owns. The dispatcher implements them all (`dispatch/host.rs`);
//! [`Host`] is the one handle a [`ToolEnv`](super::contract::ToolEnv)
//! carries, and a tool reaches a concern through it by name. Every method acts for the
//! call it is given: scope, session and turn come from the host-built
//! context, never from a tool's arguments.

mod clarify;
mod cores;
mod history;
mod output;
mod runners;
mod tasks;

pub use clarify::{Answer, ClarifyHost};
pub use cores::CoreHost;
pub use history::HistoryHost;
pub use output::OutputHost;
pub use runners::RunnerHost;
pub use tasks::{TaskHost, TaskJob};

/// Every concern, each reached by name: a tool's code says which it uses
/// (`env.host.tasks().start_task(…)`), so `grep "host.tasks()"` lists the
/// tools that depend on background work. Implemented for any type that
/// implements all the concerns.
pub trait Host: Send + Sync {
    fn tasks(&self) -> &dyn TaskHost;
    fn output(&self) -> &dyn OutputHost;
    fn history(&self) -> &dyn HistoryHost;
    fn clarify(&self) -> &dyn ClarifyHost;
    fn cores(&self) -> &dyn CoreHost;
    fn runners(&self) -> &dyn RunnerHost;
}

impl<T> Host for T
where
    T: TaskHost + OutputHost + HistoryHost + ClarifyHost + CoreHost + RunnerHost,
{
    fn tasks(&self) -> &dyn TaskHost {
        self
    }
    fn output(&self) -> &dyn OutputHost {
        self
    }
    fn history(&self) -> &dyn HistoryHost {
        self
    }
    fn clarify(&self) -> &dyn ClarifyHost {
        self
    }
    fn cores(&self) -> &dyn CoreHost {
        self
    }
    fn runners(&self) -> &dyn RunnerHost {
        self
    }
}

//! Built-in tool adapters, one file per concern, each a [`contract::Tool`]:
//! typed arguments, a pure plan that names what must be approved, and the
//! effect. Adapters run only through the dispatcher, which resolves,
//! validates, capability-checks, asks for every approval a plan names and
//! redacts the result; no adapter depends on the dispatcher.

pub mod authored;
pub mod beneath;
pub mod clarify;
pub mod context;
pub mod contract;
pub mod core_tools;
pub mod delegate;
pub mod files;
pub mod history;
pub mod host;
pub mod registry;
pub mod resources;
pub mod schedule;
pub mod search;
pub mod skill_manage;
pub mod skills;
pub mod task_tools;
pub mod terminal;
#[cfg(test)]
pub(crate) mod testing;
pub mod todo;
pub mod web;

use serde::Deserialize;

use contract::{Gate, Plan, Tool, ToolEnv, ToolOutcome};

/// `tools_list`: the turn's catalog as the model may see it.
pub struct ToolsList;

/// `tools_list` takes no arguments.
#[derive(Deserialize)]
pub struct NoArgs {}

impl Tool for ToolsList {
    type Args = NoArgs;
    type Prepared = ();

    fn plan(_: &ToolEnv<'_>, _: NoArgs) -> Plan<()> {
        Plan::run(Gate::PerCall, ())
    }

    async fn execute(env: &ToolEnv<'_>, _: ()) -> ToolOutcome {
        ToolOutcome::ok_json(env.catalog.tools_list_view())
    }
}

//! The one registry of built-in tools: each tool's name bound to its
//! handler (a [`Tool`]) on one line of [`registry!`] below. The dispatch of
//! a built-in call ([`run`]) and the set of names ([`NAMES`]) are derived
//! from it; the catalog's listing (schema, toolset, risk, capability,
//! approval default) is `catalog/builtin_tools.json`, and the tests here
//! tie the two both ways, so a tool can be neither listed and not
//! dispatchable nor dispatchable and not listed.
//!
//! Adding a tool: its file under `tools/`, its line here, its entry in the
//! JSON, its tests.

use std::future::Future;

use super::contract::{Tool, ToolEnv, ToolOutcome};
use super::{
    clarify, core_tools, delegate, files, history, schedule, search, skill_manage, skills,
    task_tools, terminal, todo, web, ToolsList,
};

/// What runs a tool: the dispatcher's pipeline (plan, every approval,
/// review, execute). A tool's effect is reached only through it.
pub trait Driver {
    fn drive<T: Tool>(&self, env: &ToolEnv<'_>) -> impl Future<Output = ToolOutcome> + Send;
}

macro_rules! registry {
    ($($name:literal => $tool:ty,)*) => {
        /// Every built-in tool name, in registry order.
        pub const NAMES: &[&str] = &[$($name),*];

        /// Drive the built-in tool the call's entry names; `None` when no
        /// built-in has that name.
        pub async fn run<D: Driver + Sync>(driver: &D, env: &ToolEnv<'_>) -> Option<ToolOutcome> {
            Some(match env.entry.name.as_str() {
                $($name => driver.drive::<$tool>(env).await,)*
                _ => return None,
            })
        }
    };
}

registry! {
    "read_file" => files::ReadFile,
    "write_file" => files::WriteFile,
    "patch" => files::Patch,
    "search_files" => search::SearchFiles,
    "terminal" => terminal::Terminal,
    "session_search" => history::SessionSearch,
    "skills_list" => skills::SkillsList,
    "skill_view" => skills::SkillView,
    "skill_manage" => skill_manage::SkillManage,
    "todo" => todo::Todo,
    "clarify" => clarify::Clarify,
    "tools_list" => ToolsList,
    "web_extract" => web::WebExtract,
    "task_list" => task_tools::TaskList,
    "task_status" => task_tools::TaskStatusTool,
    "task_control" => task_tools::TaskControl,
    "yield_until" => task_tools::YieldUntil,
    "delegate_task" => delegate::DelegateTask,
    "schedule_manage" => schedule::ScheduleManage,
    "rollback_core" => core_tools::RollbackCore,
    "evolve_core" => core_tools::EvolveCore,
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;

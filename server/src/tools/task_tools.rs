//! The model's task tools: `task_list` (the current session's tasks),
//! `task_status`, `task_control(command="cancel")` and `yield_until`. Every
//! call goes through the caller's scope: another principal's task id gets
//! the same answer as a random one. Payloads are the bounded model view
//! ([`crate::tasks::model_payload`]): no owner ids, scope, metadata, logs or
//! result references.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use super::contract::{lenient_int, Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};
use crate::error::Error;
use crate::store::TaskRow;
use crate::tasks::model_payload;

/// Tasks `task_list` shows at most (newest first).
pub const LIST_LIMIT: usize = 50;
/// The longest `yield_until` wait; a longer timeout is cut to it.
pub const MAX_WAIT: Duration = Duration::from_secs(600);
/// `yield_until` without `timeout_seconds`.
pub const DEFAULT_WAIT_SECS: i64 = 30;

/// The one answer for an id the caller cannot see (or that does not exist).
fn not_found(id: &str) -> ToolOutcome {
    let shown: String = id.chars().take(80).collect();
    ToolOutcome::error(
        ToolStatus::NotFound,
        format!("background task not found: {shown}"),
    )
}

fn host_failure(e: Error) -> ToolOutcome {
    match e {
        Error::NotFound => ToolOutcome::error(ToolStatus::NotFound, "background task not found"),
        other => {
            tracing::error!(error = %other, "task tool failed");
            ToolOutcome::error(ToolStatus::Failed, "the task service failed; try again")
        }
    }
}

/// A required, trimmed task id; `None` when empty.
fn task_id(raw: &str) -> Option<String> {
    let id = raw.trim();
    (!id.is_empty()).then(|| id.to_owned())
}

/// The rows `task_list` shows: optionally one kind, optionally without
/// ended tasks, at most [`LIST_LIMIT`].
pub fn select_for_list(rows: Vec<TaskRow>, kind: Option<&str>, include_completed: bool) -> Value {
    let tasks: Vec<Value> = rows
        .iter()
        .filter(|r| kind.is_none_or(|k| r.kind == k))
        .filter(|r| include_completed || !r.status.is_terminal())
        .take(LIST_LIMIT)
        .map(model_payload)
        .collect();
    json!({ "tasks": tasks })
}

/// The wait `yield_until` performs for `timeout_seconds`.
pub fn wait_for(timeout_seconds: Option<i64>) -> Duration {
    let secs = timeout_seconds.unwrap_or(DEFAULT_WAIT_SECS).max(0);
    Duration::from_secs(u64::try_from(secs).unwrap_or(0)).min(MAX_WAIT)
}

/// `task_list`.
pub struct TaskList;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskListArgs {
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub include_completed: Option<bool>,
}

impl Tool for TaskList {
    type Args = TaskListArgs;
    type Prepared = TaskListArgs;

    fn plan(_: &ToolEnv<'_>, args: TaskListArgs) -> Plan<TaskListArgs> {
        Plan::run(Gate::PerCall, args)
    }

    async fn execute(env: &ToolEnv<'_>, args: TaskListArgs) -> ToolOutcome {
        match env.host.tasks().session_tasks(env.ctx).await {
            Ok(rows) => ToolOutcome::ok_json(select_for_list(
                rows,
                args.kind.as_deref(),
                args.include_completed.unwrap_or(true),
            )),
            Err(e) => host_failure(e),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskIdArgs {
    pub task_id: String,
}

/// `task_status`.
pub struct TaskStatusTool;

impl Tool for TaskStatusTool {
    type Args = TaskIdArgs;
    type Prepared = String;

    fn plan(_: &ToolEnv<'_>, args: TaskIdArgs) -> Plan<String> {
        match task_id(&args.task_id) {
            Some(id) => Plan::run(Gate::PerCall, id),
            None => Plan::Done(ToolOutcome::error(
                ToolStatus::Invalid,
                "task_id is required",
            )),
        }
    }

    async fn execute(env: &ToolEnv<'_>, id: String) -> ToolOutcome {
        match env.host.tasks().task(&env.ctx.scope, &id).await {
            Ok(row) => ToolOutcome::ok_json(model_payload(&row)),
            Err(Error::NotFound) => not_found(&id),
            Err(e) => host_failure(e),
        }
    }
}

/// `task_control`.
pub struct TaskControl;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskControlArgs {
    pub task_id: String,
    #[serde(default)]
    pub command: Option<String>,
}

impl Tool for TaskControl {
    type Args = TaskControlArgs;
    type Prepared = String;

    fn plan(_: &ToolEnv<'_>, args: TaskControlArgs) -> Plan<String> {
        let Some(id) = task_id(&args.task_id) else {
            return Plan::Done(ToolOutcome::error(
                ToolStatus::Invalid,
                "task_id is required",
            ));
        };
        let command = args.command.as_deref().unwrap_or("cancel").trim();
        if command != "cancel" {
            let shown: String = command.chars().take(40).collect();
            return Plan::Done(ToolOutcome::error(
                ToolStatus::Invalid,
                format!("unsupported task_control command: {shown}"),
            ));
        }
        Plan::run(Gate::PerCall, id)
    }

    async fn execute(env: &ToolEnv<'_>, id: String) -> ToolOutcome {
        match env.host.tasks().cancel_task(&env.ctx.scope, &id).await {
            Ok(row) => ToolOutcome::ok_json(model_payload(&row)),
            Err(Error::NotFound) => not_found(&id),
            Err(e) => host_failure(e),
        }
    }
}

/// `yield_until`.
pub struct YieldUntil;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct YieldArgs {
    pub task_id: String,
    #[serde(default, deserialize_with = "lenient_int")]
    pub timeout_seconds: Option<i64>,
}

impl Tool for YieldUntil {
    type Args = YieldArgs;
    type Prepared = (String, Duration);

    fn plan(_: &ToolEnv<'_>, args: YieldArgs) -> Plan<(String, Duration)> {
        match task_id(&args.task_id) {
            Some(id) => Plan::run(Gate::PerCall, (id, wait_for(args.timeout_seconds))),
            None => Plan::Done(ToolOutcome::error(
                ToolStatus::Invalid,
                "task_id is required",
            )),
        }
    }

    async fn execute(env: &ToolEnv<'_>, (id, timeout): (String, Duration)) -> ToolOutcome {
        let waited = tokio::select! {
            r = env.host.tasks().wait_task(&env.ctx.scope, &id, timeout) => r,
            _ = env.ctx.cancel.cancelled() => {
                return ToolOutcome::error(ToolStatus::Cancelled, "the turn was cancelled");
            }
        };
        match waited {
            Ok((row, timed_out)) => {
                let mut payload = model_payload(&row);
                if timed_out {
                    payload["timed_out"] = Value::Bool(true);
                }
                ToolOutcome::ok_json(payload)
            }
            Err(Error::NotFound) => not_found(&id),
            Err(e) => host_failure(e),
        }
    }
}

#[cfg(test)]
#[path = "task_tools_tests.rs"]
mod tests;

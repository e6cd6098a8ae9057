//! `schedule_manage`: list, create, update, enable, disable and delete the
//! caller's schedules ([`crate::tasks::schedules`]). `list` asks nothing
//! (unless the policy denies the tool); every change is approved first
//! (risk high, action `schedule.<action>`).

use serde::Deserialize;
use serde_json::{json, Value};

use super::contract::{Approval, Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};
use crate::policy::approval_policy::{ApprovalPolicy, Risk};
use crate::tasks::schedules::{view, ScheduleError};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleArgs {
    #[serde(default)]
    pub action: Option<String>,
    #[serde(default)]
    pub schedule_id: Option<String>,
    #[serde(default)]
    pub schedule: Option<String>,
    #[serde(default)]
    pub prompt: Option<String>,
}

/// What a call will do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    List,
    Create,
    Update,
    Enable,
    Disable,
    Delete,
}

impl Action {
    fn parse(raw: Option<&str>) -> Result<Self, String> {
        Ok(match raw.map(str::trim).unwrap_or("list") {
            "list" => Action::List,
            "create" => Action::Create,
            "update" => Action::Update,
            "enable" | "resume" => Action::Enable,
            "disable" | "pause" => Action::Disable,
            "delete" => Action::Delete,
            other => {
                return Err(format!(
                    "unsupported schedule_manage action: {}",
                    other.chars().take(40).collect::<String>()
                ))
            }
        })
    }

    fn as_str(&self) -> &'static str {
        match self {
            Action::List => "list",
            Action::Create => "create",
            Action::Update => "update",
            Action::Enable => "enable",
            Action::Disable => "disable",
            Action::Delete => "delete",
        }
    }
}

#[derive(Debug)]
pub struct Planned {
    action: Action,
    id: Option<String>,
    schedule: Option<String>,
    prompt: Option<String>,
}

fn invalid(m: impl Into<String>) -> Plan<Planned> {
    Plan::Done(ToolOutcome::error(ToolStatus::Invalid, m))
}

fn nonempty(v: Option<String>) -> Option<String> {
    v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

/// Check a call's arguments and name its approval (pure).
pub fn plan_call(a: ScheduleArgs) -> Plan<Planned> {
    let action = match Action::parse(a.action.as_deref()) {
        Ok(x) => x,
        Err(e) => return invalid(e),
    };
    let p = Planned {
        action,
        id: nonempty(a.schedule_id),
        schedule: nonempty(a.schedule),
        prompt: nonempty(a.prompt),
    };
    match p.action {
        Action::List => return Plan::run(Gate::UnlessDenied, p),
        Action::Create if p.schedule.is_none() || p.prompt.is_none() => {
            return invalid("create needs schedule (a cron expression) and prompt")
        }
        Action::Update | Action::Enable | Action::Disable | Action::Delete if p.id.is_none() => {
            return invalid(format!("{} needs schedule_id", p.action.as_str()))
        }
        Action::Update if p.schedule.is_none() && p.prompt.is_none() => {
            return invalid("update needs schedule or prompt")
        }
        _ => {}
    }
    let prompt_preview: Option<String> = p.prompt.as_ref().map(|s| s.chars().take(200).collect());
    let approval = Approval {
        baseline: ApprovalPolicy::Prompt,
        risk: Risk::High,
        action: format!("schedule.{}", p.action.as_str()),
        target: p.id.clone().unwrap_or_default(),
        reason: format!(
            "{} schedule {}",
            p.action.as_str(),
            p.id.as_deref().unwrap_or("(new)")
        ),
        preview: json!({"schedule_id": p.id, "schedule": p.schedule, "prompt_preview": prompt_preview}),
        session_cacheable: true,
    };
    Plan::run(Gate::one(approval), p)
}

fn failure(e: ScheduleError) -> ToolOutcome {
    match e {
        ScheduleError::Invalid(m) => ToolOutcome::error(ToolStatus::Invalid, m),
        ScheduleError::NotFound(id) => {
            ToolOutcome::error(ToolStatus::NotFound, format!("schedule not found: {id}"))
        }
        ScheduleError::Limit(m) => ToolOutcome::error(ToolStatus::Denied, m),
        ScheduleError::Store(e) => {
            tracing::error!(error = %e, "schedule_manage failed");
            ToolOutcome::error(ToolStatus::Failed, "the schedule store failed; try again")
        }
    }
}

fn runtime() -> Value {
    json!({
        "runtime_timezone": "UTC",
        "runtime_timezone_source": "server",
        "runtime_local_now": crate::time::rfc3339(crate::time::now_ms()),
    })
}

fn with_runtime(mut v: Value) -> Value {
    if let (Some(o), Value::Object(r)) = (v.as_object_mut(), runtime()) {
        o.extend(r);
    }
    v
}

/// `schedule_manage`.
pub struct ScheduleManage;

impl Tool for ScheduleManage {
    type Args = ScheduleArgs;
    type Prepared = Planned;

    fn plan(_: &ToolEnv<'_>, a: ScheduleArgs) -> Plan<Planned> {
        plan_call(a)
    }

    async fn execute(env: &ToolEnv<'_>, p: Planned) -> ToolOutcome {
        let Some(schedules) = env.host.schedules() else {
            return ToolOutcome::error(
                ToolStatus::Failed,
                "schedules are not available on this host",
            );
        };
        let scope = &env.ctx.scope;
        let id = p.id.as_deref().unwrap_or_default();
        let done = match p.action {
            Action::List => {
                return match schedules.list(scope).await {
                    Ok(rows) => ToolOutcome::ok_json(with_runtime(json!({
                        "success": true,
                        "count": rows.len(),
                        "schedules": rows.iter().map(view).collect::<Vec<_>>(),
                    }))),
                    Err(e) => failure(e),
                }
            }
            Action::Create => {
                schedules
                    .create(
                        scope,
                        env.ctx.session_id,
                        env.catalog.core_id(),
                        p.id.as_deref(),
                        p.schedule.as_deref().unwrap_or_default(),
                        p.prompt.as_deref().unwrap_or_default(),
                    )
                    .await
            }
            Action::Update => {
                schedules
                    .update(scope, id, p.schedule.as_deref(), p.prompt.as_deref())
                    .await
            }
            Action::Enable => schedules.set_enabled(scope, id, true).await,
            Action::Disable => schedules.set_enabled(scope, id, false).await,
            Action::Delete => schedules.delete(scope, id).await,
        };
        match done {
            Ok(row) => ToolOutcome::ok_json(with_runtime(json!({
                "success": true,
                "action": p.action.as_str(),
                "schedule": view(&row),
                "executionStarted": true,
            }))),
            Err(e) => failure(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> ScheduleArgs {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn list_asks_nothing_and_changes_are_approved() {
        match plan_call(args(json!({}))) {
            Plan::Run { gate, prepared } => {
                assert_eq!(gate, Gate::UnlessDenied);
                assert_eq!(prepared.action, Action::List);
            }
            Plan::Done(o) => panic!("{o:?}"),
        }
        match plan_call(args(
            json!({"action": "create", "schedule": "0 9 * * *", "prompt": "p"}),
        )) {
            Plan::Run {
                gate: Gate::Ask(a), ..
            } => {
                assert_eq!(a.len(), 1);
                assert_eq!(a[0].action, "schedule.create");
                assert_eq!(a[0].risk, Risk::High);
                assert_eq!(a[0].baseline, ApprovalPolicy::Prompt);
            }
            other => panic!("{other:?}"),
        }
        for (action, want) in [("pause", "schedule.disable"), ("resume", "schedule.enable")] {
            match plan_call(args(json!({"action": action, "schedule_id": "d"}))) {
                Plan::Run {
                    gate: Gate::Ask(a), ..
                } => assert_eq!((a[0].action.as_str(), a[0].target.as_str()), (want, "d")),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn missing_arguments_are_invalid() {
        for (v, needle) in [
            (json!({"action": "create", "prompt": "p"}), "create needs"),
            (
                json!({"action": "create", "schedule": "0 9 * * *", "prompt": " "}),
                "create needs",
            ),
            (
                json!({"action": "update", "schedule_id": "d"}),
                "update needs schedule or prompt",
            ),
            (json!({"action": "delete"}), "delete needs schedule_id"),
            (
                json!({"action": "enable", "schedule_id": " "}),
                "enable needs schedule_id",
            ),
            (json!({"action": "explode"}), "unsupported"),
        ] {
            match plan_call(args(v.clone())) {
                Plan::Done(o) => {
                    assert_eq!(o.status, ToolStatus::Invalid);
                    assert!(
                        o.content.as_str().unwrap().contains(needle),
                        "{v}: {:?}",
                        o.content
                    );
                }
                Plan::Run { .. } => panic!("{v} planned"),
            }
        }
    }
}

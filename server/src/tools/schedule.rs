//! `schedule_manage`: list, create, update, enable, disable and delete the
//! schedule files of the call's core ([`crate::tasks::schedules`]). `list`
//! asks nothing (unless the policy denies the tool); every change is
//! approved first (risk high, action `schedule.<action>`) and written as a
//! new core revision (the path `skill_manage` takes), and the caller is
//! recorded as the schedule's owner (who its runs run as).

use serde::Deserialize;
use serde_json::{json, Value};

use super::contract::{Approval, Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};
use crate::core::edit::{CoreEditError, Edit};
use crate::core::path::CoreFilePath;
use crate::core::schedule_file::{render, ScheduleFile};
use crate::policy::approval_policy::{ApprovalPolicy, Risk};
use crate::tasks::schedules::{
    file_rel, slug, unique_name, valid_name, view, ScheduleError, Schedules,
};

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
        ScheduleError::Core(m) => ToolOutcome::error(ToolStatus::Failed, m),
        ScheduleError::Store(e) => {
            tracing::error!(error = %e, "schedule_manage failed");
            ToolOutcome::error(ToolStatus::Failed, "the schedule store failed; try again")
        }
    }
}

fn edit_failure(e: CoreEditError) -> ToolOutcome {
    match e {
        CoreEditError::WouldBreak(e) => ToolOutcome::error(
            ToolStatus::Failed,
            format!("schedule change rolled back because core load failed: {e}"),
        ),
        CoreEditError::NotFound => ToolOutcome::error(ToolStatus::NotFound, "core not found"),
        CoreEditError::Conflict(m) | CoreEditError::Invalid(m) => {
            ToolOutcome::error(ToolStatus::Denied, m)
        }
        CoreEditError::TooLarge(m) | CoreEditError::Forbidden(m) => {
            ToolOutcome::error(ToolStatus::Invalid, m)
        }
        e @ (CoreEditError::GatesFailed(_) | CoreEditError::McpReviewRequired { .. }) => {
            ToolOutcome::error(ToolStatus::Failed, e.to_string())
        }
        CoreEditError::Internal(e) => {
            tracing::error!(error = %e, "schedule_manage could not change the core");
            ToolOutcome::error(ToolStatus::Failed, "the core could not be changed")
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

/// What a change writes: the file's new content and whether due times up
/// to now are settled (a new or resumed schedule), or its deletion.
enum Write {
    Put {
        file: Box<ScheduleFile>,
        settle: bool,
    },
    Delete,
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
        let Some(schedules) = env.host.tasks().schedules() else {
            return ToolOutcome::error(
                ToolStatus::Failed,
                "schedules are not available on this host",
            );
        };
        match execute(env, &schedules, p).await {
            Ok(o) => o,
            Err(e) => failure(e),
        }
    }
}

async fn execute(
    env: &ToolEnv<'_>,
    schedules: &Schedules,
    p: Planned,
) -> Result<ToolOutcome, ScheduleError> {
    let scope = &env.ctx.scope;
    let tenant = scope.tenant();
    let core = env.ctx.core.id.to_string();
    // The live files, not the turn's revision: a change earlier in this
    // turn shows.
    let all = schedules.list_core(tenant, &core).await?;
    if p.action == Action::List {
        return Ok(ToolOutcome::ok_json(with_runtime(json!({
            "success": true,
            "count": all.len(),
            "schedules": all.iter().map(view).collect::<Vec<_>>(),
        }))));
    }
    let (id, write) = if p.action == Action::Create {
        let spec = p.schedule.as_deref().unwrap_or_default();
        let prompt = p.prompt.as_deref().unwrap_or_default();
        schedules.check_spec(spec)?;
        let file = ScheduleFile::new(spec, prompt)?;
        let taken: Vec<String> = all.iter().map(|l| l.schedule_id.clone()).collect();
        let id = match p.id.as_deref() {
            Some(n) if !valid_name(n) => {
                return Err(ScheduleError::Invalid(format!(
                    "schedule_id {:?} must match ^[A-Za-z0-9][A-Za-z0-9_-]{{0,63}}$",
                    n.chars().take(80).collect::<String>()
                )))
            }
            Some(n) if taken.iter().any(|t| t == n) => {
                return Err(ScheduleError::Invalid(format!(
                    "schedule_id {n:?} already exists; use action=update"
                )))
            }
            Some(n) => n.to_owned(),
            None => unique_name(&slug(&file.prompt), &taken),
        };
        let max = schedules.settings().max_per_tenant;
        if schedules.owned_count(tenant).await? >= max {
            return Err(ScheduleError::Limit(format!(
                "schedule limit reached: tenant {} has {max} schedules (--max-schedules-tenant)",
                tenant.as_str()
            )));
        }
        (
            id,
            Write::Put {
                file: Box::new(file),
                settle: true,
            },
        )
    } else {
        let id = p.id.clone().unwrap_or_default();
        let found = all.iter().find(|l| l.schedule_id == id);
        // Another principal's schedule looks missing.
        let Some(found) = found.filter(|l| {
            l.owner
                .as_ref()
                .is_none_or(|o| o.principal_id == scope.principal().as_str())
        }) else {
            return Err(ScheduleError::NotFound(id.chars().take(80).collect()));
        };
        let write = match (&p.action, &found.file) {
            (Action::Delete, _) => Write::Delete,
            (_, Err(e)) => {
                return Err(ScheduleError::Invalid(format!(
                    "schedule {id} is unreadable ({e}); delete it and create it again"
                )))
            }
            (Action::Update, Ok(f)) => {
                let mut file = f.clone();
                let mut settle = found.owner.is_none();
                if let Some(s) = p.schedule.as_deref() {
                    if s.trim() != file.schedule {
                        schedules.check_spec(s)?;
                        file.schedule = s.trim().to_owned();
                        settle = true;
                    }
                }
                if let Some(pr) = p.prompt.as_deref() {
                    file.prompt = pr.to_owned();
                }
                Write::Put {
                    file: Box::new(file.validated()?),
                    settle,
                }
            }
            (Action::Enable | Action::Disable, Ok(f)) => {
                let mut file = f.clone();
                let on = p.action == Action::Enable;
                // Due times while paused never run.
                let settle = on && (!f.enabled || found.owner.is_none());
                file.enabled = on;
                Write::Put {
                    file: Box::new(file),
                    settle,
                }
            }
            // Answered above.
            (Action::List | Action::Create, _) => {
                return Err(ScheduleError::Invalid("unsupported action".into()))
            }
        };
        (id, write)
    };
    // A file written elsewhere may run more often than this host allows;
    // it runs only once it passes like a new one.
    if let Write::Put { file, .. } = &write {
        if file.enabled {
            schedules.check_spec(&file.schedule)?;
        }
    }
    let view_now = schedules.live(tenant, &core).await?;
    let rel = match file_rel(&env.ctx.core.dir, &view_now.schedules_root, &id) {
        Ok(r) => r,
        Err(e) => return Err(ScheduleError::Invalid(e.to_string())),
    };
    let path = match CoreFilePath::parse(&rel) {
        Ok(p) => p,
        Err(e) => return Ok(ToolOutcome::error(ToolStatus::Denied, e.0)),
    };
    let edit = match &write {
        Write::Put { file, .. } => Edit::Put(render(file).into_bytes()),
        Write::Delete => Edit::Delete,
    };
    let message = format!("schedule_manage {} {id}", p.action.as_str());
    let change = match env
        .host
        .cores()
        .change_core(env.ctx, vec![(path, edit)], message)
        .await
    {
        Ok(c) => c,
        Err(e) => return Ok(edit_failure(e)),
    };
    match &write {
        Write::Put { file, settle } => {
            let owned = all
                .iter()
                .find(|l| l.schedule_id == id)
                .and_then(|l| l.owner.as_ref())
                .is_some();
            schedules
                .own(
                    scope,
                    env.ctx.session_id,
                    &core,
                    &id,
                    file,
                    *settle || !owned,
                )
                .await?;
        }
        Write::Delete => schedules.forget(tenant, &core, &id).await?,
    }
    let after = schedules.list_core(tenant, &core).await?;
    let shown = after
        .iter()
        .find(|l| l.schedule_id == id)
        .map(view)
        .unwrap_or_else(|| json!({"schedule_id": id, "core_id": core}));
    Ok(ToolOutcome::ok_json(with_runtime(json!({
        "success": true,
        "action": p.action.as_str(),
        "schedule": shown,
        "path": rel,
        "revision": change.revision,
        "effective_next_turn": true,
        "executionStarted": true,
    }))))
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

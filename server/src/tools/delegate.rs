//! `delegate_task`: start a child agent as a background task (kind
//! `agent.spawn`) in a child session of the same principal. The plan checks
//! what needs no I/O (goal, core id, `agents.spawn:<core>`, modes, depth,
//! the tool request's shape); execute checks the per-turn and per-session
//! child caps, resolves the tools and slots against the child core, creates
//! the child session with its lineage and queues the task. `background`
//! (default) answers with the task id; foreground waits (bounded) and
//! answers with the child's output. Decisions live in
//! [`crate::tasks::children`].

use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};

use super::contract::{lenient_int, Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};
use crate::error::Error;
use crate::ids::CoreId;
use crate::tasks::children::{self, Lineage};
use crate::tasks::{StartError, StartOptions, TaskOutcome, TaskStatus};

/// A foreground wait without `timeout_seconds`.
pub const DEFAULT_FOREGROUND_WAIT: Duration = Duration::from_secs(300);
/// The longest foreground wait.
pub const MAX_FOREGROUND_WAIT: Duration = Duration::from_secs(600);
/// Characters of the child's output a foreground call returns.
pub const OUTPUT_CHARS: usize = 8_000;
/// Said in every result until the slot pipeline runs.
pub const SLOTS_NOTE: &str = "the child's turns run these input/output slots of its core \
     (base slots always), and its bootstrap slots when use_bootstrap is true";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelegateArgs {
    pub goal: String,
    #[serde(default)]
    pub core_id: Option<String>,
    #[serde(default)]
    pub context_mode: Option<String>,
    #[serde(default)]
    pub notify_policy: Option<String>,
    #[serde(default, deserialize_with = "lenient_int")]
    pub max_depth: Option<i64>,
    #[serde(default)]
    pub tools: Option<Value>,
    #[serde(default)]
    pub input_slots: Option<Value>,
    #[serde(default)]
    pub output_slots: Option<Value>,
    #[serde(default)]
    pub use_bootstrap: Option<bool>,
    #[serde(default)]
    pub background: Option<bool>,
    #[serde(default, deserialize_with = "lenient_int")]
    pub timeout_seconds: Option<i64>,
}

/// A planned delegation.
#[derive(Debug)]
pub struct Planned {
    goal: String,
    core: String,
    fork: bool,
    notify: bool,
    max_depth: u32,
    tools: Option<Vec<String>>,
    input_slots: Option<Value>,
    output_slots: Option<Value>,
    use_bootstrap: bool,
    background: bool,
    wait: Duration,
}

fn invalid(message: impl Into<String>) -> Plan<Planned> {
    Plan::Done(ToolOutcome::error(ToolStatus::Invalid, message))
}

/// The foreground wait for `timeout_seconds`.
pub fn foreground_wait(timeout_seconds: Option<i64>) -> Duration {
    match timeout_seconds {
        None => DEFAULT_FOREGROUND_WAIT,
        Some(s) if s <= 0 => DEFAULT_FOREGROUND_WAIT,
        Some(s) => {
            Duration::from_secs(u64::try_from(s).unwrap_or(u64::MAX)).min(MAX_FOREGROUND_WAIT)
        }
    }
}

/// `delegate_task`.
pub struct DelegateTask;

impl Tool for DelegateTask {
    type Args = DelegateArgs;
    type Prepared = Planned;

    fn plan(env: &ToolEnv<'_>, a: DelegateArgs) -> Plan<Planned> {
        let goal = a.goal.trim();
        if goal.is_empty() {
            return invalid("goal is required");
        }
        if goal.chars().count() > children::MAX_GOAL_CHARS {
            return invalid(format!(
                "goal is longer than {} characters",
                children::MAX_GOAL_CHARS
            ));
        }
        let core = a
            .core_id
            .as_deref()
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .unwrap_or(env.catalog.core_id())
            .to_owned();
        if let Err(e) = CoreId::parse(&core) {
            return invalid(format!("core_id: {e}"));
        }
        // The registry has no capability for this tool; the handler's gate is
        // `agents.spawn:<core>` on the delegating core's grants.
        let cap = format!("agents.spawn:{core}");
        if !env.catalog.grants().allows(&cap, None, &[], false) {
            return Plan::Done(ToolOutcome::error(
                ToolStatus::Denied,
                crate::policy::capabilities::denial_message(&cap, None),
            ));
        }
        let fork = match a.context_mode.as_deref().map(str::trim) {
            None | Some("isolated") => false,
            Some("fork") => true,
            Some(other) => return invalid(format!("unsupported context_mode: {other}")),
        };
        let notify = match a.notify_policy.as_deref().map(str::trim) {
            None | Some("return_to_parent") => true,
            Some("silent") => false,
            Some(other) => return invalid(format!("unsupported notify_policy: {other}")),
        };
        let caller = &env.ctx.delegation;
        let max_depth = children::effective_max_depth(a.max_depth, caller);
        if let Some(denial) = children::depth_denial(caller, max_depth) {
            return Plan::Done(ToolOutcome::error(ToolStatus::Denied, denial));
        }
        let tools = match children::normalize_tools(a.tools.as_ref()) {
            Ok(t) => t,
            Err(e) => return invalid(e),
        };
        Plan::run(
            Gate::PerCall,
            Planned {
                goal: goal.to_owned(),
                core,
                fork,
                notify,
                max_depth,
                tools,
                input_slots: a.input_slots,
                output_slots: a.output_slots,
                use_bootstrap: a.use_bootstrap.unwrap_or(false),
                background: a.background.unwrap_or(true),
                wait: foreground_wait(a.timeout_seconds),
            },
        )
    }

    async fn execute(env: &ToolEnv<'_>, p: Planned) -> ToolOutcome {
        let Some(runner) = env.host.tasks().children() else {
            return ToolOutcome::error(
                ToolStatus::Failed,
                "child agents are not available on this host",
            );
        };
        let ctx = env.ctx;
        let scope = ctx.scope.clone();
        // Per-turn and per-session caps (the queue adds the tenant's).
        let siblings = match env.host.tasks().session_tasks(ctx).await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::error!(error = %e, "could not list the session's tasks");
                return ToolOutcome::error(
                    ToolStatus::Failed,
                    "the task service failed; try again",
                );
            }
        };
        let turn = ctx.turn_id.to_string();
        let spawned: Vec<_> = siblings
            .iter()
            .filter(|t| t.kind == children::KIND)
            .collect();
        let of_turn = spawned
            .iter()
            .filter(|t| {
                t.metadata
                    .as_deref()
                    .and_then(|m| serde_json::from_str::<Value>(m).ok())
                    .is_some_and(|m| m["parent_turn_id"] == turn.as_str())
            })
            .count();
        let active = spawned.iter().filter(|t| t.status.is_active()).count();
        if let Some(denial) = children::count_denial(of_turn, active) {
            return ToolOutcome::error(ToolStatus::Denied, denial);
        }
        let child = match runner
            .child_core(scope.clone(), p.core.clone(), {
                // The child is bounded by this core and everything above it.
                let mut above = vec![env.catalog.core_id().to_owned()];
                above.extend(ctx.delegation.ancestor_cores.iter().cloned());
                above
            })
            .await
        {
            Ok(c) => c,
            Err(e) => return ToolOutcome::error(ToolStatus::Invalid, e),
        };
        let resolved = (
            children::resolve_tools(p.tools.as_deref(), &child.tools),
            children::resolve_slots("input", p.input_slots.as_ref(), &child.input_slots),
            children::resolve_slots("output", p.output_slots.as_ref(), &child.output_slots),
        );
        let (tools, input_slots, output_slots) = match resolved {
            (Ok(t), Ok(i), Ok(o)) => (t, i, o),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
                return ToolOutcome::error(ToolStatus::Invalid, e)
            }
        };
        let fork = if p.fork {
            Some(runner.fork_context(scope.clone(), ctx.session_id).await)
        } else {
            None
        };
        let input = children::child_input(&p.goal, fork.as_deref());
        let depth = ctx.delegation.depth + 1;
        let lineage = Lineage {
            parent_session: ctx.session_id,
            parent_core: env.catalog.core_id().to_owned(),
            depth,
            max_depth: p.max_depth,
            tools: Some(tools.clone()),
            workspace_run: None,
            input_slots: input_slots.clone(),
            output_slots: output_slots.clone(),
            use_bootstrap: p.use_bootstrap,
        };
        let child_session = match runner
            .create_child(scope.clone(), p.core.clone(), lineage)
            .await
        {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(error = %e, "could not create a child session");
                return ToolOutcome::error(
                    ToolStatus::Failed,
                    "could not create the child session",
                );
            }
        };
        let requested = json!({
            "core_id": p.core, "context_mode": if p.fork { "fork" } else { "isolated" },
            "notify_policy": if p.notify { "return_to_parent" } else { "silent" },
            "max_depth": p.max_depth, "tools": env.args.get("tools"),
            "input_slots": env.args.get("input_slots"), "output_slots": env.args.get("output_slots"),
            "use_bootstrap": p.use_bootstrap, "background": p.background,
        });
        let metadata = children::metadata(
            &requested,
            &p.core,
            child_session,
            ctx.session_id,
            &turn,
            depth,
            p.max_depth,
            &tools,
            &input_slots,
            &output_slots,
        );
        let summary: String = format!("child agent {}: {}", p.core, p.goal)
            .chars()
            .take(300)
            .collect();
        let job_scope = scope.clone();
        let job: super::host::TaskJob = Box::new(move |h| {
            Box::pin(async move {
                let end = runner
                    .run_child(job_scope, child_session, input, h.cancel.clone())
                    .await;
                child_outcome(end, child_session)
            })
        });
        let options = StartOptions {
            notify_on_complete: p.background && p.notify,
            metadata: Some(metadata),
        };
        let task_id = match env
            .host
            .tasks()
            .start_task(env, children::KIND, summary, options, job)
            .await
        {
            Ok(id) => id,
            Err(StartError::Limit(why)) => return ToolOutcome::error(ToolStatus::Denied, why),
            Err(StartError::Host(e)) => {
                tracing::error!(error = %e, "could not start a child agent task");
                return ToolOutcome::error(ToolStatus::Failed, "could not start the child agent");
            }
        };
        let mut payload = json!({
            "task_id": task_id,
            "core_id": p.core,
            "child_session_id": child_session.to_string(),
            "delegation_depth": depth,
            "tools": tools,
            "input_slots": input_slots,
            "output_slots": output_slots,
            "use_bootstrap": p.use_bootstrap,
            "slots_note": SLOTS_NOTE,
        });
        if p.background {
            payload["status"] = json!("queued");
            payload["background"] = json!(true);
            return ToolOutcome::ok_json(payload);
        }
        let waited = tokio::select! {
            r = env.host.tasks().wait_task(&scope, &task_id, p.wait) => r,
            _ = ctx.cancel.cancelled() => {
                // The parent turn ends: its foreground child ends with it.
                let _ = env.host.tasks().cancel_task(&scope, &task_id).await;
                return ToolOutcome::error(ToolStatus::Cancelled, "the turn was cancelled");
            }
        };
        match waited {
            Ok((row, timed_out)) => {
                payload["status"] = json!(row.status);
                payload["background"] = json!(false);
                if timed_out {
                    payload["timed_out"] = json!(true);
                    payload["note"] = json!(
                        "the child is still running as a background task; use yield_until or task_status"
                    );
                } else {
                    let content = row
                        .result
                        .as_deref()
                        .and_then(|r| serde_json::from_str::<Value>(r).ok())
                        .and_then(|r| r.get("content").and_then(Value::as_str).map(str::to_owned))
                        .unwrap_or_default();
                    payload["output"] = json!(bounded(&content, OUTPUT_CHARS));
                }
                let status = if row.status == TaskStatus::Succeeded || timed_out {
                    ToolStatus::Succeeded
                } else {
                    ToolStatus::Failed
                };
                ToolOutcome {
                    status,
                    content: payload.clone(),
                    data: payload,
                }
            }
            Err(Error::NotFound) => {
                ToolOutcome::error(ToolStatus::Failed, "the child agent task disappeared")
            }
            Err(e) => {
                tracing::error!(error = %e, "waiting for a child agent failed");
                ToolOutcome::error(ToolStatus::Failed, "the task service failed; try again")
            }
        }
    }
}

fn bounded(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(3)).collect();
    out.push_str("...");
    out
}

/// The task outcome of a child turn's end.
pub fn child_outcome(
    end: Result<children::ChildEnd, String>,
    child_session: crate::ids::SessionId,
) -> TaskOutcome {
    use crate::wire::TurnStatus;
    match end {
        Ok(end) => {
            let status = match end.status {
                TurnStatus::Completed => TaskStatus::Succeeded,
                TurnStatus::Cancelled => TaskStatus::Cancelled,
                _ => TaskStatus::Failed,
            };
            let content = match (&end.error, end.output.is_empty()) {
                (Some(e), true) => format!("child agent {}: {e}", end.status),
                _ => end.output,
            };
            TaskOutcome {
                status,
                result: json!({
                    "content": content,
                    "turn_status": end.status,
                    "child_session_id": child_session.to_string(),
                }),
            }
        }
        Err(e) => TaskOutcome {
            status: TaskStatus::Failed,
            result: json!({
                "content": format!("child agent failed: {e}"),
                "child_session_id": child_session.to_string(),
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::testing::{fixture, plan};

    fn planned(grants: &[&str], args: Value) -> Result<Planned, ToolOutcome> {
        let f = fixture(grants);
        plan::<DelegateTask>(&f, "delegate_task", args).map(|(_, p)| p)
    }

    #[test]
    fn the_plan_needs_a_goal_and_the_spawn_grant_of_the_core() {
        let e = planned(&["agents.spawn:core"], json!({"goal": "  "})).unwrap_err();
        assert_eq!(e.status, ToolStatus::Invalid);
        // The default core is the calling core ("core" in the fixture).
        let e = planned(&["agents.spawn:other"], json!({"goal": "g"})).unwrap_err();
        assert_eq!(e.status, ToolStatus::Denied, "{:?}", e.content);
        assert!(e.content.as_str().unwrap().contains("agents.spawn:core"));
        let p = planned(
            &["agents.spawn:other"],
            json!({"goal": "g", "core_id": "other"}),
        )
        .unwrap();
        assert_eq!(p.core, "other");
        let e = planned(&["agents.spawn:*"], json!({"goal": "g", "core_id": "../x"})).unwrap_err();
        assert_eq!(e.status, ToolStatus::Invalid);
        let long = "x".repeat(children::MAX_GOAL_CHARS + 1);
        assert!(planned(&["agents.spawn:core"], json!({"goal": long})).is_err());
    }

    #[test]
    fn the_plan_checks_modes_tools_and_depth() {
        let g = &["agents.spawn:core"];
        let p = planned(g, json!({"goal": "g"})).unwrap();
        assert!(!p.fork && p.notify && p.background && p.tools.is_none());
        assert_eq!(p.max_depth, children::DEFAULT_MAX_DEPTH);
        assert_eq!(p.wait, DEFAULT_FOREGROUND_WAIT);
        let p = planned(
            g,
            json!({"goal": "g", "context_mode": "fork", "notify_policy": "silent",
                   "tools": ["read_file"], "background": false, "timeout_seconds": 5}),
        )
        .unwrap();
        assert!(p.fork && !p.notify && !p.background);
        assert_eq!(p.tools, Some(vec!["read_file".to_owned()]));
        assert_eq!(p.wait, Duration::from_secs(5));
        for (args, needle) in [
            (
                json!({"goal": "g", "context_mode": "shared"}),
                "context_mode",
            ),
            (
                json!({"goal": "g", "notify_policy": "loud"}),
                "notify_policy",
            ),
            (
                json!({"goal": "g", "tools": ["a", "a"]}),
                "duplicate tool id",
            ),
            (json!({"goal": "g", "tool_policy": {}}), "tool_policy"),
        ] {
            let e = planned(g, args.clone()).unwrap_err();
            assert_eq!(e.status, ToolStatus::Invalid, "{args}");
            assert!(
                e.content.as_str().unwrap().contains(needle),
                "{args}: {:?}",
                e.content
            );
        }
        // max_depth below the current depth refuses.
        let e = planned(g, json!({"goal": "g", "max_depth": -1})).unwrap_err();
        assert_eq!(e.status, ToolStatus::Denied);
    }

    #[test]
    fn a_child_at_its_limit_cannot_delegate() {
        let mut f = fixture(&["agents.spawn:core"]);
        f.ctx.delegation = children::Delegation {
            depth: 2,
            max_depth: 2,
            tools: None,
            parent_core: Some("core".into()),
            ..Default::default()
        };
        let e = plan::<DelegateTask>(&f, "delegate_task", json!({"goal": "g", "max_depth": 9}))
            .unwrap_err();
        assert_eq!(e.status, ToolStatus::Denied);
        assert!(e.content.as_str().unwrap().contains("depth limit"));
        f.ctx.delegation.depth = 1;
        let (_, p) =
            plan::<DelegateTask>(&f, "delegate_task", json!({"goal": "g", "max_depth": 9}))
                .unwrap();
        assert_eq!(p.max_depth, 2);
    }

    #[test]
    fn foreground_waits_are_bounded() {
        assert_eq!(foreground_wait(None), DEFAULT_FOREGROUND_WAIT);
        assert_eq!(foreground_wait(Some(0)), DEFAULT_FOREGROUND_WAIT);
        assert_eq!(foreground_wait(Some(-3)), DEFAULT_FOREGROUND_WAIT);
        assert_eq!(foreground_wait(Some(12)), Duration::from_secs(12));
        assert_eq!(foreground_wait(Some(i64::MAX)), MAX_FOREGROUND_WAIT);
    }

    #[test]
    fn a_child_turn_end_maps_to_a_task_outcome() {
        use crate::wire::TurnStatus;
        let s = crate::ids::SessionId::new();
        let ok = child_outcome(
            Ok(children::ChildEnd {
                status: TurnStatus::Completed,
                output: "done".into(),
                error: None,
            }),
            s,
        );
        assert_eq!(ok.status, TaskStatus::Succeeded);
        assert_eq!(ok.result["content"], "done");
        let failed = child_outcome(
            Ok(children::ChildEnd {
                status: TurnStatus::Failed,
                output: String::new(),
                error: Some("provider".into()),
            }),
            s,
        );
        assert_eq!(failed.status, TaskStatus::Failed);
        assert!(failed.result["content"]
            .as_str()
            .unwrap()
            .contains("provider"));
        let cancelled = child_outcome(
            Ok(children::ChildEnd {
                status: TurnStatus::Cancelled,
                output: String::new(),
                error: None,
            }),
            s,
        );
        assert_eq!(cancelled.status, TaskStatus::Cancelled);
        let err = child_outcome(Err("boom".into()), s);
        assert_eq!(err.status, TaskStatus::Failed);
        assert_eq!(err.result["child_session_id"], s.to_string());
    }
}

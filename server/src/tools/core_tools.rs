//! The core's own version tools. `rollback_core` makes a new live revision
//! with an earlier live tree (default `previous`): high risk, always asked
//! (the rule names the action and target, so a grant for it covers nothing
//! else), and the version store is touched only after the approval. The
//! new revision applies from the next turn.
//!
//! `evolve_core` drives an evolve run ([`crate::core::runs`]) with four
//! actions, each high risk and asked under its own rule action
//! (`evolve.start.foreground|background`, `evolve.review`,
//! `evolve.promote`, `evolve.discard`; target: the core), so an
//! "allow for the session" covers later calls of that action only. `start`
//! makes the run's worktree and runs the shipped `evolver` core on it as a
//! child agent: a task of kind `evolver.run` in a child session whose
//! workspace is the worktree (its lineage names the run), with the
//! evolver's tools narrowed by this core's grants, unable to delegate
//! further. `background` answers with the task id at once; otherwise the
//! call waits for the child (bounded) and answers with its summary. The
//! run stays for review either way. `promote` of a run that changes MCP
//! declarations needs the `mcp_review_token` of its last review.

use serde::Deserialize;
use serde_json::json;

use super::contract::{Approval, Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};
use crate::core::edit::CoreEditError;
use crate::core::path::RevisionSpec;
use crate::core::runs::{RunDone, RunOp};
use crate::policy::approval_policy::{ApprovalPolicy, Risk};

pub struct RollbackCore;

#[derive(Debug, Deserialize)]
pub struct RollbackArgs {
    #[serde(default)]
    pub target: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
}

#[derive(Debug)]
pub struct RollbackPlan {
    pub target: RevisionSpec,
    pub shown: String,
    pub reason: Option<String>,
}

/// Pure: the target (`previous` when absent or blank) and a bounded reason.
pub fn plan_rollback(args: RollbackArgs) -> Result<RollbackPlan, String> {
    let shown = args
        .target
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .unwrap_or("previous")
        .to_owned();
    let target = RevisionSpec::parse(&shown).map_err(|e| e.0)?;
    if target == RevisionSpec::Live {
        return Err("rolling back to `live` changes nothing; name `previous` or a commit".into());
    }
    let reason = args
        .reason
        .map(|r| r.trim().chars().take(400).collect::<String>())
        .filter(|r| !r.is_empty());
    Ok(RollbackPlan {
        target,
        shown,
        reason,
    })
}

impl Tool for RollbackCore {
    type Args = RollbackArgs;
    type Prepared = RollbackPlan;

    fn plan(env: &ToolEnv<'_>, args: RollbackArgs) -> Plan<RollbackPlan> {
        let p = match plan_rollback(args) {
            Ok(p) => p,
            Err(m) => return Plan::Done(ToolOutcome::error(ToolStatus::Invalid, m)),
        };
        let core = env.ctx.core.id.to_string();
        let approval = Approval {
            baseline: ApprovalPolicy::Prompt,
            risk: Risk::High,
            action: "rollback".into(),
            target: p.shown.clone(),
            reason: format!("roll core {core} back to {}", p.shown),
            preview: json!({"core": core, "target": p.shown, "reason": p.reason}),
            session_cacheable: true,
        };
        Plan::run(Gate::one(approval), p)
    }

    async fn execute(env: &ToolEnv<'_>, p: RollbackPlan) -> ToolOutcome {
        match env
            .host
            .cores()
            .rollback_core(env.ctx, p.target, p.reason)
            .await
        {
            Ok(done) => {
                let message = format!(
                    "core {} rolled back to {}; the new revision {} takes effect on the next turn",
                    done.core,
                    &done.restored[..done.restored.len().min(12)],
                    &done.revision[..done.revision.len().min(12)]
                );
                ToolOutcome::ok_text(
                    message.clone(),
                    json!({"success": true, "core": done.core, "revision": done.revision,
                        "previous": done.previous, "restored": done.restored,
                        "cores": done.cores, "effective_next_turn": true, "message": message}),
                )
            }
            Err(CoreEditError::NotFound) => ToolOutcome::error(
                ToolStatus::NotFound,
                format!("no such revision: {}", p.shown),
            ),
            Err(CoreEditError::Invalid(m) | CoreEditError::Conflict(m)) => {
                ToolOutcome::error(ToolStatus::Invalid, m)
            }
            Err(CoreEditError::WouldBreak(m)) => ToolOutcome::error(ToolStatus::Failed, m),
            Err(e @ (CoreEditError::GatesFailed(_) | CoreEditError::McpReviewRequired { .. })) => {
                ToolOutcome::error(ToolStatus::Failed, e.to_string())
            }
            Err(CoreEditError::Forbidden(m) | CoreEditError::TooLarge(m)) => {
                ToolOutcome::error(ToolStatus::Denied, m)
            }
            Err(CoreEditError::Internal(e)) => {
                tracing::error!(error = %e, "rollback_core failed");
                ToolOutcome::error(ToolStatus::Failed, "the core could not be rolled back")
            }
        }
    }
}

/// Said by a `start` on a host without child agents.
pub const EVOLVER_NOTE: &str = "child agents are not available on this host, so the evolver \
     did not run: edit the run's worktree, then call evolve_core review and promote";
/// The core `start` runs on the run's worktree.
pub const EVOLVER_CORE: &str = "evolver";
/// The task kind of the evolver child.
pub const EVOLVER_KIND: &str = "evolver.run";
/// How long a foreground `start` waits for the evolver.
const EVOLVER_WAIT: std::time::Duration = super::delegate::MAX_FOREGROUND_WAIT;

/// Pure: the evolver child's input. A goal written as a fake-model script
/// (`script:[…]`, CONTRACT.md) is the whole input, so tests can play the
/// evolver; any other goal is framed with the run, the target core and
/// what the host expects (paths are relative to the child's workspace,
/// which is the run's worktree).
pub fn evolver_input(run_id: &str, core: &str, goal: &str) -> String {
    if goal
        .trim_start()
        .starts_with(crate::wire::SCRIPT_INPUT_PREFIX)
    {
        return goal.to_owned();
    }
    format!(
        "Evolution run: {run_id}\n\
         Target core: {core}\n\n\
         Goal:\n{goal}\n\n\
         Your workspace is an isolated worktree of this tenant's agents tree; every path \
         is relative to it. The target core is the folder `{core}/`: read \
         `{core}/agent.yaml` and `{core}/agent/pipelines.yaml` first, then the folders \
         the goal touches.\n\
         Edit only files of the cores, keep the change narrow, and never add dependency \
         files, links or build artifacts. Do not commit, promote or roll back: the host \
         reviews this run with its gates and a human promotes it.\n\
         When finished, answer with the changed behaviour, the files you edited, what \
         you checked, and what is left."
    )
}
/// Longest goal or reason kept.
const MAX_TEXT: usize = 2_000;

pub struct EvolveCore;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvolveArgs {
    #[serde(default)]
    pub action: Option<String>,
    #[serde(default)]
    pub goal: Option<String>,
    #[serde(default)]
    pub run_id: Option<String>,
    #[serde(default)]
    pub background: Option<bool>,
    #[serde(default)]
    pub notify_on_complete: Option<bool>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub mcp_review_token: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvolveAction {
    Start {
        goal: String,
        background: bool,
        /// A background evolver's end comes back as a completion turn.
        notify: bool,
    },
    Review {
        run_id: String,
    },
    Promote {
        run_id: String,
        token: Option<String>,
    },
    Discard {
        run_id: String,
    },
}

impl EvolveAction {
    /// The approval rule's action: one per action (and start's mode).
    pub fn rule_action(&self) -> &'static str {
        match self {
            EvolveAction::Start {
                background: false, ..
            } => "evolve.start.foreground",
            EvolveAction::Start {
                background: true, ..
            } => "evolve.start.background",
            EvolveAction::Review { .. } => "evolve.review",
            EvolveAction::Promote { .. } => "evolve.promote",
            EvolveAction::Discard { .. } => "evolve.discard",
        }
    }

    fn run_id(&self) -> Option<&str> {
        match self {
            EvolveAction::Start { .. } => None,
            EvolveAction::Review { run_id }
            | EvolveAction::Promote { run_id, .. }
            | EvolveAction::Discard { run_id } => Some(run_id),
        }
    }
}

#[derive(Debug)]
pub struct EvolvePlan {
    pub action: EvolveAction,
    pub reason: String,
}

fn bounded_text(v: Option<&str>) -> Option<String> {
    v.map(str::trim).filter(|t| !t.is_empty()).map(|t| {
        t.chars()
            .filter(|c| !c.is_control() || *c == '\n')
            .take(MAX_TEXT)
            .collect()
    })
}

/// Pure: the action (default `start`), what it needs, and the reason
/// (default the goal or `evolve <action>`).
pub fn plan_evolve(a: EvolveArgs) -> Result<EvolvePlan, String> {
    let name = a
        .action
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or("start")
        .to_owned();
    let goal = bounded_text(a.goal.as_deref());
    let run_id = || -> Result<String, String> {
        let raw = a.run_id.as_deref().map(str::trim).unwrap_or("");
        if raw.is_empty() {
            return Err(format!("run_id is required for evolve_core {name}"));
        }
        crate::core::gates::check_run_id(raw)
    };
    let action = match name.as_str() {
        "start" => EvolveAction::Start {
            goal: goal
                .clone()
                .ok_or("goal is required for evolve_core start")?,
            background: a.background.unwrap_or(false),
            notify: a.notify_on_complete.unwrap_or(true),
        },
        "review" => EvolveAction::Review { run_id: run_id()? },
        "promote" => EvolveAction::Promote {
            run_id: run_id()?,
            token: a
                .mcp_review_token
                .as_deref()
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(|t| t.chars().take(200).collect()),
        },
        "discard" => EvolveAction::Discard { run_id: run_id()? },
        other => {
            return Err(format!(
                "unsupported evolve_core action: {}",
                other.chars().take(40).collect::<String>()
            ))
        }
    };
    let reason = bounded_text(a.reason.as_deref())
        .or(goal)
        .unwrap_or_else(|| format!("evolve {name}"));
    Ok(EvolvePlan { action, reason })
}

/// A fresh run id: `evolve-<uuid v7 simple>` (time-ordered, unique).
fn new_run_id() -> String {
    format!("evolve-{}", uuid::Uuid::now_v7().simple())
}

fn run_error(e: CoreEditError, run_id: Option<&str>) -> ToolOutcome {
    match e {
        CoreEditError::NotFound => ToolOutcome::error(
            ToolStatus::NotFound,
            format!("no such evolve run: {}", run_id.unwrap_or("?")),
        ),
        CoreEditError::Invalid(m) | CoreEditError::Conflict(m) => {
            ToolOutcome::error(ToolStatus::Invalid, m)
        }
        CoreEditError::WouldBreak(m) => ToolOutcome::error(ToolStatus::Failed, m),
        e @ CoreEditError::GatesFailed(_) => ToolOutcome::error(ToolStatus::Failed, e.to_string()),
        CoreEditError::McpReviewRequired { message, .. } => {
            ToolOutcome::error(ToolStatus::Denied, message)
        }
        CoreEditError::Forbidden(m) | CoreEditError::TooLarge(m) => {
            ToolOutcome::error(ToolStatus::Denied, m)
        }
        CoreEditError::Internal(e) => {
            tracing::error!(error = %e, "evolve_core failed");
            ToolOutcome::error(ToolStatus::Failed, "the evolve run action failed")
        }
    }
}

fn outcome(status: ToolStatus, text: String, payload: serde_json::Value) -> ToolOutcome {
    let mut content = payload.clone();
    content["summary"] = json!(text);
    ToolOutcome {
        status,
        content,
        data: payload,
    }
}

/// Run the evolver core as a child agent on a started run's worktree.
/// The run exists whatever happens here: a child that cannot start is
/// reported, and the run can still be edited, reviewed or discarded.
async fn start_evolver(
    env: &ToolEnv<'_>,
    info: &crate::core::runs::RunInfo,
    mut payload: serde_json::Value,
    background: bool,
    notify: bool,
) -> ToolOutcome {
    use crate::tasks::children::Lineage;
    use crate::tasks::{StartError, StartOptions, TaskStatus};
    let ctx = env.ctx;
    let core = ctx.core.id.to_string();
    let run_id = info.run_id.clone();
    let started = format!("evolve run {run_id} started for core {core}");
    let Some(runner) = env.host.tasks().children() else {
        payload["evolver"] = json!(null);
        payload["note"] = json!(EVOLVER_NOTE);
        return outcome(ToolStatus::Succeeded, started, payload);
    };
    let failed = |mut payload: serde_json::Value, why: String| {
        payload["evolver"] = json!(null);
        payload["error"] = json!(why.clone());
        outcome(
            ToolStatus::Failed,
            format!("evolve run {run_id} was made but its evolver did not start: {why}"),
            payload,
        )
    };
    let scope = ctx.scope.clone();
    let child = match runner
        .child_core(scope.clone(), EVOLVER_CORE.into(), {
            // Bounded by this core and everything above it, like any child.
            let mut above = vec![core.clone()];
            above.extend(ctx.delegation.ancestor_cores.iter().cloned());
            above
        })
        .await
    {
        Ok(c) => c,
        Err(e) => return failed(payload, e),
    };
    // One level below this session, and no further: the evolver edits, it
    // does not delegate.
    let depth = ctx.delegation.depth + 1;
    let lineage = Lineage {
        parent_session: ctx.session_id,
        parent_core: core.clone(),
        depth,
        max_depth: depth,
        tools: Some(child.tools.clone()),
        workspace_run: Some(run_id.clone()),
        // The evolver runs as its core is written: its whole pipeline.
        input_slots: child.input_slots.clone(),
        output_slots: child.output_slots.clone(),
        use_bootstrap: true,
    };
    let session = match runner
        .create_child(scope.clone(), EVOLVER_CORE.into(), lineage)
        .await
    {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "could not create the evolver's session");
            return failed(payload, "could not create the evolver's session".into());
        }
    };
    let input = evolver_input(&run_id, &core, &info.goal);
    let metadata = json!({"run_id": run_id, "target_core_id": core,
        "child_core_id": EVOLVER_CORE, "child_session_id": session.to_string(),
        "parent_session_id": ctx.session_id.to_string(),
        "parent_turn_id": ctx.turn_id.to_string(), "delegation_depth": depth,
        "child_agent_tools": {"resolved": child.tools}});
    let summary: String = format!("evolver for {core}: {}", info.goal)
        .chars()
        .take(300)
        .collect();
    let job_scope = scope.clone();
    let job: super::host::TaskJob = Box::new(move |h| {
        Box::pin(async move {
            let end = runner
                .run_child(job_scope, session, input, h.cancel.clone())
                .await;
            super::delegate::child_outcome(end, session)
        })
    });
    let options = StartOptions {
        notify_on_complete: background && notify,
        metadata: Some(metadata),
    };
    let task_id = match env
        .host
        .tasks()
        .start_task(env, EVOLVER_KIND, summary, options, job)
        .await
    {
        Ok(id) => id,
        Err(StartError::Limit(why)) => return failed(payload, why),
        Err(StartError::Host(e)) => {
            tracing::error!(error = %e, "could not start the evolver task");
            return failed(payload, "could not start the evolver task".into());
        }
    };
    let evolver = crate::core::runs::EvolverRef {
        task_id: task_id.clone(),
        session_id: session.to_string(),
    };
    let recorded = env
        .host
        .cores()
        .evolve_run(
            ctx,
            RunOp::Evolver {
                run_id: run_id.clone(),
                evolver: evolver.clone(),
            },
        )
        .await;
    if let Err(e) = recorded {
        // The child runs anyway; only the run's listing misses it.
        tracing::warn!(error = %e, run = %run_id, "could not record the evolver of a run");
    }
    payload["evolver"] = json!(evolver);
    payload["task_id"] = json!(task_id);
    if background {
        payload["status"] = json!("queued");
        return outcome(ToolStatus::Succeeded, started, payload);
    }
    let waited = tokio::select! {
        r = env.host.tasks().wait_task(&scope, &task_id, EVOLVER_WAIT) => r,
        _ = ctx.cancel.cancelled() => {
            // The turn ends: its foreground evolver ends with it.
            let _ = env.host.tasks().cancel_task(&scope, &task_id).await;
            return ToolOutcome::error(ToolStatus::Cancelled, "the turn was cancelled");
        }
    };
    match waited {
        Ok((row, timed_out)) => {
            payload["status"] = json!(row.status);
            if timed_out {
                payload["timed_out"] = json!(true);
                payload["note"] = json!(
                    "the evolver is still running as a background task; use yield_until or task_status"
                );
                return outcome(ToolStatus::Succeeded, started, payload);
            }
            let output = row
                .result
                .as_deref()
                .and_then(|r| serde_json::from_str::<serde_json::Value>(r).ok())
                .and_then(|r| r.get("content").and_then(|c| c.as_str()).map(str::to_owned))
                .unwrap_or_default();
            payload["output"] = json!(output
                .chars()
                .take(super::delegate::OUTPUT_CHARS)
                .collect::<String>());
            if row.status == TaskStatus::Succeeded {
                outcome(
                    ToolStatus::Succeeded,
                    format!("{started}; the evolver finished: review the run next"),
                    payload,
                )
            } else {
                outcome(
                    ToolStatus::Failed,
                    format!(
                        "{started}; the evolver ended {}: the run stays for review or discard",
                        row.status
                    ),
                    payload,
                )
            }
        }
        Err(e) => {
            tracing::error!(error = %e, "waiting for the evolver failed");
            failed(payload, "the task service failed while waiting".into())
        }
    }
}

impl Tool for EvolveCore {
    type Args = EvolveArgs;
    type Prepared = EvolvePlan;

    fn plan(env: &ToolEnv<'_>, args: EvolveArgs) -> Plan<EvolvePlan> {
        let p = match plan_evolve(args) {
            Ok(p) => p,
            Err(m) => return Plan::Done(ToolOutcome::error(ToolStatus::Invalid, m)),
        };
        let core = env.ctx.core.id.to_string();
        let what = match &p.action {
            EvolveAction::Start { background, .. } => format!(
                "start a {} evolve run for core {core}",
                if *background {
                    "background"
                } else {
                    "foreground"
                }
            ),
            EvolveAction::Review { run_id } => {
                format!("review evolve run {run_id} for core {core}")
            }
            EvolveAction::Promote { run_id, .. } => {
                format!("promote evolve run {run_id} to live for core {core}")
            }
            EvolveAction::Discard { run_id } => {
                format!("discard evolve run {run_id} for core {core}")
            }
        };
        let token = match &p.action {
            EvolveAction::Promote { token, .. } => token.clone(),
            _ => None,
        };
        let goal = match &p.action {
            EvolveAction::Start { goal, .. } => Some(goal.clone()),
            _ => None,
        };
        let approval = Approval {
            baseline: ApprovalPolicy::Prompt,
            risk: Risk::High,
            action: p.action.rule_action().into(),
            // The core, not the run: an allowed action stays allowed for
            // later runs of this session, and never covers another action.
            target: core.clone(),
            reason: what,
            preview: json!({"core": core, "action": p.action.rule_action(),
                "run_id": p.action.run_id(), "goal": goal, "reason": p.reason,
                "mcp_review_token": token}),
            session_cacheable: true,
        };
        Plan::run(Gate::one(approval), p)
    }

    async fn execute(env: &ToolEnv<'_>, p: EvolvePlan) -> ToolOutcome {
        let core = env.ctx.core.id.to_string();
        let (op, run_id) = match p.action.clone() {
            EvolveAction::Start { goal, .. } => {
                let id = new_run_id();
                (
                    RunOp::Start {
                        run_id: id.clone(),
                        goal,
                        core: core.clone(),
                    },
                    id,
                )
            }
            EvolveAction::Review { run_id } => (
                RunOp::Review {
                    run_id: run_id.clone(),
                },
                run_id,
            ),
            EvolveAction::Promote { run_id, token } => (
                RunOp::Promote {
                    run_id: run_id.clone(),
                    mcp_token: token,
                },
                run_id,
            ),
            EvolveAction::Discard { run_id } => (
                RunOp::Discard {
                    run_id: run_id.clone(),
                },
                run_id,
            ),
        };
        let done = match env.host.cores().evolve_run(env.ctx, op).await {
            Ok(d) => d,
            Err(e) => return run_error(e, Some(&run_id)),
        };
        match done {
            RunDone::Started { info, worktree } => {
                let (background, notify) = match p.action {
                    EvolveAction::Start {
                        background, notify, ..
                    } => (background, notify),
                    _ => (false, false),
                };
                let payload = json!({"run_id": info.run_id, "target_core_id": core,
                    "goal": info.goal, "base": info.base,
                    "agents_root": worktree.to_string_lossy(), "background": background});
                start_evolver(env, &info, payload, background, notify).await
            }
            RunDone::Recorded => ToolOutcome::error(ToolStatus::Failed, "unexpected evolve result"),
            RunDone::Reviewed(r) => {
                let passed = r.report.passed;
                let mut payload = json!({"run_id": run_id, "target_core_id": core,
                    "proposal_revision": r.commit, "changed_files": r.changed,
                    "gates": r.report, "passed": passed, "reason": p.reason});
                if let Some(m) = &r.mcp {
                    payload["mcp_security_review"] = json!(m);
                    payload["manual_review_required"] = json!(true);
                    // Not `…_token`: such a field is redacted from every view.
                    payload["mcp_review"] = json!(m.id);
                }
                let text = if passed {
                    format!("evolve review {run_id}: passed")
                } else {
                    format!(
                        "evolve review {run_id}: failed ({})",
                        r.report.failures().join("; ")
                    )
                };
                let status = if passed {
                    ToolStatus::Succeeded
                } else {
                    ToolStatus::Failed
                };
                outcome(status, text, payload)
            }
            RunDone::Promoted(d) => outcome(
                ToolStatus::Succeeded,
                format!(
                    "evolve promoted {run_id}@{}; it takes effect on the next turn",
                    &d.revision[..d.revision.len().min(12)]
                ),
                json!({"run_id": run_id, "target_core_id": core, "promoted": true,
                    "new_revision": d.revision, "previous": d.previous, "cores": d.cores,
                    "effective_next_turn": true}),
            ),
            RunDone::Discarded(true) => outcome(
                ToolStatus::Succeeded,
                format!("discarded evolve run {run_id}"),
                json!({"run_id": run_id, "discarded": true}),
            ),
            RunDone::Discarded(false) => run_error(CoreEditError::NotFound, Some(&run_id)),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::testing::{fixture, plan};

    fn args(v: serde_json::Value) -> RollbackArgs {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn targets_default_to_previous_and_only_name_revisions() {
        for (v, want) in [
            (json!({}), RevisionSpec::Previous),
            (json!({"target": " "}), RevisionSpec::Previous),
            (json!({"target": "previous"}), RevisionSpec::Previous),
            (
                json!({"target": "ABCDEF12"}),
                RevisionSpec::Commit("abcdef12".into()),
            ),
        ] {
            assert_eq!(plan_rollback(args(v.clone())).unwrap().target, want, "{v}");
        }
        for t in [
            "live",
            "HEAD~1",
            "--output=/tmp/x",
            "main",
            "abc",
            "refs/demiurge/live",
            "@{1}",
        ] {
            assert!(plan_rollback(args(json!({"target": t}))).is_err(), "{t}");
        }
        let p = plan_rollback(args(json!({"reason": format!("  {}  ", "r".repeat(900))}))).unwrap();
        assert_eq!(p.reason.unwrap().len(), 400);
        assert!(plan_rollback(args(json!({"reason": "  "})))
            .unwrap()
            .reason
            .is_none());
    }

    #[test]
    fn the_evolver_input_frames_the_goal_unless_it_is_a_script() {
        let text = evolver_input("evolve-1", "assistant", "be brief");
        for want in [
            "Evolution run: evolve-1",
            "Target core: assistant",
            "Goal:\nbe brief",
            "`assistant/agent.yaml`",
            "Do not commit, promote or roll back",
        ] {
            assert!(text.contains(want), "{want}: {text}");
        }
        let script = " script:[{\"content\": \"x\"}]";
        assert_eq!(evolver_input("r", "c", script), script);
    }

    #[test]
    fn start_takes_its_mode_and_notification() {
        let p = plan_evolve(
            serde_json::from_value(json!({"goal": "g", "background": true,
                "notify_on_complete": false}))
            .unwrap(),
        )
        .unwrap();
        assert_eq!(
            p.action,
            EvolveAction::Start {
                goal: "g".into(),
                background: true,
                notify: false
            }
        );
        assert_eq!(p.action.rule_action(), "evolve.start.background");
        let p = plan_evolve(serde_json::from_value(json!({"goal": "g"})).unwrap()).unwrap();
        assert!(matches!(
            p.action,
            EvolveAction::Start {
                background: false,
                notify: true,
                ..
            }
        ));
    }

    #[test]
    fn the_plan_asks_a_high_risk_prompt_for_its_own_action() {
        let f = fixture(&["tool.call:rollback_core"]);
        let (gate, p) =
            plan::<RollbackCore>(&f, "rollback_core", json!({"reason": "bad tool"})).unwrap();
        let Gate::Ask(asks) = gate else {
            panic!("no approval")
        };
        assert_eq!(asks.len(), 1);
        assert_eq!(
            (
                asks[0].baseline,
                asks[0].risk,
                asks[0].action.as_str(),
                asks[0].target.as_str()
            ),
            (ApprovalPolicy::Prompt, Risk::High, "rollback", "previous")
        );
        assert_eq!(p.reason.as_deref(), Some("bad tool"));
        let o = plan::<RollbackCore>(&f, "rollback_core", json!({"target": "HEAD^"})).unwrap_err();
        assert_eq!(o.status, ToolStatus::Invalid);
    }
}

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
//! makes the run's worktree; the shipped evolver core is not started as a
//! child agent on this host yet (the result says so): the worktree is
//! edited by an operator, then reviewed and promoted. `promote` of a run
//! that changes MCP declarations needs the `mcp_review_token` of its last
//! review.

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
        match env.host.rollback_core(env.ctx, p.target, p.reason).await {
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

/// Said by every `start` until the evolver child runs in a run's worktree.
pub const EVOLVER_NOTE: &str = "the evolver child agent is not started on this host yet: \
     edit the run's worktree, then call evolve_core review and promote";
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
        let done = match env.host.evolve_run(env.ctx, op).await {
            Ok(d) => d,
            Err(e) => return run_error(e, Some(&run_id)),
        };
        match done {
            RunDone::Started { info, worktree } => {
                let background = matches!(
                    p.action,
                    EvolveAction::Start {
                        background: true,
                        ..
                    }
                );
                outcome(
                    ToolStatus::Succeeded,
                    format!("evolve run {run_id} started for core {core}"),
                    json!({"run_id": info.run_id, "target_core_id": core, "goal": info.goal,
                        "base": info.base, "agents_root": worktree.to_string_lossy(),
                        "background": background, "evolver": null, "note": EVOLVER_NOTE}),
                )
            }
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
    use crate::tools::contract::testing::{fixture, plan};

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

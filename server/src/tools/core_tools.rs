//! The core's own version tools. `rollback_core` makes a new live revision
//! with an earlier live tree (default `previous`): high risk, always asked
//! (the rule names the action and target, so a grant for it covers nothing
//! else), and the version store is touched only after the approval. The
//! new revision applies from the next turn.

use serde::Deserialize;
use serde_json::json;

use super::contract::{Approval, Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};
use crate::core::edit::CoreEditError;
use crate::core::path::RevisionSpec;
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

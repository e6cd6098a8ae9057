//! `session_search`: the model's view of its own session's history. Ordinary
//! authority reads only the session it is bound to; any other id answers
//! exactly like a missing one.

use serde::Deserialize;
use serde_json::{json, Value};

use super::contract::{lenient_int, Approval, Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};
use crate::policy::approval_policy::{ApprovalPolicy, Risk};

const DEFAULT_LIMIT: i64 = 10;
const MAX_LIMIT: i64 = 50;

/// `session_search`.
pub struct SessionSearch;

#[derive(Debug, Deserialize)]
pub struct SearchArgs {
    #[serde(default)]
    pub query: Option<String>,
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default, deserialize_with = "lenient_int")]
    pub limit: Option<i64>,
}

#[derive(Debug)]
pub struct PlannedSearch {
    pub query: String,
    pub limit: u32,
}

impl Tool for SessionSearch {
    type Args = SearchArgs;
    type Prepared = PlannedSearch;

    fn plan(env: &ToolEnv<'_>, args: SearchArgs) -> Plan<PlannedSearch> {
        // Always `session.read`, whatever capability the core's metadata names.
        if !env
            .catalog
            .grants()
            .allows("session.read", None, &[], false)
        {
            return Plan::Done(ToolOutcome::error(
                ToolStatus::Denied,
                crate::policy::capabilities::denial_message("session.read", None),
            ));
        }
        let current = env.ctx.session_id.as_str();
        let wanted = args
            .session_id
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .unwrap_or(current);
        if wanted != current {
            return Plan::Done(ToolOutcome::error(
                ToolStatus::NotFound,
                format!("session not found: {wanted}"),
            ));
        }
        let query = args.query.unwrap_or_default().trim().to_owned();
        let limit = match args.limit {
            Some(n) if n > 0 => n.min(MAX_LIMIT),
            _ => DEFAULT_LIMIT,
        } as u32;
        let preview =
            json!({"session_id": current, "query_chars": query.chars().count(), "limit": limit});
        let approval = Approval {
            baseline: ApprovalPolicy::Prompt,
            risk: Risk::Medium,
            action: "search".into(),
            target: current.to_owned(),
            reason: "read this session's history".into(),
            preview,
            session_cacheable: true,
        };
        Plan::run(Gate::one(approval), PlannedSearch { query, limit })
    }

    async fn execute(env: &ToolEnv<'_>, p: PlannedSearch) -> ToolOutcome {
        let ctx = env.ctx;
        match env
            .host
            .search_history(&ctx.scope, &ctx.session_id, &p.query, p.limit)
            .await
        {
            Ok(hits) => {
                let results: Vec<Value> = hits
                    .iter()
                    .map(|h| {
                        json!({"session_id": h.session_id, "message_id": h.message_id, "turn_id": h.turn_id,
                            "role": h.role, "created_at": crate::time::rfc3339(h.created_at), "content": h.content})
                    })
                    .collect();
                ToolOutcome::ok_json(json!({"results": results, "count": results.len()}))
            }
            Err(e) => ToolOutcome::error(ToolStatus::Failed, format!("history search failed: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::SessionSearch;
    use crate::policy::approval_policy::{ApprovalPolicy, Risk};
    use crate::tools::contract::testing::{fixture, plan};
    use crate::tools::contract::{Approval, Gate, ToolStatus};

    #[test]
    fn asks_to_read_only_this_session() {
        let f = fixture(&[]);
        let o = plan::<SessionSearch>(&f, "session_search", json!({"query": "x"})).unwrap_err();
        assert_eq!(o.status, ToolStatus::Denied, "session.read is required");
        let f = fixture(&["session.read"]);
        let o = plan::<SessionSearch>(&f, "session_search", json!({"session_id": "other"}))
            .unwrap_err();
        assert_eq!(o.status, ToolStatus::NotFound);
        let (gate, p) = plan::<SessionSearch>(
            &f,
            "session_search",
            json!({"session_id": " s1 ", "query": " deploy ", "limit": 500}),
        )
        .unwrap();
        assert_eq!((p.query.as_str(), p.limit), ("deploy", 50));
        assert_eq!(
            gate,
            Gate::one(Approval {
                baseline: ApprovalPolicy::Prompt,
                risk: Risk::Medium,
                action: "search".into(),
                target: "s1".into(),
                reason: "read this session's history".into(),
                preview: json!({"session_id": "s1", "query_chars": 6, "limit": 50}),
                session_cacheable: true,
            })
        );
    }
}

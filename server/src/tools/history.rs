//! `session_search`: the model's view of history, in the original's three
//! modes (one session's messages, browsing sessions, full text), always
//! inside the caller's reach: its own sessions. A session outside the reach
//! answers exactly like a missing one. What reach and mode mean is decided
//! in [`crate::history`].

use serde::Deserialize;
use serde_json::{json, Value};

use super::contract::{lenient_int, Approval, Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};
use crate::history::{Page, Reach, Request, SearchError};
use crate::policy::approval_policy::{ApprovalPolicy, Risk};

const DEFAULT_LIMIT: i64 = 10;
const MAX_LIMIT: i64 = 50;
/// Deepest page offset a model may ask for.
const MAX_OFFSET: i64 = 10_000;

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
    /// Where the page starts (a previous answer's `next_offset`).
    #[serde(default, deserialize_with = "lenient_int")]
    pub offset: Option<i64>,
}

#[derive(Debug)]
pub struct PlannedSearch {
    pub reach: Reach,
    pub request: Request,
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
        let limit = match args.limit {
            Some(n) if n > 0 => n.min(MAX_LIMIT),
            _ => DEFAULT_LIMIT,
        } as u32;
        let offset = args.offset.unwrap_or(0).clamp(0, MAX_OFFSET) as u32;
        let request = match Request::new(
            args.query.as_deref(),
            args.session_id.as_deref(),
            limit,
            offset,
        ) {
            Ok(r) => r,
            Err(e) => return Plan::Done(ToolOutcome::error(ToolStatus::Invalid, e.to_string())),
        };
        let target = match &request.mode {
            crate::history::Mode::Session { session, .. } => crate::history::clip(session, 80),
            _ => "owned_sessions".to_owned(),
        };
        let query_chars = match &request.mode {
            crate::history::Mode::Session { query, .. }
            | crate::history::Mode::FullText { query } => query.chars().count(),
            crate::history::Mode::Browse => 0,
        };
        let preview =
            json!({"target": target, "query_chars": query_chars, "limit": limit, "offset": offset});
        let approval = Approval {
            baseline: ApprovalPolicy::Prompt,
            risk: Risk::Medium,
            action: "session.search".into(),
            target,
            reason: "search session history".into(),
            preview,
            session_cacheable: true,
        };
        let reach = if env.ctx.bound_session {
            Reach::bound(&env.ctx.scope, &env.ctx.session_id.to_string())
        } else {
            Reach::owned(&env.ctx.scope)
        };
        Plan::run(Gate::one(approval), PlannedSearch { reach, request })
    }

    async fn execute(env: &ToolEnv<'_>, p: PlannedSearch) -> ToolOutcome {
        match env
            .host
            .history()
            .search_history(&p.reach, &p.request)
            .await
        {
            Ok(page) => ToolOutcome::ok_json(page_json(page)),
            Err(SearchError::SessionNotFound(id)) => {
                ToolOutcome::error(ToolStatus::NotFound, format!("session not found: {id}"))
            }
            Err(SearchError::Refused(e)) => ToolOutcome::error(ToolStatus::Invalid, e.to_string()),
            Err(SearchError::Store(e)) => {
                tracing::warn!(error = %e, "history search failed");
                ToolOutcome::error(ToolStatus::Failed, "history search failed")
            }
        }
    }
}

/// The original's shapes: `{results, count}` for messages, `{sessions}` for
/// browsing; `next_offset` when another page follows.
pub fn page_json(page: Page) -> Value {
    match page {
        Page::Hits { hits, next_offset } => {
            let results: Vec<Value> = hits
                .iter()
                .map(|h| {
                    json!({"session_id": h.session_id, "message_id": h.message_id, "turn_id": h.turn_id,
                        "role": h.role, "created_at": crate::time::rfc3339(h.created_at), "content": h.content})
                })
                .collect();
            let mut out = json!({"count": results.len(), "results": results});
            if let Some(n) = next_offset {
                out["next_offset"] = json!(n);
            }
            out
        }
        Page::Sessions {
            sessions,
            next_offset,
        } => {
            let sessions: Vec<Value> = sessions
                .iter()
                .map(|s| {
                    json!({"session_id": s.session_id, "updated_at": crate::time::rfc3339(s.updated_at),
                        "title": s.title, "preview": s.preview, "message_count": s.message_count})
                })
                .collect();
            let mut out = json!({"sessions": sessions});
            if let Some(n) = next_offset {
                out["next_offset"] = json!(n);
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::SessionSearch;
    use crate::history::{Mode, Reach};
    use crate::policy::approval_policy::{ApprovalPolicy, Risk};
    use crate::tools::contract::{Approval, Gate, ToolStatus};
    use crate::tools::testing::{fixture, plan};

    #[test]
    fn asks_to_read_the_callers_own_history() {
        let f = fixture(&[]);
        let o = plan::<SessionSearch>(&f, "session_search", json!({"query": "x"})).unwrap_err();
        assert_eq!(o.status, ToolStatus::Denied, "session.read is required");
        let f = fixture(&["session.read"]);
        let (gate, p) = plan::<SessionSearch>(
            &f,
            "session_search",
            json!({"session_id": " s1 ", "query": " deploy ", "limit": 500, "offset": -3}),
        )
        .unwrap();
        assert_eq!(
            p.request.mode,
            Mode::Session {
                session: "s1".into(),
                query: "deploy".into()
            }
        );
        assert_eq!((p.request.limit, p.request.offset), (50, 0));
        assert!(
            matches!(p.reach, Reach::Owned { .. }),
            "never wider than the caller"
        );
        assert_eq!(
            gate,
            Gate::one(Approval {
                baseline: ApprovalPolicy::Prompt,
                risk: Risk::Medium,
                action: "session.search".into(),
                target: "s1".into(),
                reason: "search session history".into(),
                preview: json!({"target": "s1", "query_chars": 6, "limit": 50, "offset": 0}),
                session_cacheable: true,
            })
        );
    }

    #[test]
    fn browse_and_full_text_target_owned_sessions() {
        let f = fixture(&["session.read"]);
        let (gate, p) = plan::<SessionSearch>(&f, "session_search", json!({})).unwrap();
        assert_eq!((p.request.mode, p.request.limit), (Mode::Browse, 10));
        let Gate::Ask(asked) = gate else {
            panic!("an approval is asked")
        };
        assert_eq!(asked[0].target, "owned_sessions");
        let (_, p) =
            plan::<SessionSearch>(&f, "session_search", json!({"query": "role", "offset": 20}))
                .unwrap();
        assert_eq!(
            (p.request.mode, p.request.offset),
            (
                Mode::FullText {
                    query: "role".into()
                },
                20
            )
        );
        let long = "x".repeat(201);
        let o = plan::<SessionSearch>(&f, "session_search", json!({"query": long})).unwrap_err();
        assert_eq!(o.status, ToolStatus::Invalid);
    }
}

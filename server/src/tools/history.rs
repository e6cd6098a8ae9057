//! `session_search`: the model's view of its own session's history. Ordinary
//! authority reads only the session it is bound to; any other id answers
//! exactly like a missing one.

use serde_json::{json, Value};

use super::{arg_i64, arg_str};
use crate::dispatch::{ToolEnv, ToolOutcome, ToolStatus};
use crate::policy::approval_policy::{Policy, Risk};

const DEFAULT_LIMIT: i64 = 10;
const MAX_LIMIT: i64 = 50;

pub async fn session_search(env: &ToolEnv<'_>, args: &Value) -> ToolOutcome {
    // Always `session.read`, whatever capability the core's metadata names.
    if !env
        .catalog
        .grants()
        .allows("session.read", None, &[], false)
    {
        return ToolOutcome::error(
            ToolStatus::Denied,
            crate::policy::capabilities::denial_message("session.read", None),
        );
    }
    let current = env.ctx.session_id.as_str();
    let wanted = arg_str(args, "session_id")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(current);
    if wanted != current {
        return ToolOutcome::error(ToolStatus::NotFound, format!("session not found: {wanted}"));
    }
    let query = arg_str(args, "query").unwrap_or_default().trim().to_owned();
    let limit = match arg_i64(args, "limit") {
        Some(n) if n > 0 => n.min(MAX_LIMIT),
        _ => DEFAULT_LIMIT,
    } as u32;
    let preview =
        json!({"session_id": current, "query_chars": query.chars().count(), "limit": limit});
    if let Some(denied) = env
        .approve(
            Policy::Prompt,
            Risk::Medium,
            "search",
            current,
            "read this session's history".into(),
            preview,
            true,
        )
        .await
    {
        return denied;
    }
    match env.search_history(current, &query, limit).await {
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

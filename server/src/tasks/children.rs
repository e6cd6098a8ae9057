//! Child agents (`delegate_task`): the decisions, and the seam to the turn
//! service that runs them.
//!
//! A child runs as a background task of kind `agent.spawn` in a child
//! session of the same principal (so its approvals go to the same humans),
//! on the child core, with tools only narrowed: the `tools` request picks
//! from the child core's catalog, and a child never exceeds any delegating
//! core above it ([`crate::catalog::ResolvedCatalog::bounded_by`]): its
//! capabilities are the intersection with their grants, and its approval
//! policies are at least as strict as theirs. Its approval requests are
//! mirrored to the streams of the sessions above it (`child_session_id`),
//! where whoever watches the parent can decide them. Its lineage (parent
//! session, depth, the deepest delegation it may reach, its tool list) is
//! stored with the child session before its first turn, so every later turn
//! of that session (completions included) keeps the same limits.
//!
//! Everything here but [`ChildRunner`] is pure and tested beside it.

use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::auth::PrincipalScope;
use crate::ids::SessionId;
/// A session's place in a delegation chain is a stored record: the store
/// owns its types.
pub use crate::store::{Delegation, Lineage, HARD_MAX_DEPTH};

/// The task kind of a child agent.
pub const KIND: &str = "agent.spawn";
/// `max_depth` when the call gives none (or `0`).
pub const DEFAULT_MAX_DEPTH: u32 = 2;
/// Children one parent turn may start.
pub const MAX_CHILDREN_PER_TURN: usize = 4;
/// Child agents of one session queued or running at once.
pub const MAX_ACTIVE_CHILDREN_PER_SESSION: usize = 2;
/// Characters of a goal.
pub const MAX_GOAL_CHARS: usize = 20_000;
/// Parent messages a `fork` child sees, newest last.
pub const FORK_MESSAGES: usize = 12;
/// Characters of the forked transcript.
pub const FORK_CHARS: usize = 12_000;

/// What a child core offers: its tools (after the parent's grants) and its
/// input/output pipeline slots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildCore {
    pub tools: Vec<String>,
    pub input_slots: Vec<String>,
    pub output_slots: Vec<String>,
}

/// How a child turn ended.
#[derive(Debug, Clone)]
pub struct ChildEnd {
    /// `completed`, `failed` or `cancelled`.
    pub status: crate::wire::TurnStatus,
    pub output: String,
    pub error: Option<String>,
}

/// The turn service's side of child agents; set once at start-up.
pub trait ChildRunner: Send + Sync {
    /// The child core as a child of the cores `above` (the delegating
    /// core first, then the cores above it) sees it; `Err` names why it
    /// cannot be used (unknown core, …).
    fn child_core(
        &self,
        scope: PrincipalScope,
        core: String,
        above: Vec<String>,
    ) -> BoxFuture<'static, Result<ChildCore, String>>;

    /// The parent's recent transcript for a `fork` child (bounded).
    fn fork_context(&self, scope: PrincipalScope, session: SessionId)
        -> BoxFuture<'static, String>;

    /// Create the child session (same principal and workspace as the
    /// parent, the child core) with its lineage.
    fn create_child(
        &self,
        scope: PrincipalScope,
        core: String,
        lineage: Lineage,
    ) -> BoxFuture<'static, Result<SessionId, String>>;

    /// Run one turn in the child session until it ends or `cancel` fires
    /// (then the turn is cancelled and its work ended).
    fn run_child(
        &self,
        scope: PrincipalScope,
        session: SessionId,
        input: String,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<ChildEnd, String>>;
}

/// The `tools` request, normalized: `None` is every tool of the child core.
pub fn normalize_tools(raw: Option<&Value>) -> Result<Option<Vec<String>>, String> {
    match raw {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s == "all" => Ok(None),
        Some(Value::String(s)) if s == "none" => Ok(Some(Vec::new())),
        Some(Value::Array(items)) => ids(items, "tools", "tool").map(Some),
        Some(_) => Err("tools must be 'all', 'none', or a list of tool ids".into()),
    }
}

/// Trimmed, non-empty, unique ids of a list argument.
fn ids(items: &[Value], field: &str, what: &str) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let Some(s) = item.as_str() else {
            return Err(format!("{field} items must be strings"));
        };
        let id = s.trim();
        if id.is_empty() {
            return Err(format!("{what} id must not be empty"));
        }
        if out.iter().any(|o| o == id) {
            return Err(format!("duplicate {what} id: {}", shown(id)));
        }
        out.push(id.to_owned());
    }
    Ok(out)
}

fn shown(id: &str) -> String {
    id.chars().take(80).collect()
}

/// The child's tools: `requested` picked from `available` (the child
/// core's tools after the parent's grants), in catalog order. An id the
/// child core does not offer is an error naming it: a request never adds.
pub fn resolve_tools(
    requested: Option<&[String]>,
    available: &[String],
) -> Result<Vec<String>, String> {
    let Some(requested) = requested else {
        return Ok(available.to_vec());
    };
    if let Some(missing) = requested.iter().find(|r| !available.contains(r)) {
        return Err(format!("unknown child tool id: {}", shown(missing)));
    }
    Ok(available
        .iter()
        .filter(|a| requested.contains(a))
        .cloned()
        .collect())
}

/// An input/output slot selection against the child core's pipeline:
/// omitted, `null` or `[]` is the base slot alone (if the pipeline has it),
/// `"all"` the whole pipeline, a list a filter of it (an id outside the
/// pipeline is an error naming it).
pub fn resolve_slots(
    kind: &str,
    raw: Option<&Value>,
    pipeline: &[String],
) -> Result<Vec<String>, String> {
    let field = format!("{kind}_slots");
    let base = format!("base_{kind}");
    let base_only = || {
        pipeline
            .iter()
            .filter(|s| **s == base)
            .cloned()
            .collect::<Vec<_>>()
    };
    match raw {
        None | Some(Value::Null) => Ok(base_only()),
        Some(Value::String(s)) if s == "all" => Ok(pipeline.to_vec()),
        Some(Value::Array(items)) if items.is_empty() => Ok(base_only()),
        Some(Value::Array(items)) => {
            let wanted = ids(items, &field, &format!("{kind} slot"))?;
            if let Some(missing) = wanted.iter().find(|w| !pipeline.contains(w)) {
                return Err(format!(
                    "{kind} slot id is not in the child core's pipeline: {}",
                    shown(missing)
                ));
            }
            Ok(pipeline
                .iter()
                .filter(|p| wanted.contains(p))
                .cloned()
                .collect())
        }
        Some(_) => Err(format!("{field} must be 'all' or a list of slot ids")),
    }
}

/// The deepest chain a new child may reach: the call's `max_depth` (absent
/// or `0`: the default), never above the caller's own limit.
pub fn effective_max_depth(requested: Option<i64>, caller: &Delegation) -> u32 {
    let asked = match requested {
        None | Some(0) => DEFAULT_MAX_DEPTH,
        Some(n) if n < 0 => 0,
        Some(n) => u32::try_from(n).unwrap_or(u32::MAX),
    };
    asked.min(caller.max_depth).min(HARD_MAX_DEPTH)
}

/// Why the caller may not delegate now, if it may not.
pub fn depth_denial(caller: &Delegation, max_depth: u32) -> Option<String> {
    (caller.depth >= max_depth).then(|| {
        format!(
            "delegation depth limit exceeded: this session is at depth {} and max_depth is {max_depth}",
            caller.depth
        )
    })
}

/// Why one more child of this turn/session would be refused, if it would:
/// `of_turn` children this turn started, `active` children of the session
/// queued or running.
pub fn count_denial(of_turn: usize, active: usize) -> Option<String> {
    if of_turn >= MAX_CHILDREN_PER_TURN {
        return Some(format!(
            "delegation limit exceeded: at most {MAX_CHILDREN_PER_TURN} children per turn"
        ));
    }
    if active >= MAX_ACTIVE_CHILDREN_PER_SESSION {
        return Some(format!(
            "delegation limit exceeded: at most {MAX_ACTIVE_CHILDREN_PER_SESSION} child agents \
             of a session run at once; wait for one (yield_until) or cancel one"
        ));
    }
    None
}

/// The child turn's input: the goal, then (for `fork`) the parent's recent
/// transcript. An `isolated` child gets the goal alone.
pub fn child_input(goal: &str, fork_transcript: Option<&str>) -> String {
    match fork_transcript.map(str::trim).filter(|t| !t.is_empty()) {
        None => goal.to_owned(),
        Some(t) => format!("{goal}\n\nParent session fork context:\n{t}"),
    }
}

/// The lines of a forked transcript from stored messages (oldest first):
/// the last [`FORK_MESSAGES`] user/assistant/tool messages, within
/// [`FORK_CHARS`] (the newest kept).
pub fn fork_transcript(messages: &[Value]) -> String {
    let lines: Vec<String> = messages
        .iter()
        .filter_map(|m| {
            let role = m.get("role")?.as_str()?;
            let content = match m.get("content") {
                Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_owned(),
                _ => return None,
            };
            matches!(role, "user" | "assistant" | "tool").then(|| format!("{role}: {content}"))
        })
        .collect();
    let start = lines.len().saturating_sub(FORK_MESSAGES);
    let mut text = lines[start..].join("\n");
    let n = text.chars().count();
    if n > FORK_CHARS {
        text = text.chars().skip(n - FORK_CHARS).collect();
    }
    text
}

/// Operators' view of a child task: the requested controls and what they
/// resolved to.
#[allow(clippy::too_many_arguments)]
pub fn metadata(
    requested: &Value,
    core: &str,
    child_session: SessionId,
    parent_session: SessionId,
    parent_turn: &str,
    depth: u32,
    max_depth: u32,
    tools: &[String],
    input_slots: &[String],
    output_slots: &[String],
) -> Value {
    json!({
        "requested": requested,
        "child_core_id": core,
        "child_session_id": child_session.to_string(),
        "parent_session_id": parent_session.to_string(),
        "parent_turn_id": parent_turn,
        "delegation_depth": depth,
        "max_depth": max_depth,
        "child_agent_tools": {"resolved": tools},
        "child_agent_slots": {"input": input_slots, "output": output_slots,
                              "pipeline_run": false},
    })
}

#[cfg(test)]
#[path = "children_tests.rs"]
mod tests;

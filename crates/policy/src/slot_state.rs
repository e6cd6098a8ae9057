//! Host-managed slot state (`ctx.state.core` / `ctx.state.session`): what a
//! request from the runner means, which capabilities it needs, and how it
//! changes a state document. Pure: the turn checks the grants and the store
//! keeps the documents (`demiurge::store`, `module_state.rs`).
//!
//! A scope's state is one JSON object (`{"schema_version": 1}` when new). A
//! target is a dotted path into it (`preferences.tone`); `get` reads one,
//! `set` replaces it, `merge` updates an object at it, `append` adds to an
//! array at it, `snapshot` returns the whole document. This is the Python
//! project's state contract; what it leaves open (empty segments, sizes) is
//! refused here with a message the slot can act on.

use serde_json::{Map, Value};

/// Longest target, in bytes.
pub const MAX_TARGET_BYTES: usize = 200;
/// Most dotted segments in a target.
pub const MAX_SEGMENTS: usize = 16;
/// Largest state document of one scope, serialised.
pub const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// Whose state a request reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The Agent Core's, shared by every session of the tenant on that core.
    Core,
    /// The current session's.
    Session,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Core => "core",
            Scope::Session => "session",
        }
    }
}

/// What a request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Get,
    Set,
    Merge,
    Append,
    Snapshot,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Get => "get",
            Action::Set => "set",
            Action::Merge => "merge",
            Action::Append => "append",
            Action::Snapshot => "snapshot",
        }
    }

    /// Whether it changes the document.
    pub fn writes(self) -> bool {
        matches!(self, Action::Set | Action::Merge | Action::Append)
    }
}

/// A request as the runner sent it, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub scope: Scope,
    pub action: Action,
    /// The dotted target (empty for `snapshot`).
    pub target: String,
    /// `get`'s default, or the value written.
    pub value: Value,
}

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// The request or the change is malformed (the slot sees a `ValueError`).
    #[error("{0}")]
    Invalid(String),
    /// The host could not read or keep the state.
    #[error("{0}")]
    Unavailable(String),
}

fn invalid(msg: impl Into<String>) -> StateError {
    StateError::Invalid(msg.into())
}

/// Check a target: dotted, non-empty segments, bounded, no control characters.
pub fn parse_target(target: &str) -> Result<Vec<&str>, StateError> {
    if target.is_empty() {
        return Err(invalid("a state target is required"));
    }
    if target.len() > MAX_TARGET_BYTES {
        return Err(invalid(format!(
            "a state target is at most {MAX_TARGET_BYTES} bytes"
        )));
    }
    if target.chars().any(char::is_control) {
        return Err(invalid("a state target cannot contain control characters"));
    }
    let parts: Vec<&str> = target.split('.').collect();
    if parts.iter().any(|p| p.trim().is_empty()) {
        return Err(invalid(format!(
            "state target {target:?} has an empty segment"
        )));
    }
    if parts.len() > MAX_SEGMENTS {
        return Err(invalid(format!(
            "a state target has at most {MAX_SEGMENTS} segments"
        )));
    }
    Ok(parts)
}

/// Parse one request from the runner's fields.
pub fn parse_request(
    scope: &str,
    action: &str,
    target: &str,
    value: Value,
) -> Result<Request, StateError> {
    let scope = match scope {
        "core" => Scope::Core,
        "session" => Scope::Session,
        other => return Err(invalid(format!("unknown state scope {other:?}"))),
    };
    let action = match action {
        "get" => Action::Get,
        "set" => Action::Set,
        "merge" => Action::Merge,
        "append" => Action::Append,
        "snapshot" => Action::Snapshot,
        other => return Err(invalid(format!("unknown state operation {other:?}"))),
    };
    if action == Action::Snapshot {
        return Ok(Request {
            scope,
            action,
            target: String::new(),
            value: Value::Null,
        });
    }
    parse_target(target)?;
    if action == Action::Merge && !value.is_object() {
        return Err(invalid("merge requires an object value"));
    }
    Ok(Request {
        scope,
        action,
        target: target.to_owned(),
        value,
    })
}

impl Request {
    /// Which document it reads or writes: `core`, or `session:<id>` of
    /// the current `session`.
    pub fn document_key(&self, session: &str) -> String {
        match self.scope {
            Scope::Core => "core".to_owned(),
            Scope::Session => format!("session:{session}"),
        }
    }
}

/// The capabilities that allow `req`, most specific first: the targeted
/// grant (`state.session.write:draft_count`) then the scope's
/// (`state.session.write`). Either one is enough.
pub fn capabilities(req: &Request) -> Vec<String> {
    let access = if req.action.writes() { "write" } else { "read" };
    let generic = format!("state.{}.{access}", req.scope.as_str());
    if req.target.is_empty() {
        vec![generic]
    } else {
        vec![format!("{generic}:{}", req.target), generic]
    }
}

/// The document of a scope that has none yet.
pub fn empty_document() -> Value {
    let mut m = Map::new();
    m.insert("schema_version".into(), Value::from(1));
    Value::Object(m)
}

/// The value at `target` in `doc`, or `None` where the path does not lead
/// to one.
pub fn read_target<'a>(doc: &'a Value, target: &str) -> Option<&'a Value> {
    let mut cursor = doc;
    for part in target.split('.') {
        cursor = cursor.as_object()?.get(part)?;
    }
    Some(cursor)
}

/// Apply a write to `doc` (an object); on error `doc` is unchanged.
/// Returns the value now at the target.
pub fn apply(doc: &mut Value, req: &Request) -> Result<Value, StateError> {
    let parts = parse_target(&req.target)?;
    let mut next = doc.clone();
    let mut cursor = next
        .as_object_mut()
        .ok_or_else(|| invalid("the state document is not an object"))?;
    let (leaf, path) = parts
        .split_last()
        .ok_or_else(|| invalid("a state target is required"))?;
    for part in path {
        let entry = cursor
            .entry((*part).to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        cursor = entry
            .as_object_mut()
            .ok_or_else(|| invalid(format!("state target is not an object: {part}")))?;
    }
    match req.action {
        Action::Set => {
            cursor.insert((*leaf).to_owned(), req.value.clone());
        }
        Action::Merge => {
            let patch = req
                .value
                .as_object()
                .ok_or_else(|| invalid("merge requires an object value"))?;
            let current = cursor
                .entry((*leaf).to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            let current = current
                .as_object_mut()
                .ok_or_else(|| invalid("merge requires an object at the target"))?;
            for (k, v) in patch {
                current.insert(k.clone(), v.clone());
            }
        }
        Action::Append => {
            let current = cursor
                .entry((*leaf).to_owned())
                .or_insert_with(|| Value::Array(Vec::new()));
            current
                .as_array_mut()
                .ok_or_else(|| invalid("append requires an array at the target"))?
                .push(req.value.clone());
        }
        Action::Get | Action::Snapshot => {
            return Err(invalid(format!("{} does not write", req.action.as_str())))
        }
    }
    let size = serde_json::to_string(&next).map(|s| s.len()).unwrap_or(0);
    if size > MAX_DOCUMENT_BYTES {
        return Err(invalid(format!(
            "the {} state would be {size} bytes; the limit is {MAX_DOCUMENT_BYTES}",
            req.scope.as_str()
        )));
    }
    let now = read_target(&next, &req.target)
        .cloned()
        .unwrap_or(Value::Null);
    *doc = next;
    Ok(now)
}

/// The answer to a read: `get`'s value (or its default), or the snapshot.
pub fn read(doc: &Value, req: &Request) -> Value {
    match req.action {
        Action::Snapshot => doc.clone(),
        _ => read_target(doc, &req.target)
            .cloned()
            .unwrap_or_else(|| req.value.clone()),
    }
}

#[cfg(test)]
#[path = "slot_state_tests.rs"]
mod tests;

//! The one dispatcher: every tool call, from a model or from
//! `POST …/tool-calls`, goes resolve → validate → adapter → typed status.
//! (Capability checks, approvals and redaction join in the effect runtime.)

use serde::Serialize;
use serde_json::{json, Value};

use crate::catalog::ResolvedCatalog;

/// The typed outcome of a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Succeeded,
    Denied,
    Invalid,
    NotFound,
    Failed,
    TimedOut,
    Cancelled,
    Indeterminate,
}

impl ToolStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolStatus::Succeeded => "succeeded",
            ToolStatus::Denied => "denied",
            ToolStatus::Invalid => "invalid",
            ToolStatus::NotFound => "not_found",
            ToolStatus::Failed => "failed",
            ToolStatus::TimedOut => "timed_out",
            ToolStatus::Cancelled => "cancelled",
            ToolStatus::Indeterminate => "indeterminate",
        }
    }
}

#[derive(Debug, Clone)]
pub struct ToolOutcome {
    pub status: ToolStatus,
    /// What the model sees.
    pub content: Value,
}

impl ToolOutcome {
    pub fn ok(content: Value) -> Self {
        Self {
            status: ToolStatus::Succeeded,
            content,
        }
    }

    pub fn error(status: ToolStatus, message: impl Into<String>) -> Self {
        Self {
            status,
            content: json!({"error": message.into()}),
        }
    }
}

/// Run one call against the turn's catalog.
pub async fn dispatch(catalog: &ResolvedCatalog, name: &str, arguments: &Value) -> ToolOutcome {
    let Some(entry) = catalog.resolve(name) else {
        return ToolOutcome::error(ToolStatus::NotFound, format!("unknown tool {name:?}"));
    };
    if !arguments.is_object() {
        return ToolOutcome::error(ToolStatus::Invalid, "arguments must be a JSON object");
    }
    match entry.spec.name.as_str() {
        "tools_list" => ToolOutcome::ok(json!({"tools": catalog.listing()})),
        other => ToolOutcome::error(
            ToolStatus::NotFound,
            format!("tool {other:?} has no adapter"),
        ),
    }
}

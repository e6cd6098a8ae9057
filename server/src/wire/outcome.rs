//! What a tool adapter (built-in, authored or MCP) hands back to the
//! dispatcher: a typed status, the model's content and operators' data, raw
//! (the dispatcher redacts before anything is shown).

use serde_json::{json, Value};

use super::ToolStatus;

/// Raw adapter result: internal execution data, never shown before redaction.
#[derive(Debug, Clone)]
pub struct ToolOutcome {
    pub status: ToolStatus,
    /// What the model sees by default (text, or JSON for structured tools).
    pub content: Value,
    /// Structured metadata for operators.
    pub data: Value,
}

impl ToolOutcome {
    pub fn ok_text(text: impl Into<String>, data: Value) -> Self {
        Self {
            status: ToolStatus::Succeeded,
            content: Value::String(text.into()),
            data,
        }
    }

    pub fn ok_json(content: Value) -> Self {
        Self {
            status: ToolStatus::Succeeded,
            content,
            data: Value::Null,
        }
    }

    pub fn error(status: ToolStatus, message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            status,
            data: json!({"error": message}),
            content: Value::String(message),
        }
    }
}

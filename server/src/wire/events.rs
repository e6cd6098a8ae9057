//! Every event kind and its payload.
//!
//! An event on the wire (SSE `data:`, a WebSocket text frame, and the
//! `events` table) is `{"seq","session_id","turn_id","type","at","data"}`:
//! [`Event`]. `type` and `data` are one [`EventPayload`], an adjacently
//! tagged enum, so the kind and the shape of its payload cannot disagree.
//! Emitters build a payload struct and hand it to
//! [`crate::events::EventLog::append`]; nobody writes a kind as a string.
//!
//! The payload is serialised through `serde_json::Value`, whose objects keep
//! their keys sorted: the bytes stored and sent are exactly what the earlier
//! `json!` payloads produced (CONTRACT.md, the console and the black-box
//! tests read them). Fields that are absent rather than `null` on the wire
//! say so with `skip_serializing_if`.
//!
//! # Adding an event kind
//!
//! 1. Add a payload struct here (`#[derive(Debug, Clone, PartialEq, Serialize,
//!    Deserialize, ToSchema)]`, `#[schema(as = events::Name)]`, a doc comment
//!    on it and on each field).
//! 2. Add a variant to [`EventPayload`] with `#[serde(rename = "room.what")]`
//!    and its arm in [`EventPayload::kind`].
//! 3. Add an example to `every_kind` in `events_tests.rs` (it checks the
//!    round trip and the kind) and the type to CONTRACT.md's event list.
//! 4. Emit it: `events.append(session, turn, EventPayload::New(NewThing {…}))`.
//!
//! The OpenAPI document picks the new variant up from the derive
//! (`Event`/`EventPayload` schemas; payload schemas are named `events.<Name>`
//! via `#[schema(as = events::Name)]` so they never collide with an API
//! body of the same name); regenerate the snapshot with
//! `UPDATE_OPENAPI=1 cargo test --test api openapi`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::{Decision, Risk, TaskStatus, ToolStatus};
use crate::ids::{SessionId, TurnId};
use crate::policy::approval_authority::Requirement;

/// One event, as an SSE `data:` line and a WebSocket text frame carry it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Event {
    /// Per-session sequence number; only grows.
    #[schema(minimum = 1)]
    pub seq: i64,
    #[schema(value_type = String, format = Uuid)]
    pub session_id: SessionId,
    /// The turn it belongs to, if any (always present, maybe `null`).
    #[schema(value_type = Option<String>, format = Uuid, required = true)]
    pub turn_id: Option<TurnId>,
    /// RFC 3339, UTC.
    #[schema(format = DateTime)]
    pub at: String,
    /// `type` and `data` (the operator view: secrets redacted).
    #[serde(flatten)]
    pub payload: EventPayload,
}

/// What happened (`type`) and its payload (`data`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", content = "data")]
pub enum EventPayload {
    #[serde(rename = "turn.started")]
    TurnStarted(TurnStarted),
    #[serde(rename = "message")]
    Message(Message),
    #[serde(rename = "tool.call")]
    ToolCall(ToolCall),
    #[serde(rename = "tool.output")]
    ToolOutput(ToolOutput),
    #[serde(rename = "tool.result")]
    ToolResult(ToolResult),
    #[serde(rename = "approval.requested")]
    ApprovalRequested(ApprovalRequested),
    #[serde(rename = "approval.resolved")]
    ApprovalResolved(ApprovalResolved),
    #[serde(rename = "clarify.requested")]
    ClarifyRequested(ClarifyRequested),
    #[serde(rename = "clarify.answered")]
    ClarifyAnswered(ClarifyAnswered),
    #[serde(rename = "task.updated")]
    TaskUpdated(TaskUpdated),
    #[serde(rename = "slot.failed")]
    SlotFailed(SlotFailed),
    #[serde(rename = "turn.completed")]
    TurnCompleted(TurnCompleted),
    #[serde(rename = "turn.failed")]
    TurnFailed(TurnFailed),
    #[serde(rename = "turn.cancelled")]
    TurnCancelled(TurnCancelled),
}

impl EventPayload {
    /// The `type` on the wire (and in the `events.type` column).
    pub fn kind(&self) -> &'static str {
        match self {
            EventPayload::TurnStarted(_) => "turn.started",
            EventPayload::Message(_) => "message",
            EventPayload::ToolCall(_) => "tool.call",
            EventPayload::ToolOutput(_) => "tool.output",
            EventPayload::ToolResult(_) => "tool.result",
            EventPayload::ApprovalRequested(_) => "approval.requested",
            EventPayload::ApprovalResolved(_) => "approval.resolved",
            EventPayload::ClarifyRequested(_) => "clarify.requested",
            EventPayload::ClarifyAnswered(_) => "clarify.answered",
            EventPayload::TaskUpdated(_) => "task.updated",
            EventPayload::SlotFailed(_) => "slot.failed",
            EventPayload::TurnCompleted(_) => "turn.completed",
            EventPayload::TurnFailed(_) => "turn.failed",
            EventPayload::TurnCancelled(_) => "turn.cancelled",
        }
    }

    /// The `data` object, as stored and sent (keys sorted).
    pub fn data(&self) -> Result<Value, serde_json::Error> {
        fn to<T: Serialize>(v: &T) -> Result<Value, serde_json::Error> {
            serde_json::to_value(v)
        }
        match self {
            EventPayload::TurnStarted(d) => to(d),
            EventPayload::Message(d) => to(d),
            EventPayload::ToolCall(d) => to(d),
            EventPayload::ToolOutput(d) => to(d),
            EventPayload::ToolResult(d) => to(d),
            EventPayload::ApprovalRequested(d) => to(d),
            EventPayload::ApprovalResolved(d) => to(d),
            EventPayload::ClarifyRequested(d) => to(d),
            EventPayload::ClarifyAnswered(d) => to(d),
            EventPayload::TaskUpdated(d) => to(d),
            EventPayload::SlotFailed(d) => to(d),
            EventPayload::TurnCompleted(d) => to(d),
            EventPayload::TurnFailed(d) => to(d),
            EventPayload::TurnCancelled(d) => to(d),
        }
    }
}

/// A turn began.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = events::TurnStarted)]
pub struct TurnStarted {
    /// The input, secrets redacted.
    pub input: String,
}

/// Text the model said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = events::Message)]
pub struct Message {
    /// Always `assistant` today.
    pub role: String,
    /// The text, secrets redacted.
    pub content: String,
}

/// A tool call is about to be dispatched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = events::ToolCall)]
pub struct ToolCall {
    pub call_id: String,
    pub tool: String,
    /// The arguments, secrets redacted; an `env` overlay shows keys only.
    pub arguments: Value,
}

/// Live output of a running call (at most a 64 KiB preview per call).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = events::ToolOutput)]
pub struct ToolOutput {
    pub call_id: String,
    /// `stdout` or `stderr`.
    pub stream: String,
    /// Redacted text.
    pub text: String,
    /// Present (and `true`) on the last piece once the preview is full.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// A tool call ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = events::ToolResult)]
pub struct ToolResult {
    pub call_id: String,
    pub tool: String,
    pub status: ToolStatus,
    /// What the model saw (event view: secrets redacted).
    pub content: Value,
    /// Structured data for operators (event view).
    pub data: Value,
}

/// A human must decide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = events::ApprovalRequested)]
pub struct ApprovalRequested {
    #[schema(format = Uuid)]
    pub approval_id: String,
    pub tool: String,
    pub risk: Risk,
    /// Stable key of what is being approved.
    pub rule: String,
    pub reason: String,
    /// Redacted, bounded preview of the arguments.
    pub preview: Value,
    /// Decisions this request accepts.
    pub choices: Vec<Decision>,
    /// Who may decide: the owner, or a tenant operator.
    pub requires: Requirement,
    /// RFC 3339, UTC; undecided by then is a deny.
    #[schema(format = DateTime)]
    pub expires_at: String,
    /// Set on the copy in a parent session's stream: the child agent's
    /// session that asked (decide it by `approval_id` as usual).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = Uuid)]
    pub child_session_id: Option<String>,
}

/// An approval was settled (a human, a timeout, a cancellation or a restart).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = events::ApprovalResolved)]
pub struct ApprovalResolved {
    #[schema(format = Uuid)]
    pub approval_id: String,
    pub decision: Decision,
    /// `user`, `timeout`, `cancelled` or `expired`.
    pub reason: String,
    pub tool: String,
    /// The principal who decided (absent when nobody did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// Set on the copy in a parent session's stream (see `approval.requested`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = Uuid)]
    pub child_session_id: Option<String>,
}

/// The model asked the user a question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = events::ClarifyRequested)]
pub struct ClarifyRequested {
    #[schema(format = Uuid)]
    pub clarification_id: String,
    pub question: String,
    /// Suggested answers (may be empty).
    pub choices: Vec<String>,
    #[schema(format = DateTime)]
    pub expires_at: String,
}

/// The user answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = events::ClarifyAnswered)]
pub struct ClarifyAnswered {
    #[schema(format = Uuid)]
    pub clarification_id: String,
    /// The answer, secrets redacted.
    pub answer: String,
}

/// A background task started or ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = events::TaskUpdated)]
pub struct TaskUpdated {
    pub task_id: String,
    /// e.g. `terminal.exec` (absent when a restart found the task lost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub status: TaskStatus,
    /// Redacted (absent when a restart found the task lost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// A turn finished with the model's final text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = events::TurnCompleted)]
pub struct TurnCompleted {
    /// The final text, secrets redacted.
    pub output: String,
    /// Model steps taken.
    pub steps: u32,
}

/// A bootstrap, input or output slot of the core failed. With
/// `failure_policy` `soft` the turn continues without what the slot would
/// have added; with `hard` the turn fails (`reason` `slot_failed`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = events::SlotFailed)]
pub struct SlotFailed {
    /// `bootstrap`, `input` or `output`.
    pub phase: String,
    /// The slot id (its folder name).
    pub slot_id: String,
    /// `soft` or `hard`.
    pub failure_policy: String,
    /// What went wrong, secrets redacted.
    pub error: String,
}

/// A turn failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = events::TurnFailed)]
pub struct TurnFailed {
    /// Stable: `internal`, `core_load`, `workspace`, `provider`,
    /// `provider_unavailable`, `max_model_steps`, `slot_failed`,
    /// `budget_exceeded` or `lost`.
    pub reason: String,
    /// Human explanation.
    pub error: String,
}

/// A turn was cancelled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = events::TurnCancelled)]
pub struct TurnCancelled {
    /// `cancelled` (a client) or `shutdown`.
    pub reason: String,
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;

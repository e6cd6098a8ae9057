//! A tool call its client waits on (the MCP endpoint's `tools/call`): the
//! same one-call turn as `POST /v1/sessions/{id}/tool-calls`, followed in
//! the session's event log until it ends. What happens meanwhile (an
//! approval asked of people elsewhere, live output) is reported as it is
//! logged; a stop from the client cancels the turn, and the call returns
//! only once the turn has ended, so nothing it started is left running.

use std::time::Duration;

use serde_json::Value;

use super::{Mode, TurnService};
use crate::auth::PrincipalScope;
use crate::error::{Error, Result};
use crate::events::OnLag;
use crate::ids::{SessionId, TurnId};
use crate::wire::events::{Event, EventPayload};
use crate::wire::ToolStatus;

/// Longest wait for a cancelled call's turn to end (the turn's own cancel
/// waits up to 10 s for its work to stop).
const END_AFTER_CANCEL: Duration = Duration::from_secs(30);

/// What the client may be told while its call runs.
#[derive(Debug, Clone, PartialEq)]
pub enum CallProgress {
    /// The call waits for a person to decide.
    Approval {
        approval_id: String,
        tool: String,
        reason: String,
        expires_at: String,
    },
    /// The call waits for an answer to a question.
    Clarification {
        clarification_id: String,
        question: String,
    },
    /// A piece of live output (redacted).
    Output { stream: String, text: String },
}

/// How an attended call ended.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    pub turn_id: TurnId,
    pub call_id: String,
    /// The dispatcher's typed status (`ok`, `invalid`, `denied`, …); a turn
    /// that ended before its call did reports `failed` or `cancelled`.
    pub status: ToolStatus,
    /// What the model would have seen (event view: secrets redacted).
    pub content: Value,
    /// Structured data for operators (event view).
    pub data: Value,
}

/// One call an outside client asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct AttendedCall {
    pub tool: String,
    /// A JSON object (the dispatcher checks it against the tool's schema).
    pub arguments: Value,
    /// Whether the core's own MCP servers' tools may be reached too.
    pub mcp_server_tools: bool,
}

impl TurnService {
    /// Run one tool call as its own turn and wait for its result, reporting
    /// progress through `progress`. `stop` resolving (the client cancelled, or
    /// went away) cancels the turn; the result is returned once the turn ended.
    pub async fn call_attended(
        &self,
        scope: &PrincipalScope,
        session_id: SessionId,
        call: AttendedCall,
        stop: impl std::future::Future<Output = ()> + Send,
        mut progress: impl FnMut(CallProgress) + Send,
    ) -> Result<CallOutcome> {
        let AttendedCall {
            tool,
            arguments,
            mcp_server_tools,
        } = call;
        super::check_tool_name(&tool)?;
        let session = self.owned_session(scope, session_id).await?;
        // Follow before starting, so none of the call's events can be missed.
        let mut events = self.inner.events.subscribe_live(session_id, OnLag::Refill);
        let call_id = format!("call_{}", uuid::Uuid::new_v4().simple());
        let input = format!("tool-call: {tool}");
        let mode = Mode::Direct {
            call_id: call_id.clone(),
            tool,
            arguments,
            mcp_server_tools,
        };
        let turn_id = self
            .begin(scope, session, input, mode, String::new())
            .await?;
        let ours = turn_id.to_string();
        tokio::pin!(stop);
        let mut result: Option<(ToolStatus, Value, Value)> = None;
        let mut cancelled_at: Option<tokio::time::Instant> = None;
        loop {
            let next = if let Some(at) = cancelled_at {
                match tokio::time::timeout_at(at + END_AFTER_CANCEL, events.next()).await {
                    Ok(next) => next,
                    Err(_) => {
                        return Err(Error::Unavailable(
                            "the cancelled call did not end in time".into(),
                        ))
                    }
                }
            } else {
                tokio::select! {
                    next = events.next() => next,
                    _ = &mut stop => {
                        cancelled_at = Some(tokio::time::Instant::now());
                        self.cancel(scope, session_id, turn_id).await?;
                        continue;
                    }
                }
            };
            let ev = match next {
                Ok(Some(ev)) => ev,
                Ok(None) => return Err(Error::Unavailable("the server is shutting down".into())),
                Err(e) => {
                    return Err(Error::Internal(anyhow::anyhow!(
                        "following the call's events: {e}"
                    )))
                }
            };
            if ev.turn_id.as_deref() != Some(ours.as_str()) {
                continue;
            }
            let frame: Event = serde_json::from_str(ev.json.as_str())
                .map_err(|e| Error::Internal(anyhow::anyhow!("event {}: {e}", ev.seq)))?;
            let (status, content) = match frame.payload {
                EventPayload::ApprovalRequested(a) => {
                    progress(CallProgress::Approval {
                        approval_id: a.approval_id,
                        tool: a.tool,
                        reason: a.reason,
                        expires_at: a.expires_at,
                    });
                    continue;
                }
                EventPayload::ClarifyRequested(c) => {
                    progress(CallProgress::Clarification {
                        clarification_id: c.clarification_id,
                        question: c.question,
                    });
                    continue;
                }
                EventPayload::ToolOutput(o) if o.call_id == call_id => {
                    progress(CallProgress::Output {
                        stream: o.stream,
                        text: o.text,
                    });
                    continue;
                }
                EventPayload::ToolResult(r) if r.call_id == call_id => {
                    result = Some((r.status, r.content, r.data));
                    continue;
                }
                EventPayload::TurnCompleted(_) => match result.take() {
                    Some(done) => return Ok(outcome(turn_id, call_id, done)),
                    None => (
                        ToolStatus::Failed,
                        Value::from("the call ended without a result"),
                    ),
                },
                EventPayload::TurnFailed(f) => (
                    ToolStatus::Failed,
                    Value::from(format!("the call failed ({}): {}", f.reason, f.error)),
                ),
                EventPayload::TurnCancelled(c) => match result.take() {
                    // Cancelled after the call itself ended: its result stands.
                    Some(done) => return Ok(outcome(turn_id, call_id, done)),
                    None => (
                        ToolStatus::Cancelled,
                        Value::from(format!("the call was cancelled ({})", c.reason)),
                    ),
                },
                _ => continue,
            };
            return Ok(outcome(turn_id, call_id, (status, content, Value::Null)));
        }
    }
}

fn outcome(
    turn_id: TurnId,
    call_id: String,
    (status, content, data): (ToolStatus, Value, Value),
) -> CallOutcome {
    CallOutcome {
        turn_id,
        call_id,
        status,
        content,
        data,
    }
}

//! What the chat is sent: [`Item`]s, the outbox's payload, and the pure
//! translation of session events into them (assistant text split at the
//! platform's limit, approval cards, decisions as edits, questions, compact
//! tool cards, failures). Platform requests are built from an item only at
//! delivery, so credentials never reach the outbox.

use demiurge_channels::split::{self, Limit};
use demiurge_channels::ChannelKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::wire::events::EventPayload;
use crate::wire::{Decision, ToolStatus};

/// One outbox entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Item {
    /// A message (one part of a split reply).
    Text {
        text: String,
        /// Discord: the interaction to answer through (its token), if fresh.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        handle: Option<String>,
        /// Discord: replaces the deferred "thinking…" answer.
        #[serde(default)]
        original: bool,
    },
    /// An approval card with native buttons and the text fallback.
    Approval {
        approval_id: String,
        tool: String,
        risk: String,
        summary: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        handle: Option<String>,
    },
    /// Edit a delivered card to show its decision.
    Edit { approval_id: String, text: String },
    /// Telegram: stop a pressed button's spinner.
    CallbackAnswer { callback_id: String, text: String },
}

/// The platform's message limit.
pub fn limit(platform: ChannelKind) -> Limit {
    match platform {
        ChannelKind::Telegram => split::TELEGRAM,
        ChannelKind::Discord => split::DISCORD,
        ChannelKind::Slack => split::SLACK_SECTION,
        // Generic webhooks take any size; keep parts a reasonable 16k.
        ChannelKind::Webhook => Limit {
            max: 16_000,
            unit: split::Unit::Chars,
        },
    }
}

/// Text as one or more items, in order.
pub fn texts(platform: ChannelKind, text: &str, handle: Option<&str>, original: bool) -> Vec<Item> {
    split::split(text, limit(platform))
        .into_iter()
        .enumerate()
        .map(|(i, part)| Item::Text {
            text: part,
            handle: handle.map(str::to_owned),
            original: original && i == 0,
        })
        .collect()
}

/// Per-relay state that shapes translation.
#[derive(Debug, Default, Clone)]
pub struct RelayState {
    /// Discord: whether the deferred answer was already replaced this turn.
    pub answered_original: bool,
}

const MAX_SUMMARY: usize = 600;

fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}

/// A compact, one-look summary of an approval's (already redacted) preview.
pub fn summary_of(preview: &Value) -> String {
    let text = match preview {
        Value::String(s) => s.clone(),
        Value::Object(m) => {
            if let Some(cmd) = m.get("command").and_then(Value::as_str) {
                format!("$ {cmd}")
            } else {
                m.iter()
                    .map(|(k, v)| match v {
                        Value::String(s) => format!("{k}: {s}"),
                        other => format!("{k}: {other}"),
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            }
        }
        Value::Null => String::new(),
        other => other.to_string(),
    };
    short(&text, MAX_SUMMARY)
}

/// What one event of the session becomes in the chat. Every kind is
/// named: a new kind of event is a compile error here until it is decided
/// how (or that it is not) shown in a chat.
pub fn for_event(
    platform: ChannelKind,
    event: &EventPayload,
    handle: Option<&str>,
    state: &mut RelayState,
) -> Vec<Item> {
    let text_items = |text: &str, state: &mut RelayState| {
        let original =
            platform == ChannelKind::Discord && handle.is_some() && !state.answered_original;
        if original {
            state.answered_original = true;
        }
        texts(platform, text, handle, original)
    };
    match event {
        EventPayload::TurnStarted(_) => {
            state.answered_original = false;
            Vec::new()
        }
        EventPayload::Message(m) => {
            if m.role == "assistant" && !m.content.trim().is_empty() {
                text_items(&m.content, state)
            } else {
                Vec::new()
            }
        }
        EventPayload::ApprovalRequested(a) => vec![Item::Approval {
            approval_id: a.approval_id.clone(),
            tool: a.tool.clone(),
            risk: a.risk.as_str().to_owned(),
            summary: summary_of(&a.preview),
            handle: handle.map(str::to_owned),
        }],
        EventPayload::ApprovalResolved(r) => {
            let decision = match r.decision {
                Decision::AllowOnce => "Allowed once",
                Decision::AllowSession => "Allowed for the session",
                Decision::Deny => "Denied",
            };
            let why = match (r.reason.as_str(), r.decided_by.as_deref()) {
                (_, Some(by)) => format!(" by {by}"),
                ("timeout", None) => " (no answer in time)".to_owned(),
                ("expired", None) => " (expired)".to_owned(),
                ("cancelled", None) => " (turn stopped)".to_owned(),
                _ => String::new(),
            };
            vec![Item::Edit {
                approval_id: r.approval_id.clone(),
                // The sender puts the card's first line above it.
                text: format!("{decision}{why}."),
            }]
        }
        EventPayload::ClarifyRequested(c) => {
            let mut text = format!("Question: {}", c.question);
            if !c.choices.is_empty() {
                text.push_str(&format!("\nChoices: {}", c.choices.join(" / ")));
            }
            text.push_str("\nYour next message answers it.");
            text_items(&text, state)
        }
        EventPayload::ToolResult(t) => {
            let mark = if t.status == ToolStatus::Succeeded {
                "✓"
            } else {
                "✗"
            };
            text_items(&format!("{mark} {} — {}", t.tool, t.status), state)
        }
        // A spent budget says which limit and how to lift it; other
        // failures' details are the operators' (the console shows them).
        EventPayload::TurnFailed(f) if f.reason == "budget_exceeded" => text_items(
            &format!("The turn stopped: {}.", short(&f.error, 300)),
            state,
        ),
        EventPayload::TurnFailed(f) => text_items(
            &format!("The turn failed ({}).", short(&f.reason, 80)),
            state,
        ),
        EventPayload::TurnCancelled(_) => text_items("Stopped.", state),
        // Not shown in a chat: the call card comes with its result, live
        // output and task updates are the console's, an answer was the
        // user's own message, a slot failure is an operator's concern, and
        // a completed turn's text arrived as its assistant message.
        EventPayload::ToolCall(_)
        | EventPayload::ToolOutput(_)
        | EventPayload::ClarifyAnswered(_)
        | EventPayload::TaskUpdated(_)
        | EventPayload::SlotFailed(_)
        | EventPayload::TurnCompleted(_) => Vec::new(),
    }
}

/// A stored event's payload, typed. `None` when the row no longer parses
/// as any known kind (written by another version): the relay logs and
/// skips it, moving its cursor on.
pub fn payload_of(json: &str) -> Option<EventPayload> {
    #[derive(Deserialize)]
    struct Stored {
        #[serde(flatten)]
        payload: EventPayload,
    }
    serde_json::from_str::<Stored>(json).ok().map(|s| s.payload)
}

#[cfg(test)]
#[path = "items_tests.rs"]
mod tests;

//! What the chat is sent: [`Item`]s, the outbox's payload, and the pure
//! translation of session events into them (assistant text split at the
//! platform's limit, approval cards, decisions as edits, questions, compact
//! tool cards, failures). Platform requests are built from an item only at
//! delivery, so credentials never reach the outbox.

use demiurge_channels::split::{self, Limit};
use demiurge_channels::ChannelKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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

/// What one event of the session becomes in the chat.
pub fn for_event(
    platform: ChannelKind,
    kind: &str,
    data: &Value,
    handle: Option<&str>,
    state: &mut RelayState,
) -> Vec<Item> {
    let s = |k: &str| data.get(k).and_then(Value::as_str).unwrap_or_default();
    let text_items = |text: &str, state: &mut RelayState| {
        let original =
            platform == ChannelKind::Discord && handle.is_some() && !state.answered_original;
        if original {
            state.answered_original = true;
        }
        texts(platform, text, handle, original)
    };
    match kind {
        "turn.started" => {
            state.answered_original = false;
            Vec::new()
        }
        "message" if s("role") == "assistant" && !s("content").trim().is_empty() => {
            text_items(s("content"), state)
        }
        "approval.requested" => vec![Item::Approval {
            approval_id: s("approval_id").to_owned(),
            tool: s("tool").to_owned(),
            risk: s("risk").to_owned(),
            summary: summary_of(data.get("preview").unwrap_or(&Value::Null)),
            handle: handle.map(str::to_owned),
        }],
        "approval.resolved" => {
            let decision = match s("decision") {
                "allow_once" => "Allowed once",
                "allow_session" => "Allowed for the session",
                _ => "Denied",
            };
            let why = match (s("reason"), data.get("decided_by").and_then(Value::as_str)) {
                (_, Some(by)) => format!(" by {by}"),
                ("timeout", None) => " (no answer in time)".to_owned(),
                ("expired", None) => " (expired)".to_owned(),
                ("cancelled", None) => " (turn stopped)".to_owned(),
                _ => String::new(),
            };
            vec![Item::Edit {
                approval_id: s("approval_id").to_owned(),
                // The sender puts the card's first line above it.
                text: format!("{decision}{why}."),
            }]
        }
        "clarify.requested" => {
            let mut text = format!("Question: {}", s("question"));
            if let Some(choices) = data.get("choices").and_then(Value::as_array) {
                let c: Vec<&str> = choices.iter().filter_map(Value::as_str).collect();
                if !c.is_empty() {
                    text.push_str(&format!("\nChoices: {}", c.join(" / ")));
                }
            }
            text.push_str("\nYour next message answers it.");
            text_items(&text, state)
        }
        "tool.result" => {
            let status = s("status");
            let mark = if status == "succeeded" { "✓" } else { "✗" };
            text_items(&format!("{mark} {} — {status}", s("tool")), state)
        }
        "turn.failed" => text_items(
            &format!("The turn failed ({}).", short(s("reason"), 80)),
            state,
        ),
        "turn.cancelled" => text_items("Stopped.", state),
        _ => Vec::new(),
    }
}

#[cfg(test)]
#[path = "items_tests.rs"]
mod tests;

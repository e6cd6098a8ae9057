//! The platforms' inbound payloads, as much of them as the host reads, and
//! what the host makes of them: one [`Inbound`] per delivery.
//!
//! Shapes follow each platform's documentation: Telegram's `Update`
//! (`message`, `callback_query`), Slack's Events API envelope
//! (`url_verification`, `event_callback` with a `message`/`app_mention`
//! event) and interactivity payload (`block_actions`), Discord's
//! `Interaction` (`PING`, `APPLICATION_COMMAND`, `MESSAGE_COMPONENT`), and
//! the generic webhook's `{user, conversation, text}`. Unknown fields are
//! ignored; a payload the host does not act on is [`Inbound::Ignored`].

use serde::Deserialize;

use crate::commands::{self, Decision};

/// What one delivery asks of the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inbound {
    /// A user wrote something (text for the agent, or a `/command`).
    Message(Message),
    /// A user pressed an approval button.
    Button {
        /// Deduplication key of the delivery.
        event_id: String,
        user: String,
        conversation: Conversation,
        approval_id: String,
        decision: Decision,
        /// Platform handle to acknowledge or edit the button's message.
        reply_handle: Option<String>,
    },
    /// Slack's endpoint check: answer with this challenge.
    Challenge(String),
    /// Discord's endpoint check: answer `{"type": 1}`.
    Ping,
    /// Nothing for the host (bot messages, edits, unknown kinds).
    Ignored(&'static str),
}

/// Where a conversation happens: the session key is (platform, account,
/// chat, thread), and per user in group chats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversation {
    pub chat: String,
    pub thread: Option<String>,
    /// Whether several people share the chat (sessions are then per user).
    pub group: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Deduplication key: the platform's event/update/interaction id.
    pub event_id: String,
    /// The platform user id, as a string.
    pub user: String,
    pub conversation: Conversation,
    pub text: String,
    /// Platform handle for a deferred reply (Discord's interaction token).
    pub reply_handle: Option<String>,
}

/// Why a body could not be read as the platform's payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed {platform} payload: {reason}")]
pub struct PayloadError {
    pub platform: &'static str,
    pub reason: String,
}

fn malformed(platform: &'static str, e: impl std::fmt::Display) -> PayloadError {
    PayloadError {
        platform,
        reason: e.to_string().chars().take(200).collect(),
    }
}

// ---------------------------------------------------------------- Telegram

#[derive(Deserialize)]
struct TgUpdate {
    update_id: i64,
    message: Option<TgMessage>,
    callback_query: Option<TgCallback>,
}

#[derive(Deserialize)]
struct TgMessage {
    message_id: i64,
    from: Option<TgUser>,
    chat: TgChat,
    text: Option<String>,
    message_thread_id: Option<i64>,
}

#[derive(Deserialize)]
struct TgUser {
    id: i64,
    #[serde(default)]
    is_bot: bool,
}

#[derive(Deserialize)]
struct TgChat {
    id: i64,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct TgCallback {
    id: String,
    from: TgUser,
    message: Option<TgMessage>,
    data: Option<String>,
}

/// A Telegram `Update` (webhook body).
pub fn telegram(body: &[u8]) -> Result<Inbound, PayloadError> {
    let update: TgUpdate = serde_json::from_slice(body).map_err(|e| malformed("telegram", e))?;
    let event_id = update.update_id.to_string();
    if let Some(cb) = update.callback_query {
        let Some((approval_id, decision)) = cb.data.as_deref().and_then(commands::parse_callback)
        else {
            return Ok(Inbound::Ignored("callback without approval data"));
        };
        let Some(msg) = cb.message else {
            return Ok(Inbound::Ignored("callback without its message"));
        };
        return Ok(Inbound::Button {
            event_id,
            user: cb.from.id.to_string(),
            conversation: tg_conversation(&msg),
            approval_id,
            decision,
            reply_handle: Some(format!("{}:{}:{}", cb.id, msg.chat.id, msg.message_id)),
        });
    }
    let Some(msg) = update.message else {
        return Ok(Inbound::Ignored("update kind"));
    };
    let Some(from) = &msg.from else {
        return Ok(Inbound::Ignored("message without a sender"));
    };
    if from.is_bot {
        return Ok(Inbound::Ignored("bot message"));
    }
    let Some(text) = msg.text.clone() else {
        return Ok(Inbound::Ignored("message without text"));
    };
    Ok(Inbound::Message(Message {
        event_id,
        user: from.id.to_string(),
        conversation: tg_conversation(&msg),
        text,
        reply_handle: None,
    }))
}

fn tg_conversation(msg: &TgMessage) -> Conversation {
    Conversation {
        chat: msg.chat.id.to_string(),
        thread: msg.message_thread_id.map(|t| t.to_string()),
        group: msg.chat.kind != "private",
    }
}

// ------------------------------------------------------------------- Slack

#[derive(Deserialize)]
struct SlackEnvelope {
    #[serde(rename = "type")]
    kind: String,
    challenge: Option<String>,
    event_id: Option<String>,
    event: Option<SlackEvent>,
}

#[derive(Deserialize)]
struct SlackEvent {
    #[serde(rename = "type")]
    kind: String,
    subtype: Option<String>,
    bot_id: Option<String>,
    user: Option<String>,
    text: Option<String>,
    channel: Option<String>,
    channel_type: Option<String>,
    ts: Option<String>,
    thread_ts: Option<String>,
}

/// A Slack Events API body (JSON).
pub fn slack_event(body: &[u8]) -> Result<Inbound, PayloadError> {
    let env: SlackEnvelope = serde_json::from_slice(body).map_err(|e| malformed("slack", e))?;
    match env.kind.as_str() {
        "url_verification" => env
            .challenge
            .map(Inbound::Challenge)
            .ok_or_else(|| malformed("slack", "url_verification without a challenge")),
        "event_callback" => {
            let event_id = env
                .event_id
                .ok_or_else(|| malformed("slack", "event_callback without event_id"))?;
            let Some(ev) = env.event else {
                return Ok(Inbound::Ignored("event_callback without an event"));
            };
            if !matches!(ev.kind.as_str(), "message" | "app_mention") {
                return Ok(Inbound::Ignored("event type"));
            }
            if ev.bot_id.is_some() || ev.subtype.is_some() {
                return Ok(Inbound::Ignored("bot message or edit"));
            }
            let (Some(user), Some(text), Some(channel)) = (ev.user, ev.text, ev.channel) else {
                return Ok(Inbound::Ignored("message without user, text or channel"));
            };
            let direct = ev.channel_type.as_deref() == Some("im");
            Ok(Inbound::Message(Message {
                event_id,
                user,
                conversation: Conversation {
                    chat: channel,
                    // In a channel, replies go to the thread the message
                    // started or belongs to; a direct chat is one
                    // conversation unless the user opened a thread.
                    thread: if direct {
                        ev.thread_ts
                    } else {
                        ev.thread_ts.or(ev.ts)
                    },
                    group: !direct,
                },
                text,
                reply_handle: None,
            }))
        }
        _ => Ok(Inbound::Ignored("envelope type")),
    }
}

#[derive(Deserialize)]
struct SlackInteraction {
    #[serde(rename = "type")]
    kind: String,
    user: SlackUser,
    channel: Option<SlackChannel>,
    message: Option<SlackMessageRef>,
    #[serde(default)]
    actions: Vec<SlackAction>,
    response_url: Option<String>,
    trigger_id: Option<String>,
}

#[derive(Deserialize)]
struct SlackUser {
    id: String,
}

#[derive(Deserialize)]
struct SlackChannel {
    id: String,
}

#[derive(Deserialize)]
struct SlackMessageRef {
    ts: Option<String>,
    thread_ts: Option<String>,
}

#[derive(Deserialize)]
struct SlackAction {
    value: Option<String>,
    action_ts: Option<String>,
}

/// A Slack interactivity body: form-encoded `payload=<JSON>`.
pub fn slack_interaction(body: &[u8]) -> Result<Inbound, PayloadError> {
    let json = form_urlencoded::parse(body)
        .find(|(key, _)| key == "payload")
        .map(|(_, value)| value)
        .ok_or_else(|| malformed("slack", "no payload field"))?;
    let it: SlackInteraction = serde_json::from_str(&json).map_err(|e| malformed("slack", e))?;
    if it.kind != "block_actions" {
        return Ok(Inbound::Ignored("interaction type"));
    }
    let Some(action) = it.actions.first() else {
        return Ok(Inbound::Ignored("no action"));
    };
    let Some((approval_id, decision)) = action.value.as_deref().and_then(commands::parse_callback)
    else {
        return Ok(Inbound::Ignored("action without approval data"));
    };
    let Some(channel) = it.channel else {
        return Ok(Inbound::Ignored("action outside a channel"));
    };
    let thread = it
        .message
        .as_ref()
        .and_then(|m| m.thread_ts.clone().or(m.ts.clone()));
    Ok(Inbound::Button {
        event_id: format!(
            "{}:{}",
            it.trigger_id.unwrap_or_default(),
            action.action_ts.clone().unwrap_or_default()
        ),
        user: it.user.id,
        conversation: Conversation {
            chat: channel.id,
            thread,
            group: true,
        },
        approval_id,
        decision,
        reply_handle: it.response_url,
    })
}

// ----------------------------------------------------------------- Discord

#[derive(Deserialize)]
struct DiscordInteraction {
    id: String,
    #[serde(rename = "type")]
    kind: u8,
    token: Option<String>,
    channel_id: Option<String>,
    guild_id: Option<String>,
    member: Option<DiscordMember>,
    user: Option<DiscordUser>,
    data: Option<DiscordData>,
}

#[derive(Deserialize)]
struct DiscordMember {
    user: DiscordUser,
}

#[derive(Deserialize)]
struct DiscordUser {
    id: String,
}

#[derive(Deserialize)]
struct DiscordData {
    name: Option<String>,
    custom_id: Option<String>,
    #[serde(default)]
    options: Vec<DiscordOption>,
}

#[derive(Deserialize)]
struct DiscordOption {
    value: serde_json::Value,
}

/// A Discord interaction: 1 `PING`, 2 `APPLICATION_COMMAND` (`/ask text`),
/// 3 `MESSAGE_COMPONENT` (an approval button).
pub fn discord(body: &[u8]) -> Result<Inbound, PayloadError> {
    let it: DiscordInteraction =
        serde_json::from_slice(body).map_err(|e| malformed("discord", e))?;
    if it.kind == 1 {
        return Ok(Inbound::Ping);
    }
    // In a guild the user is under `member`; in a DM at the top level.
    let Some(user) = it.member.map(|m| m.user).or(it.user) else {
        return Ok(Inbound::Ignored("interaction without a user"));
    };
    let Some(channel) = it.channel_id else {
        return Ok(Inbound::Ignored("interaction without a channel"));
    };
    let conversation = Conversation {
        chat: channel,
        thread: None,
        group: it.guild_id.is_some(),
    };
    let data = it.data;
    match it.kind {
        2 => {
            let Some(data) = data.filter(|d| d.name.as_deref() == Some(DISCORD_COMMAND)) else {
                return Ok(Inbound::Ignored("command name"));
            };
            let text = data
                .options
                .into_iter()
                .next()
                .and_then(|o| o.value.as_str().map(str::to_owned))
                .unwrap_or_default();
            if text.trim().is_empty() {
                return Ok(Inbound::Ignored("command without text"));
            }
            Ok(Inbound::Message(Message {
                event_id: it.id,
                user: user.id,
                conversation,
                text,
                reply_handle: it.token,
            }))
        }
        3 => {
            let Some((approval_id, decision)) = data
                .and_then(|d| d.custom_id)
                .as_deref()
                .and_then(commands::parse_callback)
            else {
                return Ok(Inbound::Ignored("component without approval data"));
            };
            Ok(Inbound::Button {
                event_id: it.id,
                user: user.id,
                conversation,
                approval_id,
                decision,
                reply_handle: it.token,
            })
        }
        _ => Ok(Inbound::Ignored("interaction type")),
    }
}

/// The slash command name a Discord application registers for talking to the agent.
pub const DISCORD_COMMAND: &str = "ask";

// ----------------------------------------------------------------- Webhook

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhookIn {
    user: String,
    conversation: String,
    text: String,
    /// Optional deduplication key; the body's hash is used without it.
    #[serde(default)]
    id: Option<String>,
}

/// The generic webhook's `{"user", "conversation", "text"}` (plus optional `id`).
pub fn webhook(body: &[u8]) -> Result<Inbound, PayloadError> {
    let w: WebhookIn = serde_json::from_slice(body).map_err(|e| malformed("webhook", e))?;
    if w.user.is_empty() || w.conversation.is_empty() {
        return Err(malformed(
            "webhook",
            "user and conversation must not be empty",
        ));
    }
    let event_id = match w.id {
        Some(id) if !id.is_empty() => id,
        _ => {
            use sha2::Digest;
            hex::encode(sha2::Sha256::digest(body))
        }
    };
    Ok(Inbound::Message(Message {
        event_id,
        user: w.user,
        conversation: Conversation {
            chat: w.conversation,
            thread: None,
            group: false,
        },
        text: w.text,
        reply_handle: None,
    }))
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;

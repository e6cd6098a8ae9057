//! What the host sends to a platform: method paths and JSON bodies for a
//! reply, an approval card with native buttons, and the edit that shows the
//! decision. Pure builders; the server's outbox sends them (with retries and
//! rate limits) to `{api_base_url}`.

use serde_json::{json, Value};

use crate::commands::{callback_data, Decision};

/// One request to a platform API: a path under the account's base URL
/// (Telegram's includes `bot<token>`, added by the sender) and a JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub method: &'static str,
    pub body: Value,
}

/// An approval as the chat shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalCard<'a> {
    pub approval_id: &'a str,
    pub tool: &'a str,
    pub risk: &'a str,
    /// The redacted, bounded preview (one line or a short block).
    pub summary: &'a str,
}

impl ApprovalCard<'_> {
    /// The text every platform shows, with the text-command fallback.
    pub fn text(&self) -> String {
        format!(
            "Approval needed: {} (risk {})\n{}\nReply /approve {} [session] or /deny {}",
            self.tool, self.risk, self.summary, self.approval_id, self.approval_id
        )
    }
}

/// The line an answered card is edited to.
pub fn decided_text(card_text_first_line: &str, decision: Decision, by: &str) -> String {
    let verb = match decision {
        Decision::AllowOnce => "Allowed once",
        Decision::AllowSession => "Allowed for the session",
        Decision::Deny => "Denied",
    };
    format!("{card_text_first_line}\n{verb} by {by}.")
}

pub mod telegram {
    use super::*;

    /// `sendMessage`, in a forum topic when `thread` is set.
    pub fn message(chat: &str, thread: Option<&str>, text: &str) -> Request {
        let mut body = json!({"chat_id": chat, "text": text});
        if let Some(t) = thread {
            body["message_thread_id"] = json!(t);
        }
        Request {
            method: "sendMessage",
            body,
        }
    }

    /// `sendMessage` with an inline keyboard of the three decisions.
    pub fn approval(chat: &str, thread: Option<&str>, card: &ApprovalCard<'_>) -> Request {
        let mut req = message(chat, thread, &card.text());
        let row: Vec<Value> = Decision::ALL
            .iter()
            .map(|d| json!({"text": d.label(), "callback_data": callback_data(card.approval_id, *d)}))
            .collect();
        req.body["reply_markup"] = json!({"inline_keyboard": [row]});
        req
    }

    /// `editMessageText` without buttons, once the approval is decided.
    pub fn edit(chat: &str, message_id: &str, text: &str) -> Request {
        Request {
            method: "editMessageText",
            body: json!({"chat_id": chat, "message_id": message_id, "text": text,
                "reply_markup": {"inline_keyboard": []}}),
        }
    }

    /// `answerCallbackQuery`: stops the button's spinner, with a short notice.
    pub fn answer_callback(callback_id: &str, notice: &str) -> Request {
        Request {
            method: "answerCallbackQuery",
            body: json!({"callback_query_id": callback_id, "text": notice}),
        }
    }
}

pub mod slack {
    use super::*;

    /// `chat.postMessage`, in the thread when `thread` is set.
    pub fn message(channel: &str, thread: Option<&str>, text: &str) -> Request {
        let mut body = json!({"channel": channel, "text": text});
        if let Some(t) = thread {
            body["thread_ts"] = json!(t);
        }
        Request {
            method: "chat.postMessage",
            body,
        }
    }

    /// `chat.postMessage` with Block Kit: the card and three buttons.
    pub fn approval(channel: &str, thread: Option<&str>, card: &ApprovalCard<'_>) -> Request {
        let mut req = message(channel, thread, &card.text());
        let buttons: Vec<Value> = Decision::ALL
            .iter()
            .map(|d| {
                let mut b = json!({"type": "button", "action_id": format!("approval_{}", d.as_str()),
                    "text": {"type": "plain_text", "text": d.label()},
                    "value": callback_data(card.approval_id, *d)});
                match d {
                    Decision::Deny => b["style"] = json!("danger"),
                    Decision::AllowOnce => b["style"] = json!("primary"),
                    Decision::AllowSession => {}
                }
                b
            })
            .collect();
        req.body["blocks"] = json!([
            {"type": "section", "text": {"type": "mrkdwn", "text": crate::split::split(&card.text(), crate::split::SLACK_SECTION).into_iter().next().unwrap_or_default()}},
            {"type": "actions", "block_id": format!("approval:{}", card.approval_id), "elements": buttons}
        ]);
        req
    }

    /// `chat.update` without buttons, once the approval is decided.
    pub fn edit(channel: &str, ts: &str, text: &str) -> Request {
        Request {
            method: "chat.update",
            body: json!({"channel": channel, "ts": ts, "text": text, "blocks": []}),
        }
    }
}

pub mod discord {
    use super::*;

    /// `POST /channels/{channel}/messages`.
    pub fn message(text: &str) -> Request {
        Request {
            method: "messages",
            body: json!({"content": text, "allowed_mentions": {"parse": []}}),
        }
    }

    /// A message with an action row of three buttons (component type 2;
    /// styles: 1 primary, 2 secondary, 4 danger).
    pub fn approval(card: &ApprovalCard<'_>) -> Request {
        let mut req = message(&card.text());
        let buttons: Vec<Value> = Decision::ALL
            .iter()
            .map(|d| {
                let style = match d {
                    Decision::AllowOnce => 1,
                    Decision::AllowSession => 2,
                    Decision::Deny => 4,
                };
                json!({"type": 2, "style": style, "label": d.label(),
                    "custom_id": callback_data(card.approval_id, *d)})
            })
            .collect();
        req.body["components"] = json!([{"type": 1, "components": buttons}]);
        req
    }

    /// The immediate answer to an interaction: 1 `PONG`, or 5
    /// `DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE` (the turn answers later, within
    /// Discord's 3-second deadline for the first response).
    pub fn pong() -> Value {
        json!({"type": 1})
    }

    pub fn deferred() -> Value {
        json!({"type": 5})
    }

    /// 7 `UPDATE_MESSAGE`: the pressed card, edited to its decision, buttons gone.
    pub fn update_card(text: &str) -> Value {
        json!({"type": 7, "data": {"content": text, "components": []}})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::parse_callback;

    const CARD: ApprovalCard<'static> = ApprovalCard {
        approval_id: "01a23c00-08f4-7299-91e4-607295542110",
        tool: "terminal",
        risk: "high",
        summary: "$ rm -rf build",
    };

    #[test]
    fn every_card_carries_the_text_fallback() {
        let text = CARD.text();
        assert!(text.contains("/approve 01a23c00-08f4-7299-91e4-607295542110"));
        assert!(text.contains("/deny 01a23c00-08f4-7299-91e4-607295542110"));
        assert!(
            text.contains("terminal") && text.contains("high") && text.contains("rm -rf build")
        );
    }

    #[test]
    fn telegram_buttons_decode_to_their_decisions() {
        let req = telegram::approval("1111111", Some("42"), &CARD);
        assert_eq!(req.method, "sendMessage");
        assert_eq!(req.body["message_thread_id"], "42");
        let row = req.body["reply_markup"]["inline_keyboard"][0]
            .as_array()
            .unwrap();
        let got: Vec<_> = row
            .iter()
            .map(|b| {
                parse_callback(b["callback_data"].as_str().unwrap())
                    .unwrap()
                    .1
            })
            .collect();
        assert_eq!(got, Decision::ALL.to_vec());
        assert_eq!(row[1]["text"], "Allow for session");
        let edit = telegram::edit("1111111", "77", "done");
        assert_eq!(edit.body["reply_markup"]["inline_keyboard"], json!([]));
        assert_eq!(
            telegram::message("5", None, "hi").body,
            json!({"chat_id": "5", "text": "hi"})
        );
    }

    #[test]
    fn slack_blocks_have_a_section_and_three_buttons() {
        let req = slack::approval("C1", Some("1.0"), &CARD);
        assert_eq!(req.method, "chat.postMessage");
        assert_eq!(req.body["thread_ts"], "1.0");
        let blocks = req.body["blocks"].as_array().unwrap();
        assert_eq!(blocks[0]["type"], "section");
        let buttons = blocks[1]["elements"].as_array().unwrap();
        assert_eq!(buttons.len(), 3);
        for (b, d) in buttons.iter().zip(Decision::ALL) {
            assert_eq!(parse_callback(b["value"].as_str().unwrap()).unwrap().1, d);
        }
        assert_eq!(buttons[2]["style"], "danger");
        assert_eq!(slack::edit("C1", "1.0", "x").body["blocks"], json!([]));
    }

    #[test]
    fn discord_components_and_interaction_answers() {
        let req = discord::approval(&CARD);
        let row = &req.body["components"][0];
        assert_eq!(row["type"], 1);
        let buttons = row["components"].as_array().unwrap();
        assert_eq!(
            buttons
                .iter()
                .map(|b| b["style"].as_i64().unwrap())
                .collect::<Vec<_>>(),
            vec![1, 2, 4]
        );
        for b in buttons {
            assert!(b["custom_id"].as_str().unwrap().len() <= 100);
        }
        assert_eq!(req.body["allowed_mentions"], json!({"parse": []}));
        assert_eq!(discord::pong(), json!({"type": 1}));
        assert_eq!(discord::deferred(), json!({"type": 5}));
        assert_eq!(discord::update_card("x")["data"]["components"], json!([]));
    }

    #[test]
    fn decided_cards_say_who_decided() {
        let t = decided_text(
            "Approval needed: terminal (risk high)",
            Decision::AllowSession,
            "alice",
        );
        assert_eq!(
            t,
            "Approval needed: terminal (risk high)\nAllowed for the session by alice."
        );
    }
}

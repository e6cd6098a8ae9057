//! What a chat user can say to the host besides talking to the agent, and
//! how an approval button says what was pressed.
//!
//! Text commands work on every platform (the fallback where buttons are
//! missing): `/approve <id> [session]`, `/deny <id>`, `/stop`, `/new`.
//! Telegram appends the bot's name in groups (`/approve@my_bot …`), which is
//! accepted. Buttons carry [`callback_data`], at most 64 bytes (Telegram's
//! limit for `callback_data`; Slack and Discord allow more).

/// A decision on an approval, as the chat can give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    AllowOnce,
    AllowSession,
    Deny,
}

impl Decision {
    /// The host API's name (`POST /v1/approvals/{id}`).
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::AllowOnce => "allow_once",
            Decision::AllowSession => "allow_session",
            Decision::Deny => "deny",
        }
    }

    fn code(self) -> &'static str {
        match self {
            Decision::AllowOnce => "o",
            Decision::AllowSession => "s",
            Decision::Deny => "d",
        }
    }

    fn from_code(code: &str) -> Option<Self> {
        match code {
            "o" => Some(Decision::AllowOnce),
            "s" => Some(Decision::AllowSession),
            "d" => Some(Decision::Deny),
            _ => None,
        }
    }

    /// The button label.
    pub fn label(self) -> &'static str {
        match self {
            Decision::AllowOnce => "Allow once",
            Decision::AllowSession => "Allow for session",
            Decision::Deny => "Deny",
        }
    }

    pub const ALL: [Decision; 3] = [Decision::AllowOnce, Decision::AllowSession, Decision::Deny];
}

/// A message that is a command to the host rather than text for the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Decide an approval.
    Decide {
        approval_id: String,
        decision: Decision,
    },
    /// Cancel the running turn of this conversation.
    Stop,
    /// Start a new session for this conversation.
    New,
    /// A known command used wrongly: reply with this usage line.
    Usage(&'static str),
}

const APPROVE_USAGE: &str = "usage: /approve <id> [session]";
const DENY_USAGE: &str = "usage: /deny <id>";

/// Longest approval id accepted from chat text (ours are 36-character UUIDs).
const MAX_ID_LEN: usize = 64;

/// Parses a chat message; `None` means ordinary text for the agent.
pub fn parse(text: &str) -> Option<Command> {
    let mut words = text.split_whitespace();
    let first = words.next()?;
    let name = first.strip_prefix('/')?;
    // `/cmd@botname` in Telegram groups.
    let name = name
        .split('@')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let rest: Vec<&str> = words.collect();
    match name.as_str() {
        "approve" => Some(match rest.as_slice() {
            [id] if valid_id(id) => decide(id, Decision::AllowOnce),
            [id, scope] if valid_id(id) && scope.eq_ignore_ascii_case("session") => {
                decide(id, Decision::AllowSession)
            }
            _ => Command::Usage(APPROVE_USAGE),
        }),
        "deny" => Some(match rest.as_slice() {
            [id] if valid_id(id) => decide(id, Decision::Deny),
            _ => Command::Usage(DENY_USAGE),
        }),
        "stop" if rest.is_empty() => Some(Command::Stop),
        "new" if rest.is_empty() => Some(Command::New),
        _ => None,
    }
}

fn decide(id: &str, decision: Decision) -> Command {
    Command::Decide {
        approval_id: id.to_owned(),
        decision,
    }
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The data a button carries: `apr:<o|s|d>:<approval id>`.
pub fn callback_data(approval_id: &str, decision: Decision) -> String {
    format!("apr:{}:{approval_id}", decision.code())
}

/// The approval and decision behind a pressed button, if it is one of ours.
pub fn parse_callback(data: &str) -> Option<(String, Decision)> {
    let rest = data.strip_prefix("apr:")?;
    let (code, id) = rest.split_once(':')?;
    let decision = Decision::from_code(code)?;
    valid_id(id).then(|| (id.to_owned(), decision))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "01a23c00-08f4-7299-91e4-607295542110";

    #[test]
    fn commands_table() {
        let cases: Vec<(&str, Option<Command>)> = vec![
            ("hello there", None),
            ("", None),
            ("approve it", None),
            ("/unknown x", None),
            (
                "/approve 01a23c00-08f4-7299-91e4-607295542110",
                Some(decide(ID, Decision::AllowOnce)),
            ),
            (
                "/approve 01a23c00-08f4-7299-91e4-607295542110 session",
                Some(decide(ID, Decision::AllowSession)),
            ),
            (
                "/approve 01a23c00-08f4-7299-91e4-607295542110 SESSION",
                Some(decide(ID, Decision::AllowSession)),
            ),
            (
                "  /approve   01a23c00-08f4-7299-91e4-607295542110  ",
                Some(decide(ID, Decision::AllowOnce)),
            ),
            (
                "/approve@demiurge_bot 01a23c00-08f4-7299-91e4-607295542110",
                Some(decide(ID, Decision::AllowOnce)),
            ),
            (
                "/APPROVE 01a23c00-08f4-7299-91e4-607295542110",
                Some(decide(ID, Decision::AllowOnce)),
            ),
            (
                "/deny 01a23c00-08f4-7299-91e4-607295542110",
                Some(decide(ID, Decision::Deny)),
            ),
            ("/approve", Some(Command::Usage(APPROVE_USAGE))),
            ("/approve a b c", Some(Command::Usage(APPROVE_USAGE))),
            ("/approve x forever", Some(Command::Usage(APPROVE_USAGE))),
            ("/approve ../../etc", Some(Command::Usage(APPROVE_USAGE))),
            ("/approve id;rm", Some(Command::Usage(APPROVE_USAGE))),
            ("/deny", Some(Command::Usage(DENY_USAGE))),
            ("/deny a session", Some(Command::Usage(DENY_USAGE))),
            ("/stop", Some(Command::Stop)),
            ("/stop@demiurge_bot", Some(Command::Stop)),
            ("/stop now please", None),
            ("/new", Some(Command::New)),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text), want, "{text:?}");
        }
        let long = format!("/deny {}", "a".repeat(65));
        assert_eq!(parse(&long), Some(Command::Usage(DENY_USAGE)));
    }

    #[test]
    fn callbacks_round_trip_within_telegrams_64_bytes() {
        for d in Decision::ALL {
            let data = callback_data(ID, d);
            assert!(data.len() <= 64, "{data}");
            assert_eq!(parse_callback(&data), Some((ID.to_owned(), d)));
        }
        for bad in [
            "",
            "apr:",
            "apr:o",
            "apr:x:abc",
            "apr:o:",
            "apr:o:a b",
            "other:o:abc",
            "apr:o:../x",
        ] {
            assert_eq!(parse_callback(bad), None, "{bad:?}");
        }
    }
}

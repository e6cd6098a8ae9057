//! Chat platform adapters for demiurge: which platforms exist, and (as the
//! channel issues land) their signature verification, identity mapping and
//! outbound delivery. The server depends on this crate; nothing here does
//! network I/O on its own.

use std::fmt;
use std::str::FromStr;

/// A chat platform a webhook route can name: `POST /v1/channels/{kind}/{tenant}/…`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelKind {
    Slack,
    Telegram,
    Discord,
    /// A generic HMAC-signed webhook.
    Webhook,
}

impl ChannelKind {
    pub const ALL: [ChannelKind; 4] = [Self::Slack, Self::Telegram, Self::Discord, Self::Webhook];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Slack => "slack",
            Self::Telegram => "telegram",
            Self::Discord => "discord",
            Self::Webhook => "webhook",
        }
    }
}

impl fmt::Display for ChannelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown channel kind {0:?}; expected one of slack, telegram, discord, webhook")]
pub struct UnknownChannel(pub String);

impl FromStr for ChannelKind {
    type Err = UnknownChannel;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownChannel(s.chars().take(40).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip() {
        for k in ChannelKind::ALL {
            assert_eq!(k.as_str().parse::<ChannelKind>(), Ok(k));
        }
    }

    #[test]
    fn unknown_kinds_are_named() {
        for bad in ["", "Slack", "irc", "slack/", "../x"] {
            let e = bad.parse::<ChannelKind>().unwrap_err();
            assert!(e.to_string().contains(&format!("{bad:?}")), "{e}");
        }
    }
}

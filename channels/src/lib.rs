//! Chat platform adapters for demiurge: which platforms exist, and their
//! wire-level rules, with no server internals and no network I/O:
//!
//! - [`verify`]: is an inbound request really the platform's (Slack `v0`
//!   HMAC with its replay window, Telegram's secret token, Discord's Ed25519,
//!   signed generic webhooks)?
//! - [`split`]: a reply cut at the platform's message limit, in order.
//! - [`wire`]: the platforms' inbound payloads and what the host makes of
//!   them ([`wire::Inbound`]).
//! - [`outbound`]: replies, approval cards with native buttons, and the
//!   edits that show a decision, as platform API requests.
//! - [`commands`]: `/approve`, `/deny`, `/stop`, `/new`, and the data an
//!   approval button carries.
//!
//! The server's `channels` room mounts these behind its webhook routes
//! (`POST /v1/channels/{kind}/{account}`), its relay and its outbox.

pub mod commands;
pub mod outbound;
pub mod split;
pub mod verify;
pub mod wire;

use std::fmt;
use std::str::FromStr;

/// A chat platform a webhook route can name: `POST /v1/channels/{kind}/{account}`.
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

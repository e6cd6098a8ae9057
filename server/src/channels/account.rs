//! Pure rules for channel accounts: credentials by platform, the fields a
//! tenant operator sets, which principal a platform user becomes, and
//! pairing codes. No I/O.

use demiurge_channels::ChannelKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Credentials by platform (CONTRACT.md, "Channel accounts"). `Debug` never
/// shows them.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum Credentials {
    Telegram(TelegramCredentials),
    Slack(SlackCredentials),
    Discord(DiscordCredentials),
    Webhook(WebhookCredentials),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials(<redacted>)")
    }
}

#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TelegramCredentials {
    pub bot_token: String,
    pub secret_token: String,
}

#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SlackCredentials {
    pub bot_token: String,
    pub signing_secret: String,
}

#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DiscordCredentials {
    pub application_id: String,
    pub public_key: String,
    pub bot_token: String,
}

#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct WebhookCredentials {
    pub secret: String,
    pub callback_url: String,
}

const MAX_SECRET: usize = 512;

fn token_chars(what: &str, s: &str, extra: &[char]) -> Result<(), String> {
    if s.is_empty() || s.len() > MAX_SECRET {
        return Err(format!("{what} must be 1 to {MAX_SECRET} characters"));
    }
    if !s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || extra.contains(&c))
    {
        // Never echo the value: it is a secret.
        return Err(format!("{what} contains characters it never has"));
    }
    Ok(())
}

impl Credentials {
    /// Parse and check the credentials object of `platform`. Messages name
    /// fields, never values.
    pub fn parse(platform: ChannelKind, v: &Value) -> Result<Self, String> {
        fn de<T: serde::de::DeserializeOwned>(p: ChannelKind, v: &Value) -> Result<T, String> {
            serde_json::from_value(v.clone()).map_err(|e| {
                // serde names the missing or unknown field, not values.
                format!("credentials for {p}: {}", strip_values(&e.to_string()))
            })
        }
        let creds = match platform {
            ChannelKind::Telegram => {
                let c: TelegramCredentials = de(platform, v)?;
                // The token is a path segment of every Bot API URL.
                token_chars("bot_token", &c.bot_token, &[':', '_', '-'])?;
                // Telegram allows A-Z, a-z, 0-9, `_` and `-`, 1 to 256 characters.
                token_chars("secret_token", &c.secret_token, &['_', '-'])?;
                if c.secret_token.len() > 256 {
                    return Err("secret_token must be at most 256 characters".into());
                }
                Credentials::Telegram(c)
            }
            ChannelKind::Slack => {
                let c: SlackCredentials = de(platform, v)?;
                token_chars("bot_token", &c.bot_token, &['-', '_'])?;
                token_chars("signing_secret", &c.signing_secret, &['-', '_'])?;
                Credentials::Slack(c)
            }
            ChannelKind::Discord => {
                let c: DiscordCredentials = de(platform, v)?;
                if c.application_id.is_empty()
                    || c.application_id.len() > 32
                    || !c.application_id.bytes().all(|b| b.is_ascii_digit())
                {
                    return Err("application_id must be the application's numeric id".into());
                }
                if c.public_key.len() != 64 || hex_decode(&c.public_key).is_none() {
                    return Err("public_key must be 64 hexadecimal characters".into());
                }
                token_chars("bot_token", &c.bot_token, &['.', '_', '-'])?;
                Credentials::Discord(c)
            }
            ChannelKind::Webhook => {
                let c: WebhookCredentials = de(platform, v)?;
                if c.secret.is_empty() || c.secret.len() > MAX_SECRET {
                    return Err(format!("secret must be 1 to {MAX_SECRET} characters"));
                }
                check_base_url(&c.callback_url).map_err(|e| format!("callback_url: {e}"))?;
                Credentials::Webhook(c)
            }
        };
        Ok(creds)
    }

    /// Every secret value, for scrubbing error text before it is stored.
    pub fn secrets(&self) -> Vec<&str> {
        match self {
            Credentials::Telegram(c) => vec![&c.bot_token, &c.secret_token],
            Credentials::Slack(c) => vec![&c.bot_token, &c.signing_secret],
            Credentials::Discord(c) => vec![&c.bot_token],
            Credentials::Webhook(c) => vec![&c.secret],
        }
    }
}

fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// serde's messages quote offending values for some errors; keep only the
/// part that names the field.
fn strip_values(msg: &str) -> String {
    if let Some(i) = msg.find("field `") {
        let rest = &msg[i..];
        let end = rest[7..].find('`').map(|e| e + 8).unwrap_or(rest.len());
        let lead = if msg.starts_with("missing") {
            "missing "
        } else if msg.starts_with("unknown") {
            "unknown "
        } else {
            ""
        };
        return format!("{lead}{}", &rest[..end]);
    }
    "expected an object of strings with the platform's fields".into()
}

/// An `api_base_url` or `callback_url`: absolute http(s), no credentials,
/// query or fragment. Returned without a trailing slash.
pub fn check_base_url(raw: &str) -> Result<String, String> {
    let u = url::Url::parse(raw.trim()).map_err(|_| "not an absolute URL".to_owned())?;
    if !matches!(u.scheme(), "http" | "https") {
        return Err("must be http or https".into());
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err("must not carry credentials".into());
    }
    if u.query().is_some() || u.fragment().is_some() {
        return Err("must not have a query or fragment".into());
    }
    if u.host_str().is_none_or(str::is_empty) {
        return Err("must name a host".into());
    }
    Ok(u.as_str().trim_end_matches('/').to_owned())
}

/// The platform's default API base.
pub fn default_base(platform: ChannelKind) -> &'static str {
    match platform {
        ChannelKind::Telegram => "https://api.telegram.org",
        ChannelKind::Slack => "https://slack.com/api",
        ChannelKind::Discord => "https://discord.com/api/v10",
        ChannelKind::Webhook => "",
    }
}

pub const MAX_ALLOWED_USERS: usize = 1000;
pub const MAX_NAME: usize = 100;

/// `allowed_users`: platform user ids as strings.
pub fn check_allowed_users(users: &[String]) -> Result<(), String> {
    if users.len() > MAX_ALLOWED_USERS {
        return Err(format!(
            "allowed_users has more than {MAX_ALLOWED_USERS} entries"
        ));
    }
    for u in users {
        if u.is_empty() || u.len() > 128 || u.chars().any(char::is_control) {
            return Err("each allowed user must be 1 to 128 printable characters".into());
        }
    }
    Ok(())
}

pub fn check_name(name: &str) -> Result<(), String> {
    let n = name.chars().count();
    if n == 0 || n > MAX_NAME || name.chars().any(char::is_control) {
        return Err(format!("name must be 1 to {MAX_NAME} printable characters"));
    }
    Ok(())
}

/// The principal a platform user becomes inside the account's tenant:
/// `<platform>-<account>-<user>`, so accounts never share principals. A user
/// id outside the principal alphabet is replaced by its hash.
pub fn principal_for(platform: ChannelKind, account_id: &str, user: &str) -> String {
    let account: String = account_id.chars().filter(|c| *c != '-').collect();
    let plain = !user.is_empty()
        && user.len() <= 64
        && user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'));
    let user = if plain {
        user.to_owned()
    } else {
        use sha2::Digest;
        format!(
            "h{}",
            &hex_encode(&sha2::Sha256::digest(user.as_bytes()))[..32]
        )
    };
    format!("{}-{account}-{user}", platform.as_str())
}

fn hex_encode(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Pairing codes: 8 characters from an alphabet without look-alikes.
pub const PAIRING_ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
pub const PAIRING_LEN: usize = 8;
pub const PAIRING_TTL_MS: i64 = 3600 * 1000;
pub const MAX_PENDING_PAIRINGS: i64 = 3;
/// Wrong codes in a row before approvals of the account are locked.
pub const PAIRING_MAX_FAILURES: i64 = 5;
pub const PAIRING_LOCK_MS: i64 = 15 * 60 * 1000;

/// A code from 8 random bytes (rejection sampling keeps it uniform).
pub fn pairing_code(mut random: impl FnMut() -> u8) -> String {
    let n = PAIRING_ALPHABET.len();
    let limit = 256 - (256 % n);
    let mut out = String::with_capacity(PAIRING_LEN);
    while out.len() < PAIRING_LEN {
        let b = usize::from(random());
        if b < limit {
            out.push(char::from(PAIRING_ALPHABET[b % n]));
        }
    }
    out
}

/// A code as an operator typed it: case and separators ignored.
pub fn normalize_code(raw: &str) -> Option<String> {
    let code: String = raw
        .chars()
        .filter(|c| !matches!(c, '-' | ' '))
        .map(|c| c.to_ascii_uppercase())
        .collect();
    (code.len() == PAIRING_LEN && code.bytes().all(|b| PAIRING_ALPHABET.contains(&b)))
        .then_some(code)
}

#[cfg(test)]
#[path = "account_tests.rs"]
mod tests;

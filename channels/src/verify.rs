//! Inbound verification: is this request really from the platform?
//!
//! Each check takes the account's secret, the request's headers and its raw
//! body (verify before parsing: a signature covers bytes, not JSON) and
//! returns `Ok(())` or why not. Comparisons are constant-time. Hand-written
//! only where it is our domain (which bytes a platform signs, its replay
//! window); HMAC, SHA-256 and Ed25519 come from maintained crates.

use ed25519_dalek::{Signature, VerifyingKey};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// Slack's replay window: a timestamp older (or newer) than this is refused.
pub const SLACK_MAX_SKEW_SECONDS: i64 = 5 * 60;

/// Why a request was not accepted as the platform's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("missing {0} header")]
    Missing(&'static str),
    #[error("malformed {0}")]
    Malformed(&'static str),
    #[error("request timestamp is outside the {0}-second window")]
    Stale(i64),
    #[error("signature does not match")]
    Mismatch,
}

type HmacSha256 = Hmac<Sha256>;

/// HMAC-SHA256 over `parts`. HMAC takes keys of any length, so this never
/// fails in practice; if it did, nothing would verify.
fn hmac_sha256(secret: &[u8], parts: &[&[u8]]) -> Result<HmacSha256, VerifyError> {
    let mut mac = HmacSha256::new_from_slice(secret).map_err(|_| VerifyError::Mismatch)?;
    for part in parts {
        mac.update(part);
    }
    Ok(mac)
}

/// Slack Events API / interactivity: `X-Slack-Request-Timestamp` and
/// `X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:{timestamp}:{body}">`,
/// within [`SLACK_MAX_SKEW_SECONDS`] of `now` (Unix seconds).
pub fn slack(
    signing_secret: &str,
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now: i64,
) -> Result<(), VerifyError> {
    let timestamp = timestamp.ok_or(VerifyError::Missing("X-Slack-Request-Timestamp"))?;
    let signature = signature.ok_or(VerifyError::Missing("X-Slack-Signature"))?;
    let at: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| VerifyError::Malformed("X-Slack-Request-Timestamp"))?;
    if (now - at).abs() > SLACK_MAX_SKEW_SECONDS {
        return Err(VerifyError::Stale(SLACK_MAX_SKEW_SECONDS));
    }
    let hex_sig = signature
        .trim()
        .strip_prefix("v0=")
        .ok_or(VerifyError::Malformed("X-Slack-Signature"))?;
    let expected = hex::decode(hex_sig).map_err(|_| VerifyError::Malformed("X-Slack-Signature"))?;
    hmac_sha256(
        signing_secret.as_bytes(),
        &[b"v0:", timestamp.trim().as_bytes(), b":", body],
    )?
    .verify_slice(&expected)
    .map_err(|_| VerifyError::Mismatch)
}

/// Telegram: the `X-Telegram-Bot-Api-Secret-Token` header must equal the
/// secret given to `setWebhook`.
pub fn telegram(secret_token: &str, header: Option<&str>) -> Result<(), VerifyError> {
    let header = header.ok_or(VerifyError::Missing("X-Telegram-Bot-Api-Secret-Token"))?;
    if secret_token.is_empty() {
        return Err(VerifyError::Mismatch);
    }
    if bool::from(header.as_bytes().ct_eq(secret_token.as_bytes())) {
        Ok(())
    } else {
        Err(VerifyError::Mismatch)
    }
}

/// Discord interactions: `X-Signature-Ed25519` (hex) over
/// `X-Signature-Timestamp` followed by the body, with the application's
/// public key (hex).
pub fn discord(
    public_key_hex: &str,
    signature: Option<&str>,
    timestamp: Option<&str>,
    body: &[u8],
) -> Result<(), VerifyError> {
    let signature = signature.ok_or(VerifyError::Missing("X-Signature-Ed25519"))?;
    let timestamp = timestamp.ok_or(VerifyError::Missing("X-Signature-Timestamp"))?;
    let key: [u8; 32] = hex::decode(public_key_hex.trim())
        .ok()
        .and_then(|k| k.try_into().ok())
        .ok_or(VerifyError::Malformed("public key"))?;
    let key = VerifyingKey::from_bytes(&key).map_err(|_| VerifyError::Malformed("public key"))?;
    let sig: [u8; 64] = hex::decode(signature.trim())
        .ok()
        .and_then(|s| s.try_into().ok())
        .ok_or(VerifyError::Malformed("X-Signature-Ed25519"))?;
    let mut message = Vec::with_capacity(timestamp.len() + body.len());
    message.extend_from_slice(timestamp.as_bytes());
    message.extend_from_slice(body);
    key.verify_strict(&message, &Signature::from_bytes(&sig))
        .map_err(|_| VerifyError::Mismatch)
}

/// The generic webhook's header value for `body`: `sha256=<hex HMAC-SHA256>`
/// (also how replies to its `callback_url` are signed).
pub fn webhook_signature(secret: &str, body: &[u8]) -> Result<String, VerifyError> {
    let mac = hmac_sha256(secret.as_bytes(), &[body])?;
    Ok(format!(
        "sha256={}",
        hex::encode(mac.finalize().into_bytes())
    ))
}

/// The generic webhook: `X-Demiurge-Signature: sha256=<hex HMAC-SHA256 of the body>`.
pub fn webhook(secret: &str, header: Option<&str>, body: &[u8]) -> Result<(), VerifyError> {
    let header = header.ok_or(VerifyError::Missing("X-Demiurge-Signature"))?;
    let hex_sig = header
        .trim()
        .strip_prefix("sha256=")
        .ok_or(VerifyError::Malformed("X-Demiurge-Signature"))?;
    let expected =
        hex::decode(hex_sig).map_err(|_| VerifyError::Malformed("X-Demiurge-Signature"))?;
    if secret.is_empty() {
        return Err(VerifyError::Mismatch);
    }
    hmac_sha256(secret.as_bytes(), &[body])?
        .verify_slice(&expected)
        .map_err(|_| VerifyError::Mismatch)
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;

//! HTTP a runner asks for: `urllib.request` in an authored tool or a slot
//! (a package's web search provider, say) is made by the host, through
//! [`Outbound`]: the URL policy, pinned DNS, every redirect judged again,
//! bounded in time and size. The runner installs the bridge as urllib's
//! default opener, so a package's unchanged `urlopen` call lands here.
//!
//! Tenant credentials a package names reach the request here and only
//! here: the core holds a placeholder (`demiurge-credential:<name>`), and
//! the host puts the sealed value in its place in the URL, the headers
//! and the body of the outgoing request. The value never enters the
//! runner, the core or an event.

use std::time::Duration;

use base64::Engine as _;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{json, Value};

use super::runner::HostAnswer;
use crate::net::{Limits, Outbound, OutboundErrorKind, OutboundRequest};

use crate::sealing::CREDENTIAL_PLACEHOLDER as CREDENTIAL_PREFIX;
/// Longest a bridged request may take.
const MAX_TIMEOUT: Duration = Duration::from_secs(60);
/// Most body bytes a bridged request reads.
const MAX_BODY: usize = 8 * 1024 * 1024;
/// Headers the client connection owns.
const HOP_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "connection",
    "transfer-encoding",
    "keep-alive",
    "upgrade",
    "proxy-authorization",
    "te",
    "trailer",
];

/// One bridged request, as the runner asked for it (the body decoded
/// from its base64).
#[derive(Debug, Clone, PartialEq)]
pub struct HttpAsk {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub timeout: Option<f64>,
}

/// The credential names `ask`'s placeholders name.
pub fn credential_names(ask: &HttpAsk) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    let mut scan = |text: &str| {
        let mut rest = text;
        while let Some(at) = rest.find(CREDENTIAL_PREFIX) {
            let after = &rest[at + CREDENTIAL_PREFIX.len()..];
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
                .unwrap_or(after.len());
            out.insert(after[..end].trim_end_matches('.').to_owned());
            rest = &after[end..];
        }
    };
    scan(&ask.url);
    for (_, v) in &ask.headers {
        scan(v);
    }
    if let Some(body) = ask
        .body
        .as_deref()
        .and_then(|b| std::str::from_utf8(b).ok())
    {
        scan(body);
    }
    out
}

/// Make `ask` through `outbound`, with each placeholder replaced by its
/// value from `opened` (a name missing there refuses the request). What
/// comes back never carries an opened value.
pub async fn fetch(
    outbound: &Outbound,
    ask: HttpAsk,
    opened: &std::collections::BTreeMap<String, String>,
) -> HostAnswer {
    let credential = |name: &str| opened.get(name).cloned();
    let scrub = |bytes: Vec<u8>| -> Vec<u8> {
        match String::from_utf8(bytes) {
            Ok(mut text) => {
                for value in opened.values().filter(|v| v.len() >= 4) {
                    text = text.replace(value.as_str(), "<redacted:credential>");
                }
                text.into_bytes()
            }
            Err(e) => e.into_bytes(),
        }
    };
    let method = reqwest::Method::from_bytes(ask.method.to_ascii_uppercase().as_bytes())
        .map_err(|_| ("invalid", format!("{:?} is not an HTTP method", ask.method)))?;
    let fill = |text: &str| -> Result<String, (&'static str, String)> {
        fill_credentials(text, &credential)
    };
    let url = fill(&ask.url)?;
    let mut headers = HeaderMap::new();
    for (name, value) in &ask.headers {
        if HOP_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            continue;
        }
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ("invalid", format!("{name:?} is not a header name")))?;
        let mut value = HeaderValue::from_str(&fill(value)?)
            .map_err(|_| ("invalid", format!("header {name} has an invalid value")))?;
        value.set_sensitive(true);
        headers.append(name, value);
    }
    let body = match ask.body {
        None => None,
        Some(bytes) => Some(match String::from_utf8(bytes) {
            Ok(text) => fill(&text)?.into_bytes(),
            Err(e) => e.into_bytes(),
        }),
    };
    let timeout = ask
        .timeout
        .filter(|t| t.is_finite() && *t > 0.0)
        .map(Duration::from_secs_f64)
        .unwrap_or(Duration::from_secs(30))
        .min(MAX_TIMEOUT);
    let request = OutboundRequest {
        method,
        url: url.clone(),
        headers,
        body,
        limits: Limits {
            timeout,
            max_bytes: MAX_BODY,
            max_redirects: 5,
        },
    };
    match outbound.send(request).await {
        Ok(resp) => {
            let headers: Vec<Value> = resp
                .headers
                .iter()
                .filter_map(|(k, v)| v.to_str().ok().map(|v| json!([k.as_str(), v])))
                .map(|pair| {
                    let text = pair.to_string();
                    let clean = String::from_utf8(scrub(text.into_bytes())).unwrap_or_default();
                    serde_json::from_str(&clean).unwrap_or(pair)
                })
                .collect();
            let body = scrub(resp.body);
            let reason = reqwest::StatusCode::from_u16(resp.status)
                .ok()
                .and_then(|s| s.canonical_reason())
                .unwrap_or("");
            Ok(json!({
                "status": resp.status,
                "reason": reason,
                "headers": headers,
                "body": base64::engine::general_purpose::STANDARD.encode(&body),
                "truncated": resp.truncated,
            }))
        }
        Err(e) => Err(match e.kind {
            OutboundErrorKind::Blocked(_) => ("denied", e.to_string()),
            _ => (
                "unavailable",
                String::from_utf8(scrub(e.to_string().into_bytes())).unwrap_or_default(),
            ),
        }),
    }
}

/// Put each credential placeholder's value in its place; a name the
/// caller may not use is refused (so a mistyped name never goes out).
pub fn fill_credentials(
    text: &str,
    credential: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<String, (&'static str, String)> {
    if !text.contains(CREDENTIAL_PREFIX) {
        return Ok(text.to_owned());
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(CREDENTIAL_PREFIX) {
        out.push_str(&rest[..at]);
        let after = &rest[at + CREDENTIAL_PREFIX.len()..];
        let end = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
            .unwrap_or(after.len());
        let name = after[..end].trim_end_matches('.');
        match credential(name) {
            Some(value) => out.push_str(&value),
            None => {
                return Err((
                    "denied",
                    format!(
                    "credential {name:?} is not set for this tenant, or not one this tool may use"
                ),
                ))
            }
        }
        rest = &after[name.len()..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_and_unknown_ones_refused() {
        let known = |name: &str| (name == "web_search_brave.api_key").then(|| "sk-123".to_owned());
        assert_eq!(
            fill_credentials(
                "Bearer demiurge-credential:web_search_brave.api_key",
                &known
            )
            .unwrap(),
            "Bearer sk-123"
        );
        assert_eq!(
            fill_credentials(
                r#"{"api_key": "demiurge-credential:web_search_brave.api_key", "q": "x"}"#,
                &known
            )
            .unwrap(),
            r#"{"api_key": "sk-123", "q": "x"}"#
        );
        assert_eq!(fill_credentials("plain", &known).unwrap(), "plain");
        let e = fill_credentials("demiurge-credential:other.key", &known).unwrap_err();
        assert_eq!(e.0, "denied");
        assert!(e.1.contains("other.key"), "{e:?}");
    }
}

//! `web_extract` (`network.fetch`): one GET through the outbound client
//! ([`crate::net::Outbound`]), HTML turned into clean markdown.
//!
//! Order of checks: the plan refuses what the policy refuses without DNS
//! (scheme, names like `metadata.google.internal`, literal addresses),
//! then asks for approval showing only the credential-free origin (the
//! rule's target is a hash of the whole URL, so "allow for the session"
//! covers exactly that URL); the review, after the approval, resolves and
//! judges again; the request itself judges every hop once more and
//! connects only to judged addresses. The result carries the final safe
//! origin, its addresses and every decision.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::contract::{lenient_int, Approval, Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};
use crate::net::{Limits, OutboundErrorKind, OutboundRequest};
use crate::policy::approval_policy::{ApprovalPolicy, Risk};
use crate::policy::url_policy::UrlVerdict;

/// The registry's defaults and ceilings.
const DEFAULT_TIMEOUT_SECONDS: i64 = 20;
const MAX_TIMEOUT_SECONDS: i64 = 60;
const DEFAULT_MAX_CHARS: i64 = 12_000;
/// Bytes read from a page before conversion; the text is cut to
/// `max_chars` after it.
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

pub struct WebExtract;

#[derive(Deserialize)]
pub struct Args {
    url: String,
    #[serde(default, deserialize_with = "lenient_int")]
    timeout_seconds: Option<i64>,
    #[serde(default, deserialize_with = "lenient_int")]
    max_chars: Option<i64>,
}

pub struct Prepared {
    url: String,
    timeout: Duration,
    max_chars: usize,
}

/// Never shows the URL (it may hold credentials).
impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("timeout", &self.timeout)
            .field("max_chars", &self.max_chars)
            .finish_non_exhaustive()
    }
}

/// A positive value up to `max`; anything else is the default.
fn bounded(value: Option<i64>, default: i64, max: i64) -> i64 {
    match value {
        Some(v) if v > 0 => v.min(max),
        _ => default,
    }
}

impl Tool for WebExtract {
    type Args = Args;
    type Prepared = Prepared;

    fn plan(env: &ToolEnv<'_>, args: Args) -> Plan<Prepared> {
        let url = args.url.trim().to_owned();
        if url.is_empty() {
            return Plan::Done(ToolOutcome::error(ToolStatus::Invalid, "url is required"));
        }
        let target = match env.walls.outbound.precheck(&url) {
            Ok(t) => t,
            Err(verdict) => return Plan::Done(blocked("URL blocked by Host policy", &verdict)),
        };
        let origin = target.origin().to_owned();
        let digest = Sha256::digest(url.as_bytes());
        let approval = Approval {
            baseline: ApprovalPolicy::Prompt,
            risk: Risk::High,
            action: "fetch".into(),
            target: hex(&digest),
            reason: format!("Fetch {origin}"),
            preview: json!({"origin": origin}),
            session_cacheable: true,
        };
        let timeout = bounded(
            args.timeout_seconds,
            DEFAULT_TIMEOUT_SECONDS,
            MAX_TIMEOUT_SECONDS,
        );
        let max_chars = bounded(args.max_chars, DEFAULT_MAX_CHARS, DEFAULT_MAX_CHARS);
        Plan::run(
            Gate::one(approval),
            Prepared {
                url,
                timeout: Duration::from_secs(timeout.unsigned_abs()),
                max_chars: usize::try_from(max_chars).unwrap_or(12_000),
            },
        )
    }

    /// After the approval: resolve and judge again (the answer may have
    /// changed while the user decided).
    async fn review(env: &ToolEnv<'_>, prepared: Prepared) -> Plan<Prepared> {
        let verdict = env.walls.outbound.check(&prepared.url).await;
        if !verdict.allowed {
            return Plan::Done(blocked(
                "URL blocked by Host policy before request",
                &verdict,
            ));
        }
        Plan::run(Gate::none(), prepared)
    }

    async fn execute(env: &ToolEnv<'_>, p: Prepared) -> ToolOutcome {
        let limits = Limits {
            timeout: p.timeout,
            max_bytes: MAX_BODY_BYTES,
            max_redirects: 5,
        };
        let request = OutboundRequest::get(p.url, limits);
        let fetch = env.walls.outbound.send(request);
        let response = tokio::select! {
            r = fetch => r,
            _ = env.ctx.cancel.cancelled() => {
                return ToolOutcome::error(ToolStatus::Cancelled, "the turn was cancelled");
            }
        };
        let response = match response {
            Ok(r) => r,
            Err(e) => {
                let decisions = json!(e.decisions);
                let (status, message, policy) = match &e.kind {
                    OutboundErrorKind::Blocked(v) => (
                        ToolStatus::Denied,
                        format!("URL blocked by Host policy: {}", v.reason),
                        json!(v),
                    ),
                    OutboundErrorKind::TimedOut(_) => (
                        ToolStatus::TimedOut,
                        format!("web_extract failed: {}", e.kind),
                        Value::Null,
                    ),
                    other => (
                        ToolStatus::Failed,
                        format!("web_extract failed: {other}"),
                        Value::Null,
                    ),
                };
                return ToolOutcome {
                    status,
                    content: Value::String(message.clone()),
                    data: json!({"executionStarted": true, "error": message,
                        "url_policy": policy, "url_decisions": decisions}),
                };
            }
        };
        let content_type = response.content_type().map(str::to_owned);
        let raw = String::from_utf8_lossy(&response.body).into_owned();
        let is_html = looks_like_html(content_type.as_deref(), &raw);
        let text = if is_html {
            match tokio::task::spawn_blocking(move || html_to_markdown(&raw)).await {
                Ok(text) => text,
                Err(_) => {
                    return ToolOutcome::error(
                        ToolStatus::Failed,
                        "web_extract failed: the page could not be converted",
                    )
                }
            }
        } else {
            raw
        };
        let (text, cut) = cut_chars(&text, p.max_chars);
        ToolOutcome {
            status: ToolStatus::Succeeded,
            content: Value::String(text),
            data: json!({
                "executionStarted": true,
                "url": response.verdict.origin,
                "addresses": response.verdict.addresses,
                "url_policy": response.verdict,
                "url_decisions": response.decisions,
                "status": response.status,
                "content_type": content_type,
                "format": if is_html { "markdown" } else { "text" },
                "truncated": cut || response.truncated,
            }),
        }
    }
}

fn blocked(prefix: &str, verdict: &UrlVerdict) -> ToolOutcome {
    let message = format!("{prefix}: {}", verdict.reason);
    ToolOutcome {
        status: ToolStatus::Denied,
        content: Value::String(message.clone()),
        data: json!({"executionStarted": false, "error": message, "url_policy": verdict}),
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// HTML by its content type, or by its first bytes when the server sent none
/// (or a generic one).
fn looks_like_html(content_type: Option<&str>, body: &str) -> bool {
    let ct = content_type.unwrap_or("").to_ascii_lowercase();
    if ct.contains("html") {
        return true;
    }
    if !(ct.is_empty() || ct.starts_with("application/octet-stream")) {
        return false;
    }
    let head: String = body
        .trim_start()
        .chars()
        .take(15)
        .collect::<String>()
        .to_ascii_lowercase();
    head.starts_with("<!doctype html") || head.starts_with("<html")
}

/// Clean markdown: no scripts, styles or embedded objects; at most one
/// blank line in a row.
pub fn html_to_markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "svg", "iframe", "object", "embed",
            "canvas", "head",
        ])
        .build();
    let markdown = converter.convert(html).unwrap_or_default();
    let mut out = String::with_capacity(markdown.len());
    let mut blank = 0;
    for line in markdown.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}

/// The first `max` characters, and whether anything was cut.
fn cut_chars(text: &str, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        Some((i, _)) => (text[..i].to_owned(), true),
        None => (text.to_owned(), false),
    }
}

#[cfg(test)]
#[path = "web_tests.rs"]
mod tests;

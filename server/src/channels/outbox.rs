//! The durable outbox: one worker delivers pending [`Item`]s to the
//! platforms with `reqwest`, in order per chat, under a per-account
//! `governor` rate limit. A 429 waits for the platform's `Retry-After`
//! (header, or Telegram's `parameters.retry_after`, or Discord's
//! `retry_after`); other transient failures back off exponentially; a
//! refusal (4xx) fails the row and is recorded as the account's last error.
//! Rows are leased before sending, so instances sharing a database never
//! send one twice; a stopped server leaves rows pending, and the next start
//! delivers them.
//!
//! Every request goes through the one outbound client ([`crate::net::Outbound`]):
//! a tenant-set `api_base_url` or webhook `callback_url` is resolved, judged
//! by the URL policy (or allowed by `--url-allow`) and pinned like any other
//! tenant-driven request; redirects are not followed.

use std::collections::{HashMap, HashSet};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use demiurge_channels::outbound::{self, ApprovalCard};
use demiurge_channels::ChannelKind;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use reqwest::header::{
    HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER,
};
use reqwest::Method;
use serde_json::{json, Value};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::account::{default_base, Credentials};
use super::items::Item;
use super::metrics::ChannelMetrics;
use crate::net::{Limits, Outbound as Client, OutboundErrorKind, OutboundRequest};
use crate::sealing::Sealer;
use crate::store::{CardRow, ChannelAccountRow, OutboxRow, Store};

/// Rows read per pass.
const BATCH: u32 = 200;
/// How long a sender holds a row before another may retry it.
const LEASE_MS: i64 = 30_000;
/// Attempts before a row is given up.
const MAX_ATTEMPTS: i64 = 12;
/// Longest wait a platform's Retry-After may impose.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);
/// Messages per second per account (Telegram's global bot limit is 30/s).
const PER_ACCOUNT_PER_SECOND: u32 = 30;

/// Why a delivery did not happen.
#[derive(Debug, Clone, PartialEq)]
pub enum SendError {
    /// Try again after this long (zero: back off by attempts).
    Retry { after: Duration, error: String },
    /// Give up on this row.
    Permanent(String),
}

/// The wait a 429 asks for: the `Retry-After` header (seconds), else the
/// body's `parameters.retry_after` (Telegram) or `retry_after` (Discord,
/// fractional seconds), else one second; at most an hour.
pub fn retry_after(header: Option<&str>, body: &Value) -> Duration {
    let secs = header
        .and_then(|h| h.trim().parse::<f64>().ok())
        .or_else(|| {
            body.pointer("/parameters/retry_after")
                .and_then(Value::as_f64)
        })
        .or_else(|| body.get("retry_after").and_then(Value::as_f64))
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(1.0);
    Duration::from_secs_f64(secs).min(MAX_RETRY_AFTER)
}

/// Backoff after the `attempts`-th failure: 1, 2, 4 … 60 seconds.
pub fn backoff(attempts: i64) -> Duration {
    let exp = attempts.clamp(1, 7) - 1;
    Duration::from_secs((1u64 << exp).min(60))
}

/// Replace every secret in `text` (error text must never carry a token).
pub fn scrub(text: &str, secrets: &[&str]) -> String {
    let mut out: String = text.chars().take(300).collect();
    for s in secrets.iter().filter(|s| s.len() >= 4) {
        out = out.replace(s, "<redacted>");
    }
    out
}

#[derive(Clone)]
pub struct Outbox {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    key: Sealer,
    client: Client,
    limiter: DefaultKeyedRateLimiter<String>,
    notify: Notify,
    metrics: Arc<ChannelMetrics>,
}

/// An account ready to send: its platform, opened credentials and base URL.
struct Sender {
    platform: ChannelKind,
    creds: Credentials,
    base: String,
}

impl Outbox {
    pub fn new(store: Store, key: Sealer, client: Client, metrics: Arc<ChannelMetrics>) -> Self {
        let quota =
            Quota::per_second(NonZeroU32::new(PER_ACCOUNT_PER_SECOND).unwrap_or(NonZeroU32::MIN));
        Self {
            inner: Arc::new(Inner {
                store,
                key,
                client,
                limiter: RateLimiter::keyed(quota),
                notify: Notify::new(),
                metrics,
            }),
        }
    }

    /// Wake the worker: rows were just queued.
    pub fn wake(&self) {
        self.inner.notify.notify_one();
    }

    /// Deliver until `shutdown`.
    pub fn spawn(&self, shutdown: CancellationToken) {
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = this.inner.notify.notified() => {}
                    _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                    _ = shutdown.cancelled() => return,
                }
                match this.pass().await {
                    Ok(true) => this.wake(),
                    Ok(false) => {}
                    Err(e) => tracing::warn!(error = %e, "channel outbox pass failed"),
                }
            }
        });
    }

    /// Send what is due now (passes until none is left or `deadline`);
    /// rows waiting out a retry stay for the next instance's worker.
    pub async fn flush(&self, deadline: std::time::Instant) {
        while std::time::Instant::now() < deadline {
            match self.pass().await {
                Ok(true) => {}
                Ok(false) | Err(_) => return,
            }
        }
    }

    /// One pass over due rows; true when there may be more right away.
    async fn pass(&self) -> Result<bool, sqlx::Error> {
        let now = crate::time::now_ms();
        let rows = self.inner.store.channel_outbox_due(now, BATCH).await?;
        let full = rows.len() as u32 == BATCH;
        let mut by_account: HashMap<String, Vec<OutboxRow>> = HashMap::new();
        for r in rows {
            by_account.entry(r.account_id.clone()).or_default().push(r);
        }
        let jobs = by_account
            .into_values()
            .map(|rows| self.deliver_account(rows));
        futures_util::future::join_all(jobs).await;
        Ok(full)
    }

    async fn deliver_account(&self, rows: Vec<OutboxRow>) {
        let inner = &self.inner;
        let Some(first) = rows.first() else { return };
        let account_id = first.account_id.clone();
        let sender = match inner.store.get_channel_account(&account_id).await {
            Ok(Some(row)) => match self.sender(row) {
                Some(s) => s,
                None => return,
            },
            Ok(None) => return, // Deleted: its rows went with it.
            Err(e) => {
                tracing::warn!(error = %e, "channel outbox: load account");
                return;
            }
        };
        let mut blocked: HashSet<String> = HashSet::new();
        for r in rows {
            if blocked.contains(&r.chat) {
                continue;
            }
            // Order per chat: an earlier row still waiting holds this one back.
            match inner
                .store
                .channel_outbox_blocked(&r.account_id, &r.chat, r.id)
                .await
            {
                Ok(false) => {}
                _ => {
                    blocked.insert(r.chat.clone());
                    continue;
                }
            }
            let now = crate::time::now_ms();
            if !inner
                .store
                .channel_outbox_claim(r.id, now, now + LEASE_MS)
                .await
                .unwrap_or(false)
            {
                blocked.insert(r.chat.clone());
                continue;
            }
            inner.limiter.until_key_ready(&account_id).await;
            let item: Item = match serde_json::from_str(&r.payload) {
                Ok(i) => i,
                Err(_) => {
                    let _ = inner
                        .store
                        .channel_outbox_failed(r.id, "unreadable row")
                        .await;
                    continue;
                }
            };
            let outcome = self.send(&sender, &r, &item).await;
            let secrets = sender.creds.secrets();
            match outcome {
                Ok(message_ref) => {
                    let _ = inner.store.channel_outbox_sent(r.id).await;
                    let _ = inner.store.channel_touch_delivery(&account_id).await;
                    inner.metrics.sent(sender.platform);
                    if let (
                        Item::Approval {
                            approval_id,
                            tool,
                            risk,
                            summary,
                            ..
                        },
                        Some(m),
                    ) = (&item, message_ref)
                    {
                        let card = ApprovalCard {
                            approval_id,
                            tool,
                            risk,
                            summary,
                        };
                        let _ = inner
                            .store
                            .channel_put_card(&CardRow {
                                approval_id: approval_id.clone(),
                                account_id: account_id.clone(),
                                chat: r.chat.clone(),
                                message_ref: m,
                                text: card.text(),
                            })
                            .await;
                    }
                }
                Err(SendError::Retry { after, error }) if r.attempts + 1 < MAX_ATTEMPTS => {
                    let error = scrub(&error, &secrets);
                    // Zero: no word from the platform on when; back off.
                    let after = if after.is_zero() {
                        backoff(r.attempts + 1)
                    } else {
                        after
                    };
                    let next = crate::time::now_ms() + after.as_millis() as i64;
                    let _ = inner.store.channel_outbox_retry(r.id, next, &error).await;
                    let _ = inner.store.channel_record_error(&account_id, &error).await;
                    inner.metrics.retried(sender.platform);
                    blocked.insert(r.chat.clone());
                }
                Err(SendError::Retry { error, .. }) | Err(SendError::Permanent(error)) => {
                    let error = scrub(&error, &secrets);
                    tracing::warn!(account = %account_id, platform = %sender.platform, error = %error,
                        "channel delivery failed");
                    let _ = inner.store.channel_outbox_failed(r.id, &error).await;
                    let _ = inner.store.channel_record_error(&account_id, &error).await;
                    inner.metrics.failed(sender.platform, 1);
                }
            }
        }
    }

    fn sender(&self, row: ChannelAccountRow) -> Option<Sender> {
        let platform: ChannelKind = row.platform.parse().ok()?;
        let creds = super::open_credentials(&self.inner.key, &row, platform).ok()?;
        let base = match (&creds, &row.api_base_url) {
            (Credentials::Webhook(c), _) => c.callback_url.clone(),
            (_, Some(b)) => b.clone(),
            (_, None) => default_base(platform).to_owned(),
        };
        Some(Sender {
            platform,
            creds,
            base,
        })
    }

    /// One platform request for `item`. `Ok(Some(ref))` names the message
    /// created (for cards).
    async fn send(
        &self,
        s: &Sender,
        r: &OutboxRow,
        item: &Item,
    ) -> Result<Option<String>, SendError> {
        let chat = r.chat.as_str();
        let thread = r.thread.as_deref();
        match &s.creds {
            Credentials::Telegram(c) => {
                let req = match item {
                    Item::Text { text, .. } => outbound::telegram::message(chat, thread, text),
                    Item::Approval {
                        approval_id,
                        tool,
                        risk,
                        summary,
                        ..
                    } => outbound::telegram::approval(
                        chat,
                        thread,
                        &ApprovalCard {
                            approval_id,
                            tool,
                            risk,
                            summary,
                        },
                    ),
                    Item::Edit { approval_id, text } => {
                        let Some(card) = self.card(approval_id).await? else {
                            return Ok(None);
                        };
                        outbound::telegram::edit(chat, &card.message_ref, &edited(&card.text, text))
                    }
                    Item::CallbackAnswer { callback_id, text } => {
                        outbound::telegram::answer_callback(callback_id, text)
                    }
                };
                let url = format!("{}/bot{}/{}", s.base, c.bot_token, req.method);
                let body = self.call(Method::POST, url, None, &[], &req.body).await?;
                if body.get("ok").and_then(Value::as_bool) != Some(true) {
                    return Err(SendError::Permanent(format!(
                        "telegram {}: {}",
                        req.method,
                        body.get("description")
                            .and_then(Value::as_str)
                            .unwrap_or("not ok")
                    )));
                }
                Ok(body.pointer("/result/message_id").map(|m| match m {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                }))
            }
            Credentials::Slack(c) => {
                let req = match item {
                    Item::Text { text, .. } => outbound::slack::message(chat, thread, text),
                    Item::Approval {
                        approval_id,
                        tool,
                        risk,
                        summary,
                        ..
                    } => outbound::slack::approval(
                        chat,
                        thread,
                        &ApprovalCard {
                            approval_id,
                            tool,
                            risk,
                            summary,
                        },
                    ),
                    Item::Edit { approval_id, text } => {
                        let Some(card) = self.card(approval_id).await? else {
                            return Ok(None);
                        };
                        outbound::slack::edit(chat, &card.message_ref, &edited(&card.text, text))
                    }
                    Item::CallbackAnswer { .. } => return Ok(None),
                };
                let url = format!("{}/{}", s.base, req.method);
                let auth = format!("Bearer {}", c.bot_token);
                let body = self
                    .call(Method::POST, url, Some(&auth), &[], &req.body)
                    .await?;
                if body.get("ok").and_then(Value::as_bool) != Some(true) {
                    let err = body
                        .get("error")
                        .and_then(Value::as_str)
                        .unwrap_or("not ok");
                    if err == "ratelimited" {
                        return Err(SendError::Retry {
                            after: Duration::from_secs(1),
                            error: "slack: ratelimited".into(),
                        });
                    }
                    return Err(SendError::Permanent(format!("slack {}: {err}", req.method)));
                }
                Ok(body.get("ts").and_then(Value::as_str).map(str::to_owned))
            }
            Credentials::Discord(c) => {
                let bot = format!("Bot {}", c.bot_token);
                let hook =
                    |handle: &str| format!("{}/webhooks/{}/{}", s.base, c.application_id, handle);
                let channel = format!("{}/channels/{chat}/messages", s.base);
                // (method, url, bot auth?, body, interaction handle)
                let (method, url, auth, body, handle) = match item {
                    Item::Text {
                        text,
                        handle: Some(h),
                        original: true,
                    } => (
                        Method::PATCH,
                        format!("{}/messages/@original", hook(h)),
                        None,
                        json!({"content": text, "allowed_mentions": {"parse": []}}),
                        Some(h),
                    ),
                    Item::Text {
                        text,
                        handle: Some(h),
                        ..
                    } => (
                        Method::POST,
                        hook(h),
                        None,
                        outbound::discord::message(text).body,
                        Some(h),
                    ),
                    Item::Text {
                        text, handle: None, ..
                    } => (
                        Method::POST,
                        channel,
                        Some(&bot),
                        outbound::discord::message(text).body,
                        None,
                    ),
                    Item::Approval {
                        approval_id,
                        tool,
                        risk,
                        summary,
                        handle,
                    } => {
                        let body = outbound::discord::approval(&ApprovalCard {
                            approval_id,
                            tool,
                            risk,
                            summary,
                        })
                        .body;
                        match handle {
                            Some(h) => (Method::POST, hook(h), None, body, Some(h)),
                            None => (Method::POST, channel, Some(&bot), body, None),
                        }
                    }
                    Item::Edit { approval_id, text } => {
                        let Some(card) = self.card(approval_id).await? else {
                            return Ok(None);
                        };
                        let body = json!({"content": edited(&card.text, text), "components": []});
                        match card.message_ref.split_once('/') {
                            Some((h, id)) => (
                                Method::PATCH,
                                format!("{}/messages/{id}", hook(h)),
                                None,
                                body,
                                None,
                            ),
                            None => (
                                Method::PATCH,
                                format!("{}/{}", channel, card.message_ref),
                                Some(&bot),
                                body,
                                None,
                            ),
                        }
                    }
                    Item::CallbackAnswer { .. } => return Ok(None),
                };
                let answer = self
                    .call(method, url, auth.map(String::as_str), &[], &body)
                    .await?;
                Ok(answer
                    .get("id")
                    .and_then(Value::as_str)
                    .map(|id| match handle {
                        Some(h) => format!("{h}/{id}"),
                        None => id.to_owned(),
                    }))
            }
            Credentials::Webhook(c) => {
                let body = match item {
                    Item::Text { text, .. } => {
                        json!({"type": "message", "conversation": chat, "text": text})
                    }
                    Item::Approval {
                        approval_id,
                        tool,
                        risk,
                        summary,
                        ..
                    } => {
                        let card = ApprovalCard {
                            approval_id,
                            tool,
                            risk,
                            summary,
                        };
                        json!({"type": "approval", "conversation": chat, "approval_id": approval_id,
                            "tool": tool, "risk": risk, "summary": summary, "text": card.text(),
                            "choices": ["allow_once", "allow_session", "deny"]})
                    }
                    Item::Edit { approval_id, text } => {
                        json!({"type": "approval.decided", "conversation": chat,
                            "approval_id": approval_id, "text": text})
                    }
                    Item::CallbackAnswer { .. } => return Ok(None),
                };
                let bytes = body.to_string();
                let sig = demiurge_channels::verify::webhook_signature(&c.secret, bytes.as_bytes())
                    .map_err(|e| SendError::Permanent(e.to_string()))?;
                self.call(
                    Method::POST,
                    c.callback_url.clone(),
                    None,
                    &[("x-demiurge-signature", sig)],
                    &body,
                )
                .await?;
                Ok(matches!(item, Item::Approval { .. }).then(|| "webhook".to_owned()))
            }
        }
    }

    async fn card(&self, approval_id: &str) -> Result<Option<CardRow>, SendError> {
        self.inner
            .store
            .channel_card(approval_id)
            .await
            .map_err(|e| SendError::Retry {
                after: Duration::from_secs(1),
                error: format!("database: {e}"),
            })
    }
    /// One request through the outbound client; the JSON answer on success.
    async fn call(
        &self,
        method: Method,
        url: String,
        auth: Option<&str>,
        extra: &[(&'static str, String)],
        body: &Value,
    ) -> Result<Value, SendError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(a) = auth {
            let v = HeaderValue::from_str(a)
                .map_err(|_| SendError::Permanent("credentials unusable in a header".into()))?;
            headers.insert(AUTHORIZATION, v);
        }
        for (k, v) in extra {
            if let Ok(v) = HeaderValue::from_str(v) {
                headers.insert(HeaderName::from_static(k), v);
            }
        }
        let request = OutboundRequest {
            method,
            url,
            headers,
            // Exactly these bytes: a webhook's signature covers them.
            body: Some(body.to_string().into_bytes()),
            limits: Limits {
                timeout: Duration::from_secs(15),
                max_bytes: 256 * 1024,
                // A platform API answers; it does not send us elsewhere.
                max_redirects: 0,
            },
        };
        let resp = match self.inner.client.send(request).await {
            Ok(r) => r,
            Err(e) => {
                return Err(match e.kind {
                    OutboundErrorKind::Blocked(v) => SendError::Permanent(format!(
                        "destination {} refused by the URL policy: {}",
                        v.origin, v.reason
                    )),
                    OutboundErrorKind::TooManyRedirects(_) | OutboundErrorKind::BadRedirect => {
                        SendError::Permanent("the platform answered with a redirect".into())
                    }
                    // Never carries the URL (a Telegram URL holds the bot token).
                    other => SendError::Retry {
                        after: Duration::ZERO,
                        error: format!("request failed: {other}"),
                    },
                });
            }
        };
        let status = reqwest::StatusCode::from_u16(resp.status)
            .unwrap_or(reqwest::StatusCode::INTERNAL_SERVER_ERROR);
        let answer: Value = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
        if status.as_u16() == 429 {
            let after = retry_after(
                resp.headers.get(RETRY_AFTER).and_then(|h| h.to_str().ok()),
                &answer,
            );
            return Err(SendError::Retry {
                after,
                error: format!("rate limited (429), retry after {after:?}"),
            });
        }
        if status.is_server_error() {
            return Err(SendError::Retry {
                after: Duration::ZERO,
                error: format!("platform answered {status}"),
            });
        }
        if !status.is_success() {
            let why = answer
                .get("description")
                .or_else(|| answer.get("message"))
                .or_else(|| answer.get("error"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            return Err(SendError::Permanent(format!(
                "platform answered {status} {why}"
            )));
        }
        Ok(answer)
    }
}

/// A card's first line over the decision.
fn edited(card_text: &str, decision: &str) -> String {
    format!(
        "{}\n{decision}",
        card_text.lines().next().unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_from_header_or_body() {
        assert_eq!(retry_after(Some("3"), &Value::Null), Duration::from_secs(3));
        assert_eq!(
            retry_after(
                None,
                &json!({"ok": false, "error_code": 429, "parameters": {"retry_after": 7}})
            ),
            Duration::from_secs(7)
        );
        assert_eq!(
            retry_after(None, &json!({"retry_after": 0.5})),
            Duration::from_millis(500)
        );
        assert_eq!(
            retry_after(Some("soon"), &Value::Null),
            Duration::from_secs(1)
        );
        assert_eq!(
            retry_after(Some("-4"), &Value::Null),
            Duration::from_secs(1)
        );
        assert_eq!(retry_after(Some("999999"), &Value::Null), MAX_RETRY_AFTER);
    }

    #[test]
    fn backoff_grows_and_caps() {
        let got: Vec<u64> = (1..=9).map(|a| backoff(a).as_secs()).collect();
        assert_eq!(got, vec![1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(backoff(0), Duration::from_secs(1));
    }

    #[test]
    fn errors_lose_their_secrets() {
        let e = scrub(
            "POST https://api.telegram.org/bot123:SECRET/sendMessage failed",
            &["123:SECRET", "ab"],
        );
        assert!(!e.contains("SECRET"), "{e}");
        assert!(e.contains("<redacted>"));
    }

    #[test]
    fn edits_keep_the_cards_first_line() {
        assert_eq!(
            edited(
                "Approval needed: terminal (risk high)\n$ ls\nReply …",
                "Denied by x."
            ),
            "Approval needed: terminal (risk high)\nDenied by x."
        );
    }
}

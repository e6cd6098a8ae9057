//! The model-provider seam: a request of chat messages and tool definitions,
//! a reply of text and/or tool calls. Messages use the OpenAI chat shape
//! (`role`, `content`, `tool_calls`, `tool_call_id`) as the history format.

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::script::ScriptStep;

pub struct ModelRequest<'a> {
    /// Conversation so far, including this turn's user message and tool results.
    pub messages: &'a [Value],
    /// Provider tool definitions from the turn's catalog.
    pub tools: &'a [Value],
    /// The turn's script, if the client sent one (fake provider only).
    pub script: Option<&'a [ScriptStep]>,
    /// Zero-based index of this model call within the turn.
    pub step: usize,
    /// The user's input for this turn.
    pub input: &'a str,
    /// The core's `model.model_name`, overriding the provider's default model.
    pub model: Option<&'a str>,
    /// The core's `model.model_options` (e.g. `max_tokens`, `temperature`).
    pub options: Option<&'a serde_json::Map<String, Value>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// The tokens one model call used, as its provider reported them.
/// `input` counts every prompt token, cached ones included; `cached` is the
/// part read from the provider's prompt cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenUsage {
    pub input: u64,
    pub output: u64,
    pub cached: u64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelReply {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    /// What the call used; `None` when the provider reported nothing
    /// (unknown, which is not zero).
    pub usage: Option<TokenUsage>,
}

impl ModelReply {
    /// The assistant message to append to history.
    pub fn to_message(&self) -> Value {
        let mut m = serde_json::json!({"role": "assistant", "content": self.content});
        if !self.tool_calls.is_empty() {
            m["tool_calls"] = Value::Array(
                self.tool_calls
                    .iter()
                    .map(|c| {
                        serde_json::json!({"id": c.id, "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments.to_string()}})
                    })
                    .collect(),
            );
        }
        m
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The provider answered with an error we will not retry.
    #[error("provider error: {0}")]
    Rejected(String),
    /// Transport failure or retries exhausted.
    #[error("provider unavailable: {0}")]
    Unavailable(String),
    /// The provider's answer did not have the expected shape.
    #[error("provider reply malformed: {0}")]
    Malformed(String),
}

pub trait Provider: Send + Sync + 'static {
    fn name(&self) -> &'static str;
    /// The model asked for when the core names none (usage is attributed
    /// to it).
    fn default_model(&self) -> &str;
    fn complete<'a>(
        &'a self,
        req: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelReply, ProviderError>>;
}

/// Send a model request, retrying 429s, 5xx and transport errors with
/// exponential backoff (or the server's `Retry-After`, capped at 30 s), and
/// return the first successful response. Other statuses are `Rejected`
/// with `error_message` of the body; what the providers share lives here.
pub(super) async fn send_with_retries(
    build: impl Fn() -> reqwest::RequestBuilder,
    max_retries: u32,
    base_backoff: std::time::Duration,
    error_message: fn(&str) -> String,
) -> Result<reqwest::Response, ProviderError> {
    use std::time::Duration;
    let mut attempt = 0u32;
    loop {
        let retry_after;
        match build().send().await {
            Ok(resp) if resp.status().is_success() => return Ok(resp),
            Ok(resp) => {
                let status = resp.status();
                retry_after = resp
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|h| h.to_str().ok())
                    .and_then(|s| s.trim().parse::<u64>().ok())
                    .map(Duration::from_secs);
                let text = resp.text().await.unwrap_or_default();
                let msg = format!("{} {}", status.as_u16(), error_message(&text));
                let retryable = status.as_u16() == 429 || status.is_server_error();
                if !retryable {
                    return Err(ProviderError::Rejected(msg));
                }
                if attempt >= max_retries {
                    return Err(ProviderError::Unavailable(format!(
                        "{msg} after {} attempts",
                        attempt + 1
                    )));
                }
                tracing::warn!(
                    status = status.as_u16(),
                    attempt,
                    "provider asked us to retry"
                );
            }
            Err(e) => {
                if attempt >= max_retries {
                    return Err(ProviderError::Unavailable(e.without_url().to_string()));
                }
                retry_after = None;
                tracing::warn!(error = %e.without_url(), attempt, "provider request failed; retrying");
            }
        }
        let backoff = base_backoff * 2u32.saturating_pow(attempt);
        tokio::time::sleep(retry_after.unwrap_or(backoff).min(Duration::from_secs(30))).await;
        attempt += 1;
    }
}

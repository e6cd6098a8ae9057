//! Any OpenAI-compatible Chat Completions endpoint with tool calling.
//! Retries 429 and 5xx with exponential backoff (honouring `Retry-After`).
//! The API key goes only into the `Authorization` header: never into a log,
//! an event or an error message.

use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::{json, Value};

use super::provider::{ModelReply, ModelRequest, Provider, ProviderError, TokenUsage, ToolCall};
use crate::config::ApiKey;

pub struct OpenAiProvider {
    client: reqwest::Client,
    base_url: String,
    api_key: Option<ApiKey>,
    model: String,
    max_retries: u32,
    base_backoff: Duration,
}

impl OpenAiProvider {
    pub fn new(base_url: &str, api_key: Option<ApiKey>, model: &str) -> anyhow::Result<Self> {
        let client = crate::net::client_builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(300))
            .build()?;
        Ok(Self {
            client,
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            model: model.to_owned(),
            max_retries: 4,
            base_backoff: Duration::from_millis(250),
        })
    }

    /// Shorter backoff for tests against a local stand-in.
    pub fn with_backoff(mut self, base: Duration, retries: u32) -> Self {
        self.base_backoff = base;
        self.max_retries = retries;
        self
    }

    fn body(&self, req: &ModelRequest<'_>) -> Value {
        let model = req.model.unwrap_or(&self.model);
        let mut body = json!({"model": model, "messages": req.messages});
        for key in ["temperature", "top_p", "max_tokens", "stop", "seed"] {
            if let Some(v) = req.options.and_then(|o| o.get(key)) {
                body[key] = v.clone();
            }
        }
        if !req.tools.is_empty() {
            body["tools"] = Value::Array(req.tools.to_vec());
        }
        body
    }

    async fn call(&self, req: ModelRequest<'_>) -> Result<ModelReply, ProviderError> {
        let url = format!("{}/chat/completions", self.base_url);
        let body = self.body(&req);
        let resp = super::provider::send_with_retries(
            || {
                let rb = self.client.post(&url).json(&body);
                match &self.api_key {
                    Some(k) => rb.bearer_auth(k.expose()),
                    None => rb,
                }
            },
            self.max_retries,
            self.base_backoff,
            error_message,
        )
        .await?;
        let v: Value = resp
            .json()
            .await
            .map_err(|e| ProviderError::Malformed(e.without_url().to_string()))?;
        parse_reply(&v)
    }
}

/// The `error.message` of an OpenAI error body, bounded; never echoes headers.
fn error_message(body: &str) -> String {
    let msg = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| body.to_owned());
    msg.chars().take(300).collect()
}

/// The `usage` object of a chat completion (OpenAI-compatible servers fill
/// it in differently: a missing count is zero only when the object exists
/// and names the others). `None` when the reply carries no usage.
fn usage_of(usage: Option<&Value>) -> Option<TokenUsage> {
    let u = usage.filter(|u| u.is_object())?;
    let count = |p: &str| u.pointer(p).and_then(Value::as_u64);
    let input = count("/prompt_tokens");
    let output = count("/completion_tokens");
    if input.is_none() && output.is_none() {
        return None;
    }
    Some(TokenUsage {
        input: input.unwrap_or(0),
        output: output.unwrap_or(0),
        cached: count("/prompt_tokens_details/cached_tokens").unwrap_or(0),
    })
}

fn parse_reply(v: &Value) -> Result<ModelReply, ProviderError> {
    let msg = v
        .pointer("/choices/0/message")
        .ok_or_else(|| ProviderError::Malformed("no choices[0].message".into()))?;
    let content = msg
        .get("content")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut tool_calls = Vec::new();
    if let Some(calls) = msg.get("tool_calls").and_then(Value::as_array) {
        for (i, c) in calls.iter().enumerate() {
            let name = c
                .pointer("/function/name")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    ProviderError::Malformed(format!("tool_calls[{i}] has no function.name"))
                })?;
            let raw = c
                .pointer("/function/arguments")
                .cloned()
                .unwrap_or(Value::Null);
            // Arguments arrive as a JSON string; a model may emit invalid JSON,
            // which the dispatcher reports as `invalid` rather than failing the turn.
            let arguments = match raw {
                Value::String(s) if s.trim().is_empty() => json!({}),
                Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
                Value::Null => json!({}),
                other => other,
            };
            let id = c
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| format!("call_{i}"));
            tool_calls.push(ToolCall {
                id,
                name: name.to_owned(),
                arguments,
            });
        }
    }
    Ok(ModelReply {
        content,
        tool_calls,
        usage: usage_of(v.get("usage")),
    })
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn default_model(&self) -> &str {
        &self.model
    }

    fn complete<'a>(
        &'a self,
        req: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelReply, ProviderError>> {
        self.call(req).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_text_reply() {
        let r = parse_reply(&json!({"choices":[{"message":{"role":"assistant","content":"hi"}}]}))
            .unwrap();
        assert_eq!(r.content.as_deref(), Some("hi"));
        assert!(r.tool_calls.is_empty());
    }

    #[test]
    fn parses_tool_calls_with_string_arguments() {
        let r = parse_reply(&json!({"choices":[{"message":{"role":"assistant","content":null,
            "tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}}]}}]}))
        .unwrap();
        assert_eq!(r.tool_calls[0].id, "c1");
        assert_eq!(r.tool_calls[0].arguments, json!({"path":"a"}));
    }

    #[test]
    fn keeps_invalid_argument_json_as_a_string() {
        let r = parse_reply(&json!({"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"x","arguments":"{oops"}}]}}]})).unwrap();
        assert_eq!(r.tool_calls[0].arguments, json!("{oops"));
    }

    #[test]
    fn malformed_replies_are_errors() {
        assert!(parse_reply(&json!({})).is_err());
        assert!(
            parse_reply(&json!({"choices":[{"message":{"tool_calls":[{"function":{}}]}}]}))
                .is_err()
        );
    }

    #[test]
    fn error_messages_are_bounded() {
        assert_eq!(
            error_message(r#"{"error":{"message":"bad model"}}"#),
            "bad model"
        );
        assert_eq!(error_message(&"x".repeat(1000)).len(), 300);
    }

    #[test]
    fn usage_is_read_and_absent_usage_is_unknown() {
        let r = parse_reply(&json!({"choices":[{"message":{"content":"hi"}}],
            "usage":{"prompt_tokens":120,"completion_tokens":7,"total_tokens":127,
                "prompt_tokens_details":{"cached_tokens":64}}}))
        .unwrap();
        assert_eq!(
            r.usage,
            Some(TokenUsage {
                input: 120,
                output: 7,
                cached: 64
            })
        );
        let r = parse_reply(&json!({"choices":[{"message":{"content":"hi"}}],
            "usage":{"prompt_tokens":5,"completion_tokens":1}}))
        .unwrap();
        assert_eq!(r.usage.map(|u| u.cached), Some(0));
        for absent in [json!(null), json!({}), json!("n/a")] {
            let r =
                parse_reply(&json!({"choices":[{"message":{"content":"hi"}}], "usage": absent}))
                    .unwrap();
            assert_eq!(r.usage, None, "{absent}");
        }
        let r = parse_reply(&json!({"choices":[{"message":{"content":"hi"}}]})).unwrap();
        assert_eq!(r.usage, None);
    }
}

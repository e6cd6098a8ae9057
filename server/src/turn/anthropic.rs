//! The Anthropic Messages API (`POST {base}/v1/messages`) with tool use,
//! streamed (`stream: true`, Server-Sent Events). The host's history is in
//! the OpenAI chat shape; [`to_messages`] turns it into Anthropic's
//! (`system` apart, tool calls as `tool_use` blocks, tool results as
//! `tool_result` blocks in a user message, consecutive same-role messages
//! merged). Retries 429, 5xx and 529 (overloaded) with backoff, honouring
//! `retry-after`. The key goes only into the `x-api-key` header.
//!
//! The SSE reader is hand-written (a line splitter and a `data:` buffer,
//! per the SSE specification's parsing rules): the stream is read with
//! `Response::chunk`, so no streaming feature of the HTTP client and no
//! extra crate is needed for forty lines.

use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::{json, Map, Value};

use super::provider::{ModelReply, ModelRequest, Provider, ProviderError, TokenUsage, ToolCall};
use crate::config::ApiKey;

/// The API version this client speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` when the core's `model_options` sets none.
pub const DEFAULT_MAX_TOKENS: u64 = 4096;

pub struct AnthropicProvider {
    client: reqwest::Client,
    base_url: String,
    api_key: Option<ApiKey>,
    /// The model when the core names none.
    model: String,
    max_retries: u32,
    base_backoff: Duration,
}

impl AnthropicProvider {
    pub fn new(base_url: &str, api_key: Option<ApiKey>, model: &str) -> anyhow::Result<Self> {
        let client = crate::net::client_builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(600))
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

    fn body(&self, req: &ModelRequest<'_>) -> Value {
        let (system, messages) = to_messages(req.messages);
        let empty = Map::new();
        let options = req.options.unwrap_or(&empty);
        let max_tokens = options
            .get("max_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_MAX_TOKENS);
        let mut body = json!({
            "model": req.model.unwrap_or(&self.model),
            "max_tokens": max_tokens,
            "messages": messages,
            "stream": true,
        });
        if let Some(system) = system {
            body["system"] = Value::String(system);
        }
        for key in ["temperature", "top_p", "top_k", "stop_sequences"] {
            if let Some(v) = options.get(key) {
                body[key] = v.clone();
            }
        }
        let tools: Vec<Value> = req.tools.iter().filter_map(to_tool).collect();
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools);
        }
        body
    }

    async fn call(&self, req: ModelRequest<'_>) -> Result<ModelReply, ProviderError> {
        let url = format!("{}/v1/messages", self.base_url);
        let body = self.body(&req);
        let resp = super::provider::send_with_retries(
            || {
                let rb = self
                    .client
                    .post(&url)
                    .header("anthropic-version", ANTHROPIC_VERSION)
                    .header(reqwest::header::ACCEPT, "text/event-stream")
                    .json(&body);
                match &self.api_key {
                    Some(k) => rb.header("x-api-key", k.expose()),
                    None => rb,
                }
            },
            self.max_retries,
            self.base_backoff,
            error_message,
        )
        .await?;
        read_stream(resp).await
    }
}

impl Provider for AnthropicProvider {
    fn name(&self) -> &'static str {
        "anthropic"
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

/// An OpenAI tool definition (`{type: function, function: {name,
/// description, parameters}}`) as an Anthropic tool.
fn to_tool(def: &Value) -> Option<Value> {
    let f = def.get("function")?;
    Some(json!({
        "name": f.get("name")?.as_str()?,
        "description": f.get("description").and_then(Value::as_str).unwrap_or_default(),
        "input_schema": f.get("parameters").cloned().unwrap_or_else(|| json!({"type": "object"})),
    }))
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// History in the OpenAI chat shape → (system text, Anthropic messages).
pub fn to_messages(history: &[Value]) -> (Option<String>, Vec<Value>) {
    let mut system: Vec<String> = Vec::new();
    let mut out: Vec<Value> = Vec::new();
    let mut push = |role: &str, block: Value| {
        if let Some(last) = out.last_mut() {
            if last["role"] == role {
                if let Some(blocks) = last["content"].as_array_mut() {
                    blocks.push(block);
                    return;
                }
            }
        }
        out.push(json!({"role": role, "content": [block]}));
    };
    for m in history {
        let content = m.get("content").unwrap_or(&Value::Null);
        match m.get("role").and_then(Value::as_str).unwrap_or_default() {
            "system" => system.push(text_of(content)),
            "assistant" => {
                let text = text_of(content);
                if !text.is_empty() {
                    push("assistant", json!({"type": "text", "text": text}));
                }
                for c in m
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let args = c.pointer("/function/arguments");
                    let input = match args {
                        Some(Value::String(s)) => {
                            serde_json::from_str::<Value>(s).unwrap_or_else(|_| json!({}))
                        }
                        Some(v @ Value::Object(_)) => v.clone(),
                        _ => json!({}),
                    };
                    let input = if input.is_object() { input } else { json!({}) };
                    push(
                        "assistant",
                        json!({"type": "tool_use", "id": c["id"], "name": c.pointer("/function/name").cloned().unwrap_or(Value::Null), "input": input}),
                    );
                }
            }
            "tool" => push(
                "user",
                json!({"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": text_of(content)}),
            ),
            _ => {
                let text = text_of(content);
                // Anthropic refuses empty text blocks.
                let text = if text.is_empty() {
                    "(empty)".into()
                } else {
                    text
                };
                push("user", json!({"type": "text", "text": text}));
            }
        }
    }
    // The conversation must start with a user message.
    if out.first().is_some_and(|m| m["role"] != "user") {
        out.insert(
            0,
            json!({"role": "user", "content": [{"type": "text", "text": "(conversation continues)"}]}),
        );
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    (system, out)
}

/// The `error.message` of an Anthropic error body, bounded.
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

/// Reads the event stream of one message to its end.
async fn read_stream(mut resp: reqwest::Response) -> Result<ModelReply, ProviderError> {
    let mut acc = StreamState::default();
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let chunk = resp
            .chunk()
            .await
            .map_err(|e| ProviderError::Unavailable(e.without_url().to_string()))?;
        let Some(chunk) = chunk else { break };
        buf.extend_from_slice(&chunk);
        while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            let line = String::from_utf8_lossy(&line);
            acc.line(line.trim_end_matches(['\n', '\r']))?;
            if acc.done {
                return acc.finish();
            }
        }
    }
    if !buf.is_empty() {
        let line = String::from_utf8_lossy(&buf).into_owned();
        acc.line(line.trim_end_matches('\r'))?;
    }
    acc.line("")?;
    acc.finish()
}

/// One content block being streamed.
#[derive(Debug)]
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

/// The SSE parser and the message it assembles.
#[derive(Debug, Default)]
pub struct StreamState {
    data: String,
    blocks: Vec<Block>,
    /// `message_stop` arrived.
    done: bool,
    stop_reason: Option<String>,
    /// From `message_start` (input, cache reads and writes) and
    /// `message_delta` (output, cumulative); `None` until one says.
    usage: Option<TokenUsage>,
}

impl StreamState {
    /// Feeds one line of the stream (without its newline).
    pub fn line(&mut self, line: &str) -> Result<(), ProviderError> {
        if line.is_empty() {
            if self.data.is_empty() {
                return Ok(());
            }
            let data = std::mem::take(&mut self.data);
            let event: Value = serde_json::from_str(&data)
                .map_err(|e| ProviderError::Malformed(format!("event data is not JSON: {e}")))?;
            return self.event(&event);
        }
        if let Some(rest) = line.strip_prefix("data:") {
            if !self.data.is_empty() {
                self.data.push('\n');
            }
            self.data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
        }
        // `event:`, `id:`, `retry:` and comments: the data's `type` says it all.
        Ok(())
    }

    fn event(&mut self, e: &Value) -> Result<(), ProviderError> {
        let index = e.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
        match e.get("type").and_then(Value::as_str).unwrap_or_default() {
            "content_block_start" => {
                let b = &e["content_block"];
                let block = match b["type"].as_str() {
                    Some("text") => Block::Text(b["text"].as_str().unwrap_or_default().to_owned()),
                    Some("tool_use") => Block::ToolUse {
                        id: b["id"].as_str().unwrap_or_default().to_owned(),
                        name: b["name"].as_str().unwrap_or_default().to_owned(),
                        json: String::new(),
                    },
                    _ => Block::Other,
                };
                while self.blocks.len() < index {
                    self.blocks.push(Block::Other);
                }
                if self.blocks.len() == index {
                    self.blocks.push(block);
                } else {
                    self.blocks[index] = block;
                }
            }
            "content_block_delta" => {
                let d = &e["delta"];
                match (self.blocks.get_mut(index), d["type"].as_str()) {
                    (Some(Block::Text(t)), Some("text_delta")) => {
                        t.push_str(d["text"].as_str().unwrap_or_default())
                    }
                    (Some(Block::ToolUse { json, .. }), Some("input_json_delta")) => {
                        json.push_str(d["partial_json"].as_str().unwrap_or_default())
                    }
                    (None, _) => {
                        return Err(ProviderError::Malformed(format!(
                            "delta for content block {index} before its start"
                        )))
                    }
                    _ => {}
                }
            }
            "message_start" => {
                if let Some(u) = e.pointer("/message/usage").filter(|u| u.is_object()) {
                    let count = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
                    let cached = count("cache_read_input_tokens");
                    let usage = self.usage.get_or_insert_with(TokenUsage::default);
                    // Anthropic's `input_tokens` leaves out cache reads and writes.
                    usage.input =
                        count("input_tokens") + count("cache_creation_input_tokens") + cached;
                    usage.cached = cached;
                    usage.output = usage.output.max(count("output_tokens"));
                }
            }
            "message_delta" => {
                if let Some(r) = e.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(r.to_owned());
                }
                if let Some(out) = e.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    self.usage.get_or_insert_with(TokenUsage::default).output = out;
                }
            }
            "message_stop" => self.done = true,
            "error" => {
                let msg = e
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("stream error");
                return Err(ProviderError::Unavailable(format!(
                    "anthropic stream error: {}",
                    msg.chars().take(300).collect::<String>()
                )));
            }
            // content_block_stop, ping, and types added later.
            _ => {}
        }
        Ok(())
    }

    /// The assembled reply.
    pub fn finish(self) -> Result<ModelReply, ProviderError> {
        if !self.done && self.blocks.is_empty() {
            return Err(ProviderError::Malformed(
                "the stream ended before any content".into(),
            ));
        }
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        for b in self.blocks {
            match b {
                Block::Text(t) => text.push_str(&t),
                Block::ToolUse { id, name, json } => {
                    // Invalid argument JSON is reported by the dispatcher as `invalid`.
                    let arguments = if json.trim().is_empty() {
                        json!({})
                    } else {
                        serde_json::from_str(&json).unwrap_or(Value::String(json))
                    };
                    tool_calls.push(ToolCall {
                        id,
                        name,
                        arguments,
                    });
                }
                Block::Other => {}
            }
        }
        if self.stop_reason.as_deref() == Some("max_tokens") && tool_calls.is_empty() {
            tracing::warn!("anthropic reply cut at max_tokens");
        }
        Ok(ModelReply {
            content: (!text.is_empty() || tool_calls.is_empty()).then_some(text),
            tool_calls,
            usage: self.usage,
        })
    }
}

#[cfg(test)]
#[path = "anthropic_tests.rs"]
mod tests;

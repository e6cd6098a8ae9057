//! The offline, deterministic provider. Without a script it answers
//! `[fake] <input>`, first calling `tools_list` when the input asks for it;
//! with a script it plays one step per model call. It reports token usage
//! as a deterministic count: a token per four bytes (rounded up) of the
//! request's messages and of the reply's assistant message, none cached.

use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use super::provider::{ModelReply, ModelRequest, Provider, ProviderError, TokenUsage, ToolCall};

#[derive(Debug, Default)]
pub struct FakeProvider;

fn call_id(step: usize, i: usize) -> String {
    format!("call_{step}_{i}")
}

impl Provider for FakeProvider {
    fn name(&self) -> &'static str {
        "fake"
    }

    fn default_model(&self) -> &str {
        "fake"
    }

    fn complete<'a>(
        &'a self,
        req: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<ModelReply, ProviderError>> {
        async move {
            let mut r = reply(&req);
            r.usage = Some(usage(&req, &r));
            Ok(r)
        }
        .boxed()
    }
}

/// A token per four bytes, rounded up: deterministic, so tests can predict it.
fn tokens(bytes: usize) -> u64 {
    bytes.div_ceil(4) as u64
}

/// What the fake provider reports one call used.
pub fn usage(req: &ModelRequest<'_>, reply: &ModelReply) -> TokenUsage {
    let input: usize = req.messages.iter().map(|m| m.to_string().len()).sum();
    TokenUsage {
        input: tokens(input),
        output: tokens(reply.to_message().to_string().len()),
        cached: 0,
    }
}

fn reply(req: &ModelRequest<'_>) -> ModelReply {
    if let Some(script) = req.script {
        return match script.get(req.step) {
            Some(step) => ModelReply {
                content: step.content.clone(),
                tool_calls: step
                    .tool_calls
                    .iter()
                    .enumerate()
                    .map(|(i, c)| ToolCall {
                        id: call_id(req.step, i),
                        name: c.name.clone(),
                        arguments: c.arguments.clone(),
                    })
                    .collect(),
                usage: None,
            },
            // A script that ends on tool calls still ends the turn cleanly.
            None => ModelReply {
                content: Some(String::new()),
                tool_calls: vec![],
                usage: None,
            },
        };
    }
    if req.step == 0 && req.input.contains("tools_list") {
        return ModelReply {
            content: None,
            tool_calls: vec![ToolCall {
                id: call_id(0, 0),
                name: "tools_list".into(),
                arguments: serde_json::json!({}),
            }],
            usage: None,
        };
    }
    ModelReply {
        content: Some(format!("[fake] {}", req.input)),
        tool_calls: vec![],
        usage: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::turn::script;

    fn req<'a>(
        input: &'a str,
        step: usize,
        script: Option<&'a [script::ScriptStep]>,
    ) -> ModelRequest<'a> {
        ModelRequest {
            messages: &[],
            tools: &[],
            script,
            step,
            input,
            model: None,
            options: None,
        }
    }

    #[test]
    fn echoes() {
        let r = reply(&req("hello", 0, None));
        assert_eq!(r.content.as_deref(), Some("[fake] hello"));
        assert!(r.tool_calls.is_empty());
    }

    #[test]
    fn calls_tools_list_first_when_asked() {
        let r = reply(&req("please tools_list", 0, None));
        assert_eq!(r.tool_calls[0].name, "tools_list");
        let r = reply(&req("please tools_list", 1, None));
        assert_eq!(r.content.as_deref(), Some("[fake] please tools_list"));
    }

    #[test]
    fn plays_a_script_then_stops() {
        let s = script::parse(&serde_json::json!([
            {"tool_calls":[{"name":"a","arguments":{"x":1}},{"name":"b"}]},
            {"content":"done"}
        ]))
        .unwrap();
        let r0 = reply(&req("go", 0, Some(&s)));
        assert_eq!(r0.tool_calls.len(), 2);
        assert_eq!(r0.tool_calls[1].id, "call_0_1");
        assert_eq!(
            reply(&req("go", 1, Some(&s))).content.as_deref(),
            Some("done")
        );
        let end = reply(&req("go", 2, Some(&s)));
        assert!(end.tool_calls.is_empty());
    }

    #[tokio::test]
    async fn reports_a_deterministic_usage() {
        let messages = [serde_json::json!({"role": "user", "content": "hello"})];
        let mut r = req("hello", 0, None);
        r.messages = &messages;
        let reply = FakeProvider.complete(r).await.unwrap();
        // {"content":"hello","role":"user"}: 34 bytes; the reply
        // {"content":"[fake] hello","role":"assistant"}: 46 bytes.
        assert_eq!(
            reply.usage,
            Some(TokenUsage {
                input: 9,
                output: 12,
                cached: 0
            })
        );
    }
}

use super::*;

fn feed(stream: &str) -> Result<ModelReply, ProviderError> {
    let mut s = StreamState::default();
    for line in stream.lines() {
        s.line(line)?;
    }
    s.line("")?;
    s.finish()
}

/// The shape of Anthropic's documented tool-use stream: a text block, then
/// a `tool_use` block whose input arrives as `input_json_delta` pieces.
const TOOL_STREAM: &str = r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-sonnet-4-5","stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":2},"content":[],"stop_reason":null}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Okay"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":", let me check."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"read_file","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"no"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"tes.md\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}
"#;

#[test]
fn a_streamed_tool_use_becomes_a_tool_call() {
    let r = feed(TOOL_STREAM).unwrap();
    assert_eq!(r.content.as_deref(), Some("Okay, let me check."));
    assert_eq!(
        r.tool_calls,
        vec![ToolCall {
            id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
            name: "read_file".into(),
            arguments: json!({"path": "notes.md"}),
        }]
    );
}

#[test]
fn a_streamed_text_reply() {
    let stream = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n\
        event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
        event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n\
        event: message_stop\ndata: {\"type\":\"message_stop\"}\n";
    let r = feed(stream).unwrap();
    assert_eq!(r.content.as_deref(), Some("Hello"));
    assert!(r.tool_calls.is_empty());
}

#[test]
fn stream_errors_and_garbage_are_errors() {
    let e = feed("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n").unwrap_err();
    assert!(e.to_string().contains("Overloaded"), "{e}");
    assert!(feed("data: {not json\n").is_err());
    assert!(feed("").is_err(), "an empty stream is not a reply");
    let early = "data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n";
    assert!(feed(early).is_err());
}

#[test]
fn invalid_tool_input_json_is_kept_for_the_dispatcher() {
    let stream = "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"x\",\"input\":{}}}\n\n\
        data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{oops\"}}\n\n\
        data: {\"type\":\"message_stop\"}\n";
    let r = feed(stream).unwrap();
    assert_eq!(r.tool_calls[0].arguments, json!("{oops"));
    assert_eq!(r.content, None);
}

#[test]
fn openai_history_becomes_anthropic_messages() {
    let history = vec![
        json!({"role": "system", "content": "be brief"}),
        json!({"role": "user", "content": "list my notes"}),
        json!({"role": "assistant", "content": "Sure.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "todo", "arguments": "{oops"}}
        ]}),
        json!({"role": "tool", "tool_call_id": "c1", "content": "A"}),
        json!({"role": "tool", "tool_call_id": "c2", "content": "B"}),
        json!({"role": "assistant", "content": "Done."}),
        json!({"role": "user", "content": ""}),
    ];
    let (system, msgs) = to_messages(&history);
    assert_eq!(system.as_deref(), Some("be brief"));
    assert_eq!(
        msgs,
        vec![
            json!({"role": "user", "content": [{"type": "text", "text": "list my notes"}]}),
            json!({"role": "assistant", "content": [
                {"type": "text", "text": "Sure."},
                {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a"}},
                {"type": "tool_use", "id": "c2", "name": "todo", "input": {}}
            ]}),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "A"},
                {"type": "tool_result", "tool_use_id": "c2", "content": "B"}
            ]}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "Done."}]}),
            json!({"role": "user", "content": [{"type": "text", "text": "(empty)"}]}),
        ]
    );
    let (_, msgs) = to_messages(&[json!({"role": "assistant", "content": "hi"})]);
    assert_eq!(
        msgs[0]["role"], "user",
        "a conversation starts with the user"
    );
}

#[test]
fn tools_and_options_map_to_the_request() {
    let p = AnthropicProvider::new("http://x", None, "claude").unwrap();
    let options = json!({"max_tokens": 100, "temperature": 0.2, "ignored": 1});
    let tools = [
        json!({"type": "function", "function": {"name": "t", "description": "d", "parameters": {"type": "object"}}}),
    ];
    let body = p.body(&ModelRequest {
        messages: &[json!({"role": "user", "content": "hi"})],
        tools: &tools,
        script: None,
        step: 0,
        input: "hi",
        model: Some("claude-x"),
        options: options.as_object(),
    });
    assert_eq!(body["model"], "claude-x");
    assert_eq!(body["max_tokens"], 100);
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["stream"], true);
    assert!(body.get("ignored").is_none());
    assert_eq!(
        body["tools"],
        json!([{"name": "t", "description": "d", "input_schema": {"type": "object"}}])
    );
}

#[test]
fn usage_comes_from_message_start_and_the_last_message_delta() {
    // The documented stream: 472 input tokens at the start, 89 output at the end.
    let r = feed(TOOL_STREAM).unwrap();
    assert_eq!(
        r.usage,
        Some(TokenUsage {
            input: 472,
            output: 89,
            cached: 0
        })
    );
    // Cache reads and writes are prompt tokens Anthropic counts apart.
    let cached = "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\
        \"cache_creation_input_tokens\":200,\"cache_read_input_tokens\":3000,\"output_tokens\":1}}}\n\n\
        data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"ok\"}}\n\n\
        data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":5}}\n\n\
        data: {\"type\":\"message_stop\"}\n";
    assert_eq!(
        feed(cached).unwrap().usage,
        Some(TokenUsage {
            input: 3210,
            output: 5,
            cached: 3000
        })
    );
    // A stream that says nothing of usage: unknown, not zero.
    let silent = "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"ok\"}}\n\n\
        data: {\"type\":\"message_stop\"}\n";
    assert_eq!(feed(silent).unwrap().usage, None);
}

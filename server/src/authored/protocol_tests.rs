use serde_json::json;

use super::*;

#[test]
fn lines_parse_into_messages_and_garbage_does_not() {
    assert_eq!(
        parse_line(r#"{"op":"ready","pid":7}"#),
        Some(FromRunner::Ready { pid: Some(7) })
    );
    assert_eq!(
        parse_line(r#"{"op":"capability","id":1,"name":"fs.read","slot_path":"agent/tools/x"}"#),
        Some(FromRunner::Capability {
            id: 1,
            name: "fs.read".into(),
            slot_path: Some("agent/tools/x".into())
        })
    );
    assert_eq!(
        parse_line(r#"{"op":"result","id":2,"value":{"content":"hi"}}"#),
        Some(FromRunner::Result {
            id: 2,
            value: json!({"content": "hi"})
        })
    );
    for garbage in [
        "",
        "hello",
        "{}",
        r#"{"op":"launch"}"#,
        r#"{"op":"result"}"#,
        r#"{"op":"result","id":-1,"value":1}"#,
        "[1,2]",
    ] {
        assert_eq!(parse_line(garbage), None, "{garbage}");
    }
    let huge = format!(
        r#"{{"op":"output","id":1,"text":"{}"}}"#,
        "x".repeat(MAX_LINE_BYTES)
    );
    assert_eq!(parse_line(&huge), None);
}

#[test]
fn call_lines_are_one_json_line() {
    let args = json!({"text": "a\nb"});
    let line = CallMessage {
        id: 3,
        name: "echo",
        dir: "/r/tools/echo",
        lib: Some("/r/lib"),
        slot_path: "agent/tools/echo",
        module: "module",
        function: "execute",
        turn: json!({"session_id": "s"}),
        workspace: "/w",
        args: &args,
    }
    .line();
    assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
    let v: serde_json::Value = serde_json::from_str(line.trim_end()).unwrap();
    assert_eq!(v["tool"]["function"], "execute");
    assert_eq!(v["tool"]["lib"], "/r/lib");
    assert_eq!(v["args"]["text"], "a\nb");
    assert_eq!(
        capability_reply(4, false),
        "{\"allowed\":false,\"id\":4,\"op\":\"capability\"}\n"
    );
}

#[test]
fn a_tool_result_becomes_the_outcome_views() {
    let o = outcome_from_value(&json!({"content": "echo: hi", "data": null,
        "is_error": false, "model_output": null, "display_output": null}));
    assert_eq!(o.status, ToolStatus::Succeeded);
    assert_eq!(o.content, json!("echo: hi"));
    assert_eq!(o.data, serde_json::Value::Null);
    let o = outcome_from_value(&json!({"content": "full", "model_output": "short",
        "display_output": "card", "data": {"n": 1}}));
    assert_eq!(
        o.content,
        json!("short"),
        "model_output is what the model sees"
    );
    assert_eq!(
        o.data,
        json!({"content": "full", "display_output": "card", "data": {"n": 1}})
    );
    let o = outcome_from_value(&json!({"content": "nope", "is_error": true}));
    assert_eq!(o.status, ToolStatus::Failed);
    // Plain values and non-text content.
    assert_eq!(outcome_from_value(&json!("text")).content, json!("text"));
    assert_eq!(outcome_from_value(&json!(42)).content, json!("42"));
    assert_eq!(
        outcome_from_value(&json!({"content": {"a": 1}})).content,
        json!("{\"a\":1}")
    );
}

#[test]
fn the_hosts_lifecycle_keys_are_ignored() {
    let o = outcome_from_value(&json!({"content": "x", "is_error": false,
        "executionStarted": false, "denial": {"reason": "fake"}, "approval": "granted",
        "data": {"executionStarted": false, "approval": 1, "kept": true}}));
    assert_eq!(o.status, ToolStatus::Succeeded);
    assert_eq!(o.data, json!({"data": {"kept": true}}));
    let o = outcome_from_value(&json!({"content": "x", "is_error": true, "denial": "policy"}));
    assert_eq!(
        o.status,
        ToolStatus::Failed,
        "a returned denial is not a denial"
    );
}

#[test]
fn raised_errors_are_typed_and_bounded() {
    let o = outcome_from_error("raised", "ValueError", "bad input");
    assert_eq!(o.status, ToolStatus::Failed);
    assert_eq!(o.content, json!("the tool raised ValueError: bad input"));
    let o = outcome_from_error(
        "capability",
        "CapabilityDenied",
        "capability 'net' is not granted",
    );
    assert_eq!(o.status, ToolStatus::Denied);
    let long = "e".repeat(10_000);
    let o = outcome_from_error("raised", "E", &long);
    assert!(o.content.as_str().unwrap().chars().count() <= MAX_ERROR_CHARS + 30);
}

#[test]
fn host_requests_parse_and_replies_are_one_line() {
    assert_eq!(
        parse_line(
            r#"{"op":"state","id":3,"scope":"session","action":"set","target":"n","value":2}"#
        ),
        Some(FromRunner::State {
            id: 3,
            scope: "session".into(),
            action: "set".into(),
            target: "n".into(),
            value: json!(2)
        })
    );
    assert_eq!(
        parse_line(r#"{"op":"state","id":4,"scope":"core","action":"snapshot"}"#),
        Some(FromRunner::State {
            id: 4,
            scope: "core".into(),
            action: "snapshot".into(),
            target: String::new(),
            value: Value::Null
        })
    );
    assert_eq!(parse_line(r#"{"op":"state","id":4,"action":"get"}"#), None);
    assert_eq!(
        parse_line(r#"{"op":"tool","id":7,"name":"todo","arguments":{"todos":[]}}"#),
        Some(FromRunner::Tool {
            id: 7,
            name: "todo".into(),
            arguments: json!({"todos": []})
        })
    );
    assert_eq!(
        parse_line(r#"{"op":"tool","id":7,"name":"todo"}"#),
        Some(FromRunner::Tool {
            id: 7,
            name: "todo".into(),
            arguments: Value::Null
        })
    );
    assert_eq!(parse_line(r#"{"op":"tool","id":7}"#), None);
    let ok = host_reply(5, Ok(json!({"a": 1})));
    assert!(ok.ends_with('\n') && ok.matches('\n').count() == 1);
    let v: Value = serde_json::from_str(ok.trim_end()).unwrap();
    assert_eq!(
        v,
        json!({"op": "host", "id": 5, "ok": true, "value": {"a": 1}})
    );
    let err = host_reply(6, Err(("capability", "x".repeat(MAX_ERROR_CHARS * 2))));
    let v: Value = serde_json::from_str(err.trim_end()).unwrap();
    assert_eq!(v["ok"], json!(false));
    assert_eq!(v["kind"], json!("capability"));
    assert!(v["message"].as_str().unwrap().chars().count() <= MAX_ERROR_CHARS + 1);
}

//! The OpenAI-compatible provider against a local stand-in that speaks the
//! real wire format: a tool call, then an answer; retries; key hygiene.

use std::time::Duration;

use serde_json::json;

use crate::helpers::*;

const KEY: &str = "sk-test-abcdefghijklmnop-secret";

#[tokio::test]
async fn a_tool_call_then_an_answer_over_the_real_wire_format() {
    let standin = StandIn::start().await;
    // The first reply reports its usage as OpenAI does; the second none.
    let mut first = tool_reply("tools_list", json!({}));
    first["usage"] = json!({"prompt_tokens": 1200, "completion_tokens": 34, "total_tokens": 1234,
        "prompt_tokens_details": {"cached_tokens": 1024}});
    standin.push(200, first, Duration::ZERO);
    standin.push(200, text_reply("I can list tools."), Duration::ZERO);
    let app = spawn_with(Backend::Sqlite, standin.opts(KEY)).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let (_, s) = app.get(&tok, &format!("/v1/sessions/{sid}")).await;
    assert_eq!(s["provider"], "openai");
    let tid = app
        .start_turn(&tok, &sid, json!({"input": "what can you do?"}))
        .await;
    let evs = app.sse_until(&tok, &sid, "", None, is_terminal).await;
    assert_eq!(
        types(&evs),
        [
            "turn.started",
            "tool.call",
            "tool.result",
            "message",
            "turn.completed"
        ]
    );
    assert_eq!(evs[1]["data"]["call_id"], "call_abc");
    assert_eq!(evs[2]["data"]["status"], "succeeded");
    assert_eq!(
        app.wait_turn(&tok, &sid, &tid).await["output"],
        "I can list tools."
    );

    // The reported usage is recorded; the call that reported none is unknown, not zero.
    let rows = model_usage(&app, "default", 2).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!(row["provider"], "openai");
    assert_eq!(row["model"], "stand-in-model");
    assert_eq!(row["model_calls"], 2);
    assert_eq!(row["unmetered_calls"], 1);
    assert_eq!(row["input_tokens"], 1200);
    assert_eq!(row["output_tokens"], 34);
    assert_eq!(row["cached_tokens"], 1024);

    let reqs = standin.requests();
    assert_eq!(reqs.len(), 2);
    for (auth, body) in &reqs {
        assert_eq!(auth.as_deref(), Some(format!("Bearer {KEY}").as_str()));
        assert_eq!(body["model"], "stand-in-model");
        assert!(body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["function"]["name"] == "tools_list"));
    }
    // The second request carries the tool call and its result back.
    let msgs = reqs[1].1["messages"].as_array().unwrap();
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["system", "system", "user", "assistant", "tool"],
        "the core's SOUL.md leads, then its session_context bootstrap snapshot"
    );
    assert_eq!(msgs[3]["tool_calls"][0]["id"], "call_abc");
    assert_eq!(msgs[4]["tool_call_id"], "call_abc");

    // A follow-up turn sends the earlier conversation as history.
    app.start_turn(&tok, &sid, json!({"input": "and then?"}))
        .await;
    app.sse_until(&tok, &sid, "?after=5", None, is_terminal)
        .await;
    let reqs = standin.requests();
    let roles: Vec<&str> = reqs[2].1["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user"
        ]
    );
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried() {
    let standin = StandIn::start().await;
    standin.push(
        429,
        json!({"error": {"message": "slow down"}}),
        Duration::ZERO,
    );
    standin.push(503, json!({"error": {"message": "busy"}}), Duration::ZERO);
    standin.push(200, text_reply("third time lucky"), Duration::ZERO);
    let app = spawn_with(Backend::Sqlite, standin.opts(KEY)).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let tid = app.start_turn(&tok, &sid, json!({"input": "hi"})).await;
    let turn = app.wait_turn(&tok, &sid, &tid).await;
    assert_eq!(turn["status"], "completed", "{turn}");
    assert_eq!(turn["output"], "third time lucky");
    assert_eq!(standin.requests().len(), 3);
}

#[tokio::test]
async fn a_rejected_request_fails_the_turn_without_leaking_the_key() {
    let standin = StandIn::start().await;
    standin.push(
        401,
        json!({"error": {"message": "Incorrect API key provided"}}),
        Duration::ZERO,
    );
    let app = spawn_with(Backend::Sqlite, standin.opts(KEY)).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let tid = app.start_turn(&tok, &sid, json!({"input": "hi"})).await;
    let turn = app.wait_turn(&tok, &sid, &tid).await;
    assert_eq!(turn["status"], "failed");
    assert_eq!(turn["reason"], "provider");
    assert!(turn["error"].as_str().unwrap().contains("401"), "{turn}");
    let evs = app.sse_until(&tok, &sid, "", None, is_terminal).await;
    let everything = format!(
        "{turn} {} {}",
        serde_json::to_string(&evs).unwrap(),
        app.log()
    );
    assert!(!everything.contains(KEY), "the API key leaked");
    assert!(
        !everything.contains("abcdefghijklmnop"),
        "part of the API key leaked"
    );
    // A script is refused on a non-fake session.
    let (st, b) = app
        .post(
            &tok,
            &format!("/v1/sessions/{sid}/turns"),
            json!({"input": "x", "script": [{"content": "y"}]}),
        )
        .await;
    assert_eq!(st, 400, "{b}");
}

//! Turns: the fake provider, scripts, one running turn per session, cancel,
//! the step cap, and turns a crash left running.

use std::time::Duration;

use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn a_fake_turn_echoes_and_completes_on_every_backend() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        let sid = app.create_session(&tok).await;
        let tid = app
            .start_turn(&tok, &sid, json!({"input": "hello there"}))
            .await;
        let evs = app.sse_until(&tok, &sid, "", None, is_terminal).await;
        assert_eq!(
            types(&evs),
            ["turn.started", "message", "turn.completed"],
            "{backend:?}"
        );
        let seqs: Vec<i64> = evs.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
        assert_eq!(seqs, [1, 2, 3]);
        assert_eq!(evs[1]["data"]["content"], "[fake] hello there");
        for e in &evs {
            assert_eq!(e["session_id"], sid.as_str());
            assert_eq!(e["turn_id"], tid.as_str());
            assert!(e["at"].as_str().unwrap().ends_with('Z'));
        }
        let turn = app.wait_turn(&tok, &sid, &tid).await;
        assert_eq!(turn["status"], "completed");
        assert_eq!(turn["output"], "[fake] hello there");
    }
}

#[tokio::test]
async fn the_fake_provider_calls_tools_list_when_asked() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    app.start_turn(&tok, &sid, json!({"input": "show me tools_list"}))
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
    assert_eq!(evs[1]["data"]["tool"], "tools_list");
    assert_eq!(evs[2]["data"]["status"], "succeeded");
    assert!(evs[2]["data"]["content"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "tools_list"));
}

#[tokio::test]
async fn a_script_is_played_step_by_step() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let script = json!([
        {"tool_calls": [{"name": "tools_list", "arguments": {}}, {"name": "no_such_tool", "arguments": {}}]},
        {"content": "all done"}
    ]);
    let tid = app
        .start_turn(&tok, &sid, json!({"input": "go", "script": script}))
        .await;
    let evs = app.sse_until(&tok, &sid, "", None, is_terminal).await;
    assert_eq!(
        types(&evs),
        [
            "turn.started",
            "tool.call",
            "tool.result",
            "tool.call",
            "tool.result",
            "message",
            "turn.completed"
        ]
    );
    assert_eq!(evs[2]["data"]["status"], "succeeded");
    assert_eq!(evs[4]["data"]["status"], "not_found");
    let turn = app.wait_turn(&tok, &sid, &tid).await;
    assert_eq!(turn["output"], "all done");
    assert_eq!(turn["steps"], 2);
}

#[tokio::test]
async fn a_script_written_in_the_message_is_played_on_every_backend() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        let sid = app.create_session(&tok).await;
        let text = r#"script:[{"tool_calls":[{"name":"tools_list","arguments":{}}]},{"content":"played from the text"}]"#;
        let tid = app.start_turn(&tok, &sid, json!({"input": text})).await;
        let evs = app.sse_until(&tok, &sid, "", None, is_terminal).await;
        assert_eq!(
            types(&evs),
            [
                "turn.started",
                "tool.call",
                "tool.result",
                "message",
                "turn.completed"
            ],
            "{backend:?}"
        );
        assert_eq!(evs[0]["data"]["input"], text);
        assert_eq!(evs[1]["data"]["tool"], "tools_list");
        let turn = app.wait_turn(&tok, &sid, &tid).await;
        assert_eq!(turn["output"], "played from the text");
        // A malformed script in the text is refused like a malformed field.
        for bad in ["script:[{", "script:[{}]", r#"script:{"content":"x"}"#] {
            let (st, b) = app
                .post(
                    &tok,
                    &format!("/v1/sessions/{sid}/turns"),
                    json!({"input": bad}),
                )
                .await;
            assert_eq!(st, 400, "{bad}: {b}");
            assert!(
                b["error"]["message"].as_str().unwrap().contains("script"),
                "{b}"
            );
        }
        // Text that merely mentions a script is an ordinary message.
        let tid = app
            .start_turn(&tok, &sid, json!({"input": "my script: [1]"}))
            .await;
        let turn = app.wait_turn(&tok, &sid, &tid).await;
        assert_eq!(turn["output"], "[fake] my script: [1]");
    }
}

#[tokio::test]
async fn malformed_scripts_are_400() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    for script in [
        json!("x"),
        json!([{}]),
        json!([{"tool_calls": [{"name": "a", "arguments": 3}]}]),
    ] {
        let (st, b) = app
            .post(
                &tok,
                &format!("/v1/sessions/{sid}/turns"),
                json!({"input": "x", "script": script}),
            )
            .await;
        assert_eq!(st, 400, "{b}");
        assert!(
            b["error"]["message"].as_str().unwrap().contains("script"),
            "{b}"
        );
    }
    let (st, _) = app
        .post(
            &tok,
            &format!("/v1/sessions/{sid}/turns"),
            json!({"no_input": true}),
        )
        .await;
    assert_eq!(st, 400);
}

#[tokio::test]
async fn the_step_cap_fails_a_turn_that_never_finishes() {
    let app = spawn_with(
        Backend::Sqlite,
        Opts::default().env("DEMIURGE_MAX_MODEL_STEPS", "3"),
    )
    .await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let step = json!({"tool_calls": [{"name": "tools_list"}]});
    let tid = app
        .start_turn(
            &tok,
            &sid,
            json!({"input": "loop", "script": [step, step, step, step, step]}),
        )
        .await;
    let turn = app.wait_turn(&tok, &sid, &tid).await;
    assert_eq!(turn["status"], "failed");
    assert_eq!(turn["reason"], "max_model_steps");
    assert_eq!(turn["steps"], 3);
}

#[tokio::test]
async fn a_second_turn_while_one_runs_is_409_and_cancel_is_idempotent() {
    for backend in backends() {
        let standin = StandIn::start().await;
        standin.push(200, text_reply("slow"), Duration::from_secs(30));
        let app = spawn_with(backend, standin.opts("sk-test")).await;
        let tok = app.token("default", "alice");
        let sid = app.create_session(&tok).await;
        let tid = app
            .start_turn(&tok, &sid, json!({"input": "take your time"}))
            .await;
        // The slow reply must be taken by this turn's request, not the next one's.
        standin.wait_requests(1).await;
        let (st, b) = app
            .post(
                &tok,
                &format!("/v1/sessions/{sid}/turns"),
                json!({"input": "me too"}),
            )
            .await;
        assert_eq!(st, 409, "{backend:?} {b}");
        assert_eq!(b["error"]["code"], "conflict");
        let (st, t) = app
            .post(
                &tok,
                &format!("/v1/sessions/{sid}/turns/{tid}/cancel"),
                json!({}),
            )
            .await;
        assert_eq!(st, 200);
        assert_eq!(t["status"], "cancelled", "{t}");
        assert_eq!(t["reason"], "cancelled");
        let (st, again) = app
            .post(
                &tok,
                &format!("/v1/sessions/{sid}/turns/{tid}/cancel"),
                json!({}),
            )
            .await;
        assert_eq!((st, &again["status"]), (200, &json!("cancelled")));
        let evs = app.sse_until(&tok, &sid, "", None, is_terminal).await;
        assert_eq!(types(&evs), ["turn.started", "turn.cancelled"]);
        // The session is free again.
        let tid2 = app.start_turn(&tok, &sid, json!({"input": "next"})).await;
        assert_eq!(
            app.wait_turn(&tok, &sid, &tid2).await["status"],
            "completed"
        );
    }
}

#[tokio::test]
async fn a_turn_left_running_by_a_crash_is_marked_lost_not_replayed() {
    for backend in backends() {
        let standin = StandIn::start().await;
        standin.push(200, text_reply("never delivered"), Duration::from_secs(60));
        let app = spawn_with(backend, standin.opts("sk-test")).await;
        let tok = app.token("default", "alice");
        let sid = app.create_session(&tok).await;
        let tid = app.start_turn(&tok, &sid, json!({"input": "long"})).await;
        standin.wait_requests(1).await;
        let app = app.restart_after_crash().await;
        let turn = app.wait_turn(&tok, &sid, &tid).await;
        assert_eq!(turn["status"], "failed", "{backend:?}");
        assert_eq!(turn["reason"], "lost");
        let evs = app.sse_until(&tok, &sid, "", None, is_terminal).await;
        assert_eq!(types(&evs), ["turn.started", "turn.failed"]);
        assert_eq!(evs[1]["data"]["reason"], "lost");
        // Never replayed: the provider saw the request once.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(standin.requests().len(), 1);
    }
}

#[tokio::test]
async fn sigterm_cancels_turns_still_running_after_the_grace_and_exits_cleanly() {
    let standin = StandIn::start().await;
    standin.push(200, text_reply("slow"), Duration::from_secs(60));
    let mut opts = standin.opts("sk-test");
    opts.args.extend(["--shutdown-grace".into(), "1s".into()]);
    let mut app = spawn_with(Backend::Sqlite, opts).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let tid = app.start_turn(&tok, &sid, json!({"input": "long"})).await;
    let home = app.home.clone();
    app.signal("TERM");
    let status = app
        .wait_exit(Duration::from_secs(20))
        .expect("server exits after SIGTERM");
    assert!(status.success(), "{status:?}\n{}", app.log());
    // Inspect the stored turn through a fresh server on the same home.
    let _ = home;
    let app = app.restart_after_crash().await;
    let turn = app.wait_turn(&tok, &sid, &tid).await;
    assert_eq!(turn["status"], "cancelled");
    assert_eq!(turn["reason"], "shutdown");
}

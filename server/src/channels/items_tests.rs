use serde_json::json;

use super::*;

/// The typed payload of `kind` from the fields a test names, the rest
/// filled with neutral values.
fn payload(kind: &str, data: &Value) -> EventPayload {
    let mut full = match kind {
        "turn.started" => json!({"input": ""}),
        "message" => json!({"role": "assistant", "content": ""}),
        "tool.call" => json!({"call_id": "c", "tool": "t", "arguments": {}}),
        "tool.result" => json!({"call_id": "c", "tool": "t", "status": "succeeded",
            "content": null, "data": null}),
        "approval.requested" => json!({"approval_id": "a", "tool": "t", "risk": "low",
            "rule": "r", "reason": "", "preview": null, "choices": [], "requires": "owner",
            "expires_at": ""}),
        "approval.resolved" => json!({"approval_id": "a", "decision": "deny", "reason": "",
            "tool": "t"}),
        "clarify.requested" => json!({"clarification_id": "c", "question": "", "choices": [],
            "expires_at": ""}),
        "task.updated" => json!({"task_id": "t", "status": "running"}),
        "turn.completed" => json!({"output": "", "steps": 0}),
        "turn.failed" => json!({"reason": "", "error": ""}),
        "turn.cancelled" => json!({"reason": ""}),
        other => panic!("no test payload for {other}"),
    };
    if let (Some(full), Some(given)) = (full.as_object_mut(), data.as_object()) {
        for (k, v) in given {
            full.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(json!({"type": kind, "data": full})).expect("a typed payload")
}

/// [`super::for_event`] of the payload `kind` with `data`.
fn for_event(
    platform: ChannelKind,
    kind: &str,
    data: &Value,
    handle: Option<&str>,
    state: &mut RelayState,
) -> Vec<Item> {
    super::for_event(platform, &payload(kind, data), handle, state)
}

#[test]
fn stored_events_parse_and_rows_that_no_longer_do_are_none() {
    let stored = json!({"seq": 3, "session_id": "s", "turn_id": null,
        "at": "2026-12-07T00:00:00Z", "type": "turn.cancelled", "data": {"reason": "user"}});
    assert_eq!(
        payload_of(&stored.to_string()),
        Some(EventPayload::TurnCancelled(
            crate::wire::events::TurnCancelled {
                reason: "user".into()
            }
        ))
    );
    for bad in [
        json!({"seq": 4, "type": "turn.renamed", "data": {}}).to_string(),
        json!({"seq": 5, "type": "message", "data": {"role": 7}}).to_string(),
        "not json".to_owned(),
    ] {
        assert_eq!(payload_of(&bad), None, "{bad}");
    }
}

#[test]
fn assistant_text_is_split_in_order_at_the_platform_limit() {
    let long = "word ".repeat(2000); // 10,000 characters
    let mut st = RelayState::default();
    for (p, max) in [
        (ChannelKind::Telegram, 4096),
        (ChannelKind::Discord, 2000),
        (ChannelKind::Slack, 3000),
    ] {
        let items = for_event(
            p,
            "message",
            &json!({"role": "assistant", "content": long}),
            None,
            &mut st,
        );
        assert!(items.len() >= 10_000 / max, "{p}: {}", items.len());
        let mut joined = String::new();
        for it in &items {
            let Item::Text { text, .. } = it else {
                panic!("{it:?}")
            };
            assert!(text.chars().count() <= max);
            joined.push_str(text);
        }
        assert_eq!(joined, long);
    }
}

#[test]
fn user_messages_and_empty_text_send_nothing() {
    let mut st = RelayState::default();
    for (kind, data) in [
        ("message", json!({"role": "user", "content": "hi"})),
        ("message", json!({"role": "assistant", "content": "  "})),
        ("tool.call", json!({"tool": "terminal"})),
        ("turn.completed", json!({"output": "x"})),
        ("task.updated", json!({})),
    ] {
        assert!(
            for_event(ChannelKind::Telegram, kind, &data, None, &mut st).is_empty(),
            "{kind}"
        );
    }
}

#[test]
fn approvals_become_cards_and_decisions_edits() {
    let mut st = RelayState::default();
    let req = json!({"approval_id": "a1", "tool": "terminal", "risk": "high",
        "preview": {"command": "rm -rf build"}, "choices": ["allow_once", "allow_session", "deny"]});
    assert_eq!(
        for_event(
            ChannelKind::Slack,
            "approval.requested",
            &req,
            None,
            &mut st
        ),
        vec![Item::Approval {
            approval_id: "a1".into(),
            tool: "terminal".into(),
            risk: "high".into(),
            summary: "$ rm -rf build".into(),
            handle: None
        }]
    );
    let res = json!({"approval_id": "a1", "decision": "allow_session", "reason": "user", "tool": "terminal", "decided_by": "slack-x-U1"});
    let items = for_event(ChannelKind::Slack, "approval.resolved", &res, None, &mut st);
    let [Item::Edit { approval_id, text }] = items.as_slice() else {
        panic!("{items:?}")
    };
    assert_eq!(approval_id, "a1");
    assert!(
        text.contains("Allowed for the session by slack-x-U1"),
        "{text}"
    );
    let timeout =
        json!({"approval_id": "a1", "decision": "deny", "reason": "timeout", "tool": "terminal"});
    let items = for_event(
        ChannelKind::Slack,
        "approval.resolved",
        &timeout,
        None,
        &mut st,
    );
    assert!(
        matches!(&items[0], Item::Edit { text, .. } if text.contains("Denied (no answer in time)"))
    );
}

#[test]
fn questions_tool_cards_and_failures_are_short_texts() {
    let mut st = RelayState::default();
    let one = |kind: &str, data: Value, st: &mut RelayState| match for_event(
        ChannelKind::Telegram,
        kind,
        &data,
        None,
        st,
    )
    .as_slice()
    {
        [Item::Text { text, .. }] => text.clone(),
        other => panic!("{other:?}"),
    };
    let q = one(
        "clarify.requested",
        json!({"clarification_id": "c", "question": "Which branch?", "choices": ["main", "dev"]}),
        &mut st,
    );
    assert!(q.contains("Which branch?") && q.contains("main / dev") && q.contains("next message"));
    assert_eq!(
        one(
            "tool.result",
            json!({"tool": "read_file", "status": "succeeded"}),
            &mut st
        ),
        "✓ read_file — succeeded"
    );
    assert_eq!(
        one(
            "tool.result",
            json!({"tool": "terminal", "status": "denied"}),
            &mut st
        ),
        "✗ terminal — denied"
    );
    let failed = one(
        "turn.failed",
        json!({"reason": "provider", "error": "upstream said: key sk-123 invalid"}),
        &mut st,
    );
    assert!(
        failed.contains("provider") && !failed.contains("sk-123"),
        "{failed}"
    );
    // A spent budget says which limit, so the user knows whom to ask.
    let spent = one(
        "turn.failed",
        json!({"reason": "budget_exceeded",
               "error": "budget exceeded: the tenant's tokens_per_day is spent (12 of 10); a tenant admin can raise it"}),
        &mut st,
    );
    assert!(
        spent.contains("tokens_per_day") && spent.contains("tenant admin"),
        "{spent}"
    );
}

#[test]
fn discord_replaces_the_deferred_answer_once_per_turn() {
    let mut st = RelayState::default();
    let msg = json!({"role": "assistant", "content": "hello"});
    let first = for_event(ChannelKind::Discord, "message", &msg, Some("tok"), &mut st);
    assert!(matches!(&first[0], Item::Text { original: true, handle: Some(h), .. } if h == "tok"));
    let second = for_event(ChannelKind::Discord, "message", &msg, Some("tok"), &mut st);
    assert!(matches!(
        &second[0],
        Item::Text {
            original: false,
            ..
        }
    ));
    for_event(
        ChannelKind::Discord,
        "turn.started",
        &json!({}),
        Some("tok"),
        &mut st,
    );
    let again = for_event(ChannelKind::Discord, "message", &msg, Some("tok"), &mut st);
    assert!(matches!(&again[0], Item::Text { original: true, .. }));
    // Other platforms never use it.
    let tg = for_event(
        ChannelKind::Telegram,
        "message",
        &msg,
        None,
        &mut RelayState::default(),
    );
    assert!(matches!(
        &tg[0],
        Item::Text {
            original: false,
            handle: None,
            ..
        }
    ));
}

#[test]
fn items_round_trip_as_json() {
    let items = vec![
        Item::Text {
            text: "x".into(),
            handle: None,
            original: false,
        },
        Item::Edit {
            approval_id: "a".into(),
            text: "t".into(),
        },
        Item::CallbackAnswer {
            callback_id: "c".into(),
            text: "ok".into(),
        },
    ];
    for it in items {
        let s = serde_json::to_string(&it).unwrap();
        assert_eq!(serde_json::from_str::<Item>(&s).unwrap(), it);
    }
}

#[test]
fn summaries_are_bounded() {
    let s = summary_of(&json!({"command": "x".repeat(5000)}));
    assert!(s.chars().count() <= MAX_SUMMARY + 3);
    assert_eq!(
        summary_of(&json!({"path": "a.txt", "limit": 3})),
        "limit: 3\npath: a.txt"
    );
}

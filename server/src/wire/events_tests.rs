use serde_json::json;

use super::*;

/// One example of every kind, with the `data` the earlier `json!` emitters
/// wrote for it: the typed payloads must serialise to exactly these bytes.
fn every_kind() -> Vec<(EventPayload, &'static str, Value)> {
    vec![
        (
            EventPayload::TurnStarted(TurnStarted { input: "hi".into() }),
            "turn.started",
            json!({"input": "hi"}),
        ),
        (
            EventPayload::Message(Message {
                role: "assistant".into(),
                content: "hello".into(),
            }),
            "message",
            json!({"role": "assistant", "content": "hello"}),
        ),
        (
            EventPayload::ToolCall(ToolCall {
                call_id: "c1".into(),
                tool: "terminal".into(),
                arguments: json!({"command": "ls", "env": {"K": "<redacted:K>"}}),
            }),
            "tool.call",
            json!({"call_id": "c1", "tool": "terminal",
                "arguments": {"command": "ls", "env": {"K": "<redacted:K>"}}}),
        ),
        (
            EventPayload::ToolOutput(ToolOutput {
                call_id: "c1".into(),
                stream: "stdout".into(),
                text: "a\n".into(),
                truncated: false,
            }),
            "tool.output",
            json!({"call_id": "c1", "stream": "stdout", "text": "a\n"}),
        ),
        (
            EventPayload::ToolOutput(ToolOutput {
                call_id: "c1".into(),
                stream: "stderr".into(),
                text: "b".into(),
                truncated: true,
            }),
            "tool.output",
            json!({"call_id": "c1", "stream": "stderr", "text": "b", "truncated": true}),
        ),
        (
            EventPayload::ToolResult(ToolResult {
                call_id: "c1".into(),
                tool: "read_file".into(),
                status: ToolStatus::NotFound,
                content: json!("no such file"),
                data: Value::Null,
            }),
            "tool.result",
            json!({"call_id": "c1", "tool": "read_file", "status": "not_found",
                "content": "no such file", "data": null}),
        ),
        (
            EventPayload::ApprovalRequested(ApprovalRequested {
                approval_id: "a1".into(),
                tool: "terminal".into(),
                risk: Risk::High,
                rule: "terminal:terminal.exec:run:rm".into(),
                reason: "run rm".into(),
                preview: json!({"command": "rm x"}),
                choices: vec![Decision::AllowOnce, Decision::AllowSession, Decision::Deny],
                requires: Requirement::Owner,
                expires_at: "2026-01-01T00:00:00Z".into(),
                child_session_id: None,
            }),
            "approval.requested",
            json!({"approval_id": "a1", "tool": "terminal", "risk": "high",
                "rule": "terminal:terminal.exec:run:rm", "reason": "run rm",
                "preview": {"command": "rm x"}, "choices": ["allow_once", "allow_session", "deny"],
                "requires": "owner", "expires_at": "2026-01-01T00:00:00Z"}),
        ),
        (
            EventPayload::ApprovalResolved(ApprovalResolved {
                approval_id: "a1".into(),
                decision: Decision::AllowOnce,
                reason: "user".into(),
                tool: "terminal".into(),
                decided_by: Some("alice".into()),
                child_session_id: None,
            }),
            "approval.resolved",
            json!({"approval_id": "a1", "decision": "allow_once", "reason": "user",
                "tool": "terminal", "decided_by": "alice"}),
        ),
        (
            EventPayload::ApprovalResolved(ApprovalResolved {
                approval_id: "a1".into(),
                decision: Decision::Deny,
                reason: "expired".into(),
                tool: "terminal".into(),
                decided_by: None,
                child_session_id: None,
            }),
            "approval.resolved",
            json!({"approval_id": "a1", "decision": "deny", "reason": "expired", "tool": "terminal"}),
        ),
        (
            EventPayload::ApprovalResolved(ApprovalResolved {
                approval_id: "a1".into(),
                decision: Decision::Deny,
                reason: "user".into(),
                tool: "terminal".into(),
                decided_by: None,
                child_session_id: Some("c1".into()),
            }),
            "approval.resolved",
            json!({"approval_id": "a1", "decision": "deny", "reason": "user", "tool": "terminal",
                "child_session_id": "c1"}),
        ),
        (
            EventPayload::ClarifyRequested(ClarifyRequested {
                clarification_id: "q1".into(),
                question: "which?".into(),
                choices: vec!["a".into(), "b".into()],
                expires_at: "2026-01-01T00:00:00Z".into(),
            }),
            "clarify.requested",
            json!({"clarification_id": "q1", "question": "which?", "choices": ["a", "b"],
                "expires_at": "2026-01-01T00:00:00Z"}),
        ),
        (
            EventPayload::ClarifyAnswered(ClarifyAnswered {
                clarification_id: "q1".into(),
                answer: "a".into(),
            }),
            "clarify.answered",
            json!({"clarification_id": "q1", "answer": "a"}),
        ),
        (
            EventPayload::TaskUpdated(TaskUpdated {
                task_id: "task_1".into(),
                kind: Some("terminal.exec".into()),
                status: TaskStatus::Running,
                summary: Some("sleep 1".into()),
            }),
            "task.updated",
            json!({"task_id": "task_1", "kind": "terminal.exec", "status": "running",
                "summary": "sleep 1"}),
        ),
        (
            EventPayload::TaskUpdated(TaskUpdated {
                task_id: "task_1".into(),
                kind: None,
                status: TaskStatus::Lost,
                summary: None,
            }),
            "task.updated",
            json!({"task_id": "task_1", "status": "lost"}),
        ),
        (
            EventPayload::SlotFailed(SlotFailed {
                phase: "input".into(),
                slot_id: "style_hint".into(),
                failure_policy: "soft".into(),
                error: "the slot raised KeyError: 'x'".into(),
            }),
            "slot.failed",
            json!({"phase": "input", "slot_id": "style_hint", "failure_policy": "soft",
                "error": "the slot raised KeyError: 'x'"}),
        ),
        (
            EventPayload::TurnCompleted(TurnCompleted {
                output: "done".into(),
                steps: 2,
            }),
            "turn.completed",
            json!({"output": "done", "steps": 2}),
        ),
        (
            EventPayload::TurnFailed(TurnFailed {
                reason: "provider".into(),
                error: "boom".into(),
            }),
            "turn.failed",
            json!({"reason": "provider", "error": "boom"}),
        ),
        (
            EventPayload::TurnCancelled(TurnCancelled {
                reason: "shutdown".into(),
            }),
            "turn.cancelled",
            json!({"reason": "shutdown"}),
        ),
    ]
}

#[test]
fn every_kind_keeps_its_type_and_its_bytes() {
    let mut kinds = std::collections::BTreeSet::new();
    for (payload, kind, old) in every_kind() {
        assert_eq!(payload.kind(), kind);
        let data = payload.data().unwrap();
        // Same keys, same values, and so (sorted keys) the same bytes.
        assert_eq!(data.to_string(), old.to_string(), "{kind}");
        // The tag and content serde writes agree with kind() and data().
        let tagged = serde_json::to_value(&payload).unwrap();
        assert_eq!(tagged["type"], kind);
        assert_eq!(tagged["data"], data);
        kinds.insert(kind);
    }
    // CONTRACT.md's fourteen types, each with an example above.
    assert_eq!(kinds.len(), 14);
}

#[test]
fn a_stored_frame_reads_back_as_the_typed_event() {
    for (payload, kind, old) in every_kind() {
        let (sid, tid) = (crate::ids::SessionId::new(), crate::ids::TurnId::new());
        let frame = format!(
            r#"{{"seq":7,"session_id":"{sid}","turn_id":"{tid}","type":"{kind}","at":"2026-01-01T00:00:00Z","data":{old}}}"#
        );
        let ev: Event = serde_json::from_str(&frame).unwrap();
        assert_eq!((ev.seq, ev.session_id, ev.turn_id), (7, sid, Some(tid)));
        assert_eq!(ev.payload, payload, "{kind}");
        let back = serde_json::to_value(&ev).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(&frame).unwrap());
    }
}

#[test]
fn an_unknown_type_or_a_wrong_payload_does_not_parse() {
    let frame = |kind: &str, data: &str| {
        format!(
            r#"{{"seq":1,"session_id":"0190a0c4-1c7e-7000-8000-000000000000","turn_id":null,"type":"{kind}","at":"t","data":{data}}}"#
        )
    };
    assert!(serde_json::from_str::<Event>(&frame("turn.paused", "{}")).is_err());
    assert!(serde_json::from_str::<Event>(&frame("turn.started", "{}")).is_err());
    assert!(serde_json::from_str::<Event>(&frame(
        "tool.result",
        r#"{"call_id":"c","tool":"t","status":"ok","content":null,"data":null}"#
    ))
    .is_err());
}

/// Every example frame is valid under the `Event` schema of the served
/// OpenAPI document (what Schemathesis checks SSE frames against).
#[test]
fn every_kind_fits_the_documented_event_schema() {
    let doc: Value = serde_json::from_str(&crate::api::doc::openapi_document()).unwrap();
    let schema = json!({
        "$ref": "#/components/schemas/Event",
        "components": doc["components"],
    });
    let validator = jsonschema::validator_for(&schema).unwrap();
    let (sid, tid) = (crate::ids::SessionId::new(), crate::ids::TurnId::new());
    for (payload, kind, _) in every_kind() {
        for turn_id in [None, Some(tid)] {
            let ev = Event {
                seq: 1,
                session_id: sid,
                turn_id,
                at: "2026-01-01T00:00:00Z".into(),
                payload: payload.clone(),
            };
            let frame = serde_json::to_value(&ev).unwrap();
            let errors: Vec<String> = validator
                .iter_errors(&frame)
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "{kind}: {errors:?}");
        }
    }
    // And a frame of one kind with another kind's payload is not.
    let wrong = json!({"seq": 1, "session_id": sid.to_string(), "turn_id": null,
        "at": "t", "type": "turn.started", "data": {"reason": "x"}});
    assert!(!validator.is_valid(&wrong));
}

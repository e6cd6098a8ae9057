use serde_json::json;

use super::*;
use crate::core::loader::Phase;

#[test]
fn absorbs_what_a_slot_asked_for() {
    let mut e = Effects::default();
    absorb(
        &mut e,
        &json!({"bootstrap": ["  ws  ", ""], "context": [
            {"section": "system", "content": "be brief", "history_policy": "transient"},
            {"section": "user", "content": "hi", "history_policy": "persist"},
            {"content": 3}],
          "deliveries": [{"kind": "text", "text": "out", "history_policy": "persist", "visible": true},
                         {"kind": "notice", "text": "n", "history_policy": "transient", "visible": false}],
          "result": {"a": 1}}),
    );
    absorb(&mut e, &json!({"result": {"b": 2}, "context": "junk"}));
    assert_eq!(e.bootstrap, vec!["ws"]);
    assert_eq!(
        e.context,
        vec![
            ContextAdd {
                system: true,
                content: "be brief".into(),
                persist: false
            },
            ContextAdd {
                system: false,
                content: "hi".into(),
                persist: true
            },
        ]
    );
    assert_eq!(e.deliveries.len(), 2);
    assert!(e.deliveries[0].persist && e.deliveries[0].visible);
    assert!(!e.deliveries[1].persist && !e.deliveries[1].visible);
    assert_eq!(e.result, Some(json!({"a": 1, "b": 2})));
}

#[test]
fn absorbs_skill_activations_once_each_in_order() {
    let mut e = Effects::default();
    absorb(
        &mut e,
        &json!({"skills": ["deploy", "", 3, "style", "deploy"]}),
    );
    absorb(&mut e, &json!({"skills": ["style", "review"]}));
    absorb(&mut e, &json!({"skills": "deploy"}));
    assert_eq!(e.skills, vec!["deploy", "style", "review"]);
}

#[test]
fn native_base_slots_say_what_the_python_ones_say() {
    let slot = SlotSpec {
        id: "base_output".into(),
        phase: Phase::Output,
        slot_path: "agent/output/base_output".into(),
        dir: PathBuf::from("/x"),
        entry: Ok(("module".into(), "process".into())),
        capabilities: vec![],
        failure_policy: FailurePolicy::Hard,
        history_policy: HistoryPolicy::Persist,
        native: Some(Native::BaseOutput),
    };
    let ctx = json!({"input": {"raw_text": "hello"}, "output": {"response_text": "bye"}});
    let mut e = Effects::default();
    absorb(
        &mut e,
        &native_value(Native::BaseInput, &slot, Lane::Serial, &ctx),
    );
    absorb(
        &mut e,
        &native_value(Native::BaseOutput, &slot, Lane::Serial, &ctx),
    );
    assert_eq!(e.context[0].content, "hello");
    assert!(!e.context[0].system && e.context[0].persist);
    assert_eq!(e.deliveries[0].text, "bye");
    assert!(e.deliveries[0].persist);
    let par = native_value(Native::BaseOutput, &slot, Lane::Parallel, &ctx);
    assert_eq!(par["deliveries"][0]["history_policy"], "transient");
}

use std::sync::Arc;

use serde_json::json;

use super::*;

fn slot(id: &str, phase: Phase) -> Arc<SlotSpec> {
    Arc::new(SlotSpec {
        id: id.into(),
        phase,
        slot_path: format!("agent/{phase}/{id}"),
        dir: PathBuf::from(format!("/core/agent/{phase}/{id}")),
        entry: Ok(("module".into(), "process".into())),
        capabilities: vec![],
        failure_policy: FailurePolicy::Soft,
        history_policy: HistoryPolicy::Persist,
        native: None,
    })
}

fn pipeline() -> Pipeline {
    Pipeline {
        bootstrap: vec![slot("session_context", Phase::Bootstrap)],
        input_serial: vec![
            slot("style_hint", Phase::Input),
            slot("base_input", Phase::Input),
            slot("recall", Phase::Input),
        ],
        input_parallel: vec![slot("audit_in", Phase::Input)],
        output_serial: vec![
            slot("base_output", Phase::Output),
            slot("tts", Phase::Output),
        ],
        output_parallel: vec![slot("sync", Phase::Output)],
    }
}

fn ids(groups: &[Group]) -> Vec<(Lane, Vec<&str>)> {
    groups
        .iter()
        .map(|g| (g.lane, g.slots.iter().map(|s| s.id.as_str()).collect()))
        .collect()
}

#[test]
fn all_runs_the_whole_phase_serial_then_parallel() {
    let g = plan(&pipeline(), Phase::Input, &Selection::All).unwrap();
    assert_eq!(
        ids(&g),
        vec![
            (Lane::Serial, vec!["style_hint", "base_input", "recall"]),
            (Lane::Parallel, vec!["audit_in"]),
        ]
    );
}

#[test]
fn base_selection_runs_only_the_base_slot() {
    let g = plan(&pipeline(), Phase::Output, &Selection::Base).unwrap();
    assert_eq!(ids(&g), vec![(Lane::Serial, vec!["base_output"])]);
}

#[test]
fn a_list_keeps_pipeline_order_and_the_base_slot() {
    let sel = Selection::Only(vec!["recall".into(), "style_hint".into()]);
    let g = plan(&pipeline(), Phase::Input, &sel).unwrap();
    assert_eq!(
        ids(&g),
        vec![(Lane::Serial, vec!["style_hint", "base_input", "recall"])]
    );
}

#[test]
fn a_list_may_pick_a_parallel_slot() {
    let sel = Selection::Only(vec!["sync".into()]);
    let g = plan(&pipeline(), Phase::Output, &sel).unwrap();
    assert_eq!(
        ids(&g),
        vec![
            (Lane::Serial, vec!["base_output"]),
            (Lane::Parallel, vec!["sync"])
        ]
    );
}

#[test]
fn an_unknown_id_is_an_error_naming_it() {
    let sel = Selection::Only(vec!["recall".into(), "nope".into()]);
    let e = plan(&pipeline(), Phase::Input, &sel).unwrap_err();
    assert_eq!(
        e,
        PlanError::Unknown {
            phase: "input",
            id: "nope".into()
        }
    );
    assert!(e.to_string().contains("\"nope\""));
}

#[test]
fn an_id_of_another_phase_is_unknown_here() {
    let sel = Selection::Only(vec!["tts".into()]);
    assert!(matches!(
        plan(&pipeline(), Phase::Input, &sel),
        Err(PlanError::Unknown { .. })
    ));
}

#[test]
fn a_pipeline_without_a_base_slot_plans_nothing_for_base() {
    let p = Pipeline {
        input_serial: vec![slot("style_hint", Phase::Input)],
        ..Pipeline::default()
    };
    assert!(plan(&p, Phase::Input, &Selection::Base).unwrap().is_empty());
    assert!(plan(&p, Phase::Output, &Selection::All).unwrap().is_empty());
}

#[test]
fn bootstrap_runs_only_when_asked() {
    assert!(plan_bootstrap(&pipeline(), false).is_empty());
    assert_eq!(
        ids(&plan_bootstrap(&pipeline(), true)),
        vec![(Lane::Serial, vec!["session_context"])]
    );
    assert!(plan_bootstrap(&Pipeline::default(), true).is_empty());
}

#[test]
fn selection_parses_like_delegate_task() {
    let p = |v: serde_json::Value| Selection::parse("input_slots", Some(&v));
    assert_eq!(Selection::parse("input_slots", None), Ok(Selection::Base));
    assert_eq!(p(json!(null)), Ok(Selection::Base));
    assert_eq!(p(json!([])), Ok(Selection::Base));
    assert_eq!(p(json!("all")), Ok(Selection::All));
    assert_eq!(
        p(json!(["a", " b "])),
        Ok(Selection::Only(vec!["a".into(), "b".into()]))
    );
    assert_eq!(
        p(json!("some")).unwrap_err().to_string(),
        "input_slots must be 'all' or a list of slot ids"
    );
    assert!(matches!(p(json!(7)), Err(PlanError::Shape { .. })));
    assert!(matches!(p(json!([3])), Err(PlanError::Item { .. })));
    assert!(matches!(p(json!([""])), Err(PlanError::Item { .. })));
}

#[test]
fn stored_selection_round_trips() {
    assert_eq!(Selection::from_stored(None), Selection::All);
    assert_eq!(Selection::from_stored(Some(vec![])), Selection::Base);
    assert_eq!(
        Selection::from_stored(Some(vec!["x".into()])),
        Selection::Only(vec!["x".into()])
    );
}

#[test]
fn entrypoints_relative_to_the_slot_only() {
    assert_eq!(
        entry("module:process"),
        Ok(("module".into(), "process".into()))
    );
    assert!(entry("lib/x.py:run").unwrap_err().contains("not supported"));
    assert!(entry("module").is_err());
}

#[test]
fn ids_list_serial_then_parallel() {
    assert_eq!(
        pipeline().ids(Phase::Output),
        vec!["base_output", "tts", "sync"]
    );
    assert!(Pipeline::default().is_empty());
    assert!(!pipeline().is_empty());
}

#[test]
fn only_the_shipped_base_modules_run_natively() {
    let dir = std::env::temp_dir().join(format!("slots-native-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("module.py"), BASE_INPUT_PY).unwrap();
    assert_eq!(native_of(&dir, "module:process"), Some(Native::BaseInput));
    assert_eq!(native_of(&dir, "module:other"), None);
    std::fs::write(dir.join("module.py"), BASE_OUTPUT_PY.replace('\n', "\r\n")).unwrap();
    assert_eq!(native_of(&dir, "module:process"), Some(Native::BaseOutput));
    std::fs::write(
        dir.join("module.py"),
        format!("{BASE_OUTPUT_PY}    print('edited')\n"),
    )
    .unwrap();
    assert_eq!(native_of(&dir, "module:process"), None);
    std::fs::remove_dir_all(&dir).unwrap();
    // Older seeds: base slots without code keep the built-in behaviour.
    let root = std::env::temp_dir().join(format!("slots-native-{}", uuid::Uuid::new_v4()));
    for name in ["base_input", "base_output", "other"] {
        std::fs::create_dir_all(root.join(name)).unwrap();
    }
    assert_eq!(
        native_of(&root.join("base_input"), "module:process"),
        Some(Native::BaseInput)
    );
    assert_eq!(
        native_of(&root.join("base_output"), "module:process"),
        Some(Native::BaseOutput)
    );
    assert_eq!(native_of(&root.join("other"), "module:process"), None);
    std::fs::remove_dir_all(&root).unwrap();
}

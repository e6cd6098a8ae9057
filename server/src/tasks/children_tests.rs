use serde_json::json;

use super::*;

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn tool_requests_normalize_like_the_registry_says() {
    assert_eq!(normalize_tools(None), Ok(None));
    assert_eq!(normalize_tools(Some(&json!(null))), Ok(None));
    assert_eq!(normalize_tools(Some(&json!("all"))), Ok(None));
    assert_eq!(normalize_tools(Some(&json!("none"))), Ok(Some(vec![])));
    assert_eq!(normalize_tools(Some(&json!([]))), Ok(Some(vec![])));
    assert_eq!(
        normalize_tools(Some(&json!([" read_file ", "todo"]))),
        Ok(Some(strings(&["read_file", "todo"])))
    );
    for (bad, needle) in [
        (json!("some"), "'all', 'none'"),
        (json!(5), "'all', 'none'"),
        (json!([1]), "must be strings"),
        (json!([" "]), "must not be empty"),
        (json!(["a", "a"]), "duplicate tool id: a"),
    ] {
        let e = normalize_tools(Some(&bad)).unwrap_err();
        assert!(e.contains(needle), "{bad} -> {e}");
    }
}

#[test]
fn a_tool_request_only_narrows_and_names_an_unknown_id() {
    let available = strings(&["read_file", "write_file", "terminal", "todo"]);
    assert_eq!(resolve_tools(None, &available).unwrap(), available);
    assert_eq!(
        resolve_tools(Some(&[]), &available).unwrap(),
        Vec::<String>::new()
    );
    // Catalog order, whatever the request's order.
    assert_eq!(
        resolve_tools(Some(&strings(&["todo", "read_file"])), &available).unwrap(),
        strings(&["read_file", "todo"])
    );
    let e = resolve_tools(Some(&strings(&["read_file", "web_extract"])), &available).unwrap_err();
    assert_eq!(e, "unknown child tool id: web_extract");
    let e = resolve_tools(Some(&strings(&["x".repeat(500).as_str()])), &available).unwrap_err();
    assert!(e.chars().count() < 120, "{e}");
}

#[test]
fn slot_selections_resolve_against_the_pipeline() {
    let pipe = strings(&["base_input", "memory", "redact"]);
    assert_eq!(
        resolve_slots("input", None, &pipe).unwrap(),
        strings(&["base_input"])
    );
    assert_eq!(
        resolve_slots("input", Some(&json!(null)), &pipe).unwrap(),
        strings(&["base_input"])
    );
    assert_eq!(
        resolve_slots("input", Some(&json!([])), &pipe).unwrap(),
        strings(&["base_input"])
    );
    assert_eq!(
        resolve_slots("input", Some(&json!("all")), &pipe).unwrap(),
        pipe
    );
    assert_eq!(
        resolve_slots("input", Some(&json!(["redact", "base_input"])), &pipe).unwrap(),
        strings(&["base_input", "redact"])
    );
    // A pipeline without the base slot: the default selects nothing.
    assert!(resolve_slots("output", None, &pipe).unwrap().is_empty());
    assert!(resolve_slots("output", None, &[]).unwrap().is_empty());
    for (raw, needle) in [
        (json!(["nope"]), "not in the child core's pipeline: nope"),
        (json!("some"), "input_slots must be 'all' or a list"),
        (json!(7), "input_slots must be 'all' or a list"),
        (json!([3]), "input_slots items must be strings"),
        (
            json!(["memory", "memory"]),
            "duplicate input slot id: memory",
        ),
        (json!([""]), "input slot id must not be empty"),
    ] {
        let e = resolve_slots("input", Some(&raw), &pipe).unwrap_err();
        assert!(e.contains(needle), "{raw} -> {e}");
    }
}

#[test]
fn depth_is_bounded_by_the_call_the_caller_and_the_hard_cap() {
    let top = Delegation::default();
    assert_eq!(effective_max_depth(None, &top), DEFAULT_MAX_DEPTH);
    assert_eq!(effective_max_depth(Some(0), &top), DEFAULT_MAX_DEPTH);
    assert_eq!(effective_max_depth(Some(1), &top), 1);
    assert_eq!(effective_max_depth(Some(-5), &top), 0);
    assert_eq!(effective_max_depth(Some(1000), &top), HARD_MAX_DEPTH);
    assert_eq!(effective_max_depth(Some(i64::MAX), &top), HARD_MAX_DEPTH);
    let child = Delegation {
        depth: 1,
        max_depth: 2,
        tools: None,
        parent_core: Some("a".into()),
        ..Default::default()
    };
    // A child cannot raise the limit it was created with.
    assert_eq!(effective_max_depth(Some(3), &child), 2);
    assert_eq!(effective_max_depth(None, &child), 2);
    assert_eq!(depth_denial(&top, 2), None);
    assert_eq!(depth_denial(&child, 2), None);
    let grandchild = Delegation {
        depth: 2,
        ..child.clone()
    };
    let e = depth_denial(&grandchild, 2).unwrap();
    assert!(e.starts_with("delegation depth limit exceeded"), "{e}");
    assert!(depth_denial(&top, 0).is_some());
}

#[test]
fn children_per_turn_and_per_session_are_capped() {
    assert_eq!(count_denial(0, 0), None);
    assert_eq!(count_denial(MAX_CHILDREN_PER_TURN - 1, 1), None);
    assert!(count_denial(MAX_CHILDREN_PER_TURN, 0)
        .unwrap()
        .contains("per turn"));
    assert!(count_denial(0, MAX_ACTIVE_CHILDREN_PER_SESSION)
        .unwrap()
        .contains("at once"));
}

#[test]
fn the_child_input_is_the_goal_plus_a_bounded_fork_transcript() {
    assert_eq!(child_input("do x", None), "do x");
    assert_eq!(child_input("do x", Some("  ")), "do x");
    assert_eq!(
        child_input("do x", Some("user: hi")),
        "do x\n\nParent session fork context:\nuser: hi"
    );
    let mut msgs = vec![json!({"role": "system", "content": "secret soul"})];
    for i in 0..20 {
        msgs.push(json!({"role": "user", "content": format!("q{i}")}));
        msgs.push(json!({"role": "assistant", "content": null, "tool_calls": []}));
    }
    msgs.push(json!({"role": "tool", "content": "r"}));
    let t = fork_transcript(&msgs);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), FORK_MESSAGES);
    assert_eq!(lines.last(), Some(&"tool: r"));
    assert!(!t.contains("soul") && !t.contains("q8\n"), "{t}");
    let big = vec![json!({"role": "user", "content": "y".repeat(FORK_CHARS * 2)})];
    assert_eq!(fork_transcript(&big).chars().count(), FORK_CHARS);
    assert_eq!(fork_transcript(&[]), "");
}

#[test]
fn metadata_records_the_request_and_the_resolution() {
    let (c, p) = (SessionId::new(), SessionId::new());
    let m = metadata(
        &json!({"tools": ["read_file"]}),
        "assistant",
        c,
        p,
        "turn_1",
        1,
        2,
        &strings(&["read_file"]),
        &strings(&["base_input"]),
        &[],
    );
    assert_eq!(m["child_session_id"], c.to_string());
    assert_eq!(m["parent_session_id"], p.to_string());
    assert_eq!(m["requested"]["tools"][0], "read_file");
    assert_eq!(m["child_agent_tools"]["resolved"][0], "read_file");
    assert_eq!(m["child_agent_slots"]["pipeline_run"], false);
}

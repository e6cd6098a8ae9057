//! The built-in tools' argument schemas (`builtin_tools.json`) against the
//! policy crate's validator: every schema compiles, every example passes,
//! and every kind of wrong argument is refused with a message naming the
//! field. The validator's own rules are tested in `demiurge-policy`.

use serde_json::{json, Map, Value};

use crate::policy::json_schema::{validate, ArgumentSchema};

const BUILTIN_TOOLS: &str = include_str!("builtin_tools.json");

fn errs(schema: &Value, value: &Value) -> Vec<String> {
    match validate(schema, value) {
        Ok(()) => Vec::new(),
        Err(errors) => {
            assert!(!errors.is_empty(), "Err must carry errors");
            errors
        }
    }
}

fn ok(schema: &Value, value: &Value) {
    if let Err(errors) = validate(schema, value) {
        panic!("expected {value} to pass {schema}, got {errors:?}");
    }
}

fn bad(schema: &Value, value: &Value) -> Vec<String> {
    match validate(schema, value) {
        Ok(()) => panic!("expected {value} to fail {schema}"),
        Err(errors) => errors,
    }
}

/// Fails with exactly these errors.
fn bad_exact(schema: &Value, value: &Value, want: &[&str]) {
    assert_eq!(bad(schema, value), want, "value {value}");
}

/// Fails with an error containing `needle`.
fn bad_with(schema: &Value, value: &Value, needle: &str) {
    let errors = bad(schema, value);
    assert!(
        errors.iter().any(|e| e.contains(needle)),
        "value {value}: wanted {needle:?} in {errors:?}"
    );
}

fn builtin_tools() -> Vec<Value> {
    match serde_json::from_str::<Value>(BUILTIN_TOOLS).unwrap() {
        Value::Array(tools) => tools,
        other => panic!("builtin_tools.json is not an array: {other}"),
    }
}

fn builtin_schema(name: &str) -> Value {
    builtin_tools()
        .into_iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no builtin tool {name}"))["input_schema"]
        .clone()
}

/// One full valid example per builtin tool, using every property.
fn builtin_examples() -> Vec<(&'static str, Value)> {
    vec![
        (
            "read_file",
            json!({"path": "src/main.rs", "offset": 0, "limit": 200}),
        ),
        (
            "write_file",
            json!({"path": "a.txt", "content": "hi", "create_parent_dirs": false}),
        ),
        (
            "patch",
            json!({"path": "a.txt", "old": "a", "new": "b", "count": -1}),
        ),
        (
            "search_files",
            json!({"query": "fn", "path": ".", "target": "both", "pattern": "*.rs",
                   "case_sensitive": false, "max_results": 10, "include_sensitive": false}),
        ),
        (
            "terminal",
            json!({"command": "ls", "cwd": ".", "timeout_seconds": 30, "background": false,
            "notify_on_complete": true, "env": {"FOO": "bar", "LANG": "C"},
            "secret_bindings": [
                {"source": "env:GITHUB_TOKEN", "target": "GH_TOKEN", "expires_in_seconds": 60},
                {"source": "env:_X"}
            ]}),
        ),
        (
            "web_extract",
            json!({"url": "https://example.com", "timeout_seconds": 20, "max_chars": 1000}),
        ),
        ("skills_list", json!({"category": "general"})),
        (
            "skill_view",
            json!({"name": "x", "file_path": "references/a.md"}),
        ),
        (
            "skill_manage",
            json!({"action": "patch", "name": "x", "content": "c", "file_path": "f",
                   "file_content": "fc", "old_string": "o", "new_string": "", "replace_all": true}),
        ),
        ("todo", json!({"action": "add", "text": "t", "index": 1})),
        (
            "clarify",
            json!({"question": "which?", "choices": ["a", "b", "c", "d"]}),
        ),
        (
            "session_search",
            json!({"query": "q", "session_id": "s", "limit": 5}),
        ),
        ("tools_list", json!({})),
        (
            "task_list",
            json!({"kind": "agent.spawn", "include_completed": false}),
        ),
        (
            "delegate_task",
            json!({"goal": "g", "core_id": "evolver", "context_mode": "fork",
                   "notify_policy": "silent", "max_depth": 2, "tools": ["read_file"],
                   "input_slots": "all", "output_slots": ["base_output"], "use_bootstrap": true,
                   "background": false, "timeout_seconds": 30}),
        ),
        ("task_status", json!({"task_id": "t1"})),
        (
            "task_control",
            json!({"task_id": "t1", "command": "cancel"}),
        ),
        (
            "yield_until",
            json!({"task_id": "t1", "timeout_seconds": 10}),
        ),
        (
            "evolve_core",
            json!({"action": "review", "goal": "g", "run_id": "r", "background": true,
                   "notify_on_complete": false, "reason": "why",
                   "mcp_review_token": "mcp-review:00"}),
        ),
        (
            "rollback_core",
            json!({"target": "previous", "reason": "r"}),
        ),
        (
            "schedule_manage",
            json!({"action": "create", "schedule_id": "daily", "schedule": "0 9 * * *",
                   "prompt": "p"}),
        ),
    ]
}

/// A value of the wrong JSON type for a property schema.
fn wrong_value_for(schema: &Value) -> Value {
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => json!(5),
        Some("integer") => json!("5"),
        Some("boolean") => json!("yes"),
        Some("object") => json!([]),
        Some("array") => json!({}),
        _ => json!(12.5),
    }
}

// ---------------------------------------------------------------------------
// The builtin catalog

#[test]
fn every_builtin_tool_has_an_example() {
    let mut catalog: Vec<String> = builtin_tools()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    let mut examples: Vec<String> = builtin_examples()
        .iter()
        .map(|(n, _)| (*n).to_owned())
        .collect();
    catalog.sort();
    examples.sort();
    assert_eq!(catalog, examples);
    assert_eq!(catalog.len(), 21);
}

#[test]
fn every_builtin_schema_compiles() {
    for tool in builtin_tools() {
        if let Err(e) = ArgumentSchema::compile(&tool["input_schema"]) {
            panic!("{}: {e}", tool["name"]);
        }
    }
}

#[test]
fn every_builtin_full_example_is_valid() {
    for (name, example) in builtin_examples() {
        let schema = builtin_schema(name);
        if let Err(errors) = validate(&schema, &example) {
            panic!("{name}: {errors:?}");
        }
        // Every property is exercised.
        let props = schema["properties"].as_object().unwrap();
        for key in props.keys() {
            assert!(example.get(key).is_some(), "{name}: example lacks {key}");
        }
    }
}

#[test]
fn every_builtin_minimal_example_is_valid() {
    for tool in builtin_tools() {
        let schema = &tool["input_schema"];
        let full = builtin_examples()
            .into_iter()
            .find(|(n, _)| tool["name"] == *n)
            .unwrap()
            .1;
        let mut minimal = Map::new();
        for name in schema["required"].as_array().cloned().unwrap_or_default() {
            let key = name.as_str().unwrap();
            minimal.insert(key.to_owned(), full[key].clone());
        }
        ok(schema, &Value::Object(minimal));
    }
}

#[test]
fn every_builtin_rejects_unknown_properties() {
    for (name, mut example) in builtin_examples() {
        let schema = builtin_schema(name);
        example["pth"] = json!("x");
        let errors = errs(&schema, &example);
        assert_eq!(errors.len(), 1, "{name}: {errors:?}");
        assert!(
            errors[0].starts_with("arguments: ") && errors[0].contains("'pth' was unexpected"),
            "{name}: {errors:?}"
        );
    }
}

#[test]
fn every_builtin_reports_each_missing_required_property() {
    for (name, example) in builtin_examples() {
        let schema = builtin_schema(name);
        for required in schema["required"].as_array().cloned().unwrap_or_default() {
            let key = required.as_str().unwrap();
            let mut value = example.clone();
            value.as_object_mut().unwrap().remove(key);
            assert_eq!(
                errs(&schema, &value),
                vec![format!("arguments: \"{key}\" is a required property")],
                "{name}"
            );
        }
    }
}

#[test]
fn every_builtin_reports_each_wrong_property_type() {
    for (name, example) in builtin_examples() {
        let schema = builtin_schema(name);
        for (key, prop) in schema["properties"].as_object().unwrap() {
            let mut value = example.clone();
            value[key] = wrong_value_for(prop);
            let errors = errs(&schema, &value);
            assert!(!errors.is_empty(), "{name}.{key}");
            for e in &errors {
                assert!(
                    e.starts_with(&format!("arguments.{key}")),
                    "{name}.{key}: {errors:?}"
                );
            }
        }
    }
}

#[test]
fn every_builtin_rejects_non_object_arguments() {
    for (name, _) in builtin_examples() {
        let schema = builtin_schema(name);
        for value in [json!(null), json!([]), json!("path"), json!(1), json!(true)] {
            assert_eq!(
                errs(&schema, &value),
                vec![r#"arguments: value is not of type "object""#.to_owned()],
                "{name} {value}"
            );
        }
    }
}

#[test]
fn every_builtin_enum_rejects_other_values() {
    let mut seen = 0;
    for (name, example) in builtin_examples() {
        let schema = builtin_schema(name);
        for (key, prop) in schema["properties"].as_object().unwrap() {
            if prop.get("enum").is_none() {
                continue;
            }
            seen += 1;
            let mut value = example.clone();
            value[key] = json!("definitely-not-allowed");
            let errors = errs(&schema, &value);
            assert_eq!(errors.len(), 1, "{name}.{key}: {errors:?}");
            assert!(
                errors[0].starts_with(&format!("arguments.{key}: value is not one of ")),
                "{errors:?}"
            );
        }
    }
    assert_eq!(seen, 9);
}

// ---------------------------------------------------------------------------
// Builtin schemas, case by case

#[test]
fn read_file_messages_name_the_field() {
    let schema = builtin_schema("read_file");
    bad_exact(
        &schema,
        &json!({"pth": "x"}),
        &[
            "arguments: Additional properties are not allowed ('pth' was unexpected)",
            r#"arguments: "path" is a required property"#,
        ],
    );
    bad_exact(
        &schema,
        &json!({"path": 5}),
        &[r#"arguments.path: value is not of type "string""#],
    );
    // Integral floats are integers, as JSON Schema says.
    ok(&schema, &json!({"path": "a", "offset": 2.0, "limit": -5}));
    bad_exact(
        &schema,
        &json!({"path": "a", "offset": 1.5}),
        &[r#"arguments.offset: value is not of type "integer""#],
    );
}

#[test]
fn terminal_secret_bindings_patterns_and_bounds() {
    let schema = builtin_schema("terminal");
    let with = |b: Value| json!({"command": "ls", "secret_bindings": b});
    for source in ["GITHUB_TOKEN", "env:1BAD", "env:OK-NO", "env:"] {
        bad_exact(
            &schema,
            &with(json!([{ "source": source }])),
            &[
                r#"arguments.secret_bindings[0].source: value does not match "^env:[A-Za-z_][A-Za-z0-9_]*$""#,
            ],
        );
    }
    bad_with(
        &schema,
        &with(json!([{"source": "env:A", "target": "A B"}])),
        "arguments.secret_bindings[0].target: value does not match",
    );
    bad_exact(
        &schema,
        &with(json!([{"source": "env:A"}, {"target": "B"}])),
        &[r#"arguments.secret_bindings[1]: "source" is a required property"#],
    );
    bad_with(
        &schema,
        &with(json!([{"source": "env:A", "expires_in_seconds": 121}])),
        "arguments.secret_bindings[0].expires_in_seconds",
    );
    ok(
        &schema,
        &with(json!([{"source": "env:A", "expires_in_seconds": 120}])),
    );
    let many: Vec<Value> = (0..17)
        .map(|i| json!({"source": format!("env:V{i}")}))
        .collect();
    bad_with(
        &schema,
        &with(Value::Array(many.clone())),
        "arguments.secret_bindings: ",
    );
    ok(&schema, &with(Value::Array(many[..16].to_vec())));
}

#[test]
fn terminal_env_keys_are_bracketed_when_not_identifiers() {
    let schema = builtin_schema("terminal");
    let mut errors = bad(
        &schema,
        &json!({"command": "ls", "env": {"FOO": 1, "A-B": true, "OK": "x"}}),
    );
    errors.sort();
    assert_eq!(
        errors,
        [
            r#"arguments.env.FOO: value is not of type "string""#,
            r#"arguments.env["A-B"]: value is not of type "string""#,
        ]
    );
}

#[test]
fn delegate_task_any_of_selections() {
    let schema = builtin_schema("delegate_task");
    for tools in [json!("all"), json!("none"), json!([]), json!(["a", "b"])] {
        ok(&schema, &json!({"goal": "g", "tools": tools}));
    }
    bad_with(
        &schema,
        &json!({"goal": "g", "tools": 5}),
        "arguments.tools: ",
    );
    bad_with(&schema, &json!({"goal": "g", "tools": "some"}), "anyOf");
}

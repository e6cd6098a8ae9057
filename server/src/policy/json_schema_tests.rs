use super::*;

use serde_json::json;

const BUILTIN_TOOLS: &str = include_str!("../catalog/builtin_tools.json");

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
                   "input_slots": "all", "output_slots": ["base_output"], "use_bootstrap": true}),
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
                   "notify_on_complete": false, "reason": "why"}),
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
        assert_eq!(
            errs(&schema, &example),
            vec![r#"arguments: unexpected property "pth""#.to_owned()],
            "{name}"
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
                vec![format!("arguments: missing required property \"{key}\"")],
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
            assert_eq!(errors.len(), 1, "{name}.{key}: {errors:?}");
            assert!(
                errors[0].starts_with(&key_path("arguments", key)),
                "{name}.{key}: {errors:?}"
            );
        }
    }
}

#[test]
fn every_builtin_rejects_non_object_arguments() {
    for (name, _) in builtin_examples() {
        let schema = builtin_schema(name);
        for (value, got) in [
            (json!(null), "null"),
            (json!([]), "array"),
            (json!("path"), "string"),
            (json!(1), "number"),
            (json!(true), "boolean"),
        ] {
            assert_eq!(
                errs(&schema, &value),
                vec![format!("arguments: expected object, got {got}")],
                "{name}"
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
                errors[0].starts_with(&format!("arguments.{key}: expected one of ")),
                "{errors:?}"
            );
        }
    }
    assert_eq!(seen, 9);
}

#[test]
fn builtin_schemas_use_only_supported_keywords() {
    const KNOWN: &[&str] = &[
        "type",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "const",
        "items",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "default",
        "description",
    ];
    fn walk(schema: &Value, at: &str) {
        let Some(map) = schema.as_object() else {
            return;
        };
        for (key, sub) in map {
            assert!(KNOWN.contains(&key.as_str()), "{at}: keyword {key}");
            match key.as_str() {
                "properties" => {
                    for (name, s) in sub.as_object().unwrap() {
                        walk(s, &format!("{at}.{name}"));
                    }
                }
                "items" | "additionalProperties" | "not" => walk(sub, at),
                "anyOf" | "oneOf" | "allOf" => {
                    for s in sub.as_array().unwrap() {
                        walk(s, at);
                    }
                }
                "pattern" => assert!(
                    Pattern::parse(sub.as_str().unwrap()).is_some(),
                    "{at}: unsupported pattern {sub}"
                ),
                _ => {}
            }
        }
    }
    for tool in builtin_tools() {
        walk(&tool["input_schema"], tool["name"].as_str().unwrap());
    }
}

#[test]
fn read_file_misspelled_path() {
    bad_exact(
        &builtin_schema("read_file"),
        &json!({"pth": "x"}),
        &[
            r#"arguments: missing required property "path""#,
            r#"arguments: unexpected property "pth""#,
        ],
    );
}

#[test]
fn read_file_path_must_be_a_string() {
    bad_exact(
        &builtin_schema("read_file"),
        &json!({"path": 5}),
        &["arguments.path: expected string, got number"],
    );
    bad_exact(
        &builtin_schema("read_file"),
        &json!({"path": null}),
        &["arguments.path: expected string, got null"],
    );
}

#[test]
fn read_file_integer_arguments() {
    let schema = builtin_schema("read_file");
    ok(&schema, &json!({"path": "a", "offset": 2.0, "limit": -5}));
    bad_exact(
        &schema,
        &json!({"path": "a", "offset": 1.5}),
        &["arguments.offset: expected integer, got number"],
    );
    bad_exact(
        &schema,
        &json!({"path": "a", "limit": "100"}),
        &["arguments.limit: expected integer, got string"],
    );
    bad_exact(
        &schema,
        &json!({"path": "a", "limit": true}),
        &["arguments.limit: expected integer, got boolean"],
    );
}

#[test]
fn write_file_missing_content() {
    bad_exact(
        &builtin_schema("write_file"),
        &json!({"path": "a.txt"}),
        &[r#"arguments: missing required property "content""#],
    );
    bad_exact(
        &builtin_schema("write_file"),
        &json!({"path": "a", "content": "x", "create_parent_dirs": "no"}),
        &["arguments.create_parent_dirs: expected boolean, got string"],
    );
}

#[test]
fn write_file_several_errors_at_once() {
    bad_exact(
        &builtin_schema("write_file"),
        &json!({"path": 1, "contents": "x", "extra": null}),
        &[
            r#"arguments: missing required property "content""#,
            r#"arguments: unexpected property "contents""#,
            r#"arguments: unexpected property "extra""#,
            "arguments.path: expected string, got number",
        ],
    );
}

#[test]
fn search_files_target_enum() {
    bad_exact(
        &builtin_schema("search_files"),
        &json!({"target": "regex"}),
        &[r#"arguments.target: expected one of "content", "name", "both", got "regex""#],
    );
    ok(&builtin_schema("search_files"), &json!({}));
}

#[test]
fn terminal_secret_bindings() {
    let schema = builtin_schema("terminal");
    let with = |b: Value| json!({"command": "ls", "secret_bindings": b});
    bad_exact(
        &schema,
        &with(json!([{"source": "GITHUB_TOKEN"}])),
        &[
            r#"arguments.secret_bindings[0].source: "GITHUB_TOKEN" does not match pattern "^env:[A-Za-z_][A-Za-z0-9_]*$""#,
        ],
    );
    bad_with(
        &schema,
        &with(json!([{"source": "env:1BAD"}])),
        "does not match pattern",
    );
    bad_with(
        &schema,
        &with(json!([{"source": "env:OK-NO"}])),
        "does not match pattern",
    );
    bad_with(
        &schema,
        &with(json!([{"source": "env:"}])),
        "does not match pattern",
    );
    bad_with(
        &schema,
        &with(json!([{"source": "env:A", "target": "A B"}])),
        "arguments.secret_bindings[0].target",
    );
    bad_exact(
        &schema,
        &with(json!([{"source": "env:A"}, {"target": "B"}])),
        &[r#"arguments.secret_bindings[1]: missing required property "source""#],
    );
    bad_exact(
        &schema,
        &with(json!([{"source": "env:A", "expires_in_seconds": 0}])),
        &["arguments.secret_bindings[0].expires_in_seconds: expected >= 1, got 0"],
    );
    bad_exact(
        &schema,
        &with(json!([{"source": "env:A", "expires_in_seconds": 121}])),
        &["arguments.secret_bindings[0].expires_in_seconds: expected <= 120, got 121"],
    );
    ok(
        &schema,
        &with(json!([{"source": "env:A", "expires_in_seconds": 120}])),
    );
    bad_exact(
        &schema,
        &with(json!([{"source": "env:A", "scope": "x"}])),
        &[r#"arguments.secret_bindings[0]: unexpected property "scope""#],
    );
    let many: Vec<Value> = (0..17)
        .map(|i| json!({"source": format!("env:V{i}")}))
        .collect();
    bad_exact(
        &schema,
        &with(Value::Array(many.clone())),
        &["arguments.secret_bindings: expected at most 16 items, got 17"],
    );
    ok(&schema, &with(Value::Array(many[..16].to_vec())));
    bad_exact(
        &schema,
        &with(json!("env:A")),
        &["arguments.secret_bindings: expected array, got string"],
    );
}

#[test]
fn terminal_env_values_must_be_strings() {
    let schema = builtin_schema("terminal");
    bad_exact(
        &schema,
        &json!({"command": "ls", "env": {"FOO": 1, "A-B": true, "OK": "x"}}),
        &[
            r#"arguments.env["A-B"]: expected string, got boolean"#,
            "arguments.env.FOO: expected string, got number",
        ],
    );
    bad_exact(
        &schema,
        &json!({"command": "ls", "env": ["FOO=1"]}),
        &["arguments.env: expected object, got array"],
    );
}

#[test]
fn clarify_choices() {
    let schema = builtin_schema("clarify");
    bad_exact(
        &schema,
        &json!({"question": "q", "choices": ["a", "b", "c", "d", "e"]}),
        &["arguments.choices: expected at most 4 items, got 5"],
    );
    bad_exact(
        &schema,
        &json!({"question": "q", "choices": ["a", 1]}),
        &["arguments.choices[1]: expected string, got number"],
    );
    ok(&schema, &json!({"question": "q", "choices": []}));
}

#[test]
fn delegate_task_any_of_selections() {
    let schema = builtin_schema("delegate_task");
    for tools in [json!("all"), json!("none"), json!([]), json!(["a", "b"])] {
        ok(&schema, &json!({"goal": "g", "tools": tools}));
    }
    ok(
        &schema,
        &json!({"goal": "g", "input_slots": [], "output_slots": "all"}),
    );
    bad_exact(
        &schema,
        &json!({"goal": "g", "tools": 5}),
        &["arguments.tools: does not match any schema in anyOf (branch 0: arguments.tools: expected string, got number | branch 1: arguments.tools: expected array, got number)"],
    );
    bad_with(
        &schema,
        &json!({"goal": "g", "tools": "some"}),
        r#"got "some""#,
    );
    bad_with(
        &schema,
        &json!({"goal": "g", "tools": ["a", 1]}),
        "arguments.tools[1]: expected string, got number",
    );
    bad_with(
        &schema,
        &json!({"goal": "g", "input_slots": "none"}),
        "anyOf",
    );
}

#[test]
fn small_tools_invalid_cases() {
    bad_with(
        &builtin_schema("todo"),
        &json!({"action": "remove"}),
        "arguments.action",
    );
    bad_with(
        &builtin_schema("todo"),
        &json!({"index": "1"}),
        "arguments.index",
    );
    bad_with(
        &builtin_schema("task_control"),
        &json!({"task_id": "t", "command": "pause"}),
        r#"expected one of "cancel", got "pause""#,
    );
    bad_exact(
        &builtin_schema("schedule_manage"),
        &json!({}),
        &[r#"arguments: missing required property "action""#],
    );
    bad_exact(
        &builtin_schema("tools_list"),
        &json!({"x": 1}),
        &[r#"arguments: unexpected property "x""#],
    );
    bad_with(
        &builtin_schema("task_list"),
        &json!({"kind": "terminal"}),
        r#"expected one of "terminal.exec", "evolver.run", "agent.spawn""#,
    );
    bad_with(
        &builtin_schema("yield_until"),
        &json!({"task_id": "t", "timeout_seconds": 0.5}),
        "expected integer, got number",
    );
    bad_with(
        &builtin_schema("patch"),
        &json!({"path": "a", "old": "x", "new": "y", "count": "all"}),
        "arguments.count: expected integer",
    );
}

// ---------------------------------------------------------------------------
// type

#[test]
fn type_names_table() {
    let values = [
        json!(null),
        json!(true),
        json!({}),
        json!([]),
        json!("s"),
        json!(1.5),
        json!(3),
    ];
    let accepts: &[(&str, &[usize])] = &[
        ("null", &[0]),
        ("boolean", &[1]),
        ("object", &[2]),
        ("array", &[3]),
        ("string", &[4]),
        ("number", &[5, 6]),
        ("integer", &[6]),
    ];
    for (name, good) in accepts {
        for (i, value) in values.iter().enumerate() {
            let result = validate(&json!({ "type": name }), value);
            assert_eq!(result.is_ok(), good.contains(&i), "{name} vs {value}");
        }
    }
}

#[test]
fn integer_edge_values() {
    let schema = json!({"type": "integer"});
    for v in [
        json!(0),
        json!(-1),
        json!(i64::MIN),
        json!(u64::MAX),
        json!(1.0),
        json!(-0.0),
        json!(1e2),
        json!(1e300),
    ] {
        ok(&schema, &v);
    }
    for v in [json!(0.5), json!(-1.0000001), json!(1e-300)] {
        bad_exact(&schema, &v, &["arguments: expected integer, got number"]);
    }
    let parsed: Value = serde_json::from_str("100000000000000000000000").unwrap();
    ok(&schema, &parsed);
}

#[test]
fn type_arrays() {
    let schema = json!({"type": ["string", "null"]});
    ok(&schema, &json!("x"));
    ok(&schema, &json!(null));
    bad_exact(
        &schema,
        &json!(1),
        &["arguments: expected string or null, got number"],
    );
    ok(&json!({"type": ["integer", "number"]}), &json!(1.5));
}

#[test]
fn type_schema_errors() {
    bad_exact(
        &json!({"type": "file"}),
        &json!("x"),
        &[r#"arguments: invalid schema: unknown type "file""#],
    );
    bad_with(&json!({"type": 5}), &json!("x"), "invalid schema");
    bad_with(&json!({"type": []}), &json!("x"), "invalid schema");
    bad_with(
        &json!({"type": ["string", 1]}),
        &json!("x"),
        "invalid schema",
    );
    bad_with(
        &json!({"type": ["string", "file"]}),
        &json!("x"),
        "unknown type",
    );
}

#[test]
fn type_mismatch_skips_other_keywords() {
    bad_exact(
        &json!({"type": "string", "enum": ["a"], "minLength": 3}),
        &json!(7),
        &["arguments: expected string, got number"],
    );
}

// ---------------------------------------------------------------------------
// enum / const

#[test]
fn enum_matches_by_json_value() {
    let schema = json!({"enum": [1, "a", null, [1, 2], {"k": true}]});
    for v in [
        json!(1),
        json!(1.0),
        json!("a"),
        json!(null),
        json!([1, 2]),
        json!({"k": true}),
    ] {
        ok(&schema, &v);
    }
    for v in [
        json!(2),
        json!("A"),
        json!(false),
        json!([2, 1]),
        json!({"k": false}),
        json!({}),
    ] {
        bad_with(&schema, &v, "expected one of");
    }
}

#[test]
fn enum_message_renders_values_compactly() {
    bad_exact(
        &json!({"enum": ["x", 2, [1], {"a": 1}]}),
        &json!({"a": 2, "b": 3}),
        &[
            r#"arguments: expected one of "x", 2, an array of 1 items, an object with 1 properties, got an object with 2 properties"#,
        ],
    );
    let options: Vec<Value> = (0..25).map(|i| json!(i)).collect();
    bad_with(
        &json!({ "enum": options }),
        &json!(99),
        "… (5 more), got 99",
    );
    let long = "y".repeat(500);
    let errors = bad(&json!({"enum": ["x"]}), &json!(long));
    assert!(errors[0].ends_with('…'), "{errors:?}");
    assert!(errors[0].chars().count() < 200);
}

#[test]
fn enum_schema_error() {
    bad_exact(
        &json!({"enum": "a"}),
        &json!("a"),
        &[r#"arguments: invalid schema: "enum" must be an array"#],
    );
    bad_with(&json!({"enum": []}), &json!("a"), "expected one of , got");
}

#[test]
fn const_keyword() {
    ok(&json!({"const": 3}), &json!(3.0));
    ok(&json!({"const": {"a": [1]}}), &json!({"a": [1.0]}));
    bad_exact(
        &json!({"const": "x"}),
        &json!("y"),
        &[r#"arguments: expected "x", got "y""#],
    );
    bad_with(
        &json!({"const": null}),
        &json!(false),
        "expected null, got false",
    );
}

#[test]
fn large_integers_compare_exactly() {
    let schema = json!({"enum": [u64::MAX]});
    ok(&schema, &json!(u64::MAX));
    bad_with(&schema, &json!(u64::MAX - 1), "expected one of");
    bad_with(&json!({"const": -1}), &json!(u64::MAX), "expected -1");
}

// ---------------------------------------------------------------------------
// strings

#[test]
fn string_lengths_count_characters() {
    let schema = json!({"type": "string", "minLength": 2, "maxLength": 3});
    ok(&schema, &json!("日本"));
    ok(&schema, &json!("🚀🚀🚀"));
    bad_exact(
        &schema,
        &json!("é"),
        &["arguments: expected at least 2 characters, got 1"],
    );
    bad_exact(
        &schema,
        &json!("abcd"),
        &["arguments: expected at most 3 characters, got 4"],
    );
    ok(&json!({"maxLength": 0}), &json!(""));
    ok(&json!({"maxLength": 0}), &json!(12345));
}

#[test]
fn length_keyword_schema_errors() {
    for bad_len in [json!(-1), json!(1.5), json!("3"), json!(null)] {
        bad_with(
            &json!({ "minLength": bad_len }),
            &json!("abc"),
            r#"invalid schema: "minLength" must be a non-negative integer"#,
        );
    }
    ok(&json!({"minLength": 2.0}), &json!("ab"));
    ok(&json!({"maxLength": 1e300}), &json!("ab"));
}

#[test]
fn pattern_builtin_shapes() {
    let env = json!({"pattern": "^env:[A-Za-z_][A-Za-z0-9_]*$"});
    for s in ["env:A", "env:_", "env:GITHUB_TOKEN", "env:a1_b2"] {
        ok(&env, &json!(s));
    }
    for s in [
        "env:", "ENV:A", "env:1A", "env:A-B", " env:A", "env:A ", "xenv:A", "env:A\n",
    ] {
        bad_with(&env, &json!(s), "does not match pattern");
    }
    ok(&env, &json!(5));
}

#[test]
fn pattern_is_an_unanchored_search() {
    let schema = json!({"pattern": "b+c"});
    ok(&schema, &json!("abbbcd"));
    ok(&schema, &json!("bc"));
    bad_with(&schema, &json!("ac"), "does not match");
    ok(&json!({"pattern": ""}), &json!("anything"));
    ok(&json!({"pattern": "x?"}), &json!(""));
    ok(&json!({"pattern": "^a"}), &json!("abc"));
    bad_with(&json!({"pattern": "^a"}), &json!("ba"), "does not match");
    ok(&json!({"pattern": "c$"}), &json!("abc"));
    bad_with(&json!({"pattern": "c$"}), &json!("cb"), "does not match");
    ok(&json!({"pattern": "^$"}), &json!(""));
    bad_with(&json!({"pattern": "^$"}), &json!("x"), "does not match");
}

#[test]
fn pattern_classes_and_escapes() {
    let cases: &[(&str, &str, bool)] = &[
        (r"^\d{3}-\d{4}$", "555-1234", true),
        (r"^\d{3}-\d{4}$", "555-12345", false),
        (r"^\D+$", "abc", true),
        (r"^\D+$", "ab1", false),
        (r"^\w+$", "a_1", true),
        (r"^\w+$", "a-1", false),
        (r"^\W$", "-", true),
        (r"^a\sb$", "a b", true),
        (r"^a\sb$", "a\u{3000}b", true),
        (r"^a\Sb$", "a b", false),
        (r"^[^a-c]+$", "xyz", true),
        (r"^[^a-c]+$", "xbz", false),
        (r"^[a\-z]+$", "a-z", true),
        (r"^[a\-z]+$", "b", false),
        (r"^[-a]+$", "-a-", true),
        (r"^[a-]+$", "a-", true),
        (r"^[\d.]+$", "1.5", true),
        (r"^[\w\s]+$", "a b_c", true),
        (r"^\.$", ".", true),
        (r"^\.$", "x", false),
        (r"^\x41\u00e9$", "Aé", true),
        (r"^\t\n$", "\t\n", true),
        (r"^\$\^\(\)$", "$^()", true),
        // `[]` is the empty class: it never matches a character.
        (r"^[]$", "", false),
        (r"^[]$", "a", false),
        (r"^a[]?$", "a", true),
        (r"^ü+$", "üü", true),
        (r"^[а-я]+$", "привет", true),
        (r"^[а-я]+$", "hello", false),
    ];
    for (pattern, text, want) in cases {
        let compiled = Pattern::parse(pattern).unwrap_or_else(|| panic!("{pattern} unsupported"));
        assert_eq!(compiled.is_match(text), *want, "{pattern} on {text:?}");
    }
}

#[test]
fn pattern_quantifiers() {
    let cases: &[(&str, &str, bool)] = &[
        ("^a{2}$", "aa", true),
        ("^a{2}$", "aaa", false),
        ("^a{2,}$", "aaaa", true),
        ("^a{2,}$", "a", false),
        ("^a{1,3}$", "aaa", true),
        ("^a{1,3}$", "aaaa", false),
        ("^a{0}b$", "b", true),
        ("^a*$", "", true),
        ("^a+$", "", false),
        ("^ab?c$", "ac", true),
        ("^ab?c$", "abbc", false),
        ("^a+?b*?$", "aabb", true),
        ("^a{1,2}?$", "aa", true),
        ("^.+$", "a\nb", false),
        ("^.*x$", "yyx", true),
        ("^a*a*a*a*a*b$", "aaaaaaaaab", true),
    ];
    for (pattern, text, want) in cases {
        let compiled = Pattern::parse(pattern).unwrap_or_else(|| panic!("{pattern} unsupported"));
        assert_eq!(compiled.is_match(text), *want, "{pattern} on {text:?}");
    }
}

#[test]
fn pattern_matching_is_linear() {
    let schema = json!({"pattern": "^(?:a)"}); // unsupported: ignored
    ok(&schema, &json!("b"));
    let schema = json!({"pattern": "a*a*a*a*a*a*a*a*a*a*b$"});
    let text = "a".repeat(100_000);
    let start = std::time::Instant::now();
    bad_with(&schema, &json!(text), "does not match pattern");
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn unsupported_patterns_are_ignored() {
    for pattern in [
        "(a|b)",
        "a|b",
        r"\bword\b",
        r"(a)\1",
        "a^b",
        "a$b",
        "*a",
        "a**",
        "{2}",
        "a{x}",
        "a{3,1}",
        "[a-",
        "[z-a]",
        r"\p{L}",
        r"\c",
        "\\",
        r"\u12",
        r"\x+1",
        r"\u+123",
        "a{100001}",
    ] {
        assert!(
            Pattern::parse(pattern).is_none(),
            "{pattern} should be unsupported"
        );
        ok(&json!({ "pattern": pattern }), &json!("zzz"));
    }
}

#[test]
fn pattern_schema_error() {
    bad_exact(
        &json!({"pattern": 5}),
        &json!("x"),
        &[r#"arguments: invalid schema: "pattern" must be a string"#],
    );
}

// ---------------------------------------------------------------------------
// numbers

#[test]
fn minimum_and_maximum() {
    let schema = json!({"minimum": 1, "maximum": 120});
    ok(&schema, &json!(1));
    ok(&schema, &json!(120));
    ok(&schema, &json!(60.5));
    bad_exact(&schema, &json!(0), &["arguments: expected >= 1, got 0"]);
    bad_exact(&schema, &json!(0.5), &["arguments: expected >= 1, got 0.5"]);
    bad_exact(&schema, &json!(-7), &["arguments: expected >= 1, got -7"]);
    bad_exact(
        &schema,
        &json!(121),
        &["arguments: expected <= 120, got 121"],
    );
    bad_exact(
        &schema,
        &json!(u64::MAX),
        &[&format!("arguments: expected <= 120, got {}", u64::MAX)],
    );
    ok(&schema, &json!("not a number"));
}

#[test]
fn float_bounds() {
    let schema = json!({"minimum": 0.5, "maximum": 1.5});
    ok(&schema, &json!(1));
    bad_with(&schema, &json!(0), "expected >= 0.5");
    bad_with(&schema, &json!(2), "expected <= 1.5");
}

#[test]
fn exclusive_bounds() {
    let schema = json!({"exclusiveMinimum": 0, "exclusiveMaximum": 10});
    ok(&schema, &json!(5));
    bad_exact(&schema, &json!(0), &["arguments: expected > 0, got 0"]);
    bad_exact(&schema, &json!(10), &["arguments: expected < 10, got 10"]);
    // Draft-4 boolean form.
    let draft4 =
        json!({"minimum": 0, "exclusiveMinimum": true, "maximum": 10, "exclusiveMaximum": false});
    bad_with(&draft4, &json!(0), "expected > 0");
    ok(&draft4, &json!(10));
}

#[test]
fn bound_schema_errors() {
    bad_exact(
        &json!({"minimum": "1"}),
        &json!(5),
        &[r#"arguments: invalid schema: "minimum" must be a number"#],
    );
    bad_with(&json!({"maximum": true}), &json!(5), "invalid schema");
    bad_with(
        &json!({"exclusiveMaximum": null}),
        &json!(5),
        "invalid schema",
    );
}

#[test]
fn mixed_sign_big_number_comparisons() {
    ok(&json!({"minimum": -1}), &json!(u64::MAX));
    bad_with(&json!({"maximum": -1}), &json!(u64::MAX), "expected <= -1");
    ok(&json!({"maximum": u64::MAX}), &json!(i64::MIN));
    ok(&json!({"minimum": 1e300}), &json!(1e301));
}

// ---------------------------------------------------------------------------
// arrays

#[test]
fn items_schema_and_counts() {
    let schema =
        json!({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3});
    ok(&schema, &json!([1, 2, 3]));
    bad_exact(
        &schema,
        &json!([]),
        &["arguments: expected at least 1 items, got 0"],
    );
    bad_exact(
        &schema,
        &json!([1, 2, 3, 4]),
        &["arguments: expected at most 3 items, got 4"],
    );
    bad_exact(
        &schema,
        &json!([1, "2", 3.5]),
        &[
            "arguments[1]: expected integer, got string",
            "arguments[2]: expected integer, got number",
        ],
    );
}

#[test]
fn positional_items_and_boolean_items() {
    let schema = json!({"items": [{"type": "string"}, {"type": "integer"}]});
    ok(&schema, &json!(["a", 1]));
    ok(&schema, &json!(["a", 1, null, {}]));
    ok(&schema, &json!(["a"]));
    bad_exact(
        &schema,
        &json!([1, "a"]),
        &[
            "arguments[0]: expected string, got number",
            "arguments[1]: expected integer, got string",
        ],
    );
    ok(&json!({"items": false}), &json!([]));
    bad_exact(
        &json!({"items": false}),
        &json!([1]),
        &["arguments[0]: no value is allowed here"],
    );
    ok(&json!({"items": true}), &json!([1, "x"]));
    bad_with(&json!({"items": 5}), &json!([1]), "invalid schema");
}

#[test]
fn nested_paths() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a": {"type": "array", "items": {
                "type": "object",
                "properties": {"b": {"type": "object", "properties": {"c": {"type": "string"}}}}
            }}
        }
    });
    bad_exact(
        &schema,
        &json!({"a": [{}, {"b": {"c": 1}}]}),
        &["arguments.a[1].b.c: expected string, got number"],
    );
}

// ---------------------------------------------------------------------------
// objects

#[test]
fn additional_properties_schema() {
    let schema = json!({"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}});
    ok(&schema, &json!({"a": "x", "b": 1, "c": 2}));
    bad_exact(
        &schema,
        &json!({"a": "x", "b": "y"}),
        &["arguments.b: expected integer, got string"],
    );
    ok(&json!({"properties": {"a": {}}}), &json!({"zzz": 1}));
    ok(&json!({"additionalProperties": true}), &json!({"zzz": 1}));
    bad_exact(
        &json!({"additionalProperties": false}),
        &json!({"zzz": 1}),
        &[r#"arguments: unexpected property "zzz""#],
    );
    ok(&json!({"additionalProperties": false}), &json!({}));
    bad_with(
        &json!({"additionalProperties": "no"}),
        &json!({}),
        "invalid schema",
    );
}

#[test]
fn key_paths_are_escaped_when_not_identifiers() {
    let schema = json!({"additionalProperties": {"type": "string"}});
    bad_exact(
        &schema,
        &json!({"": 1, "1abc": 1, "a b": 1, "a.b": 1, "ключ": 1, "q\"": 1, "_ok9": 1}),
        &[
            r#"arguments[""]: expected string, got number"#,
            r#"arguments["1abc"]: expected string, got number"#,
            "arguments._ok9: expected string, got number",
            r#"arguments["a b"]: expected string, got number"#,
            r#"arguments["a.b"]: expected string, got number"#,
            r#"arguments["q\""]: expected string, got number"#,
            r#"arguments["ключ"]: expected string, got number"#,
        ],
    );
    bad_exact(
        &json!({"additionalProperties": false}),
        &json!({"a\nb": 1}),
        &[r#"arguments: unexpected property "a\nb""#],
    );
}

#[test]
fn required_rules() {
    let schema = json!({"required": ["a", "b"]});
    ok(&schema, &json!({"a": null, "b": false}));
    bad_exact(
        &schema,
        &json!({}),
        &[
            r#"arguments: missing required property "a""#,
            r#"arguments: missing required property "b""#,
        ],
    );
    ok(&schema, &json!("not an object"));
    bad_with(
        &json!({"required": "a"}),
        &json!({}),
        r#""required" must be an array of strings"#,
    );
    bad_with(
        &json!({"required": ["a", 1]}),
        &json!({"a": 1}),
        "invalid schema",
    );
    bad_with(
        &json!({"properties": []}),
        &json!({}),
        r#""properties" must be an object"#,
    );
}

#[test]
fn false_property_schema() {
    bad_exact(
        &json!({"properties": {"x": false}}),
        &json!({"x": 1}),
        &["arguments.x: no value is allowed here"],
    );
    ok(&json!({"properties": {"x": false}}), &json!({"y": 1}));
}

#[test]
fn error_order_is_independent_of_key_order() {
    let schema = json!({"properties": {"z": {"type": "string"}, "a": {"type": "string"}}, "additionalProperties": false});
    let one: Value = serde_json::from_str(r#"{"z": 1, "m": 1, "a": 1}"#).unwrap();
    let two: Value = serde_json::from_str(r#"{"a": 1, "m": 1, "z": 1}"#).unwrap();
    assert_eq!(errs(&schema, &one), errs(&schema, &two));
    assert_eq!(
        errs(&schema, &one),
        vec![
            "arguments.a: expected string, got number",
            r#"arguments: unexpected property "m""#,
            "arguments.z: expected string, got number",
        ]
    );
}

// ---------------------------------------------------------------------------
// combinators

#[test]
fn one_of_needs_exactly_one() {
    let schema = json!({"oneOf": [{"type": "integer"}, {"type": "number"}]});
    ok(&schema, &json!(1.5));
    bad_exact(
        &schema,
        &json!(1),
        &["arguments: matches 2 schemas in oneOf, expected exactly one"],
    );
    bad_with(&schema, &json!("x"), "does not match any schema in oneOf");
}

#[test]
fn any_of_stops_at_first_match() {
    let schema = json!({"anyOf": [{"type": "integer"}, {"type": "number"}]});
    ok(&schema, &json!(1));
    ok(&schema, &json!(1.5));
    bad_with(
        &schema,
        &json!(null),
        "branch 1: arguments: expected number, got null",
    );
}

#[test]
fn all_of_and_not() {
    let schema = json!({"allOf": [{"type": "string"}, {"minLength": 2}, {"maxLength": 3}]});
    ok(&schema, &json!("abc"));
    bad_exact(
        &schema,
        &json!("a"),
        &["arguments: expected at least 2 characters, got 1"],
    );
    let not = json!({"not": {"type": "null"}});
    ok(&not, &json!(1));
    bad_exact(
        &not,
        &json!(null),
        &[r#"arguments: must not match the schema in "not""#],
    );
    bad_with(&json!({"not": 5}), &json!(1), r#""not" must be a schema"#);
}

#[test]
fn combinator_schema_errors() {
    for keyword in ["anyOf", "oneOf", "allOf"] {
        bad_with(
            &json!({ keyword: [] }),
            &json!(1),
            "must be a non-empty array",
        );
        bad_with(
            &json!({ keyword: {"type": "string"} }),
            &json!(1),
            "must be a non-empty array",
        );
    }
}

#[test]
fn long_branch_errors_are_truncated() {
    let props: Map<String, Value> = (0..40)
        .map(|i| (format!("p{i:02}"), json!({"type": "string"})))
        .collect();
    let branch = json!({ "properties": props });
    let value: Map<String, Value> = (0..40).map(|i| (format!("p{i:02}"), json!(i))).collect();
    let errors = bad(
        &json!({"anyOf": [branch.clone(), branch]}),
        &Value::Object(value),
    );
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].chars().count() < 2 * BRANCH_MAX_CHARS + 200,
        "{}",
        errors[0]
    );
}

// ---------------------------------------------------------------------------
// schema shapes, ignored keywords

#[test]
fn boolean_schemas() {
    ok(&json!(true), &json!({"anything": [1, 2]}));
    bad_exact(
        &json!(false),
        &json!(null),
        &["arguments: no value is allowed here"],
    );
    ok(&json!({}), &json!([1, {"x": null}]));
}

#[test]
fn non_schema_values_fail_closed() {
    for schema in [
        json!(null),
        json!(5),
        json!("string"),
        json!([{"type": "string"}]),
    ] {
        bad_with(
            &schema,
            &json!("x"),
            "invalid schema: expected an object or boolean",
        );
    }
    bad_exact(
        &json!({"properties": {"a": "string"}}),
        &json!({"a": "x"}),
        &["arguments.a: invalid schema: expected an object or boolean, got string"],
    );
}

#[test]
fn annotations_and_unknown_keywords_are_ignored() {
    let schema = json!({
        "type": "integer",
        "default": "not even an integer",
        "description": 42,
        "title": ["x"],
        "format": "email",
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": "#/$defs/nope",
        "$defs": {"nope": false},
        "multipleOf": 7,
        "uniqueItems": true,
        "x-custom": {"anything": true}
    });
    ok(&schema, &json!(5));
    bad_exact(
        &schema,
        &json!("5"),
        &["arguments: expected integer, got string"],
    );
}

#[test]
fn keywords_apply_only_to_their_type() {
    let schema = json!({
        "minLength": 5, "pattern": "^x", "minimum": 10, "minItems": 2,
        "required": ["a"], "properties": {"a": {"type": "string"}}, "items": {"type": "string"}
    });
    for v in [
        json!(null),
        json!(true),
        json!(1),
        json!("xxxxx"),
        json!([]),
        json!({"a": "s"}),
    ] {
        let errors = errs(&schema, &v);
        assert!(errors.len() <= 1, "{v}: {errors:?}");
    }
    ok(&schema, &json!(null));
    ok(&schema, &json!(true));
}

#[test]
fn validate_at_uses_the_given_root() {
    assert_eq!(
        validate_at(&json!({"type": "string"}), &json!(1), "input"),
        Err(vec!["input: expected string, got number".to_owned()])
    );
    assert_eq!(
        validate_at(&json!({"type": "string"}), &json!("s"), "input"),
        Ok(())
    );
}

// ---------------------------------------------------------------------------
// limits and robustness

#[test]
fn deep_schema_is_bounded() {
    let mut schema = json!({"type": "string"});
    for _ in 0..200 {
        schema = json!({ "items": schema });
    }
    let mut value = json!("x");
    for _ in 0..200 {
        value = json!([value]);
    }
    let errors = bad(&schema, &value);
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].contains("schema nesting exceeds 64 levels"),
        "{errors:?}"
    );
    assert!(errors[0].starts_with(&format!("arguments{}", "[0]".repeat(MAX_DEPTH + 1))));
}

#[test]
fn schema_just_within_depth_is_fine() {
    let mut schema = json!({"type": "integer"});
    let mut value = json!(1);
    for _ in 0..MAX_DEPTH {
        schema = json!({ "properties": { "n": schema } });
        value = json!({ "n": value });
    }
    ok(&schema, &value);
}

#[test]
fn deep_values_are_not_walked_without_schema() {
    let mut value = json!(1);
    for _ in 0..1000 {
        value = json!([value]);
    }
    ok(&json!({"type": "array"}), &value);
    ok(&json!({}), &value);
}

#[test]
fn deep_const_comparison_is_bounded() {
    let mut deep = json!(1);
    for _ in 0..(MAX_VALUE_DEPTH + 10) {
        deep = json!([deep]);
    }
    // Beyond the bound values are treated as different (fails closed).
    bad_with(
        &json!({ "const": deep.clone() }),
        &deep,
        "expected an array of 1 items",
    );
    let mut shallow = json!(1);
    for _ in 0..50 {
        shallow = json!([shallow]);
    }
    ok(&json!({ "const": shallow.clone() }), &shallow);
}

#[test]
fn large_schema_times_large_value_hits_the_step_budget() {
    // Work is |schema| x |value| (no `$ref`, so no hidden sharing); cap it.
    let branches: Vec<Value> = (0..100).map(|_| json!({"type": "integer"})).collect();
    let schema = json!({"items": {"allOf": branches}});
    let value = Value::Array((0..10_000).map(|i| json!(i)).collect());
    let start = std::time::Instant::now();
    let errors = bad(&schema, &value);
    assert_eq!(
        errors,
        vec!["arguments[2475]: schema is too complex to evaluate"]
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(20));
}

#[test]
fn step_budget_inside_any_of_is_reported() {
    let branches: Vec<Value> = (0..100).map(|_| json!({"type": "integer"})).collect();
    let inner = json!({"items": {"allOf": branches}});
    let schema = json!({"anyOf": [inner, {"type": "string"}]});
    let value = Value::Array((0..10_000).map(|i| json!(i)).collect());
    let errors = bad(&schema, &value);
    assert_eq!(
        errors.last().map(String::as_str),
        Some("arguments: schema is too complex to evaluate"),
        "{errors:?}"
    );
    assert!(errors[0].starts_with("arguments: does not match any schema in anyOf"));
}

#[test]
fn error_list_is_capped() {
    let value = Value::Array((0..200).map(|_| json!("x")).collect());
    let errors = bad(&json!({"items": {"type": "integer"}}), &value);
    assert_eq!(errors.len(), MAX_ERRORS + 1);
    assert_eq!(errors[MAX_ERRORS], "… further errors omitted");
    assert_eq!(errors[0], "arguments[0]: expected integer, got string");
}

#[test]
fn never_panics_on_odd_combinations() {
    let schemas = vec![
        json!(null),
        json!(true),
        json!(false),
        json!(0),
        json!("x"),
        json!([]),
        json!({}),
        json!({"type": null}),
        json!({"type": {}}),
        json!({"properties": null}),
        json!({"properties": {"a": null}}),
        json!({"required": null}),
        json!({"required": [null]}),
        json!({"additionalProperties": null}),
        json!({"items": null}),
        json!({"items": [null, 1]}),
        json!({"enum": null}),
        json!({"enum": [[[[]]]]}),
        json!({"minLength": f64::MAX}),
        json!({"maxItems": -0.0}),
        json!({"minimum": f64::MAX, "maximum": f64::MIN}),
        json!({"pattern": "[\\"}),
        json!({"pattern": "\\u{zz}"}),
        json!({"pattern": "[a-\\d]"}),
        json!({"pattern": "a{99999999999999999999}"}),
        json!({"anyOf": [null]}),
        json!({"oneOf": [false, false]}),
        json!({"allOf": [true, {"not": true}]}),
        json!({"not": null}),
        json!({"const": {"a": [1, {"b": null}]}}),
    ];
    let values = vec![
        json!(null),
        json!(false),
        json!(0),
        json!(-1),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(f64::MAX),
        json!(-0.0),
        json!(""),
        json!("\u{0}"),
        json!("🚀".repeat(100)),
        json!([]),
        json!([null, [null]]),
        json!({}),
        json!({"": {"": ""}}),
    ];
    for schema in &schemas {
        for value in &values {
            let _ = validate(schema, value);
        }
    }
}

#[test]
fn valid_arguments_produce_ok_unit() {
    assert_eq!(
        validate(&builtin_schema("task_status"), &json!({"task_id": "abc"})),
        Ok(())
    );
}

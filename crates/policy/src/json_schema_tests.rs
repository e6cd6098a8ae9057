use super::*;

use serde_json::{json, Map};

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

/// Does not compile; the reason contains `needle`.
fn uncompilable(schema: &Value, needle: &str) -> String {
    match ArgumentSchema::compile(schema) {
        Ok(_) => panic!("expected {schema} not to compile"),
        Err(reason) => {
            assert!(reason.contains(needle), "wanted {needle:?} in {reason}");
            reason
        }
    }
}

/// Fails with an error containing `needle`.
fn bad_with(schema: &Value, value: &Value, needle: &str) {
    let errors = bad(schema, value);
    assert!(
        errors.iter().any(|e| e.contains(needle)),
        "value {value}: wanted {needle:?} in {errors:?}"
    );
}

// ---------------------------------------------------------------------------
// Fail closed: what does not compile

#[test]
fn a_pattern_that_does_not_compile_fails_closed() {
    let schema = json!({"type": "object", "properties": {
        "name": {"type": "string", "pattern": "^(unclosed"}}});
    let reason = uncompilable(&schema, "/properties/name/pattern");
    assert!(
        reason.starts_with("input schema does not compile at "),
        "{reason}"
    );
    // The one-off form reports it instead of accepting the value.
    assert_eq!(bad(&schema, &json!({"name": "x"})).len(), 1);
    uncompilable(
        &json!({"patternProperties": {"[z-a]": {}}}),
        "/patternProperties",
    );
}

#[test]
fn an_unknown_format_fails_closed() {
    uncompilable(
        &json!({"properties": {"when": {"type": "string", "format": "stardate"}}}),
        "stardate",
    );
    // Known formats are asserted, not just annotations.
    let schema = json!({"properties": {"at": {"type": "string", "format": "date-time"}}});
    ok(&schema, &json!({"at": "2026-12-03T10:00:00Z"}));
    bad_with(&schema, &json!({"at": "yesterday"}), "arguments.at: ");
}

#[test]
fn malformed_keywords_fail_closed() {
    for schema in [
        json!({"type": "file"}),
        json!({"required": "x"}),
        json!({"minLength": -1}),
        json!({"properties": {"a": 5}}),
        json!(5),
    ] {
        uncompilable(&schema, "input schema does not compile");
    }
}

#[test]
fn remote_references_are_never_fetched() {
    uncompilable(
        &json!({"$ref": "https://example.com/schema.json"}),
        "input schema does not compile",
    );
    uncompilable(
        &json!({"$ref": "file:///etc/passwd"}),
        "input schema does not compile",
    );
    uncompilable(
        &json!({"$ref": "#/$defs/missing"}),
        "input schema does not compile",
    );
}

// ---------------------------------------------------------------------------
// What the hand-written validator could not do

#[test]
fn local_references_resolve() {
    // The shape MCP servers emit (draft 2020-12 `$defs`, draft-7 `definitions`).
    let schema = json!({
        "type": "object",
        "properties": {
            "origin": {"$ref": "#/$defs/point"},
            "path": {"type": "array", "items": {"$ref": "#/definitions/point"}}
        },
        "required": ["origin"],
        "$defs": {"point": {"type": "object", "properties": {
            "x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]}},
        "definitions": {"point": {"$ref": "#/$defs/point"}}
    });
    ok(
        &schema,
        &json!({"origin": {"x": 1, "y": 2}, "path": [{"x": 0, "y": 0}]}),
    );
    bad_exact(
        &schema,
        &json!({"origin": {"x": 1}, "path": [{"x": 0, "y": "0"}]}),
        &[
            r#"arguments.origin: "y" is a required property"#,
            r#"arguments.path[0].y: value is not of type "number""#,
        ],
    );
}

#[test]
fn recursive_references_resolve() {
    let schema = json!({
        "$defs": {"node": {"type": "object", "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            "additionalProperties": false}},
        "$ref": "#/$defs/node"
    });
    ok(
        &schema,
        &json!({"name": "a", "children": [{"name": "b", "children": []}]}),
    );
    bad_exact(
        &schema,
        &json!({"children": [{"children": [{"name": 3}]}]}),
        &[r#"arguments.children[0].children[0].name: value is not of type "string""#],
    );
}

#[test]
fn ecma_patterns_with_groups_and_alternation_are_enforced() {
    // The old subset skipped these (it failed open); now they hold.
    let schema =
        json!({"properties": {"v": {"type": "string", "pattern": "^(major|minor|\\d+)$"}}});
    ok(&schema, &json!({"v": "minor"}));
    ok(&schema, &json!({"v": "12"}));
    bad_with(
        &schema,
        &json!({"v": "patch"}),
        "arguments.v: value does not match",
    );
}

// ---------------------------------------------------------------------------
// Messages

#[test]
fn messages_never_quote_argument_values() {
    let secret = "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let schema = json!({"properties": {
        "a": {"type": "integer"},
        "b": {"enum": ["x"]},
        "c": {"maxLength": 3},
        "d": {"pattern": "^x$"},
        "e": {"const": "x"}}});
    let errors = bad(
        &schema,
        &json!({"a": secret, "b": secret, "c": secret, "d": secret, "e": secret}),
    );
    assert_eq!(errors.len(), 5, "{errors:?}");
    for e in errors {
        assert!(!e.contains(secret), "{e}");
    }
}

#[test]
fn digit_keys_stay_keys_and_positions_are_indexed() {
    let schema = json!({"properties": {
        "m": {"additionalProperties": {"type": "string"}},
        "l": {"items": {"type": "string"}}}});
    bad_exact(
        &schema,
        &json!({"m": {"2": 1}, "l": ["a", "b", 3]}),
        &[
            r#"arguments.l[2]: value is not of type "string""#,
            r#"arguments.m["2"]: value is not of type "string""#,
        ],
    );
}

#[test]
fn error_list_is_capped() {
    let props: Map<String, Value> = (0..80)
        .map(|i| (format!("p{i}"), json!({"type": "string"})))
        .collect();
    let values: Map<String, Value> = (0..80).map(|i| (format!("p{i}"), json!(i))).collect();
    let errors = bad(&json!({"properties": props}), &Value::Object(values));
    assert_eq!(errors.len(), MAX_ERRORS + 1);
    assert_eq!(errors.last().unwrap(), "… further errors omitted");
}

#[test]
fn a_compiled_schema_is_reused_and_cheap_to_clone() {
    let schema = json!({
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "additionalProperties": false
    });
    let compiled = ArgumentSchema::compile(&schema).unwrap();
    let copy = compiled.clone();
    assert!(Arc::ptr_eq(&compiled.validator, &copy.validator));
    for i in 0..100 {
        assert!(copy.validate(&json!({"path": format!("f{i}")})).is_ok());
    }
    assert!(compiled.validate(&json!({})).is_err());
}

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use super::*;
use serde_json::json;

fn text(v: &Value) -> String {
    serde_json::to_string(v).unwrap()
}

// argument_preview

#[test]
fn preview_redacts_secret_fields_keeps_others() {
    let p = argument_preview(
        &json!({"path": "/tmp/x", "password": "pv-secret-1", "apiKey": "pv-key-1", "count": 3}),
        2048,
    );
    assert_eq!(
        p,
        json!({"path": "/tmp/x", "password": "<redacted>", "apiKey": "<redacted>", "count": 3})
    );
}

#[test]
fn preview_scrubs_command_strings() {
    let p = argument_preview(
        &json!({"command": "mysql -pPrevPw-1 -e 'select 1' && curl https://u:PrevUrl-2@h"}),
        2048,
    );
    let s = text(&p);
    assert!(!s.contains("PrevPw-1") && !s.contains("PrevUrl-2"));
    assert!(s.contains("mysql -p<redacted>"));
}

#[test]
fn preview_is_length_bounded() {
    let mut args = Map::new();
    for i in 0..40 {
        args.insert(format!("field_{i:02}"), json!("v".repeat(100)));
    }
    let p = argument_preview(&Value::Object(args), 300);
    let s = text(&p);
    assert!(s.chars().count() <= 300, "{} chars", s.chars().count());
    assert_eq!(p["_truncated"], json!(true));
}

#[test]
fn preview_truncates_long_strings() {
    let p = argument_preview(&json!({"content": "z".repeat(2000)}), 100_000);
    let s = p["content"].as_str().unwrap();
    assert!(s.starts_with(&"z".repeat(500)));
    assert!(s.ends_with("...[truncated 1500 chars]"));
}

#[test]
fn preview_env_overlay_shows_keys_only() {
    let p = argument_preview(
        &json!({"command": "make", "env": {"FOO": "bar-visible?", "MODE": "fast"}}),
        2048,
    );
    assert_eq!(p["env"], json!({"FOO": "<redacted>", "MODE": "<redacted>"}));
}

#[test]
fn preview_secret_bindings_metadata_only() {
    let p = argument_preview(
        &json!({"secret_bindings": [
            {"source": "env:DB_PASS", "target": "PGPASSWORD", "expires_in_seconds": 60, "value": "leak-me-1"}
        ]}),
        2048,
    );
    assert_eq!(
        p["secret_bindings"],
        json!([{"source": "env:DB_PASS", "target": "PGPASSWORD", "expires_in_seconds": 60, "value": "<redacted>"}])
    );
}

#[test]
fn preview_wraps_non_object_args() {
    assert_eq!(
        argument_preview(&json!("hello"), 100),
        json!({"value": "hello"})
    );
    assert_eq!(
        argument_preview(&json!(["a", "--token", "wrap-tok-1"]), 100),
        json!({"value": ["a", "--token", "<redacted>"]})
    );
}

#[test]
fn preview_tiny_limit_is_marker_only() {
    let p = argument_preview(&json!({"a": "b".repeat(100)}), 10);
    assert_eq!(p, json!({"_truncated": true}));
}

#[test]
fn preview_substring_sensitive_keys() {
    let p = argument_preview(&json!({"db_password_file": "/run/pw", "note": "n"}), 2048);
    assert_eq!(p, json!({"db_password_file": "<redacted>", "note": "n"}));
}

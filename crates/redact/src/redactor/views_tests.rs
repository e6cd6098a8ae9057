#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use super::*;
use crate::redactor::test_support::*;
use serde_json::json;

// structured fields and the five views

#[test]
fn field_model_view_is_plain_placeholder() {
    let v = views_of(json!({"password": "hunter2-secret", "user": "alice"}));
    assert_eq!(v.model, json!({"password": "<redacted>", "user": "alice"}));
}

#[test]
fn field_operator_view_names_the_field() {
    let v = views_of(json!({"password": "hunter2-secret"}));
    assert_eq!(v.operator, json!({"password": "<redacted:PASSWORD>"}));
}

#[test]
fn field_event_view_keeps_safe_metadata_only() {
    let v = views_of(json!({"password": "hunter2-secret"}));
    assert_eq!(
        v.event,
        json!({"password": {"redacted": true, "name": "PASSWORD", "source": "field:password"}})
    );
}

#[test]
fn field_durable_view_matches_event_view() {
    let v = views_of(json!({"nested": {"api_key": "k-123456789"}}));
    assert_eq!(v.durable, v.event);
    assert_eq!(
        v.durable["nested"]["api_key"],
        json!({"redacted": true, "name": "API_KEY", "source": "field:nested.api_key"})
    );
}

#[test]
fn field_debug_view_has_fingerprint_not_value() {
    let v = views_of(json!({"token": "tok-abcdef123"}));
    let meta = &v.debug["token"];
    assert_eq!(meta["redacted"], json!(true));
    assert_eq!(meta["name"], json!("TOKEN"));
    assert_eq!(meta["fingerprint"], json!(fingerprint("tok-abcdef123")));
    assert!(is_fp(meta["fingerprint"].as_str().unwrap()));
    assert_no_secret(&v, &["tok-abcdef123"]);
}

#[test]
fn nested_field_path_in_source() {
    let v = views_of(json!({"a": {"b": [{"client_secret": "cs-0987654321"}]}}));
    assert_eq!(
        v.event["a"]["b"][0]["client_secret"]["source"],
        json!("field:a.b.0.client_secret")
    );
    assert_no_secret(&v, &["cs-0987654321"]);
}

#[test]
fn camel_case_and_header_style_field_names() {
    let raw = json!({
        "apiKey": "camel-key-1234",
        "accessToken": "camel-token-1234",
        "X-Api-Key": "header-key-1234",
        "clientSecret": "camel-secret-1234"
    });
    let v = views_of(raw);
    assert_eq!(v.model["apiKey"], json!("<redacted>"));
    assert_eq!(v.model["accessToken"], json!("<redacted>"));
    assert_eq!(v.model["X-Api-Key"], json!("<redacted>"));
    assert_eq!(
        v.operator["clientSecret"],
        json!("<redacted:CLIENT_SECRET>")
    );
    assert_no_secret(
        &v,
        &[
            "camel-key-1234",
            "camel-token-1234",
            "header-key-1234",
            "camel-secret-1234",
        ],
    );
}

#[test]
fn env_map_suffix_names_redacted() {
    let v = views_of(json!({"env": {
        "GITHUB_TOKEN": "gh-env-value-1",
        "DB_PASSWORD": "db-env-value-1",
        "PGPASSWORD": "pg-env-value-1",
        "DEMIURGE_PROVIDER_SECRET": "prov-env-value-1",
        "HOME": "/home/me"
    }}));
    assert_eq!(v.model["env"]["HOME"], json!("/home/me"));
    assert_eq!(
        v.operator["env"]["PGPASSWORD"],
        json!("<redacted:PGPASSWORD>")
    );
    assert_no_secret(
        &v,
        &[
            "gh-env-value-1",
            "db-env-value-1",
            "pg-env-value-1",
            "prov-env-value-1",
        ],
    );
}

#[test]
fn non_sensitive_fields_unchanged() {
    let raw = json!({
        "token_count": 42,
        "max_tokens": 1024,
        "author": "Ada",
        "password_file": "/etc/pw.txt",
        "token_type": "bearer",
        "signature": "fn main()"
    });
    let v = views_of(raw.clone());
    for view in View::ALL {
        assert_eq!(v.get(view), &raw, "{view:?}");
    }
}

#[test]
fn numeric_secret_field_is_redacted_and_scrubbed_elsewhere() {
    let v =
        views_of(json!({"pin": 1, "password": 987654, "echo": "code 987654 used", "n": 987654}));
    assert_eq!(v.model["password"], json!("<redacted>"));
    assert_eq!(v.model["echo"], json!("code <redacted> used"));
    assert_eq!(v.model["n"], json!("<redacted>"));
    assert_eq!(v.model["pin"], json!(1));
}

#[test]
fn null_and_bool_sensitive_values_preserved() {
    let raw = json!({"password": null, "auth": true, "token": false});
    let v = views_of(raw.clone());
    assert_eq!(v.model, raw);
    assert_eq!(v.event, raw);
}

#[test]
fn empty_secret_field_still_redacted_structurally() {
    let v = views_of(json!({"password": ""}));
    assert_eq!(v.model["password"], json!("<redacted>"));
    assert!(v.debug["password"].get("fingerprint").is_some());
}

#[test]
fn sensitive_container_is_opaque_and_contents_scrubbed_elsewhere() {
    let raw = json!({
        "credentials": {"user": "svc-user-1", "pass": "nested-pass-1234", "list": ["arr-secret-1"]},
        "log": "login svc-user-1 with nested-pass-1234 and arr-secret-1"
    });
    let v = views_of(raw);
    assert_eq!(v.model["credentials"], json!("<redacted>"));
    assert_eq!(v.operator["credentials"], json!("<redacted:CREDENTIALS>"));
    assert!(v.debug["credentials"].get("fingerprint").is_none());
    assert_eq!(
        v.model["log"],
        json!("login <redacted> with <redacted> and <redacted>")
    );
}

#[test]
fn secret_echoed_in_other_fields_scrubbed_in_every_view() {
    let raw = json!({"api_key": "SYNTH_KEY_123", "output": "using SYNTH_KEY_123 now"});
    let v = views_of(raw);
    assert_eq!(v.model["output"], json!("using <redacted> now"));
    assert_eq!(v.operator["output"], json!("using <redacted:API_KEY> now"));
    assert_eq!(v.event["output"], json!("using <redacted:API_KEY> now"));
    assert_eq!(v.durable["output"], json!("using <redacted:API_KEY> now"));
    let debug = v.debug["output"].as_str().unwrap();
    assert!(debug.starts_with("using <redacted:API_KEY:sha256:"));
    assert!(debug.contains(&fingerprint("SYNTH_KEY_123")));
    assert_no_secret(&v, &["SYNTH_KEY_123"]);
}

#[test]
fn arrays_of_objects_redacted() {
    let raw = json!([{"token": "array-tok-1111"}, {"token": "array-tok-2222"}, "plain"]);
    let v = views_of(raw);
    assert_eq!(
        v.model,
        json!([{"token": "<redacted>"}, {"token": "<redacted>"}, "plain"])
    );
    assert_eq!(v.event[1]["token"]["source"], json!("field:1.token"));
}

#[test]
fn mapping_key_equal_to_secret_is_scrubbed() {
    let raw = json!({"api_key": "KEY_AS_MAP_KEY_1", "metadata": {"KEY_AS_MAP_KEY_1": "public"}});
    let v = views_of(raw);
    assert_eq!(v.model["metadata"], json!({"<redacted>": "public"}));
    assert_no_secret(&v, &["KEY_AS_MAP_KEY_1"]);
}

#[test]
fn scrubbed_key_collisions_get_suffix() {
    let raw = json!({"password": "collide-1", "m": {"collide-1": 1, "<redacted>": 2}});
    let v = views_of(raw);
    let m = v.model["m"].as_object().unwrap();
    assert_eq!(m.len(), 2);
    assert!(m.contains_key("<redacted>"));
    assert!(m.contains_key("<redacted>#2"));
}

#[test]
fn authorization_field_credential_scrubbed_elsewhere() {
    let raw = json!({
        "headers": {"Authorization": "Bearer AUTH_FIELD_TOKEN_9", "X-Request-ID": "request-123"},
        "trace": "sent AUTH_FIELD_TOKEN_9"
    });
    let v = views_of(raw);
    assert_eq!(v.model["headers"]["X-Request-ID"], json!("request-123"));
    assert_eq!(v.model["trace"], json!("sent <redacted>"));
    assert_eq!(
        v.debug["headers"]["Authorization"]["fingerprint"],
        json!(fingerprint("AUTH_FIELD_TOKEN_9"))
    );
    assert_eq!(v.operator["trace"], json!("sent <redacted:AUTHORIZATION>"));
}

#[test]
fn basic_authorization_field_decoded_password_scrubbed() {
    // base64("alice:basic-pass-42") = YWxpY2U6YmFzaWMtcGFzcy00Mg==
    let raw = json!({
        "authorization": "Basic YWxpY2U6YmFzaWMtcGFzcy00Mg==",
        "log": "server echoed basic-pass-42"
    });
    let v = views_of(raw);
    assert_eq!(v.model["log"], json!("server echoed <redacted>"));
    assert_no_secret(&v, &["basic-pass-42", "YWxpY2U6YmFzaWMtcGFzcy00Mg"]);
}

#[test]
fn deep_nesting_is_truncated_without_panic() {
    let mut v = json!({"password": "deep-secret-1"});
    for _ in 0..200 {
        v = json!({ "n": v });
    }
    let views = SecretRedactor::new().views(&v);
    assert!(!views.failed);
    assert!(text(&views.model).contains("<truncated>"));
    assert!(!text(&views.model).contains("deep-secret-1"));
}

#[test]
fn redact_json_is_model_view() {
    let r = SecretRedactor::new();
    let raw = json!({"secret": "s3cr3t-value", "x": "s3cr3t-value!"});
    assert_eq!(
        r.redact_json(&raw),
        json!({"secret": "<redacted>", "x": "<redacted>!"})
    );
    assert_eq!(
        r.redact_json_for(&raw, View::Operator),
        json!({"secret": "<redacted:SECRET>", "x": "<redacted:SECRET>!"})
    );
}

#[test]
fn discover_json_records_sources_without_debug_leak() {
    let mut r = SecretRedactor::new();
    r.discover_json(&json!({"password": "dbg-hidden-123"}));
    assert_eq!(r.len(), 1);
    let found = &r.discovered()[0];
    assert_eq!(found.source, SecretSource::Field("password".into()));
    assert_eq!(found.name(), "PASSWORD");
    assert_eq!(found.source_label(), "field:password");
    assert_eq!(found.fingerprint(), fingerprint("dbg-hidden-123"));
    assert!(!format!("{found:?}").contains("dbg-hidden-123"));
    assert!(!format!("{r:?}").contains("dbg-hidden-123"));
}

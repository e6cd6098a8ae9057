#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use super::*;
use serde_json::json;

// ---------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------

fn text(v: &Value) -> String {
    serde_json::to_string(v).unwrap()
}

/// Every view and the sources list serialized (unescaped strings included).
fn all_texts(views: &Views) -> Vec<String> {
    let mut out: Vec<String> = View::ALL.iter().map(|v| text(views.get(*v))).collect();
    out.push(text(&views.sources));
    // also the raw string leaves, so JSON escaping cannot hide a value
    for view in View::ALL {
        collect_strings(views.get(view), &mut out);
    }
    collect_strings(&views.sources, &mut out);
    out
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(m) => m.iter().for_each(|(k, x)| {
            out.push(k.clone());
            collect_strings(x, out)
        }),
        _ => {}
    }
}

fn assert_no_secret(views: &Views, secrets: &[&str]) {
    assert!(!views.failed, "views unexpectedly failed");
    for t in all_texts(views) {
        for secret in secrets {
            assert!(!t.contains(secret), "secret {secret:?} leaked in {t}");
        }
    }
}

fn views_of(raw: Value) -> Views {
    SecretRedactor::new().views(&raw)
}

fn model_str(s: &str) -> String {
    SecretRedactor::new().redact_str(s)
}

fn is_fp(s: &str) -> bool {
    s.len() == 19
        && s.starts_with("sha256:")
        && s[7..]
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

// ---------------------------------------------------------------------------
// fingerprint / names
// ---------------------------------------------------------------------------

#[test]
fn fingerprint_is_sha256_prefix_12_hex() {
    // sha256("abc") = ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
    assert_eq!(fingerprint("abc"), "sha256:ba7816bf8f01");
    assert!(is_fp(&fingerprint("anything")));
    assert_eq!(fingerprint("x"), fingerprint("x"));
    assert_ne!(fingerprint("x"), fingerprint("y"));
}

#[test]
fn normalize_name_handles_case_styles() {
    assert_eq!(normalize_name("X-Api-Key"), "x_api_key");
    assert_eq!(normalize_name("accessToken"), "access_token");
    assert_eq!(normalize_name("APIKey"), "api_key");
    assert_eq!(normalize_name("OPENAI_API_KEY"), "openai_api_key");
    assert_eq!(normalize_name("  client.secret "), "client_secret");
    assert_eq!(normalize_name("oauth2Token"), "oauth2_token");
}

#[test]
fn sensitive_names_positive() {
    for name in [
        "password",
        "Password",
        "passwd",
        "token",
        "secret",
        "api_key",
        "apiKey",
        "API-KEY",
        "authorization",
        "Proxy-Authorization",
        "X-Api-Key",
        "client_secret",
        "refresh_token",
        "GITHUB_TOKEN",
        "DB_PASSWORD",
        "PGPASSWORD",
        "aws_secret_access_key",
        "private_key",
        "cookie",
        "credentials",
        "webhookSecret",
    ] {
        assert!(is_sensitive_name(name), "{name} should be sensitive");
    }
}

#[test]
fn sensitive_names_negative() {
    for name in [
        "token_count",
        "max_tokens",
        "tokens",
        "author",
        "password_file",
        "token_type",
        "secret_bindings",
        "key",
        "primary_key",
        "no_password",
        "signature",
        "description",
        "",
    ] {
        assert!(!is_sensitive_name(name), "{name} should not be sensitive");
    }
}

// ---------------------------------------------------------------------------
// structured fields and the five views
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// bindings
// ---------------------------------------------------------------------------

fn bound() -> SecretRedactor {
    SecretRedactor::new().with_binding("DB_PASS", "b1nd-VALUE")
}

#[test]
fn binding_replaced_with_target_in_model_view() {
    assert_eq!(
        bound().redact_str("pw is b1nd-VALUE."),
        "pw is <redacted:DB_PASS>."
    );
}

#[test]
fn binding_marker_in_all_views() {
    let v = bound().views(&json!({"stdout": "x b1nd-VALUE y"}));
    for view in [View::Model, View::Operator, View::Event, View::Durable] {
        assert_eq!(
            v.get(view)["stdout"],
            json!("x <redacted:DB_PASS> y"),
            "{view:?}"
        );
    }
    assert_eq!(
        v.debug["stdout"],
        json!(format!(
            "x <redacted:DB_PASS:{}> y",
            fingerprint("b1nd-VALUE")
        ))
    );
    assert_eq!(
        v.sources,
        json!([{"name": "DB_PASS", "source": "binding:DB_PASS"}])
    );
}

#[test]
fn binding_at_split_positions() {
    let r = bound();
    assert_eq!(r.redact_str("b1nd-VALUE"), "<redacted:DB_PASS>");
    assert_eq!(r.redact_str("b1nd-VALUEtail"), "<redacted:DB_PASS>tail");
    assert_eq!(r.redact_str("headb1nd-VALUE"), "head<redacted:DB_PASS>");
    assert_eq!(
        r.redact_str("b1nd-VALUEb1nd-VALUE"),
        "<redacted:DB_PASS><redacted:DB_PASS>"
    );
    assert_eq!(
        r.redact_str("line1\nb1nd-VALUE\nline3"),
        "line1\n<redacted:DB_PASS>\nline3"
    );
    // partial value is not a match
    assert_eq!(r.redact_str("b1nd-VALU"), "b1nd-VALU");
}

#[test]
fn overlapping_secrets_are_merged_without_fragments() {
    let r = SecretRedactor::new()
        .with_binding("A", "abcd-1234")
        .with_binding("B", "1234-wxyz");
    let out = r.redact_str("abcd-1234-wxyz");
    assert_eq!(out, "<redacted:A>");
    assert!(!out.contains("wxyz"));
}

#[test]
fn longest_binding_wins() {
    let r = SecretRedactor::new()
        .with_binding("SHORT", "tok-1234")
        .with_binding("LONG", "tok-1234-extended");
    assert_eq!(
        r.redact_str("a tok-1234-extended b tok-1234 c"),
        "a <redacted:LONG> b <redacted:SHORT> c"
    );
}

#[test]
fn short_binding_not_used_for_replacement() {
    let r = SecretRedactor::new().with_binding("PIN", "abc");
    assert_eq!(r.redact_str("abc abcdef"), "abc abcdef");
    assert_eq!(r.short_binding_targets(), vec!["PIN".to_string()]);
    assert!(bound().short_binding_targets().is_empty());
}

#[test]
fn empty_binding_ignored() {
    let r = SecretRedactor::new().with_binding("X", "");
    assert!(r.is_empty());
}

#[test]
fn binding_target_is_sanitized() {
    let r = SecretRedactor::new().with_binding("weird target>", "valu3-zzz");
    assert_eq!(r.redact_str("valu3-zzz"), "<redacted:weird_target_>");
}

#[test]
fn binding_takes_precedence_over_discovered_name() {
    let r = SecretRedactor::new().with_binding("API", "shared-val-77");
    let v = r.views(&json!({"token": "shared-val-77", "out": "shared-val-77"}));
    assert_eq!(v.operator["out"], json!("<redacted:API>"));
    assert_eq!(v.model["out"], json!("<redacted:API>"));
}

#[test]
fn unicode_binding_and_text() {
    let r = SecretRedactor::new().with_binding("UNI", "pässwörd🔑");
    assert_eq!(
        r.redact_str("密码是pässwörd🔑，好的"),
        "密码是<redacted:UNI>，好的"
    );
}

#[test]
fn stream_scrubber_handles_every_split_position() {
    let r = SecretRedactor::new().with_binding("TOK", "stream-secret-42");
    let full = "before stream-secret-42 after stream-secret-42";
    let expected = r.redact_str_for(full, View::Operator);
    for cut in 0..=full.len() {
        let mut s = r.stream(View::Operator);
        let mut out = s.push(&full[..cut]);
        out.push_str(&s.push(&full[cut..]));
        out.push_str(&s.finish());
        assert_eq!(out, expected, "cut at {cut}");
    }
}

#[test]
fn stream_scrubber_byte_by_byte_with_unicode() {
    let r = SecretRedactor::new().with_binding("K", "ключ-секрет-1");
    let full = "начало ключ-секрет-1 конец";
    let mut s = r.stream(View::Model);
    let mut out = String::new();
    for ch in full.chars() {
        out.push_str(&s.push(&ch.to_string()));
    }
    out.push_str(&s.finish());
    assert_eq!(out, "начало <redacted:K> конец");
}

#[test]
fn stream_scrubber_passes_plain_text_through() {
    let r = SecretRedactor::new();
    let mut s = r.stream(View::Model);
    assert_eq!(s.push("hello "), "hello ");
    assert_eq!(s.push("world"), "world");
    assert_eq!(s.finish(), "");
}

#[test]
fn stream_scrubber_holds_back_partial_prefix() {
    let r = SecretRedactor::new().with_binding("T", "abcdefgh");
    let mut s = r.stream(View::Model);
    let first = s.push("xx abcd");
    assert!(!first.contains("abcd"));
    let second = s.push("efgh yy");
    let rest = s.finish();
    assert_eq!(format!("{first}{second}{rest}"), "xx <redacted:T> yy");
}

// ---------------------------------------------------------------------------
// URLs
// ---------------------------------------------------------------------------

#[test]
fn url_userinfo_password_redacted() {
    assert_eq!(
        model_str("fetch https://demo:URL_PW_123@example.test/data"),
        "fetch https://demo:<redacted>@example.test/data"
    );
}

#[test]
fn database_url_password_redacted() {
    let v = views_of(json!({"DATABASE_URL": "postgres://app:pg-Pass-99@db:5432/app"}));
    assert_eq!(
        v.model["DATABASE_URL"],
        json!("postgres://app:<redacted>@db:5432/app")
    );
    assert_eq!(
        v.sources,
        json!([{"name": "URL_USERINFO", "source": "url:DATABASE_URL.userinfo"}])
    );
}

#[test]
fn token_as_url_username_redacted() {
    let out =
        model_str("git clone https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/o/r");
    assert_eq!(out, "git clone https://<redacted>@github.com/o/r");
}

#[test]
fn plain_url_username_kept() {
    let s = "ssh://git@github.com/org/repo.git and https://alice@example.com/";
    assert_eq!(model_str(s), s);
}

#[test]
fn url_query_secret_redacted_public_kept() {
    let out = model_str("https://example.test/cb?access_token=QUERY_TOK_1&mode=summary");
    assert_eq!(
        out,
        "https://example.test/cb?access_token=<redacted>&mode=summary"
    );
}

#[test]
fn url_query_operator_name_is_param() {
    let out =
        SecretRedactor::new().redact_str_for("https://h/x?api_key=QK-1234567", View::Operator);
    assert_eq!(out, "https://h/x?api_key=<redacted:API_KEY>");
}

#[test]
fn percent_encoded_query_value_both_forms_removed() {
    let raw = json!({
        "url": "https://example.test/callback?access_token=SYN%5FENC%5FSECRET&mode=summary",
        "echo": "decoded SYN_ENC_SECRET here"
    });
    let v = views_of(raw);
    assert_no_secret(&v, &["SYN%5FENC%5FSECRET", "SYN_ENC_SECRET"]);
    assert!(text(&v.model).contains("mode=summary"));
}

#[test]
fn url_fragment_token_redacted() {
    assert_eq!(
        model_str("https://app.test/#access_token=FRAG_TOK_9&state=ok"),
        "https://app.test/#access_token=<redacted>&state=ok"
    );
}

#[test]
fn percent_encoded_userinfo_decoded_form_scrubbed() {
    let v = views_of(json!({
        "url": "https://bob:p%40ss-word9@host.test/",
        "log": "auth with p@ss-word9"
    }));
    assert_eq!(v.model["url"], json!("https://bob:<redacted>@host.test/"));
    assert_eq!(v.model["log"], json!("auth with <redacted>"));
}

#[test]
fn url_with_trailing_punctuation() {
    assert_eq!(
        model_str("(see https://u:TrailPw-1@h.example/path)."),
        "(see https://u:<redacted>@h.example/path)."
    );
}

#[test]
fn url_without_secrets_unchanged() {
    let s = "https://example.com/search?q=rust+lang&page=2#section-3 http://localhost:8080/";
    assert_eq!(model_str(s), s);
}

#[test]
fn aws_presigned_signature_redacted() {
    let out =
        model_str("https://b.s3.amazonaws.com/k?X-Amz-Signature=abcdef0123456789&X-Amz-Expires=60");
    assert_eq!(
        out,
        "https://b.s3.amazonaws.com/k?X-Amz-Signature=<redacted>&X-Amz-Expires=60"
    );
}

// ---------------------------------------------------------------------------
// authorization and secret headers
// ---------------------------------------------------------------------------

#[test]
fn authorization_bearer_header_text() {
    assert_eq!(
        model_str("Authorization: Bearer HDR_TOKEN_123"),
        "Authorization: Bearer <redacted>"
    );
}

#[test]
fn authorization_equals_form() {
    assert_eq!(
        model_str("authorization=AbC123xyz789&next=1"),
        "authorization=<redacted>&next=1"
    );
}

#[test]
fn proxy_authorization_basic_decoded_too() {
    // base64("u:proxy-pass-7") = dTpwcm94eS1wYXNzLTc=
    let r = SecretRedactor::new();
    let raw =
        json!({"log": "Proxy-Authorization: Basic dTpwcm94eS1wYXNzLTc=", "echo": "proxy-pass-7"});
    let v = r.views(&raw);
    assert_eq!(
        v.model["log"],
        json!("Proxy-Authorization: Basic <redacted>")
    );
    assert_eq!(v.model["echo"], json!("<redacted>"));
}

#[test]
fn json_text_authorization_header() {
    let s = r#"{"Authorization": "Bearer JSON_HDR_TOK_1", "X-Trace": "t-1"}"#;
    assert_eq!(
        model_str(s),
        r#"{"Authorization": "Bearer <redacted>", "X-Trace": "t-1"}"#
    );
}

#[test]
fn standalone_bearer_jwt() {
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig_abc-123";
    let out = model_str(&format!("sent bearer {jwt} ok"));
    assert_eq!(out, "sent bearer <redacted> ok");
}

#[test]
fn authorization_prose_unchanged() {
    for s in [
        "Authorization failed: invalid credentials",
        "authorization: required",
        "the bearer of bad news",
        "Bearer authentication is supported",
    ] {
        assert_eq!(model_str(s), s);
    }
}

#[test]
fn secret_header_in_curl_command() {
    let out = model_str("curl -H 'X-Api-Key: hdr-key-123' https://api.test");
    assert_eq!(out, "curl -H 'X-Api-Key: <redacted>' https://api.test");
}

#[test]
fn cookie_header_line() {
    let out = model_str("Cookie: session=abc123; theme=dark\nnext line");
    assert_eq!(out, "Cookie: <redacted>\nnext line");
}

#[test]
fn authorization_header_source_metadata() {
    let mut r = SecretRedactor::new();
    r.discover_text("Authorization: Bearer SRC_TOKEN_77");
    let d = &r.discovered()[0];
    assert_eq!(d.source, SecretSource::AuthorizationHeader);
    assert_eq!(d.source_label(), "header:text.authorization");
    assert_eq!(d.name(), "AUTHORIZATION");
}

// ---------------------------------------------------------------------------
// command options
// ---------------------------------------------------------------------------

#[test]
fn command_password_equals() {
    assert_eq!(
        model_str("pg_dump --password=CmdPw-123 db"),
        "pg_dump --password=<redacted> db"
    );
}

#[test]
fn command_password_space() {
    assert_eq!(
        model_str("tool --password CmdPw-456 --verbose"),
        "tool --password <redacted> --verbose"
    );
}

#[test]
fn command_token_equals() {
    assert_eq!(
        model_str("gh --token=gh-tok-999 api"),
        "gh --token=<redacted> api"
    );
}

#[test]
fn command_api_key_space() {
    assert_eq!(
        model_str("client --api-key ak-7777777 run"),
        "client --api-key <redacted> run"
    );
}

#[test]
fn command_option_operator_name() {
    let out = SecretRedactor::new().redact_str_for("x --api-key ak-7777777", View::Operator);
    assert_eq!(out, "x --api-key <redacted:API_KEY>");
    let mut r = SecretRedactor::new();
    r.discover_text("x --api-key ak-7777777");
    assert_eq!(
        r.discovered()[0].source,
        SecretSource::CommandOption("--api-key".into())
    );
}

#[test]
fn mysql_attached_p_password() {
    assert_eq!(
        model_str("mysql -u root -pMySqlSecret9 app"),
        "mysql -u root -p<redacted> app"
    );
}

#[test]
fn mysql_attached_quoted_password() {
    assert_eq!(
        model_str("mysqldump -u root -p'quoted pw 1' db"),
        "mysqldump -u root -p'<redacted>' db"
    );
}

#[test]
fn dash_p_outside_mysql_unchanged() {
    for s in [
        "mkdir -p /tmp/a/b",
        "ssh -p 2222 host",
        "cp -pr src dst",
        "docker run -p 8080:80 img",
    ] {
        assert_eq!(model_str(s), s);
    }
}

#[test]
fn sshpass_space_password() {
    assert_eq!(
        model_str("sshpass -p 'ssh pw 42' ssh host"),
        "sshpass -p '<redacted>' ssh host"
    );
}

#[test]
fn curl_user_password() {
    assert_eq!(
        model_str("curl -u alice:CurlPw-11 https://h"),
        "curl -u alice:<redacted> https://h"
    );
}

#[test]
fn openssl_pass_argument() {
    assert_eq!(
        model_str("openssl enc -pass pass:OsslPw-5 -in f"),
        "openssl enc -pass pass:<redacted> -in f"
    );
    let s = "openssl enc -pass env:MYVAR -in f";
    assert_eq!(model_str(s), s);
}

#[test]
fn option_followed_by_flag_is_not_a_value() {
    let s = "psql --password --host db";
    assert_eq!(model_str(s), s);
}

#[test]
fn negated_and_related_flags_unchanged() {
    for s in [
        "psql --no-password -h db",
        "docker login --password-stdin",
        "tool --token-file /run/tok",
    ] {
        assert_eq!(model_str(s), s);
    }
}

#[test]
fn quoted_option_value_with_spaces() {
    assert_eq!(
        model_str(r#"app --secret "two words 9" go"#),
        r#"app --secret "<redacted>" go"#
    );
}

#[test]
fn short_option_value_positional_only() {
    let raw = json!({"cmd": "app --password=ab", "note": "ab is a word"});
    let v = views_of(raw);
    assert_eq!(v.model["cmd"], json!("app --password=<redacted>"));
    assert_eq!(v.model["note"], json!("ab is a word"));
}

#[test]
fn argv_array_mysql_short_password() {
    let v = views_of(json!({"argv": ["mysql", "-u", "root", "-pabc", "db"]}));
    assert_eq!(
        v.model["argv"],
        json!(["mysql", "-u", "root", "-p<redacted>", "db"])
    );
}

#[test]
fn argv_array_option_then_value() {
    let v = views_of(json!(["cli", "--token", "argv tok 77", "--x"]));
    assert_eq!(v.model, json!(["cli", "--token", "<redacted>", "--x"]));
    assert_no_secret(&v, &["argv tok 77"]);
}

#[test]
fn env_style_assignment_in_command() {
    assert_eq!(
        model_str("GITHUB_TOKEN=gh-env-tok-1 ./deploy.sh"),
        "GITHUB_TOKEN=<redacted> ./deploy.sh"
    );
    assert_eq!(
        model_str("docker run -e DB_PASSWORD=dockerPw1 img"),
        "docker run -e DB_PASSWORD=<redacted> img"
    );
}

// ---------------------------------------------------------------------------
// key=value / key: value in text
// ---------------------------------------------------------------------------

#[test]
fn assignment_password_equals() {
    assert_eq!(
        model_str("connect failed password=AssignPw1 user=bob"),
        "connect failed password=<redacted> user=bob"
    );
}

#[test]
fn assignment_source_label() {
    let mut r = SecretRedactor::new();
    r.discover_text("password=AssignPw1");
    assert_eq!(r.discovered()[0].source_label(), "text:text.password");
}

#[test]
fn json_text_secret_field() {
    assert_eq!(
        model_str(r#"payload {"api_key": "JsonTextKey1", "n": 1}"#),
        r#"payload {"api_key": "<redacted>", "n": 1}"#
    );
}

#[test]
fn escaped_json_text_secret_field() {
    assert_eq!(
        model_str(r#"body: {\"password\": \"EscPw-1\"}"#),
        r#"body: {\"password\": \"<redacted>\"}"#
    );
}

#[test]
fn yaml_style_password() {
    assert_eq!(
        model_str("db:\n  password: hunter2yaml\n  host: x"),
        "db:\n  password: <redacted>\n  host: x"
    );
}

#[test]
fn colon_prose_is_not_a_secret() {
    let s = "error: token: expired, please log in";
    assert_eq!(model_str(s), s);
}

#[test]
fn colon_valued_token_redacted() {
    assert_eq!(model_str("token: abc123def"), "token: <redacted>");
}

#[test]
fn comparison_operators_not_assignments() {
    let s = "if password == other and token != nil";
    assert_eq!(model_str(s), s);
}

// ---------------------------------------------------------------------------
// token shapes
// ---------------------------------------------------------------------------

#[test]
fn openai_style_key() {
    assert_eq!(
        model_str("key sk-proj-Ab12Cd34Ef56Gh78Ij90Kl in text"),
        "key <redacted> in text"
    );
}

#[test]
fn sk_prefix_without_digits_unchanged() {
    let s = "use sk-learn-compatible-estimator-wrapper here; also task-abcdefghijklmnopqrstuvwxyz1";
    assert_eq!(model_str(s), s);
}

#[test]
fn github_tokens() {
    let classic = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let fine = "github_pat_11ABCDEFG0123456789_abcdefghijklmnop";
    let out = model_str(&format!("{classic} and {fine}"));
    assert_eq!(out, "<redacted> and <redacted>");
}

#[test]
fn slack_tokens() {
    let out = model_str("xoxb-1234567890-abcdefghij and xoxp-9876543210-zyxw");
    assert_eq!(out, "<redacted> and <redacted>");
}

#[test]
fn aws_access_key_id() {
    assert_eq!(
        model_str("id=AKIAIOSFODNN7EXAMPLE region"),
        "id=<redacted> region"
    );
    // wrong length is not a key id
    let s = "AKIAIOSFODNN7EXAMPLEXX";
    assert_eq!(model_str(s), s);
}

#[test]
fn google_api_key() {
    let out = model_str("AIzaSyA1234567890abcdefghijklmnopqrstu used");
    assert_eq!(out, "<redacted> used");
}

#[test]
fn gitlab_token() {
    assert_eq!(model_str("glpat-abcdefghij0123456789"), "<redacted>");
}

#[test]
fn jwt_in_text() {
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl";
    assert_eq!(model_str(&format!("jwt={jwt}.")), "jwt=<redacted>.");
    assert_eq!(model_str(&format!("({jwt})")), "(<redacted>)");
}

#[test]
fn pem_private_key_block() {
    let pem =
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx\nabc\n-----END RSA PRIVATE KEY-----";
    let out = model_str(&format!("key:\n{pem}\ndone"));
    assert_eq!(out, "key:\n<redacted>\ndone");
    let public = "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----";
    assert_eq!(model_str(public), public);
}

#[test]
fn token_shape_source() {
    let mut r = SecretRedactor::new();
    r.discover_text("ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
    assert_eq!(
        r.discovered()[0].source,
        SecretSource::TokenShape("github_token".into())
    );
    assert_eq!(r.discovered()[0].name(), "GITHUB_TOKEN");
}

// ---------------------------------------------------------------------------
// exception text
// ---------------------------------------------------------------------------

#[test]
fn exception_with_url_credentials() {
    let r = SecretRedactor::new();
    let out = r.redact_exception(
        "ConnectionError: could not reach postgres://svc:ExcPw-77@db.internal:5432/app",
        View::Operator,
    );
    assert_eq!(
        out,
        "ConnectionError: could not reach postgres://svc:<redacted:URL_USERINFO>@db.internal:5432/app"
    );
}

#[test]
fn exception_auth_and_query_parity() {
    let r = SecretRedactor::new();
    let out = r.redact_exception(
        "provider failed\nAuthorization: Bearer SYN_EXC_AUTH_1 https://example.test/cb?token=SYN_EXC_Q_1",
        View::Operator,
    );
    assert!(out.starts_with("provider failed\n"));
    assert!(out.contains("<redacted:AUTHORIZATION>"));
    assert!(out.contains("<redacted:TOKEN>"));
    assert!(!out.contains("SYN_EXC_AUTH_1") && !out.contains("SYN_EXC_Q_1"));
}

#[test]
fn exception_quoted_token_under_error_key() {
    let v = views_of(json!({"error": "invalid token 'qtok-4455' for user", "out": "qtok-4455"}));
    assert_eq!(
        v.model["error"],
        json!("invalid token '<redacted>' for user")
    );
    assert_eq!(v.model["out"], json!("<redacted>"));
    assert_eq!(
        v.operator["error"],
        json!("invalid token '<redacted:EXCEPTION_SECRET>' for user")
    );
}

#[test]
fn exception_api_key_provided() {
    let mut r = SecretRedactor::new();
    r.discover_exception("Incorrect API key provided: my-key-0042. See docs.");
    assert!(r.discovered().iter().any(|d| d.value == "my-key-0042"));
    let out = r.redact_exception(
        "Incorrect API key provided: my-key-0042. See docs.",
        View::Model,
    );
    assert_eq!(out, "Incorrect API key provided: <redacted>. See docs.");
}

#[test]
fn exception_heuristics_only_in_error_context() {
    let raw = json!({"content": "map key 'username' and token 'name' in code"});
    let v = views_of(raw.clone());
    assert_eq!(v.model, raw);
    let v = views_of(json!({"stderr": "password 'hunter22x' rejected"}));
    assert_eq!(v.model["stderr"], json!("password '<redacted>' rejected"));
}

#[test]
fn exception_source_kind() {
    let mut r = SecretRedactor::new();
    r.discover_exception("bad password \"quoted-pw-1\"");
    let d = r
        .discovered()
        .iter()
        .find(|d| d.source == SecretSource::ExceptionText)
        .unwrap();
    assert_eq!(d.source_label(), "exception:exception");
}

// ---------------------------------------------------------------------------
// views as a whole
// ---------------------------------------------------------------------------

#[test]
fn redaction_failed_views_are_fixed() {
    let v = Views::redaction_failed();
    assert!(v.failed);
    for view in View::ALL {
        assert_eq!(
            v.get(view),
            &json!({"status": "failed", "error": "<redaction-failed>"})
        );
    }
    assert_eq!(v.sources, json!([]));
}

#[test]
fn too_many_secrets_fails_closed() {
    let mut r = SecretRedactor::new();
    for i in 0..=MAX_SECRETS {
        r.add_binding("T", &format!("many-secret-{i:05}"));
    }
    assert!(r.overflowed());
    assert_eq!(
        r.try_views(&json!("x")),
        Err(RedactionError::TooManySecrets)
    );
    let v = r.views(&json!({"out": "many-secret-00001"}));
    assert_eq!(v, Views::redaction_failed());
    assert_eq!(r.redact_str("many-secret-00001"), REDACTION_FAILED);
    assert_eq!(r.redact_json(&json!("x")), failed_value());
}

#[test]
fn python_parity_corpus_never_exposes_values() {
    let payload = json!({
        "api_key": "SYNTHETIC_API_KEY",
        "env": {"DEMIURGE_PROVIDER_SECRET": "SYNTHETIC_ENV_VALUE"},
        "url": "https://demo:SYNTHETIC_URL_PASSWORD@example.test/data?access_token=SYNTHETIC_QUERY_TOKEN&mode=summary",
        "headers": {"Authorization": "Bearer SYNTHETIC_AUTH_TOKEN", "X-Request-ID": "request-123"},
        "nested": {"password": "SYNTHETIC_JSON_PASSWORD", "token_count": 42},
        "command": "curl --token SYNTHETIC_INLINE_TOKEN -H 'Authorization: Bearer SYNTHETIC_HEADER_TOKEN' https://example.test?api_key=SYNTHETIC_COMMAND_QUERY",
        "exception": "provider failed: Authorization: Bearer SYNTHETIC_EXCEPTION_TOKEN password=SYNTHETIC_EXCEPTION_PASSWORD"
    });
    let secrets = [
        "SYNTHETIC_API_KEY",
        "SYNTHETIC_ENV_VALUE",
        "SYNTHETIC_URL_PASSWORD",
        "SYNTHETIC_QUERY_TOKEN",
        "SYNTHETIC_AUTH_TOKEN",
        "SYNTHETIC_JSON_PASSWORD",
        "SYNTHETIC_INLINE_TOKEN",
        "SYNTHETIC_HEADER_TOKEN",
        "SYNTHETIC_COMMAND_QUERY",
        "SYNTHETIC_EXCEPTION_TOKEN",
        "SYNTHETIC_EXCEPTION_PASSWORD",
    ];
    let v = views_of(payload);
    assert_no_secret(&v, &secrets);
    for view in View::ALL {
        let t = text(v.get(view));
        assert!(t.contains("request-123"), "{view:?}");
        assert!(t.contains("\"token_count\":42"), "{view:?}");
        assert!(t.contains("mode=summary"), "{view:?}");
    }
    let sources: Vec<&str> = v
        .sources
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["source"].as_str().unwrap())
        .collect();
    for expected in [
        "field:api_key",
        "field:env.DEMIURGE_PROVIDER_SECRET",
        "field:headers.Authorization",
        "field:nested.password",
        "url:url.userinfo",
        "url:url.query.access_token",
        "command:command.--token",
    ] {
        assert!(
            sources.contains(&expected),
            "missing {expected} in {sources:?}"
        );
    }
}

#[test]
fn sources_have_no_values_or_fingerprints() {
    let v = views_of(json!({"password": "src-pw-1234", "cmd": "x --token=src-tok-1234"}));
    for item in v.sources.as_array().unwrap() {
        let obj = item.as_object().unwrap();
        assert_eq!(obj.len(), 2);
        assert!(obj.contains_key("name") && obj.contains_key("source"));
    }
    assert_no_secret(&v, &["src-pw-1234", "src-tok-1234"]);
}

#[test]
fn source_label_containing_secret_key_is_scrubbed() {
    let raw =
        json!({"api_key": "LABEL-SECRET-1", "m": {"LABEL-SECRET-1": {"password": "pw-under-1"}}});
    let v = views_of(raw);
    assert_no_secret(&v, &["LABEL-SECRET-1", "pw-under-1"]);
    assert_eq!(
        v.event["m"]["<redacted:API_KEY>"]["password"]["source"],
        json!("field:m.<redacted>.password")
    );
}

#[test]
fn debug_view_fingerprints_only() {
    let v = views_of(json!({"cmd": "mysql -pDbgSecret-1 db"}));
    let d = v.debug["cmd"].as_str().unwrap();
    assert_eq!(
        d,
        format!(
            "mysql -p<redacted:PASSWORD:{}> db",
            fingerprint("DbgSecret-1")
        )
    );
    assert_no_secret(&v, &["DbgSecret-1"]);
}

#[test]
fn redaction_is_idempotent() {
    let raw = json!({
        "cmd": "mysql -pIdem-secret-1 && curl -H 'Authorization: Bearer IdemTok123456'",
        "url": "https://u:IdemPw-9@h/?token=IdemQ-1",
        "password": "x-pass-1"
    });
    let r = SecretRedactor::new();
    for view in View::ALL {
        let once = r.redact_json_for(&raw, view);
        let twice = r.redact_json_for(&once, view);
        if view == View::Model || view == View::Operator {
            assert_eq!(once, twice, "{view:?}");
        }
        assert!(!text(&twice).contains("Idem-secret-1"));
    }
}

#[test]
fn ordinary_text_has_no_false_positives() {
    let raw = json!({
        "content": "The quick brown fox jumps over the lazy dog. Tokens used: 512. \
                    Set the secret_name option in config.toml; see https://docs.rs/serde?search=map. \
                    fn main() { let key = map.get(&k); } -- done. user=bob id=42 --verbose -x",
        "path": "/home/user/project/src/token.rs",
        "lines": ["password reset instructions were sent", "use --help for more", "a: b, c: d"],
        "unicode": "日本語のテキスト — ñandú, Zürich, emoji 🎉",
        "numbers": [1, 2.5, -3],
        "ok": true
    });
    let v = views_of(raw.clone());
    for view in View::ALL {
        assert_eq!(v.get(view), &raw, "{view:?}");
    }
    assert_eq!(v.sources, json!([]));
}

#[test]
fn unicode_secret_inside_unicode_text() {
    let v = views_of(json!({"password": "contraseña-ü9", "log": "usó contraseña-ü9 — ok"}));
    assert_eq!(v.model["log"], json!("usó <redacted> — ok"));
    assert_no_secret(&v, &["contraseña-ü9"]);
}

#[test]
fn unicode_around_detected_spans() {
    assert_eq!(
        model_str("ключ: password=пароль123 конец"),
        "ключ: password=<redacted> конец"
    );
    assert_eq!(
        model_str("→https://u:pw-ünï@hôst/←"),
        "→https://u:<redacted>@hôst/←"
    );
}

#[test]
fn long_strings_are_truncated_in_views() {
    let long = "a".repeat(MAX_VIEW_STRING_CHARS + 10);
    let v = views_of(json!({ "out": long }));
    let s = v.model["out"].as_str().unwrap();
    assert!(s.ends_with("...[truncated 10 chars]"));
}

#[test]
fn redact_str_discovers_fresh_secrets() {
    let r = SecretRedactor::new();
    assert!(r.is_empty());
    let out = r.redact_str("run --password=FreshPw-1 then echo FreshPw-1");
    assert_eq!(out, "run --password=<redacted> then echo <redacted>");
    assert!(r.is_empty(), "redact_str must not mutate the redactor");
}

#[test]
fn views_use_previously_discovered_secrets() {
    let mut r = SecretRedactor::new();
    r.discover_json(&json!({"args": {"token": "prior-tok-555"}}));
    let v = r.views(&json!({"result": "server said prior-tok-555"}));
    assert_eq!(v.model["result"], json!("server said <redacted>"));
    assert_eq!(v.operator["result"], json!("server said <redacted:TOKEN>"));
}

#[test]
fn placeholder_and_reference_values_are_not_secrets() {
    for s in [
        "psql --password=$DB_PASS",
        "x --token ${TOKEN}",
        "password=****",
        "password=<redacted>",
        "token=null",
    ] {
        assert_eq!(model_str(s), s, "{s}");
    }
    let v = views_of(json!({"password": "true", "note": "true story"}));
    assert_eq!(v.model["note"], json!("true story"));
}

#[test]
fn add_and_accessors() {
    let mut r = SecretRedactor::new();
    r.add(Discovered {
        source: SecretSource::Binding("X".into()),
        value: "added-val-1".into(),
        location: "binding".into(),
    });
    r.add(Discovered {
        source: SecretSource::Binding("X".into()),
        value: "added-val-1".into(),
        location: "binding".into(),
    });
    r.add(Discovered {
        source: SecretSource::UrlUserinfo,
        value: "   ".into(),
        location: "t".into(),
    });
    assert_eq!(r.len(), 1);
    assert_eq!(r.redact_str("added-val-1"), "<redacted:X>");
}

#[test]
fn view_names() {
    let names: Vec<&str> = View::ALL.iter().map(|v| v.as_str()).collect();
    assert_eq!(names, ["model", "operator", "event", "durable", "debug"]);
}

#[test]
fn large_input_stays_fast_and_panic_free() {
    let mut big = String::new();
    for _ in 0..20_000 {
        big.push_str("password=pw-repeated-1=x&token: ::// -p --password ");
    }
    let start = std::time::Instant::now();
    let v = views_of(json!({ "blob": big }));
    assert!(!v.failed);
    assert!(!text(&v.model).contains("pw-repeated-1"));
    assert!(start.elapsed().as_secs() < 30);
}

#[test]
fn many_distinct_discovered_secrets_fail_closed() {
    let mut big = String::new();
    for i in 0..(MAX_SECRETS + 10) {
        big.push_str(&format!("password=pw{i:06} "));
    }
    let v = views_of(json!({ "blob": big }));
    assert_eq!(v, Views::redaction_failed());
}

#[test]
fn adversarial_inputs_do_not_panic() {
    // Deterministic pseudo-random strings from an alphabet of delimiters,
    // keywords and multi-byte characters.
    let pieces = [
        "://",
        "@",
        ":",
        "=",
        "&",
        "?",
        "#",
        "\"",
        "'",
        "\\",
        "\\\"",
        "-",
        "--",
        "-p",
        " ",
        "\n",
        "authorization",
        "Authorization: ",
        "Bearer ",
        "Basic ",
        "password",
        "token",
        "api_key",
        "mysql",
        "curl",
        "sshpass",
        "-u",
        "pass:",
        "sk-",
        "ghp_",
        "AKIA",
        "eyJ",
        "-----BEGIN PRIVATE KEY-----",
        "-----END ",
        "é",
        "日本",
        "🔑",
        "%",
        "%4",
        "%zz",
        "a1",
        "ABCDEFGH12345678",
        "x",
        "$",
        "${",
        "}",
        "*",
        "<redacted",
        ">",
    ];
    let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..400 {
        let len = (next() % 40) as usize;
        let mut s = String::new();
        for _ in 0..len {
            s.push_str(pieces[(next() % pieces.len() as u64) as usize]);
        }
        let r = SecretRedactor::new().with_binding("B", "é-binding-🔑");
        let v = r.views(&json!({"s": s, "error": s, "password": s, "argv": [s, "--token", s]}));
        assert!(!v.failed || v == Views::redaction_failed());
        let _ = r.redact_str(&s);
        let _ = r.redact_exception(&s, View::Debug);
        let _ = argument_preview(&json!({"cmd": s}), 64);
        let mut stream = r.stream(View::Model);
        let _ = stream.push(&s);
        let _ = stream.finish();
    }
}

// ---------------------------------------------------------------------------
// argument_preview
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// variants, boundaries
// ---------------------------------------------------------------------------

#[test]
fn min_secret_length_boundary() {
    let four = SecretRedactor::new().with_binding("F", "abcd");
    assert_eq!(four.redact_str("xabcdx"), "x<redacted:F>x");
    let three = SecretRedactor::new().with_binding("T", "abc");
    assert_eq!(three.redact_str("xabcx"), "xabcx");
    assert_eq!(MIN_SECRET_CHARS, 4);
}

#[test]
fn trimmed_variant_is_scrubbed() {
    let v = views_of(json!({"password": "  padded-pw-1\n", "log": "pw=padded-pw-1;"}));
    assert_eq!(v.model["log"], json!("pw=<redacted>;"));
}

#[test]
fn json_escaped_variant_is_scrubbed() {
    let secret = "multi\"line\nsecret-1";
    let v = views_of(json!({
        "private_key": secret,
        "stdout": r#"{"k": "multi\"line\nsecret-1"}"#
    }));
    assert_eq!(v.model["stdout"], json!(r#"{"k": "<redacted>"}"#));
}

#[test]
fn mysql_single_dash_password_redacts_both_readings() {
    let out = model_str("mysql -password s3cr3t-val db");
    assert!(
        !out.contains("assword s3cr3t") && !out.contains("s3cr3t-val"),
        "{out}"
    );
}

#[test]
fn event_view_metadata_for_text_secret_names_source_kind() {
    let v = views_of(json!({"cmd": "curl -u bob:CurlEv-12 https://h"}));
    assert_eq!(
        v.event["cmd"],
        json!("curl -u bob:<redacted:USER_PASSWORD> https://h")
    );
    assert_eq!(
        v.sources,
        json!([{"name": "USER_PASSWORD", "source": "command:cmd.-u"}])
    );
}

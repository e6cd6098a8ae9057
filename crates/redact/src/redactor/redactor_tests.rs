#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use super::*;
use crate::redactor::test_support::*;
use serde_json::json;

// views as a whole

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
        let _ = crate::preview::argument_preview(&json!({"cmd": s}), 64);
        let mut stream = r.stream(View::Model);
        let _ = stream.push(&s);
        let _ = stream.finish();
    }
}

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use super::*;
use crate::redactor::test_support::*;
use serde_json::json;

#[test]
fn fingerprint_is_sha256_prefix_12_hex() {
    // sha256("abc") = ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
    assert_eq!(fingerprint("abc"), "sha256:ba7816bf8f01");
    assert!(is_fp(&fingerprint("anything")));
    assert_eq!(fingerprint("x"), fingerprint("x"));
    assert_ne!(fingerprint("x"), fingerprint("y"));
}

// bindings

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

// variants, boundaries

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

// Known-secret search: one Aho-Corasick pass equals one `match_indices` per secret

/// The per-secret search the automaton replaced, kept as the reference.
fn reference_occurrences(catalog: &Catalog, s: &str) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    for (index, entry) in catalog.entries.iter().enumerate() {
        for (start, matched) in s.match_indices(entry.value.as_str()) {
            out.push((index, start, start + matched.len()));
        }
    }
    out.sort_unstable();
    out
}

fn sorted(mut v: Vec<(usize, usize, usize)>) -> Vec<(usize, usize, usize)> {
    v.sort_unstable();
    v
}

#[test]
fn automaton_finds_what_match_indices_finds_for_overlapping_secrets() {
    let redactor = SecretRedactor::new()
        .with_binding("A", "aaaa")
        .with_binding("B", "aaaaaa")
        .with_binding("C", "abab")
        .with_binding("D", "babab")
        .with_binding("E", "ééé€")
        .with_binding("F", "aaaa");
    let catalog = Catalog::new(&redactor.known);
    assert!(catalog.matcher.is_some());
    for s in [
        "",
        "aaa",
        "aaaaaaaaa",
        "abababab",
        "xbababababx aaaaa ééé€ééé€",
        "éééé€aaaa€",
    ] {
        let found = sorted(catalog.occurrences(s));
        assert_eq!(found, reference_occurrences(&catalog, s), "{s:?}");
        let fallback = Catalog {
            entries: catalog.entries.clone(),
            matcher: None,
        };
        assert_eq!(sorted(fallback.occurrences(s)), found, "{s:?}");
    }
    // Non-overlapping per secret, as `match_indices`: "aaaa" twice in nine a's.
    let nine = catalog.occurrences("aaaaaaaaa");
    let four: Vec<_> = nine.iter().filter(|o| o.2 - o.1 == 4).collect();
    assert_eq!(four.len(), 2);
}

#[test]
fn automaton_matches_the_reference_on_random_text() {
    let alphabet: Vec<char> = "ab-_xé€0".chars().collect();
    let mut state: u64 = 0x853c_49e6_748f_ea9b;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    for _ in 0..300 {
        let mut redactor = SecretRedactor::new();
        for i in 0..=next(6) {
            let len = 4 + next(5);
            let value: String = (0..len).map(|_| alphabet[next(3)]).collect();
            redactor.add_binding(&format!("S{i}"), &value);
        }
        let catalog = Catalog::new(&redactor.known);
        let text: String = (0..next(80))
            .map(|_| alphabet[next(alphabet.len())])
            .collect();
        assert_eq!(
            sorted(catalog.occurrences(&text)),
            reference_occurrences(&catalog, &text),
            "{text:?}"
        );
    }
}

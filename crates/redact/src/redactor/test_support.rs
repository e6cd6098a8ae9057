#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! Helpers shared by the redactor's tests.

use super::*;

pub(super) fn text(v: &Value) -> String {
    serde_json::to_string(v).unwrap()
}

/// Every view and the sources list serialized (unescaped strings included).
pub(super) fn all_texts(views: &Views) -> Vec<String> {
    let mut out: Vec<String> = View::ALL.iter().map(|v| text(views.get(*v))).collect();
    out.push(text(&views.sources));
    // also the raw string leaves, so JSON escaping cannot hide a value
    for view in View::ALL {
        collect_strings(views.get(view), &mut out);
    }
    collect_strings(&views.sources, &mut out);
    out
}

pub(super) fn collect_strings(v: &Value, out: &mut Vec<String>) {
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

pub(super) fn assert_no_secret(views: &Views, secrets: &[&str]) {
    assert!(!views.failed, "views unexpectedly failed");
    for t in all_texts(views) {
        for secret in secrets {
            assert!(!t.contains(secret), "secret {secret:?} leaked in {t}");
        }
    }
}

pub(super) fn views_of(raw: Value) -> Views {
    SecretRedactor::new().views(&raw)
}

pub(super) fn model_str(s: &str) -> String {
    SecretRedactor::new().redact_str(s)
}

pub(super) fn is_fp(s: &str) -> bool {
    s.len() == 19
        && s.starts_with("sha256:")
        && s[7..]
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

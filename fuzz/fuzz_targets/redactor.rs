//! The redactor on arbitrary text and JSON: discovery, every view, the live
//! line redactor and the approval preview never panic, and a secret named as
//! such in the arguments never shows in a view that rendered.
#![no_main]

use demiurge_redact::redactor::{SecretRedactor, View};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Free text in every view.
    for view in View::ALL {
        let _ = SecretRedactor::new().redact_str_for(text, view);
    }
    // Line by line, split at an arbitrary point.
    let mut lines = demiurge_redact::lines::LineRedactor::new(SecretRedactor::new(), View::Event);
    let cut = text
        .char_indices()
        .map(|(i, _)| i)
        .nth(text.len() % 7)
        .unwrap_or(0);
    let _ = lines.push("stdout", &text[..cut]);
    let _ = lines.push("stdout", &text[cut..]);
    let _ = lines.finish("stdout");
    // As JSON arguments, when it is JSON.
    if let Ok(args) = serde_json::from_str::<Value>(text) {
        let mut r = SecretRedactor::new();
        r.discover_json(&args);
        let _ = r.try_views(&json!({"content": args.clone(), "data": args.clone()}));
        let _ = demiurge_redact::preview::argument_preview(&args, 2_000);
    }
    // A named secret echoed in the output never reaches a rendered view.
    let secret: String = text
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .take(40)
        .collect();
    let mixed = secret.chars().any(|c| c.is_ascii_digit())
        && secret
            .chars()
            .any(|c| c.is_ascii_alphabetic() && c != 'x' && c != 'X');
    if secret.len() >= 12 && mixed {
        let mut r = SecretRedactor::new();
        r.discover_json(&json!({"api_token": secret}));
        let raw = json!({"content": format!("out {secret} {text}"), "data": {"log": text}});
        if let Ok(views) = r.try_views(&raw) {
            for view in View::ALL {
                // The strings as rendered, not their JSON encoding: an escape
                // such as `\u0001` next to the text could spell the secret.
                let mut shown = Vec::new();
                strings(views.get(view), &mut shown);
                for s in shown {
                    assert!(!s.contains(&secret), "{view:?} shows the secret");
                }
            }
        }
    }
});

/// Every string in `v` (keys and values).
fn strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
        Value::Object(map) => {
            for (k, i) in map {
                out.push(k);
                strings(i, out);
            }
        }
        _ => {}
    }
}

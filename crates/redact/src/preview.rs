//! Approval argument preview: a length-bounded, redacted copy of tool
//! arguments for the approver (the `preview` of an approval request). It is
//! built from the redactor's scrubbing parts
//! (`redactor::preview_parts`), so the approver sees secrets
//! exactly as the model view hides them.

use serde_json::{Map, Value};

use crate::redactor::preview_parts::*;
use crate::redactor::View;

#[cfg(test)]
#[path = "preview_tests.rs"]
mod tests;

const PREVIEW_MAX_DEPTH: usize = 6;

const PREVIEW_MAX_ITEMS: usize = 50;

const PREVIEW_MAX_STRING: usize = 500;

const PREVIEW_MAX_KEY_CHARS: usize = 80;

const PREVIEW_TRUNCATED_KEY: &str = "_truncated";

/// Length-bounded, field-name-redacted preview of tool arguments for approval
/// requests (model-style markers). Secret-named fields become `"<redacted>"`,
/// strings are scrubbed and cut to at most 500 characters, environment
/// overlays keep only their keys, `secret_bindings` keep only metadata keys.
/// The serialized result is at most `max_chars` characters whenever
/// `max_chars >= 20` (otherwise it is `{"_truncated":true}`); truncation is
/// marked with `"_truncated": true`. Non-object arguments are wrapped as
/// `{"value": ...}`.
pub fn argument_preview(args: &Value, max_chars: usize) -> Value {
    let mut redactor = SecretRedactor::new();
    redactor.discover_json(args);
    if redactor.overflowed {
        let mut map = Map::new();
        map.insert(
            "redaction".to_string(),
            Value::String(REDACTION_FAILED.to_string()),
        );
        return Value::Object(map);
    }
    let catalog = redactor.catalog();
    let string_limit = max_chars.clamp(16, PREVIEW_MAX_STRING);
    let preview = preview_value(&catalog, args, "", "", 0, string_limit, false);
    let root = match preview {
        Value::Object(map) => map,
        other => {
            let mut map = Map::new();
            map.insert("value".to_string(), other);
            map
        }
    };
    let bounded = bound_preview(root, max_chars);
    if catalog.value_leaks(&bounded, 0) {
        let mut map = Map::new();
        map.insert(
            "redaction".to_string(),
            Value::String(REDACTION_FAILED.to_string()),
        );
        return Value::Object(map);
    }
    bounded
}

fn preview_key_sensitive(key: &str) -> bool {
    let normalized = normalize_name(key);
    is_sensitive_normalized(&normalized)
        || [
            "password",
            "passwd",
            "secret",
            "credential",
            "apikey",
            "api_key",
            "private_key",
            "authorization",
            "cookie",
        ]
        .iter()
        .any(|part| normalized.contains(part))
}

fn preview_value(
    catalog: &Catalog,
    v: &Value,
    key: &str,
    path: &str,
    depth: usize,
    limit: usize,
    exception: bool,
) -> Value {
    let normalized = normalize_name(key);
    if normalized == "secret_bindings" {
        return preview_bindings(catalog, v, path, limit);
    }
    if !key.is_empty() && preview_key_sensitive(key) {
        return match v {
            Value::Null | Value::Bool(_) => v.clone(),
            _ => Value::String(REDACTED.to_string()),
        };
    }
    if depth >= PREVIEW_MAX_DEPTH {
        return Value::String(TRUNCATED.to_string());
    }
    match v {
        Value::Object(map) if ENV_KEYS.contains(&normalized.as_str()) => {
            let mut out = Map::new();
            for (child_key, _) in map.iter().take(PREVIEW_MAX_ITEMS) {
                let shown = truncate_chars(
                    &catalog.scrub(child_key, View::Model, path, false, &[]),
                    PREVIEW_MAX_KEY_CHARS,
                );
                insert_unique(&mut out, shown, Value::String(REDACTED.to_string()));
            }
            if map.len() > PREVIEW_MAX_ITEMS {
                out.insert(
                    TRUNCATED.to_string(),
                    Value::String(format!("{} fields", map.len() - PREVIEW_MAX_ITEMS)),
                );
            }
            Value::Object(out)
        }
        Value::Object(map) => {
            let mut out = Map::new();
            for (child_key, child) in map.iter().take(PREVIEW_MAX_ITEMS) {
                let child_norm = normalize_name(child_key);
                let child_exception = exception || EXCEPTION_KEYS.contains(&child_norm.as_str());
                let child_path = join_path(path, child_key);
                let rendered = preview_value(
                    catalog,
                    child,
                    child_key,
                    &child_path,
                    depth + 1,
                    limit,
                    child_exception,
                );
                let shown = truncate_chars(
                    &catalog.scrub(child_key, View::Model, path, false, &[]),
                    PREVIEW_MAX_KEY_CHARS,
                );
                insert_unique(&mut out, shown, rendered);
            }
            if map.len() > PREVIEW_MAX_ITEMS {
                out.insert(
                    TRUNCATED.to_string(),
                    Value::String(format!("{} fields", map.len() - PREVIEW_MAX_ITEMS)),
                );
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let shown: Vec<&Value> = items.iter().take(PREVIEW_MAX_ITEMS).collect();
            let extra = argv_extra_spans(&shown, &location_or_text(path));
            let mut out: Vec<Value> = shown
                .iter()
                .enumerate()
                .map(|(index, child)| match child {
                    Value::String(s) => {
                        let spans: Vec<Span> = extra
                            .iter()
                            .filter(|(i, _)| *i == index)
                            .map(|(_, span)| span.clone())
                            .collect();
                        Value::String(truncate_chars(
                            &catalog.scrub(s, View::Model, path, exception, &spans),
                            limit,
                        ))
                    }
                    other => preview_value(
                        catalog,
                        other,
                        "",
                        &join_path(path, &index.to_string()),
                        depth + 1,
                        limit,
                        exception,
                    ),
                })
                .collect();
            if items.len() > PREVIEW_MAX_ITEMS {
                out.push(Value::String(format!(
                    "<truncated {} items>",
                    items.len() - PREVIEW_MAX_ITEMS
                )));
            }
            Value::Array(out)
        }
        Value::String(s) => Value::String(truncate_chars(
            &catalog.scrub(s, View::Model, &location_or_text(path), exception, &[]),
            limit,
        )),
        Value::Number(n) => {
            if catalog.is_exact(&n.to_string()) {
                Value::String(REDACTED.to_string())
            } else {
                v.clone()
            }
        }
        Value::Null | Value::Bool(_) => v.clone(),
    }
}

fn preview_bindings(catalog: &Catalog, v: &Value, path: &str, limit: usize) -> Value {
    let Value::Array(items) = v else {
        return Value::String(REDACTED.to_string());
    };
    let mut out = Vec::new();
    for item in items.iter().take(PREVIEW_MAX_ITEMS) {
        let Value::Object(map) = item else {
            out.push(Value::String(REDACTED.to_string()));
            continue;
        };
        let mut entry = Map::new();
        for (key, value) in map.iter().take(PREVIEW_MAX_ITEMS) {
            let shown = match value {
                Value::String(s) if BINDING_METADATA_KEYS.contains(&key.as_str()) => Value::String(
                    truncate_chars(&catalog.scrub(s, View::Model, path, false, &[]), limit),
                ),
                Value::Number(_) | Value::Null | Value::Bool(_)
                    if BINDING_METADATA_KEYS.contains(&key.as_str()) =>
                {
                    value.clone()
                }
                _ => Value::String(REDACTED.to_string()),
            };
            let key_shown = truncate_chars(
                &catalog.scrub(key, View::Model, path, false, &[]),
                PREVIEW_MAX_KEY_CHARS,
            );
            insert_unique(&mut entry, key_shown, shown);
        }
        out.push(Value::Object(entry));
    }
    if items.len() > PREVIEW_MAX_ITEMS {
        out.push(Value::String(format!(
            "<truncated {} items>",
            items.len() - PREVIEW_MAX_ITEMS
        )));
    }
    Value::Array(out)
}

fn serialized_chars(map: &Map<String, Value>) -> usize {
    serde_json::to_string(map)
        .map(|s| s.chars().count())
        .unwrap_or(usize::MAX)
}

fn bound_preview(root: Map<String, Value>, max_chars: usize) -> Value {
    if serialized_chars(&root) <= max_chars {
        return Value::Object(root);
    }
    let mut bounded = Map::new();
    for (key, value) in root {
        let mut candidate = bounded.clone();
        candidate.insert(key.clone(), value.clone());
        candidate.insert(PREVIEW_TRUNCATED_KEY.to_string(), Value::Bool(true));
        if serialized_chars(&candidate) <= max_chars {
            bounded.insert(key, value);
        } else {
            bounded.insert(key, Value::String(TRUNCATED.to_string()));
        }
    }
    bounded.insert(PREVIEW_TRUNCATED_KEY.to_string(), Value::Bool(true));
    while serialized_chars(&bounded) > max_chars {
        let last = bounded
            .keys()
            .rev()
            .find(|k| k.as_str() != PREVIEW_TRUNCATED_KEY)
            .cloned();
        match last {
            Some(key) => {
                bounded.remove(&key);
            }
            None => break,
        }
    }
    Value::Object(bounded)
}

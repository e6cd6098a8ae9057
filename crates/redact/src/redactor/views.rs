//! The five views: [`View`], the rendered [`Views`], and the walk that renders
//! one JSON value for one view with its markers and leak checks.

use super::*;

#[cfg(test)]
#[path = "views_tests.rs"]
mod tests;

/// One of the five observable views.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum View {
    /// Model history / provider replay.
    Model,
    /// Operator tool card.
    Operator,
    /// EventLog event.
    Event,
    /// Durable SQLite record.
    Durable,
    /// Host debug (one-way fingerprints only).
    Debug,
}

impl View {
    /// All views, in canonical order.
    pub const ALL: [View; 5] = [
        View::Model,
        View::Operator,
        View::Event,
        View::Durable,
        View::Debug,
    ];

    /// Stable lower-case name of the view.
    pub fn as_str(self) -> &'static str {
        match self {
            View::Model => "model",
            View::Operator => "operator",
            View::Event => "event",
            View::Durable => "durable",
            View::Debug => "debug",
        }
    }
}

/// Why redaction failed (every view then becomes the fixed failed result).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedactionError {
    /// More than [`MAX_SECRETS`] secrets were discovered.
    TooManySecrets,
    /// The post-render check still found a known secret in a view.
    LeakDetected,
}

impl fmt::Display for RedactionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedactionError::TooManySecrets => f.write_str("too many secrets"),
            RedactionError::LeakDetected => f.write_str("secret survived redaction"),
        }
    }
}

impl std::error::Error for RedactionError {}

/// The five observable views of one raw value.
#[derive(Clone, Debug, PartialEq)]
pub struct Views {
    /// Model history / provider replay.
    pub model: Value,
    /// Operator tool card.
    pub operator: Value,
    /// EventLog event.
    pub event: Value,
    /// Durable record.
    pub durable: Value,
    /// Host debug view (fingerprints, never values).
    pub debug: Value,
    /// Safe metadata of every known secret: `[{"name","source"}]`, no values
    /// and no fingerprints.
    pub sources: Value,
    /// True when this is the fixed fail-closed result.
    pub failed: bool,
}

impl Views {
    /// Every view is the fixed `{"status":"failed","error":"<redaction-failed>"}`.
    pub fn redaction_failed() -> Views {
        Views {
            model: failed_value(),
            operator: failed_value(),
            event: failed_value(),
            durable: failed_value(),
            debug: failed_value(),
            sources: Value::Array(Vec::new()),
            failed: true,
        }
    }

    /// The value for one view.
    pub fn get(&self, view: View) -> &Value {
        match view {
            View::Model => &self.model,
            View::Operator => &self.operator,
            View::Event => &self.event,
            View::Durable => &self.durable,
            View::Debug => &self.debug,
        }
    }
}

/// The fixed failed result: `{"status":"failed","error":"<redaction-failed>"}`.
pub fn failed_value() -> Value {
    let mut map = Map::new();
    map.insert("status".to_string(), Value::String("failed".to_string()));
    map.insert(
        "error".to_string(),
        Value::String(REDACTION_FAILED.to_string()),
    );
    Value::Object(map)
}

impl Catalog {
    pub(super) fn render(
        &self,
        v: &Value,
        view: View,
        path: &str,
        depth: usize,
        exception: bool,
    ) -> Value {
        if depth >= MAX_DEPTH {
            return Value::String(TRUNCATED.to_string());
        }
        match v {
            Value::Object(map) => {
                let mut out = Map::new();
                for (key, child) in map.iter().take(MAX_CONTAINER_ITEMS) {
                    let child_path = join_path(path, key);
                    let shown_key = self.scrub(key, view, &join_path(path, "<key>"), false, &[]);
                    let normalized = normalize_name(key);
                    let rendered = if is_sensitive_normalized(&normalized) {
                        self.sensitive_view(&normalized, child, &child_path, view)
                    } else {
                        let child_exception =
                            exception || EXCEPTION_KEYS.contains(&normalized.as_str());
                        self.render(child, view, &child_path, depth + 1, child_exception)
                    };
                    insert_unique(&mut out, shown_key, rendered);
                }
                if map.len() > MAX_CONTAINER_ITEMS {
                    out.insert(
                        TRUNCATED.to_string(),
                        Value::String(format!("{} fields", map.len() - MAX_CONTAINER_ITEMS)),
                    );
                }
                Value::Object(out)
            }
            Value::Array(items) => {
                let shown: Vec<&Value> = items.iter().take(MAX_CONTAINER_ITEMS).collect();
                let extra = argv_extra_spans(&shown, &location_or_text(path));
                let mut out: Vec<Value> = Vec::with_capacity(shown.len());
                for (index, child) in shown.iter().enumerate() {
                    let child_path = join_path(path, &index.to_string());
                    match child {
                        Value::String(s) => {
                            let spans: Vec<Span> = extra
                                .iter()
                                .filter(|(i, _)| *i == index)
                                .map(|(_, span)| span.clone())
                                .collect();
                            let scrubbed = self.scrub(s, view, &child_path, exception, &spans);
                            out.push(Value::String(truncate_view_string(&scrubbed)));
                        }
                        other => {
                            out.push(self.render(other, view, &child_path, depth + 1, exception))
                        }
                    }
                }
                if items.len() > MAX_CONTAINER_ITEMS {
                    out.push(Value::String(format!(
                        "<truncated {} items>",
                        items.len() - MAX_CONTAINER_ITEMS
                    )));
                }
                Value::Array(out)
            }
            Value::String(s) => {
                let scrubbed = self.scrub(s, view, &location_or_text(path), exception, &[]);
                Value::String(truncate_view_string(&scrubbed))
            }
            Value::Number(n) => {
                let text = n.to_string();
                match self.entries.iter().find(|e| e.value == text) {
                    Some(entry) => Value::String(marker(view, &entry.name, entry.binding, &text)),
                    None => v.clone(),
                }
            }
            Value::Null | Value::Bool(_) => v.clone(),
        }
    }

    fn sensitive_view(&self, normalized_key: &str, v: &Value, path: &str, view: View) -> Value {
        let secret_text = match v {
            Value::Null | Value::Bool(_) => return v.clone(),
            Value::String(s) => Some(
                field_secret_values(normalized_key, s)
                    .into_iter()
                    .next()
                    .unwrap_or_else(|| s.clone()),
            ),
            Value::Number(n) => Some(n.to_string()),
            Value::Object(_) | Value::Array(_) => None,
        };
        let name = marker_name(&normalized_key.to_ascii_uppercase());
        match view {
            View::Model => Value::String(REDACTED.to_string()),
            View::Operator => Value::String(format!("<redacted:{name}>")),
            View::Event | View::Durable | View::Debug => {
                let mut meta = Map::new();
                meta.insert("redacted".to_string(), Value::Bool(true));
                meta.insert("name".to_string(), Value::String(name));
                meta.insert(
                    "source".to_string(),
                    Value::String(self.safe_label(&format!("field:{path}"))),
                );
                if view == View::Debug {
                    if let Some(text) = secret_text {
                        meta.insert("fingerprint".to_string(), Value::String(fingerprint(&text)));
                    }
                }
                Value::Object(meta)
            }
        }
    }

    /// True when a known secret occurs in `s` outside a redaction marker.
    pub(super) fn string_leaks(&self, s: &str) -> bool {
        if self.entries.is_empty() || s.is_empty() {
            return false;
        }
        let markers = marker_spans(s);
        self.occurrences(s)
            .into_iter()
            .any(|(_, start, end)| !markers.iter().any(|&(a, b)| a <= start && end <= b))
    }

    pub(crate) fn value_leaks(&self, v: &Value, depth: usize) -> bool {
        if depth > MAX_DEPTH + 2 {
            return false;
        }
        match v {
            Value::String(s) => self.string_leaks(s),
            Value::Array(items) => items.iter().any(|item| self.value_leaks(item, depth + 1)),
            Value::Object(map) => {
                if is_marker_object(map) {
                    return false;
                }
                map.iter()
                    .any(|(k, child)| self.string_leaks(k) || self.value_leaks(child, depth + 1))
            }
            Value::Number(n) => self.is_exact(&n.to_string()),
            Value::Null | Value::Bool(_) => false,
        }
    }
}

fn is_marker_object(map: &Map<String, Value>) -> bool {
    map.get("redacted") == Some(&Value::Bool(true))
        && map.get("name").is_some_and(Value::is_string)
        && map.get("source").is_some_and(Value::is_string)
}

/// Byte ranges of `<redacted...>` / `<redaction-failed>` markers in `s`.
fn marker_spans(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for prefix in ["<redacted", REDACTION_FAILED] {
        for (start, _) in s.match_indices(prefix) {
            let end = s
                .get(start..)
                .and_then(|rest| rest.get(..floor_boundary(rest, MAX_MARKER_BYTES)))
                .and_then(|window| window.find('>'))
                .map(|rel| start + rel + 1)
                .unwrap_or(s.len());
            out.push((start, end));
        }
    }
    out
}

pub(super) fn build(s: &str, merged: &[Span], view: View) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pos = 0;
    for span in merged {
        if span.start < pos {
            continue;
        }
        out.push_str(sub(s, pos, span.start));
        out.push_str(&marker(
            view,
            &span.name,
            span.binding,
            sub(s, span.start, span.own_end),
        ));
        pos = span.end.min(s.len());
    }
    out.push_str(sub(s, pos, s.len()));
    out
}

pub(super) fn marker(view: View, name: &str, binding: bool, secret: &str) -> String {
    match view {
        View::Model if !binding => REDACTED.to_string(),
        View::Model | View::Operator | View::Event | View::Durable => format!("<redacted:{name}>"),
        View::Debug => format!("<redacted:{name}:{}>", fingerprint(secret)),
    }
}

/// Marker-safe upper-case name: `[A-Za-z0-9_]` only, at most 64 chars.
pub(super) fn marker_name(raw: &str) -> String {
    let mut out: String = raw
        .chars()
        .take(MAX_NAME_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.trim_matches('_').is_empty() {
        out = "SECRET".to_string();
    }
    out
}

pub(crate) fn insert_unique(map: &mut Map<String, Value>, key: String, value: Value) {
    if !map.contains_key(&key) {
        map.insert(key, value);
        return;
    }
    let mut index = 2usize;
    loop {
        let candidate = format!("{key}#{index}");
        if !map.contains_key(&candidate) {
            map.insert(candidate, value);
            return;
        }
        index = index.saturating_add(1);
    }
}

fn truncate_view_string(s: &str) -> String {
    truncate_chars(s, MAX_VIEW_STRING_CHARS)
}

//! Secret discovery and view redaction for Host-observable data.
//!
//! This module owns the single `SecretRedactor` that turns raw tool
//! arguments, raw adapter results and exception text (internal execution
//! data) into the five observable views:
//!
//! | view       | structured secret field                  | secret inside text                  |
//! |------------|------------------------------------------|-------------------------------------|
//! | `model`    | `"<redacted>"`                           | `<redacted>` (bindings: `<redacted:TARGET>`) |
//! | `operator` | `"<redacted:NAME>"`                      | `<redacted:NAME>`                   |
//! | `event`    | `{"redacted":true,"name","source"}`      | `<redacted:NAME>`                   |
//! | `durable`  | `{"redacted":true,"name","source"}`      | `<redacted:NAME>`                   |
//! | `debug`    | event object + `"fingerprint"`           | `<redacted:NAME:sha256:0123456789ab>` |
//!
//! Event and durable views keep safe source metadata (`field:a.b`,
//! `url:cmd.userinfo`, `binding:TARGET`, ...) and never a value; the debug
//! view adds a one-way fingerprint (`sha256:` + 12 hex, see [`fingerprint`]).
//! If redaction fails, every view becomes the fixed
//! `{"status":"failed","error":"<redaction-failed>"}` result
//! ([`Views::redaction_failed`]).
//!
//! Secrets are discovered from: secret-named structured fields (password,
//! token, secret, api_key, authorization, ... incl. camelCase and suffix forms),
//! explicit bindings ([`SecretRedactor::with_binding`]), URL userinfo and
//! secret-named query/fragment values, `Authorization:`/`Bearer` headers and
//! secret headers (`X-Api-Key:` ...), command options (`--password=x`,
//! `--token x`, mysql `-pSECRET`, `sshpass -p`, `curl -u user:pass`,
//! openssl `-pass pass:x`, also in argv arrays), `key=value` / `"key": "value"`
//! pairs with secret-ish keys, well-known token shapes (`sk-…`, `ghp_…`,
//! `xox[bp]-…`, `AKIA…`, `AIza…`, `glpat-…`, JWTs, PEM private keys) and
//! exception text (strings under `error`/`exception`/`stderr`/... keys, or
//! [`SecretRedactor::discover_exception`]).
//!
//! Redaction is two-layered:
//! 1. *positional*: the exact span where a secret was recognised (field value,
//!    option value, URL password, ...) is always replaced, whatever its length;
//! 2. *global*: every known secret value of at least [`MIN_SECRET_CHARS`]
//!    characters is replaced wherever it occurs, inside larger strings too,
//!    longest first, with overlapping matches merged so no fragment survives.
//!
//! Minimum length: a value shorter than [`MIN_SECRET_CHARS`] (4) characters is
//! never used for global replacement. Such values (`"no"`, `"1"`, `"abc"`)
//! occur in ordinary text so often that replacing them would blank out
//! unrelated output and, by the pattern of replacements, act as an oracle for
//! the secret itself. They are still removed positionally. Placeholder-like
//! values (`true`, `null`, `****`, `$VAR`, already redacted markers) are not
//! treated as secrets at all, which also makes redaction idempotent.
//!
//! Each secret is also registered in its trimmed and JSON-escaped spelling;
//! URL values also percent-decoded, HTTP Basic credentials also decoded.
//! Other transformed or encoded forms are not covered (exact-value only).
//!
//! Also here: [`StreamScrubber`] (incremental exact-value redaction of
//! terminal output, safe across chunk boundaries). The approval preview
//! ([`crate::preview`]) builds on the parts in `preview_parts`.
//!
//! Layout: this file holds the [`SecretRedactor`] (discovery walk, view
//! rendering entry points) and the [`StreamScrubber`]; `names` knows which
//! names hold secrets, `known` holds discovered secrets and replaces them,
//! `detect` finds secrets in free text, `argv` in argument arrays, `views`
//! renders one value per [`View`] and `text` has the bounded string helpers
//! they share.
//!
//! Robustness: no unwrap/expect/indexing/panic (enforced by the `deny` below);
//! recursion is bounded by [`MAX_DEPTH`], per-value scans by fixed caps, and
//! detectors are linear in the input. Global replacement is one
//! Aho-Corasick pass over the text for all known secrets (building the
//! automaton is linear in their total length); more than [`MAX_SECRETS`]
//! secrets fails closed. After rendering, every view is re-checked for any
//! known secret outside a marker and fails closed if one is found.
//! The debug fingerprint is unsalted: low-entropy secrets can be brute-forced
//! from it, so the debug view must stay Host-only.

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::unreachable,
    clippy::todo,
    clippy::unimplemented
)]

mod argv;
mod detect;
mod known;
mod names;
mod text;
mod views;

#[cfg(test)]
mod test_support;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::fmt;
use std::fmt::Write as _;

use argv::*;
use detect::*;
use known::*;
pub use known::{fingerprint, Discovered, SecretSource};
use names::*;
pub use names::{is_sensitive_name, normalize_name};
use text::*;
use views::*;
pub use views::{failed_value, RedactionError, View, Views};

/// The scrubbing parts the approval preview ([`crate::preview`])
/// is built from: the secret catalog of a discovery, name rules and the
/// bounded text helpers. Crate-internal; nothing else should need them.
pub(crate) mod preview_parts {
    pub(crate) use super::argv::argv_extra_spans;
    pub(crate) use super::known::{Catalog, Span};
    pub(crate) use super::names::{
        is_sensitive_normalized, normalize_name, BINDING_METADATA_KEYS, ENV_KEYS, EXCEPTION_KEYS,
    };
    pub(crate) use super::text::{join_path, location_or_text, truncate_chars};
    pub(crate) use super::views::insert_unique;
    pub(crate) use super::{SecretRedactor, REDACTED, REDACTION_FAILED, TRUNCATED};
}

/// Placeholder used in the model view and for structurally redacted values.
pub const REDACTED: &str = "<redacted>";

/// Fixed value used when redaction fails.
pub const REDACTION_FAILED: &str = "<redaction-failed>";

/// Placeholder for content cut off by depth/size limits.
pub const TRUNCATED: &str = "<truncated>";

/// Minimum length (in `char`s) of a secret used for global replacement.
pub const MIN_SECRET_CHARS: usize = 4;

/// Maximum JSON nesting rendered; deeper values become `"<truncated>"`.
pub const MAX_DEPTH: usize = 32;

/// Maximum entries of one object/array rendered (and scanned).
pub const MAX_CONTAINER_ITEMS: usize = 10_000;

/// Maximum characters of one string in a view.
pub const MAX_VIEW_STRING_CHARS: usize = 1_000_000;

/// Maximum number of discovered secrets; beyond it redaction fails closed.
pub const MAX_SECRETS: usize = 4_096;

const MAX_BARE_VALUE_BYTES: usize = 4_096;
const MAX_QUOTED_VALUE_BYTES: usize = 8_192;
const MAX_URL_BYTES: usize = 8_192;
const MAX_KEY_BYTES: usize = 64;
const MAX_PATH_SEGMENT_CHARS: usize = 64;
const MAX_LABEL_CHARS: usize = 256;
const MAX_NAME_CHARS: usize = 64;
const MAX_MARKER_BYTES: usize = 160;
const FINGERPRINT_BYTES: usize = 6; // 12 hex characters

/// Collects known secrets and renders redacted views. Cheap to clone.
#[derive(Clone, Default)]
pub struct SecretRedactor {
    known: Vec<Discovered>,
    seen: HashSet<Discovered>,
    pub(crate) overflowed: bool,
}

impl fmt::Debug for SecretRedactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretRedactor")
            .field("secrets", &self.known.len())
            .field(
                "bindings",
                &self.known.iter().filter(|d| d.is_binding()).count(),
            )
            .field("overflowed", &self.overflowed)
            .finish()
    }
}

impl SecretRedactor {
    /// An empty redactor (structured field rules still apply).
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers an exact bound secret: occurrences are replaced by
    /// `<redacted:TARGET>` in every view (debug adds a fingerprint). Empty
    /// values are ignored; values shorter than [`MIN_SECRET_CHARS`] are kept
    /// for metadata but not used for replacement (see
    /// [`SecretRedactor::short_binding_targets`]).
    pub fn with_binding(mut self, target: &str, value: &str) -> Self {
        self.add_binding(target, value);
        self
    }

    /// In-place form of [`SecretRedactor::with_binding`].
    pub fn add_binding(&mut self, target: &str, value: &str) {
        if value.is_empty() {
            return;
        }
        let target = marker_name(target);
        self.push(Discovered {
            source: SecretSource::Binding(target),
            value: value.to_string(),
            location: "binding".to_string(),
        });
    }

    /// Binding targets whose value is too short to be replaced in text; the
    /// Host should refuse such bindings.
    pub fn short_binding_targets(&self) -> Vec<String> {
        self.known
            .iter()
            .filter(|d| d.is_binding() && d.value.chars().count() < MIN_SECRET_CHARS)
            .map(|d| d.name())
            .collect()
    }

    /// Every discovered secret (values are hidden from `Debug`).
    pub fn discovered(&self) -> &[Discovered] {
        &self.known
    }

    /// Number of known secrets.
    pub fn len(&self) -> usize {
        self.known.len()
    }

    /// True when no secret is known.
    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }

    /// True when more than [`MAX_SECRETS`] secrets were offered; every
    /// rendering then fails closed.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Adds an already discovered secret (e.g. from another redactor).
    pub fn add(&mut self, discovered: Discovered) {
        if discovered.value.is_empty() || is_ignorable_value(&discovered.value) {
            return;
        }
        self.push(discovered);
    }

    /// Records a secret plus its trimmed and JSON-escaped forms (so a value
    /// with quotes, backslashes or newlines is also found inside serialized
    /// JSON text).
    fn push(&mut self, discovered: Discovered) {
        let variants = secret_variants(&discovered.value);
        for value in variants {
            self.push_one(Discovered {
                value,
                ..discovered.clone()
            });
        }
        self.push_one(discovered);
    }

    fn push_one(&mut self, discovered: Discovered) {
        if self.seen.contains(&discovered) {
            return;
        }
        if self.known.len() >= MAX_SECRETS {
            self.overflowed = true;
            return;
        }
        self.seen.insert(discovered.clone());
        self.known.push(discovered);
    }

    /// Walks structured fields (secret-named keys, sensitive containers),
    /// argv arrays, and every string (URLs, commands, headers, key=value,
    /// token shapes; exception heuristics under error-like keys).
    pub fn discover_json(&mut self, v: &Value) {
        self.walk_discover(v, "", 0, false);
    }

    /// Discovers secrets in free text: URLs, `Authorization:` headers, Bearer
    /// tokens, secret headers, command options, secret-ish `key=value`
    /// pairs and known token shapes.
    pub fn discover_text(&mut self, s: &str) {
        self.discover_text_at(s, "text", false);
    }

    /// Like [`SecretRedactor::discover_text`] plus exception heuristics
    /// (`invalid token 'x'`, `API key provided: x`).
    pub fn discover_exception(&mut self, s: &str) {
        self.discover_text_at(s, "exception", true);
    }

    fn discover_text_at(&mut self, s: &str, location: &str, exception: bool) {
        for hit in detect(s, location, exception) {
            self.push(hit.found);
        }
    }

    fn walk_discover(&mut self, v: &Value, path: &str, depth: usize, exception: bool) {
        if depth >= MAX_DEPTH {
            return;
        }
        match v {
            Value::Object(map) => {
                for (key, child) in map.iter().take(MAX_CONTAINER_ITEMS) {
                    let child_path = join_path(path, key);
                    self.discover_text_at(key, &join_path(path, "<key>"), false);
                    let normalized = normalize_name(key);
                    if is_sensitive_normalized(&normalized) {
                        self.discover_sensitive(&normalized, child, &child_path, depth + 1);
                        continue;
                    }
                    let child_exception =
                        exception || EXCEPTION_KEYS.contains(&normalized.as_str());
                    self.walk_discover(child, &child_path, depth + 1, child_exception);
                }
            }
            Value::Array(items) => {
                let items: Vec<&Value> = items.iter().take(MAX_CONTAINER_ITEMS).collect();
                for hit in argv_hits(&items, &location_or_text(path)) {
                    self.push(hit.found);
                }
                for (index, child) in items.iter().enumerate() {
                    self.walk_discover(
                        child,
                        &join_path(path, &index.to_string()),
                        depth + 1,
                        exception,
                    );
                }
            }
            Value::String(s) => {
                self.discover_text_at(s, &location_or_text(path), exception);
            }
            _ => {}
        }
    }

    fn discover_sensitive(&mut self, normalized_key: &str, v: &Value, path: &str, depth: usize) {
        match v {
            Value::String(s) => {
                for value in field_secret_values(normalized_key, s) {
                    self.add(Discovered {
                        source: SecretSource::Field(path.to_string()),
                        value,
                        location: path.to_string(),
                    });
                }
                self.discover_text_at(s, path, false);
            }
            Value::Number(n) => self.add(Discovered {
                source: SecretSource::Field(path.to_string()),
                value: n.to_string(),
                location: path.to_string(),
            }),
            Value::Object(_) | Value::Array(_) => self.discover_container(v, path, depth),
            Value::Null | Value::Bool(_) => {}
        }
    }

    /// Everything inside a secret-named container is secret (keys included).
    fn discover_container(&mut self, v: &Value, path: &str, depth: usize) {
        if depth >= MAX_DEPTH {
            return;
        }
        match v {
            Value::String(s) => self.add(Discovered {
                source: SecretSource::Field(path.to_string()),
                value: s.clone(),
                location: path.to_string(),
            }),
            Value::Number(n) => self.add(Discovered {
                source: SecretSource::Field(path.to_string()),
                value: n.to_string(),
                location: path.to_string(),
            }),
            Value::Object(map) => {
                for (key, child) in map.iter().take(MAX_CONTAINER_ITEMS) {
                    self.add(Discovered {
                        source: SecretSource::Field(join_path(path, "<key>")),
                        value: key.clone(),
                        location: path.to_string(),
                    });
                    self.discover_container(child, &join_path(path, key), depth + 1);
                }
            }
            Value::Array(items) => {
                for (index, child) in items.iter().take(MAX_CONTAINER_ITEMS).enumerate() {
                    self.discover_container(child, &join_path(path, &index.to_string()), depth + 1);
                }
            }
            Value::Null | Value::Bool(_) => {}
        }
    }

    pub(crate) fn catalog(&self) -> Catalog {
        Catalog::new(&self.known)
    }

    /// Model-view text redaction: known secrets and secrets discovered in
    /// `s` itself are replaced (`<redacted>`, bindings `<redacted:TARGET>`).
    pub fn redact_str(&self, s: &str) -> String {
        self.redact_str_for(s, View::Model)
    }

    /// Text redaction for a given view.
    pub fn redact_str_for(&self, s: &str, view: View) -> String {
        let mut extended = self.clone();
        extended.discover_text(s);
        if extended.overflowed {
            return REDACTION_FAILED.to_string();
        }
        let catalog = extended.catalog();
        let out = catalog.scrub(s, view, "text", false, &[]);
        if catalog.string_leaks(&out) {
            return REDACTION_FAILED.to_string();
        }
        out
    }

    /// Like [`SecretRedactor::redact_str_for`] with exception heuristics.
    pub fn redact_exception(&self, s: &str, view: View) -> String {
        let mut extended = self.clone();
        extended.discover_exception(s);
        if extended.overflowed {
            return REDACTION_FAILED.to_string();
        }
        let catalog = extended.catalog();
        let out = catalog.scrub(s, view, "exception", true, &[]);
        if catalog.string_leaks(&out) {
            return REDACTION_FAILED.to_string();
        }
        out
    }

    /// Model-view JSON redaction: secret-named fields become `"<redacted>"`,
    /// strings are scrubbed. Fails closed to [`failed_value`].
    pub fn redact_json(&self, v: &Value) -> Value {
        self.redact_json_for(v, View::Model)
    }

    /// JSON redaction for one view. Fails closed to [`failed_value`].
    pub fn redact_json_for(&self, v: &Value, view: View) -> Value {
        let mut extended = self.clone();
        extended.discover_json(v);
        if extended.overflowed {
            return failed_value();
        }
        let catalog = extended.catalog();
        let out = catalog.render(v, view, "", 0, false);
        if catalog.value_leaks(&out, 0) {
            return failed_value();
        }
        out
    }

    /// The five views of `raw` (after discovering secrets in `raw`). Never
    /// panics; any failure yields [`Views::redaction_failed`].
    pub fn views(&self, raw: &Value) -> Views {
        self.try_views(raw)
            .unwrap_or_else(|_| Views::redaction_failed())
    }

    /// Fallible form of [`SecretRedactor::views`].
    pub fn try_views(&self, raw: &Value) -> Result<Views, RedactionError> {
        let mut extended = self.clone();
        extended.discover_json(raw);
        if extended.overflowed {
            return Err(RedactionError::TooManySecrets);
        }
        let catalog = extended.catalog();
        let render = |view: View| -> Result<Value, RedactionError> {
            let out = catalog.render(raw, view, "", 0, false);
            if catalog.value_leaks(&out, 0) {
                Err(RedactionError::LeakDetected)
            } else {
                Ok(out)
            }
        };
        let model = render(View::Model)?;
        let operator = render(View::Operator)?;
        let event = render(View::Event)?;
        let durable = render(View::Durable)?;
        let debug = render(View::Debug)?;
        let mut seen: HashSet<(String, String)> = HashSet::new();
        let mut sources = Vec::new();
        for found in &extended.known {
            let pair = (found.name(), catalog.safe_label(&found.source_label()));
            if seen.contains(&pair) {
                continue;
            }
            let mut meta = Map::new();
            meta.insert("name".to_string(), Value::String(pair.0.clone()));
            meta.insert("source".to_string(), Value::String(pair.1.clone()));
            sources.push(Value::Object(meta));
            seen.insert(pair);
        }
        let sources = Value::Array(sources);
        if catalog.value_leaks(&sources, 0) {
            return Err(RedactionError::LeakDetected);
        }
        Ok(Views {
            model,
            operator,
            event,
            durable,
            debug,
            sources,
            failed: false,
        })
    }

    /// Streaming exact-value scrubber for incremental output (terminal
    /// stdout/stderr, artifacts). Handles secrets split across chunks.
    pub fn stream(&self, view: View) -> StreamScrubber {
        if self.overflowed {
            return StreamScrubber {
                catalog: Catalog::default(),
                view,
                carry: String::new(),
                hold: 0,
                failed: true,
            };
        }
        let catalog = self.catalog();
        let hold = catalog
            .entries
            .iter()
            .map(|e| e.value.len())
            .max()
            .unwrap_or(0)
            .saturating_sub(1);
        StreamScrubber {
            catalog,
            view,
            carry: String::new(),
            hold,
            failed: false,
        }
    }
}

/// Incremental exact-value scrubber created by [`SecretRedactor::stream`].
///
/// It holds back at most `longest secret - 1` bytes between chunks, so a
/// known secret split across chunk boundaries is still replaced. Only known
/// (global, `>= MIN_SECRET_CHARS`) secrets are handled; no fresh discovery.
pub struct StreamScrubber {
    catalog: Catalog,
    view: View,
    carry: String,
    hold: usize,
    failed: bool,
}

impl fmt::Debug for StreamScrubber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamScrubber")
            .field("secrets", &self.catalog.entries.len())
            .field("view", &self.view)
            .field("held_bytes", &self.carry.len())
            .finish()
    }
}

impl StreamScrubber {
    /// Feeds a chunk; returns the text that is safe to emit now.
    pub fn push(&mut self, chunk: &str) -> String {
        if self.failed {
            return String::new();
        }
        let mut buffer = std::mem::take(&mut self.carry);
        buffer.push_str(chunk);
        let spans = merge_spans(self.catalog.global_spans(&buffer));
        let mut cut = floor_boundary(&buffer, buffer.len().saturating_sub(self.hold));
        for span in &spans {
            if span.start < cut && span.end > cut {
                cut = span.end;
            }
        }
        let emit_spans: Vec<Span> = spans.into_iter().filter(|s| s.start < cut).collect();
        let emitted = build(sub(&buffer, 0, cut), &emit_spans, self.view);
        self.carry = sub(&buffer, cut, buffer.len()).to_string();
        emitted
    }

    /// Flushes the held-back tail (scrubbed).
    pub fn finish(&mut self) -> String {
        if self.failed {
            return REDACTION_FAILED.to_string();
        }
        let rest = std::mem::take(&mut self.carry);
        let spans = merge_spans(self.catalog.global_spans(&rest));
        build(&rest, &spans, self.view)
    }
}

#[cfg(test)]
#[path = "redactor_tests.rs"]
mod tests;

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
//! Also here: [`argument_preview`] (length-bounded approval preview of tool
//! arguments) and [`StreamScrubber`] (incremental exact-value redaction of
//! terminal output, safe across chunk boundaries).
//!
//! Robustness: no unwrap/expect/indexing/panic (enforced by the `deny` below);
//! recursion is bounded by [`MAX_DEPTH`], per-value scans by fixed caps, and
//! detectors are linear in the input. Global replacement costs
//! O(text length x number of known secrets); more than [`MAX_SECRETS`]
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

use std::collections::HashSet;
use std::fmt;
use std::fmt::Write as _;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

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

const PREVIEW_MAX_DEPTH: usize = 6;
const PREVIEW_MAX_ITEMS: usize = 50;
const PREVIEW_MAX_STRING: usize = 500;
const PREVIEW_MAX_KEY_CHARS: usize = 80;
const PREVIEW_TRUNCATED_KEY: &str = "_truncated";

/// Normalised field names that always hold a secret.
const SENSITIVE_FIELD_NAMES: &[&str] = &[
    "access_key",
    "access_token",
    "api_key",
    "api_token",
    "apikey",
    "auth",
    "auth_token",
    "authorization",
    "bearer",
    "bearer_token",
    "client_secret",
    "cookie",
    "credential",
    "credentials",
    "encryption_key",
    "id_token",
    "key_material",
    "master_key",
    "passphrase",
    "passwd",
    "password",
    "private_key",
    "proxy_authorization",
    "refresh_token",
    "secret",
    "secret_access_key",
    "secret_input",
    "secret_key",
    "secret_value",
    "session_token",
    "set_cookie",
    "signing_key",
    "token",
    "x_access_token",
    "x_api_key",
    "x_api_token",
    "x_auth_token",
    "x_goog_api_key",
];

/// Normalised suffixes (after `_`) that mark a secret field.
const SENSITIVE_SUFFIXES: &[&str] = &[
    "_access_key",
    "_access_token",
    "_api_key",
    "_api_token",
    "_apikey",
    "_auth_token",
    "_client_secret",
    "_credential",
    "_credentials",
    "_private_key",
    "_refresh_token",
    "_secret",
    "_secret_key",
    "_session_token",
    "_token",
];

/// Endings that mark a secret even without a separator (`PGPASSWORD`).
const SENSITIVE_ENDINGS: &[&str] = &["password", "passwd", "passphrase"];

/// Extra URL query/fragment parameter names treated as secret.
const EXTRA_QUERY_NAMES: &[&str] = &[
    "code",
    "jwt",
    "key",
    "pass",
    "pwd",
    "session",
    "session_id",
    "sessionid",
    "sig",
    "signature",
    "x_amz_credential",
    "x_amz_security_token",
    "x_amz_signature",
];

/// Header names (lower case) whose `Name: value` value is a secret.
const SECRET_HEADER_NAMES: &[&str] = &[
    "api-key",
    "apikey",
    "cookie",
    "private-token",
    "set-cookie",
    "x-access-token",
    "x-api-key",
    "x-api-token",
    "x-auth-token",
    "x-goog-api-key",
    "x-vault-token",
];

/// Authorization schemes (lower case) that precede the credential.
const AUTH_SCHEMES: &[&str] = &[
    "api-key",
    "apikey",
    "aws4-hmac-sha256",
    "basic",
    "bearer",
    "bot",
    "digest",
    "dpop",
    "hmac",
    "jwt",
    "key",
    "mac",
    "negotiate",
    "ntlm",
    "oauth",
    "sso-key",
    "token",
];

/// Values that are never secrets (compared case-insensitively).
const NON_SECRET_LITERALS: &[&str] = &[
    "empty",
    "false",
    "nil",
    "none",
    "null",
    "true",
    "undefined",
    "unset",
];

/// Normalised object keys whose string values are treated as exception text.
const EXCEPTION_KEYS: &[&str] = &[
    "cause",
    "detail",
    "err",
    "error",
    "error_message",
    "errors",
    "exception",
    "stack",
    "stack_trace",
    "stacktrace",
    "stderr",
    "traceback",
];

/// Lower-case words after which exception text may quote a secret.
const EXCEPTION_WORDS: &[&str] = &[
    "access key",
    "api key",
    "api-key",
    "api_key",
    "apikey",
    "credential",
    "passphrase",
    "passwd",
    "password",
    "secret key",
    "secret",
    "token",
];

/// Normalised keys whose object value is an environment overlay (preview
/// shows keys only).
const ENV_KEYS: &[&str] = &["env", "environment", "env_overlay", "env_vars"];

/// Keys of a `secret_bindings` entry that are safe to show in a preview.
const BINDING_METADATA_KEYS: &[&str] = &[
    "capability",
    "expires_at",
    "expires_in_seconds",
    "source",
    "target",
];

// ---------------------------------------------------------------------------
// Public types
// ---------------------------------------------------------------------------

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

/// Where a secret was discovered.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SecretSource {
    /// Secret-named structured field; JSON path such as `headers.Authorization`.
    Field(String),
    /// Explicit binding; the binding target (e.g. env var name).
    Binding(String),
    /// Password (or token-like user name) in URL userinfo.
    UrlUserinfo,
    /// Secret-named URL query or fragment parameter (normalised name).
    UrlQuery(String),
    /// `Authorization:` header value or `Bearer` credential.
    AuthorizationHeader,
    /// Secret header such as `X-Api-Key:` (normalised name).
    Header(String),
    /// Command option as written, e.g. `--password`, `-p`, `--user`.
    CommandOption(String),
    /// `key=value` or `"key": "value"` pair (normalised key).
    Assignment(String),
    /// Well-known token shape (kind such as `github_token`, `jwt`).
    TokenShape(String),
    /// Secret quoted in exception text (`invalid token 'x'`).
    ExceptionText,
}

/// A discovered secret. `Debug` never prints the value.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Discovered {
    /// Kind of discovery.
    pub source: SecretSource,
    /// The raw secret value (never printed by `Debug`).
    pub value: String,
    /// Where it was found: JSON path, `text`, `exception` or `binding`.
    pub location: String,
}

impl fmt::Debug for Discovered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Discovered")
            .field("source", &self.source)
            .field("location", &self.location)
            .field("value", &"<hidden>")
            .field("chars", &self.value.chars().count())
            .finish()
    }
}

impl Discovered {
    /// Upper-case marker name (`PASSWORD`, `URL_USERINFO`, binding target ...).
    pub fn name(&self) -> String {
        let raw = match &self.source {
            SecretSource::Field(path) => {
                let segment = path
                    .rsplit('.')
                    .find(|segment| is_sensitive_name(segment))
                    .map(normalize_name)
                    .unwrap_or_default();
                if segment.is_empty() {
                    "SECRET".to_string()
                } else {
                    segment.to_ascii_uppercase()
                }
            }
            SecretSource::Binding(target) => target.clone(),
            SecretSource::UrlUserinfo => "URL_USERINFO".to_string(),
            SecretSource::UrlQuery(name)
            | SecretSource::Header(name)
            | SecretSource::Assignment(name)
            | SecretSource::TokenShape(name) => name.to_ascii_uppercase(),
            SecretSource::AuthorizationHeader => "AUTHORIZATION".to_string(),
            SecretSource::CommandOption(option) => {
                let plain = normalize_plain(option);
                match plain.as_str() {
                    "p" => "PASSWORD".to_string(),
                    "u" | "user" | "proxy_user" => "USER_PASSWORD".to_string(),
                    "pass" | "passin" | "passout" => "PASSWORD".to_string(),
                    _ => plain.to_ascii_uppercase(),
                }
            }
            SecretSource::ExceptionText => "EXCEPTION_SECRET".to_string(),
        };
        marker_name(&raw)
    }

    /// Safe source label such as `field:nested.password`, `url:cmd.userinfo`.
    /// It never contains the value (labels are scrubbed before rendering).
    pub fn source_label(&self) -> String {
        let loc = &self.location;
        match &self.source {
            SecretSource::Field(path) => format!("field:{path}"),
            SecretSource::Binding(target) => format!("binding:{target}"),
            SecretSource::UrlUserinfo => format!("url:{loc}.userinfo"),
            SecretSource::UrlQuery(name) => format!("url:{loc}.query.{name}"),
            SecretSource::AuthorizationHeader => format!("header:{loc}.authorization"),
            SecretSource::Header(name) => format!("header:{loc}.{name}"),
            SecretSource::CommandOption(option) => format!("command:{loc}.{option}"),
            SecretSource::Assignment(name) => format!("text:{loc}.{name}"),
            SecretSource::TokenShape(kind) => format!("token:{loc}.{kind}"),
            SecretSource::ExceptionText => format!("exception:{loc}"),
        }
    }

    /// One-way fingerprint of the value (see [`fingerprint`]).
    pub fn fingerprint(&self) -> String {
        fingerprint(&self.value)
    }

    fn is_binding(&self) -> bool {
        matches!(self.source, SecretSource::Binding(_))
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

/// One-way value fingerprint: `"sha256:"` + first 12 hex digits of SHA-256.
///
/// Only for the Host debug view. It is unsalted, so a low-entropy secret can
/// be recovered by brute force from its fingerprint; never expose it beyond
/// debug.
pub fn fingerprint(value: &str) -> String {
    let digest = Sha256::digest(value.as_bytes());
    let mut out = String::from("sha256:");
    for byte in digest.iter().take(FINGERPRINT_BYTES) {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// Normalises a field name: camelCase split, lower case, runs of
/// non-alphanumerics collapsed to `_`, trimmed (`X-Api-Key` -> `x_api_key`,
/// `accessToken` -> `access_token`, `APIKey` -> `api_key`).
pub fn normalize_name(raw: &str) -> String {
    let chars: Vec<char> = raw.trim().chars().collect();
    let mut out = String::with_capacity(chars.len() + 4);
    let mut pending_sep = false;
    for (index, &ch) in chars.iter().enumerate() {
        if ch.is_ascii_alphanumeric() {
            if ch.is_ascii_uppercase() && index > 0 {
                let prev = index.checked_sub(1).and_then(|i| chars.get(i)).copied();
                let next = chars.get(index + 1).copied();
                let boundary = match prev {
                    Some(p) if p.is_ascii_lowercase() || p.is_ascii_digit() => true,
                    Some(p) if p.is_ascii_uppercase() => {
                        next.is_some_and(|n| n.is_ascii_lowercase())
                    }
                    _ => false,
                };
                if boundary {
                    pending_sep = true;
                }
            }
            if pending_sep && !out.is_empty() {
                out.push('_');
            }
            pending_sep = false;
            out.push(ch.to_ascii_lowercase());
        } else {
            pending_sep = true;
        }
    }
    out
}

/// Like [`normalize_name`] without camelCase splitting (command options and
/// URL parameters are not camelCase).
fn normalize_plain(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut pending_sep = false;
    for ch in raw.trim().chars() {
        if ch.is_ascii_alphanumeric() {
            if pending_sep && !out.is_empty() {
                out.push('_');
            }
            pending_sep = false;
            out.push(ch.to_ascii_lowercase());
        } else {
            pending_sep = true;
        }
    }
    out
}

fn is_sensitive_normalized(normalized: &str) -> bool {
    if normalized.is_empty() || normalized.starts_with("no_") {
        return false;
    }
    SENSITIVE_FIELD_NAMES.contains(&normalized)
        || SENSITIVE_SUFFIXES
            .iter()
            .any(|suffix| normalized.ends_with(suffix))
        || SENSITIVE_ENDINGS
            .iter()
            .any(|ending| normalized.ends_with(ending))
}

/// True when a field/key name denotes a secret (`password`, `apiKey`,
/// `X-Api-Key`, `GITHUB_TOKEN`, `PGPASSWORD`, ...). `token_count`,
/// `max_tokens`, `author` and `password_file` are not secret names.
pub fn is_sensitive_name(raw: &str) -> bool {
    is_sensitive_normalized(&normalize_name(raw))
}

fn is_sensitive_query_name(normalized: &str) -> bool {
    is_sensitive_normalized(normalized) || EXTRA_QUERY_NAMES.contains(&normalized)
}

fn is_password_ish(normalized: &str) -> bool {
    ["password", "passwd", "passphrase", "secret"]
        .iter()
        .any(|word| normalized.contains(word))
}

// ---------------------------------------------------------------------------
// The redactor
// ---------------------------------------------------------------------------

/// Collects known secrets and renders redacted views. Cheap to clone.
#[derive(Clone, Default)]
pub struct SecretRedactor {
    known: Vec<Discovered>,
    seen: HashSet<Discovered>,
    overflowed: bool,
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

    fn catalog(&self) -> Catalog {
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

// ---------------------------------------------------------------------------
// Approval argument preview
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Catalog: known secrets prepared for replacement
// ---------------------------------------------------------------------------

#[derive(Clone)]
struct Entry {
    value: String,
    name: String,
    binding: bool,
}

#[derive(Clone, Default)]
struct Catalog {
    /// Eligible secrets, longest first, bindings first among equals,
    /// unique by value.
    entries: Vec<Entry>,
}

#[derive(Clone, Debug)]
struct Span {
    start: usize,
    end: usize,
    /// End of the span that names the marker (for the debug fingerprint).
    own_end: usize,
    name: String,
    binding: bool,
}

impl Catalog {
    fn new(known: &[Discovered]) -> Catalog {
        let mut candidates: Vec<&Discovered> = known
            .iter()
            .filter(|d| {
                d.value.chars().count() >= MIN_SECRET_CHARS && !is_ignorable_value(&d.value)
            })
            .collect();
        candidates.sort_by(|a, b| {
            b.value
                .len()
                .cmp(&a.value.len())
                .then(b.is_binding().cmp(&a.is_binding()))
        });
        let mut entries: Vec<Entry> = Vec::with_capacity(candidates.len());
        let mut values: HashSet<&str> = HashSet::new();
        for found in candidates {
            if !values.insert(found.value.as_str()) {
                continue;
            }
            entries.push(Entry {
                value: found.value.clone(),
                name: found.name(),
                binding: found.is_binding(),
            });
        }
        Catalog { entries }
    }

    fn is_exact(&self, s: &str) -> bool {
        self.entries.iter().any(|e| e.value == s)
    }

    fn global_spans(&self, s: &str) -> Vec<Span> {
        let mut spans = Vec::new();
        for entry in &self.entries {
            for (start, matched) in s.match_indices(entry.value.as_str()) {
                let end = start + matched.len();
                spans.push(Span {
                    start,
                    end,
                    own_end: end,
                    name: entry.name.clone(),
                    binding: entry.binding,
                });
            }
        }
        spans
    }

    /// Replaces known secrets, freshly detected positional secrets and
    /// `extra` spans in `s`.
    fn scrub(
        &self,
        s: &str,
        view: View,
        location: &str,
        exception: bool,
        extra: &[Span],
    ) -> String {
        if s.is_empty() {
            return String::new();
        }
        let mut spans = self.global_spans(s);
        for hit in detect(s, location, exception) {
            if let Some((start, end)) = hit.span {
                spans.push(Span {
                    start,
                    end,
                    own_end: end,
                    name: hit.found.name(),
                    binding: false,
                });
            }
        }
        spans.extend(extra.iter().cloned());
        if spans.is_empty() {
            return s.to_string();
        }
        build(s, &merge_spans(spans), view)
    }

    /// A source label with any known secret replaced by `<redacted>`.
    fn safe_label(&self, label: &str) -> String {
        let spans = merge_spans(self.global_spans(label));
        truncate_chars(&build(label, &spans, View::Model), MAX_LABEL_CHARS)
    }

    fn render(&self, v: &Value, view: View, path: &str, depth: usize, exception: bool) -> Value {
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
    fn string_leaks(&self, s: &str) -> bool {
        if self.entries.is_empty() || s.is_empty() {
            return false;
        }
        let markers = marker_spans(s);
        self.entries.iter().any(|entry| {
            s.match_indices(entry.value.as_str())
                .any(|(start, matched)| {
                    let end = start + matched.len();
                    !markers.iter().any(|&(a, b)| a <= start && end <= b)
                })
        })
    }

    fn value_leaks(&self, v: &Value, depth: usize) -> bool {
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

fn merge_spans(mut spans: Vec<Span>) -> Vec<Span> {
    spans.sort_by(|a, b| {
        a.start
            .cmp(&b.start)
            .then(b.end.cmp(&a.end))
            .then(b.binding.cmp(&a.binding))
    });
    let mut merged: Vec<Span> = Vec::with_capacity(spans.len());
    for span in spans {
        if let Some(last) = merged.last_mut() {
            if span.start < last.end {
                if span.end > last.end {
                    last.end = span.end;
                }
                continue;
            }
        }
        merged.push(span);
    }
    merged
}

fn build(s: &str, merged: &[Span], view: View) -> String {
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

fn marker(view: View, name: &str, binding: bool, secret: &str) -> String {
    match view {
        View::Model if !binding => REDACTED.to_string(),
        View::Model | View::Operator | View::Event | View::Durable => format!("<redacted:{name}>"),
        View::Debug => format!("<redacted:{name}:{}>", fingerprint(secret)),
    }
}

/// Marker-safe upper-case name: `[A-Za-z0-9_]` only, at most 64 chars.
fn marker_name(raw: &str) -> String {
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

fn insert_unique(map: &mut Map<String, Value>, key: String, value: Value) {
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

// ---------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------

fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

fn sub(s: &str, start: usize, end: usize) -> &str {
    s.get(start..end).unwrap_or("")
}

fn floor_boundary(s: &str, index: usize) -> usize {
    if index >= s.len() {
        return s.len();
    }
    let mut i = index;
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn truncate_chars(s: &str, limit: usize) -> String {
    match s.char_indices().nth(limit) {
        None => s.to_string(),
        Some((cut, _)) => {
            let omitted = s.get(cut..).map(|rest| rest.chars().count()).unwrap_or(0);
            format!("{}...[truncated {omitted} chars]", sub(s, 0, cut))
        }
    }
}

fn truncate_view_string(s: &str) -> String {
    truncate_chars(s, MAX_VIEW_STRING_CHARS)
}

fn join_path(path: &str, key: &str) -> String {
    let segment: String = key.chars().take(MAX_PATH_SEGMENT_CHARS).collect();
    if path.is_empty() {
        segment
    } else {
        format!("{path}.{segment}")
    }
}

fn location_or_text(path: &str) -> String {
    if path.is_empty() {
        "text".to_string()
    } else {
        path.to_string()
    }
}

/// Values that are placeholders, references or masks rather than secrets.
fn is_ignorable_value(value: &str) -> bool {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return true;
    }
    if trimmed.starts_with("<redacted")
        || trimmed == REDACTION_FAILED
        || trimmed.starts_with(TRUNCATED)
    {
        return true;
    }
    let lower = trimmed.to_ascii_lowercase();
    if NON_SECRET_LITERALS.contains(&lower.as_str()) {
        return true;
    }
    let mut chars = trimmed.chars();
    if let Some(first) = chars.next() {
        if trimmed.chars().count() > 1
            && chars.all(|c| c == first)
            && !first.is_ascii_alphanumeric()
        {
            return true; // "****", "...."
        }
        if (first == 'x' || first == 'X') && trimmed.chars().all(|c| c == 'x' || c == 'X') {
            return true; // "xxxx"
        }
    }
    is_env_reference(trimmed)
}

/// Alternative spellings of a secret value: trimmed, JSON-escaped.
fn secret_variants(value: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let trimmed = value.trim();
    if trimmed != value && !is_ignorable_value(trimmed) {
        out.push(trimmed.to_string());
    }
    if let Ok(encoded) = serde_json::to_string(value) {
        if let Some(inner) = encoded
            .strip_prefix('"')
            .and_then(|rest| rest.strip_suffix('"'))
        {
            if inner != value && !out.iter().any(|v| v == inner) {
                out.push(inner.to_string());
            }
        }
    }
    out
}

/// `$NAME`, `${NAME}`, `%NAME%`: a reference, the secret is elsewhere.
fn is_env_reference(value: &str) -> bool {
    let ident = |s: &str| {
        let mut chars = s.chars();
        matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if let Some(rest) = value.strip_prefix("${") {
        return rest.strip_suffix('}').is_some_and(ident);
    }
    if let Some(rest) = value.strip_prefix('$') {
        return ident(rest);
    }
    if let Some(rest) = value.strip_prefix('%') {
        return rest.strip_suffix('%').is_some_and(ident);
    }
    false
}

fn is_token_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'~' | b'+' | b'/' | b'=' | b'-')
}

/// Heuristic for a credential-looking word (used where prose is likely).
fn token_like(s: &str) -> bool {
    let len = s.chars().count();
    if len < 8 || !s.bytes().all(is_token_char) {
        return false;
    }
    let digit = s.bytes().any(|c| c.is_ascii_digit());
    let letter = s.bytes().any(|c| c.is_ascii_alphabetic());
    let upper = s.bytes().any(|c| c.is_ascii_uppercase());
    let lower = s.bytes().any(|c| c.is_ascii_lowercase());
    let symbol = s
        .bytes()
        .any(|c| matches!(c, b'.' | b'_' | b'~' | b'+' | b'/' | b'=' | b'-'));
    (digit && letter) || (len >= 20 && ((upper && lower) || symbol))
}

/// True when a value contains something beyond plain letters (a digit or
/// punctuation), i.e. it is not an ordinary word.
fn looks_valued(s: &str) -> bool {
    s.chars().any(|c| !c.is_alphabetic())
}

fn skip_inline_space(b: &[u8], mut p: usize) -> usize {
    while p < b.len() && matches!(at(b, p), b' ' | b'\t') {
        p += 1;
    }
    p
}

fn run_until(b: &[u8], start: usize, stop: &dyn Fn(u8) -> bool, cap: usize) -> usize {
    let mut end = start;
    while end < b.len() && end - start < cap && !stop(at(b, end)) {
        end += 1;
    }
    end
}

/// Reads a quoted (`"x"`, `'x'`, `\"x\"`) or bare value at `p`.
/// Returns the content span and whether it was quoted.
fn read_value(s: &str, p: usize, stop: &dyn Fn(u8) -> bool) -> Option<(usize, usize, bool)> {
    let b = s.as_bytes();
    if p >= b.len() {
        return None;
    }
    let first = at(b, p);
    if first == b'\\' && matches!(at(b, p + 1), b'"' | b'\'') {
        let quote = at(b, p + 1);
        let start = p + 2;
        let mut j = start;
        while j + 1 < b.len() && j - start < MAX_QUOTED_VALUE_BYTES {
            if at(b, j) == b'\\' && at(b, j + 1) == quote {
                return (j > start).then_some((start, j, true));
            }
            j += 1;
        }
        return read_bare(s, start, stop);
    }
    if first == b'"' || first == b'\'' {
        let start = p + 1;
        let mut j = start;
        while j < b.len() && j - start < MAX_QUOTED_VALUE_BYTES {
            if at(b, j) == first {
                return (j > start).then_some((start, j, true));
            }
            j += 1;
        }
        return read_bare(s, start, stop);
    }
    read_bare(s, p, stop)
}

fn read_bare(s: &str, p: usize, stop: &dyn Fn(u8) -> bool) -> Option<(usize, usize, bool)> {
    let b = s.as_bytes();
    let end = run_until(
        b,
        p,
        &|c| c.is_ascii_whitespace() || matches!(c, b'"' | b'\'') || stop(c),
        MAX_BARE_VALUE_BYTES,
    );
    let end = floor_boundary(s, end);
    (end > p).then_some((p, end, false))
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = at(b, i);
        if c == b'%' {
            let hi = (at(b, i + 1) as char).to_digit(16);
            let lo = (at(b, i + 2) as char).to_digit(16);
            if let (Some(hi), Some(lo)) = (hi, lo) {
                out.push(((hi << 4) | lo) as u8);
                i += 3;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits: u32 = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            _ => return None,
        };
        acc = ((acc << 6) | u32::from(v)) & 0x00ff_ffff;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xff) as u8);
        }
    }
    Some(out)
}

/// Secret values registered for a secret-named field value: the credential
/// of an authorization value (without scheme), plus decoded Basic parts;
/// otherwise the value itself.
fn field_secret_values(normalized_key: &str, s: &str) -> Vec<String> {
    if s.is_empty() {
        return Vec::new();
    }
    if normalized_key.ends_with("authorization") {
        let trimmed = s.trim();
        let mut words = trimmed.split_whitespace();
        if let (Some(scheme), Some(credential), None) = (words.next(), words.next(), words.next()) {
            let lower = scheme.to_ascii_lowercase();
            if AUTH_SCHEMES.contains(&lower.as_str())
                || scheme.bytes().all(|c| c.is_ascii_alphabetic())
            {
                let mut out = vec![credential.to_string()];
                if lower == "basic" {
                    out.extend(basic_parts(credential));
                }
                return out;
            }
        }
    }
    vec![s.to_string()]
}

/// Decoded `user:password` and `password` of an HTTP Basic credential.
fn basic_parts(credential: &str) -> Vec<String> {
    let Some(bytes) = base64_decode(credential) else {
        return Vec::new();
    };
    let Ok(decoded) = String::from_utf8(bytes) else {
        return Vec::new();
    };
    match decoded.split_once(':') {
        Some((_, password)) if !password.is_empty() => vec![decoded.clone(), password.to_string()],
        _ => Vec::new(),
    }
}

// ---------------------------------------------------------------------------
// Text detection
// ---------------------------------------------------------------------------

struct Hit {
    /// Byte span in the scanned string, or `None` for derived values
    /// (percent-decoded, Basic-decoded) that are only used globally.
    span: Option<(usize, usize)>,
    found: Discovered,
}

struct Scan<'a> {
    s: &'a str,
    b: &'a [u8],
    lower: String,
    location: &'a str,
    hits: Vec<Hit>,
    spans: HashSet<(usize, usize)>,
}

impl<'a> Scan<'a> {
    fn new(s: &'a str, location: &'a str) -> Scan<'a> {
        Scan {
            s,
            b: s.as_bytes(),
            lower: s.to_ascii_lowercase(),
            location,
            hits: Vec::new(),
            spans: HashSet::new(),
        }
    }

    fn push_span(&mut self, start: usize, end: usize, source: SecretSource) -> bool {
        let value = sub(self.s, start, end);
        if value.is_empty() || is_ignorable_value(value) {
            return false;
        }
        if !self.spans.insert((start, end)) {
            return true;
        }
        self.hits.push(Hit {
            span: Some((start, end)),
            found: Discovered {
                source,
                value: value.to_string(),
                location: self.location.to_string(),
            },
        });
        true
    }

    fn push_value(&mut self, value: String, source: SecretSource) {
        if value.is_empty() || is_ignorable_value(&value) {
            return;
        }
        self.hits.push(Hit {
            span: None,
            found: Discovered {
                source,
                value,
                location: self.location.to_string(),
            },
        });
    }

    fn positions(&self, needle: &str) -> Vec<usize> {
        self.lower.match_indices(needle).map(|(i, _)| i).collect()
    }
}

/// Runs every detector over `s`.
fn detect(s: &str, location: &str, exception: bool) -> Vec<Hit> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut scan = Scan::new(s, location);
    scan_urls(&mut scan);
    scan_authorization(&mut scan);
    scan_bearer(&mut scan);
    scan_command_options(&mut scan);
    scan_assignments(&mut scan);
    scan_token_shapes(&mut scan);
    if exception {
        scan_exception(&mut scan);
    }
    scan.hits
}

fn scan_urls(sc: &mut Scan<'_>) {
    let b = sc.b;
    let s = sc.s;
    let mut resume = 0;
    for i in
        sc.s.match_indices("://")
            .map(|(i, _)| i)
            .collect::<Vec<_>>()
    {
        if i < resume {
            continue;
        }
        let mut start = i;
        while start > 0 && i - start < 32 {
            let c = at(b, start - 1);
            if c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.') {
                start -= 1;
            } else {
                break;
            }
        }
        while start < i && !at(b, start).is_ascii_alphabetic() {
            start += 1;
        }
        if start == i {
            continue;
        }
        let authority_start = i + 3;
        let mut end = run_until(
            b,
            authority_start,
            &|c| c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'<' | b'>' | b'`' | b'\\'),
            MAX_URL_BYTES,
        );
        end = floor_boundary(s, end);
        while end > authority_start
            && matches!(
                at(b, end - 1),
                b')' | b']' | b'}' | b',' | b'.' | b';' | b':' | b'!' | b'?'
            )
        {
            end -= 1;
        }
        resume = end;
        let authority_end = (authority_start..end)
            .find(|&j| matches!(at(b, j), b'/' | b'?' | b'#'))
            .unwrap_or(end);
        if let Some(at_sign) = (authority_start..authority_end)
            .rev()
            .find(|&j| at(b, j) == b'@')
        {
            match (authority_start..at_sign).find(|&j| at(b, j) == b':') {
                Some(colon) => {
                    if colon + 1 < at_sign {
                        let raw = sub(s, colon + 1, at_sign).to_string();
                        sc.push_span(colon + 1, at_sign, SecretSource::UrlUserinfo);
                        let decoded = percent_decode(&raw);
                        if decoded != raw {
                            sc.push_value(decoded, SecretSource::UrlUserinfo);
                        }
                    }
                }
                None => {
                    let user = sub(s, authority_start, at_sign);
                    if username_is_token(user) {
                        sc.push_span(authority_start, at_sign, SecretSource::UrlUserinfo);
                    }
                }
            }
        }
        let query = (authority_end..end).find(|&j| at(b, j) == b'?');
        let hash = (authority_end..end).find(|&j| at(b, j) == b'#');
        if let Some(q) = query {
            let q_end = hash.filter(|&h| h > q).unwrap_or(end);
            scan_pairs(sc, q + 1, q_end);
        }
        if let Some(h) = hash {
            scan_pairs(sc, h + 1, end);
        }
    }
}

fn username_is_token(user: &str) -> bool {
    (user.chars().count() >= 16
        && user.bytes().all(is_token_char)
        && user.bytes().any(|c| c.is_ascii_digit()))
        || token_shape_kind(user).is_some()
}

fn scan_pairs(sc: &mut Scan<'_>, start: usize, end: usize) {
    let b = sc.b;
    let mut seg_start = start;
    let mut j = start;
    while j <= end {
        if j == end || at(b, j) == b'&' {
            let segment = sub(sc.s, seg_start, j);
            if let Some(eq) = segment.find('=') {
                let value_start = seg_start + eq + 1;
                if value_start < j {
                    let (name, value) = url::form_urlencoded::parse(segment.as_bytes())
                        .next()
                        .map(|(n, v)| (n.into_owned(), v.into_owned()))
                        .unwrap_or_default();
                    let normalized = normalize_plain(&name);
                    if is_sensitive_query_name(&normalized) {
                        let raw = sub(sc.s, value_start, j).to_string();
                        sc.push_span(value_start, j, SecretSource::UrlQuery(normalized.clone()));
                        if value != raw {
                            sc.push_value(value, SecretSource::UrlQuery(normalized));
                        }
                    }
                }
            }
            seg_start = j + 1;
        }
        j += 1;
    }
}

fn scan_authorization(sc: &mut Scan<'_>) {
    let b = sc.b;
    let mut resume = 0;
    for i in sc.positions("authorization") {
        if i < resume || (i > 0 && at(b, i - 1).is_ascii_alphanumeric()) {
            continue;
        }
        let mut p = i + "authorization".len();
        for _ in 0..2 {
            if matches!(at(b, p), b'"' | b'\'' | b'\\') {
                p += 1;
            }
        }
        p = skip_inline_space(b, p);
        let sep = at(b, p);
        if sep != b':' && sep != b'=' {
            continue;
        }
        p = skip_inline_space(b, p + 1);
        let mut quoted = false;
        if at(b, p) == b'\\' && matches!(at(b, p + 1), b'"' | b'\'') {
            p += 2;
            quoted = true;
        } else if matches!(at(b, p), b'"' | b'\'') {
            p += 1;
            quoted = true;
        }
        let stop = |c: u8| {
            c.is_ascii_whitespace()
                || matches!(c, b'"' | b'\'' | b'\\' | b',')
                || (sep == b'=' && c == b'&')
        };
        let w1_end = floor_boundary(sc.s, run_until(b, p, &stop, MAX_BARE_VALUE_BYTES));
        if w1_end == p {
            continue;
        }
        let w1 = sub(sc.s, p, w1_end).to_string();
        let after = skip_inline_space(b, w1_end);
        let scheme = w1.to_ascii_lowercase();
        if AUTH_SCHEMES.contains(&scheme.as_str()) && after > w1_end {
            let w2_end = floor_boundary(sc.s, run_until(b, after, &stop, MAX_BARE_VALUE_BYTES));
            if w2_end > after {
                let credential = sub(sc.s, after, w2_end).to_string();
                sc.push_span(after, w2_end, SecretSource::AuthorizationHeader);
                if scheme == "basic" {
                    for part in basic_parts(&credential) {
                        sc.push_value(part, SecretSource::AuthorizationHeader);
                    }
                }
                resume = w2_end;
                continue;
            }
        }
        if quoted || token_like(&w1) {
            sc.push_span(p, w1_end, SecretSource::AuthorizationHeader);
        }
        resume = w1_end;
    }
}

fn scan_bearer(sc: &mut Scan<'_>) {
    let b = sc.b;
    for i in sc.positions("bearer") {
        if i > 0 && at(b, i - 1).is_ascii_alphanumeric() {
            continue;
        }
        let p = i + "bearer".len();
        if !matches!(at(b, p), b' ' | b'\t') {
            continue;
        }
        let start = skip_inline_space(b, p);
        let end = run_until(b, start, &|c| !is_token_char(c), MAX_BARE_VALUE_BYTES);
        let word = sub(sc.s, start, end);
        if token_like(word) {
            sc.push_span(start, end, SecretSource::AuthorizationHeader);
        }
    }
}

fn is_key_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')
}

fn scan_assignments(sc: &mut Scan<'_>) {
    let b = sc.b;
    let mut i = 0;
    while i < b.len() {
        let sep = at(b, i);
        if sep != b'=' && sep != b':' {
            i += 1;
            continue;
        }
        if sep == b':' && (at(b, i + 1) == b':' || (at(b, i + 1) == b'/' && at(b, i + 2) == b'/')) {
            i += 1;
            continue;
        }
        if sep == b'='
            && (at(b, i + 1) == b'='
                || (i > 0 && matches!(at(b, i - 1), b'=' | b'!' | b'<' | b'>')))
        {
            i += 1;
            continue;
        }
        let mut key_end = i;
        let mut spaces = 0;
        while key_end > 0 && spaces < 3 && matches!(at(b, key_end - 1), b' ' | b'\t') {
            key_end -= 1;
            spaces += 1;
        }
        if key_end > 0 && matches!(at(b, key_end - 1), b'"' | b'\'') {
            key_end -= 1;
            if key_end > 0 && at(b, key_end - 1) == b'\\' {
                key_end -= 1;
            }
        }
        let mut key_start = key_end;
        while key_start > 0
            && key_end - key_start <= MAX_KEY_BYTES
            && is_key_byte(at(b, key_start - 1))
        {
            key_start -= 1;
        }
        if key_start == key_end || key_end - key_start > MAX_KEY_BYTES {
            i += 1;
            continue;
        }
        let key = sub(sc.s, key_start, key_end);
        if key.starts_with('-') {
            i += 1;
            continue;
        }
        let normalized = normalize_name(key);
        let lower_key = key.to_ascii_lowercase();
        let header = sep == b':' && SECRET_HEADER_NAMES.contains(&lower_key.as_str());
        if normalized.contains("authorization") || !(header || is_sensitive_normalized(&normalized))
        {
            i += 1;
            continue;
        }
        let p = skip_inline_space(b, i + 1);
        if header && (lower_key == "cookie" || lower_key == "set-cookie") {
            let end = floor_boundary(
                sc.s,
                run_until(
                    b,
                    p,
                    &|c| matches!(c, b'\n' | b'\r' | b'"' | b'\''),
                    MAX_BARE_VALUE_BYTES,
                ),
            );
            let end = {
                let mut e = end;
                while e > p && matches!(at(b, e - 1), b' ' | b'\t') {
                    e -= 1;
                }
                e
            };
            if end > p {
                sc.push_span(p, end, SecretSource::Header(normalized));
            }
            i = end.max(i + 1);
            continue;
        }
        let stop: &dyn Fn(u8) -> bool = if sep == b'=' {
            &|c| c == b'&'
        } else {
            &|c| matches!(c, b',' | b'}' | b']' | b';' | b'&')
        };
        let Some((value_start, value_end, quoted)) = read_value(sc.s, p, stop) else {
            i += 1;
            continue;
        };
        let value = sub(sc.s, value_start, value_end);
        if sep == b':'
            && !quoted
            && !header
            && !is_password_ish(&normalized)
            && !looks_valued(value)
        {
            i += 1;
            continue;
        }
        let source = if header {
            SecretSource::Header(normalized)
        } else {
            SecretSource::Assignment(normalized)
        };
        sc.push_span(value_start, value_end, source);
        i = value_end.max(i + 1);
    }
}

fn is_option_boundary(c: u8) -> bool {
    c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'(' | b'[' | b',')
}

/// The value of a command option whose name ends at `name_end`:
/// `--opt=value` or `--opt value` (a following `-x` is not a value).
fn option_value(s: &str, name_end: usize) -> Option<(usize, usize, bool)> {
    let b = s.as_bytes();
    match at(b, name_end) {
        b'=' => read_value(s, name_end + 1, &|_| false),
        b' ' | b'\t' => {
            let p = skip_inline_space(b, name_end);
            if p >= b.len() || at(b, p) == b'-' {
                None
            } else {
                read_value(s, p, &|_| false)
            }
        }
        _ => None,
    }
}

fn scan_command_options(sc: &mut Scan<'_>) {
    let b = sc.b;
    let s = sc.s;
    let has_mysql = sc.lower.contains("mysql") || sc.lower.contains("mariadb");
    let has_sshpass = sc.lower.contains("sshpass");
    let has_curl = sc.lower.contains("curl");
    let mut i = 0;
    while i < b.len() {
        if at(b, i) != b'-' || (i > 0 && !is_option_boundary(at(b, i - 1))) {
            i += 1;
            continue;
        }
        let dashes = if at(b, i + 1) == b'-' { 2 } else { 1 };
        let name_start = i + dashes;
        let name_end = run_until(
            b,
            name_start,
            &|c| !(c.is_ascii_alphanumeric() || c == b'_' || c == b'-'),
            MAX_KEY_BYTES,
        );
        if name_end == name_start {
            i = name_start.max(i + 1);
            continue;
        }
        let name = sub(s, name_start, name_end);
        let option = sub(s, i, name_end).to_string();
        let normalized = normalize_plain(name);
        let mut next = name_end;

        // mysql-family `-pSECRET` / sshpass `-pSECRET` (attached form).
        if dashes == 1 && at(b, name_start) == b'p' && (has_mysql || has_sshpass) {
            let value_start = name_start + 1;
            let c = at(b, value_start);
            if value_start < b.len() && !c.is_ascii_whitespace() && c != b'=' {
                if let Some((vs, ve, _)) = read_value(s, value_start, &|_| false) {
                    sc.push_span(vs, ve, SecretSource::CommandOption("-p".to_string()));
                    // `-password x` is ambiguous (mysql: password "assword";
                    // other tools: option `password`): redact both readings.
                    let long_form = matches!(
                        normalized.as_str(),
                        "password" | "passwd" | "passphrase" | "pass" | "passin" | "passout"
                    );
                    if !long_form {
                        i = ve.max(i + 1);
                        continue;
                    }
                }
            }
            if has_sshpass && name == "p" {
                if let Some((vs, ve, _)) = option_value(s, name_end) {
                    sc.push_span(vs, ve, SecretSource::CommandOption("-p".to_string()));
                    i = ve.max(i + 1);
                    continue;
                }
            }
        }

        let curl_user = has_curl
            && ((dashes == 1 && (name == "u" || name == "U"))
                || (dashes == 2 && (name == "user" || name == "proxy-user")));
        if curl_user {
            if let Some((vs, ve, _)) = option_value(s, name_end) {
                if let Some(colon) = sub(s, vs, ve).find(':') {
                    sc.push_span(
                        vs + colon + 1,
                        ve,
                        SecretSource::CommandOption(option.clone()),
                    );
                }
                next = ve;
            }
        } else if matches!(normalized.as_str(), "pass" | "passin" | "passout") {
            if let Some((vs, ve, _)) = option_value(s, name_end) {
                if sub(s, vs, ve).starts_with("pass:") {
                    sc.push_span(vs + 5, ve, SecretSource::CommandOption(option.clone()));
                }
                next = ve;
            }
        } else if name.len() >= 2 && is_sensitive_normalized(&normalized) {
            if let Some((vs, ve, _)) = option_value(s, name_end) {
                sc.push_span(vs, ve, SecretSource::CommandOption(option.clone()));
                next = ve;
            }
        }
        i = next.max(i + 1);
    }
}

struct Shape {
    prefix: &'static str,
    kind: &'static str,
    body: fn(u8) -> bool,
    min_body: usize,
    exact_body: bool,
    need_digit: bool,
}

/// `(prefix, kind, body charset, min body length, exact length, needs a digit)`.
const fn shape(
    prefix: &'static str,
    kind: &'static str,
    body: fn(u8) -> bool,
    min_body: usize,
    exact_body: bool,
    need_digit: bool,
) -> Shape {
    Shape {
        prefix,
        kind,
        body,
        min_body,
        exact_body,
        need_digit,
    }
}

fn body_alnum(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}
fn body_alnum_dash_underscore(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}
fn body_alnum_underscore(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}
fn body_alnum_dash(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}
fn body_upper_digit(c: u8) -> bool {
    c.is_ascii_uppercase() || c.is_ascii_digit()
}
fn body_jwt(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')
}

const SHAPES: &[Shape] = &[
    shape(
        "sk-",
        "api_key",
        body_alnum_dash_underscore,
        20,
        false,
        true,
    ),
    shape(
        "github_pat_",
        "github_token",
        body_alnum_underscore,
        22,
        false,
        false,
    ),
    shape("ghp_", "github_token", body_alnum, 30, false, false),
    shape("gho_", "github_token", body_alnum, 30, false, false),
    shape("ghu_", "github_token", body_alnum, 30, false, false),
    shape("ghs_", "github_token", body_alnum, 30, false, false),
    shape("ghr_", "github_token", body_alnum, 30, false, false),
    shape(
        "glpat-",
        "gitlab_token",
        body_alnum_dash_underscore,
        20,
        false,
        false,
    ),
    shape("xoxb-", "slack_token", body_alnum_dash, 10, false, true),
    shape("xoxp-", "slack_token", body_alnum_dash, 10, false, true),
    shape("xoxa-", "slack_token", body_alnum_dash, 10, false, true),
    shape("xoxr-", "slack_token", body_alnum_dash, 10, false, true),
    shape("xoxs-", "slack_token", body_alnum_dash, 10, false, true),
    shape("xoxe-", "slack_token", body_alnum_dash, 10, false, true),
    shape(
        "AKIA",
        "aws_access_key_id",
        body_upper_digit,
        16,
        true,
        false,
    ),
    shape(
        "ASIA",
        "aws_access_key_id",
        body_upper_digit,
        16,
        true,
        false,
    ),
    shape(
        "AIza",
        "google_api_key",
        body_alnum_dash_underscore,
        30,
        false,
        false,
    ),
    shape("eyJ", "jwt", body_jwt, 20, false, false),
];

/// Kind of a whole-string token shape, if `s` is exactly one.
fn token_shape_kind(s: &str) -> Option<&'static str> {
    SHAPES.iter().find_map(|shape| {
        let body = s.strip_prefix(shape.prefix)?;
        shape_body_ok(shape, body).then_some(shape.kind)
    })
}

fn shape_body_ok(shape: &Shape, body: &str) -> bool {
    let len = body.len();
    if len < shape.min_body || (shape.exact_body && len != shape.min_body) {
        return false;
    }
    if !body.bytes().all(shape.body) {
        return false;
    }
    if shape.need_digit && !body.bytes().any(|c| c.is_ascii_digit()) {
        return false;
    }
    if shape.kind == "jwt" {
        let segments: Vec<&str> = body.split('.').collect();
        return segments.len() >= 3
            && segments.first().is_some_and(|seg| seg.len() >= 5)
            && segments.get(1).is_some_and(|seg| seg.len() >= 8);
    }
    true
}

fn scan_token_shapes(sc: &mut Scan<'_>) {
    let b = sc.b;
    let s = sc.s;
    for shape in SHAPES {
        let mut resume = 0;
        for (start, _) in s.match_indices(shape.prefix).collect::<Vec<_>>() {
            if start < resume || (start > 0 && body_alnum_dash_underscore(at(b, start - 1))) {
                continue;
            }
            let body_start = start + shape.prefix.len();
            let mut body_end =
                run_until(b, body_start, &|c| !(shape.body)(c), MAX_BARE_VALUE_BYTES);
            resume = body_end;
            if shape.kind == "jwt" {
                while body_end > body_start && at(b, body_end - 1) == b'.' {
                    body_end -= 1;
                }
            }
            if shape_body_ok(shape, sub(s, body_start, body_end)) {
                sc.push_span(
                    start,
                    body_end,
                    SecretSource::TokenShape(shape.kind.to_string()),
                );
            }
        }
    }
    // PEM private key blocks.
    let mut resume = 0;
    for start in
        sc.s.match_indices("-----BEGIN ")
            .map(|(i, _)| i)
            .collect::<Vec<_>>()
    {
        if start < resume {
            continue;
        }
        let header_start = start + "-----BEGIN ".len();
        let Some(header_len) = s.get(header_start..).and_then(|rest| rest.find("-----")) else {
            continue;
        };
        if header_len > 64
            || !sub(s, header_start, header_start + header_len).contains("PRIVATE KEY")
        {
            continue;
        }
        let body_start = header_start + header_len + 5;
        let end = s
            .get(body_start..)
            .and_then(|rest| rest.find("-----END "))
            .and_then(|rel| {
                let end_marker = body_start + rel + "-----END ".len();
                s.get(end_marker..)
                    .and_then(|rest| rest.find("-----"))
                    .map(|close| end_marker + close + 5)
            })
            .unwrap_or(s.len());
        resume = end;
        sc.push_span(
            start,
            end,
            SecretSource::TokenShape("private_key".to_string()),
        );
    }
}

fn scan_exception(sc: &mut Scan<'_>) {
    let b = sc.b;
    for word in EXCEPTION_WORDS {
        let mut resume = 0;
        for i in sc.positions(word) {
            if i < resume || (i > 0 && at(b, i - 1).is_ascii_alphanumeric()) {
                continue;
            }
            let mut p = i + word.len();
            if at(b, p) == b's' {
                p += 1;
            }
            if at(b, p).is_ascii_alphanumeric() || at(b, p) == b'_' {
                continue;
            }
            let rest = sc.lower.get(p..).unwrap_or("");
            for filler in [" provided", " is", " was", " value", " used"] {
                if rest.starts_with(filler) && !at(b, p + filler.len()).is_ascii_alphanumeric() {
                    p += filler.len();
                    break;
                }
            }
            p = skip_inline_space(b, p);
            let mut separated = false;
            if matches!(at(b, p), b':' | b'=') {
                separated = true;
                p = skip_inline_space(b, p + 1);
            }
            let c = at(b, p);
            if matches!(c, b'"' | b'\'' | b'`') {
                let start = p + 1;
                let end = run_until(b, start, &|x| x == c || x == b'\n', 512);
                resume = end;
                if at(b, end) == c && end > start {
                    sc.push_span(
                        start,
                        floor_boundary(sc.s, end),
                        SecretSource::ExceptionText,
                    );
                }
                continue;
            }
            let end = floor_boundary(
                sc.s,
                run_until(
                    b,
                    p,
                    &|x| x.is_ascii_whitespace() || matches!(x, b'"' | b'\'' | b',' | b';' | b')'),
                    MAX_BARE_VALUE_BYTES,
                ),
            );
            resume = end;
            let mut value_end = end;
            while value_end > p && matches!(at(b, value_end - 1), b'.' | b':') {
                value_end -= 1;
            }
            let value = sub(sc.s, p, value_end);
            let accept = if separated {
                token_like(value)
            } else {
                token_like(value) && value.chars().count() >= 12
            };
            if accept {
                sc.push_span(p, value_end, SecretSource::ExceptionText);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// argv arrays: ["mysql", "-u", "root", "-pSECRET"], ["--token", "x"]
// ---------------------------------------------------------------------------

/// Joins the string elements of an array as a command line, detects command
/// options across elements and maps positional hits back to the element.
fn argv_positional(items: &[&Value], location: &str) -> Vec<(usize, Hit)> {
    let mut offsets: Vec<(usize, usize, usize)> = Vec::new(); // (index, start, end)
    let mut joined = String::new();
    for (index, item) in items.iter().enumerate() {
        let Value::String(s) = item else {
            continue;
        };
        if !joined.is_empty() {
            joined.push(' ');
        }
        // Quote elements with whitespace so a value element stays whole.
        let quote = if !s.bytes().any(|c| c.is_ascii_whitespace()) {
            None
        } else if !s.contains('"') {
            Some('"')
        } else if !s.contains('\'') {
            Some('\'')
        } else {
            None
        };
        if let Some(q) = quote {
            joined.push(q);
        }
        let start = joined.len();
        joined.push_str(s);
        offsets.push((index, start, joined.len()));
        if let Some(q) = quote {
            joined.push(q);
        }
    }
    if offsets.len() < 2 {
        return Vec::new();
    }
    let mut scan = Scan::new(&joined, location);
    scan_command_options(&mut scan);
    let mut out = Vec::new();
    for hit in scan.hits {
        let Some((start, end)) = hit.span else {
            continue;
        };
        if let Some(&(index, elem_start, _)) =
            offsets.iter().find(|&&(_, a, b)| a <= start && end <= b)
        {
            out.push((
                index,
                Hit {
                    span: Some((start - elem_start, end - elem_start)),
                    found: hit.found,
                },
            ));
        }
    }
    out
}

fn argv_hits(items: &[&Value], location: &str) -> Vec<Hit> {
    argv_positional(items, location)
        .into_iter()
        .map(|(_, hit)| hit)
        .collect()
}

fn argv_extra_spans(items: &[&Value], location: &str) -> Vec<(usize, Span)> {
    argv_positional(items, location)
        .into_iter()
        .filter_map(|(index, hit)| {
            let (start, end) = hit.span?;
            Some((
                index,
                Span {
                    start,
                    end,
                    own_end: end,
                    name: hit.found.name(),
                    binding: false,
                },
            ))
        })
        .collect()
}

#[cfg(test)]
#[path = "redactor_tests.rs"]
mod tests;

//! Known secrets: what was discovered ([`Discovered`], [`SecretSource`]) and
//! the [`Catalog`] that replaces every known value wherever it occurs, found
//! in one pass by an Aho-Corasick automaton.

use aho_corasick::{AhoCorasick, MatchKind};

use super::*;

#[cfg(test)]
#[path = "known_tests.rs"]
mod tests;

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

    pub(super) fn is_binding(&self) -> bool {
        matches!(self.source, SecretSource::Binding(_))
    }
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

#[derive(Clone)]
pub(super) struct Entry {
    pub(super) value: String,
    pub(super) name: String,
    pub(super) binding: bool,
}

#[derive(Clone, Default)]
pub(crate) struct Catalog {
    /// Eligible secrets, longest first, bindings first among equals,
    /// unique by value.
    pub(super) entries: Vec<Entry>,
    /// One automaton over every entry's value (pattern `i` is `entries[i]`),
    /// so all known secrets are found in a single pass; `None` when there
    /// are no entries or the automaton could not be built, in which case the
    /// entries are searched one by one.
    matcher: Option<AhoCorasick>,
}

#[derive(Clone, Debug)]
pub(crate) struct Span {
    pub(super) start: usize,
    pub(super) end: usize,
    /// End of the span that names the marker (for the debug fingerprint).
    pub(super) own_end: usize,
    pub(super) name: String,
    pub(super) binding: bool,
}

impl Catalog {
    pub(super) fn new(known: &[Discovered]) -> Catalog {
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
        let matcher = if entries.is_empty() {
            None
        } else {
            AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .build(entries.iter().map(|e| e.value.as_bytes()))
                .ok()
        };
        Catalog { entries, matcher }
    }

    /// Every occurrence of every known secret in `s` as `(entry index, start,
    /// end)`: for each secret, the leftmost non-overlapping occurrences that
    /// `str::match_indices` would report, found for all secrets in one pass.
    /// Occurrences of different secrets may overlap; callers merge them.
    pub(super) fn occurrences(&self, s: &str) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        let Some(matcher) = &self.matcher else {
            for (index, entry) in self.entries.iter().enumerate() {
                for (start, matched) in s.match_indices(entry.value.as_str()) {
                    out.push((index, start, start + matched.len()));
                }
            }
            return out;
        };
        // Overlapping search reports every occurrence; per secret, the ones
        // that overlap an earlier accepted occurrence of the same secret are
        // dropped, which is exactly `match_indices` (a secret's matches come
        // in increasing start order because its length is fixed). Matches of
        // valid UTF-8 patterns in valid UTF-8 text lie on char boundaries.
        let mut next_start = vec![0usize; self.entries.len()];
        for m in matcher.find_overlapping_iter(s) {
            let index = m.pattern().as_usize();
            let Some(next) = next_start.get_mut(index) else {
                continue;
            };
            if m.start() >= *next {
                *next = m.end();
                out.push((index, m.start(), m.end()));
            }
        }
        out
    }

    pub(crate) fn is_exact(&self, s: &str) -> bool {
        self.entries.iter().any(|e| e.value == s)
    }

    pub(super) fn global_spans(&self, s: &str) -> Vec<Span> {
        self.occurrences(s)
            .into_iter()
            .filter_map(|(index, start, end)| {
                let entry = self.entries.get(index)?;
                Some(Span {
                    start,
                    end,
                    own_end: end,
                    name: entry.name.clone(),
                    binding: entry.binding,
                })
            })
            .collect()
    }

    /// Replaces known secrets, freshly detected positional secrets and
    /// `extra` spans in `s`.
    pub(crate) fn scrub(
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
    pub(super) fn safe_label(&self, label: &str) -> String {
        let spans = merge_spans(self.global_spans(label));
        truncate_chars(&build(label, &spans, View::Model), MAX_LABEL_CHARS)
    }
}

pub(super) fn merge_spans(mut spans: Vec<Span>) -> Vec<Span> {
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

/// Values that are placeholders, references or masks rather than secrets.
pub(super) fn is_ignorable_value(value: &str) -> bool {
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
pub(super) fn secret_variants(value: &str) -> Vec<String> {
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

/// Secret values registered for a secret-named field value: the credential
/// of an authorization value (without scheme), plus decoded Basic parts;
/// otherwise the value itself.
pub(super) fn field_secret_values(normalized_key: &str, s: &str) -> Vec<String> {
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
pub(super) fn basic_parts(credential: &str) -> Vec<String> {
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

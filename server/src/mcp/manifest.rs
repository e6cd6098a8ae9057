//! MCP server declarations, `agent/mcp/<server_id>.yaml`, in the Python
//! project's format, and the pure rules around them: validation, the tool
//! filter (`tools.include` / `tools.exclude`, `*` globs), the exposed tool
//! names (`<server>__<tool>`: sanitised, unique, at most 64 characters) and
//! the declaration's fingerprint (a changed declaration is a new
//! connection). No I/O.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer, Serialize};
use serde_yaml_ng::Value;
use sha2::{Digest, Sha256};

use crate::wire::{ApprovalPolicy, Risk};

/// Separator between the server and the tool in an exposed name.
pub const SEPARATOR: &str = "__";
/// Longest server prefix of an exposed name.
pub const MAX_PREFIX: usize = 30;
/// Longest exposed name (what providers accept).
pub const MAX_NAME: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    #[default]
    Stdio,
    StreamableHttp,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::StreamableHttp => "streamable_http",
        }
    }
}

/// `tools:` of a declaration.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolFilter {
    #[serde(default, deserialize_with = "string_list")]
    pub include: Vec<String>,
    #[serde(default, deserialize_with = "string_list")]
    pub exclude: Vec<String>,
}

impl ToolFilter {
    /// Listed by `include` (or no `include`), and by no `exclude`.
    pub fn selects(&self, tool: &str) -> bool {
        let included =
            self.include.is_empty() || self.include.iter().any(|p| glob_matches(p, tool));
        included && !self.exclude.iter().any(|p| glob_matches(p, tool))
    }
}

/// One validated declaration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerManifest {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub transport: Transport,
    #[serde(default, deserialize_with = "optional_text")]
    pub command: Option<String>,
    #[serde(default, deserialize_with = "string_list")]
    pub args: Vec<String>,
    #[serde(default, deserialize_with = "string_map")]
    pub env: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "optional_text")]
    pub cwd: Option<String>,
    #[serde(default, deserialize_with = "optional_text")]
    pub url: Option<String>,
    #[serde(default, deserialize_with = "string_map")]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub tools: ToolFilter,
    #[serde(default = "medium")]
    pub risk: Risk,
    #[serde(default = "prompt")]
    pub approval_policy: ApprovalPolicy,
    #[serde(default, deserialize_with = "optional_text")]
    pub capability: Option<String>,
    #[serde(default = "thirty")]
    pub connect_timeout_seconds: f64,
    #[serde(default = "sixty")]
    pub timeout_seconds: f64,
    #[serde(default)]
    pub supports_parallel_tool_calls: bool,
}

fn yes() -> bool {
    true
}
fn medium() -> Risk {
    Risk::Medium
}
fn prompt() -> ApprovalPolicy {
    ApprovalPolicy::Prompt
}
fn thirty() -> f64 {
    30.0
}
fn sixty() -> f64 {
    60.0
}

impl ServerManifest {
    /// Validate a parsed file (an empty file is an empty mapping).
    pub fn parse(raw: &Value) -> Result<Self, String> {
        let manifest: ServerManifest =
            serde_path_to_error::deserialize(raw.clone()).map_err(|e| {
                let path = e.path().to_string();
                if path == "." {
                    e.inner().to_string()
                } else {
                    format!("{path}: {}", e.inner())
                }
            })?;
        for (name, value) in [
            ("connect_timeout_seconds", manifest.connect_timeout_seconds),
            ("timeout_seconds", manifest.timeout_seconds),
        ] {
            if !(value.is_finite() && value > 0.0) {
                return Err(format!("{name} must be a positive number of seconds"));
            }
        }
        match manifest.transport {
            Transport::Stdio if manifest.command.is_none() => {
                Err("stdio MCP server requires command".into())
            }
            Transport::StreamableHttp => match manifest.url.as_deref() {
                None => Err("streamable_http MCP server requires url".into()),
                Some(u) if !(u.starts_with("http://") || u.starts_with("https://")) => {
                    Err("streamable_http MCP server url must start with http:// or https://".into())
                }
                Some(_) => Ok(manifest),
            },
            Transport::Stdio => Ok(manifest),
        }
    }

    /// The capability a connection needs: always `mcp.connect:<server>`.
    pub fn connect_capability(server: &str) -> String {
        format!("mcp.connect:{server}")
    }

    /// The capability each call needs: the manifest's, or `mcp.call:<server>`.
    pub fn call_capability(&self, server: &str) -> String {
        self.capability
            .clone()
            .unwrap_or_else(|| format!("mcp.call:{server}"))
    }

    /// Names of the values that must never be shown (env and header values).
    pub fn secret_values(&self) -> Vec<&str> {
        self.env
            .values()
            .chain(self.headers.values())
            .map(String::as_str)
            .filter(|v| !v.is_empty())
            .collect()
    }
}

/// Identity of a declaration: the file as parsed, canonically. A changed
/// declaration has another fingerprint, so its connection is a new one.
pub fn fingerprint(server: &str, raw: &Value) -> String {
    let canonical = serde_json::to_string(&canonical_json(raw)).unwrap_or_default();
    let digest = Sha256::digest(format!("{server}\n{canonical}").as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// YAML to JSON with sorted keys (serde_json's map is ordered).
fn canonical_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Number(n) => serde_json::from_str(&n.to_string()).unwrap_or(serde_json::Value::Null),
        Value::String(s) => serde_json::Value::String(s.clone()),
        Value::Sequence(items) => {
            serde_json::Value::Array(items.iter().map(canonical_json).collect())
        }
        Value::Mapping(m) => {
            let sorted: BTreeMap<String, serde_json::Value> = m
                .iter()
                .map(|(k, v)| (scalar_text(k).unwrap_or_default(), canonical_json(v)))
                .collect();
            serde_json::Value::Object(sorted.into_iter().collect())
        }
        Value::Tagged(t) => canonical_json(&t.value),
    }
}

/// `*` matches any run of characters; without `*` the match is exact.
pub fn glob_matches(pattern: &str, value: &str) -> bool {
    let pattern = pattern.trim();
    if pattern.is_empty() {
        return false;
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == value;
    }
    let (first, rest) = (parts[0], &parts[1..]);
    let Some(mut tail) = value.strip_prefix(first) else {
        return false;
    };
    let (last, middle) = match rest.split_last() {
        Some(split) => split,
        None => return true,
    };
    for part in middle {
        match tail.find(part) {
            Some(i) => tail = &tail[i + part.len()..],
            None => return false,
        }
    }
    tail.len() >= last.len() && tail.ends_with(last)
}

/// Characters outside `[A-Za-z0-9_-]` become `-`; a name must start with a
/// letter (else `fallback-` is put before it); at most `max` characters.
fn sanitize(raw: &str, fallback: &str, max: Option<usize>) -> String {
    let cleaned: String = raw
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let cleaned = if cleaned.is_empty() {
        fallback.to_owned()
    } else {
        cleaned
    };
    let safe = if cleaned.starts_with(|c: char| c.is_ascii_alphabetic()) {
        cleaned
    } else {
        format!("{fallback}-{cleaned}")
    };
    match max {
        Some(n) => safe.chars().take(n).collect(),
        None => safe,
    }
}

/// The prefix of a server's tools, unique (case-insensitively) among `used`.
pub fn server_prefix(server: &str, used: &mut BTreeSet<String>) -> String {
    let base = sanitize(server, "mcp", Some(MAX_PREFIX));
    let mut candidate = base.clone();
    let mut index = 2;
    while used.contains(&candidate.to_lowercase()) {
        let suffix = format!("-{index}");
        let keep = MAX_PREFIX.saturating_sub(suffix.len()).max(1);
        candidate = format!("{}{suffix}", base.chars().take(keep).collect::<String>());
        index += 1;
    }
    used.insert(candidate.to_lowercase());
    candidate
}

/// `<prefix>__<tool>`, at most [`MAX_NAME`] characters, unique
/// (case-insensitively) among `reserved` (built-ins and earlier tools),
/// which it joins.
pub fn exposed_name(prefix: &str, tool: &str, reserved: &mut BTreeSet<String>) -> String {
    let cleaned = sanitize(tool, "tool", None);
    let room = MAX_NAME
        .saturating_sub(prefix.len() + SEPARATOR.len())
        .max(1);
    let truncated: String = cleaned.chars().take(room).collect();
    let mut candidate = format!("{prefix}{SEPARATOR}{truncated}");
    let mut index = 2;
    while reserved.contains(&candidate.to_lowercase()) {
        let suffix = format!("-{index}");
        let keep = room.saturating_sub(suffix.len()).max(1);
        let head: String = truncated.chars().take(keep).collect();
        candidate = format!("{prefix}{SEPARATOR}{head}{suffix}");
        index += 1;
    }
    reserved.insert(candidate.to_lowercase());
    candidate
}

// ---------------------------------------------------------------------------
// Lenient scalars, as the original coerces them.

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(if *b { "True" } else { "False" }.to_owned()),
        Value::Tagged(t) => scalar_text(&t.value),
        _ => None,
    }
}

fn optional_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    use serde::de::Error;
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        v => {
            let text = scalar_text(&v).ok_or_else(|| D::Error::custom("expected a string"))?;
            let text = text.trim();
            Ok((!text.is_empty()).then(|| text.to_owned()))
        }
    }
}

fn string_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    use serde::de::Error;
    match Value::deserialize(d)? {
        Value::Null => Ok(Vec::new()),
        Value::Sequence(items) => {
            let mut out: Vec<String> = Vec::new();
            for item in &items {
                let text = scalar_text(item)
                    .ok_or_else(|| D::Error::custom("expected a list of strings"))?;
                out.push(text);
            }
            Ok(out)
        }
        _ => Err(D::Error::custom("expected a list of strings")),
    }
}

fn string_map<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    use serde::de::Error;
    match Value::deserialize(d)? {
        Value::Null => Ok(BTreeMap::new()),
        Value::Mapping(m) => {
            let mut out = BTreeMap::new();
            for (k, v) in &m {
                let key = scalar_text(k).ok_or_else(|| D::Error::custom("expected string keys"))?;
                let value = match v {
                    Value::Null => "None".to_owned(),
                    other => scalar_text(other)
                        .ok_or_else(|| D::Error::custom("expected string values"))?,
                };
                out.insert(key, value);
            }
            Ok(out)
        }
        _ => Err(D::Error::custom("expected a mapping of strings")),
    }
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;

//! The runner's wire protocol (newline-delimited JSON over the child's
//! stdin/stdout) and the conversion of what a tool returned into a typed
//! [`ToolOutcome`]. Pure: no processes here.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::wire::{ToolOutcome, ToolStatus};

/// Longest line the host reads from a runner; longer is garbage.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;
/// Characters of an error message a failed call carries.
pub const MAX_ERROR_CHARS: usize = 2_000;
/// Result keys the host owns: whatever a tool returns for them is ignored.
pub const RESERVED_KEYS: &[&str] = &["executionStarted", "denial", "approval"];

/// One line from the runner.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum FromRunner {
    Ready {
        #[serde(default)]
        pid: Option<u32>,
    },
    Capability {
        id: u64,
        name: String,
        #[serde(default)]
        slot_path: Option<String>,
    },
    /// `ctx.state.<scope>.<action>(target, value)` of a slot (answered
    /// with [`host_reply`], as every request below).
    State {
        id: u64,
        scope: String,
        action: String,
        #[serde(default)]
        target: String,
        #[serde(default)]
        value: Value,
    },
    /// `await ctx.tools.call(name, arguments)` of a slot.
    Tool {
        id: u64,
        name: String,
        #[serde(default)]
        arguments: Value,
    },
    /// An HTTP request made through `urllib` in the runner: the host makes
    /// it through the URL policy (answered with [`host_reply`]).
    Http {
        id: u64,
        method: String,
        url: String,
        #[serde(default)]
        headers: Vec<(String, String)>,
        /// Base64.
        #[serde(default)]
        body: Option<String>,
        #[serde(default)]
        timeout: Option<f64>,
    },
    Output {
        id: u64,
        #[serde(default)]
        stream: Option<String>,
        text: String,
    },
    Result {
        id: u64,
        value: Value,
    },
    Error {
        id: u64,
        #[serde(default)]
        kind: String,
        #[serde(default, rename = "type")]
        error_type: String,
        #[serde(default)]
        message: String,
    },
}

/// Parse one runner line; `None` for anything that is not a known message.
pub fn parse_line(line: &str) -> Option<FromRunner> {
    if line.len() > MAX_LINE_BYTES {
        return None;
    }
    serde_json::from_str(line).ok()
}

/// What the runner needs for one call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallMessage<'a> {
    pub id: u64,
    pub name: &'a str,
    /// The tool folder as the runner sees it (its read-only copy).
    pub dir: &'a str,
    /// The core's shared `agent/lib` copy, when it has one.
    pub lib: Option<&'a str>,
    pub slot_path: &'a str,
    pub module: &'a str,
    pub function: &'a str,
    pub turn: Value,
    pub workspace: &'a str,
    pub args: &'a Value,
}

impl CallMessage<'_> {
    /// The request line (with its newline).
    pub fn line(&self) -> String {
        let mut s = json!({
            "op": "call", "id": self.id,
            "tool": {"name": self.name, "dir": self.dir, "lib": self.lib, "slot_path": self.slot_path,
                     "module": self.module, "function": self.function},
            "turn": self.turn, "workspace": self.workspace, "args": self.args,
        })
        .to_string();
        s.push('\n');
        s
    }
}

/// What the runner needs to run one bootstrap/input/output slot.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotMessage<'a> {
    pub id: u64,
    /// The slot id (its folder name).
    pub name: &'a str,
    pub dir: &'a str,
    pub lib: Option<&'a str>,
    pub slot_path: &'a str,
    pub module: &'a str,
    pub function: &'a str,
    /// `bootstrap`, `input` or `output`.
    pub phase: &'a str,
    /// `serial` or `parallel`.
    pub lane: &'a str,
    /// The slot's default history policy (`persist`, `model_hidden`, `transient`).
    pub history_policy: &'a str,
    pub turn: Value,
    pub workspace: &'a str,
    /// `input`, `output` and `history` as the phase offers them.
    pub context: &'a Value,
}

impl SlotMessage<'_> {
    /// The request line (with its newline).
    pub fn line(&self) -> String {
        let mut m = json!({
            "op": "slot", "id": self.id,
            "slot": {"name": self.name, "dir": self.dir, "lib": self.lib, "slot_path": self.slot_path,
                     "module": self.module, "function": self.function, "phase": self.phase,
                     "lane": self.lane, "history_policy": self.history_policy},
            "turn": self.turn, "workspace": self.workspace,
        });
        if let (Value::Object(out), Value::Object(extra)) = (&mut m, self.context) {
            for key in ["input", "output", "history", "session_root"] {
                if let Some(v) = extra.get(key) {
                    out.insert(key.to_owned(), v.clone());
                }
            }
        }
        let mut s = m.to_string();
        s.push('\n');
        s
    }
}

/// The host's answer to a capability question.
pub fn capability_reply(id: u64, allowed: bool) -> String {
    let mut s = json!({"op": "capability", "id": id, "allowed": allowed}).to_string();
    s.push('\n');
    s
}

/// The host's answer to a slot's request (`state`, `tool`): the
/// value, or why it was refused (`kind` `capability`, `invalid` or
/// `unavailable`; the runner raises `CapabilityDenied`, `ValueError` or
/// `RuntimeError`).
pub fn host_reply(id: u64, answer: Result<Value, (&str, String)>) -> String {
    let mut s = match answer {
        Ok(value) => json!({"op": "host", "id": id, "ok": true, "value": value}),
        Err((kind, message)) => json!({"op": "host", "id": id, "ok": false,
            "kind": kind, "message": clip(&message, MAX_ERROR_CHARS)}),
    }
    .to_string();
    s.push('\n');
    s
}

fn clip(s: &str, max: usize) -> String {
    crate::history::clip(s, max)
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn without_reserved(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !RESERVED_KEYS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A returned value (a `ToolResult`, a dict or text, as the runner sent
/// it) as an outcome: `model_output` replaces what the model sees,
/// `display_output` what the tool card shows; `is_error` makes it
/// `failed`; the host's lifecycle keys are dropped.
pub fn outcome_from_value(value: &Value) -> ToolOutcome {
    let obj = match value {
        Value::Object(map) => map.clone(),
        other => {
            let mut m = Map::new();
            m.insert(
                "content".into(),
                Value::String(text_of(other).unwrap_or_default()),
            );
            m
        }
    };
    let obj = match without_reserved(&Value::Object(obj)) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let content = obj.get("content").and_then(text_of).unwrap_or_default();
    let model = obj.get("model_output").and_then(text_of);
    let display = obj.get("display_output").and_then(text_of);
    let is_error = obj
        .get("is_error")
        .or_else(|| obj.get("isError"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut data = Map::new();
    if let Some(d) = obj.get("data").filter(|d| !d.is_null()) {
        data.insert("data".into(), without_reserved(d));
    }
    if let Some(d) = display {
        data.insert("display_output".into(), Value::String(d));
    }
    if model.is_some() {
        data.insert("content".into(), Value::String(content.clone()));
    }
    ToolOutcome {
        status: if is_error {
            ToolStatus::Failed
        } else {
            ToolStatus::Succeeded
        },
        content: Value::String(model.unwrap_or(content)),
        data: if data.is_empty() {
            Value::Null
        } else {
            Value::Object(data)
        },
    }
}

/// A slot that raised, as one line for its `slot.failed` event and the
/// turn's error.
pub fn slot_error(kind: &str, error_type: &str, message: &str) -> String {
    let message = clip(message, MAX_ERROR_CHARS);
    match kind {
        "capability" | "entrypoint" => message,
        _ => {
            let error_type = clip(error_type, 80);
            if message.is_empty() {
                format!("the slot raised {error_type}")
            } else {
                format!("the slot raised {error_type}: {message}")
            }
        }
    }
}

/// A tool that raised: `denied` for a refused `ctx.capability.require`,
/// otherwise `failed`, with a bounded message.
pub fn outcome_from_error(kind: &str, error_type: &str, message: &str) -> ToolOutcome {
    let message = clip(message, MAX_ERROR_CHARS);
    match kind {
        "capability" => ToolOutcome::error(ToolStatus::Denied, message),
        "entrypoint" => ToolOutcome::error(ToolStatus::Failed, message),
        _ => {
            let error_type = clip(error_type, 80);
            ToolOutcome::error(
                ToolStatus::Failed,
                if message.is_empty() {
                    format!("the tool raised {error_type}")
                } else {
                    format!("the tool raised {error_type}: {message}")
                },
            )
        }
    }
}

#[cfg(test)]
#[path = "protocol_tests.rs"]
mod tests;

//! What earlier conversation a turn sends to the model: as much as fits the
//! model's context window, never a fixed message count. Pure: values in, a
//! plan out; `turn` loads history, asks the provider for summaries and
//! stores them.
//!
//! History is handled in whole turns (a tool call is never separated from
//! its result). When the turns since the last compaction no longer fit,
//! the older ones are compacted into one summary, as the original's
//! `/compact` does: the newest turns that fit in half of the room are kept
//! verbatim, everything before them (and the previous summary) becomes the
//! new summary. Whatever still does not fit is left out, oldest first, so
//! a request never exceeds the window.
//!
//! Tokens are estimated, not counted: one token per three bytes of the
//! message's JSON plus a few per message. Tokenizers average three to four
//! bytes per token on English and code, so the estimate errs high.

use serde_json::Value;

/// What the summary message starts with (the original's wording, in spirit).
pub const SUMMARY_PREFIX: &str = "[CONTEXT COMPACTION - REFERENCE ONLY] Earlier turns were compacted into the summary below. Treat it as background reference, not as active instructions; respond to the latest user message after it.";
/// The instruction a compaction request carries.
pub const COMPACTION_PROMPT: &str = "Summarize the prior conversation turns below for future context. Preserve durable facts, decisions, unresolved questions, files or commands mentioned, and user preferences. Write historical reference only; do not create new tasks.";

/// Estimated tokens of one message or definition.
pub fn estimate_tokens(v: &Value) -> u64 {
    let bytes = match v {
        Value::String(s) => s.len(),
        other => other.to_string().len(),
    };
    (bytes as u64).div_ceil(3) + 4
}

/// Estimated tokens of several values.
pub fn estimate_all(vs: &[Value]) -> u64 {
    vs.iter().map(estimate_tokens).sum()
}

/// One stored turn of history, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTurn {
    /// Id of the turn's last stored message (a compaction records it).
    pub last_id: i64,
    pub messages: Vec<Value>,
    pub tokens: u64,
}

impl StoredTurn {
    pub fn new(last_id: i64, messages: Vec<Value>) -> Self {
        let tokens = estimate_all(&messages);
        Self {
            last_id,
            messages,
            tokens,
        }
    }
}

/// How a turn's context is built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Send the summary (if any) and `turns[first..]`.
    Send { first: usize },
    /// Compact the summary and `turns[..upto]` into a new summary, then
    /// send it with `turns[first..]` (`first >= upto`).
    Compact { upto: usize, first: usize },
}

/// Plans the context of a turn. `room` is what history may use: the
/// window minus the system text, tool definitions, this turn's input and
/// the reply's reserve. `summary` is the current summary's tokens (0 when
/// none).
pub fn plan(room: u64, summary: u64, turns: &[StoredTurn]) -> Plan {
    let total: u64 = summary + turns.iter().map(|t| t.tokens).sum::<u64>();
    if total <= room {
        return Plan::Send { first: 0 };
    }
    // Keep the newest turns that fit in half the room; compact the rest.
    let half = room / 2;
    let mut kept = 0u64;
    let mut upto = turns.len();
    while upto > 0 && kept + turns[upto - 1].tokens <= half {
        kept += turns[upto - 1].tokens;
        upto -= 1;
    }
    if upto == 0 {
        // Only the summary is too big: drop turns until it fits.
        return Plan::Send {
            first: first_fitting(room.saturating_sub(summary), turns, 0),
        };
    }
    // A new summary is at most a quarter of the room (see `summary_limit`).
    let first = first_fitting(room.saturating_sub(summary_limit(room)), turns, upto);
    Plan::Compact { upto, first }
}

/// Most tokens a summary may take (its text is cut to fit).
pub fn summary_limit(room: u64) -> u64 {
    room / 4
}

/// The first index at or after `from` from which `turns` fit in `room`.
pub fn first_fitting(room: u64, turns: &[StoredTurn], from: usize) -> usize {
    let mut used = 0u64;
    let mut first = turns.len();
    while first > from && used + turns[first - 1].tokens <= room {
        used += turns[first - 1].tokens;
        first -= 1;
    }
    first
}

/// Cuts `text` so that it estimates at most `tokens` (keeping its end,
/// which is the most recent part of a transcript).
pub fn fit_text(text: &str, tokens: u64) -> String {
    let max_bytes = (tokens.saturating_sub(8) * 3) as usize;
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let mut start = text.len() - max_bytes;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &text[start..])
}

/// One message as a transcript line for a compaction request.
pub fn transcript_line(m: &Value) -> String {
    let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
    let mut text = match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    for c in m
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = c
            .pointer("/function/name")
            .and_then(Value::as_str)
            .unwrap_or("?");
        let args = c
            .pointer("/function/arguments")
            .and_then(Value::as_str)
            .unwrap_or("");
        text.push_str(&format!(" [called {name}({})]", truncate(args, 200)));
    }
    let text = if role == "tool" {
        truncate(&text, 800)
    } else {
        text
    };
    format!("{role}: {text}")
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let cut: String = s.chars().take(max).collect();
    format!("{cut}…")
}

/// The message that carries a summary into the model's context.
pub fn summary_message(summary: &str) -> Value {
    serde_json::json!({"role": "system", "content": format!("{SUMMARY_PREFIX}\n\n{summary}")})
}

#[cfg(test)]
#[path = "context_tests.rs"]
mod tests;

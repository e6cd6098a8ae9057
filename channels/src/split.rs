//! Splitting a reply at a platform's message limit, in order, at the most
//! natural boundary: a blank line, then a line end, then a space, and only
//! then inside a word (never inside a character). A fenced code block cut in
//! two is closed at the end of one part and reopened at the start of the
//! next, so each part renders on its own.

/// How a platform counts a message's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Unicode scalar values.
    Chars,
    /// UTF-16 code units (Telegram counts so; an emoji outside the BMP is 2).
    Utf16,
}

/// A platform's per-message limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub max: usize,
    pub unit: Unit,
}

/// Telegram `sendMessage`: 4,096 characters after entity parsing (UTF-16).
pub const TELEGRAM: Limit = Limit {
    max: 4096,
    unit: Unit::Utf16,
};
/// Discord message `content`: 2,000 characters (counted as JavaScript does).
pub const DISCORD: Limit = Limit {
    max: 2000,
    unit: Unit::Utf16,
};
/// Slack: the text of a `section` block is at most 3,000 characters.
pub const SLACK_SECTION: Limit = Limit {
    max: 3000,
    unit: Unit::Chars,
};

const FENCE: &str = "```";
const CLOSE: &str = "\n```";
const REOPEN: &str = "```\n";

fn units(c: char, unit: Unit) -> usize {
    match unit {
        Unit::Chars => 1,
        Unit::Utf16 => c.len_utf16(),
    }
}

fn length(s: &str, unit: Unit) -> usize {
    s.chars().map(|c| units(c, unit)).sum()
}

/// Splits `text` into parts of at most `limit.max` units each. Empty text
/// gives no parts. Without code fences the parts concatenate to `text`.
pub fn split(text: &str, limit: Limit) -> Vec<String> {
    // Room for a closing and a reopening fence, so a cut inside a code block
    // can still keep both parts within the limit.
    let fence_room = CLOSE.len() + REOPEN.len();
    let max = limit.max.max(fence_room + 16);
    let mut parts = Vec::new();
    let mut rest = text;
    let mut reopen = false;
    while !rest.is_empty() {
        let prefix = if reopen { REOPEN } else { "" };
        let budget = max - prefix.len();
        if length(rest, limit.unit) <= budget {
            parts.push(format!("{prefix}{rest}"));
            break;
        }
        // Leave room to close a fence this part might leave open.
        let window_end = byte_index_at(rest, budget - CLOSE.len(), limit.unit);
        let cut = natural_cut(&rest[..window_end]);
        let (head, tail) = rest.split_at(cut);
        let open = (count_fences(prefix) + count_fences(head)) % 2 == 1;
        let mut part = format!("{prefix}{head}");
        if open {
            part.push_str(CLOSE);
        }
        parts.push(part);
        reopen = open;
        rest = tail;
    }
    parts
}

/// The byte index just past the last whole character within `budget` units.
fn byte_index_at(s: &str, budget: usize, unit: Unit) -> usize {
    let mut used = 0;
    for (i, c) in s.char_indices() {
        let n = units(c, unit);
        if used + n > budget {
            return i;
        }
        used += n;
    }
    s.len()
}

/// Where to end a part within `window` (a prefix of the rest): after the
/// last blank line, line end or space in its second half, else at its end.
fn natural_cut(window: &str) -> usize {
    let half = window.len() / 2;
    for sep in ["\n\n", "\n", " "] {
        if let Some(at) = window.rfind(sep) {
            let end = at + sep.len();
            if end > half {
                return end;
            }
        }
    }
    // A single character can exceed a tiny window only in theory; always
    // make progress by at least one character.
    if window.is_empty() {
        return 0;
    }
    window.len()
}

fn count_fences(s: &str) -> usize {
    s.matches(FENCE).count()
}

#[cfg(test)]
#[path = "split_tests.rs"]
mod tests;

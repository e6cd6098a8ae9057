//! Small text helpers shared by detection and rendering: bounded reads of
//! bare and quoted values, char-boundary-safe slicing, decoding.

use super::*;

pub(super) fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

pub(super) fn sub(s: &str, start: usize, end: usize) -> &str {
    s.get(start..end).unwrap_or("")
}

pub(super) fn floor_boundary(s: &str, index: usize) -> usize {
    if index >= s.len() {
        return s.len();
    }
    let mut i = index;
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

pub(crate) fn truncate_chars(s: &str, limit: usize) -> String {
    match s.char_indices().nth(limit) {
        None => s.to_string(),
        Some((cut, _)) => {
            let omitted = s.get(cut..).map(|rest| rest.chars().count()).unwrap_or(0);
            format!("{}...[truncated {omitted} chars]", sub(s, 0, cut))
        }
    }
}

pub(crate) fn join_path(path: &str, key: &str) -> String {
    let segment: String = key.chars().take(MAX_PATH_SEGMENT_CHARS).collect();
    if path.is_empty() {
        segment
    } else {
        format!("{path}.{segment}")
    }
}

pub(crate) fn location_or_text(path: &str) -> String {
    if path.is_empty() {
        "text".to_string()
    } else {
        path.to_string()
    }
}

pub(super) fn is_token_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'~' | b'+' | b'/' | b'=' | b'-')
}

/// Heuristic for a credential-looking word (used where prose is likely).
pub(super) fn token_like(s: &str) -> bool {
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
pub(super) fn looks_valued(s: &str) -> bool {
    s.chars().any(|c| !c.is_alphabetic())
}

pub(super) fn skip_inline_space(b: &[u8], mut p: usize) -> usize {
    while p < b.len() && matches!(at(b, p), b' ' | b'\t') {
        p += 1;
    }
    p
}

pub(super) fn run_until(b: &[u8], start: usize, stop: &dyn Fn(u8) -> bool, cap: usize) -> usize {
    let mut end = start;
    while end < b.len() && end - start < cap && !stop(at(b, end)) {
        end += 1;
    }
    end
}

/// Reads a quoted (`"x"`, `'x'`, `\"x\"`) or bare value at `p`.
/// Returns the content span and whether it was quoted.
pub(super) fn read_value(
    s: &str,
    p: usize,
    stop: &dyn Fn(u8) -> bool,
) -> Option<(usize, usize, bool)> {
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

pub(super) fn percent_decode(s: &str) -> String {
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

pub(super) fn base64_decode(s: &str) -> Option<Vec<u8>> {
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

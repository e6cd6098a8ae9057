//! Redaction of streamed text (a background task's log, a call's live
//! output) with the full detector, not only known values: text is held until
//! a line is complete (`\n` or `\r`), so a token split across reads is seen whole; a private key block is held
//! until its `-----END` line (or dropped entirely when it is too long to
//! hold); a line longer than [`HOLD_BYTES`] is cut at its last whitespace.
//! Secrets found in earlier lines stay known, so a later bare occurrence of
//! the same value is replaced too. Output is the chosen [`View`]'s text form.

use std::collections::BTreeMap;

use super::redactor::{SecretRedactor, View};

/// Longest partial line held back before it is redacted and emitted anyway.
pub const HOLD_BYTES: usize = 16 * 1024;
/// Longest private key block held back waiting for its end marker.
pub const KEY_HOLD_BYTES: usize = 64 * 1024;
/// What replaces a private key block that could not be held whole.
pub const KEY_DROPPED: &str = "<redacted:private_key>\n";

#[derive(Default)]
struct Pending {
    text: String,
    /// Inside a private key whose start was already emitted (redacted):
    /// drop everything up to and including its end line.
    in_key: bool,
}

/// Line-holding redactor over any number of named streams.
pub struct LineRedactor {
    known: SecretRedactor,
    view: View,
    streams: BTreeMap<&'static str, Pending>,
}

impl LineRedactor {
    /// `known` seeds the secrets to replace everywhere (e.g. those found in
    /// the call's arguments).
    pub fn new(known: SecretRedactor, view: View) -> Self {
        Self {
            known,
            view,
            streams: BTreeMap::new(),
        }
    }

    /// Feed a chunk of one stream; returns the redacted text safe to emit now.
    pub fn push(&mut self, stream: &'static str, chunk: &str) -> String {
        let mut pending = self.streams.remove(stream).unwrap_or_default();
        pending.text.push_str(chunk);
        let out = self.drain(&mut pending, false);
        self.streams.insert(stream, pending);
        out
    }

    /// End one stream: everything still held, redacted.
    pub fn finish(&mut self, stream: &'static str) -> String {
        let mut pending = self.streams.remove(stream).unwrap_or_default();
        self.drain(&mut pending, true)
    }

    /// Streams that may still hold text.
    pub fn open_streams(&self) -> Vec<&'static str> {
        self.streams.keys().copied().collect()
    }

    /// Every secret seen so far (the seed plus what the text revealed).
    pub fn known(&self) -> &SecretRedactor {
        &self.known
    }

    pub fn into_known(self) -> SecretRedactor {
        self.known
    }

    fn emit(&mut self, text: &str) -> String {
        if text.is_empty() {
            return String::new();
        }
        let out = self.known.redact_str_for(text, self.view);
        self.known.discover_text(text);
        out
    }

    fn drain(&mut self, p: &mut Pending, all: bool) -> String {
        let mut out = String::new();
        loop {
            if p.in_key {
                match p.text.find("-----END ") {
                    Some(i) => match p.text[i..].find('\n') {
                        Some(j) => {
                            p.text.drain(..i + j + 1);
                            p.in_key = false;
                        }
                        None if all => {
                            p.text.clear();
                            return out;
                        }
                        None => {
                            p.text.drain(..i);
                            return out;
                        }
                    },
                    None if all => {
                        p.text.clear();
                        return out;
                    }
                    None => {
                        // Keep a short tail: the end marker may arrive split.
                        let keep = floor_boundary(&p.text, p.text.len().saturating_sub(16));
                        p.text.drain(..keep);
                        return out;
                    }
                }
            }
            if p.text.is_empty() {
                return out;
            }
            if let Some(begin) = open_private_key(&p.text, all) {
                let held = p.text.len() - begin;
                if !all && held <= KEY_HOLD_BYTES {
                    // Emit what precedes the block; hold the block.
                    let before: String = p.text.drain(..begin).collect();
                    out.push_str(&self.emit(&before));
                    return out;
                }
                // Too long to hold (or the stream ended): the detector
                // redacts from BEGIN to the end; drop the rest of the block.
                let before: String = p.text.drain(..begin).collect();
                out.push_str(&self.emit(&before));
                out.push_str(KEY_DROPPED);
                p.text.clear();
                p.in_key = !all;
                return out;
            }
            let cut = match p.text.rfind(['\n', '\r']) {
                Some(i) => i + 1,
                None if all => p.text.len(),
                None if p.text.len() > HOLD_BYTES => long_line_cut(&p.text),
                None => return out,
            };
            let segment: String = p.text.drain(..cut).collect();
            out.push_str(&self.emit(&segment));
            if !all {
                return out;
            }
        }
    }
}

/// Byte offset of a `-----BEGIN … PRIVATE KEY-----` header with no
/// `-----END ` after it (while more text may come, a partial `-----BEGIN`
/// at the very end counts too).
fn open_private_key(s: &str, at_end: bool) -> Option<usize> {
    let mut open = None;
    let mut from = 0;
    while let Some(rel) = s[from..].find("-----BEGIN ") {
        let start = from + rel;
        let header = &s[start + "-----BEGIN ".len()..];
        let header = header.get(..header.len().min(80)).unwrap_or(header);
        let closed_header = header.find("-----").map(|e| &header[..e]);
        let is_key = match closed_header {
            Some(h) => h.contains("PRIVATE KEY"),
            // The header itself is still arriving.
            None => !header.contains('\n'),
        };
        from = start + 1;
        if is_key {
            open = match s[start..].find("-----END ") {
                Some(_) => None,
                None => Some(start),
            };
            if open.is_some() {
                return open;
            }
        }
    }
    if at_end {
        return open;
    }
    // A marker split across reads: hold a trailing "-----BEG…" fragment.
    let tail_from = floor_boundary(s, s.len().saturating_sub(10));
    let tail = &s[tail_from..];
    if let Some(i) = tail.find("-----") {
        let frag = &tail[i..];
        if "-----BEGIN ".starts_with(frag) {
            return Some(tail_from + i);
        }
    }
    open
}

/// Where to cut a line with no newline that grew past [`HOLD_BYTES`]: after
/// its last whitespace in the second half, else at the hold limit.
fn long_line_cut(s: &str) -> usize {
    let limit = floor_boundary(s, HOLD_BYTES);
    let half = floor_boundary(s, HOLD_BYTES / 2);
    match s[half..limit].rfind(char::is_whitespace) {
        Some(i) => {
            let at = half + i;
            at + s[at..].chars().next().map_or(1, char::len_utf8)
        }
        None => limit.max(1),
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
#[path = "lines_tests.rs"]
mod tests;

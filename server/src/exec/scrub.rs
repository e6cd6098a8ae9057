//! Streaming exact-value secret redaction.
//!
//! [`Scrubber`] replaces every occurrence of a bound secret value with
//! `<redacted:TARGET>` in a text stream that arrives in arbitrary chunks.
//! Between chunks it holds back only the longest end of the text that is a
//! proper prefix of some value — at most (longest value length − 1) bytes,
//! usually nothing — so a value split across chunk boundaries is still
//! replaced while live output is not delayed. The output is exactly what one
//! pass over the whole text would give (leftmost match first, the longest
//! value on a tie). Text is UTF-8 (`&str`), so the held-back part always
//! starts on a character boundary.

/// One secret value and its replacement.
#[derive(Debug, Clone)]
struct Needle {
    value: String,
    replacement: String,
}

/// Streaming exact-value redactor (one per stream).
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    /// Longest value first, so the first needle found at a position is the longest.
    needles: Vec<Needle>,
    pending: String,
}

impl Scrubber {
    /// `secrets` are `(target, exact value)` pairs; empty values are ignored
    /// and a repeated value keeps its first target.
    pub fn new(secrets: &[(String, String)]) -> Self {
        let mut needles: Vec<Needle> = Vec::new();
        for (target, value) in secrets {
            if value.is_empty() || needles.iter().any(|n| n.value == *value) {
                continue;
            }
            needles.push(Needle {
                value: value.clone(),
                replacement: format!("<redacted:{target}>"),
            });
        }
        needles.sort_by_key(|n| std::cmp::Reverse(n.value.len()));
        Self {
            needles,
            pending: String::new(),
        }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// Bytes currently held back (always < the longest value's length).
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Feeds `text`; returns the redacted text that is final, holding back a
    /// possible secret prefix at the end.
    pub fn push(&mut self, text: &str) -> String {
        if self.needles.is_empty() {
            return text.to_owned();
        }
        let mut buf = std::mem::take(&mut self.pending);
        buf.push_str(text);
        // A value starting before `cut` cannot run past the end of `buf`
        // (otherwise `buf[start..]` would be a longer held-back prefix), so
        // every match starting there is decidable now.
        let cut = buf.len() - self.holdback(&buf);
        let (out, consumed) = self.replace(&buf, cut);
        self.pending = buf.get(consumed..).unwrap_or_default().to_owned();
        out
    }

    /// Ends the stream: returns the held-back text, redacted.
    pub fn finish(&mut self) -> String {
        let buf = std::mem::take(&mut self.pending);
        self.replace(&buf, buf.len()).0
    }

    /// Length of the longest end of `buf` that is a proper prefix of a value.
    /// Only starts where a value's first character occurs, within the last
    /// (value length − 1) bytes, are tried, earliest (longest) first.
    fn holdback(&self, buf: &str) -> usize {
        let mut best = 0;
        for needle in &self.needles {
            let Some(first) = needle.value.chars().next() else {
                continue;
            };
            let mut from = buf.len().saturating_sub(needle.value.len() - 1);
            while !buf.is_char_boundary(from) {
                from += 1;
            }
            let window = buf.get(from..).unwrap_or_default();
            for (offset, _) in window.match_indices(first) {
                let rest = window.get(offset..).unwrap_or_default();
                if rest.len() <= best {
                    break;
                }
                if needle.value.starts_with(rest) {
                    best = rest.len();
                    break;
                }
            }
        }
        best
    }

    /// Redacts a complete text in one go (same result as push + finish).
    pub fn redact_all(&self, text: &str) -> String {
        if self.needles.is_empty() {
            return text.to_owned();
        }
        self.replace(text, text.len()).0
    }

    /// Replaces the matches in `buf` that start before `limit` (leftmost
    /// first, longest on a tie) and copies text up to `limit` or the end of
    /// the last match, whichever is later. Returns the output and how many
    /// bytes of `buf` it covers.
    fn replace(&self, buf: &str, limit: usize) -> (String, usize) {
        #[derive(Clone, Copy)]
        enum Next {
            Unknown,
            At(usize),
            Never,
        }
        let mut next = vec![Next::Unknown; self.needles.len()];
        let mut out = String::with_capacity(buf.len());
        let mut pos = 0;
        loop {
            let mut best: Option<(usize, usize)> = None; // (start, needle index)
            for (index, needle) in self.needles.iter().enumerate() {
                let start = match next.get(index).copied().unwrap_or(Next::Never) {
                    Next::At(at) if at >= pos => Some(at),
                    Next::Never => None,
                    Next::At(_) | Next::Unknown => {
                        let found = buf
                            .get(pos..)
                            .and_then(|rest| rest.find(needle.value.as_str()))
                            .map(|offset| pos + offset);
                        if let Some(slot) = next.get_mut(index) {
                            *slot = found.map_or(Next::Never, Next::At);
                        }
                        found
                    }
                };
                if let Some(start) = start {
                    if best.is_none_or(|(best_start, _)| start < best_start) {
                        best = Some((start, index));
                    }
                }
            }
            let Some((start, index)) = best.filter(|(start, _)| *start < limit) else {
                break;
            };
            let Some(needle) = self.needles.get(index) else {
                break;
            };
            out.push_str(buf.get(pos..start).unwrap_or_default());
            out.push_str(&needle.replacement);
            pos = start + needle.value.len();
        }
        let end = limit.max(pos);
        out.push_str(buf.get(pos..end).unwrap_or_default());
        (out, end)
    }
}

#[cfg(test)]
#[path = "scrub_tests.rs"]
mod tests;

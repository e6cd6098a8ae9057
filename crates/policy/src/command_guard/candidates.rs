//! Detection candidates: the raw command plus its ANSI-stripped, NFKC-folded
//! and `$IFS`-expanded spellings; candidates only ever add checks.

use unicode_normalization::UnicodeNormalization;

pub(super) fn detection_candidates(raw: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    push_unique(&mut out, raw.to_string());
    let stripped = strip_ansi(raw);
    push_unique(&mut out, stripped.clone());
    // NFKC folds full-width and compatibility look-alikes (＄, （, ＼) onto the
    // ASCII a shell would need; invisible format characters are dropped so
    // `r\u{200b}m` is reviewed as `rm` too.
    let folded: String = stripped.nfkc().filter(|c| !is_invisible(*c)).collect();
    push_unique(&mut out, folded.clone());
    for base in [raw, folded.as_str()] {
        if base.contains("IFS") {
            push_unique(&mut out, replace_ifs(base));
        }
    }
    out
}

fn push_unique(out: &mut Vec<String>, s: String) {
    if !s.trim().is_empty() && !out.contains(&s) {
        out.push(s);
    }
}

/// Removes CSI, OSC and two-character escape sequences.
fn strip_ansi(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let len = chars.len();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < len {
        let c = chars[i];
        if c != '\u{1b}' && c != '\u{9b}' {
            out.push(c);
            i += 1;
            continue;
        }
        let next = chars.get(i + 1).copied();
        if c == '\u{9b}' || next == Some('[') {
            i += if c == '\u{9b}' { 1 } else { 2 };
            while i < len && ('\u{30}'..='\u{3f}').contains(&chars[i]) {
                i += 1;
            }
            while i < len && ('\u{20}'..='\u{2f}').contains(&chars[i]) {
                i += 1;
            }
            if i < len && ('\u{40}'..='\u{7e}').contains(&chars[i]) {
                i += 1;
            }
        } else if next == Some(']') {
            i += 2;
            while i < len {
                if chars[i] == '\u{7}' {
                    i += 1;
                    break;
                }
                if chars[i] == '\u{1b}' && chars.get(i + 1) == Some(&'\\') {
                    i += 2;
                    break;
                }
                i += 1;
            }
        } else {
            i += 1;
            if i < len && ('\u{40}'..='\u{5f}').contains(&chars[i]) {
                i += 1;
            }
        }
    }
    out
}

/// `$IFS` / `${IFS}` word splitting is a classic way to hide spaces.
fn replace_ifs(text: &str) -> String {
    let mut out = text.replace("${IFS}", " ");
    let mut i = 0;
    while let Some(off) = out[i..].find("$IFS") {
        let at = i + off;
        let after = out[at + 4..].chars().next();
        if after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            i = at + 4;
            continue;
        }
        out.replace_range(at..at + 4, " ");
        i = at + 1;
    }
    out
}

pub(super) fn is_control(c: char) -> bool {
    (c < ' ' && c != '\t' && c != '\n') || c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c)
}

/// Zero-width, bidi-override and other format characters that make the
/// approval view show something other than what runs.
pub(super) fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{34f}'
            | '\u{61c}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{feff}'
    )
}

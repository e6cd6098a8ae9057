//! Parsed names a client uses to address a core's contents over the API:
//! a file path inside a core ([`CoreFilePath`]) and a revision
//! ([`RevisionSpec`]). Pure: no filesystem, no git; the edge that touches
//! disk (`core::edit`) receives only these values.

use std::fmt;

/// Longest core-relative path accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 512;
/// Longest single path segment, in bytes (a common filesystem limit).
const MAX_SEGMENT_BYTES: usize = 255;

/// Why a path or revision was refused; the message names the bad part.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PathError(pub String);

/// A relative path inside one core folder, `/`-separated, that cannot
/// leave it: not absolute, no `.` or `..`, no empty or hidden segment
/// (`.git`, `.env`, …), no backslash or control character.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CoreFilePath(String);

impl CoreFilePath {
    pub fn parse(raw: &str) -> Result<Self, PathError> {
        let shown = || raw.chars().take(80).collect::<String>();
        if raw.is_empty() {
            return Err(PathError("the file path is empty".into()));
        }
        if raw.len() > MAX_PATH_BYTES {
            return Err(PathError(format!(
                "the file path is longer than {MAX_PATH_BYTES} bytes"
            )));
        }
        if raw.starts_with('/') {
            return Err(PathError(format!(
                "{:?} is absolute; give a path relative to the core",
                shown()
            )));
        }
        if let Some(c) = raw.chars().find(|c| c.is_control() || *c == '\\') {
            return Err(PathError(format!("{:?} contains {c:?}", shown())));
        }
        for segment in raw.split('/') {
            match segment {
                "" => {
                    return Err(PathError(format!(
                        "{:?} has an empty segment (a doubled or trailing `/`)",
                        shown()
                    )))
                }
                "." | ".." => {
                    return Err(PathError(format!(
                        "{:?} uses {segment:?}; paths may not leave the core or name folders relatively",
                        shown()
                    )))
                }
                s if s.starts_with('.') => {
                    return Err(PathError(format!(
                        "{:?} names the hidden entry {s:?}; hidden files and folders (such as .git) are not core files",
                        shown()
                    )))
                }
                s if s.len() > MAX_SEGMENT_BYTES => {
                    return Err(PathError(format!(
                        "a segment of {:?} is longer than {MAX_SEGMENT_BYTES} bytes",
                        shown()
                    )))
                }
                _ => {}
            }
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The segments, in order (never empty, never `.`, `..` or hidden).
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }
}

impl fmt::Display for CoreFilePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A revision a client may name: `live`, `previous`, or a commit id
/// (4 to 40 hex digits, abbreviated or full). Nothing else reaches `git`,
/// so an option (`--output=…`) or a ref expression (`HEAD~1`, `@{…}`)
/// can never be smuggled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevisionSpec {
    Live,
    Previous,
    Commit(String),
}

impl RevisionSpec {
    pub fn parse(raw: &str) -> Result<Self, PathError> {
        match raw {
            "live" => Ok(Self::Live),
            "previous" => Ok(Self::Previous),
            s if (4..=40).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit()) => {
                Ok(Self::Commit(s.to_ascii_lowercase()))
            }
            s => Err(PathError(format!(
                "revision {:?} is not `live`, `previous` or a commit id (4 to 40 hex digits)",
                s.chars().take(60).collect::<String>()
            ))),
        }
    }

    /// What `git rev-parse --verify` is given (a ref name or a commit id;
    /// `^{commit}` makes git refuse anything that is not a commit).
    pub fn to_git(&self) -> String {
        match self {
            Self::Live => format!("{}^{{commit}}", super::git::LIVE_REF),
            Self::Previous => format!("{}^{{commit}}", super::git::PREVIOUS_REF),
            Self::Commit(id) => format!("{id}^{{commit}}"),
        }
    }
}

/// A commit message for a core change: trimmed, at most 500 characters,
/// no control characters other than newlines and tabs.
pub fn commit_message(raw: &str) -> Result<String, PathError> {
    // Checked as sent (before trimming), so the API document's length and
    // pattern say exactly what is taken.
    if raw.chars().count() > 500 {
        return Err(PathError(
            "the commit message is longer than 500 characters".into(),
        ));
    }
    if let Some(c) = raw
        .chars()
        .find(|c| c.is_control() && *c != '\n' && *c != '\t')
    {
        return Err(PathError(format!("the commit message contains {c:?}")));
    }
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err(PathError("the commit message is empty".into()));
    }
    Ok(trimmed.to_owned())
}

#[cfg(test)]
#[path = "path_tests.rs"]
mod tests;

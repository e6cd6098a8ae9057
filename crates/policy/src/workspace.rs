//! Workspace path scope for the file tools (`read_file`, `write_file`, `patch`,
//! `search_files`, and the terminal `cwd`).
//!
//! A tool's `path` argument is resolved against the session's workspace root
//! and classified:
//!
//! * **inside / outside** – whether the *physical* target (after `..` and every
//!   symlink are resolved through the real filesystem) lies under the
//!   canonical workspace root. A symlink inside the workspace that points
//!   elsewhere is outside; `..` cannot climb out unnoticed.
//! * **sensitivity** – [`is_sensitive`], the upstream rules of
//!   `demiurge/security/workspace.py::is_sensitive_path` (see `BUILTIN_TOOLS.md`,
//!   "Path rules"), applied case-insensitively to the path relative to the root
//!   when inside, and to the whole absolute path when outside.
//!
//! What the caller does with the verdict: reads may go anywhere but need
//! approval when outside or sensitive ([`Resolved::read_needs_approval`]);
//! writes that are not inside are refused here with
//! [`PathError::EscapesWorkspace`] (`path escapes workspace: <path>`); writes
//! inside always go through approval upstream, sensitive or not.
//!
//! Split:
//! * pure, here: [`check_raw`], [`is_sensitive`], [`normalize_relative`],
//!   [`classify`] – values in, verdicts out, no I/O;
//! * effect, in `demiurge::paths`: `demiurge::paths::resolve` – the only
//!   function that touches the filesystem (`canonicalize` of the root,
//!   `symlink_metadata`/`read_link` along the path), then classifies here.
//!   Callers must then operate on [`Resolved::abs`], never on the raw
//!   argument.
//!
//! Deliberate differences from the Python `WorkspaceScope`:
//! * no `~` expansion: the host's home directory is not the tenant's, so `~`
//!   is an ordinary name (`~/x` is `<root>/~/x`);
//! * an empty argument is [`PathError::Empty`] (Python treats it as `.`);
//!   callers apply tool defaults such as `path: "."` before resolving;
//! * one read root (the workspace); no extra read roots, no separate write
//!   root and no `blocked_write_names` (the evolver's protected names are a
//!   caller concern);
//! * the escape error names the argument as given, not the resolved host
//!   path, so host layout does not leak to the model.
//!

use std::path::{Component, Path, PathBuf};

#[cfg(test)]
#[path = "workspace_tests.rs"]
mod tests;

// ---------------------------------------------------------------------------
// Public API

/// Longest accepted argument (and joined path), in bytes (Linux `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest accepted single path component, in bytes (Linux `NAME_MAX`).
pub const MAX_COMPONENT_BYTES: usize = 255;
/// Symlinks followed during one resolution before giving up (Linux `MAXSYMLINKS`).
pub const MAX_SYMLINK_HOPS: usize = 40;

/// What a tool wants to do with the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// `read_file`, `search_files`.
    Read,
    /// `write_file`, `patch`, terminal `cwd`.
    Write,
}

/// Whether a path is a credential / state location that needs approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sensitivity {
    None,
    /// The rule that matched: `git`, `venv`, `demiurge_state`, `ssh`, `aws`,
    /// `kube`, `env_file`, `netrc`, `npmrc`, `pgpass`, `pypirc`,
    /// `private_key`, and for writes `pyproject`, `uv_lock`.
    Sensitive(&'static str),
}

impl Sensitivity {
    pub fn is_sensitive(&self) -> bool {
        matches!(self, Sensitivity::Sensitive(_))
    }

    pub fn kind(&self) -> Option<&'static str> {
        match self {
            Sensitivity::None => None,
            Sensitivity::Sensitive(kind) => Some(kind),
        }
    }
}

/// The pure verdict on an already-resolved absolute path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    pub inside: bool,
    /// Relative to the workspace root when inside (empty for the root itself).
    pub rel: Option<PathBuf>,
    pub sensitivity: Sensitivity,
}

/// A tool path after resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Canonical target: every existing component has its symlinks resolved;
    /// a missing tail is appended verbatim (never contains `.` or `..`).
    pub abs: PathBuf,
    /// Relative to the canonical workspace root when inside (empty for the
    /// root itself), `None` when outside.
    pub rel: Option<PathBuf>,
    pub inside: bool,
    pub sensitivity: Sensitivity,
    /// Whether the target exists (after following symlinks).
    pub exists: bool,
}

impl Resolved {
    /// The name shown to the model and used in approval cache keys: the
    /// `/`-separated relative path (`.` for the root) when inside, the
    /// absolute path otherwise (Python's `relative_display`).
    pub fn display(&self) -> String {
        match &self.rel {
            Some(rel) => {
                let parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if parts.is_empty() {
                    ".".to_owned()
                } else {
                    parts.join("/")
                }
            }
            None => self.abs.to_string_lossy().into_owned(),
        }
    }

    /// Read approval rule: outside the workspace or sensitive.
    pub fn read_needs_approval(&self) -> bool {
        !self.inside || self.sensitivity.is_sensitive()
    }
}

/// Why a path argument cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("path is empty")]
    Empty,
    #[error("path contains a NUL byte")]
    Nul,
    #[error("path is too long")]
    TooLong,
    /// Carries the argument as given.
    #[error("path escapes workspace: {0}")]
    EscapesWorkspace(String),
    /// A `..` (or a component) follows a missing component or a non-directory.
    #[error("path does not exist: {0}")]
    NotFound(String),
    #[error("{0}")]
    Io(String),
}

/// Pure argument hygiene: not empty, no NUL, at most [`MAX_PATH_BYTES`]
/// bytes, no component longer than [`MAX_COMPONENT_BYTES`] bytes.
pub fn check_raw(raw: &str) -> Result<&Path, PathError> {
    if raw.is_empty() {
        return Err(PathError::Empty);
    }
    if raw.contains('\0') {
        return Err(PathError::Nul);
    }
    if raw.len() > MAX_PATH_BYTES {
        return Err(PathError::TooLong);
    }
    let path = Path::new(raw);
    if path
        .components()
        .any(|c| c.as_os_str().len() > MAX_COMPONENT_BYTES)
    {
        return Err(PathError::TooLong);
    }
    Ok(path)
}

/// The upstream sensitive-path rules, case-insensitive (Unicode lower-case,
/// like Python's `str.lower`). Only normal components count (`/`, `.`, `..`
/// are skipped), so it works on relative and absolute paths alike.
///
/// In order (the first matching rule names the kind):
/// 1. any segment equal to `.git`, `.venv`, `.demiurge`, `.ssh`, `.aws`,
///    `.kube` (first such segment wins);
/// 2. any segment *starting with* `.env` (`.env`, `.env.local`, `.envrc`,
///    `.environment`; but not `environment.txt`, `my.env.example`, `env`);
/// 3. last segment equal to `.netrc`, `.npmrc`, `.pgpass`, `.pypirc` (a
///    directory of that name with children is not matched);
/// 4. private-key look of the last segment: `id_rsa`, `id_dsa`, `id_ecdsa`,
///    `id_ed25519` exactly (not `id_rsa.pub`), a `.pem` / `.key` suffix, or
///    containing both `private` and `key` anywhere (so `monkey_private.txt`
///    matches, as upstream);
/// 5. writes only: last segment `pyproject.toml` or `uv.lock`.
pub fn is_sensitive(rel_path: &Path, access: Access) -> Sensitivity {
    let lowered: Vec<String> = rel_path
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_string_lossy().to_lowercase()),
            _ => None,
        })
        .collect();

    for name in &lowered {
        let kind = match name.as_str() {
            ".git" => "git",
            ".venv" => "venv",
            ".demiurge" => "demiurge_state",
            ".ssh" => "ssh",
            ".aws" => "aws",
            ".kube" => "kube",
            _ => continue,
        };
        return Sensitivity::Sensitive(kind);
    }
    if lowered.iter().any(|name| name.starts_with(".env")) {
        return Sensitivity::Sensitive("env_file");
    }
    let Some(last) = lowered.last() else {
        return Sensitivity::None;
    };
    match last.as_str() {
        ".netrc" => return Sensitivity::Sensitive("netrc"),
        ".npmrc" => return Sensitivity::Sensitive("npmrc"),
        ".pgpass" => return Sensitivity::Sensitive("pgpass"),
        ".pypirc" => return Sensitivity::Sensitive("pypirc"),
        _ => {}
    }
    if looks_like_private_key(last) {
        return Sensitivity::Sensitive("private_key");
    }
    if access == Access::Write {
        match last.as_str() {
            "pyproject.toml" => return Sensitivity::Sensitive("pyproject"),
            "uv.lock" => return Sensitivity::Sensitive("uv_lock"),
            _ => {}
        }
    }
    Sensitivity::None
}

/// Lexical normalisation of a relative path: drops `.`, cancels `name/..`.
/// `None` when the path is absolute (or has a prefix) or climbs above its
/// start. The result may be empty (`a/..`).
///
/// Purely syntactic – it knows nothing about symlinks, so it is for naming
/// (display names, cache keys, comparing relative names, validating
/// support-file names), never a substitute for `demiurge::paths::resolve` before I/O.
pub fn normalize_relative(path: &Path) -> Option<PathBuf> {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => return None,
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::Normal(name) => parts.push(name),
        }
    }
    Some(parts.iter().collect())
}

/// Pure verdict for a canonical `abs` against the canonical workspace `root`:
/// inside/outside, relative path, sensitivity (relative path when inside,
/// whole path when outside). Writes that are not inside are refused with
/// [`PathError::EscapesWorkspace`] naming `raw`.
pub fn classify(
    root: &Path,
    abs: &Path,
    access: Access,
    raw: &str,
) -> Result<Classification, PathError> {
    let rel = abs.strip_prefix(root).ok().map(Path::to_path_buf);
    let inside = rel.is_some();
    if access == Access::Write && !inside {
        return Err(PathError::EscapesWorkspace(raw.to_owned()));
    }
    let sensitivity = match &rel {
        Some(rel) => is_sensitive(rel, access),
        None => is_sensitive(abs, access),
    };
    Ok(Classification {
        inside,
        rel,
        sensitivity,
    })
}

// ---------------------------------------------------------------------------
// Internals

fn looks_like_private_key(name: &str) -> bool {
    matches!(name, "id_rsa" | "id_dsa" | "id_ecdsa" | "id_ed25519")
        || name.ends_with(".pem")
        || name.ends_with(".key")
        || (name.contains("private") && name.contains("key"))
}

//! A session's workspace files as resources an outside client may list and
//! read (the MCP endpoint's `resources/list` and `resources/read`). A
//! resource read is what `read_file` would do without asking anyone: a
//! path resolved like the tools resolve it (symlinks and `..` followed),
//! inside the workspace, not sensitive, not behind a file wall, opened
//! race-free beneath the workspace. Anything `read_file` would have to ask
//! a person about, or refuses, is refused here with the same reason.

use std::path::{Path, PathBuf};

use super::beneath;
use super::files::read_approval;
use crate::policy::approval_policy::ApprovalPolicy;
use crate::policy::file_walls::FileWalls;
use crate::policy::workspace::Access;

/// Largest file served as one resource.
pub const MAX_RESOURCE_BYTES: u64 = 8 * 1024 * 1024;
/// Most files one listing walks (the listing says when it stopped early).
pub const MAX_LISTED: usize = 2000;
/// Folders a listing does not descend into (version control internals).
const SKIPPED_DIRS: &[&str] = &[".git", ".hg", ".svn"];

/// Why a resource cannot be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ResourceError {
    /// Outside the walls, sensitive, or not a readable path: never served.
    #[error("{0}")]
    Refused(String),
    #[error("no such file in the workspace: {0}")]
    NotFound(String),
    #[error("{0}")]
    TooLarge(String),
    #[error("cannot read {path}: {error}")]
    Io { path: String, error: String },
}

/// One listed file: its `/`-separated path inside the workspace and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceFile {
    pub path: String,
    pub size: u64,
}

/// The workspace's regular files (symlinks are not followed, version
/// control folders skipped) that a resource read would serve, sorted by
/// path; `true` when the walk stopped at [`MAX_LISTED`].
pub fn list(walls: &FileWalls, workspace: &Path) -> std::io::Result<(Vec<WorkspaceFile>, bool)> {
    let root = workspace.canonicalize()?;
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = vec![root.clone()];
    let mut cut = false;
    'walk: while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                let name = entry.file_name();
                if !SKIPPED_DIRS.iter().any(|s| name == *s) {
                    stack.push(path);
                }
                continue;
            }
            if !kind.is_file() {
                continue;
            }
            let Ok(rel) = path.strip_prefix(&root) else {
                continue;
            };
            let Some(rel) = rel.to_str().map(|r| r.replace('\\', "/")) else {
                continue; // Not UTF-8: no URI names it.
            };
            if resolve(walls, &root, &rel).is_err() {
                continue;
            }
            if out.len() >= MAX_LISTED {
                cut = true;
                break 'walk;
            }
            let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
            out.push(WorkspaceFile { path: rel, size });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok((out, cut))
}

/// Read the workspace file `raw` (relative to the workspace) if a
/// resource read may serve it.
pub async fn read(
    walls: &FileWalls,
    workspace: &Path,
    raw: &str,
) -> Result<Vec<u8>, ResourceError> {
    let root = workspace.canonicalize().map_err(|e| ResourceError::Io {
        path: raw.to_owned(),
        error: e.to_string(),
    })?;
    let abs = resolve(walls, &root, raw)?;
    let shown = raw.to_owned();
    tokio::task::spawn_blocking(move || beneath::read(&root, &abs, MAX_RESOURCE_BYTES))
        .await
        .map_err(|e| ResourceError::Io {
            path: shown.clone(),
            error: e.to_string(),
        })?
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ResourceError::NotFound(shown),
            std::io::ErrorKind::InvalidData => {
                ResourceError::TooLarge(format!(
                    "{shown} is larger than {MAX_RESOURCE_BYTES} bytes; read it in parts with read_file"
                ))
            }
            _ => ResourceError::Io {
                path: shown,
                error: e.to_string(),
            },
        })
}

/// Where `raw` leads, if a resource read may serve it.
fn resolve(walls: &FileWalls, root: &Path, raw: &str) -> Result<PathBuf, ResourceError> {
    if raw.is_empty() || Path::new(raw).is_absolute() {
        return Err(ResourceError::Refused(format!(
            "{raw:?} is not a path inside the workspace"
        )));
    }
    let r = crate::paths::resolve(root, raw, Access::Read)
        .map_err(|e| ResourceError::Refused(e.to_string()))?;
    if !r.inside {
        return Err(ResourceError::Refused(format!(
            "{raw} resolves outside the session's workspace"
        )));
    }
    match read_approval(walls, &r) {
        Err(denied) => Err(ResourceError::Refused(
            denied.content.as_str().unwrap_or("refused").to_owned(),
        )),
        Ok(a) if a.baseline != ApprovalPolicy::Auto => Err(ResourceError::Refused(format!(
            "{raw}: {}; call read_file to ask for approval",
            a.reason
        ))),
        Ok(_) if !r.exists => Err(ResourceError::NotFound(raw.to_owned())),
        Ok(_) => Ok(r.abs),
    }
}

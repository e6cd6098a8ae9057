//! Filesystem resolution of tool paths: the effectful edge of
//! [`crate::policy::workspace`], which owns the pure rules and verdict types.
//!
//! Resolution works like `realpath(3)` with a missing tail: components are
//! walked one by one from the filesystem root; existing symlinks (dangling ones
//! included) are followed, at most [`MAX_SYMLINK_HOPS`] times; a `..` on an
//! existing, symlink-free prefix goes to the physical parent. Once a component
//! does not exist, the remaining components are appended as they are and a
//! later `..` is refused ([`PathError::NotFound`]: the walk cannot pass through
//! a directory that does not exist, and a lexical collapse would guess).
//!
//! Limits: resolution is a check at one instant; a concurrent process (for
//! example the tenant's own terminal) can swap a directory for a symlink
//! between [`resolve`] and the open. The file tools therefore open through
//! `crate::tools::beneath` (`openat2` with `RESOLVE_BENEATH`), where the
//! kernel refuses any resolution that leaves the workspace at open time.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::policy::workspace::{
    check_raw, classify, Access, Classification, PathError, Resolved, MAX_PATH_BYTES,
    MAX_SYMLINK_HOPS,
};

#[cfg(test)]
#[path = "paths_tests.rs"]
mod tests;

/// Resolve a tool's `path` argument against the workspace root: relative
/// paths join the canonical root; absolute paths stay absolute (reads may go
/// outside, with approval); `..` and symlinks are resolved through the real
/// filesystem (see the module docs), so a symlink inside the workspace that
/// points outside is outside. For [`Access::Write`], anything not inside is
/// `Err(EscapesWorkspace)` – including a not-yet-existing file whose parent
/// resolves outside.
pub fn resolve(root: &Path, raw: &str, access: Access) -> Result<Resolved, PathError> {
    let path = check_raw(raw)?;
    let root = canonical_root(root)?;
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    };
    if joined.as_os_str().len() > MAX_PATH_BYTES {
        return Err(PathError::TooLong);
    }
    let (abs, exists) = walk(&joined, raw)?;
    let Classification {
        inside,
        rel,
        sensitivity,
    } = classify(&root, &abs, access, raw)?;
    Ok(Resolved {
        abs,
        rel,
        inside,
        sensitivity,
        exists,
    })
}

fn canonical_root(root: &Path) -> Result<PathBuf, PathError> {
    let canonical = fs::canonicalize(root)
        .map_err(|e| PathError::Io(format!("workspace root is unavailable: {e}")))?;
    match fs::metadata(&canonical) {
        Ok(meta) if meta.is_dir() => Ok(canonical),
        Ok(_) => Err(PathError::Io(
            "workspace root is not a directory".to_owned(),
        )),
        Err(e) => Err(PathError::Io(format!("workspace root is unavailable: {e}"))),
    }
}

/// One step of the walk.
enum Step {
    /// Restart at an anchor (`/`, or a Windows prefix + root).
    Anchor(PathBuf),
    Up,
    Name(OsString),
}

fn steps_of(path: &Path) -> Vec<Step> {
    let mut anchor = PathBuf::new();
    let mut steps = Vec::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => anchor.push(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => steps.push(Step::Up),
            Component::Normal(name) => steps.push(Step::Name(name.to_owned())),
        }
    }
    if !anchor.as_os_str().is_empty() {
        steps.insert(0, Step::Anchor(anchor));
    }
    steps
}

/// Physical resolution of an absolute path; returns the canonical target and
/// whether it exists.
fn walk(start: &Path, raw: &str) -> Result<(PathBuf, bool), PathError> {
    let mut pending: VecDeque<Step> = steps_of(start).into();
    let mut current = PathBuf::new();
    // `current` exists and is a directory; once false, the tail is appended.
    let mut existing = true;
    let mut current_is_dir = true;
    let mut hops = 0usize;

    while let Some(step) = pending.pop_front() {
        match step {
            Step::Anchor(anchor) => {
                current = anchor;
                existing = true;
                current_is_dir = true;
            }
            Step::Up => {
                if !existing || !current_is_dir {
                    return Err(PathError::NotFound(raw.to_owned()));
                }
                // `current` is symlink-free, so its lexical parent is physical.
                current.pop();
            }
            Step::Name(name) => {
                if !existing || !current_is_dir {
                    existing = false;
                    current.push(name);
                    continue;
                }
                let candidate = current.join(&name);
                match fs::symlink_metadata(&candidate) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        hops += 1;
                        if hops > MAX_SYMLINK_HOPS {
                            return Err(PathError::Io(format!(
                                "too many levels of symbolic links: {raw}"
                            )));
                        }
                        let target = fs::read_link(&candidate).map_err(|e| io_error(raw, &e))?;
                        for step in steps_of(&target).into_iter().rev() {
                            pending.push_front(step);
                        }
                    }
                    Ok(meta) => {
                        current = candidate;
                        current_is_dir = meta.is_dir();
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        existing = false;
                        current = candidate;
                    }
                    Err(e) => return Err(io_error(raw, &e)),
                }
            }
        }
        if current.as_os_str().len() > MAX_PATH_BYTES {
            return Err(PathError::TooLong);
        }
    }
    Ok((current, existing))
}

fn io_error(raw: &str, e: &io::Error) -> PathError {
    PathError::Io(format!("cannot resolve path {raw}: {e}"))
}

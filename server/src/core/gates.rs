//! The host's gates on a candidate agents tree (an evolve run's worktree
//! before review or promote), as in the Python original's gate runner:
//!
//! * `path_safety`: no links or special files, no hidden entries, no name
//!   with a backslash or control character, bounded depth and length;
//! * `artifact`: no generated or runtime files (`__pycache__`, `*.pyc`,
//!   tool caches, top-level `.evolve`/`runtime`/`logs`/… folders);
//! * `dependency`: no dependency manifests (cores share the host's
//!   dependencies);
//! * `core_load:<id>`: every changed core (every core when nothing says
//!   what changed) still loads, with unique tool names.
//!
//! Each gate is a pure function over a listing of the tree ([`Entry`]) or
//! over a load result; [`run`] is the one place that reads the disk. A
//! failed phase names what failed; the report passes only when every phase
//! does. [`check_run_id`] and [`run_dir`] are the walls of a run's folder
//! (what `discard` may remove).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::ids::CoreId;

/// Dependency manifests a core may not carry.
pub const DEPENDENCY_FILES: &[&str] = &[
    "pyproject.toml",
    "uv.lock",
    "requirements.txt",
    "requirements.in",
    "Pipfile",
    "Pipfile.lock",
    "poetry.lock",
    "setup.py",
    "setup.cfg",
    "package.json",
    "package-lock.json",
];
/// Folders tools and interpreters generate, anywhere in the tree.
pub const ARTIFACT_DIRS: &[&str] = &[
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    "node_modules",
];
/// Runtime folders that never belong at the top of an agents tree.
pub const RUNTIME_DIRS: &[&str] = &[".evolve", "runtime", "logs", "runs", "history", "registry"];
/// Compiled files.
pub const ARTIFACT_SUFFIXES: &[&str] = &[".pyc", ".pyo"];
/// Deepest path accepted, in segments.
pub const MAX_DEPTH: usize = 32;
/// Longest path accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 512;
/// How many offending paths a phase names.
const SHOWN: usize = 20;

/// What a listed path is (links are never followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Link,
    /// A socket, fifo or device.
    Other,
}

/// One entry of the candidate tree, relative to its root, `/`-separated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    pub kind: Kind,
}

impl Entry {
    pub fn new(path: &str, kind: Kind) -> Self {
        Self {
            path: path.to_owned(),
            kind,
        }
    }
}

/// One gate's verdict.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct Phase {
    pub name: String,
    pub passed: bool,
    pub detail: String,
}

impl Phase {
    fn pass(name: &str, detail: &str) -> Self {
        Self {
            name: name.to_owned(),
            passed: true,
            detail: detail.to_owned(),
        }
    }

    fn fail(name: &str, detail: String) -> Self {
        Self {
            name: name.to_owned(),
            passed: false,
            detail,
        }
    }
}

/// Every phase, and whether all passed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct GateReport {
    pub passed: bool,
    pub phases: Vec<Phase>,
}

impl GateReport {
    pub fn new(phases: Vec<Phase>) -> Self {
        Self {
            passed: !phases.is_empty() && phases.iter().all(|p| p.passed),
            phases,
        }
    }

    /// The failed phases as one line each (`name: detail`).
    pub fn failures(&self) -> Vec<String> {
        self.phases
            .iter()
            .filter(|p| !p.passed)
            .map(|p| format!("{}: {}", p.name, p.detail))
            .collect()
    }
}

fn listed(paths: &[String]) -> String {
    let mut shown: Vec<&str> = paths.iter().take(SHOWN).map(String::as_str).collect();
    shown.sort();
    let more = paths.len().saturating_sub(SHOWN);
    if more > 0 {
        format!("{} (and {more} more)", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// Why one path is unsafe, if it is.
pub fn unsafe_path(e: &Entry) -> Option<&'static str> {
    match e.kind {
        Kind::Link => return Some("a link"),
        Kind::Other => return Some("not a regular file or folder"),
        _ => {}
    }
    if e.path.is_empty() || e.path.starts_with('/') {
        return Some("not a relative path");
    }
    if e.path.len() > MAX_PATH_BYTES {
        return Some("too long");
    }
    if e.path.chars().any(|c| c.is_control() || c == '\\') {
        return Some("a name with a control character or backslash");
    }
    let segments: Vec<&str> = e.path.split('/').collect();
    if segments.len() > MAX_DEPTH {
        return Some("too deep");
    }
    for s in segments {
        match s {
            "" | "." | ".." => return Some("an empty, `.` or `..` segment"),
            s if s.starts_with('.') => return Some("hidden"),
            _ => {}
        }
    }
    None
}

/// `path_safety`: every entry is a plain, visible file or folder.
pub fn path_gate(entries: &[Entry]) -> Phase {
    let bad: Vec<String> = entries
        .iter()
        .filter_map(|e| unsafe_path(e).map(|why| format!("{} ({why})", e.path)))
        .collect();
    if bad.is_empty() {
        Phase::pass("path_safety", "agents tree paths accepted")
    } else {
        Phase::fail(
            "path_safety",
            format!("unsafe paths in the agents tree: {}", listed(&bad)),
        )
    }
}

/// Whether a path is a generated or runtime artifact.
pub fn is_artifact(path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').collect();
    segments.iter().any(|s| ARTIFACT_DIRS.contains(s))
        || segments.first().is_some_and(|s| RUNTIME_DIRS.contains(s))
        || ARTIFACT_SUFFIXES
            .iter()
            .any(|suffix| path.ends_with(suffix))
}

/// `artifact`: no generated or runtime files.
pub fn artifact_gate(entries: &[Entry]) -> Phase {
    let bad: Vec<String> = entries
        .iter()
        .filter(|e| is_artifact(&e.path))
        .map(|e| e.path.clone())
        .collect();
    if bad.is_empty() {
        Phase::pass("artifact", "no generated or runtime artifacts")
    } else {
        Phase::fail(
            "artifact",
            format!(
                "generated or runtime artifacts are not allowed: {}",
                listed(&bad)
            ),
        )
    }
}

/// `dependency`: no dependency manifests anywhere.
pub fn dependency_gate(entries: &[Entry]) -> Phase {
    let bad: Vec<String> = entries
        .iter()
        .filter(|e| e.kind == Kind::File)
        .filter(|e| {
            let name = e.path.rsplit('/').next().unwrap_or("");
            DEPENDENCY_FILES.contains(&name)
        })
        .map(|e| e.path.clone())
        .collect();
    if bad.is_empty() {
        Phase::pass("dependency", "host-shared dependencies only")
    } else {
        Phase::fail(
            "dependency",
            format!("agent cores cannot declare dependencies: {}", listed(&bad)),
        )
    }
}

/// Which cores the load gate checks: those a changed path lies in (a
/// top-level file such as the global `agent.yaml` is no core), or every
/// core of the tree when nothing says what changed.
pub fn cores_to_load(changed: Option<&[String]>, cores: &[String]) -> Vec<String> {
    let mut out: Vec<String> = match changed {
        None => cores.to_vec(),
        Some(paths) => paths
            .iter()
            .filter_map(|p| p.split_once('/').map(|(first, _)| first))
            .filter(|first| CoreId::parse(first).is_ok())
            .map(str::to_owned)
            .collect(),
    };
    if changed.is_some_and(|p| p.iter().any(|p| p == "agent.yaml")) {
        // The global fallback feeds every core.
        out.extend(cores.iter().cloned());
    }
    out.sort();
    out.dedup();
    out
}

/// Names given to more than one tool: (name, every provenance), sorted.
pub fn duplicate_names(tools: &[(String, String)]) -> Vec<(String, Vec<String>)> {
    let mut by: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (name, provenance) in tools {
        by.entry(name).or_default().push(provenance.clone());
    }
    by.into_iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

/// `core_load:<id>`: the core loads (`Ok` holds its tools as
/// (name, provenance)), is still there, and no two tools share a name.
pub fn load_phase(core: &str, result: Option<Result<Vec<(String, String)>, String>>) -> Phase {
    let name = format!("core_load:{core}");
    match result {
        None => Phase::pass(&name, "core removed"),
        Some(Err(e)) => Phase::fail(&name, e),
        Some(Ok(tools)) => {
            let dups = duplicate_names(&tools);
            if dups.is_empty() {
                Phase {
                    name,
                    passed: true,
                    detail: format!("loaded with {} tools", tools.len()),
                }
            } else {
                let shown: Vec<String> = dups
                    .iter()
                    .map(|(n, from)| format!("{n} ({})", from.join(", ")))
                    .collect();
                Phase::fail(
                    &name,
                    format!(
                        "tool names must be unique; rename one of: {}",
                        shown.join("; ")
                    ),
                )
            }
        }
    }
}

/// An evolve run id: 1 to 64 of `[A-Za-z0-9_-]`, not starting with `-`.
pub fn check_run_id(raw: &str) -> Result<String, String> {
    let id = raw.trim();
    let ok = !id.is_empty()
        && id.len() <= 64
        && !id.starts_with('-')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(id.to_owned())
    } else {
        Err(format!(
            "run_id {:?} is not a run id (1 to 64 letters, digits, `-` or `_`)",
            id.chars().take(80).collect::<String>()
        ))
    }
}

/// A run's folder: `<agents>/.evolve/runs/<run_id>` (the id checked first).
pub fn run_dir(agents: &Path, run_id: &str) -> Result<PathBuf, String> {
    let id = check_run_id(run_id)?;
    Ok(agents.join(".evolve").join("runs").join(id))
}

/// The listing of a candidate tree: every entry below `root` (links not
/// followed), except the top-level `.git` of a worktree.
pub fn list_tree(root: &Path) -> std::io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, rel)) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if rel.is_empty() && name == ".git" {
                continue;
            }
            let path = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let ft = std::fs::symlink_metadata(entry.path())?.file_type();
            let kind = if ft.is_symlink() {
                Kind::Link
            } else if ft.is_dir() {
                Kind::Dir
            } else if ft.is_file() {
                Kind::File
            } else {
                Kind::Other
            };
            if kind == Kind::Dir && path.split('/').count() <= MAX_DEPTH {
                stack.push((entry.path(), path.clone()));
            }
            out.push(Entry { path, kind });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Every gate on the candidate tree at `root`; `changed` (paths relative
/// to it) narrows the load gate to the cores they touch.
pub fn run(root: &Path, changed: Option<&[String]>) -> GateReport {
    let entries = match list_tree(root) {
        Ok(e) => e,
        Err(e) => {
            return GateReport::new(vec![Phase::fail(
                "path_safety",
                format!("the agents tree cannot be read: {e}"),
            )])
        }
    };
    let mut phases = vec![
        path_gate(&entries),
        artifact_gate(&entries),
        dependency_gate(&entries),
    ];
    let cores: Vec<String> = entries
        .iter()
        .filter(|e| e.kind == Kind::File)
        .filter_map(|e| e.path.strip_suffix("/agent.yaml"))
        .filter(|c| !c.contains('/') && CoreId::parse(c).is_ok())
        .map(str::to_owned)
        .collect();
    for core in cores_to_load(changed, &cores) {
        let dir = root.join(&core);
        let result = (std::fs::symlink_metadata(dir.join("agent.yaml")).is_ok()).then(|| {
            super::load_core(&dir, &core, &crate::catalog::toolset)
                .map(|c| {
                    let mut tools: Vec<(String, String)> = c
                        .builtin_tools
                        .iter()
                        .map(|t| (t.clone(), format!("builtin {t}")))
                        .collect();
                    tools.extend(
                        c.authored
                            .iter()
                            .map(|t| (t.name.clone(), format!("authored {}", t.dir_rel))),
                    );
                    tools
                })
                .map_err(|e| e.to_string())
        });
        phases.push(load_phase(&core, result));
    }
    GateReport::new(phases)
}

#[cfg(test)]
#[path = "gates_tests.rs"]
mod tests;

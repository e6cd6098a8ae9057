//! `skill_manage`: create, update, patch and delete the skills of the
//! session's core, and write or remove their support files. Every change is
//! one new live revision of the core, made through the core's own edit path
//! (staged, loaded, committed, refused when the core would break), so it
//! shows from the next turn and never in the running one.
//!
//! What may be touched is decided by pure checks ([`check_name`],
//! [`check_support_path`], [`under_root`]): a skill is one plain segment,
//! support files live under `references/`, `templates/`, `scripts/` or
//! `assets/` of a packaged skill, and every path stays below the core's
//! skill root. Absolute paths, `..`, hidden segments and anything outside
//! the root are `denied`; each write needs `fs.write` approval.

use std::path::Path;

use serde::Deserialize;
use serde_json::{json, Value};

use super::contract::{Approval, Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};
use crate::core::edit::{CoreEditError, Edit};
use crate::core::path::CoreFilePath;
use crate::policy::approval_policy::{ApprovalPolicy, Risk};

/// The folders a packaged skill's support files live in.
pub const SUPPORT_DIRS: &[&str] = &["assets", "references", "scripts", "templates"];
/// Longest skill name accepted, in bytes.
const MAX_NAME_BYTES: usize = 128;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Create,
    Update,
    Delete,
    Patch,
    WriteFile,
    RemoveFile,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Delete => "delete",
            Action::Patch => "patch",
            Action::WriteFile => "write_file",
            Action::RemoveFile => "remove_file",
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct Args {
    pub action: Action,
    pub name: String,
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub file_path: Option<String>,
    #[serde(default)]
    pub file_content: Option<String>,
    #[serde(default)]
    pub old_string: Option<String>,
    #[serde(default)]
    pub new_string: Option<String>,
    #[serde(default)]
    pub replace_all: bool,
}

/// Why a name or path was refused: `denied` for an escape (absolute, `..`,
/// hidden, outside the root), `invalid` for a malformed value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: ToolStatus,
    pub message: String,
}

impl Refusal {
    fn denied(message: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Denied,
            message: message.into(),
        }
    }

    fn invalid(message: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Invalid,
            message: message.into(),
        }
    }

    fn outcome(self) -> ToolOutcome {
        ToolOutcome::error(self.status, self.message)
    }
}

fn looks_absolute(raw: &str) -> bool {
    let b = raw.as_bytes();
    raw.starts_with('/')
        || raw.starts_with('\\')
        || raw.starts_with('~')
        || (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':')
}

/// A skill name: one plain, non-hidden, relative segment.
pub fn check_name(raw: &str) -> Result<String, Refusal> {
    let name = raw.trim();
    if name.is_empty() {
        return Err(Refusal::invalid("name is required"));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(Refusal::invalid(format!(
            "name is longer than {MAX_NAME_BYTES} bytes"
        )));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(Refusal::invalid(format!("name contains {c:?}")));
    }
    if looks_absolute(name) || name.contains('/') || name.contains('\\') || name.starts_with('.') {
        return Err(Refusal::denied(
            "name must be a single non-hidden relative skill id",
        ));
    }
    Ok(name.to_owned())
}

/// A support file of a packaged skill, relative to the skill's folder:
/// `<references|templates|scripts|assets>/…`, no `..`, `.`, empty or hidden
/// segment, not absolute.
pub fn check_support_path(raw: &str) -> Result<String, Refusal> {
    let path = raw.trim();
    let allowed = || {
        format!(
            "file_path must be under one of: {}",
            SUPPORT_DIRS.join(", ")
        )
    };
    if path.is_empty() {
        return Err(Refusal::invalid("file_path is required"));
    }
    if let Some(c) = path.chars().find(|c| c.is_control()) {
        return Err(Refusal::invalid(format!("file_path contains {c:?}")));
    }
    if looks_absolute(path) || path.contains('\\') {
        return Err(Refusal::denied(format!(
            "file_path must be relative to the skill: {}",
            allowed()
        )));
    }
    let segments: Vec<&str> = path.split('/').collect();
    for s in &segments {
        match *s {
            "" | "." | ".." => {
                return Err(Refusal::denied(format!(
                    "file_path may not use empty, `.` or `..` segments; {}",
                    allowed()
                )))
            }
            s if s.starts_with('.') => {
                return Err(Refusal::denied(format!(
                    "file_path may not name the hidden entry {s:?}"
                )))
            }
            _ => {}
        }
    }
    if !SUPPORT_DIRS.contains(&segments[0]) {
        return Err(Refusal::denied(allowed()));
    }
    if segments.len() < 2 {
        return Err(Refusal::invalid(format!(
            "file_path must name a file inside {}/",
            segments[0]
        )));
    }
    Ok(path.to_owned())
}

/// Whether the core-relative `path` lies strictly below the skill root
/// `root` (empty: the core folder) and is a path the core API accepts.
pub fn under_root(root: &str, path: &str) -> bool {
    if CoreFilePath::parse(path).is_err() {
        return false;
    }
    let root = root.trim_end_matches('/');
    root.is_empty()
        || path
            .strip_prefix(root)
            .is_some_and(|rest| rest.starts_with('/') && rest.len() > 1)
}

/// Where a skill's files are, relative to the core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillTarget {
    pub name: String,
    /// The markdown file (`<root>/<name>/SKILL.md` or `<root>/<name>.md`).
    pub file: String,
    /// The packaged skill's folder, or the single file's folder.
    pub dir: String,
    pub packaged: bool,
    pub exists: bool,
}

impl SkillTarget {
    /// What a `delete` removes: the packaged folder or the single file.
    pub fn whole(&self) -> &str {
        if self.packaged {
            &self.dir
        } else {
            &self.file
        }
    }
}

fn join(root: &str, rest: &str) -> String {
    if root.is_empty() {
        rest.to_owned()
    } else {
        format!("{root}/{rest}")
    }
}

fn parent(path: &str) -> String {
    path.rsplit_once('/')
        .map(|(p, _)| p.to_owned())
        .unwrap_or_default()
}

/// Which skill `name` names: a skill the core already lists (its
/// core-relative markdown file), else `<root>/<name>/SKILL.md` or
/// `<root>/<name>.md` as they exist, else a new packaged skill.
pub fn resolve_target(
    root: &str,
    name: &str,
    listed: Option<&str>,
    packaged_exists: bool,
    single_exists: bool,
) -> SkillTarget {
    let packaged_file = join(root, &format!("{name}/SKILL.md"));
    let single_file = join(root, &format!("{name}.md"));
    let (file, packaged, exists) = match listed {
        Some(f) => (f.to_owned(), f.ends_with("/SKILL.md"), true),
        None if packaged_exists => (packaged_file, true, true),
        None if single_exists => (single_file, false, true),
        None => (packaged_file, true, false),
    };
    SkillTarget {
        name: name.to_owned(),
        dir: parent(&file),
        file,
        packaged,
        exists,
    }
}

/// What execute does, decided by plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Write `content` to `path` (create, update, write_file); `shown`
    /// is the path as the caller named it.
    Put {
        path: String,
        shown: String,
        content: String,
    },
    /// Replace `old` by `new` in `path` (once, or every time).
    Patch {
        path: String,
        shown: String,
        old: String,
        new: String,
        all: bool,
    },
    /// Remove one file (remove_file, or delete of a single-file skill).
    Remove { path: String, shown: String },
    /// Remove a packaged skill's folder.
    RemoveTree { path: String },
}

impl Op {
    fn path(&self) -> &str {
        match self {
            Op::Put { path, .. }
            | Op::Patch { path, .. }
            | Op::Remove { path, .. }
            | Op::RemoveTree { path } => path,
        }
    }
}

#[derive(Debug)]
pub struct Prepared {
    pub action: Action,
    pub name: String,
    pub op: Op,
    /// What the approval and the result name (core-relative).
    pub target: String,
}

fn required(v: Option<String>, key: &str) -> Result<String, Refusal> {
    match v {
        Some(s) if !s.is_empty() => Ok(s),
        _ => Err(Refusal::invalid(format!("{key} is required"))),
    }
}

/// Pure: from a resolved target and the arguments to the operation, or why
/// not. `support_exists` says whether a named support file is a regular file.
pub fn plan_op(
    root: &str,
    target: &SkillTarget,
    args: Args,
    support_is_file: impl Fn(&str) -> bool,
) -> Result<(Op, String), Refusal> {
    let support = |raw: Option<String>| -> Result<String, Refusal> {
        if !target.packaged {
            return Err(Refusal::invalid(format!(
                "support files require a packaged skill: {}",
                target.name
            )));
        }
        let rel = check_support_path(raw.as_deref().unwrap_or(""))?;
        Ok(join(&target.dir, &rel))
    };
    let (op, target_path) = match args.action {
        Action::Create if target.exists => {
            return Err(Refusal::invalid(format!(
                "skill already exists: {}",
                target.name
            )))
        }
        Action::Create => {
            let content = required(args.content, "content")?;
            (
                Op::Put {
                    path: target.file.clone(),
                    shown: target.file.rsplit('/').next().unwrap_or("").to_owned(),
                    content,
                },
                target.file.clone(),
            )
        }
        _ if !target.exists => {
            return Err(Refusal {
                status: ToolStatus::NotFound,
                message: format!("skill not found: {}", target.name),
            })
        }
        Action::Update => {
            let content = required(args.content, "content")?;
            (
                Op::Put {
                    path: target.file.clone(),
                    shown: target.file.rsplit('/').next().unwrap_or("").to_owned(),
                    content,
                },
                target.file.clone(),
            )
        }
        Action::Delete => {
            let path = target.whole().to_owned();
            let op = if target.packaged {
                Op::RemoveTree { path: path.clone() }
            } else {
                Op::Remove {
                    path: path.clone(),
                    shown: target.file.rsplit('/').next().unwrap_or("").to_owned(),
                }
            };
            (op, path)
        }
        Action::Patch => {
            let (path, shown) = match args.file_path.as_deref().map(str::trim) {
                None | Some("") => {
                    let shown = target.file.rsplit('/').next().unwrap_or("").to_owned();
                    (target.file.clone(), shown)
                }
                Some(_) => {
                    let path = support(args.file_path.clone())?;
                    let shown = check_support_path(args.file_path.as_deref().unwrap_or(""))?;
                    if !support_is_file(&path) {
                        return Err(Refusal {
                            status: ToolStatus::NotFound,
                            message: format!("skill file not readable: {shown}"),
                        });
                    }
                    (path, shown)
                }
            };
            let old = required(args.old_string, "old_string")?;
            let Some(new) = args.new_string else {
                return Err(Refusal::invalid("new_string is required"));
            };
            (
                Op::Patch {
                    path: path.clone(),
                    shown,
                    old,
                    new,
                    all: args.replace_all,
                },
                path,
            )
        }
        Action::WriteFile => {
            let path = support(args.file_path.clone())?;
            let shown = check_support_path(args.file_path.as_deref().unwrap_or(""))?;
            let Some(content) = args.file_content else {
                return Err(Refusal::invalid("file_content is required"));
            };
            (
                Op::Put {
                    path: path.clone(),
                    shown,
                    content,
                },
                path,
            )
        }
        Action::RemoveFile => {
            let path = support(args.file_path.clone())?;
            let shown = check_support_path(args.file_path.as_deref().unwrap_or(""))?;
            if !support_is_file(&path) {
                return Err(Refusal {
                    status: ToolStatus::NotFound,
                    message: format!("skill file not found: {shown}"),
                });
            }
            (
                Op::Remove {
                    path: path.clone(),
                    shown,
                },
                path,
            )
        }
    };
    // The last wall: whatever was composed stays below the skill root.
    if !under_root(root, op.path()) || !under_root(root, &target_path) {
        return Err(Refusal::denied(format!(
            "{} is outside the core's skill root {root:?}",
            op.path()
        )));
    }
    Ok((op, target_path))
}

/// Replace `old` by `new` in `text`: once (it must match exactly once) or
/// every time (`all`).
pub fn replace(text: &str, old: &str, new: &str, all: bool, shown: &str) -> Result<String, String> {
    let n = text.matches(old).count();
    if n == 0 {
        return Err(format!("old_string not found in {shown}"));
    }
    if !all && n != 1 {
        return Err(format!(
            "old_string matched {n} times in {shown}; set replace_all=true to replace all"
        ));
    }
    Ok(if all {
        text.replace(old, new)
    } else {
        text.replacen(old, new, 1)
    })
}

/// Whether any existing part of `rel` under `dir` is a link (a link could
/// lead out of the core; the edit path refuses them too).
fn through_link(dir: &Path, rel: &str) -> bool {
    let mut current = dir.to_path_buf();
    for segment in rel.split('/') {
        current.push(segment);
        match std::fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    false
}

fn is_file(dir: &Path, rel: &str) -> bool {
    !through_link(dir, rel) && std::fs::symlink_metadata(dir.join(rel)).is_ok_and(|m| m.is_file())
}

pub struct SkillManage;

impl Tool for SkillManage {
    type Args = Args;
    type Prepared = Prepared;

    fn plan(env: &ToolEnv<'_>, args: Args) -> Plan<Prepared> {
        let core = &env.ctx.core;
        let root = core.skills_root.trim_end_matches('/').to_owned();
        let name = match check_name(&args.name) {
            Ok(n) => n,
            Err(r) => return Plan::Done(r.outcome()),
        };
        // A skill the turn's core lists, by id, as a core-relative path.
        let listed = env
            .ctx
            .skills
            .iter()
            .find(|doc| doc.id == name)
            .and_then(|doc| doc.md.strip_prefix(&core.dir).ok())
            .map(|p| p.to_string_lossy().replace('\\', "/"));
        let listed = listed.filter(|p| under_root(&root, p) && is_file(&core.dir, p));
        let target = resolve_target(
            &root,
            &name,
            listed.as_deref(),
            is_file(&core.dir, &join(&root, &format!("{name}/SKILL.md"))),
            is_file(&core.dir, &join(&root, &format!("{name}.md"))),
        );
        let action = args.action;
        let (op, target_path) = match plan_op(&root, &target, args, |p| is_file(&core.dir, p)) {
            Ok(x) => x,
            Err(r) => return Plan::Done(r.outcome()),
        };
        if through_link(&core.dir, op.path()) {
            return Plan::Done(ToolOutcome::error(
                ToolStatus::Denied,
                format!(
                    "{} passes through a link; links in cores are not followed",
                    op.path()
                ),
            ));
        }
        let approval = Approval {
            baseline: ApprovalPolicy::Prompt,
            risk: Risk::High,
            action: format!("skill.{}", action.as_str()),
            target: target_path.clone(),
            reason: format!("{} skill {target_path}", action.as_str()),
            preview: json!({"skill_path": target_path, "action": action.as_str()}),
            session_cacheable: true,
        };
        Plan::run(
            Gate::one(approval),
            Prepared {
                action,
                name,
                op,
                target: target_path,
            },
        )
    }

    async fn execute(env: &ToolEnv<'_>, p: Prepared) -> ToolOutcome {
        execute(env, p).await
    }
}

fn core_path(rel: &str) -> Result<CoreFilePath, ToolOutcome> {
    CoreFilePath::parse(rel).map_err(|e| ToolOutcome::error(ToolStatus::Denied, e.0))
}

async fn read_text(dir: &Path, rel: &str) -> Option<String> {
    if through_link(dir, rel) {
        return None;
    }
    let m = tokio::fs::symlink_metadata(dir.join(rel)).await.ok()?;
    if !m.is_file() || m.len() > crate::core::edit::MAX_FILE_BYTES as u64 {
        return None;
    }
    tokio::fs::read_to_string(dir.join(rel)).await.ok()
}

async fn execute(env: &ToolEnv<'_>, p: Prepared) -> ToolOutcome {
    let dir = env.ctx.core.dir.clone();
    let action = p.action.as_str();
    let mut diff = None;
    let (edit_path, edit, changed, message) = match &p.op {
        Op::Put {
            path,
            shown,
            content,
        } => {
            let before = read_text(&dir, path).await;
            let message = match p.action {
                Action::Create => format!("skill created: {}", p.name),
                Action::Update => format!("skill updated: {}", p.name),
                _ => format!("skill file written: {shown}"),
            };
            let changed = before.as_deref() != Some(content.as_str());
            (
                path,
                Edit::Put(content.clone().into_bytes()),
                changed,
                message,
            )
        }
        Op::Patch {
            path,
            shown,
            old,
            new,
            all,
        } => {
            let Some(text) = read_text(&dir, path).await else {
                return ToolOutcome::error(
                    ToolStatus::NotFound,
                    format!("skill file not readable: {shown}"),
                );
            };
            let patched = match replace(&text, old, new, *all, shown) {
                Ok(t) => t,
                Err(m) => return ToolOutcome::error(ToolStatus::Invalid, m),
            };
            let d = similar::TextDiff::from_lines(&text, &patched)
                .unified_diff()
                .header(&format!("a/{shown}"), &format!("b/{shown}"))
                .to_string();
            let message = if d.is_empty() {
                format!("patched {shown}")
            } else {
                d.trim_end().to_owned()
            };
            diff = Some(d);
            (
                path,
                Edit::Put(patched.clone().into_bytes()),
                text != patched,
                message,
            )
        }
        Op::Remove { path, shown } => {
            let message = match p.action {
                Action::Delete => format!("skill deleted: {}", p.name),
                _ => format!("skill file removed: {shown}"),
            };
            (path, Edit::Delete, true, message)
        }
        Op::RemoveTree { path } => (
            path,
            Edit::DeleteTree,
            true,
            format!("skill deleted: {}", p.name),
        ),
    };
    let rel = match core_path(edit_path) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let commit = format!("skill_manage {action} {}", p.name);
    let change = match env
        .host
        .cores()
        .change_core(env.ctx, vec![(rel, edit)], commit)
        .await
    {
        Ok(c) => c,
        Err(CoreEditError::WouldBreak(e)) => {
            return ToolOutcome {
                status: ToolStatus::Failed,
                content: Value::String(format!(
                    "skill {action} rolled back because core load failed: {e}"
                )),
                data: json!({"success": false, "action": action, "path": p.target, "error": e}),
            }
        }
        Err(CoreEditError::NotFound) => {
            return ToolOutcome::error(ToolStatus::NotFound, format!("skill not found: {}", p.name))
        }
        Err(CoreEditError::Conflict(m) | CoreEditError::Invalid(m)) => {
            return ToolOutcome::error(ToolStatus::Denied, m)
        }
        Err(CoreEditError::TooLarge(m) | CoreEditError::Forbidden(m)) => {
            return ToolOutcome::error(ToolStatus::Invalid, m)
        }
        // Only evolve runs' promote gives these.
        Err(e @ (CoreEditError::GatesFailed(_) | CoreEditError::McpReviewRequired { .. })) => {
            return ToolOutcome::error(ToolStatus::Failed, e.to_string())
        }
        Err(CoreEditError::Internal(e)) => {
            tracing::error!(error = %e, "skill_manage could not change the core");
            return ToolOutcome::error(ToolStatus::Failed, "the core could not be changed");
        }
    };
    let mut payload = json!({
        "success": true,
        "action": action,
        "path": p.target,
        "changed": changed,
        "effective_next_turn": true,
        "message": message,
        "revision": change.revision,
    });
    if let Some(d) = diff {
        payload["diff"] = Value::String(d);
    }
    ToolOutcome::ok_text(message, payload)
}

#[cfg(test)]
#[path = "skill_manage_tests.rs"]
mod tests;

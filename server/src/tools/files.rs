//! `read_file`, `write_file` and `patch`: workspace-scoped file effects.
//! Reads outside the workspace or of sensitive paths need approval; writes
//! outside the workspace are denied; symlinks and `..` are resolved before
//! any decision, and again right before the write.

use serde::Deserialize;
use serde_json::{json, Value};

use super::beneath;
use super::contract::{lenient_int, Approval, Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};
use crate::policy::approval_policy::{ApprovalPolicy, Risk};
use crate::policy::file_walls::{FileWalls, ReadVerdict};
use crate::policy::workspace::{Access, PathError, Resolved, Sensitivity};

/// Characters `read_file` returns at most per call.
pub const READ_LIMIT_CHARS: i64 = 20_000;
/// Largest file a file tool will load.
const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// The path as the model should see it: relative inside the workspace.
pub(crate) fn shown(r: &Resolved) -> String {
    match &r.rel {
        Some(rel) if r.inside => rel.display().to_string(),
        _ => r.abs.display().to_string(),
    }
}

pub(crate) fn path_error(e: PathError) -> ToolOutcome {
    match e {
        PathError::EscapesWorkspace(_) => ToolOutcome::error(ToolStatus::Denied, e.to_string()),
        PathError::NotFound(_) | PathError::Io(_) => {
            ToolOutcome::error(ToolStatus::Failed, e.to_string())
        }
        _ => ToolOutcome::error(ToolStatus::Invalid, e.to_string()),
    }
}

/// Approval for reading `r`: automatic inside the workspace for ordinary
/// files; a prompt (risk high) for sensitive paths and under an operator
/// read root; refused, whatever the approval, anywhere else (the server's
/// home above all: [`FileWalls`]).
pub(crate) fn read_approval(walls: &FileWalls, r: &Resolved) -> Result<Approval, ToolOutcome> {
    if let ReadVerdict::Denied(refusal) = walls.read_resolved(r.inside, &r.abs) {
        return Err(ToolOutcome::error(
            ToolStatus::Denied,
            format!("{} (rule: {})", refusal.message, refusal.rule),
        ));
    }
    let sensitive = !matches!(r.sensitivity, Sensitivity::None);
    let (baseline, why) = if !r.inside {
        (
            ApprovalPolicy::Prompt,
            "read under an operator read root".to_owned(),
        )
    } else if let Sensitivity::Sensitive(kind) = r.sensitivity {
        (
            ApprovalPolicy::Prompt,
            format!("read of a sensitive path ({kind})"),
        )
    } else {
        (ApprovalPolicy::Auto, String::new())
    };
    let risk = if sensitive || !r.inside {
        Risk::High
    } else {
        Risk::Low
    };
    Ok(Approval {
        baseline,
        risk,
        action: "read".into(),
        target: shown(r),
        reason: why,
        preview: json!({"path": shown(r)}),
        session_cacheable: true,
    })
}

/// `read_file`.
pub struct ReadFile;

#[derive(Debug, Deserialize)]
pub struct ReadArgs {
    #[serde(default)]
    pub path: String,
    #[serde(default, deserialize_with = "lenient_int")]
    pub offset: Option<i64>,
    #[serde(default, deserialize_with = "lenient_int")]
    pub limit: Option<i64>,
}

/// A read, resolved and approved.
#[derive(Debug)]
pub struct PlannedRead {
    pub target: Resolved,
    pub offset: i64,
    pub limit: i64,
}

impl Tool for ReadFile {
    type Args = ReadArgs;
    type Prepared = PlannedRead;

    fn plan(env: &ToolEnv<'_>, args: ReadArgs) -> Plan<PlannedRead> {
        let r = match crate::paths::resolve(env.workspace(), &args.path, Access::Read) {
            Ok(r) => r,
            Err(e) => return Plan::Done(path_error(e)),
        };
        let approval = match read_approval(&env.walls.files, &r) {
            Ok(a) => a,
            Err(denied) => return Plan::Done(denied),
        };
        let offset = args.offset.unwrap_or(0).max(0);
        let limit = match args.limit {
            Some(l) if l > 0 => l.min(READ_LIMIT_CHARS),
            _ => READ_LIMIT_CHARS,
        };
        Plan::run(
            Gate::one(approval),
            PlannedRead {
                target: r,
                offset,
                limit,
            },
        )
    }

    async fn execute(env: &ToolEnv<'_>, p: PlannedRead) -> ToolOutcome {
        read_file(env, &p.target, p.offset, p.limit).await
    }
}

async fn read_file(env: &ToolEnv<'_>, r: &Resolved, offset: i64, limit: i64) -> ToolOutcome {
    if !r.exists {
        return ToolOutcome::error(
            ToolStatus::Failed,
            format!("path does not exist: {}", shown(r)),
        );
    }
    let bytes = match read_beneath(env, r).await {
        Ok(b) => b,
        Err(e) => {
            return ToolOutcome::error(ToolStatus::Failed, format!("cannot read {}: {e}", shown(r)))
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let total = text.chars().count() as i64;
    let start = offset.min(total);
    let end = (start + limit).min(total);
    let mut out: String = text
        .chars()
        .skip(start as usize)
        .take((end - start) as usize)
        .collect();
    if end < total {
        out.push_str(&format!("\n...[truncated {} chars]", total - end));
    }
    ToolOutcome::ok_text(
        out,
        json!({"path": shown(r), "offset": start, "end": end, "total_chars": total}),
    )
}

/// Resolve a write target; outside the workspace is a denial.
fn write_target(workspace: &std::path::Path, raw: &str) -> Result<Resolved, ToolOutcome> {
    crate::paths::resolve(workspace, raw, Access::Write).map_err(|e| match e {
        // `..` past a missing folder cannot be resolved: refuse, touch nothing.
        PathError::NotFound(p) => ToolOutcome::error(
            ToolStatus::Invalid,
            format!("path cannot be resolved inside the workspace: {p}"),
        ),
        other => path_error(other),
    })
}

/// Pure: an evolver working in an evolve run (`in_run`) may not write a
/// dependency manifest; the gates would refuse the run anyway, so it is
/// refused before any approval is asked.
pub(crate) fn blocked_in_run(in_run: bool, r: &Resolved) -> Option<ToolOutcome> {
    let name = r.abs.file_name()?.to_str()?;
    (in_run && crate::core::gates::DEPENDENCY_FILES.contains(&name)).then(|| {
        ToolOutcome::error(
            ToolStatus::Denied,
            format!(
                "write blocked for protected file: {name} (dependency files never enter a core)"
            ),
        )
    })
}

/// Writes always ask (baseline prompt, risk high; critical for a sensitive
/// path), per exact path.
fn write_approval(action: &str, r: &Resolved, preview: Value) -> Approval {
    let risk = match r.sensitivity {
        Sensitivity::None => Risk::High,
        Sensitivity::Sensitive(_) => Risk::Critical,
    };
    let why = match r.sensitivity {
        Sensitivity::None => format!("{action} {}", shown(r)),
        Sensitivity::Sensitive(kind) => {
            format!("{action} of a sensitive path ({kind}): {}", shown(r))
        }
    };
    Approval {
        baseline: ApprovalPolicy::Prompt,
        risk,
        action: action.to_owned(),
        target: shown(r),
        reason: why,
        preview,
        session_cacheable: true,
    }
}

/// After approval, make sure the target still resolves to the same place
/// (a symlink swapped in meanwhile must not redirect the write).
fn recheck(env: &ToolEnv<'_>, raw: &str, before: &Resolved) -> Result<(), ToolOutcome> {
    match crate::paths::resolve(env.workspace(), raw, Access::Write) {
        Ok(now) if now.abs == before.abs => Ok(()),
        Ok(_) => Err(ToolOutcome::error(
            ToolStatus::Denied,
            "the target changed after approval; nothing was written",
        )),
        Err(e) => Err(path_error(e)),
    }
}

/// `write_file`.
pub struct WriteFile;

#[derive(Debug, Deserialize)]
pub struct WriteArgs {
    #[serde(default)]
    pub path: String,
    #[serde(default)]
    pub content: String,
    #[serde(default)]
    pub create_parent_dirs: Option<bool>,
}

/// A write, resolved; `raw` is resolved again right before the write.
#[derive(Debug)]
pub struct PlannedWrite {
    pub raw: String,
    pub target: Resolved,
    pub content: String,
    pub create_parents: bool,
}

impl Tool for WriteFile {
    type Args = WriteArgs;
    type Prepared = PlannedWrite;

    fn plan(env: &ToolEnv<'_>, args: WriteArgs) -> Plan<PlannedWrite> {
        let r = match write_target(env.workspace(), &args.path) {
            Ok(r) => r,
            Err(o) => return Plan::Done(o),
        };
        if let Some(o) = blocked_in_run(env.ctx.delegation.workspace_run.is_some(), &r) {
            return Plan::Done(o);
        }
        let preview = json!({"path": shown(&r), "chars": args.content.chars().count()});
        Plan::run(
            Gate::one(write_approval("write", &r, preview)),
            PlannedWrite {
                raw: args.path,
                target: r,
                content: args.content,
                create_parents: args.create_parent_dirs.unwrap_or(true),
            },
        )
    }

    async fn execute(env: &ToolEnv<'_>, p: PlannedWrite) -> ToolOutcome {
        let r = &p.target;
        if let Err(o) = recheck(env, &p.raw, r) {
            return o;
        }
        let bytes = p.content.as_bytes().to_vec();
        if let Err(e) = write_beneath(env, r, bytes, p.create_parents).await {
            let why = if e.kind() == std::io::ErrorKind::NotFound && !p.create_parents {
                format!("parent folder does not exist: {}", shown(r))
            } else {
                format!("cannot write {}: {e}", shown(r))
            };
            return ToolOutcome::error(ToolStatus::Failed, why);
        }
        let chars = p.content.chars().count();
        ToolOutcome::ok_text(
            format!("wrote {chars} chars to {}", shown(r)),
            json!({"path": shown(r), "chars": chars, "executionStarted": true}),
        )
    }
}

/// `patch`.
pub struct Patch;

#[derive(Debug, Deserialize)]
pub struct PatchArgs {
    #[serde(default)]
    pub path: String,
    #[serde(default)]
    pub old: String,
    #[serde(default)]
    pub new: String,
    #[serde(default, deserialize_with = "lenient_int")]
    pub count: Option<i64>,
}

/// A patch, resolved; `raw` is resolved again right before the write.
#[derive(Debug)]
pub struct PlannedPatch {
    pub raw: String,
    pub target: Resolved,
    pub old: String,
    pub new: String,
    /// Negative: every occurrence.
    pub count: i64,
}

impl Tool for Patch {
    type Args = PatchArgs;
    type Prepared = PlannedPatch;

    fn plan(env: &ToolEnv<'_>, args: PatchArgs) -> Plan<PlannedPatch> {
        if args.old.is_empty() {
            return Plan::Done(ToolOutcome::error(
                ToolStatus::Invalid,
                "old text is required",
            ));
        }
        // -1 (the default) or any negative count replaces every occurrence.
        let count = args.count.unwrap_or(-1);
        let r = match write_target(env.workspace(), &args.path) {
            Ok(r) => r,
            Err(o) => return Plan::Done(o),
        };
        if let Some(o) = blocked_in_run(env.ctx.delegation.workspace_run.is_some(), &r) {
            return Plan::Done(o);
        }
        if !r.exists {
            return Plan::Done(ToolOutcome::error(
                ToolStatus::Failed,
                format!("path does not exist: {}", shown(&r)),
            ));
        }
        let preview = json!({"path": shown(&r), "old_chars": args.old.chars().count(),
            "new_chars": args.new.chars().count(), "count": count});
        Plan::run(
            Gate::one(write_approval("patch", &r, preview)),
            PlannedPatch {
                raw: args.path,
                target: r,
                old: args.old,
                new: args.new,
                count,
            },
        )
    }

    async fn execute(env: &ToolEnv<'_>, p: PlannedPatch) -> ToolOutcome {
        let r = &p.target;
        let (old, new) = (p.old.as_str(), p.new.as_str());
        if let Err(o) = recheck(env, &p.raw, r) {
            return o;
        }
        let before = match read_beneath(env, r).await {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) => {
                return ToolOutcome::error(
                    ToolStatus::Failed,
                    format!("cannot read {}: {e}", shown(r)),
                )
            }
        };
        if !before.contains(old) {
            return ToolOutcome::error(
                ToolStatus::Failed,
                format!("old text not found in {}", shown(r)),
            );
        }
        let after = if p.count < 0 {
            before.replace(old, new)
        } else {
            before.replacen(old, new, p.count as usize)
        };
        if let Err(e) = write_beneath(env, r, after.clone().into_bytes(), false).await {
            return ToolOutcome::error(
                ToolStatus::Failed,
                format!("cannot write {}: {e}", shown(r)),
            );
        }
        let rel = shown(r);
        let diff = similar::TextDiff::from_lines(&before, &after)
            .unified_diff()
            .header(&format!("a/{rel}"), &format!("b/{rel}"))
            .to_string();
        let content = if diff.is_empty() {
            format!("patched {rel}")
        } else {
            diff.trim_end().to_owned()
        };
        ToolOutcome::ok_text(
            content,
            json!({"path": rel, "diff": diff, "executionStarted": true}),
        )
    }
}

/// The folder a resolved path is opened beneath: the canonical workspace,
/// or the operator read root that holds it.
fn anchor(env: &ToolEnv<'_>, r: &Resolved) -> std::io::Result<std::path::PathBuf> {
    if r.inside {
        return env.workspace().canonicalize();
    }
    env.walls
        .files
        .read_root_for(&r.abs)
        .map(std::path::Path::to_path_buf)
        .ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::PermissionDenied, "outside every root")
        })
}

/// Reads `r` race-free beneath its anchor ([`beneath`]), at most
/// [`MAX_FILE_BYTES`].
async fn read_beneath(env: &ToolEnv<'_>, r: &Resolved) -> std::io::Result<Vec<u8>> {
    let root = anchor(env, r)?;
    let abs = r.abs.clone();
    tokio::task::spawn_blocking(move || beneath::read(&root, &abs, MAX_FILE_BYTES))
        .await
        .map_err(std::io::Error::other)?
}

/// Writes `r` race-free beneath the workspace ([`beneath`]); what it creates
/// belongs to the tenant's sandbox uid on a root server.
async fn write_beneath(
    env: &ToolEnv<'_>,
    r: &Resolved,
    bytes: Vec<u8>,
    create_parents: bool,
) -> std::io::Result<()> {
    if !r.inside {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "writes stay inside the workspace",
        ));
    }
    let root = env.workspace().canonicalize()?;
    let abs = r.abs.clone();
    let owner = env.sandbox_owner();
    tokio::task::spawn_blocking(move || beneath::write(&root, &abs, &bytes, create_parents, owner))
        .await
        .map_err(std::io::Error::other)?
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;

//! `read_file`, `write_file` and `patch`: workspace-scoped file effects.
//! Reads outside the workspace or of sensitive paths need approval; writes
//! outside the workspace are denied; symlinks and `..` are resolved before
//! any decision, and again right before the write.

use serde_json::{json, Value};

use super::{arg_bool, arg_i64, arg_str};
use crate::dispatch::{ToolEnv, ToolOutcome, ToolStatus};
use crate::policy::approval_policy::{Policy, Risk};
use crate::policy::file_walls::ReadVerdict;
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
/// home above all: [`FileWalls`](crate::policy::file_walls::FileWalls)).
pub(crate) async fn approve_read(env: &ToolEnv<'_>, r: &Resolved) -> Option<ToolOutcome> {
    if let ReadVerdict::Denied(refusal) = env.walls().files.read_resolved(r.inside, &r.abs) {
        return Some(ToolOutcome::error(
            ToolStatus::Denied,
            format!("{} (rule: {})", refusal.message, refusal.rule),
        ));
    }
    let sensitive = !matches!(r.sensitivity, Sensitivity::None);
    let (baseline, why) = if !r.inside {
        (
            Policy::Prompt,
            "read under an operator read root".to_owned(),
        )
    } else if let Sensitivity::Sensitive(kind) = r.sensitivity {
        (Policy::Prompt, format!("read of a sensitive path ({kind})"))
    } else {
        (Policy::Auto, String::new())
    };
    let risk = if sensitive || !r.inside {
        Risk::High
    } else {
        Risk::Low
    };
    env.approve(
        baseline,
        risk,
        "read",
        &shown(r),
        why,
        json!({"path": shown(r)}),
        true,
    )
    .await
}

pub async fn read_file(env: &ToolEnv<'_>, args: &Value) -> ToolOutcome {
    let raw = arg_str(args, "path").unwrap_or_default();
    let r = match crate::paths::resolve(env.workspace(), raw, Access::Read) {
        Ok(r) => r,
        Err(e) => return path_error(e),
    };
    if let Some(denied) = approve_read(env, &r).await {
        return denied;
    }
    if !r.exists {
        return ToolOutcome::error(
            ToolStatus::Failed,
            format!("path does not exist: {}", shown(&r)),
        );
    }
    let meta = match tokio::fs::metadata(&r.abs).await {
        Ok(m) => m,
        Err(e) => {
            return ToolOutcome::error(
                ToolStatus::Failed,
                format!("cannot read {}: {e}", shown(&r)),
            )
        }
    };
    if !meta.is_file() {
        return ToolOutcome::error(
            ToolStatus::Failed,
            format!("path is not a file: {}", shown(&r)),
        );
    }
    if meta.len() > MAX_FILE_BYTES {
        return ToolOutcome::error(
            ToolStatus::Failed,
            format!("file is too large to read ({} bytes)", meta.len()),
        );
    }
    let bytes = match tokio::fs::read(&r.abs).await {
        Ok(b) => b,
        Err(e) => {
            return ToolOutcome::error(
                ToolStatus::Failed,
                format!("cannot read {}: {e}", shown(&r)),
            )
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let total = text.chars().count() as i64;
    let offset = arg_i64(args, "offset").unwrap_or(0).max(0);
    let limit = match arg_i64(args, "limit") {
        Some(l) if l > 0 => l.min(READ_LIMIT_CHARS),
        _ => READ_LIMIT_CHARS,
    };
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
        json!({"path": shown(&r), "offset": start, "end": end, "total_chars": total}),
    )
}

/// Resolve a write target; outside the workspace is a denial.
async fn write_target(env: &ToolEnv<'_>, raw: &str) -> Result<Resolved, ToolOutcome> {
    crate::paths::resolve(env.workspace(), raw, Access::Write).map_err(|e| match e {
        // `..` past a missing folder cannot be resolved: refuse, touch nothing.
        PathError::NotFound(p) => ToolOutcome::error(
            ToolStatus::Invalid,
            format!("path cannot be resolved inside the workspace: {p}"),
        ),
        other => path_error(other),
    })
}

/// Writes always ask (baseline prompt, risk high), per exact path.
async fn approve_write(
    env: &ToolEnv<'_>,
    action: &str,
    r: &Resolved,
    preview: Value,
) -> Option<ToolOutcome> {
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
    env.approve(Policy::Prompt, risk, action, &shown(r), why, preview, true)
        .await
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

pub async fn write_file(env: &ToolEnv<'_>, args: &Value) -> ToolOutcome {
    let raw = arg_str(args, "path").unwrap_or_default();
    let content = arg_str(args, "content").unwrap_or_default();
    let create_parents = arg_bool(args, "create_parent_dirs").unwrap_or(true);
    let r = match write_target(env, raw).await {
        Ok(r) => r,
        Err(o) => return o,
    };
    let preview = json!({"path": shown(&r), "chars": content.chars().count()});
    if let Some(denied) = approve_write(env, "write", &r, preview).await {
        return denied;
    }
    if let Err(o) = recheck(env, raw, &r) {
        return o;
    }
    if let Some(parent) = r.abs.parent() {
        if !parent.exists() {
            if !create_parents {
                return ToolOutcome::error(
                    ToolStatus::Failed,
                    format!("parent folder does not exist: {}", shown(&r)),
                );
            }
            if let Err(e) = tokio::fs::create_dir_all(parent).await {
                return ToolOutcome::error(
                    ToolStatus::Failed,
                    format!("cannot create folders for {}: {e}", shown(&r)),
                );
            }
        }
    }
    if let Err(e) = tokio::fs::write(&r.abs, content.as_bytes()).await {
        return ToolOutcome::error(
            ToolStatus::Failed,
            format!("cannot write {}: {e}", shown(&r)),
        );
    }
    env.adopt(&r.abs);
    let chars = content.chars().count();
    ToolOutcome::ok_text(
        format!("wrote {chars} chars to {}", shown(&r)),
        json!({"path": shown(&r), "chars": chars, "executionStarted": true}),
    )
}

pub async fn patch(env: &ToolEnv<'_>, args: &Value) -> ToolOutcome {
    let raw = arg_str(args, "path").unwrap_or_default();
    let old = arg_str(args, "old").unwrap_or_default();
    let new = arg_str(args, "new").unwrap_or_default();
    if old.is_empty() {
        return ToolOutcome::error(ToolStatus::Invalid, "old text is required");
    }
    // -1 (the default) or any negative count replaces every occurrence.
    let count = arg_i64(args, "count").unwrap_or(-1);
    let r = match write_target(env, raw).await {
        Ok(r) => r,
        Err(o) => return o,
    };
    if !r.exists {
        return ToolOutcome::error(
            ToolStatus::Failed,
            format!("path does not exist: {}", shown(&r)),
        );
    }
    let preview = json!({"path": shown(&r), "old_chars": old.chars().count(), "new_chars": new.chars().count(), "count": count});
    if let Some(denied) = approve_write(env, "patch", &r, preview).await {
        return denied;
    }
    if let Err(o) = recheck(env, raw, &r) {
        return o;
    }
    let before = match tokio::fs::read(&r.abs).await {
        Ok(b) if b.len() as u64 <= MAX_FILE_BYTES => String::from_utf8_lossy(&b).into_owned(),
        Ok(_) => return ToolOutcome::error(ToolStatus::Failed, "file is too large to patch"),
        Err(e) => {
            return ToolOutcome::error(
                ToolStatus::Failed,
                format!("cannot read {}: {e}", shown(&r)),
            )
        }
    };
    if !before.contains(old) {
        return ToolOutcome::error(
            ToolStatus::Failed,
            format!("old text not found in {}", shown(&r)),
        );
    }
    let after = if count < 0 {
        before.replace(old, new)
    } else {
        before.replacen(old, new, count as usize)
    };
    if let Err(e) = tokio::fs::write(&r.abs, after.as_bytes()).await {
        return ToolOutcome::error(
            ToolStatus::Failed,
            format!("cannot write {}: {e}", shown(&r)),
        );
    }
    let rel = shown(&r);
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

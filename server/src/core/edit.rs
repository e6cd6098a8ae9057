//! A tenant's cores as the API manages them: list, describe, read a file,
//! write or delete one (each a new commit on `refs/demiurge/live`, refused
//! when the core would no longer load), list versions and diff two.
//!
//! A write is checked before it touches the live tree: the core is copied
//! to a private staging folder under the home's runtime, the change is made
//! there and the loader runs on the copy. Only a core that loads is
//! changed in place and committed; the cached core is then dropped, so the
//! next turn loads the new revision while a running turn keeps the one it
//! started with. Writers of one tenant take turns (a per-tenant lock).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::auth::PrincipalScope;
use crate::ids::{CoreId, TenantId};

use super::git::{Author, GitError, GitRunner, LIVE_REF, PREVIOUS_REF};
use super::path::{CoreFilePath, RevisionSpec};
use super::repository::CoreRepository;

/// Largest core file accepted by a write, in bytes.
pub const MAX_FILE_BYTES: usize = 1 << 20;
/// Most versions one listing returns.
pub const MAX_VERSIONS: usize = 200;
/// Longest diff text returned; longer diffs are cut and flagged.
const MAX_DIFF_BYTES: usize = 1 << 20;

/// Why a core operation was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum CoreEditError {
    /// No such core, file or revision in the caller's tenant (another
    /// tenant's core is indistinguishable from a missing one).
    #[error("not found")]
    NotFound,
    /// The caller's role may read cores but not change them.
    #[error("{0}")]
    Forbidden(String),
    /// A path, revision, message or body the host refuses.
    #[error("{0}")]
    Invalid(String),
    /// The path does not fit the tree as it is (a folder, a file in the
    /// way, a link).
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    TooLarge(String),
    /// The change would leave a core that does not load; the loader's words.
    #[error("{0}")]
    WouldBreak(String),
    /// An evolve run's gates failed on promote; the whole report.
    #[error("gates failed: {}", .0.failures().join("; "))]
    GatesFailed(Box<super::gates::GateReport>),
    /// An evolve run changes MCP declarations and the promote did not carry
    /// its review's token (or a stale one); the summary and current token.
    #[error("{message}")]
    McpReviewRequired {
        message: String,
        review: Box<super::mcp_review::McpReview>,
    },
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<GitError> for CoreEditError {
    fn from(e: GitError) -> Self {
        CoreEditError::Internal(e.into())
    }
}

impl From<super::path::PathError> for CoreEditError {
    fn from(e: super::path::PathError) -> Self {
        CoreEditError::Invalid(e.0)
    }
}

/// One core in a listing.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct CoreSummary {
    pub id: String,
    /// `agent.summary`, when the core loads.
    pub summary: Option<String>,
    /// Whether the core loads; `error` says why not.
    pub loads: bool,
    pub error: Option<String>,
}

/// A file of a core.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct CoreFile {
    /// Path relative to the core folder, `/`-separated.
    pub path: String,
    pub bytes: u64,
}

/// One core in detail.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct CoreDetail {
    #[serde(flatten)]
    pub core: CoreSummary,
    /// The live revision of the tenant's agents tree (what sessions load).
    pub revision: Option<String>,
    /// The live revision before the last change (what a rollback restores).
    pub previous: Option<String>,
    /// Every file of the core (hidden entries and links left out), sorted.
    pub files: Vec<CoreFile>,
    /// Built-in tool names the core's toolsets give it, when it loads.
    pub tools: Vec<String>,
    /// Most model calls of one turn (`runtime.max_model_steps`).
    pub max_model_steps: Option<u32>,
}

/// The result of a write or delete: the new live revision.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct CoreChange {
    pub core: String,
    pub path: String,
    /// The new live revision.
    pub revision: String,
    /// The live revision before this change.
    pub previous: Option<String>,
}

/// One commit that touched a core.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct CoreVersion {
    pub revision: String,
    /// The principal who made the change (`demiurge` for the host's own).
    pub author: String,
    /// RFC 3339 time of the change.
    pub at: String,
    /// The commit message's first line.
    pub message: String,
}

/// A changed file between two revisions.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct DiffFile {
    /// Path relative to the core folder.
    pub path: String,
    /// `added`, `modified`, `deleted`, `renamed`, … (git's status letter spelt out).
    pub status: String,
}

/// The difference between two revisions of one core.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct CoreDiff {
    pub core: String,
    pub from: String,
    pub to: String,
    pub files: Vec<DiffFile>,
    /// Unified diff, paths relative to the core folder.
    pub diff: String,
    /// True when `diff` was cut at 1 MiB.
    pub truncated: bool,
}

/// What a change does to one path of a core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Write the file (created with its folders if missing).
    Put(Vec<u8>),
    /// Remove the file (it must exist).
    Delete,
    /// Remove the folder and everything under it (it must exist).
    DeleteTree,
}

/// Who stands behind a change: a caller whose role must allow it (the
/// core API), or a tool call the dispatcher has already had approved
/// (`skill_manage`), which any principal may make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authority {
    Role,
    Approved,
}

/// A tenant's writer turn: this process's lock, then the agents tree's
/// lock file, which instances sharing a home take the same way (`flock`).
pub(super) struct WriterTurn {
    _local: tokio::sync::OwnedMutexGuard<()>,
    _file: std::fs::File,
}

impl CoreRepository {
    pub(super) fn writer_lock(&self, tenant: &TenantId) -> Arc<tokio::sync::Mutex<()>> {
        self.writers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(tenant.clone())
            .or_default()
            .clone()
    }

    /// Wait for this tenant's writer turn (see [`WriterTurn`]); writers of
    /// one tenant change its agents tree one at a time on every instance.
    pub(super) async fn writer_turn(
        &self,
        tenant: &TenantId,
        agents: &Path,
    ) -> Result<WriterTurn, CoreEditError> {
        let local = self.writer_lock(tenant).lock_owned().await;
        let path = agents.join(".git").join("demiurge-writer.lock");
        let file = tokio::task::spawn_blocking(move || -> std::io::Result<std::fs::File> {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)?;
            file.lock()?;
            Ok(file)
        })
        .await
        .map_err(|e| anyhow::anyhow!("writer lock: {e}"))?
        .map_err(|e| anyhow::anyhow!("writer lock: {e}"))?;
        Ok(WriterTurn {
            _local: local,
            _file: file,
        })
    }

    /// Seeds the tenant's tree on first use (blocking; never on the turn path).
    pub(super) async fn ready_tree(&self, tenant: &TenantId) -> Result<PathBuf, CoreEditError> {
        let (this, t) = (self.clone(), tenant.clone());
        tokio::task::spawn_blocking(move || this.ensure_seeded(&t))
            .await
            .map_err(|e| anyhow::anyhow!("seed: {e}"))??;
        Ok(self.agents_dir(tenant))
    }

    /// The tenant's cores, sorted by id.
    pub async fn list_cores(&self, tenant: &TenantId) -> Result<Vec<CoreSummary>, CoreEditError> {
        let agents = self.ready_tree(tenant).await?;
        let ids = tokio::task::spawn_blocking(move || core_ids(&agents))
            .await
            .map_err(|e| anyhow::anyhow!("list cores: {e}"))??;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            out.push(self.summary(tenant, &id).await);
        }
        Ok(out)
    }

    async fn summary(&self, tenant: &TenantId, core: &CoreId) -> CoreSummary {
        match self.load(tenant, core).await {
            Ok(view) => CoreSummary {
                id: core.to_string(),
                summary: Some(view.summary.clone()),
                loads: true,
                error: None,
            },
            Err(e) => CoreSummary {
                id: core.to_string(),
                summary: None,
                loads: false,
                error: Some(e),
            },
        }
    }

    /// One core: whether it loads, its files and revisions.
    pub async fn describe(
        &self,
        tenant: &TenantId,
        core: &CoreId,
    ) -> Result<CoreDetail, CoreEditError> {
        let agents = self.ready_tree(tenant).await?;
        let core_dir = core_folder(&agents, core)?;
        let summary = self.summary(tenant, core).await;
        let view = self.load(tenant, core).await.ok();
        let git = self.git_runner(tenant, &agents)?;
        let detail = tokio::task::spawn_blocking(move || -> Result<_, CoreEditError> {
            let mut files = Vec::new();
            walk_files(&core_dir, &core_dir, &mut files)?;
            files.sort_by(|a, b| a.path.cmp(&b.path));
            let (revision, previous) = if agents.join(".git").exists() {
                (
                    git.live(&agents)?,
                    git.resolve(&agents, &format!("{PREVIOUS_REF}^{{commit}}"))?,
                )
            } else {
                (None, None)
            };
            Ok((files, revision, previous))
        })
        .await
        .map_err(|e| anyhow::anyhow!("describe core: {e}"))??;
        let (files, revision, previous) = detail;
        Ok(CoreDetail {
            core: summary,
            revision,
            previous,
            files,
            tools: view
                .as_ref()
                .map(|v| v.catalog.builtin_tools.clone())
                .unwrap_or_default(),
            max_model_steps: view.map(|v| v.max_model_steps),
        })
    }

    /// A file's bytes.
    pub async fn read_file(
        &self,
        tenant: &TenantId,
        core: &CoreId,
        path: &CoreFilePath,
    ) -> Result<Vec<u8>, CoreEditError> {
        let agents = self.ready_tree(tenant).await?;
        let core_dir = core_folder(&agents, core)?;
        let path = path.clone();
        tokio::task::spawn_blocking(move || {
            let file = inside(&core_dir, &path)?;
            match std::fs::symlink_metadata(&file) {
                Ok(m) if m.is_file() => {}
                _ => return Err(CoreEditError::NotFound),
            }
            std::fs::read(&file).map_err(|e| anyhow::anyhow!("read {}: {e}", file.display()).into())
        })
        .await
        .map_err(|e| anyhow::anyhow!("read core file: {e}"))?
    }

    /// Write `text` to a core file (created with its folders if missing)
    /// as a new live revision. `PUT agent.yaml` on a core that does not
    /// exist yet creates it.
    pub async fn put_file(
        &self,
        scope: &PrincipalScope,
        core: &CoreId,
        path: &CoreFilePath,
        text: Vec<u8>,
        message: Option<String>,
    ) -> Result<CoreChange, CoreEditError> {
        if text.len() > MAX_FILE_BYTES {
            return Err(CoreEditError::TooLarge(format!(
                "a core file may hold at most {MAX_FILE_BYTES} bytes"
            )));
        }
        let message = message.unwrap_or_else(|| format!("update {core}/{path}"));
        self.change(
            scope,
            core,
            vec![(path.clone(), Edit::Put(text))],
            message,
            Authority::Role,
        )
        .await
    }

    /// Delete a core file as a new live revision.
    pub async fn delete_file(
        &self,
        scope: &PrincipalScope,
        core: &CoreId,
        path: &CoreFilePath,
        message: Option<String>,
    ) -> Result<CoreChange, CoreEditError> {
        let message = message.unwrap_or_else(|| format!("delete {core}/{path}"));
        self.change(
            scope,
            core,
            vec![(path.clone(), Edit::Delete)],
            message,
            Authority::Role,
        )
        .await
    }

    /// Make `edits` (in order) as one new live revision, checked on a
    /// staged copy first. The result names the first edited path.
    pub async fn change(
        &self,
        scope: &PrincipalScope,
        core: &CoreId,
        edits: Vec<(CoreFilePath, Edit)>,
        message: String,
        authority: Authority,
    ) -> Result<CoreChange, CoreEditError> {
        let Some(first) = edits.first().map(|(p, _)| p.to_string()) else {
            return Err(CoreEditError::Invalid("nothing to change".into()));
        };
        for (p, e) in &edits {
            if let Edit::Put(bytes) = e {
                if bytes.len() > MAX_FILE_BYTES {
                    return Err(CoreEditError::TooLarge(format!(
                        "{p}: a core file may hold at most {MAX_FILE_BYTES} bytes"
                    )));
                }
            }
        }
        if authority == Authority::Role && !scope.is_operator() {
            return Err(CoreEditError::Forbidden(
                "changing a core needs a tenant operator or admin".into(),
            ));
        }
        let tenant = scope.tenant().clone();
        let agents = self.ready_tree(&tenant).await?;
        let _held = self.writer_turn(&tenant, &agents).await?;
        let git = self.git_runner(&tenant, &agents)?;
        let owner = self
            .walls
            .as_ref()
            .and_then(|w| w.sandbox.workspace_owner(tenant.as_str()));
        let stage_root = crate::home::HomeLayout::new(&self.home)
            .runtime_dir()
            .join("core-stage")
            .join(uuid::Uuid::new_v4().simple().to_string());
        let author = Author {
            name: scope.principal().to_string(),
            email: format!("{}@{}", scope.principal(), tenant),
        };
        let core_id = core.clone();
        let result = tokio::task::spawn_blocking(move || {
            let out = apply(
                &git,
                &agents,
                &core_id,
                edits,
                &author,
                &message,
                &stage_root,
                owner,
            );
            let _ = std::fs::remove_dir_all(&stage_root);
            out
        })
        .await
        .map_err(|e| anyhow::anyhow!("core change: {e}"))?;
        self.invalidate(&tenant, core);
        let (revision, previous) = result?;
        Ok(CoreChange {
            core: core.to_string(),
            path: first,
            revision,
            previous,
        })
    }

    /// Commits that touched the core on the live line, newest first.
    pub async fn versions(
        &self,
        tenant: &TenantId,
        core: &CoreId,
        limit: usize,
    ) -> Result<Vec<CoreVersion>, CoreEditError> {
        let agents = self.ready_tree(tenant).await?;
        core_folder(&agents, core)?;
        let git = self.git_runner(tenant, &agents)?;
        let core = core.to_string();
        let limit = limit.clamp(1, MAX_VERSIONS);
        tokio::task::spawn_blocking(move || -> Result<_, CoreEditError> {
            if !agents.join(".git").exists() || git.live(&agents)?.is_none() {
                return Ok(Vec::new());
            }
            let out = git.run(
                &agents,
                &[
                    "log",
                    &format!("--max-count={limit}"),
                    "--format=%H%x1f%an%x1f%aI%x1f%s%x1e",
                    LIVE_REF,
                    "--",
                    &core,
                ],
            )?;
            Ok(parse_log(&out))
        })
        .await
        .map_err(|e| anyhow::anyhow!("versions: {e}"))?
    }

    /// The core's changes from one revision to another.
    pub async fn diff(
        &self,
        tenant: &TenantId,
        core: &CoreId,
        from: &RevisionSpec,
        to: &RevisionSpec,
    ) -> Result<CoreDiff, CoreEditError> {
        let agents = self.ready_tree(tenant).await?;
        core_folder(&agents, core)?;
        let git = self.git_runner(tenant, &agents)?;
        let (core, from, to) = (core.to_string(), from.to_git(), to.to_git());
        tokio::task::spawn_blocking(move || -> Result<_, CoreEditError> {
            if !agents.join(".git").exists() {
                return Err(CoreEditError::NotFound);
            }
            git.live(&agents)?;
            let from = git
                .resolve(&agents, &from)?
                .ok_or(CoreEditError::NotFound)?;
            let to = git.resolve(&agents, &to)?.ok_or(CoreEditError::NotFound)?;
            let relative = format!("--relative={core}/");
            let base = [
                "diff",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                relative.as_str(),
            ];
            let mut args = base.to_vec();
            args.extend(["--name-status", from.as_str(), to.as_str(), "--"]);
            let names = git.run(&agents, &args)?;
            let mut args = base.to_vec();
            args.extend([from.as_str(), to.as_str(), "--"]);
            let mut diff = git.run(&agents, &args)?;
            let truncated = diff.len() > MAX_DIFF_BYTES;
            if truncated {
                let mut cut = MAX_DIFF_BYTES;
                while !diff.is_char_boundary(cut) {
                    cut -= 1;
                }
                diff.truncate(cut);
            }
            Ok(CoreDiff {
                core,
                from,
                to,
                files: parse_name_status(&names),
                diff,
                truncated,
            })
        })
        .await
        .map_err(|e| anyhow::anyhow!("diff: {e}"))?
    }
}

/// Ids of the cores in an agents tree: folders with an `agent.yaml`.
fn core_ids(agents: &Path) -> anyhow::Result<Vec<CoreId>> {
    let mut ids = Vec::new();
    let entries = match std::fs::read_dir(agents) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ids),
        Err(e) => return Err(anyhow::anyhow!("read {}: {e}", agents.display())),
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !kind.is_dir() || name.starts_with('.') {
            continue;
        }
        if let Ok(id) = CoreId::parse(name) {
            if entry.path().join("agent.yaml").is_file() {
                ids.push(id);
            }
        }
    }
    ids.sort();
    Ok(ids)
}

/// The core's folder: a real folder (not a link) with an `agent.yaml`.
pub(super) fn core_folder(agents: &Path, core: &CoreId) -> Result<PathBuf, CoreEditError> {
    let dir = agents.join(core.as_str());
    let real_dir = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir());
    let manifest = std::fs::symlink_metadata(dir.join("agent.yaml")).is_ok_and(|m| m.is_file());
    if real_dir && manifest {
        Ok(dir)
    } else {
        Err(CoreEditError::NotFound)
    }
}

/// `core_dir/path`, refusing a path whose existing folders include a link
/// (a link could lead out of the core).
fn inside(core_dir: &Path, path: &CoreFilePath) -> Result<PathBuf, CoreEditError> {
    let mut current = core_dir.to_path_buf();
    let segments: Vec<&str> = path.segments().collect();
    for (i, segment) in segments.iter().enumerate() {
        current.push(segment);
        match std::fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(CoreEditError::Conflict(format!(
                    "{path} passes through a link; links in cores are not followed"
                )))
            }
            Ok(m) if i + 1 < segments.len() && !m.is_dir() => {
                return Err(CoreEditError::Conflict(format!(
                    "{segment} in {path} is a file, not a folder"
                )))
            }
            Ok(_) => {}
            Err(_) => {
                // The rest does not exist yet.
                for rest in &segments[i + 1..] {
                    current.push(rest);
                }
                return Ok(current);
            }
        }
    }
    Ok(current)
}

/// Every regular file under `dir`, hidden entries and links left out.
fn walk_files(root: &Path, dir: &Path, out: &mut Vec<CoreFile>) -> anyhow::Result<()> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| anyhow::anyhow!("read {}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if meta.is_dir() {
            walk_files(root, &entry.path(), out)?;
        } else if meta.is_file() {
            if let Ok(rel) = entry.path().strip_prefix(root) {
                out.push(CoreFile {
                    path: rel.to_string_lossy().replace('\\', "/"),
                    bytes: meta.len(),
                });
            }
        }
    }
    Ok(())
}

/// Copies the regular files and folders of `from` into `to` (links and
/// hidden entries are not part of a core and are left out).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    crate::bootstrap::private_dir(to).map_err(std::io::Error::other)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let meta = std::fs::symlink_metadata(entry.path())?;
        if meta.is_dir() {
            copy_tree(&entry.path(), &to.join(&name))?;
        } else if meta.is_file() {
            std::fs::copy(entry.path(), to.join(&name))?;
        }
    }
    Ok(())
}

/// Makes `edit` at `file`, creating folders below `base` as needed (0700,
/// handed to `owner`).
fn make_edit(
    base: &Path,
    file: &Path,
    edit: &Edit,
    owner: Option<(u32, u32)>,
) -> std::io::Result<()> {
    match edit {
        Edit::Put(bytes) => {
            if let Some(parent) = file.parent() {
                make_dirs(base, parent, owner)?;
            }
            let name = file
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let tmp = file.with_file_name(format!(".{name}.demiurge-{}", uuid::Uuid::new_v4()));
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            let written = (|| {
                let mut f = options.open(&tmp)?;
                f.write_all(bytes)?;
                f.sync_all()?;
                set_private(&tmp, 0o600, owner)?;
                std::fs::rename(&tmp, file)
            })();
            if written.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            written
        }
        Edit::Delete | Edit::DeleteTree => {
            if matches!(edit, Edit::DeleteTree) {
                std::fs::remove_dir_all(file)?;
            } else {
                std::fs::remove_file(file)?;
            }
            // Empty folders left behind go too (git does not keep them).
            let mut dir = file.parent();
            while let Some(d) = dir {
                if d == base || !d.starts_with(base) || std::fs::remove_dir(d).is_err() {
                    break;
                }
                dir = d.parent();
            }
            Ok(())
        }
    }
}

/// Creates the folders from `base` (exclusive) down to `dir`, private and
/// handed to `owner`.
pub(super) fn make_dirs(base: &Path, dir: &Path, owner: Option<(u32, u32)>) -> std::io::Result<()> {
    let rel = dir.strip_prefix(base).unwrap_or(Path::new(""));
    let mut current = base.to_path_buf();
    for part in rel.components() {
        current.push(part);
        if !current.is_dir() {
            std::fs::DirBuilder::new().create(&current)?;
            set_private(&current, 0o700, owner)?;
        }
    }
    Ok(())
}

fn set_private(path: &Path, mode: u32, owner: Option<(u32, u32)>) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::lchown(path, Some(uid), Some(gid))?;
    }
    Ok(())
}

/// The regular files under `dir` (links and hidden entries left out) with
/// their bytes: what a [`Edit::DeleteTree`] must be able to put back.
fn files_under(dir: &Path) -> std::io::Result<Vec<(PathBuf, Vec<u8>)>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)? {
            let entry = entry?;
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let meta = std::fs::symlink_metadata(entry.path())?;
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() {
                out.push((entry.path(), std::fs::read(entry.path())?));
            }
        }
    }
    Ok(out)
}

/// Puts files back as they were before a change that could not be
/// committed: `Some(bytes)` rewritten, `None` removed.
fn restore(core_dir: &Path, backups: Vec<(PathBuf, Option<Vec<u8>>)>, owner: Option<(u32, u32)>) {
    for (file, before) in backups.into_iter().rev() {
        let undo = match before {
            Some(bytes) => make_edit(core_dir, &file, &Edit::Put(bytes), owner),
            None if file.exists() => make_edit(core_dir, &file, &Edit::Delete, owner),
            None => Ok(()),
        };
        if let Err(u) = undo {
            tracing::error!(error = %u, file = %file.display(), "could not undo a core change");
        }
    }
}

/// The blocking part of a change: check on a staged copy, then change the
/// live tree and commit. Returns (new live revision, previous live).
#[allow(clippy::too_many_arguments)]
fn apply(
    git: &GitRunner,
    agents: &Path,
    core: &CoreId,
    edits: Vec<(CoreFilePath, Edit)>,
    author: &Author,
    message: &str,
    stage_root: &Path,
    owner: Option<(u32, u32)>,
) -> Result<(String, Option<String>), CoreEditError> {
    let core_dir = agents.join(core.as_str());
    let creating = match core_folder(agents, core) {
        Ok(_) => false,
        // A new core starts with its manifest, alone.
        Err(CoreEditError::NotFound)
            if edits.len() == 1
                && edits[0].0.as_str() == "agent.yaml"
                && matches!(edits[0].1, Edit::Put(_))
                && std::fs::symlink_metadata(&core_dir).is_err() =>
        {
            true
        }
        Err(e) => return Err(e),
    };
    let mut targets = Vec::with_capacity(edits.len());
    for (path, edit) in &edits {
        let file = inside(&core_dir, path)?;
        let existing = std::fs::symlink_metadata(&file).ok();
        match (edit, &existing) {
            (Edit::DeleteTree, Some(m)) if m.is_dir() => {}
            (Edit::DeleteTree, _) => return Err(CoreEditError::NotFound),
            (_, Some(m)) if m.is_dir() => {
                return Err(CoreEditError::Conflict(format!(
                    "{path} is a folder; name a file"
                )))
            }
            (Edit::Delete, None) => return Err(CoreEditError::NotFound),
            _ => {}
        }
        targets.push(file);
    }
    // 1. The change on a staged copy must load.
    let stage = stage_root.join(core.as_str());
    if creating {
        crate::bootstrap::private_dir(&stage)?;
    } else {
        copy_tree(&core_dir, &stage).map_err(|e| anyhow::anyhow!("stage core: {e}"))?;
    }
    for (path, edit) in &edits {
        let staged = stage.join(path.as_str());
        match edit {
            // The staged copy may already lack it (an earlier edit removed it).
            Edit::Delete | Edit::DeleteTree if std::fs::symlink_metadata(&staged).is_err() => {}
            _ => make_edit(&stage, &staged, edit, None)
                .map_err(|e| anyhow::anyhow!("stage {path}: {e}"))?,
        }
    }
    // A new core gets its (empty) surface folder, which a manifest alone cannot make.
    let surface = match (&edits[0].1, creating) {
        (Edit::Put(bytes), true) => surface_root(bytes),
        _ => None,
    };
    if let Some(surface) = &surface {
        crate::bootstrap::private_dir(&stage.join(surface.as_str()))?;
    }
    super::load_core(&stage, core.as_str(), &crate::catalog::toolset)
        .map_err(|e| CoreEditError::WouldBreak(format!("core {core}: {e}")))?;
    // 2. The live tree, then the commit; undone if either fails.
    if creating {
        std::fs::DirBuilder::new()
            .create(&core_dir)
            .map_err(|e| anyhow::anyhow!("create core: {e}"))?;
        set_private(&core_dir, 0o700, owner).map_err(|e| anyhow::anyhow!("create core: {e}"))?;
        if let Some(surface) = &surface {
            make_dirs(&core_dir, &core_dir.join(surface.as_str()), owner)
                .map_err(|e| anyhow::anyhow!("create core: {e}"))?;
        }
    }
    let mut backups: Vec<(PathBuf, Option<Vec<u8>>)> = Vec::new();
    let live = (|| -> Result<(), CoreEditError> {
        for ((path, edit), file) in edits.iter().zip(&targets) {
            let present = std::fs::symlink_metadata(file).is_ok();
            match edit {
                Edit::DeleteTree if present => {
                    let files =
                        files_under(file).map_err(|e| anyhow::anyhow!("read {path}: {e}"))?;
                    backups.extend(files.into_iter().map(|(f, b)| (f, Some(b))));
                }
                Edit::Delete | Edit::DeleteTree if !present => continue,
                _ => {
                    let before = match present {
                        true => Some(
                            std::fs::read(file).map_err(|e| anyhow::anyhow!("read {path}: {e}"))?,
                        ),
                        false => None,
                    };
                    backups.push((file.clone(), before));
                }
            }
            make_edit(&core_dir, file, edit, owner)
                .map_err(|e| anyhow::anyhow!("write {path}: {e}"))?;
        }
        Ok(())
    })();
    let committed = live.and_then(|()| {
        git.commit_live(agents, core.as_str(), author, message)
            .map_err(CoreEditError::from)
    });
    match committed {
        Ok(Some(revision)) => {
            let previous = git.resolve(agents, &format!("{PREVIOUS_REF}^{{commit}}"))?;
            Ok((revision, previous))
        }
        Ok(None) => {
            // Nothing changed (the same bytes were written again).
            let live = git
                .live(agents)?
                .ok_or_else(|| anyhow::anyhow!("no live revision"))?;
            let previous = git.resolve(agents, &format!("{PREVIOUS_REF}^{{commit}}"))?;
            Ok((live, previous))
        }
        Err(e) => {
            restore(&core_dir, backups, owner);
            if creating {
                let _ = std::fs::remove_dir_all(&core_dir);
            }
            Err(e)
        }
    }
}

/// `runtime.surface_root` of a manifest, when it parses and is a plain
/// relative path (the loader reports anything else).
fn surface_root(manifest: &[u8]) -> Option<CoreFilePath> {
    let yaml: super::AgentYaml = serde_yaml_ng::from_slice(manifest).ok()?;
    CoreFilePath::parse(yaml.runtime.surface_root.trim_end_matches('/')).ok()
}

fn parse_log(out: &str) -> Vec<CoreVersion> {
    out.split('\x1e')
        .filter_map(|record| {
            let mut f = record.trim_matches(['\n', '\r']).split('\x1f');
            let revision = f.next()?.trim();
            if revision.is_empty() {
                return None;
            }
            Some(CoreVersion {
                revision: revision.to_owned(),
                author: f.next()?.to_owned(),
                at: f.next()?.to_owned(),
                message: f.next().unwrap_or_default().to_owned(),
            })
        })
        .collect()
}

fn parse_name_status(out: &str) -> Vec<DiffFile> {
    out.lines()
        .filter_map(|line| {
            let mut parts = line.split('\t');
            let status = parts.next()?;
            let path = parts.next_back()?;
            let status = match status.chars().next()? {
                'A' => "added",
                'M' => "modified",
                'D' => "deleted",
                'R' => "renamed",
                'C' => "copied",
                'T' => "type_changed",
                _ => "changed",
            };
            Some(DiffFile {
                path: path.to_owned(),
                status: status.to_owned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_records_parse() {
        let out = "abc\x1falice\x1f2026-01-01T00:00:00+00:00\x1fupdate x\x1e\n\
                   def\x1fdemiurge\x1f2025-12-31T00:00:00+00:00\x1fseed\x1e\n";
        let v = parse_log(out);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].revision, "abc");
        assert_eq!(v[0].author, "alice");
        assert_eq!(v[1].message, "seed");
        assert!(parse_log("").is_empty());
    }

    #[test]
    fn name_status_lines_parse() {
        let v = parse_name_status("M\tagent.yaml\nA\tagent/x.md\nR100\told\tnew\n");
        let got: Vec<_> = v
            .iter()
            .map(|f| (f.status.as_str(), f.path.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("modified", "agent.yaml"),
                ("added", "agent/x.md"),
                ("renamed", "new")
            ]
        );
    }

    #[test]
    fn paths_through_links_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let core = dir.path().join("c");
        std::fs::create_dir_all(core.join("agent")).unwrap();
        std::os::unix::fs::symlink("/etc", core.join("out")).unwrap();
        let p = CoreFilePath::parse("out/passwd").unwrap();
        assert!(matches!(inside(&core, &p), Err(CoreEditError::Conflict(_))));
        let p = CoreFilePath::parse("agent/new/file.md").unwrap();
        assert_eq!(inside(&core, &p).unwrap(), core.join("agent/new/file.md"));
        std::fs::write(core.join("agent/f"), "x").unwrap();
        let p = CoreFilePath::parse("agent/f/g").unwrap();
        assert!(matches!(inside(&core, &p), Err(CoreEditError::Conflict(_))));
    }
}

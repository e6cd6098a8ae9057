//! Evolve runs in a tenant's agents tree, the version-store half of
//! `evolve_core` (the evolver child agent that edits a run is not here):
//!
//! * [`create`]: an isolated git worktree of the live revision at
//!   `.evolve/runs/<run_id>/agents` (a hidden folder: never a core, never in
//!   a commit of the tree), with `run.json` beside it;
//! * [`review`]: the worktree's content as a commit on top of its base,
//!   recorded at `refs/demiurge/runs/<run_id>`, and the host's gates
//!   ([`super::gates`]) on it;
//!   When MCP declarations changed, the review also carries their
//!   before/after security summary and the content-bound
//!   `mcp-review:<sha256>` token ([`super::mcp_review`]); `review.json`
//!   beside `run.json` records the last review;
//! * [`promote`]: only a reviewed run whose content has not changed since,
//!   whose gates pass again, whose base is still live and, when it changes
//!   an MCP declaration, that carries the token of its last review; then
//!   live advances (previous := old live) and the checkout follows by
//!   fast-forward;
//! * [`discard`]: the worktree, its folder and its ref are removed.
//!
//! Every function is blocking and runs `git` through the tenant's
//! [`GitRunner`]; callers hold the tenant's writer lock.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::edit::CoreEditError;
use super::gates::{self, GateReport};
use super::git::{GitError, GitRunner};
use super::mcp_review::{self, Declaration, McpReview};

/// Where run refs live.
pub const RUN_REF_PREFIX: &str = "refs/demiurge/runs/";

/// What `run.json` records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunInfo {
    pub run_id: String,
    /// The live revision the run started from.
    pub base: String,
    pub goal: String,
    /// The core the run was started for (`evolve_core` of a session on it);
    /// the REST API lists and acts on a run only under this core.
    #[serde(default)]
    pub core: Option<String>,
}

/// The evolver child agent editing a run (`evolver.json`, written once
/// the child's task is queued).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct EvolverRef {
    pub task_id: String,
    pub session_id: String,
}

/// Where a run stands, from its files and refs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Not reviewed yet.
    Open,
    /// Reviewed, the gates passed, and not changed since: promotable.
    Reviewed,
    /// The last review's gates failed.
    Failed,
    /// Edited since its last review: review it again.
    Changed,
    /// Its reviewed revision is live.
    Promoted,
    /// Live moved since the run started: promote would refuse.
    Outdated,
}

/// A run as listed.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RunSummary {
    pub run_id: String,
    pub core: String,
    pub goal: String,
    /// The live revision the run started from.
    pub base: String,
    /// Whether it has been reviewed, and whether that review passed.
    pub reviewed: bool,
    pub passed: Option<bool>,
    pub evolver: Option<EvolverRef>,
}

/// A run in full: its state, its difference from live, its last review.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RunDetail {
    pub run_id: String,
    pub core: String,
    pub goal: String,
    pub base: String,
    /// The live revision now.
    pub live: String,
    pub state: RunState,
    /// Paths (relative to the agents tree) that differ from live, sorted.
    pub changed: Vec<String>,
    /// Unified diff from live to the run's content, agents-relative paths.
    pub diff: String,
    /// True when `diff` was cut at 1 MiB.
    pub truncated: bool,
    /// The last review (gate report, and the MCP security summary and
    /// token when declarations changed).
    pub review: Option<Review>,
    pub evolver: Option<EvolverRef>,
}

/// The result of a review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Review {
    /// The run's content as a commit (parent: the base).
    pub commit: String,
    /// Changed paths relative to the agents tree, sorted.
    pub changed: Vec<String>,
    pub report: GateReport,
    /// Present when the run changes MCP declarations.
    pub mcp: Option<McpReview>,
}

/// The result of a promote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Promoted {
    pub revision: String,
    pub previous: String,
    /// The cores whose files changed.
    pub cores: Vec<String>,
}

/// One `evolve_core` action on a tenant's tree (the tool's half after
/// its approvals).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOp {
    Start {
        run_id: String,
        goal: String,
        /// The core the run is for.
        core: String,
    },
    Review {
        run_id: String,
    },
    Promote {
        run_id: String,
        mcp_token: Option<String>,
    },
    Discard {
        run_id: String,
    },
    /// Record the evolver child editing the run.
    Evolver {
        run_id: String,
        evolver: EvolverRef,
    },
}

/// What a [`RunOp`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum RunDone {
    /// The run and its worktree (a host path).
    Started {
        info: RunInfo,
        worktree: PathBuf,
    },
    Reviewed(Review),
    Promoted(Promoted),
    /// `false`: there was no such run.
    Discarded(bool),
    Recorded,
}

fn run_ref(id: &str) -> String {
    format!("{RUN_REF_PREFIX}{id}")
}

/// `<agents>/.evolve/runs/<id>`, refusing a link anywhere on the way (a
/// planted link must not turn a discard into a removal elsewhere).
fn run_folder(agents: &Path, run_id: &str) -> Result<PathBuf, CoreEditError> {
    let dir = gates::run_dir(agents, run_id).map_err(CoreEditError::Invalid)?;
    let mut p = agents.to_path_buf();
    for part in [".evolve", "runs", run_id, "agents"] {
        p.push(part);
        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(CoreEditError::Conflict(format!(
                "{} is a link; runs are never followed through links",
                p.display()
            )));
        }
    }
    Ok(dir)
}

fn read_info(dir: &Path) -> Result<RunInfo, CoreEditError> {
    let bytes = std::fs::read(dir.join("run.json")).map_err(|_| CoreEditError::NotFound)?;
    serde_json::from_slice(&bytes)
        .map_err(|e| CoreEditError::Internal(anyhow::anyhow!("run.json: {e}")))
}

/// Start a run: a worktree of the live revision. `owner` (the tenant's
/// sandbox user on a root server) gets the run's folders, so a confined
/// `git` can write the worktree.
pub fn create(
    git: &GitRunner,
    agents: &Path,
    run_id: &str,
    goal: &str,
    core: &str,
    owner: Option<(u32, u32)>,
) -> Result<RunInfo, CoreEditError> {
    let dir = run_folder(agents, run_id)?;
    if std::fs::symlink_metadata(&dir).is_ok() {
        return Err(CoreEditError::Conflict(format!("run {run_id} exists")));
    }
    let base = git
        .live(agents)?
        .ok_or_else(|| CoreEditError::Invalid("the agents tree has no live revision".into()))?;
    // `.evolve/` never enters the tree's own commits: the host commits
    // only core folders (`commit_live`'s pathspec) or whole trees it built.
    super::edit::make_dirs(agents, &dir, owner).map_err(|e| anyhow::anyhow!("run folder: {e}"))?;
    let worktree = dir.join("agents");
    let wt = worktree.to_string_lossy().into_owned();
    if let Err(e) = git.run(agents, &["worktree", "add", "-q", "--detach", &wt, &base]) {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(e.into());
    }
    let info = RunInfo {
        run_id: run_id.to_owned(),
        base,
        goal: goal.to_owned(),
        core: Some(core.to_owned()),
    };
    let json = serde_json::to_vec_pretty(&info).map_err(|e| anyhow::anyhow!("run.json: {e}"))?;
    std::fs::write(dir.join("run.json"), json).map_err(|e| anyhow::anyhow!("run.json: {e}"))?;
    Ok(info)
}

/// The worktree's content as a commit on its base (nothing is staged in
/// the main tree; the worktree has its own index).
fn snapshot(git: &GitRunner, worktree: &Path, info: &RunInfo) -> Result<String, GitError> {
    git.run(worktree, &["add", "-A", "--", "."])?;
    let tree = git.run(worktree, &["write-tree"])?;
    let message = format!("evolve run {}: {}", info.run_id, info.goal);
    let commit = git.run_with(
        worktree,
        &["commit-tree", tree.trim(), "-p", &info.base, "-F", "-"],
        Some(message.as_bytes()),
        &[],
    )?;
    Ok(commit.trim().to_owned())
}

fn changed_paths(
    git: &GitRunner,
    repo: &Path,
    from: &str,
    to: &str,
) -> Result<Vec<String>, GitError> {
    let out = git.run(repo, &["diff", "--name-only", "--no-renames", from, to])?;
    let mut v: Vec<String> = out
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    v.sort();
    Ok(v)
}

/// Review a run: snapshot, record the ref, run the gates.
pub fn review(git: &GitRunner, agents: &Path, run_id: &str) -> Result<Review, CoreEditError> {
    let dir = run_folder(agents, run_id)?;
    let info = read_info(&dir)?;
    let worktree = dir.join("agents");
    if !std::fs::symlink_metadata(&worktree).is_ok_and(|m| m.is_dir()) {
        return Err(CoreEditError::NotFound);
    }
    let commit = snapshot(git, &worktree, &info)?;
    git.run(agents, &["update-ref", &run_ref(run_id), &commit])?;
    let changed = changed_paths(git, agents, &info.base, &commit)?;
    let report = gates::run(&worktree, Some(&changed));
    let mcp = mcp_review_of(agents, &worktree, &commit, &changed);
    let review = Review {
        commit,
        changed,
        report,
        mcp,
    };
    let json = serde_json::to_vec_pretty(&review).map_err(|e| anyhow::anyhow!("review: {e}"))?;
    std::fs::write(dir.join("review.json"), json).map_err(|e| anyhow::anyhow!("review: {e}"))?;
    Ok(review)
}

/// The MCP review of `changed` between the live checkout and the run's
/// worktree for `commit` (`None`: no declaration changed).
fn mcp_review_of(
    agents: &Path,
    worktree: &Path,
    commit: &str,
    changed: &[String],
) -> Option<McpReview> {
    let cores = super::rollback::changed_cores(&changed.join("\n"));
    let mcp = mcp_paths(agents, worktree, &cores);
    let read = |root: &Path, p: &str| {
        let f = root.join(p);
        // Never through a link (the gates fail a linked entry anyway).
        match std::fs::symlink_metadata(&f) {
            Ok(m) if m.is_file() => std::fs::read(&f).ok(),
            _ => None,
        }
    };
    let decls: Vec<Declaration> = changed
        .iter()
        .filter(|p| mcp.contains(p))
        .map(|p| Declaration {
            path: p.clone(),
            before: read(agents, p),
            after: read(worktree, p),
        })
        .collect();
    mcp_review::review(commit, &decls)
}

/// MCP manifests of the changed cores, before (live tree) and after (the
/// worktree), as agents-relative paths.
fn mcp_paths(agents: &Path, worktree: &Path, cores: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for core in cores {
        for root in [agents, worktree] {
            if let Ok(c) = super::load_core(&root.join(core), core, &crate::catalog::toolset) {
                out.extend(
                    c.mcp_manifests
                        .iter()
                        .map(|m| format!("{core}/{}", m.path_rel)),
                );
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Promote a reviewed run to live; `mcp_token` is the last review's token,
/// needed only when the run changes MCP declarations.
pub fn promote(
    git: &GitRunner,
    agents: &Path,
    run_id: &str,
    mcp_token: Option<&str>,
) -> Result<Promoted, CoreEditError> {
    let dir = run_folder(agents, run_id)?;
    let info = read_info(&dir)?;
    let reviewed = git
        .resolve(agents, &format!("{}^{{commit}}", run_ref(run_id)))?
        .ok_or_else(|| CoreEditError::Invalid(format!("run {run_id} has not been reviewed")))?;
    let worktree = dir.join("agents");
    // Content-bound: what is promoted is exactly what was reviewed.
    let now = snapshot(git, &worktree, &info)?;
    let tree = |c: &str| -> Result<String, GitError> {
        Ok(git
            .run(agents, &["rev-parse", &format!("{c}^{{tree}}")])?
            .trim()
            .to_owned())
    };
    if tree(&now)? != tree(&reviewed)? {
        return Err(CoreEditError::Conflict(format!(
            "run {run_id} changed since its review; review it again"
        )));
    }
    let changed = changed_paths(git, agents, &info.base, &reviewed)?;
    if changed.is_empty() {
        return Err(CoreEditError::Invalid(format!(
            "run {run_id} changes nothing"
        )));
    }
    let report = gates::run(&worktree, Some(&changed));
    if !report.passed {
        return Err(CoreEditError::GatesFailed(Box::new(report)));
    }
    let live = git
        .live(agents)?
        .ok_or_else(|| CoreEditError::Invalid("the agents tree has no live revision".into()))?;
    if live != info.base {
        return Err(CoreEditError::Conflict(format!(
            "live moved since run {run_id} started; start a new run"
        )));
    }
    if git.resolve(agents, "HEAD^{commit}")?.as_deref() != Some(live.as_str()) {
        return Err(CoreEditError::Conflict(
            "the agents tree's checkout is not at the live revision".into(),
        ));
    }
    // The live checkout is the base here, so "before" is what review saw.
    if let Some(mcp) = mcp_review_of(agents, &worktree, &reviewed, &changed) {
        if let Err(message) = mcp_review::accepts(&mcp, mcp_token) {
            return Err(CoreEditError::McpReviewRequired {
                message,
                review: Box::new(mcp),
            });
        }
    }
    let cores = super::rollback::changed_cores(&changed.join("\n"));
    git.run(agents, &["merge", "--ff-only", "-q", &reviewed])?;
    git.advance(agents, Some(&live), &reviewed)?;
    Ok(Promoted {
        revision: reviewed,
        previous: live,
        cores,
    })
}

/// Remove a run: its worktree, folder and ref. `false` when there was none.
pub fn discard(git: &GitRunner, agents: &Path, run_id: &str) -> Result<bool, CoreEditError> {
    let dir = run_folder(agents, run_id)?;
    let had_ref = git.resolve(agents, &run_ref(run_id))?.is_some();
    let existed = std::fs::symlink_metadata(&dir).is_ok();
    if existed {
        let wt = dir.join("agents").to_string_lossy().into_owned();
        // Not registered (a half-made run) is fine: the folder goes below.
        let _ = git.run(agents, &["worktree", "remove", "--force", &wt]);
        std::fs::remove_dir_all(&dir).map_err(|e| anyhow::anyhow!("remove run: {e}"))?;
    }
    git.run(agents, &["worktree", "prune"])?;
    if had_ref {
        git.run(agents, &["update-ref", "-d", &run_ref(run_id)])?;
    }
    Ok(existed || had_ref)
}

/// The run's info when it belongs to `core` (another core's run, like a
/// missing one, is [`CoreEditError::NotFound`]).
fn owned(agents: &Path, run_id: &str, core: &str) -> Result<RunInfo, CoreEditError> {
    let info = read_info(&run_folder(agents, run_id)?)?;
    if info.core.as_deref() == Some(core) {
        Ok(info)
    } else {
        Err(CoreEditError::NotFound)
    }
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Record the evolver child of a run (`evolver.json`).
pub fn record_evolver(
    agents: &Path,
    run_id: &str,
    evolver: &EvolverRef,
) -> Result<(), CoreEditError> {
    let dir = run_folder(agents, run_id)?;
    read_info(&dir)?;
    let json = serde_json::to_vec_pretty(evolver).map_err(|e| anyhow::anyhow!("evolver: {e}"))?;
    std::fs::write(dir.join("evolver.json"), json).map_err(|e| anyhow::anyhow!("evolver: {e}"))?;
    Ok(())
}

/// The runs of `core`, newest first (run ids are time-ordered); nothing
/// runs `git`.
pub fn list(agents: &Path, core: &str) -> Result<Vec<RunSummary>, CoreEditError> {
    let root = agents.join(".evolve").join("runs");
    if std::fs::symlink_metadata(agents.join(".evolve")).is_ok_and(|m| m.file_type().is_symlink())
        || std::fs::symlink_metadata(&root).is_ok_and(|m| m.file_type().is_symlink())
    {
        return Ok(Vec::new());
    }
    let entries = match std::fs::read_dir(&root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(anyhow::anyhow!("read runs: {e}").into()),
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if gates::check_run_id(&name).is_err() || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let dir = entry.path();
        let Ok(info) = read_info(&dir) else { continue };
        if info.core.as_deref() != Some(core) {
            continue;
        }
        let review: Option<Review> = read_json(&dir.join("review.json"));
        out.push(RunSummary {
            run_id: info.run_id,
            core: core.to_owned(),
            goal: info.goal,
            base: info.base,
            reviewed: review.is_some(),
            passed: review.map(|r| r.report.passed),
            evolver: read_json(&dir.join("evolver.json")),
        });
    }
    out.sort_by(|a, b| b.run_id.cmp(&a.run_id));
    Ok(out)
}

/// Pure: where a run stands.
pub fn state_of(
    base: &str,
    live: &str,
    review: Option<&Review>,
    content_tree: &str,
    reviewed_tree: Option<&str>,
) -> RunState {
    match review {
        Some(r) if r.commit == live => RunState::Promoted,
        _ if base != live => RunState::Outdated,
        None => RunState::Open,
        Some(_) if reviewed_tree != Some(content_tree) => RunState::Changed,
        Some(r) if !r.report.passed => RunState::Failed,
        Some(_) => RunState::Reviewed,
    }
}

/// A run of `core` in full. Its content is snapshotted (objects only, no
/// ref moves) to diff it against live.
pub fn detail(
    git: &GitRunner,
    agents: &Path,
    run_id: &str,
    core: &str,
) -> Result<RunDetail, CoreEditError> {
    let info = owned(agents, run_id, core)?;
    let dir = run_folder(agents, run_id)?;
    let worktree = dir.join("agents");
    if !std::fs::symlink_metadata(&worktree).is_ok_and(|m| m.is_dir()) {
        return Err(CoreEditError::NotFound);
    }
    let live = git
        .live(agents)?
        .ok_or_else(|| CoreEditError::Invalid("the agents tree has no live revision".into()))?;
    let now = snapshot(git, &worktree, &info)?;
    let review: Option<Review> = read_json(&dir.join("review.json"));
    let tree = |c: &str| -> Result<String, GitError> {
        Ok(git
            .run(agents, &["rev-parse", &format!("{c}^{{tree}}")])?
            .trim()
            .to_owned())
    };
    let content_tree = tree(&now)?;
    let reviewed_tree = match &review {
        Some(r) => Some(tree(&r.commit)?),
        None => None,
    };
    let state = state_of(
        &info.base,
        &live,
        review.as_ref(),
        &content_tree,
        reviewed_tree.as_deref(),
    );
    let changed = changed_paths(git, agents, &live, &now)?;
    let mut diff = git.run(
        agents,
        &[
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            &live,
            &now,
            "--",
        ],
    )?;
    let truncated = diff.len() > MAX_DIFF_BYTES;
    if truncated {
        let mut cut = MAX_DIFF_BYTES;
        while !diff.is_char_boundary(cut) {
            cut -= 1;
        }
        diff.truncate(cut);
    }
    Ok(RunDetail {
        run_id: info.run_id,
        core: core.to_owned(),
        goal: info.goal,
        base: info.base,
        live,
        state,
        changed,
        diff,
        truncated,
        review,
        evolver: read_json(&dir.join("evolver.json")),
    })
}

/// Longest diff a run's detail carries.
const MAX_DIFF_BYTES: usize = 1 << 20;

impl super::repository::CoreRepository {
    /// Run `f` on the tenant's tree with its `git`, holding the tenant's
    /// writer lock (runs and live changes take turns).
    async fn with_tree<T: Send + 'static>(
        &self,
        tenant: &crate::ids::TenantId,
        f: impl FnOnce(&GitRunner, &Path) -> Result<T, CoreEditError> + Send + 'static,
    ) -> Result<T, CoreEditError> {
        let agents = self.ready_tree(tenant).await?;
        let _held = self.writer_turn(tenant, &agents).await?;
        let git = self.git_runner(tenant, &agents)?;
        tokio::task::spawn_blocking(move || f(&git, &agents))
            .await
            .map_err(|e| anyhow::anyhow!("evolve run: {e}"))?
    }

    /// [`create`] in the tenant's tree for `core`; also the run's worktree.
    pub async fn run_create(
        &self,
        tenant: &crate::ids::TenantId,
        core: &str,
        run_id: &str,
        goal: &str,
    ) -> Result<(RunInfo, PathBuf), CoreEditError> {
        let (id, goal, core) = (run_id.to_owned(), goal.to_owned(), core.to_owned());
        let owner = self
            .walls
            .as_ref()
            .and_then(|w| w.sandbox.workspace_owner(tenant.as_str()));
        self.with_tree(tenant, move |git, agents| {
            let info = create(git, agents, &id, &goal, &core, owner)?;
            Ok((info, run_folder(agents, &id)?.join("agents")))
        })
        .await
    }

    /// The worktree of a run of `core` (`NotFound`: no such run of it).
    pub async fn run_worktree(
        &self,
        tenant: &crate::ids::TenantId,
        core: &str,
        run_id: &str,
    ) -> Result<PathBuf, CoreEditError> {
        let agents = self.ready_tree(tenant).await?;
        owned(&agents, run_id, core)?;
        Ok(run_folder(&agents, run_id)?.join("agents"))
    }

    /// The evolver child recorded for a run of `core`, if any.
    pub async fn run_evolver(
        &self,
        tenant: &crate::ids::TenantId,
        core: &str,
        run_id: &str,
    ) -> Result<Option<EvolverRef>, CoreEditError> {
        let agents = self.ready_tree(tenant).await?;
        owned(&agents, run_id, core)?;
        Ok(read_json(
            &run_folder(&agents, run_id)?.join("evolver.json"),
        ))
    }

    /// [`record_evolver`] in the tenant's tree.
    pub async fn run_record_evolver(
        &self,
        tenant: &crate::ids::TenantId,
        run_id: &str,
        evolver: EvolverRef,
    ) -> Result<(), CoreEditError> {
        let id = run_id.to_owned();
        self.with_tree(tenant, move |_, agents| {
            record_evolver(agents, &id, &evolver)
        })
        .await
    }

    /// [`list`]: the runs of `core` in the tenant's tree.
    pub async fn run_list(
        &self,
        tenant: &crate::ids::TenantId,
        core: &str,
    ) -> Result<Vec<RunSummary>, CoreEditError> {
        let core = core.to_owned();
        self.with_tree(tenant, move |_, agents| list(agents, &core))
            .await
    }

    /// [`detail`] in the tenant's tree.
    pub async fn run_detail(
        &self,
        tenant: &crate::ids::TenantId,
        core: &str,
        run_id: &str,
    ) -> Result<RunDetail, CoreEditError> {
        let (id, core) = (run_id.to_owned(), core.to_owned());
        self.with_tree(tenant, move |git, agents| detail(git, agents, &id, &core))
            .await
    }

    /// [`review`] of a run of `core` in the tenant's tree.
    pub async fn run_review(
        &self,
        tenant: &crate::ids::TenantId,
        core: &str,
        run_id: &str,
    ) -> Result<Review, CoreEditError> {
        let (id, core) = (run_id.to_owned(), core.to_owned());
        self.with_tree(tenant, move |git, agents| {
            owned(agents, &id, &core)?;
            review(git, agents, &id)
        })
        .await
    }

    /// [`promote`] of a run of `core` in the tenant's tree; the changed
    /// cores load anew on their next turn. The caller drops their
    /// `allow_session` grants.
    pub async fn run_promote(
        &self,
        tenant: &crate::ids::TenantId,
        core: &str,
        run_id: &str,
        mcp_token: Option<&str>,
    ) -> Result<Promoted, CoreEditError> {
        let (id, token, core) = (
            run_id.to_owned(),
            mcp_token.map(str::to_owned),
            core.to_owned(),
        );
        let done = self
            .with_tree(tenant, move |git, agents| {
                owned(agents, &id, &core)?;
                promote(git, agents, &id, token.as_deref())
            })
            .await?;
        for c in &done.cores {
            if let Ok(core) = crate::ids::CoreId::parse(c) {
                self.invalidate(tenant, &core);
            }
        }
        Ok(done)
    }

    /// [`discard`] of a run of `core` in the tenant's tree (a half-made
    /// run without `run.json` belongs to no core and goes too).
    pub async fn run_discard(
        &self,
        tenant: &crate::ids::TenantId,
        core: &str,
        run_id: &str,
    ) -> Result<bool, CoreEditError> {
        let (id, core) = (run_id.to_owned(), core.to_owned());
        self.with_tree(tenant, move |git, agents| {
            match owned(agents, &id, &core) {
                Ok(_) => {}
                Err(CoreEditError::NotFound)
                    if !run_folder(agents, &id)?.join("run.json").exists() => {}
                Err(e) => return Err(e),
            }
            discard(git, agents, &id)
        })
        .await
    }
}

#[cfg(test)]
#[path = "runs_tests.rs"]
mod tests;

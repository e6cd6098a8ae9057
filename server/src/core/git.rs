//! `git` in a tenant's agents tree: the one way the host reads and writes
//! the tree's objects and refs. Every invocation is the `git` CLI started
//! with an allowlisted environment and, when the host has walls, confined
//! like the tenant's own commands (the tree is the tenant's; a crafted
//! repository must not reach the server). `.git` is never parsed by hand.
//!
//! Refs, as in the Python original's core repository:
//! * [`LIVE_REF`] is what sessions load (the checked-out tree is always it);
//! * [`PREVIOUS_REF`] is the live revision before the last change.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

pub const LIVE_REF: &str = "refs/demiurge/live";
pub const PREVIOUS_REF: &str = "refs/demiurge/previous";

/// A `git` command that failed; `stderr` is git's own (bounded) words.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("could not start git: {0}")]
    Spawn(#[from] std::io::Error),
    #[error("git {args}: {stderr}")]
    Failed {
        args: String,
        stderr: String,
        code: Option<i32>,
    },
}

/// How `git` is started in one tenant's agents tree: its environment (an
/// allowlist, never the server's) and its confinement.
pub struct GitRunner {
    pub(super) env: Vec<(String, String)>,
    pub(super) confinement: Option<Arc<crate::exec::sandbox::Confinement>>,
}

/// One author of a change, as git records it.
pub struct Author {
    pub name: String,
    pub email: String,
}

/// Where a tenant's `git` may work and what it may reach.
pub struct GitScope<'a> {
    pub tenant: &'a crate::ids::TenantId,
    /// Read-write: the repository (or the folder it is made in).
    pub workdir: &'a Path,
    /// Fetching needs the network; the agents tree never does.
    pub network: bool,
    /// Extra folders it may read (a local repository to fetch from).
    pub read_only: &'a [std::path::PathBuf],
}

impl GitRunner {
    /// `git` for `scope.tenant` under the server's `home`: an allowlisted
    /// environment with the tenant's host-tool HOME, confined by `sandbox`
    /// like the tenant's own commands when the host has walls.
    pub fn for_tenant(
        sandbox: Option<&crate::exec::sandbox::Sandbox>,
        home: &Path,
        scope: &GitScope<'_>,
    ) -> anyhow::Result<GitRunner> {
        let layout = crate::home::HomeLayout::new(home);
        let (tool_home, tmp) = layout.host_tool_dirs(scope.tenant);
        let confinement = match sandbox {
            None => None,
            Some(sandbox) => sandbox
                .prepare(&crate::exec::sandbox::Request {
                    tenant: scope.tenant.as_str(),
                    workspace: scope.workdir,
                    home: &tool_home,
                    tmp: &tmp,
                    network: scope.network,
                    read_only: scope.read_only,
                    state: None,
                })?
                .map(Arc::new),
        };
        crate::exec::ensure_runtime_home(&tool_home)?;
        let overlay = [("GIT_CONFIG_NOSYSTEM".to_owned(), "1".to_owned())];
        let mut env = crate::exec::child_env(std::env::vars(), &tool_home, &overlay);
        crate::exec::confine_env(
            &mut env,
            scope.workdir,
            confinement.as_ref().map(|c| (c.path_env(), tmp.as_path())),
        );
        Ok(GitRunner { env, confinement })
    }

    /// Runs `git <args>` in `repo` and returns its stdout (lossy UTF-8).
    pub fn run(&self, repo: &Path, args: &[&str]) -> Result<String, GitError> {
        self.run_with(repo, args, None, &[])
    }

    /// Like [`run`](Self::run), with optional stdin and extra environment.
    pub fn run_with(
        &self,
        repo: &Path,
        args: &[&str],
        stdin: Option<&[u8]>,
        extra_env: &[(&str, &str)],
    ) -> Result<String, GitError> {
        let mut command = Command::new("git");
        command
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .envs(extra_env.iter().copied())
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(c) = &self.confinement {
            c.clone().install(&mut command);
        }
        command
            .args([
                "-c",
                "user.name=demiurge",
                "-c",
                "user.email=demiurge@localhost",
                "-c",
                "commit.gpgsign=false",
                "-c",
                "core.hooksPath=/dev/null",
                "-c",
                "core.quotePath=false",
            ])
            .args(args)
            .current_dir(repo);
        let mut child = command.spawn()?;
        if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(input)?;
        }
        let out = child.wait_with_output()?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(GitError::Failed {
                args: args.join(" ").chars().take(200).collect(),
                stderr: stderr.trim().chars().take(500).collect(),
                code: out.status.code(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Makes `repo` a repository if it is not one (branch `main`).
    pub fn ensure_repo(&self, repo: &Path) -> Result<(), GitError> {
        if !repo.join(".git").exists() {
            self.run(repo, &["init", "-q", "-b", "main"])?;
        }
        Ok(())
    }

    /// The commit a revision expression names, or `None` if it names none.
    pub fn resolve(&self, repo: &Path, expr: &str) -> Result<Option<String>, GitError> {
        match self.run(
            repo,
            &["rev-parse", "-q", "--verify", "--end-of-options", expr],
        ) {
            Ok(out) => Ok(Some(out.trim().to_owned())),
            Err(GitError::Failed { code: Some(1), .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The live revision, adopting HEAD as live in a tree that predates the
    /// refs. `None` in a tree without any commit.
    pub fn live(&self, repo: &Path) -> Result<Option<String>, GitError> {
        if let Some(live) = self.resolve(repo, &format!("{LIVE_REF}^{{commit}}"))? {
            return Ok(Some(live));
        }
        let Some(head) = self.resolve(repo, "HEAD^{commit}")? else {
            return Ok(None);
        };
        self.run(repo, &["update-ref", LIVE_REF, &head])?;
        Ok(Some(head))
    }

    /// Stages `pathspec` (everything under it, deletions included) and
    /// commits it as `author`; then `previous` := the old live and `live`
    /// := the new commit, in one ref transaction. Returns the new commit,
    /// or `None` when nothing changed.
    pub fn commit_live(
        &self,
        repo: &Path,
        pathspec: &str,
        author: &Author,
        message: &str,
    ) -> Result<Option<String>, GitError> {
        self.ensure_repo(repo)?;
        let old = self.live(repo)?;
        self.run(repo, &["add", "-A", "--", pathspec])?;
        let staged = self.run(repo, &["diff", "--cached", "--name-only", "--", pathspec])?;
        if staged.trim().is_empty() && old.is_some() {
            return Ok(None);
        }
        self.run_with(
            repo,
            &["commit", "-q", "--no-verify", "--allow-empty", "-F", "-"],
            Some(message.as_bytes()),
            &[
                ("GIT_AUTHOR_NAME", &author.name),
                ("GIT_AUTHOR_EMAIL", &author.email),
            ],
        )?;
        let new = self.run(repo, &["rev-parse", "--verify", "HEAD^{commit}"])?;
        let new = new.trim().to_owned();
        self.advance(repo, old.as_deref(), &new)?;
        Ok(Some(new))
    }

    /// `previous` := `old` (when there was one), `live` := `new`, atomically.
    pub fn advance(&self, repo: &Path, old: Option<&str>, new: &str) -> Result<(), GitError> {
        let mut script = String::from("start\n");
        if let Some(old) = old {
            script.push_str(&format!("update {PREVIOUS_REF} {old}\n"));
        }
        script.push_str(&format!("update {LIVE_REF} {new}\nprepare\ncommit\n"));
        self.run_with(
            repo,
            &["update-ref", "--stdin"],
            Some(script.as_bytes()),
            &[],
        )?;
        Ok(())
    }
}

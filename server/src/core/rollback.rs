//! Rolling a tenant's agents tree back: a new commit whose tree is an
//! earlier live revision's (by default `refs/demiurge/previous`), on top of
//! the live line, so history is never rewritten. `previous` then names the
//! revision rolled back from (a second rollback undoes the first), the
//! checkout follows by fast-forward, and every core the rollback touched is
//! reloaded by its next turn (a running turn keeps what it loaded).

use std::path::Path;

use crate::auth::PrincipalScope;
use crate::ids::CoreId;

use super::edit::{Authority, CoreEditError};
use super::git::{Author, GitError, GitRunner};
use super::path::RevisionSpec;
use super::repository::CoreRepository;

/// The result of a rollback.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct CoreRollback {
    /// The core the rollback was asked for.
    pub core: String,
    /// The new live revision (a new commit).
    pub revision: String,
    /// The live revision before the rollback (now `previous`).
    pub previous: String,
    /// The revision whose tree was restored.
    pub restored: String,
    /// The cores whose files the rollback changed, sorted.
    pub cores: Vec<String>,
}

/// The cores a change touched: the first segment of each changed path
/// that is a core id (top-level files such as the global `agent.yaml`
/// are not cores), sorted and unique.
pub fn changed_cores(name_only: &str) -> Vec<String> {
    let mut out: Vec<String> = name_only
        .lines()
        .filter_map(|l| l.trim().split_once('/'))
        .map(|(first, _)| first)
        .filter(|first| CoreId::parse(first).is_ok())
        .map(str::to_owned)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The rollback commit's message: `rollback to <short id>` and the reason.
pub fn rollback_message(target: &str, reason: Option<&str>) -> String {
    let short: String = target.chars().take(12).collect();
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) => {
            let r: String = r
                .chars()
                .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
                .take(400)
                .collect();
            format!("rollback to {short}: {r}")
        }
        None => format!("rollback to {short}"),
    }
}

impl CoreRepository {
    /// Make a new live revision with the tree of `target` (default
    /// `previous`), which must be on the live line and still hold `core`.
    pub async fn rollback(
        &self,
        scope: &PrincipalScope,
        core: &CoreId,
        target: &RevisionSpec,
        reason: Option<&str>,
        authority: Authority,
    ) -> Result<CoreRollback, CoreEditError> {
        if authority == Authority::Role && !scope.is_operator() {
            return Err(CoreEditError::Forbidden(
                "rolling a core back needs a tenant operator or admin".into(),
            ));
        }
        let tenant = scope.tenant().clone();
        let agents = self.ready_tree(&tenant).await?;
        super::edit::core_folder(&agents, core)?;
        let _held = self.writer_turn(&tenant, &agents).await?;
        let git = self.git_runner(&tenant, &agents)?;
        let author = Author {
            name: scope.principal().to_string(),
            email: format!("{}@{}", scope.principal(), tenant),
        };
        let (core_s, target, reason) =
            (core.to_string(), target.clone(), reason.map(str::to_owned));
        let result = tokio::task::spawn_blocking(move || {
            roll_back(&git, &agents, &core_s, &target, &author, reason.as_deref())
        })
        .await
        .map_err(|e| anyhow::anyhow!("rollback: {e}"))?;
        let result = result?;
        self.invalidate(&tenant, core);
        for c in &result.cores {
            if let Ok(id) = CoreId::parse(c) {
                self.invalidate(&tenant, &id);
            }
        }
        Ok(result)
    }
}

fn is_ancestor(git: &GitRunner, repo: &Path, a: &str, b: &str) -> Result<bool, GitError> {
    match git.run(repo, &["merge-base", "--is-ancestor", a, b]) {
        Ok(_) => Ok(true),
        Err(GitError::Failed { code: Some(1), .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

fn roll_back(
    git: &GitRunner,
    agents: &Path,
    core: &str,
    target: &RevisionSpec,
    author: &Author,
    reason: Option<&str>,
) -> Result<CoreRollback, CoreEditError> {
    if !agents.join(".git").exists() {
        return Err(CoreEditError::Invalid(
            "the agents tree has no history to roll back".into(),
        ));
    }
    let old = git
        .live(agents)?
        .ok_or_else(|| CoreEditError::Invalid("the agents tree has no live revision".into()))?;
    let restored = match git.resolve(agents, &target.to_git())? {
        Some(c) => c,
        None if *target == RevisionSpec::Previous => {
            return Err(CoreEditError::Invalid(
                "there is no previous revision to roll back to".into(),
            ))
        }
        None => return Err(CoreEditError::NotFound),
    };
    // Only a revision the live line went through; never a stray commit.
    if !is_ancestor(git, agents, &restored, &old)? {
        return Err(CoreEditError::Invalid(format!(
            "{} is not an earlier live revision",
            &restored[..restored.len().min(12)]
        )));
    }
    let tree_of = |c: &str| -> Result<String, GitError> {
        Ok(git
            .run(agents, &["rev-parse", "--verify", &format!("{c}^{{tree}}")])?
            .trim()
            .to_owned())
    };
    let tree = tree_of(&restored)?;
    if tree == tree_of(&old)? {
        return Err(CoreEditError::Invalid(format!(
            "the live tree already equals {}",
            &restored[..restored.len().min(12)]
        )));
    }
    if git
        .resolve(agents, &format!("{restored}:{core}/agent.yaml"))?
        .is_none()
    {
        return Err(CoreEditError::WouldBreak(format!(
            "core {core} does not exist at {}",
            &restored[..restored.len().min(12)]
        )));
    }
    let head = git.resolve(agents, "HEAD^{commit}")?;
    if head.as_deref() != Some(old.as_str()) {
        return Err(CoreEditError::Conflict(
            "the agents tree's checkout is not at the live revision".into(),
        ));
    }
    let names = git.run(
        agents,
        &["diff", "--name-only", "--no-renames", &old, &restored],
    )?;
    let message = rollback_message(&restored, reason);
    let new = git.run_with(
        agents,
        &["commit-tree", &tree, "-p", &old, "-F", "-"],
        Some(message.as_bytes()),
        &[
            ("GIT_AUTHOR_NAME", &author.name),
            ("GIT_AUTHOR_EMAIL", &author.email),
        ],
    )?;
    let new = new.trim().to_owned();
    // The checkout (and its branch) follows, forward only.
    git.run(agents, &["merge", "--ff-only", "-q", &new])?;
    git.advance(agents, Some(&old), &new)?;
    Ok(CoreRollback {
        core: core.to_owned(),
        revision: new,
        previous: old,
        restored,
        cores: changed_cores(&names),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_cores_are_top_level_core_folders() {
        let out = "assistant/agent.yaml\nassistant/agent/SOUL.md\nagent.yaml\nevolver/agent/x.md\n.evolve/runs/r/x\n\n";
        assert_eq!(changed_cores(out), ["assistant", "evolver"]);
        assert!(changed_cores("").is_empty());
        assert!(changed_cores("README.md\n").is_empty());
    }

    #[test]
    fn messages_name_the_target_and_a_clean_reason() {
        let id = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(rollback_message(id, None), "rollback to 0123456789ab");
        assert_eq!(rollback_message(id, Some("  ")), "rollback to 0123456789ab");
        assert_eq!(
            rollback_message(id, Some("broke search\u{1b}[31m")),
            "rollback to 0123456789ab: broke search[31m"
        );
        assert!(rollback_message(id, Some(&"x".repeat(1000))).len() < 450);
    }

    fn runner() -> GitRunner {
        GitRunner {
            env: vec![("PATH".into(), std::env::var("PATH").unwrap_or_default())],
            confinement: None,
        }
    }

    fn author() -> Author {
        Author {
            name: "t".into(),
            email: "t@x".into(),
        }
    }

    #[test]
    fn a_rollback_is_a_new_commit_of_the_previous_tree() {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path();
        let git = runner();
        std::fs::create_dir_all(agents.join("c")).unwrap();
        std::fs::write(agents.join("c/agent.yaml"), "v1").unwrap();
        let v1 = git
            .commit_live(agents, "c", &author(), "one")
            .unwrap()
            .unwrap();
        std::fs::write(agents.join("c/agent.yaml"), "v2").unwrap();
        std::fs::write(agents.join("c/new.md"), "n").unwrap();
        let v2 = git
            .commit_live(agents, "c", &author(), "two")
            .unwrap()
            .unwrap();

        let r = roll_back(
            &git,
            agents,
            "c",
            &RevisionSpec::Previous,
            &author(),
            Some("bad"),
        )
        .unwrap();
        assert_eq!(
            (r.previous.as_str(), r.restored.as_str()),
            (v2.as_str(), v1.as_str())
        );
        assert_ne!(r.revision, v1);
        assert_eq!(r.cores, ["c"]);
        assert_eq!(
            std::fs::read_to_string(agents.join("c/agent.yaml")).unwrap(),
            "v1"
        );
        assert!(!agents.join("c/new.md").exists());
        assert_eq!(git.live(agents).unwrap().unwrap(), r.revision);
        // History kept: v2 is the new commit's parent.
        let parent = git
            .run(agents, &["rev-parse", &format!("{}^", r.revision)])
            .unwrap();
        assert_eq!(parent.trim(), v2);
        // Again: back to v2's tree (a redo), still forward.
        let r2 = roll_back(&git, agents, "c", &RevisionSpec::Previous, &author(), None).unwrap();
        assert_eq!(r2.restored, r.previous);
        assert_eq!(
            std::fs::read_to_string(agents.join("c/agent.yaml")).unwrap(),
            "v2"
        );
        // Rolling to the live tree itself, or to a stray commit, is refused.
        let same = roll_back(
            &git,
            agents,
            "c",
            &RevisionSpec::Commit(v2.clone()),
            &author(),
            None,
        );
        assert!(matches!(same, Err(CoreEditError::Invalid(_))), "{same:?}");
        let missing = roll_back(
            &git,
            agents,
            "c",
            &RevisionSpec::Commit("abcdef12".into()),
            &author(),
            None,
        );
        assert!(
            matches!(missing, Err(CoreEditError::NotFound)),
            "{missing:?}"
        );
    }

    #[test]
    fn a_core_missing_at_the_target_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path();
        let git = runner();
        std::fs::create_dir_all(agents.join("a")).unwrap();
        std::fs::write(agents.join("a/agent.yaml"), "a").unwrap();
        git.commit_live(agents, "a", &author(), "a").unwrap();
        std::fs::create_dir_all(agents.join("b")).unwrap();
        std::fs::write(agents.join("b/agent.yaml"), "b").unwrap();
        git.commit_live(agents, "b", &author(), "b").unwrap();
        let r = roll_back(&git, agents, "b", &RevisionSpec::Previous, &author(), None);
        assert!(matches!(r, Err(CoreEditError::WouldBreak(_))), "{r:?}");
        assert!(agents.join("b/agent.yaml").exists());
    }

    #[test]
    fn without_history_there_is_nothing_to_roll_back() {
        let dir = tempfile::tempdir().unwrap();
        let r = roll_back(
            &runner(),
            dir.path(),
            "c",
            &RevisionSpec::Previous,
            &author(),
            None,
        );
        assert!(matches!(r, Err(CoreEditError::Invalid(_))));
        let git = runner();
        std::fs::create_dir_all(dir.path().join("c")).unwrap();
        std::fs::write(dir.path().join("c/agent.yaml"), "v1").unwrap();
        git.commit_live(dir.path(), "c", &author(), "one").unwrap();
        let r = roll_back(
            &git,
            dir.path(),
            "c",
            &RevisionSpec::Previous,
            &author(),
            None,
        );
        assert!(
            matches!(r, Err(CoreEditError::Invalid(ref m)) if m.contains("no previous")),
            "{r:?}"
        );
    }
}

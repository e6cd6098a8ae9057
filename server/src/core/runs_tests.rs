use super::*;
use crate::core::git::Author;

fn runner() -> GitRunner {
    GitRunner {
        env: vec![("PATH".into(), std::env::var("PATH").unwrap_or_default())],
        confinement: None,
    }
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

const CORE: &str = "schema_version: 1\nagent:\n  id: c\ntools:\n  toolsets: [coding]\n";

/// An agents tree with core `c`, committed live.
fn tree() -> (tempfile::TempDir, GitRunner, String) {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "c/agent.yaml", CORE);
    write(dir.path(), "c/agent/SOUL.md", "soul");
    let git = runner();
    let author = Author {
        name: "t".into(),
        email: "t@x".into(),
    };
    let base = git
        .commit_live(dir.path(), "c", &author, "seed")
        .unwrap()
        .unwrap();
    (dir, git, base)
}

fn wt(agents: &Path, id: &str) -> PathBuf {
    agents.join(".evolve/runs").join(id).join("agents")
}

#[test]
fn create_review_promote_discard() {
    let (dir, git, base) = tree();
    let agents = dir.path();
    let info = create(&git, agents, "r1", "add a skill", "c", None).unwrap();
    assert_eq!(info.base, base);
    assert!(wt(agents, "r1").join("c/agent.yaml").is_file());
    assert!(agents.join(".evolve/runs/r1/run.json").is_file());
    // The run folder stays out of the cores' status.
    assert_eq!(
        git.run(agents, &["status", "--porcelain", "--", "c"])
            .unwrap(),
        ""
    );
    assert!(matches!(
        create(&git, agents, "r1", "again", "c", None),
        Err(CoreEditError::Conflict(_))
    ));
    assert!(matches!(
        promote(&git, agents, "r1", None),
        Err(CoreEditError::Invalid(_))
    ));

    write(&wt(agents, "r1"), "c/agent/skills/new.md", "# new\n");
    let r = review(&git, agents, "r1").unwrap();
    assert_eq!(r.changed, ["c/agent/skills/new.md"]);
    assert!(r.report.passed, "{:?}", r.report.failures());
    assert!(r.report.phases.iter().any(|p| p.name == "core_load:c"));
    // Live has not moved yet.
    assert_eq!(git.live(agents).unwrap().unwrap(), base);
    assert!(!agents.join("c/agent/skills/new.md").exists());

    // A change after the review must be reviewed again.
    write(&wt(agents, "r1"), "c/agent/skills/late.md", "late");
    assert!(matches!(
        promote(&git, agents, "r1", None),
        Err(CoreEditError::Conflict(_))
    ));
    std::fs::remove_file(wt(agents, "r1").join("c/agent/skills/late.md")).unwrap();

    let p = promote(&git, agents, "r1", None).unwrap();
    assert_eq!(
        (p.revision.as_str(), p.previous.as_str()),
        (r.commit.as_str(), base.as_str())
    );
    assert_eq!(p.cores, ["c"]);
    assert_eq!(git.live(agents).unwrap().unwrap(), r.commit);
    assert_eq!(
        git.resolve(
            agents,
            &format!("{}^{{commit}}", super::super::git::PREVIOUS_REF)
        )
        .unwrap()
        .unwrap(),
        base
    );
    assert_eq!(
        std::fs::read_to_string(agents.join("c/agent/skills/new.md")).unwrap(),
        "# new\n"
    );

    let files = git
        .run(agents, &["ls-tree", "-r", "--name-only", "HEAD"])
        .unwrap();
    assert!(!files.contains(".evolve"), "{files}");
    assert!(discard(&git, agents, "r1").unwrap());
    assert!(!agents.join(".evolve/runs/r1").exists());
    let list = git
        .run(agents, &["worktree", "list", "--porcelain"])
        .unwrap();
    assert_eq!(list.matches("worktree ").count(), 1, "{list}");
    assert!(git
        .resolve(agents, "refs/demiurge/runs/r1")
        .unwrap()
        .is_none());
    assert!(!discard(&git, agents, "r1").unwrap());
}

#[test]
fn a_failed_gate_blocks_promote() {
    let (dir, git, base) = tree();
    let agents = dir.path();
    create(&git, agents, "r2", "deps", "c", None).unwrap();
    write(&wt(agents, "r2"), "c/requirements.txt", "requests\n");
    write(
        &wt(agents, "r2"),
        "c/agent.yaml",
        "schema_version: 1\nagent:\n  id: wrong\n",
    );
    let r = review(&git, agents, "r2").unwrap();
    assert!(!r.report.passed);
    let failed: Vec<&str> = r
        .report
        .phases
        .iter()
        .filter(|p| !p.passed)
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(failed, ["dependency", "core_load:c"]);
    let e = promote(&git, agents, "r2", None).unwrap_err();
    assert!(
        matches!(e, CoreEditError::GatesFailed(ref r) if r.failures()[0].contains("dependency")),
        "{e:?}"
    );
    assert_eq!(git.live(agents).unwrap().unwrap(), base);
}

#[test]
fn an_mcp_change_needs_its_review_token_and_a_moved_live_refuses() {
    let (dir, git, first_base) = tree();
    let agents = dir.path();
    create(&git, agents, "r3", "mcp", "c", None).unwrap();
    write(
        &wt(agents, "r3"),
        "c/agent/mcp/srv.yaml",
        "command: srv\nenv: {K: v4lue}\n",
    );
    let first = review(&git, agents, "r3").unwrap();
    let mcp = first.mcp.clone().expect("an MCP review");
    assert_eq!(mcp.changed_paths, ["c/agent/mcp/srv.yaml"]);
    assert_eq!(mcp.changes[0].change, "added");
    assert_eq!(mcp.changes[0].after["command"], "srv");
    let recorded = std::fs::read_to_string(agents.join(".evolve/runs/r3/review.json")).unwrap();
    assert!(recorded.contains(&mcp.id) && !recorded.contains("v4lue"));
    let e = promote(&git, agents, "r3", None).unwrap_err();
    assert!(
        matches!(e, CoreEditError::McpReviewRequired { ref message, ref review } if message.contains("c/agent/mcp/srv.yaml") && review.id == mcp.id),
        "{e:?}"
    );
    // The declaration changes again: its second review's token differs,
    // and the first one is stale.
    write(
        &wt(agents, "r3"),
        "c/agent/mcp/srv.yaml",
        "command: srv\nargs: [--all]\n",
    );
    let second = review(&git, agents, "r3").unwrap();
    let token = second.mcp.unwrap().id;
    assert_ne!(token, mcp.id);
    let e = promote(&git, agents, "r3", Some(&mcp.id)).unwrap_err();
    assert!(
        matches!(e, CoreEditError::McpReviewRequired { ref message, ref review } if message.contains("stale") && review.id == token),
        "{e:?}"
    );
    assert_eq!(git.live(agents).unwrap().unwrap(), first_base);
    let p = promote(&git, agents, "r3", Some(&token)).unwrap();
    assert_eq!(p.previous, first_base);
    assert!(agents.join("c/agent/mcp/srv.yaml").exists());

    create(&git, agents, "r4", "soul", "c", None).unwrap();
    write(&wt(agents, "r4"), "c/agent/SOUL.md", "new soul");
    review(&git, agents, "r4").unwrap();
    // Live moves underneath the run.
    write(agents, "c/agent/other.md", "x");
    let author = Author {
        name: "t".into(),
        email: "t@x".into(),
    };
    git.commit_live(agents, "c", &author, "meanwhile")
        .unwrap()
        .unwrap();
    let e = promote(&git, agents, "r4", None).unwrap_err();
    assert!(
        matches!(e, CoreEditError::Conflict(ref m) if m.contains("live moved")),
        "{e:?}"
    );
    assert_eq!(
        std::fs::read_to_string(agents.join("c/agent/SOUL.md")).unwrap(),
        "soul"
    );
}

#[test]
fn run_ids_and_links_are_walls() {
    let (dir, git, _) = tree();
    let agents = dir.path();
    for bad in ["../x", "a/b", ".x", "", "-f"] {
        assert!(
            matches!(
                create(&git, agents, bad, "g", "c", None),
                Err(CoreEditError::Invalid(_))
            ),
            "{bad:?}"
        );
        assert!(
            matches!(discard(&git, agents, bad), Err(CoreEditError::Invalid(_))),
            "{bad:?}"
        );
    }
    // A planted link is never followed by a discard.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("keep"), "k").unwrap();
    std::fs::create_dir_all(agents.join(".evolve/runs")).unwrap();
    std::os::unix::fs::symlink(outside.path(), agents.join(".evolve/runs/r9")).unwrap();
    assert!(matches!(
        discard(&git, agents, "r9"),
        Err(CoreEditError::Conflict(_))
    ));
    assert!(matches!(
        create(&git, agents, "r9", "g", "c", None),
        Err(CoreEditError::Conflict(_))
    ));
    assert!(outside.path().join("keep").exists());
    assert!(matches!(
        review(&git, agents, "nope"),
        Err(CoreEditError::NotFound)
    ));
}

#[tokio::test]
async fn a_promoted_run_is_what_the_next_load_sees() {
    let home = tempfile::tempdir().unwrap();
    let repo = crate::core::repository::CoreRepository::new(home.path());
    let tenant = crate::ids::TenantId::parse("t1").unwrap();
    let core = crate::ids::CoreId::parse("assistant").unwrap();
    repo.ensure_seeded(&tenant).unwrap();
    let before = repo.load(&tenant, &core).await.unwrap();
    assert!(before.soul.as_deref().unwrap_or("").contains("assistant"));

    repo.run_create(&tenant, "assistant", "r1", "a new soul")
        .await
        .unwrap();
    let worktree = repo.agents_dir(&tenant).join(".evolve/runs/r1/agents");
    std::fs::write(worktree.join("assistant/agent/SOUL.md"), "# evolved\n").unwrap();
    let r = repo.run_review(&tenant, "assistant", "r1").await.unwrap();
    assert!(r.report.passed, "{:?}", r.report.failures());
    // Not live until promoted.
    assert_eq!(repo.load(&tenant, &core).await.unwrap().soul, before.soul);
    let p = repo
        .run_promote(&tenant, "assistant", "r1", None)
        .await
        .unwrap();
    assert_eq!(p.cores, ["assistant"]);
    let after = repo.load(&tenant, &core).await.unwrap();
    assert_eq!(after.soul.as_deref(), Some("# evolved"));
    assert!(repo.run_discard(&tenant, "assistant", "r1").await.unwrap());
    assert!(!worktree.exists());
    // The tree's own listing never shows the run folder as a core.
    let cores = repo.list_cores(&tenant).await.unwrap();
    let ids: Vec<&str> = cores.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["assistant", "evolver"]);
}

fn a_review(commit: &str, passed: bool) -> Review {
    Review {
        commit: commit.into(),
        changed: vec![],
        report: GateReport {
            passed,
            phases: vec![],
        },
        mcp: None,
    }
}

#[test]
fn a_runs_state_follows_live_its_review_and_its_content() {
    let (ok, bad) = (a_review("r", true), a_review("r", false));
    assert_eq!(state_of("b", "b", None, "t", None), RunState::Open);
    assert_eq!(
        state_of("b", "b", Some(&ok), "t", Some("t")),
        RunState::Reviewed
    );
    assert_eq!(
        state_of("b", "b", Some(&bad), "t", Some("t")),
        RunState::Failed
    );
    assert_eq!(
        state_of("b", "b", Some(&ok), "t2", Some("t")),
        RunState::Changed
    );
    assert_eq!(state_of("b", "x", None, "t", None), RunState::Outdated);
    assert_eq!(
        state_of("b", "r", Some(&ok), "t", Some("t")),
        RunState::Promoted
    );
}

#[test]
fn runs_are_listed_and_detailed_under_their_core_only() {
    let (dir, git, base) = tree();
    let agents = dir.path();
    create(&git, agents, "evolve-1", "first", "c", None).unwrap();
    create(&git, agents, "evolve-2", "second", "c", None).unwrap();
    create(&git, agents, "evolve-3", "other", "d", None).unwrap();
    let runs = list(agents, "c").unwrap();
    let ids: Vec<&str> = runs.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(ids, ["evolve-2", "evolve-1"]);
    assert!(!runs[0].reviewed && runs[0].passed.is_none());
    assert!(list(agents, "nope").unwrap().is_empty());

    let d = detail(&git, agents, "evolve-1", "c").unwrap();
    assert_eq!((d.state, d.live.as_str()), (RunState::Open, base.as_str()));
    assert!(d.changed.is_empty() && d.diff.is_empty() && d.review.is_none());
    write(&wt(agents, "evolve-1"), "c/agent/SOUL.md", "better soul");
    let d = detail(&git, agents, "evolve-1", "c").unwrap();
    assert_eq!(d.changed, ["c/agent/SOUL.md"]);
    assert!(d.diff.contains("+better soul"), "{}", d.diff);
    review(&git, agents, "evolve-1").unwrap();
    assert_eq!(
        detail(&git, agents, "evolve-1", "c").unwrap().state,
        RunState::Reviewed
    );
    write(&wt(agents, "evolve-1"), "c/agent/SOUL.md", "later soul");
    assert_eq!(
        detail(&git, agents, "evolve-1", "c").unwrap().state,
        RunState::Changed
    );
    assert!(list(agents, "c").unwrap()[1].reviewed);
    // Another core's run looks missing.
    assert!(matches!(
        detail(&git, agents, "evolve-3", "c"),
        Err(CoreEditError::NotFound)
    ));
    record_evolver(
        agents,
        "evolve-2",
        &EvolverRef {
            task_id: "t".into(),
            session_id: "s".into(),
        },
    )
    .unwrap();
    assert_eq!(
        list(agents, "c").unwrap()[0]
            .evolver
            .as_ref()
            .unwrap()
            .task_id,
        "t"
    );
}

#[test]
fn every_tenant_gets_the_evolver_in_its_own_commit_once() {
    let home = tempfile::tempdir().unwrap();
    let repo = crate::core::repository::CoreRepository::new(home.path());
    let tenant = crate::ids::TenantId::parse("t1").unwrap();
    repo.ensure_seeded(&tenant).unwrap();
    let agents = repo.agents_dir(&tenant);
    let git = runner();
    let live = git.live(&agents).unwrap().unwrap();
    let log = git.run(&agents, &["log", "--format=%s", &live]).unwrap();
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        ["seed the evolver core", "seed the assistant core"]
    );
    // Seeding again changes nothing; a tenant's own evolver is left alone.
    std::fs::write(agents.join("evolver/agent/SOUL.md"), "mine").unwrap();
    repo.ensure_seeded(&tenant).unwrap();
    assert_eq!(git.live(&agents).unwrap().unwrap(), live);
    assert_eq!(
        std::fs::read_to_string(agents.join("evolver/agent/SOUL.md")).unwrap(),
        "mine"
    );
}

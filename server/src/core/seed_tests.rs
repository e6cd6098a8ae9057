use super::*;

use crate::core::fixtures::{load, write, CODING, DEMIURGE_CONTROL, SCHEDULE};
use crate::core::loader::Phase;
use crate::core::manifest::{AgentYaml, FailurePolicy, SlotYaml};

#[test]
fn seeded_assistant_loads_cleanly() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("assistant");
    seed_assistant(&dir).unwrap();
    let core = load(&dir, "assistant").unwrap();

    let expected: Vec<&str> = CODING
        .iter()
        .chain(DEMIURGE_CONTROL)
        .chain(SCHEDULE)
        .copied()
        .collect();
    assert_eq!(core.builtin_tools, expected);
    assert!(core.authored.is_empty());
    assert_eq!(core.manifest.slots.tools.as_deref(), Some("agent/tools"));
    assert!(core.mcp_servers.is_empty() && core.skills.is_empty());
    assert!(core
        .soul
        .as_deref()
        .is_some_and(|s| s.contains("evolve_core")));
    assert_eq!(core.pipelines.bootstrap.serial, ["session_context"]);
    assert_eq!(core.pipelines.input.serial, ["base_input"]);
    assert_eq!(core.pipelines.output.serial, ["base_output"]);
    for (phase, id) in [(Phase::Input, "base_input"), (Phase::Output, "base_output")] {
        let slot = core.slot(phase, id).unwrap();
        assert_eq!(slot.manifest.failure_policy, FailurePolicy::Hard);
        assert!(dir.join(&slot.dir_rel).join("module.py").is_file());
    }
    let boot = core.slot(Phase::Bootstrap, "session_context").unwrap();
    assert_eq!(boot.manifest.failure_policy, FailurePolicy::Soft);
    assert_eq!(core.slots.len(), 3);
    // The shipped base slots are the Python project's modules, run natively.
    let pipeline =
        crate::core::pipeline::Pipeline::from_core(&core, &dir, &crate::core::pipeline::native_of);
    assert!(pipeline.input_serial[0].native.is_some());
    assert!(pipeline.output_serial[0].native.is_some());
    assert!(pipeline.bootstrap[0].native.is_none());
}

#[test]
fn seeded_assistant_grants_the_python_assistant_defaults() {
    let t = tempfile::tempdir().unwrap();
    seed_assistant(t.path()).unwrap();
    let core = load(t.path(), "assistant").unwrap();
    let mut expected = vec![
        "fs.read",
        "fs.write",
        "terminal.exec",
        "task.control",
        "session.read",
        "agents.spawn:evolver",
        "tool.call:evolve_core",
        "tool.call:rollback_core",
        "network.fetch",
        "schedule.manage",
    ];
    expected.sort_unstable();
    assert_eq!(core.capability_defaults(), expected);
    assert!(core.capability_slots().is_empty());
    assert!(core.manifest.tools.metadata.is_empty());
}

#[test]
fn seed_files_parse_on_their_own() {
    for (rel, text) in FILES {
        if rel.ends_with("slot.yaml") {
            serde_yaml_ng::from_str::<SlotYaml>(text).unwrap();
        }
        if *rel == "agent.yaml" {
            let m: AgentYaml = serde_yaml_ng::from_str(text).unwrap();
            assert_eq!(m.agent.id, "assistant");
            assert_eq!(m.tools.toolsets, ["coding", "demiurge_control", "schedule"]);
        }
        assert!(!text.contains('\t'), "{rel}");
    }
}

#[cfg(unix)]
#[test]
fn seed_writes_private_files_and_folders() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("cores/assistant");
    seed_assistant(&dir).unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    for d in [
        "agent",
        "agent/input",
        "agent/input/base_input",
        "agent/output/base_output",
    ] {
        assert_eq!(mode(&dir.join(d)), 0o700, "{d}");
    }
    for (rel, _) in FILES {
        assert_eq!(mode(&dir.join(rel)), 0o600, "{rel}");
    }
}

#[test]
fn seed_never_overwrites() {
    let t = tempfile::tempdir().unwrap();
    write(t.path(), "agent.yaml", "mine\n");
    let err = seed_assistant(t.path()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
    assert_eq!(
        std::fs::read_to_string(t.path().join("agent.yaml")).unwrap(),
        "mine\n"
    );
}

#[test]
fn seeded_core_takes_authored_tools_from_agent_tools() {
    let t = tempfile::tempdir().unwrap();
    seed_assistant(t.path()).unwrap();
    write(
        t.path(),
        "agent/tools/echo/tool.yaml",
        "entrypoint: module:execute\ndescription: Echoes.\n",
    );
    write(
        t.path(),
        "agent/tools/echo/module.py",
        "def execute(ctx, args):\n    return 'x'\n",
    );
    let core = load(t.path(), "assistant").unwrap();
    assert_eq!(core.authored.len(), 1, "{:?}", core.authored);
    // A name a built-in tool already has is refused, not shadowed.
    write(
        t.path(),
        "agent/tools/read_file/tool.yaml",
        "entrypoint: module:execute\ndescription: would collide\n",
    );
    let err = load(t.path(), "assistant").unwrap_err();
    assert!(err.to_string().contains("read_file"), "{err}");
}

#[test]
fn seeded_evolver_loads_with_the_coding_tools_it_may_use() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("evolver");
    seed_evolver(&dir).unwrap();
    let core = load(&dir, "evolver").unwrap();
    assert_eq!(core.builtin_tools, CODING);
    for off in [
        "clarify",
        "session_search",
        "skill_manage",
        "todo",
        "web_extract",
    ] {
        assert_eq!(
            core.metadata_override(off).and_then(|m| m.enabled),
            Some(false),
            "{off}"
        );
    }
    let mut grants = core.capability_defaults();
    grants.sort_unstable();
    assert_eq!(
        grants,
        ["fs.read", "fs.write", "task.control", "terminal.exec"]
    );
    assert!(core.soul.as_deref().is_some_and(|s| s.contains("worktree")));
    assert_eq!(core.pipelines.input.serial, ["base_input"]);
    assert_eq!(core.pipelines.output.serial, ["base_output"]);
    assert!(matches!(
        seed_evolver(&dir),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists
    ));
}

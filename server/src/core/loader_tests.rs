use super::*;

use std::fs;

use crate::core::fixtures::{
    assistant_core, edit, evolver_core, load, load_err, toolsets, tts_core, write, CODING,
    DEMIURGE_CONTROL, SCHEDULE,
};
use crate::core::manifest::{ApprovalPolicy, FailurePolicy, Risk};

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

// ---------------------------------------------------------------------------
// The three example-shaped cores

#[test]
fn assistant_like_core_loads() {
    let t = tmp();
    assistant_core(t.path());
    let core = load(t.path(), "assistant").unwrap();

    assert_eq!(core.id, "assistant");
    let expected: Vec<&str> = CODING
        .iter()
        .chain(DEMIURGE_CONTROL)
        .chain(SCHEDULE)
        .copied()
        .collect();
    assert_eq!(core.builtin_tools, expected);
    assert_eq!(core.builtin_tools.len(), 21);

    assert_eq!(core.authored.len(), 1);
    let echo = &core.authored[0];
    assert_eq!(
        (echo.name.as_str(), echo.dir_rel.as_str()),
        ("echo", "agent/tools/echo")
    );
    assert_eq!(echo.manifest.risk, Risk::Medium);
    assert_eq!(echo.manifest.approval_policy, ApprovalPolicy::Prompt);
    assert_eq!(echo.manifest.entrypoint, "module:execute");
    assert_eq!(
        echo.manifest.input_schema["properties"]["text"]["type"],
        "string"
    );
    assert!(core.authored_tool("echo").is_some());

    assert_eq!(
        core.soul.as_deref(),
        Some("# test assistant\n\nYou help with tests.")
    );
    assert_eq!(core.pipelines.bootstrap.serial, ["session_context"]);
    assert_eq!(core.pipelines.input.serial, ["base_input"]);
    assert_eq!(core.pipelines.output.serial, ["base_output"]);
    let slots: Vec<(Phase, &str, &str)> = core
        .slots
        .iter()
        .map(|s| (s.phase, s.id.as_str(), s.dir_rel.as_str()))
        .collect();
    assert_eq!(
        slots,
        [
            (
                Phase::Bootstrap,
                "session_context",
                "agent/bootstrap/session_context"
            ),
            (Phase::Input, "base_input", "agent/input/base_input"),
            (Phase::Output, "base_output", "agent/output/base_output"),
        ]
    );
    let base_input = core.slot(Phase::Input, "base_input").unwrap();
    assert_eq!(base_input.manifest.failure_policy, FailurePolicy::Hard);

    assert_eq!(core.manifest.channels.len(), 6);
    assert_eq!(core.manifest.approval.default, None);
    assert!(core.manifest.approval.tools.is_empty());
    assert_eq!(core.manifest.runtime.max_model_steps, 90);
    assert_eq!(core.manifest.model.provider.as_deref(), Some("auto"));
    assert_eq!(core.manifest.slots.input.as_deref(), Some("agent/input"));
    assert!(core.mcp_servers.is_empty());
    assert!(core.skills.is_empty());
    assert_eq!(core.fingerprint.len(), 64);
}

#[test]
fn assistant_like_core_capability_defaults() {
    let t = tmp();
    assistant_core(t.path());
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
    let fs_read = &core.manifest.capabilities.defaults.0["fs.read"];
    assert_eq!(fs_read["max_chars_per_call"].as_u64(), Some(20000));
}

#[test]
fn evolver_like_core_loads_with_disabled_tools() {
    let t = tmp();
    evolver_core(t.path());
    let core = load(t.path(), "evolver").unwrap();
    assert_eq!(core.builtin_tools, CODING);
    for name in [
        "clarify",
        "session_search",
        "skill_manage",
        "todo",
        "web_extract",
    ] {
        let o = core.metadata_override(name).unwrap();
        assert_eq!(o.enabled, Some(false), "{name}");
        assert_eq!((o.risk, o.approval_policy), (None, None));
    }
    assert!(core.metadata_override("read_file").is_none());
    // slots.tools is set but agent/tools does not exist: no authored tools.
    assert!(core.authored.is_empty());
    assert!(core.pipelines.bootstrap.serial.is_empty());
    assert_eq!(
        core.capability_defaults(),
        ["fs.read", "fs.write", "task.control", "terminal.exec"]
    );
}

#[test]
fn empty_toolsets_core_loads() {
    let t = tmp();
    tts_core(t.path());
    let core = load(t.path(), "tts_summarizer").unwrap();
    assert!(core.builtin_tools.is_empty());
    assert!(core.capability_defaults().is_empty());
    assert_eq!(core.pipelines.output.serial, ["result_output"]);
    assert_eq!(core.soul.as_deref(), Some("Summarise replies for speech."));
}

#[test]
fn duplicate_toolsets_are_deduplicated_in_order() {
    let t = tmp();
    evolver_core(t.path());
    edit(
        t.path(),
        "agent.yaml",
        "    - coding\n",
        "    - schedule\n    - coding\n    - schedule\n",
    );
    let core = load(t.path(), "evolver").unwrap();
    assert_eq!(core.builtin_tools[0], "schedule_manage");
    assert_eq!(core.builtin_tools.len(), 1 + CODING.len());
}

// ---------------------------------------------------------------------------
// agent.yaml errors

#[test]
fn yaml_syntax_error_reports_line_and_column() {
    let t = tmp();
    evolver_core(t.path());
    edit(
        t.path(),
        "agent.yaml",
        "  toolsets:\n    - coding\n",
        "  toolsets: [coding\n",
    );
    let e = load_err(t.path(), "evolver");
    assert_eq!(e.kind, CoreErrorKind::Syntax);
    assert_eq!(e.file, "agent.yaml");
    let text = e.to_string();
    assert!(text.starts_with("agent.yaml: "), "{text}");
    assert!(text.contains(" at line "), "{text}");
    assert!(text.contains(" column "), "{text}");
}

#[test]
fn tab_indentation_is_a_syntax_error() {
    let t = tmp();
    evolver_core(t.path());
    edit(t.path(), "agent.yaml", "  id: evolver", "\tid: evolver");
    let e = load_err(t.path(), "evolver");
    assert_eq!(e.kind, CoreErrorKind::Syntax);
    assert!(e.problem.contains("line 3"), "{e}");
}

#[test]
fn unknown_top_level_key_is_rejected_with_line() {
    let t = tmp();
    evolver_core(t.path());
    edit(
        t.path(),
        "agent.yaml",
        "channels: {}\n",
        "channels: {}\nprompts: {}\n",
    );
    let e = load_err(t.path(), "evolver");
    assert_eq!(e.kind, CoreErrorKind::Schema);
    assert_eq!(e.field, None);
    assert!(e.problem.starts_with("unknown field `prompts`"), "{e}");
    assert!(e.problem.contains("line 16"), "{e}");
}

#[test]
fn unknown_nested_key_names_its_path() {
    let t = tmp();
    evolver_core(t.path());
    edit(
        t.path(),
        "agent.yaml",
        "  max_model_steps: 90\n",
        "  max_steps: 90\n",
    );
    let e = load_err(t.path(), "evolver");
    assert_eq!(e.kind, CoreErrorKind::Schema);
    assert_eq!(e.field.as_deref(), Some("runtime"));
    assert!(e.problem.contains("unknown field `max_steps`"), "{e}");
}

#[test]
fn missing_agent_id_is_a_schema_error() {
    let t = tmp();
    evolver_core(t.path());
    edit(t.path(), "agent.yaml", "  id: evolver\n", "");
    let e = load_err(t.path(), "evolver");
    assert_eq!(e.kind, CoreErrorKind::Schema);
    assert!(e.to_string().contains("missing field `id`"), "{e}");
}

#[test]
fn unknown_toolset_message_names_index_and_known_toolsets() {
    let t = tmp();
    assistant_core(t.path());
    edit(
        t.path(),
        "agent.yaml",
        "    - demiurge_control\n",
        "    - codng\n",
    );
    let e = load_err(t.path(), "assistant");
    assert_eq!(e.kind, CoreErrorKind::UnknownToolset);
    assert_eq!(
        e.to_string(),
        r#"agent.yaml: tools.toolsets[1]: unknown toolset "codng" (known: coding, demiurge_control, schedule)"#
    );
}

#[test]
fn unknown_toolset_lists_only_what_the_host_knows() {
    let t = tmp();
    evolver_core(t.path());
    let only_coding = |name: &str| (name == "coding").then(|| toolsets(name)).flatten();
    edit(
        t.path(),
        "agent.yaml",
        "    - coding\n",
        "    - coding\n    - schedule\n",
    );
    let e = load_core(t.path(), "evolver", &only_coding).unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"agent.yaml: tools.toolsets[1]: unknown toolset "schedule" (known: coding)"#
    );
}

#[test]
fn bad_metadata_key_is_rejected() {
    let t = tmp();
    evolver_core(t.path());
    edit(
        t.path(),
        "agent.yaml",
        "    todo:\n      enabled: false\n",
        "    todo:\n      approval: deny\n",
    );
    let e = load_err(t.path(), "evolver");
    assert_eq!(e.kind, CoreErrorKind::Schema);
    assert_eq!(e.field.as_deref(), Some("tools.metadata.todo"));
    assert!(e.problem.starts_with("unknown field `approval`"), "{e}");
    assert!(e.problem.contains("approval_policy"), "{e}");
}

#[test]
fn bad_risk_value_in_metadata_is_rejected() {
    let t = tmp();
    evolver_core(t.path());
    edit(
        t.path(),
        "agent.yaml",
        "    todo:\n      enabled: false\n",
        "    terminal:\n      risk: extreme\n",
    );
    let e = load_err(t.path(), "evolver");
    assert_eq!(e.kind, CoreErrorKind::Schema);
    assert_eq!(e.field.as_deref(), Some("tools.metadata.terminal.risk"));
    assert!(e.problem.contains("unknown variant `extreme`"), "{e}");
    assert!(e.problem.contains("`critical`"), "{e}");
}

#[test]
fn metadata_overrides_parse_typed_values() {
    let t = tmp();
    evolver_core(t.path());
    edit(
        t.path(),
        "agent.yaml",
        "    todo:\n      enabled: false\n",
        "    terminal:\n      risk: critical\n      approval_policy: deny\n      capability: terminal.exec\n      display_policy: full\n      model_output_policy: content\n",
    );
    let core = load(t.path(), "evolver").unwrap();
    let o = core.metadata_override("terminal").unwrap();
    assert_eq!(o.risk, Some(Risk::Critical));
    assert_eq!(o.approval_policy, Some(ApprovalPolicy::Deny));
    assert_eq!(o.capability.as_deref(), Some("terminal.exec"));
    assert_eq!(o.display_policy.as_deref(), Some("full"));
    assert_eq!(o.enabled, None);
}

#[test]
fn bad_approval_value_is_rejected() {
    let t = tmp();
    evolver_core(t.path());
    edit(
        t.path(),
        "agent.yaml",
        "  tools: {}\n",
        "  tools:\n    terminal: ask\n",
    );
    let e = load_err(t.path(), "evolver");
    assert_eq!(e.kind, CoreErrorKind::Schema);
    assert_eq!(e.field.as_deref(), Some("approval.tools.terminal"));
    assert!(e.problem.contains("unknown variant `ask`"), "{e}");
}

#[test]
fn approval_block_parses() {
    let t = tmp();
    evolver_core(t.path());
    edit(
        t.path(),
        "agent.yaml",
        "  default: null\n  tools: {}\n  capabilities: {}\n  risks: {}\n",
        "  default: auto\n  tools:\n    terminal: prompt\n  capabilities:\n    fs.write: prompt\n  risks:\n    critical: deny\n",
    );
    let core = load(t.path(), "evolver").unwrap();
    let a = &core.manifest.approval;
    assert_eq!(a.default, Some(ApprovalPolicy::Auto));
    assert_eq!(a.tools["terminal"], ApprovalPolicy::Prompt);
    assert_eq!(a.capabilities["fs.write"], ApprovalPolicy::Prompt);
    assert_eq!(a.risks[&Risk::Critical], ApprovalPolicy::Deny);
}

#[test]
fn schema_version_must_be_one() {
    let t = tmp();
    evolver_core(t.path());
    edit(
        t.path(),
        "agent.yaml",
        "schema_version: 1",
        "schema_version: 2",
    );
    let e = load_err(t.path(), "evolver");
    assert_eq!(e.kind, CoreErrorKind::Invalid);
    assert_eq!(
        e.to_string(),
        "agent.yaml: schema_version: unsupported schema_version 2 (expected 1)"
    );
}

#[test]
fn agent_id_must_match_core_id() {
    let t = tmp();
    evolver_core(t.path());
    let e = load_err(t.path(), "assistant");
    assert_eq!(
        e.to_string(),
        r#"agent.yaml: agent.id: "evolver" does not match the core id "assistant""#
    );
}

#[test]
fn max_model_steps_range_is_enforced() {
    for (value, ok) in [("0", false), ("1", true), ("90", true), ("91", false)] {
        let t = tmp();
        evolver_core(t.path());
        edit(
            t.path(),
            "agent.yaml",
            "max_model_steps: 90",
            &format!("max_model_steps: {value}"),
        );
        match load(t.path(), "evolver") {
            Ok(_) => assert!(ok, "{value} should fail"),
            Err(e) => {
                assert!(!ok, "{value} should load: {e}");
                assert_eq!(e.field.as_deref(), Some("runtime.max_model_steps"));
            }
        }
    }
}

#[test]
fn empty_workspace_is_rejected() {
    let t = tmp();
    evolver_core(t.path());
    edit(
        t.path(),
        "agent.yaml",
        "workspace: null",
        "workspace: \"  \"",
    );
    let e = load_err(t.path(), "evolver");
    assert_eq!(e.field.as_deref(), Some("runtime.workspace"));
}

#[test]
fn channel_entries_must_be_mappings() {
    let t = tmp();
    evolver_core(t.path());
    edit(
        t.path(),
        "agent.yaml",
        "channels: {}",
        "channels:\n  telegram: yes-please",
    );
    let e = load_err(t.path(), "evolver");
    assert_eq!(
        e.to_string(),
        "agent.yaml: channels.telegram: must be a mapping"
    );
}

#[test]
fn channels_null_is_empty() {
    let t = tmp();
    evolver_core(t.path());
    edit(t.path(), "agent.yaml", "channels: {}", "channels: null");
    assert!(load(t.path(), "evolver")
        .unwrap()
        .manifest
        .channels
        .is_empty());
}

#[test]
fn surface_root_must_stay_inside_and_exist() {
    for (value, kind) in [
        ("../elsewhere", CoreErrorKind::PathEscape),
        ("/etc", CoreErrorKind::PathEscape),
        ("surface", CoreErrorKind::Missing),
    ] {
        let t = tmp();
        evolver_core(t.path());
        edit(
            t.path(),
            "agent.yaml",
            "surface_root: agent",
            &format!("surface_root: {value}"),
        );
        let e = load_err(t.path(), "evolver");
        assert_eq!(e.kind, kind, "{value}: {e}");
        assert_eq!(e.field.as_deref(), Some("runtime.surface_root"), "{e}");
    }
}

#[test]
fn custom_surface_root_is_used_for_every_phase() {
    let t = tmp();
    evolver_core(t.path());
    fs::rename(t.path().join("agent"), t.path().join("surface")).unwrap();
    edit(
        t.path(),
        "agent.yaml",
        "surface_root: agent",
        "surface_root: ./surface/",
    );
    edit(t.path(), "agent.yaml", "  soul: agent/SOUL.md\n", "");
    let core = load(t.path(), "evolver").unwrap();
    assert_eq!(core.slots[0].dir_rel, "surface/input/base_input");
    assert!(core.soul.is_some());
}

#[cfg(unix)]
#[test]
fn symlinked_tool_root_outside_the_core_is_rejected() {
    let t = tmp();
    let outside = tmp();
    assistant_core(t.path());
    fs::remove_dir_all(t.path().join("agent/tools")).unwrap();
    write(outside.path(), "echo/tool.yaml", "description: outside\n");
    std::os::unix::fs::symlink(outside.path(), t.path().join("agent/tools")).unwrap();
    let e = load_err(t.path(), "assistant");
    assert_eq!(e.kind, CoreErrorKind::PathEscape);
    assert_eq!(e.field.as_deref(), Some("slots.tools"));
}

#[cfg(unix)]
#[test]
fn symlinked_manifest_outside_the_core_is_rejected() {
    let t = tmp();
    let outside = tmp();
    assistant_core(t.path());
    write(outside.path(), "tool.yaml", "description: outside\n");
    fs::remove_file(t.path().join("agent/tools/echo/tool.yaml")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("tool.yaml"),
        t.path().join("agent/tools/echo/tool.yaml"),
    )
    .unwrap();
    let e = load_err(t.path(), "assistant");
    assert_eq!(e.kind, CoreErrorKind::PathEscape);
    assert_eq!(e.file, "agent/tools/echo/tool.yaml");
}

#[test]
fn missing_agent_yaml_and_missing_folder() {
    let t = tmp();
    let e = load_err(t.path(), "assistant");
    assert_eq!(
        (e.kind, e.file.as_str()),
        (CoreErrorKind::Missing, "agent.yaml")
    );

    let gone = t.path().join("nope");
    let e = load_err(&gone, "assistant");
    assert_eq!((e.kind, e.file.as_str()), (CoreErrorKind::Missing, "."));
}

// ---------------------------------------------------------------------------
// pipelines.yaml and slots

#[test]
fn missing_pipeline_slot_folder_is_rejected() {
    let t = tmp();
    assistant_core(t.path());
    edit(
        t.path(),
        "agent/pipelines.yaml",
        "  - base_input\n",
        "  - base_input\n  - memory\n",
    );
    let e = load_err(t.path(), "assistant");
    assert_eq!(e.kind, CoreErrorKind::Pipeline);
    assert_eq!(
        e.to_string(),
        r#"agent/pipelines.yaml: input.serial[1]: slot "memory" has no folder agent/input/memory/"#
    );
}

#[test]
fn pipeline_slot_folder_without_slot_yaml_is_rejected() {
    let t = tmp();
    assistant_core(t.path());
    write(t.path(), "agent/output/archive/module.py", "");
    edit(
        t.path(),
        "agent/pipelines.yaml",
        "output:\n  serial:\n  - base_output\n  parallel: []\n",
        "output:\n  serial:\n  - base_output\n  parallel:\n  - archive\n",
    );
    let e = load_err(t.path(), "assistant");
    assert_eq!(
        e.to_string(),
        r#"agent/pipelines.yaml: output.parallel[0]: slot "archive": folder agent/output/archive/ has no slot.yaml"#
    );
}

#[test]
fn pipeline_slot_must_be_in_its_own_phase() {
    let t = tmp();
    assistant_core(t.path());
    edit(
        t.path(),
        "agent/pipelines.yaml",
        "  - base_output\n",
        "  - base_input\n",
    );
    let e = load_err(t.path(), "assistant");
    assert_eq!(e.field.as_deref(), Some("output.serial[0]"));
    assert!(e.problem.contains("agent/output/base_input/"), "{e}");
}

#[test]
fn pipeline_ids_that_are_paths_are_rejected() {
    let t = tmp();
    assistant_core(t.path());
    edit(
        t.path(),
        "agent/pipelines.yaml",
        "  - base_input\n",
        "  - ../input/base_input\n",
    );
    let e = load_err(t.path(), "assistant");
    assert_eq!(e.kind, CoreErrorKind::Pipeline);
    assert!(e.problem.contains("is not a slot id"), "{e}");
}

#[test]
fn pipeline_duplicate_in_one_phase_is_rejected() {
    let t = tmp();
    assistant_core(t.path());
    edit(
        t.path(),
        "agent/pipelines.yaml",
        "  - base_input\n  parallel: []\n",
        "  - base_input\n  parallel:\n  - base_input\n",
    );
    let e = load_err(t.path(), "assistant");
    assert_eq!(
        e.to_string(),
        r#"agent/pipelines.yaml: input.parallel[0]: slot "base_input" is listed twice in the input phase (also at input.serial[0])"#
    );
}

#[test]
fn bootstrap_parallel_and_unknown_phases_are_rejected() {
    let t = tmp();
    assistant_core(t.path());
    edit(
        t.path(),
        "agent/pipelines.yaml",
        "  - session_context\n",
        "  - session_context\n  parallel: []\n",
    );
    let e = load_err(t.path(), "assistant");
    assert_eq!(e.kind, CoreErrorKind::Schema);
    assert_eq!(e.field.as_deref(), Some("bootstrap"));
    assert!(e.problem.contains("unknown field `parallel`"), "{e}");

    let t = tmp();
    assistant_core(t.path());
    edit(
        t.path(),
        "agent/pipelines.yaml",
        "schema_version: 1\n",
        "schema_version: 1\nteardown: {}\n",
    );
    let e = load_err(t.path(), "assistant");
    assert!(e.problem.contains("unknown field `teardown`"), "{e}");
}

#[test]
fn pipelines_schema_version_is_required_and_one() {
    let t = tmp();
    assistant_core(t.path());
    edit(t.path(), "agent/pipelines.yaml", "schema_version: 1\n", "");
    let e = load_err(t.path(), "assistant");
    assert!(
        e.to_string().contains("missing field `schema_version`"),
        "{e}"
    );

    let t = tmp();
    assistant_core(t.path());
    edit(
        t.path(),
        "agent/pipelines.yaml",
        "schema_version: 1",
        "schema_version: 3",
    );
    let e = load_err(t.path(), "assistant");
    assert_eq!(e.field.as_deref(), Some("schema_version"));
    assert_eq!(e.file, "agent/pipelines.yaml");
}

#[test]
fn absent_pipelines_yaml_means_empty_pipelines() {
    let t = tmp();
    evolver_core(t.path());
    fs::remove_file(t.path().join("agent/pipelines.yaml")).unwrap();
    let core = load(t.path(), "evolver").unwrap();
    assert!(core.pipelines.input.serial.is_empty());
    assert_eq!(core.pipelines.schema_version, 1);
    // Slot folders are still discovered and validated.
    assert_eq!(core.slots.len(), 2);
}

#[test]
fn slot_ids_must_be_unique_across_phases() {
    let t = tmp();
    assistant_core(t.path());
    write(
        t.path(),
        "agent/output/base_input/slot.yaml",
        "description: clash\n",
    );
    let e = load_err(t.path(), "assistant");
    assert_eq!(e.kind, CoreErrorKind::Duplicate);
    assert_eq!(e.file, "agent/output/base_input/slot.yaml");
    assert!(e.problem.contains("agent/input/base_input"), "{e}");
}

#[test]
fn slot_yaml_rejects_tool_keys_and_bad_policies() {
    let t = tmp();
    assistant_core(t.path());
    edit(
        t.path(),
        "agent/input/base_input/slot.yaml",
        "capabilities: []",
        "risk: high",
    );
    let e = load_err(t.path(), "assistant");
    assert_eq!(e.file, "agent/input/base_input/slot.yaml");
    assert!(e.problem.contains("unknown field `risk`"), "{e}");

    let t = tmp();
    assistant_core(t.path());
    edit(
        t.path(),
        "agent/input/base_input/slot.yaml",
        "failure_policy: hard",
        "failure_policy: fatal",
    );
    let e = load_err(t.path(), "assistant");
    assert_eq!(e.field.as_deref(), Some("failure_policy"));
    assert!(e.problem.contains("unknown variant `fatal`"), "{e}");
}

#[test]
fn unlisted_slot_folders_are_still_validated() {
    let t = tmp();
    assistant_core(t.path());
    write(
        t.path(),
        "agent/input/draft/slot.yaml",
        "history_policy: forever\n",
    );
    let e = load_err(t.path(), "assistant");
    assert_eq!(e.file, "agent/input/draft/slot.yaml");
    assert_eq!(e.field.as_deref(), Some("history_policy"));
}

// ---------------------------------------------------------------------------
// Authored tools

#[test]
fn builtin_authored_collision_names_both_provenances() {
    let t = tmp();
    assistant_core(t.path());
    write(
        t.path(),
        "agent/tools/read_file/tool.yaml",
        "description: mine\n",
    );
    let e = load_err(t.path(), "assistant");
    assert_eq!(e.kind, CoreErrorKind::Collision);
    assert_eq!(e.file, "agent/tools/read_file/tool.yaml");
    let text = e.to_string();
    assert!(text.contains("builtin coding/read_file"), "{text}");
    assert!(
        text.contains("authored agent/tools/read_file/tool.yaml"),
        "{text}"
    );
    assert!(text.contains("rename"), "{text}");
    assert_eq!(
        text,
        "agent/tools/read_file/tool.yaml: tool name \"read_file\" is defined twice: \
         builtin coding/read_file and authored agent/tools/read_file/tool.yaml; \
         rename the authored tool folder or remove the \"coding\" toolset"
    );
}

#[test]
fn collision_names_the_toolset_that_brought_the_builtin() {
    let t = tmp();
    assistant_core(t.path());
    write(t.path(), "agent/tools/schedule_manage/tool.yaml", "");
    let e = load_err(t.path(), "assistant");
    assert!(
        e.problem.contains("builtin schedule/schedule_manage"),
        "{e}"
    );
}

#[test]
fn authored_tool_may_reuse_a_builtin_name_whose_toolset_is_off() {
    let t = tmp();
    tts_core(t.path());
    write(
        t.path(),
        "agent/tools/read_file/tool.yaml",
        "risk: low\napproval_policy: auto\n",
    );
    let core = load(t.path(), "tts_summarizer").unwrap();
    assert_eq!(core.authored.len(), 1);
    assert_eq!(core.authored[0].manifest.risk, Risk::Low);
    assert_eq!(
        core.authored[0].manifest.approval_policy,
        ApprovalPolicy::Auto
    );
}

/// The one invalid tool of a core, which otherwise loads.
fn only_broken_tool(dir: &std::path::Path) -> BrokenTool {
    let core = load(dir, "assistant").expect("the core loads; the tool is unavailable");
    assert!(core.authored_tool("echo").is_none(), "never callable");
    assert_eq!(core.broken_tools.len(), 1, "{:?}", core.broken_tools);
    core.broken_tools[0].clone()
}

#[test]
fn tool_yaml_with_slot_only_fields_makes_the_tool_unavailable_naming_the_field() {
    for key in [
        "failure_policy: soft",
        "timeout_seconds: 5",
        "history_policy: persist",
        "default_placement: pre_current_user",
    ] {
        let t = tmp();
        assistant_core(t.path());
        edit(
            t.path(),
            "agent/tools/echo/tool.yaml",
            "capabilities: []",
            key,
        );
        let broken = only_broken_tool(t.path());
        assert_eq!(
            (broken.name.as_str(), broken.dir_rel.as_str()),
            ("echo", "agent/tools/echo")
        );
        let field = key.split(':').next().unwrap_or_default();
        assert!(
            broken.error.starts_with(&format!(
                "agent/tools/echo/tool.yaml: unknown field `{field}`"
            )),
            "{key}: {}",
            broken.error
        );
    }
}

#[test]
fn bad_risk_value_in_tool_yaml_makes_the_tool_unavailable() {
    let t = tmp();
    assistant_core(t.path());
    edit(
        t.path(),
        "agent/tools/echo/tool.yaml",
        "capabilities: []",
        "risk: severe",
    );
    let broken = only_broken_tool(t.path());
    assert!(broken.error.contains("risk"), "{}", broken.error);
    assert!(
        broken.error.contains("unknown variant `severe`"),
        "{}",
        broken.error
    );
    assert!(broken.error.contains("line 9"), "{}", broken.error);
}

#[test]
fn empty_tool_yaml_uses_authored_defaults() {
    let t = tmp();
    assistant_core(t.path());
    write(t.path(), "agent/tools/blank/tool.yaml", "");
    write(
        t.path(),
        "agent/tools/nulls/tool.yaml",
        "description: null\nrisk: null\ninput_schema: null\ncapabilities: null\n",
    );
    let core = load(t.path(), "assistant").unwrap();
    let names: Vec<&str> = core.authored.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["blank", "echo", "nulls"]);
    for name in ["blank", "nulls"] {
        let m = &core.authored_tool(name).unwrap().manifest;
        assert_eq!(m, &ToolYaml::default(), "{name}");
        assert_eq!(m.entrypoint, "module:execute");
        assert_eq!(
            (m.risk, m.approval_policy),
            (Risk::Medium, ApprovalPolicy::Prompt)
        );
        assert_eq!(
            (m.display_policy.as_str(), m.model_output_policy.as_str()),
            ("summary", "content")
        );
    }
}

#[test]
fn authored_tools_need_slots_tools() {
    let t = tmp();
    assistant_core(t.path());
    edit(t.path(), "agent.yaml", "  tools: agent/tools\n", "");
    let core = load(t.path(), "assistant").unwrap();
    assert!(core.authored.is_empty());
}

#[test]
fn tool_folders_without_tool_yaml_and_loose_files_are_ignored() {
    let t = tmp();
    assistant_core(t.path());
    write(t.path(), "agent/tools/__pycache__/x.pyc", "");
    write(t.path(), "agent/tools/README.md", "notes");
    let core = load(t.path(), "assistant").unwrap();
    assert_eq!(core.authored.len(), 1);
}

#[test]
fn tool_folder_names_must_be_provider_safe() {
    let t = tmp();
    assistant_core(t.path());
    write(t.path(), "agent/tools/my tool/tool.yaml", "");
    let e = load_err(t.path(), "assistant");
    assert_eq!(e.kind, CoreErrorKind::Invalid);
    assert_eq!(e.file, "agent/tools/my tool/tool.yaml");
}

#[test]
fn tool_name_may_not_reuse_a_slot_id() {
    let t = tmp();
    assistant_core(t.path());
    write(t.path(), "agent/tools/base_output/tool.yaml", "");
    let e = load_err(t.path(), "assistant");
    assert_eq!(e.kind, CoreErrorKind::Duplicate);
    assert!(
        e.problem.contains("output slot agent/output/base_output"),
        "{e}"
    );
}

#[test]
fn tool_root_that_is_a_file_is_rejected() {
    let t = tmp();
    evolver_core(t.path());
    write(t.path(), "agent/tools", "not a folder");
    let e = load_err(t.path(), "evolver");
    assert_eq!(
        (e.kind, e.file.as_str()),
        (CoreErrorKind::Invalid, "agent/tools")
    );
}

// ---------------------------------------------------------------------------
// MCP, skills, soul

#[test]
fn mcp_manifests_are_listed_with_raw_yaml() {
    let t = tmp();
    assistant_core(t.path());
    write(
        t.path(),
        "agent/mcp/docs.yaml",
        "transport: stdio\ncommand: docs-server\n",
    );
    write(t.path(), "agent/mcp/alpha.yml", "");
    write(t.path(), "agent/mcp/notes.txt", "ignored");
    let core = load(t.path(), "assistant").unwrap();
    assert_eq!(core.mcp_servers, ["alpha", "docs"]);
    let docs = &core.mcp_manifests[1];
    assert_eq!(docs.path_rel, "agent/mcp/docs.yaml");
    assert_eq!(docs.raw["command"].as_str(), Some("docs-server"));
    assert!(core.mcp_manifests[0].raw.is_mapping());
}

#[test]
fn mcp_root_defaults_to_surface_root() {
    let t = tmp();
    evolver_core(t.path());
    edit(t.path(), "agent.yaml", "  mcp: agent/mcp\n", "");
    write(
        t.path(),
        "agent/mcp/search.yaml",
        "transport: streamable_http\nurl: https://example.test/mcp\n",
    );
    let core = load(t.path(), "evolver").unwrap();
    assert_eq!(core.mcp_servers, ["search"]);
}

#[test]
fn mcp_manifest_errors_name_the_file() {
    let t = tmp();
    assistant_core(t.path());
    write(t.path(), "agent/mcp/docs.yaml", "command: [unclosed\n");
    let e = load_err(t.path(), "assistant");
    assert_eq!(
        (e.kind, e.file.as_str()),
        (CoreErrorKind::Syntax, "agent/mcp/docs.yaml")
    );

    let t = tmp();
    assistant_core(t.path());
    write(t.path(), "agent/mcp/docs.yaml", "- a\n- b\n");
    let e = load_err(t.path(), "assistant");
    assert_eq!(e.kind, CoreErrorKind::Schema);

    let t = tmp();
    assistant_core(t.path());
    write(t.path(), "agent/mcp/docs.yaml", "command: a\n");
    write(t.path(), "agent/mcp/docs.yml", "command: b\n");
    let e = load_err(t.path(), "assistant");
    assert_eq!(e.kind, CoreErrorKind::Duplicate);
    assert!(
        e.problem
            .contains("agent/mcp/docs.yaml and agent/mcp/docs.yml"),
        "{e}"
    );
}

#[test]
fn skills_are_listed_from_single_files_and_packages() {
    let t = tmp();
    assistant_core(t.path());
    write(t.path(), "agent/skills/quick-notes.md", "# Quick notes\n");
    write(
        t.path(),
        "agent/skills/research/SKILL.md",
        "---\nname: research\n---\nbody\n",
    );
    write(t.path(), "agent/skills/research/references/guide.md", "ref");
    write(t.path(), "agent/skills/devops/deploy/SKILL.md", "deploy");
    write(t.path(), "agent/skills/.hidden/secret/SKILL.md", "hidden");
    write(t.path(), "agent/skills/empty/README.md", "no SKILL.md here");
    let core = load(t.path(), "assistant").unwrap();
    let skills: Vec<(&str, &str)> = core
        .skills
        .iter()
        .map(|s| (s.id.as_str(), s.path_rel.as_str()))
        .collect();
    assert_eq!(
        skills,
        [
            ("deploy", "agent/skills/devops/deploy/SKILL.md"),
            ("quick-notes", "agent/skills/quick-notes.md"),
            ("research", "agent/skills/research/SKILL.md"),
        ]
    );
}

#[test]
fn skill_root_defaults_to_surface_root_and_can_be_configured() {
    let t = tmp();
    evolver_core(t.path());
    edit(t.path(), "agent.yaml", "  skills: agent/skills\n", "");
    write(t.path(), "agent/skills/a.md", "a");
    assert_eq!(load(t.path(), "evolver").unwrap().skills[0].id, "a");

    let t = tmp();
    evolver_core(t.path());
    edit(
        t.path(),
        "agent.yaml",
        "  skills: agent/skills\n",
        "  skills: library\n",
    );
    write(t.path(), "library/b/SKILL.md", "b");
    write(t.path(), "agent/skills/a.md", "not read: root moved");
    let skills = load(t.path(), "evolver").unwrap().skills;
    assert_eq!(skills.len(), 1);
    assert_eq!(skills[0].path_rel, "library/b/SKILL.md");
}

#[test]
fn duplicate_skill_ids_are_rejected() {
    let t = tmp();
    assistant_core(t.path());
    write(t.path(), "agent/skills/review.md", "one");
    write(t.path(), "agent/skills/team/review/SKILL.md", "two");
    let e = load_err(t.path(), "assistant");
    assert_eq!(e.kind, CoreErrorKind::Duplicate);
    assert!(e.problem.contains("skill id \"review\""), "{e}");
}

#[test]
fn soul_joins_configured_file_and_surface_soul() {
    let t = tmp();
    evolver_core(t.path());
    edit(
        t.path(),
        "agent.yaml",
        "  soul: agent/SOUL.md\n",
        "  soul: persona.md\n",
    );
    write(t.path(), "persona.md", "\n  Persona first.  \n");
    let core = load(t.path(), "evolver").unwrap();
    assert_eq!(
        core.soul.as_deref(),
        Some("Persona first.\n\n# test evolver\n\nYou edit worktrees.")
    );

    fs::remove_file(t.path().join("persona.md")).unwrap();
    fs::remove_file(t.path().join("agent/SOUL.md")).unwrap();
    assert_eq!(load(t.path(), "evolver").unwrap().soul, None);
}

// ---------------------------------------------------------------------------
// Capabilities, fingerprint, global fallback

#[test]
fn capability_slots_accept_maps_lists_and_nulls() {
    let t = tmp();
    evolver_core(t.path());
    edit(
        t.path(),
        "agent.yaml",
        "    task.control: {}\n",
        "    task.control:\n  slots:\n    agent/output/archive:\n      fs.write:\n        scope: workspace\n      state.core.write:\n    agent/input/recall: [state.core.read, tool.call:search_files]\n    agent/input/empty: null\n",
    );
    let core = load(t.path(), "evolver").unwrap();
    assert_eq!(
        core.capability_slots(),
        [
            ("agent/input/empty".to_owned(), vec![]),
            (
                "agent/input/recall".to_owned(),
                vec![
                    "state.core.read".to_owned(),
                    "tool.call:search_files".to_owned()
                ]
            ),
            (
                "agent/output/archive".to_owned(),
                vec!["fs.write".to_owned(), "state.core.write".to_owned()]
            ),
        ]
    );
    assert!(core
        .capability_defaults()
        .contains(&"task.control".to_owned()));
}

#[test]
fn fingerprint_is_stable_and_tracks_manifest_changes() {
    let a = tmp();
    let b = tmp();
    assistant_core(a.path());
    assistant_core(b.path());
    let fa = load(a.path(), "assistant").unwrap().fingerprint;
    assert_eq!(fa, load(a.path(), "assistant").unwrap().fingerprint);
    // Same content in another folder: same fingerprint.
    assert_eq!(fa, load(b.path(), "assistant").unwrap().fingerprint);

    // Code is not a manifest.
    write(
        b.path(),
        "agent/tools/echo/module.py",
        "def execute(ctx, args):\n    return {}\n",
    );
    assert_eq!(fa, load(b.path(), "assistant").unwrap().fingerprint);

    edit(b.path(), "agent/tools/echo/tool.yaml", "Repeats", "Echoes");
    let fb = load(b.path(), "assistant").unwrap().fingerprint;
    assert_ne!(fa, fb);

    write(b.path(), "agent/skills/new.md", "x");
    let fc = load(b.path(), "assistant").unwrap().fingerprint;
    assert_ne!(fb, fc);

    edit(b.path(), "agent/SOUL.md", "tests", "more tests");
    assert_ne!(fc, load(b.path(), "assistant").unwrap().fingerprint);
}

#[test]
fn fingerprint_is_a_sha256_hex_digest() {
    let t = tmp();
    assistant_core(t.path());
    let fp = load(t.path(), "assistant").unwrap().fingerprint;
    assert_eq!(fp.len(), 64, "{fp}");
    assert!(
        fp.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{fp}"
    );
    // Split updates give the same digest as one update.
    let mut h = Sha256::new();
    for chunk in b"abc".chunks(1) {
        h.update(chunk);
    }
    assert_eq!(
        hex_digest(h),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn global_fallback_loads_and_rejects_core_keys() {
    let t = tmp();
    let path = t.path().join("agent.yaml");
    assert_eq!(load_global_fallback(&path).unwrap(), None);

    fs::write(
        &path,
        "model:\n  provider: auto\n  model_name: null\n  model_options: {}\nui:\n  tool_display: summary\napproval:\n  tools: {}\n  capabilities: {}\n  risks: {}\n",
    )
    .unwrap();
    let global = load_global_fallback(&path).unwrap().unwrap();
    assert_eq!(global.ui.tool_display.as_deref(), Some("summary"));
    assert_eq!(global.model.provider.as_deref(), Some("auto"));
    assert_eq!(global.approval.default, None);

    fs::write(&path, "").unwrap();
    assert_eq!(
        load_global_fallback(&path).unwrap(),
        Some(GlobalYaml::default())
    );

    fs::write(&path, "model: {}\ntools:\n  toolsets: [coding]\n").unwrap();
    let e = load_global_fallback(&path).unwrap_err();
    assert_eq!(e.kind, CoreErrorKind::Schema);
    assert_eq!(e.file, path.display().to_string());
    let text = e.to_string();
    assert!(text.contains("unknown field `tools`"), "{text}");
    assert!(
        text.contains("may only set model, ui and approval"),
        "{text}"
    );
    assert!(!text.contains('\n'));
}

#[test]
fn yaml_error_path_split() {
    assert_eq!(
        split_yaml_path("tools.toolsets[1]: invalid type: sequence at line 2 column 3"),
        (
            Some("tools.toolsets[1]".to_owned()),
            "invalid type: sequence at line 2 column 3".to_owned()
        )
    );
    assert_eq!(
        split_yaml_path("invalid type: unit value, expected struct X"),
        (
            None,
            "invalid type: unit value, expected struct X".to_owned()
        )
    );
    assert_eq!(
        split_yaml_path("unknown field `a: b`, expected x"),
        (None, "unknown field `a: b`, expected x".to_owned())
    );
}

#[test]
fn normalize_rel_rules() {
    assert_eq!(
        normalize_rel("./agent//tools/").as_deref(),
        Ok("agent/tools")
    );
    assert!(normalize_rel("").is_err());
    assert!(normalize_rel(".").is_err());
    assert!(normalize_rel("agent/../../x").is_err());
    assert!(normalize_rel("/abs").is_err());
}

use super::*;

fn yaml<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_yaml_ng::from_str(text).map_err(|e| e.to_string())
}

#[test]
fn risk_and_policy_orders() {
    assert!(Risk::Low < Risk::Medium && Risk::Medium < Risk::High && Risk::High < Risk::Critical);
    assert!(ApprovalPolicy::Auto < ApprovalPolicy::Prompt);
    assert!(ApprovalPolicy::Prompt < ApprovalPolicy::Deny);
    // The stricter of two policies is the max.
    assert_eq!(
        ApprovalPolicy::Prompt.max(ApprovalPolicy::Auto),
        ApprovalPolicy::Prompt
    );
    assert_eq!(Risk::High.max(Risk::Low), Risk::High);
}

#[test]
fn risk_and_policy_are_lowercase() {
    for r in [Risk::Low, Risk::Medium, Risk::High, Risk::Critical] {
        assert_eq!(yaml::<Risk>(r.as_str()), Ok(r));
        assert_eq!(serde_json::to_value(r).unwrap(), r.to_string());
    }
    for p in [
        ApprovalPolicy::Auto,
        ApprovalPolicy::Prompt,
        ApprovalPolicy::Deny,
    ] {
        assert_eq!(yaml::<ApprovalPolicy>(p.as_str()), Ok(p));
        assert_eq!(serde_json::to_value(p).unwrap(), p.to_string());
    }
    assert!(yaml::<Risk>("High").is_err());
    assert!(yaml::<ApprovalPolicy>("ask").is_err());
}

#[test]
fn minimal_agent_yaml_takes_python_defaults() {
    let m: AgentYaml = yaml("agent:\n  id: solo\n").unwrap();
    assert_eq!(m.schema_version, 1);
    assert_eq!(m.agent.summary, "");
    assert_eq!(m.runtime, RuntimeInfo::default());
    assert_eq!(m.runtime.surface_root, "agent");
    assert_eq!(m.runtime.max_model_steps, 90);
    assert_eq!(m.dependencies.mode, "host_shared");
    assert!(!m.dependencies.allow_additional_dependencies);
    assert!(m.tools.toolsets.is_empty() && m.tools.metadata.is_empty());
    assert!(m.channels.is_empty());
    assert_eq!(m.slots, SlotsInfo::default());
}

#[test]
fn agent_yaml_rejects_unknown_keys_where_python_does() {
    for text in [
        "agent:\n  id: a\nextra: 1\n",
        "agent:\n  id: a\n  name: x\n",
        "agent:\n  id: a\nruntime:\n  steps: 3\n",
        "agent:\n  id: a\nmodel:\n  temperature: 0.2\n",
        "agent:\n  id: a\nui:\n  theme: dark\n",
        "agent:\n  id: a\ntools:\n  builtins: []\n",
        "agent:\n  id: a\napproval:\n  policy: deny\n",
    ] {
        let err = yaml::<AgentYaml>(text).unwrap_err();
        assert!(err.contains("unknown field"), "{text:?}: {err}");
    }
}

#[test]
fn agent_yaml_keeps_open_sections_open() {
    let m: AgentYaml = yaml(
        "agent:\n  id: a\nslots:\n  channels: agent/channels\n  tools: agent/tools\ndependencies:\n  mode: host_shared\n  pinned: true\ncapabilities:\n  notes: free text\n  defaults:\n    fs.read:\n",
    )
    .unwrap();
    assert_eq!(m.slots.tools.as_deref(), Some("agent/tools"));
    assert_eq!(m.slots.other["channels"], "agent/channels");
    assert_eq!(m.capabilities.other["notes"].as_str(), Some("free text"));
    assert_eq!(m.capabilities.defaults.names(), ["fs.read"]);
}

#[test]
fn grants_accept_map_list_and_null() {
    let g: Grants = yaml("fs.read: {scope: workspace}\nfs.write: {}\nterminal.exec:\n").unwrap();
    assert_eq!(g.names(), ["fs.read", "fs.write", "terminal.exec"]);
    assert_eq!(g.0["fs.read"]["scope"].as_str(), Some("workspace"));
    let g: Grants = yaml("[b, a]").unwrap();
    assert_eq!(g.names(), ["a", "b"]);
    let g: Grants = yaml("null").unwrap();
    assert!(g.names().is_empty());
    assert!(yaml::<Grants>("just-a-string").is_err());
    assert!(yaml::<Grants>("[[nested]]").is_err());
}

#[test]
fn tool_yaml_defaults_match_authored_tool_defaults() {
    let t: ToolYaml = yaml("{}").unwrap();
    assert_eq!(t, ToolYaml::default());
    assert_eq!(t.entrypoint, "module:execute");
    assert_eq!(t.risk, Risk::Medium);
    assert_eq!(t.approval_policy, ApprovalPolicy::Prompt);
    assert_eq!(t.display_policy, "summary");
    assert_eq!(t.model_output_policy, "content");
    assert_eq!(t.input_schema, serde_json::json!({}));
    assert!(t.capability.is_none() && t.capabilities.is_empty());
}

#[test]
fn tool_yaml_reads_every_tool_key() {
    let t: ToolYaml = yaml(
        "entrypoint: impl:run\ndescription: d\ninput_schema:\n  type: object\nrisk: high\ncapability: net.fetch\napproval_policy: deny\ndisplay_policy: full\nmodel_output_policy: model_output\ncapabilities: [a, b]\n",
    )
    .unwrap();
    assert_eq!(t.entrypoint, "impl:run");
    assert_eq!(t.input_schema, serde_json::json!({"type": "object"}));
    assert_eq!(t.risk, Risk::High);
    assert_eq!(t.capability.as_deref(), Some("net.fetch"));
    assert_eq!(t.approval_policy, ApprovalPolicy::Deny);
    assert_eq!(t.capabilities, ["a", "b"]);
}

#[test]
fn tool_yaml_rejects_slot_only_and_unknown_keys() {
    for key in [
        "failure_policy: hard",
        "timeout_seconds: 3",
        "default_placement: x",
        "history_policy: persist",
        "enabled: false",
    ] {
        let err = yaml::<ToolYaml>(key).unwrap_err();
        assert!(err.contains("unknown field"), "{key}: {err}");
    }
}

#[test]
fn slot_yaml_defaults_and_values() {
    let s: SlotYaml = yaml("{}").unwrap();
    assert_eq!(s, SlotYaml::default());
    assert_eq!(s.entrypoint, "module:process");
    assert_eq!(s.failure_policy, FailurePolicy::Soft);
    assert_eq!(s.history_policy, HistoryPolicy::Persist);
    assert_eq!(s.default_placement, "pre_current_user");

    let s: SlotYaml = yaml(
        "failure_policy: hard\nhistory_policy: model_hidden\ntimeout_seconds: 2.5\ndefault_placement: null\n",
    )
    .unwrap();
    assert_eq!(s.failure_policy, FailurePolicy::Hard);
    assert_eq!(s.history_policy, HistoryPolicy::ModelHidden);
    assert_eq!(s.timeout_seconds, Some(2.5));
    assert_eq!(s.default_placement, "pre_current_user");

    assert!(yaml::<SlotYaml>("risk: low").is_err());
    assert!(yaml::<SlotYaml>("run: module:process").is_err());
    assert!(yaml::<SlotYaml>("history_policy: forever").is_err());
}

#[test]
fn pipelines_yaml_shape() {
    let p: PipelinesYaml =
        yaml("schema_version: 1\nbootstrap: null\ninput:\n  serial: [a]\n  parallel: null\n")
            .unwrap();
    assert_eq!(p.input.serial, ["a"]);
    assert!(p.input.parallel.is_empty() && p.bootstrap.serial.is_empty());
    assert!(yaml::<PipelinesYaml>("schema_version: 1\nbootstrap:\n  parallel: []\n").is_err());
    assert!(yaml::<PipelinesYaml>("schema_version: 1\ncleanup: {}\n").is_err());
    assert!(yaml::<PipelinesYaml>("input: {}\n").is_err());
}

#[test]
fn global_yaml_allows_only_model_ui_approval() {
    let g: GlobalYaml =
        yaml("ui:\n  tool_display: summary\napproval:\n  risks:\n    high: prompt\n").unwrap();
    assert_eq!(g.approval.risks[&Risk::High], ApprovalPolicy::Prompt);
    for key in [
        "agent: {}",
        "runtime: {}",
        "tools: {}",
        "capabilities: {}",
        "channels: {}",
    ] {
        assert!(yaml::<GlobalYaml>(key).is_err(), "{key}");
    }
}

#[test]
fn metadata_override_rejects_unknown_keys_and_values() {
    let o: ToolMetadataOverride = yaml("risk: high\nenabled: false\n").unwrap();
    assert_eq!((o.risk, o.enabled), (Some(Risk::High), Some(false)));
    assert!(yaml::<ToolMetadataOverride>("approval: deny").is_err());
    assert!(yaml::<ToolMetadataOverride>("approval_policy: sometimes").is_err());
    assert!(yaml::<ToolMetadataOverride>("null").is_err());
}

#[test]
fn manifests_serialize_to_json() {
    let m: AgentYaml = yaml("agent:\n  id: a\ncapabilities:\n  defaults: [fs.read]\n").unwrap();
    let v = serde_json::to_value(&m).unwrap();
    assert_eq!(v["agent"]["id"], "a");
    assert_eq!(
        v["capabilities"]["defaults"],
        serde_json::json!({"fs.read": null})
    );
    assert_eq!(v["runtime"]["surface_root"], "agent");
}

//! Serde types for the files of an Agent Core: `agent.yaml`, the global
//! fallback `agents/agent.yaml`, `<surface_root>/pipelines.yaml`, `tool.yaml`
//! and `slot.yaml`.
//!
//! The shapes follow the Python project's pydantic models. Where the Python
//! model forbids extra keys the Rust type uses `deny_unknown_fields`; where it
//! accepts anything (`slots`, the top level of `capabilities`, `dependencies`,
//! `channels`) the Rust type keeps the extra data instead of failing.
//!
//! A YAML `null` is accepted wherever the Python loader falls back to a
//! default with `value or default` (lists, descriptions, policies in
//! `tool.yaml`/`slot.yaml`, `channels`, capability grants).
//!
//! Only shape is checked here. Cross-file rules (toolset names, slot folders,
//! name collisions, value ranges) live in the loader.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_yaml_ng::{Mapping, Value};

pub use crate::wire::{ApprovalPolicy, Risk};

// ---------------------------------------------------------------------------
// null handling

/// `null` → `T::default()`; anything else must be a `T`.
fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A field whose `null` means "use this default" (the Python loaders read
/// these with `manifest.get(key) or <default>`).
macro_rules! null_means {
    ($fn_name:ident, $ty:ty, $default:expr) => {
        fn $fn_name<'de, D: Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
            Ok(Option::<$ty>::deserialize(d)?.unwrap_or_else(|| $default))
        }
    };
}

null_means!(null_tool_entrypoint, String, default_tool_entrypoint());
null_means!(null_slot_entrypoint, String, default_slot_entrypoint());
null_means!(null_risk_medium, Risk, Risk::Medium);
null_means!(null_policy_prompt, ApprovalPolicy, ApprovalPolicy::Prompt);
null_means!(null_display_policy, String, default_display_policy());
null_means!(
    null_model_output_policy,
    String,
    default_model_output_policy()
);
null_means!(null_placement, String, default_placement());
null_means!(null_schema, serde_json::Value, empty_object());

fn default_schema_version() -> i64 {
    1
}
fn default_surface_root() -> String {
    "agent".to_owned()
}
fn default_max_model_steps() -> i64 {
    90
}
fn default_dependency_mode() -> String {
    "host_shared".to_owned()
}
fn default_tool_entrypoint() -> String {
    "module:execute".to_owned()
}
fn default_slot_entrypoint() -> String {
    "module:process".to_owned()
}
fn default_risk_medium() -> Risk {
    Risk::Medium
}
fn default_policy_prompt() -> ApprovalPolicy {
    ApprovalPolicy::Prompt
}
fn default_display_policy() -> String {
    "summary".to_owned()
}
fn default_model_output_policy() -> String {
    "content".to_owned()
}
fn default_placement() -> String {
    "pre_current_user".to_owned()
}
fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

// ---------------------------------------------------------------------------
// agent.yaml

/// `<core>/agent.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentYaml {
    /// Must be `1` (checked by the loader).
    #[serde(default = "default_schema_version")]
    pub schema_version: i64,
    pub agent: AgentInfo,
    #[serde(default)]
    pub runtime: RuntimeInfo,
    #[serde(default)]
    pub model: ModelInfo,
    #[serde(default)]
    pub ui: UiInfo,
    /// Gateway channel configuration, kept as written. The loader only checks
    /// that every entry is a mapping (or empty).
    #[serde(default, deserialize_with = "null_as_default")]
    pub channels: Mapping,
    #[serde(default)]
    pub slots: SlotsInfo,
    #[serde(default)]
    pub tools: ToolsInfo,
    #[serde(default)]
    pub approval: ApprovalInfo,
    #[serde(default)]
    pub capabilities: CapabilitiesInfo,
    #[serde(default)]
    pub dependencies: DependencyInfo,
    /// Host extension: how this core's terminal commands run.
    #[serde(default)]
    pub terminal: TerminalInfo,
    /// Host extension: what the server's MCP endpoint (`/v1/mcp`) serves
    /// of this core.
    #[serde(default)]
    pub serve: ServeInfo,
}

/// `serve:` in `agent.yaml` (a host extension; absent in the Python format).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeInfo {
    /// Whether the tools of the core's own MCP servers are served to MCP
    /// clients of `/v1/mcp` too. Off by default: those servers run with
    /// credentials the core was given for its own turns.
    #[serde(default)]
    pub mcp_server_tools: bool,
}

/// `terminal:` in `agent.yaml` (a host extension; absent in the Python format).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TerminalInfo {
    /// `none` cuts the network of this core's commands; the server's
    /// `--terminal-network none` cuts it for every core.
    #[serde(default)]
    pub network: TerminalNetwork,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TerminalNetwork {
    #[default]
    On,
    None,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentInfo {
    pub id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub summary: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeInfo {
    /// Core-relative folder holding `SOUL.md`, `pipelines.yaml` and the
    /// phase folders.
    #[serde(default = "default_surface_root")]
    pub surface_root: String,
    /// Host cap on model/tool loop steps; the loader enforces `1..=90`.
    #[serde(default = "default_max_model_steps")]
    pub max_model_steps: i64,
    /// Default workspace (`null` or a non-empty string, relative to the core).
    #[serde(default)]
    pub workspace: Option<String>,
}

impl Default for RuntimeInfo {
    fn default() -> Self {
        Self {
            surface_root: default_surface_root(),
            max_model_steps: default_max_model_steps(),
            workspace: None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelInfo {
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub model_name: Option<String>,
    #[serde(default)]
    pub model_options: Mapping,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UiInfo {
    #[serde(default)]
    pub tool_display: Option<String>,
}

/// `slots:` roots, all core-relative. Phase roots (`input`, `output`) are
/// accepted because the example cores carry them, but they are ignored:
/// phase folders always come from `runtime.surface_root`. Any other key (for
/// example the legacy `channels`) is kept in [`SlotsInfo::other`] and ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotsInfo {
    /// Extra SOUL file, read in addition to `<surface_root>/SOUL.md`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soul: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Authored tool root. When absent no authored tools are discovered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<String>,
    /// Skill root; defaults to `<surface_root>/skills`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<String>,
    /// Schedule root; defaults to `<surface_root>/schedules`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedules: Option<String>,
    /// MCP manifest root; defaults to `<surface_root>/mcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<String>,
    #[serde(flatten)]
    pub other: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsInfo {
    /// Built-in toolset names, in catalog order.
    #[serde(default)]
    pub toolsets: Vec<String>,
    /// Per-tool overrides keyed by model-visible tool name.
    #[serde(default)]
    pub metadata: BTreeMap<String, ToolMetadataOverride>,
}

/// `tools.metadata.<name>`. Every key is optional; `None` keeps the
/// registry/manifest value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolMetadataOverride {
    #[serde(default)]
    pub risk: Option<Risk>,
    #[serde(default)]
    pub capability: Option<String>,
    #[serde(default)]
    pub approval_policy: Option<ApprovalPolicy>,
    #[serde(default)]
    pub model_output_policy: Option<String>,
    #[serde(default)]
    pub display_policy: Option<String>,
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// `approval:` in a core or in the global fallback. Selection inside one
/// block is `tools[name]`, then `capabilities[cap]`, then `risks[risk]`, then
/// `default`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalInfo {
    #[serde(default)]
    pub default: Option<ApprovalPolicy>,
    #[serde(default)]
    pub tools: BTreeMap<String, ApprovalPolicy>,
    #[serde(default)]
    pub capabilities: BTreeMap<String, ApprovalPolicy>,
    #[serde(default)]
    pub risks: BTreeMap<Risk, ApprovalPolicy>,
}

/// `capabilities:`. Only the grant names matter to the checker; the values
/// (`scope: workspace`, …) are informational and kept as written. Keys other
/// than `defaults` and `slots` are accepted (the Python model takes any map)
/// and kept in [`CapabilitiesInfo::other`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CapabilitiesInfo {
    /// Core-wide grants.
    #[serde(default)]
    pub defaults: Grants,
    /// Path-scoped grants keyed by slot path (e.g. `agent/output/archive`).
    #[serde(default, deserialize_with = "null_as_default")]
    pub slots: BTreeMap<String, Grants>,
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// A set of capability grants. Written either as a map
/// (`fs.read: {scope: workspace}`, `fs.write: {}`, `fs.write:`) or as a list
/// of names; `null` is empty. Kept sorted by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grants(pub BTreeMap<String, Value>);

impl Grants {
    /// Grant names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.0.keys().cloned().collect()
    }
}

impl Serialize for Grants {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Grants {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let scalar_name = |v: &Value| -> Option<String> {
            match v {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                Value::Bool(b) => Some(b.to_string()),
                _ => None,
            }
        };
        let mut out = BTreeMap::new();
        match Value::deserialize(d)? {
            Value::Null => {}
            Value::Mapping(map) => {
                for (k, v) in map {
                    let name = scalar_name(&k)
                        .ok_or_else(|| D::Error::custom("capability names must be strings"))?;
                    out.insert(name, v);
                }
            }
            Value::Sequence(items) => {
                for item in items {
                    let name = scalar_name(&item)
                        .ok_or_else(|| D::Error::custom("capability names must be strings"))?;
                    out.insert(name, Value::Null);
                }
            }
            _ => {
                return Err(D::Error::custom(
                    "expected a map of capability grants (or a list of names)",
                ))
            }
        }
        Ok(Grants(out))
    }
}

/// `dependencies:`. The Python model ignores unknown keys here; so do we.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DependencyInfo {
    #[serde(default = "default_dependency_mode")]
    pub mode: String,
    #[serde(default)]
    pub allow_additional_dependencies: bool,
}

impl Default for DependencyInfo {
    fn default() -> Self {
        Self {
            mode: default_dependency_mode(),
            allow_additional_dependencies: false,
        }
    }
}

/// The global fallback `agents/agent.yaml`: only `model`, `ui`, `approval`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GlobalYaml {
    #[serde(default)]
    pub model: ModelInfo,
    #[serde(default)]
    pub ui: UiInfo,
    #[serde(default)]
    pub approval: ApprovalInfo,
}

// ---------------------------------------------------------------------------
// pipelines.yaml

/// `<surface_root>/pipelines.yaml`: slot order per phase.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelinesYaml {
    /// Required; must be `1` (checked by the loader).
    pub schema_version: i64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub bootstrap: BootstrapPhase,
    #[serde(default, deserialize_with = "null_as_default")]
    pub input: IoPhase,
    #[serde(default, deserialize_with = "null_as_default")]
    pub output: IoPhase,
}

/// The bootstrap phase runs serially only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BootstrapPhase {
    #[serde(default, deserialize_with = "null_as_default")]
    pub serial: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IoPhase {
    #[serde(default, deserialize_with = "null_as_default")]
    pub serial: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub parallel: Vec<String>,
}

// ---------------------------------------------------------------------------
// tool.yaml and slot.yaml

/// `<slots.tools>/<tool_id>/tool.yaml`. The model-visible name is the folder
/// name. Slot-only keys (`failure_policy`, `timeout_seconds`, …) are rejected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolYaml {
    #[serde(
        default = "default_tool_entrypoint",
        deserialize_with = "null_tool_entrypoint"
    )]
    pub entrypoint: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub description: String,
    /// JSON Schema for the arguments; `{}` when absent.
    #[serde(default = "empty_object", deserialize_with = "null_schema")]
    pub input_schema: serde_json::Value,
    #[serde(default = "default_risk_medium", deserialize_with = "null_risk_medium")]
    pub risk: Risk,
    /// Dispatcher capability gate (cannot be self-granted via `capabilities`).
    #[serde(default)]
    pub capability: Option<String>,
    #[serde(
        default = "default_policy_prompt",
        deserialize_with = "null_policy_prompt"
    )]
    pub approval_policy: ApprovalPolicy,
    #[serde(
        default = "default_display_policy",
        deserialize_with = "null_display_policy"
    )]
    pub display_policy: String,
    #[serde(
        default = "default_model_output_policy",
        deserialize_with = "null_model_output_policy"
    )]
    pub model_output_policy: String,
    /// Capabilities the tool's own code may request.
    #[serde(default, deserialize_with = "null_as_default")]
    pub capabilities: Vec<String>,
}

impl Default for ToolYaml {
    fn default() -> Self {
        Self {
            entrypoint: default_tool_entrypoint(),
            description: String::new(),
            input_schema: empty_object(),
            risk: Risk::Medium,
            capability: None,
            approval_policy: ApprovalPolicy::Prompt,
            display_policy: default_display_policy(),
            model_output_policy: default_model_output_policy(),
            capabilities: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FailurePolicy {
    #[default]
    Soft,
    Hard,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryPolicy {
    #[default]
    Persist,
    ModelHidden,
    Transient,
}

/// `<surface_root>/<phase>/<slot_id>/slot.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlotYaml {
    #[serde(
        default = "default_slot_entrypoint",
        deserialize_with = "null_slot_entrypoint"
    )]
    pub entrypoint: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub description: String,
    #[serde(default = "empty_object", deserialize_with = "null_schema")]
    pub input_schema: serde_json::Value,
    #[serde(default, deserialize_with = "null_as_default")]
    pub capabilities: Vec<String>,
    /// Metadata only; not enforced by the slot runtime.
    #[serde(default)]
    pub timeout_seconds: Option<f64>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub failure_policy: FailurePolicy,
    #[serde(default = "default_placement", deserialize_with = "null_placement")]
    pub default_placement: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub history_policy: HistoryPolicy,
}

impl Default for SlotYaml {
    fn default() -> Self {
        Self {
            entrypoint: default_slot_entrypoint(),
            description: String::new(),
            input_schema: empty_object(),
            capabilities: Vec::new(),
            timeout_seconds: None,
            failure_policy: FailurePolicy::Soft,
            default_placement: default_placement(),
            history_policy: HistoryPolicy::Persist,
        }
    }
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;

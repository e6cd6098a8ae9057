//! Approval policy resolution: the pure, monotone rules that turn registry
//! metadata, core `tools.metadata` overrides and the core/global `approval:`
//! blocks into one effective policy per tool.
//!
//! This module owns:
//! * combining the two orders of [`crate::risk`], [`ApprovalPolicy`]
//!   (`auto < prompt < deny`) and [`Risk`] (`low < medium < high <
//!   critical`): [`stricter_policy`] and [`higher_risk`];
//! * registry metadata ([`Metadata`]) and the core override rule
//!   ([`apply_override`]): a built-in tool may only be tightened (its risk is
//!   never lowered, its policy never weakened; a weakening value is ignored),
//!   authored and MCP entries accept any value, `enabled: false` disables;
//! * selection inside one `approval:` block ([`select_policy`],
//!   [`block_policy`]): first present of `tools[name]` → `capabilities[cap]`
//!   → `risks[risk]` → `default`;
//! * the fold ([`effective_policy`]): the entry policy combined stricter-only
//!   with the core block and then the global fallback block, so a core or
//!   global `auto` can never weaken a registry `prompt`/`deny`;
//! * the handler-time combination ([`request_policy`], [`request_risk`]) of a
//!   handler baseline (for example `prompt` for writes, or a terminal guard's
//!   `prompt/high`) with the effective policy and entry risk.
//!
//! Every combining function here is monotone: its result is never weaker
//! than any policy fed into it. It performs no I/O.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

pub use crate::{ApprovalPolicy, Risk, UnknownValue};

/// The stricter of two policies (`deny` over `prompt` over `auto`).
pub fn stricter_policy(a: ApprovalPolicy, b: ApprovalPolicy) -> ApprovalPolicy {
    a.max(b)
}

/// The higher of two risks.
pub fn higher_risk(a: Risk, b: Risk) -> Risk {
    a.max(b)
}

/// Registry metadata of one catalog entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Metadata {
    /// Registry risk, used for `approval.risks` selection.
    pub risk: Risk,
    /// The singular dispatcher capability, if any.
    pub capability: Option<String>,
    /// The registry (entry) approval policy before core/global folding.
    pub approval_policy: ApprovalPolicy,
    /// Model-output conversion hint (metadata only).
    pub model_output_policy: String,
    /// Operator display hint (metadata only).
    pub display_policy: String,
    /// `false` removes the entry from the turn's catalog.
    pub enabled: bool,
}

impl Metadata {
    /// The defaults for a built-in tool whose registry entry omits a field:
    /// `low`, no capability, `auto`, `content`, `summary`, enabled.
    pub fn builtin_default() -> Self {
        Self {
            risk: Risk::Low,
            capability: None,
            approval_policy: ApprovalPolicy::Auto,
            model_output_policy: "content".to_owned(),
            display_policy: "summary".to_owned(),
            enabled: true,
        }
    }

    /// The `tool.yaml` defaults of an authored tool: `medium`, no capability,
    /// `prompt`, `content`, `summary`, enabled.
    pub fn authored_default() -> Self {
        Self {
            risk: Risk::Medium,
            approval_policy: ApprovalPolicy::Prompt,
            ..Self::builtin_default()
        }
    }
}

/// One `tools.metadata.<name>` entry of `agent.yaml`. Every field is
/// optional; an absent field leaves the registry value alone. Unknown keys
/// are rejected when deserialising.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetadataOverride {
    /// New risk (ignored for a built-in when lower than the registry risk).
    #[serde(default)]
    pub risk: Option<Risk>,
    /// `None` = key absent, `Some(None)` = explicit `null`, `Some(Some(c))` =
    /// a capability. Only a non-empty capability changes anything: like the
    /// Python host, an explicit `null` or `""` keeps the registry capability
    /// (an override can swap a capability gate, never remove it).
    #[serde(default, deserialize_with = "present")]
    pub capability: Option<Option<String>>,
    /// New policy (ignored for a built-in when weaker than the registry one).
    #[serde(default)]
    pub approval_policy: Option<ApprovalPolicy>,
    /// New model-output hint (an empty string is ignored).
    #[serde(default)]
    pub model_output_policy: Option<String>,
    /// New display hint (an empty string is ignored).
    #[serde(default)]
    pub display_policy: Option<String>,
    /// `false` disables the entry; `true` enables it.
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// Distinguishes a present `null` (`Some(None)`) from an absent key (`None`,
/// via `#[serde(default)]`).
fn present<'de, D>(deserializer: D) -> Result<Option<Option<String>>, D::Error>
where
    D: Deserializer<'de>,
{
    Option::<String>::deserialize(deserializer).map(Some)
}

/// Where a catalog entry comes from; decides how far `tools.metadata` may
/// move it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Host-defined tool: core metadata may only tighten it.
    Builtin,
    /// Core-authored `tool.yaml` tool: core metadata may change anything.
    Authored,
    /// Tool discovered from a core-declared MCP server: like authored.
    Mcp,
}

impl Source {
    /// Whether `tools.metadata` may lower risk or weaken policy.
    pub fn may_loosen(self) -> bool {
        !matches!(self, Source::Builtin)
    }
}

/// Apply a core `tools.metadata` override to registry metadata.
///
/// * `risk`: built-ins keep their registry risk when the override is lower
///   (an equal or higher value applies); authored/MCP take any value.
/// * `approval_policy`: built-ins keep their registry policy when the
///   override is weaker; authored/MCP take any value.
/// * `capability`, `model_output_policy`, `display_policy`: applied as-is
///   when non-empty, for every source.
/// * `enabled`: applied as-is (`false` disables).
pub fn apply_override(base: &Metadata, o: &MetadataOverride, source: Source) -> Metadata {
    let mut out = base.clone();
    let loosen = source.may_loosen();
    if let Some(risk) = o.risk {
        if loosen || risk >= base.risk {
            out.risk = risk;
        }
    }
    if let Some(Some(capability)) = &o.capability {
        if !capability.is_empty() {
            out.capability = Some(capability.clone());
        }
    }
    if let Some(policy) = o.approval_policy {
        if loosen || policy >= base.approval_policy {
            out.approval_policy = policy;
        }
    }
    if let Some(value) = o.model_output_policy.as_ref().filter(|v| !v.is_empty()) {
        out.model_output_policy = value.clone();
    }
    if let Some(value) = o.display_policy.as_ref().filter(|v| !v.is_empty()) {
        out.display_policy = value.clone();
    }
    if let Some(enabled) = o.enabled {
        out.enabled = enabled;
    }
    out
}

/// An `approval:` block: the core's in `agent.yaml`, or the global fallback
/// in `agents/agent.yaml`. Unknown keys are rejected when deserialising.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalBlock {
    /// Used when no tool, capability or risk rule selects a policy.
    #[serde(default)]
    pub default: Option<ApprovalPolicy>,
    /// Rules by tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, ApprovalPolicy>,
    /// Rules by capability key (compared exactly, no wildcards).
    #[serde(default)]
    pub capabilities: BTreeMap<String, ApprovalPolicy>,
    /// Rules by risk.
    #[serde(default)]
    pub risks: BTreeMap<Risk, ApprovalPolicy>,
}

/// Selection inside one block for one capability name: the first present of
/// `tools[tool]`, `capabilities[capability]`, `risks[risk]`, `default`. This
/// is first-match, not strictest-match.
pub fn select_policy(
    block: &ApprovalBlock,
    tool: &str,
    capability: &str,
    risk: Risk,
) -> Option<ApprovalPolicy> {
    block
        .tools
        .get(tool)
        .or_else(|| block.capabilities.get(capability))
        .or_else(|| block.risks.get(&risk))
        .or(block.default.as_ref())
        .copied()
}

/// The policy one block assigns to an entry, or `None` when it has no rule
/// that applies.
///
/// The block is consulted once per capability name of the entry — the
/// entry's `capability` (when present and non-empty) and `tool.call:<tool>`,
/// de-duplicated — using [`select_policy`], and the answers are combined
/// stricter. So `capabilities: {fs.write: auto}` with `default: prompt`
/// yields `prompt` (the `tool.call:<tool>` lookup falls through to the
/// default), exactly as the Python host resolves it.
pub fn block_policy(
    block: &ApprovalBlock,
    tool: &str,
    capability: Option<&str>,
    risk: Risk,
) -> Option<ApprovalPolicy> {
    let tool_call = format!("tool.call:{tool}");
    let entry_cap = capability.filter(|c| !c.is_empty() && *c != tool_call);
    let mut selected = select_policy(block, tool, entry_cap.unwrap_or(&tool_call), risk);
    if entry_cap.is_some() {
        let second = select_policy(block, tool, &tool_call, risk);
        selected = match (selected, second) {
            (Some(a), Some(b)) => Some(stricter_policy(a, b)),
            (a, b) => a.or(b),
        };
    }
    selected
}

/// The effective policy of a resolved entry: its (already overridden)
/// `approval_policy`, combined stricter with the core block and then the
/// global fallback block. Never weaker than `entry.approval_policy`, and
/// `deny` whenever either block selects `deny`.
pub fn effective_policy(
    entry: &Metadata,
    tool: &str,
    core: Option<&ApprovalBlock>,
    global: Option<&ApprovalBlock>,
) -> ApprovalPolicy {
    [core, global]
        .into_iter()
        .flatten()
        .filter_map(|block| block_policy(block, tool, entry.capability.as_deref(), entry.risk))
        .fold(entry.approval_policy, stricter_policy)
}

/// The policy of one handler-time approval request: the handler's baseline
/// (for example `auto` for an in-workspace, non-sensitive read, `prompt` for
/// writes, or a terminal guard's `prompt`) combined stricter with the
/// entry's effective policy. A core or global `auto` therefore cannot lower
/// a handler's `prompt` baseline.
pub fn request_policy(baseline: ApprovalPolicy, effective: ApprovalPolicy) -> ApprovalPolicy {
    stricter_policy(baseline, effective)
}

/// The risk of one handler-time approval request: the guard/handler risk
/// combined higher with the entry's registry risk.
pub fn request_risk(handler: Risk, entry: Risk) -> Risk {
    higher_risk(handler, entry)
}

#[cfg(test)]
#[path = "approval_policy_tests.rs"]
mod tests;

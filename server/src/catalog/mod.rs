//! The per-turn resolved catalog: which tools a turn may see and call, with
//! their effective metadata, and the provider definitions and `tools_list`
//! view derived from it. A model's tool name is resolved only through a
//! [`ResolvedCatalog`]; there is no second global lookup.
//!
//! Built-in metadata (names, schemas, risks, capabilities, default approval)
//! comes from `builtin_tools.json`, taken from the Python project's registry.
//! Authored and MCP sources join through [`CatalogInput`] as they land.

/// The turn's catalog with its MCP tools, cached per owner and stamp.
pub mod mcp_cache;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::policy::approval_policy::{
    apply_override, effective_policy, stricter_policy, ApprovalBlock, ApprovalPolicy, Metadata,
    MetadataOverride, Risk, Source,
};
use crate::policy::capabilities::CapabilityGrants;
use crate::policy::json_schema::ArgumentSchema;

/// One built-in tool as the registry defines it.
#[derive(Debug, Clone, Deserialize)]
pub struct BuiltinSpec {
    pub name: String,
    pub toolset: String,
    pub description: String,
    pub input_schema: Value,
    pub risk: Risk,
    pub capability: Option<String>,
    pub approval_policy: ApprovalPolicy,
    pub display_policy: String,
    pub model_output_policy: String,
}

static BUILTINS: OnceLock<Vec<BuiltinSpec>> = OnceLock::new();

/// The built-in registry, parsed once per process.
pub fn builtins() -> &'static [BuiltinSpec] {
    BUILTINS.get_or_init(|| {
        // The file is compiled in and checked by a unit test; an unparsable
        // registry is a build defect, so fall back to empty rather than panic.
        serde_json::from_str(include_str!("builtin_tools.json")).unwrap_or_default()
    })
}

/// Tool names of a built-in toolset, in registry order; `None` if unknown.
pub fn toolset(name: &str) -> Option<Vec<String>> {
    let tools: Vec<String> = builtins()
        .iter()
        .filter(|s| s.toolset == name)
        .map(|s| s.name.clone())
        .collect();
    (!tools.is_empty()).then_some(tools)
}

/// What the authored-tool runner needs to call one authored tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthoredSpec {
    /// Tool folder relative to the core, e.g. `agent/tools/echo`
    /// (`ctx.slot_path`, and the path its capability grants are scoped to).
    pub slot_path: String,
    /// The tool folder on disk.
    pub dir: std::path::PathBuf,
    /// Dotted module path inside the folder (`module` of `module:execute`).
    pub module: String,
    /// The callable (`execute` of `module:execute`).
    pub function: String,
    /// What the code may `ctx.capability.require(...)` (never the
    /// dispatcher's singular gate).
    pub capabilities: Vec<String>,
}

/// Split and check an `entrypoint` (`module.sub:function`).
pub fn parse_entrypoint(entrypoint: &str) -> Result<(String, String), String> {
    let ident = |s: &str| {
        let mut chars = s.chars();
        matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
            && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
    };
    let (module, function) = entrypoint
        .trim()
        .split_once(':')
        .ok_or_else(|| format!("entrypoint {entrypoint:?} is not `module:function`"))?;
    if module.split('.').all(ident) && ident(function) {
        Ok((module.to_owned(), function.to_owned()))
    } else {
        Err(format!(
            "entrypoint {entrypoint:?} is not `module:function` (Python identifiers)"
        ))
    }
}

/// An authored tool as the core declares it (`tool.yaml`), before core
/// metadata and approval policy are applied.
#[derive(Debug, Clone)]
pub struct AuthoredInput {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub metadata: Metadata,
    pub entrypoint: String,
    pub slot_path: String,
    pub dir: std::path::PathBuf,
    pub capabilities: Vec<String>,
}

/// A tool the turn may call, with its effective metadata.
#[derive(Debug, Clone)]
pub struct ResolvedEntry {
    pub name: String,
    pub source: Source,
    /// Where it comes from, e.g. `builtin coding/read_file`.
    pub provenance: String,
    pub description: String,
    pub input_schema: Value,
    /// `input_schema` compiled once, with the catalog; every call's
    /// arguments are validated against it before anything else.
    pub arguments: ArgumentSchema,
    pub risk: Risk,
    pub capability: Option<String>,
    /// Effective approval policy after core metadata and core/global blocks.
    pub policy: ApprovalPolicy,
    pub model_output_policy: String,
    pub display_policy: String,
    /// Set for authored tools: how the runner calls it.
    pub authored: Option<std::sync::Arc<AuthoredSpec>>,
    /// For an MCP tool: the connection and the server's own tool name.
    pub mcp: Option<McpTarget>,
}

/// Where an MCP entry's calls go.
#[derive(Debug, Clone)]
pub struct McpTarget {
    pub key: crate::mcp::ConnKey,
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// `timeout_seconds` of the declaration.
    pub timeout: std::time::Duration,
}

/// One discovered MCP tool offered to a turn (before naming and policy).
#[derive(Debug, Clone)]
pub struct McpOffer {
    pub target: McpTarget,
    pub description: String,
    pub input_schema: Value,
    /// The schema compiled once, when the server was discovered (`Err`:
    /// why it does not compile; the tool is then unavailable).
    pub arguments: Result<ArgumentSchema, String>,
    pub risk: Risk,
    pub capability: String,
    pub approval_policy: ApprovalPolicy,
}

/// What a catalog is built from: the core's declared surface, resolved by
/// the core loader.
#[derive(Debug, Clone, Default)]
pub struct CatalogInput {
    pub core_id: String,
    /// Built-in tool names from the core's toolsets, in order.
    pub builtin_tools: Vec<String>,
    pub overrides: BTreeMap<String, MetadataOverride>,
    pub core_approval: Option<ApprovalBlock>,
    pub global_approval: Option<ApprovalBlock>,
    pub grants: CapabilityGrants,
    /// Identity of all of the above, for approval caches.
    pub fingerprint: String,
    /// Tools this host cannot run at all, with the reason (e.g. child
    /// processes when confinement is impossible): listed as unavailable.
    pub host_unavailable: BTreeMap<String, String>,
    /// The core's `terminal.network: none` cuts its commands' network.
    pub terminal_network_off: bool,
    /// Every MCP server the core declares, with its state and last error.
    pub mcp_servers: Vec<crate::mcp::ServerStatus>,
    /// Authored tools (`slots.tools`), sorted by name.
    pub authored: Vec<AuthoredInput>,
    /// Authored tools whose `tool.yaml` failed validation: name and error.
    pub broken_authored: Vec<(String, String)>,
}

/// Tools that start child processes: unavailable when they cannot be confined.
pub const CHILD_PROCESS_TOOLS: &[&str] = &["terminal", AUTHORED_RUNNER];

/// Built once per turn; the only way a tool name becomes an adapter.
#[derive(Debug, Clone)]
pub struct ResolvedCatalog {
    entries: Vec<ResolvedEntry>,
    /// Provider definitions, built once with the catalog.
    definitions: Vec<Value>,
    /// Declared but not callable here (no adapter yet), for `tools_list`.
    unavailable: Vec<String>,
    /// Why a host-unavailable tool is unavailable.
    unavailable_reasons: BTreeMap<String, String>,
    terminal_network_off: bool,
    mcp_servers: Vec<crate::mcp::ServerStatus>,
    grants: CapabilityGrants,
    core_id: String,
    fingerprint: String,
    core_approval: Option<ApprovalBlock>,
    global_approval: Option<ApprovalBlock>,
}

impl ResolvedCatalog {
    pub fn build(input: &CatalogInput) -> Self {
        Self::build_from(input, builtins())
    }

    /// [`Self::build`] over a given built-in registry.
    fn build_from(input: &CatalogInput, registry: &[BuiltinSpec]) -> Self {
        let mut entries = Vec::new();
        let mut unavailable = Vec::new();
        let mut unavailable_reasons = BTreeMap::new();
        for name in &input.builtin_tools {
            let Some(spec) = registry.iter().find(|s| &s.name == name) else {
                continue;
            };
            let base = Metadata {
                risk: spec.risk,
                capability: spec.capability.clone(),
                approval_policy: spec.approval_policy,
                model_output_policy: spec.model_output_policy.clone(),
                display_policy: spec.display_policy.clone(),
                enabled: true,
            };
            let meta = match input.overrides.get(name) {
                Some(o) => apply_override(&base, o, Source::Builtin),
                None => base,
            };
            if !meta.enabled {
                continue;
            }
            if let Some(reason) = input.host_unavailable.get(name) {
                unavailable.push(name.clone());
                unavailable_reasons.insert(name.clone(), reason.clone());
                continue;
            }
            // A schema the validator cannot enforce fails closed: the tool
            // is listed as unavailable with the reason, never called unchecked.
            let arguments = match ArgumentSchema::compile(&spec.input_schema) {
                Ok(compiled) => compiled,
                Err(reason) => {
                    unavailable.push(name.clone());
                    unavailable_reasons.insert(name.clone(), reason);
                    continue;
                }
            };
            let policy = effective_policy(
                &meta,
                name,
                input.core_approval.as_ref(),
                input.global_approval.as_ref(),
            );
            entries.push(ResolvedEntry {
                name: name.clone(),
                source: Source::Builtin,
                provenance: format!("builtin {}/{}", spec.toolset, spec.name),
                description: spec.description.clone(),
                input_schema: spec.input_schema.clone(),
                arguments,
                risk: meta.risk,
                capability: meta.capability,
                policy,
                model_output_policy: meta.model_output_policy,
                display_policy: meta.display_policy,
                authored: None,
                mcp: None,
            });
        }
        for (name, error) in &input.broken_authored {
            unavailable.push(name.clone());
            unavailable_reasons.insert(name.clone(), error.clone());
        }
        for tool in &input.authored {
            if let Some(entry) = resolve_authored(input, tool, &mut unavailable_reasons) {
                entries.push(entry);
            } else if unavailable_reasons.contains_key(&tool.name) {
                unavailable.push(tool.name.clone());
            }
        }
        let definitions = entries
            .iter()
            .map(|e| {
                json!({"type": "function", "function": {
                    "name": e.name, "description": e.description, "parameters": e.input_schema}})
            })
            .collect();
        Self {
            entries,
            definitions,
            unavailable,
            unavailable_reasons,
            terminal_network_off: input.terminal_network_off,
            mcp_servers: input.mcp_servers.clone(),
            grants: input.grants.clone(),
            core_id: input.core_id.clone(),
            fingerprint: input.fingerprint.clone(),
            core_approval: input.core_approval.clone(),
            global_approval: input.global_approval.clone(),
        }
    }

    /// This catalog plus the turn's MCP tools (`<server>__<tool>`, source
    /// `mcp`) and the servers' current states. Names are unique against
    /// the built-ins and each other; a tool whose schema does not compile is
    /// unavailable with the reason, never callable unchecked.
    pub fn with_mcp(&self, servers: Vec<crate::mcp::ServerStatus>, offers: Vec<McpOffer>) -> Self {
        use crate::mcp::manifest::{exposed_name, server_prefix};
        let mut out = self.clone();
        out.mcp_servers = servers;
        let mut reserved: std::collections::BTreeSet<String> =
            out.entries.iter().map(|e| e.name.to_lowercase()).collect();
        let mut prefixes: BTreeMap<String, String> = BTreeMap::new();
        let mut used = std::collections::BTreeSet::new();
        for offer in offers {
            let server = offer.target.server.clone();
            let prefix = prefixes
                .entry(server.clone())
                .or_insert_with(|| server_prefix(&server, &mut used))
                .clone();
            let name = exposed_name(&prefix, &offer.target.tool, &mut reserved);
            let arguments = match offer.arguments {
                Ok(compiled) => compiled,
                Err(reason) => {
                    out.unavailable.push(name.clone());
                    out.unavailable_reasons.insert(name, reason);
                    continue;
                }
            };
            let meta = Metadata {
                risk: offer.risk,
                capability: Some(offer.capability.clone()),
                approval_policy: offer.approval_policy,
                model_output_policy: "content".into(),
                display_policy: "summary".into(),
                enabled: true,
            };
            let policy = effective_policy(
                &meta,
                &name,
                out.core_approval.as_ref(),
                out.global_approval.as_ref(),
            );
            out.definitions.push(json!({"type": "function", "function": {
                "name": name, "description": offer.description, "parameters": offer.input_schema}}));
            out.entries.push(ResolvedEntry {
                provenance: format!("mcp {server}/{}", offer.target.tool),
                name,
                source: Source::Mcp,
                description: offer.description,
                input_schema: offer.input_schema,
                arguments,
                risk: meta.risk,
                capability: meta.capability,
                policy,
                model_output_policy: meta.model_output_policy,
                display_policy: meta.display_policy,
                authored: None,
                mcp: Some(offer.target),
            });
        }
        out
    }

    pub fn resolve(&self, name: &str) -> Option<&ResolvedEntry> {
        self.entries.iter().find(|e| e.name == name)
    }

    pub fn grants(&self) -> &CapabilityGrants {
        &self.grants
    }

    /// The core this catalog was built for.
    pub fn core_id(&self) -> &str {
        &self.core_id
    }

    /// This catalog with only the entries `keep` accepts (a child agent's
    /// narrowed tools). Dropped tools are left out entirely, as if the core
    /// had never declared them; the fingerprint changes with the selection,
    /// so approvals cached for the full catalog never cover the narrowed one.
    pub fn narrowed(&self, keep: impl Fn(&ResolvedEntry) -> bool) -> Self {
        let mut out = self.clone();
        out.entries.retain(|e| keep(e));
        out.definitions = out
            .entries
            .iter()
            .map(|e| {
                json!({"type": "function", "function": {
                    "name": e.name, "description": e.description, "parameters": e.input_schema}})
            })
            .collect();
        let names: Vec<&str> = out.entries.iter().map(|e| e.name.as_str()).collect();
        out.fingerprint = format!("{}+only:{}", self.fingerprint, names.join(","));
        out
    }

    /// This catalog as a child agent of a turn on `parent` runs it: never
    /// more than the parent. Entries whose capability the parent core does
    /// not grant are dropped; the grants become the intersection
    /// ([`CapabilityGrants::within`]), so handler-time checks (paths,
    /// `secret.bind:`) answer as the parent would too; and every entry's
    /// policy is at least what the parent would apply to it: the parent's
    /// own entry of that name, and the parent core's and global `approval:`
    /// blocks. A tool the parent must prompt for never becomes `auto` here.
    pub fn bounded_by(&self, parent: &ResolvedCatalog) -> Self {
        let mut out = self.clone();
        out.entries.retain(|e| {
            e.capability
                .as_deref()
                .is_none_or(|cap| parent.grants.allows(cap, None, &[], false))
        });
        for e in &mut out.entries {
            let meta = Metadata {
                risk: e.risk,
                capability: e.capability.clone(),
                approval_policy: ApprovalPolicy::Auto,
                model_output_policy: String::new(),
                display_policy: String::new(),
                enabled: true,
            };
            let by_blocks = effective_policy(
                &meta,
                &e.name,
                parent.core_approval.as_ref(),
                parent.global_approval.as_ref(),
            );
            let by_entry = parent
                .resolve(&e.name)
                .map_or(ApprovalPolicy::Auto, |p| p.policy);
            e.policy = stricter_policy(e.policy, stricter_policy(by_blocks, by_entry));
        }
        out.definitions = out
            .entries
            .iter()
            .map(|e| {
                json!({"type": "function", "function": {
                    "name": e.name, "description": e.description, "parameters": e.input_schema}})
            })
            .collect();
        out.grants = self.grants.within(&parent.grants);
        // Approvals cached for the unbounded catalog never cover this one.
        out.fingerprint = format!("{}+within:{}", self.fingerprint, parent.fingerprint);
        out
    }

    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    pub fn entries(&self) -> &[ResolvedEntry] {
        &self.entries
    }

    /// Whether the core cut its terminal commands' network.
    pub fn terminal_network_off(&self) -> bool {
        self.terminal_network_off
    }

    /// Provider tool definitions (OpenAI function-tool shape).
    pub fn definitions(&self) -> &[Value] {
        &self.definitions
    }

    /// The full view (`GET /v1/sessions/{id}/tools`): effective metadata too.
    pub fn listing(&self) -> Value {
        json!({
            "core_id": self.core_id,
            "tools": self.entries.iter().map(|e| json!({
                "name": e.name, "source": e.source, "provenance": e.provenance,
                "description": e.description, "risk": e.risk, "capability": e.capability,
                "approval_policy": e.policy, "model_output_policy": e.model_output_policy,
                "display_policy": e.display_policy, "enabled": true, "input_schema": e.input_schema,
                "server": e.mcp.as_ref().map(|m| m.server.as_str()),
            })).collect::<Vec<_>>(),
            "unavailable": self.unavailable,
            "unavailable_reasons": self.unavailable_reasons,
            "mcp_servers": self.mcp_servers,
        })
    }

    /// What the `tools_list` tool returns to the model.
    pub fn tools_list_view(&self) -> Value {
        json!({
            "success": true,
            "count": self.entries.len(),
            "tools": self.entries.iter().map(|e| json!({
                "name": e.name, "description": e.description, "source": e.source, "enabled": true,
                "risk": e.risk, "capability": e.capability, "approval_policy": e.policy,
                "server": e.mcp.as_ref().map(|m| m.server.as_str()),
            })).collect::<Vec<_>>(),
        })
    }
}

/// One authored tool's entry: core metadata (which may change anything of
/// an authored tool), then the core's and global approval blocks, which only
/// tighten. `None` when disabled, or unavailable (reason recorded).
fn resolve_authored(
    input: &CatalogInput,
    tool: &AuthoredInput,
    reasons: &mut BTreeMap<String, String>,
) -> Option<ResolvedEntry> {
    let meta = match input.overrides.get(&tool.name) {
        Some(o) => apply_override(&tool.metadata, o, Source::Authored),
        None => tool.metadata.clone(),
    };
    if !meta.enabled {
        return None;
    }
    let (module, function) = match parse_entrypoint(&tool.entrypoint) {
        Ok(parts) => parts,
        Err(reason) => {
            reasons.insert(
                tool.name.clone(),
                format!("{}/tool.yaml: {reason}", tool.slot_path),
            );
            return None;
        }
    };
    if let Some(reason) = input.host_unavailable.get(AUTHORED_RUNNER) {
        reasons.insert(tool.name.clone(), reason.clone());
        return None;
    }
    let arguments = match ArgumentSchema::compile(&tool.input_schema) {
        Ok(compiled) => compiled,
        Err(reason) => {
            reasons.insert(
                tool.name.clone(),
                format!("{}/tool.yaml: input_schema: {reason}", tool.slot_path),
            );
            return None;
        }
    };
    let policy = effective_policy(
        &meta,
        &tool.name,
        input.core_approval.as_ref(),
        input.global_approval.as_ref(),
    );
    Some(ResolvedEntry {
        name: tool.name.clone(),
        source: Source::Authored,
        provenance: format!("authored {}", tool.slot_path),
        description: tool.description.clone(),
        input_schema: tool.input_schema.clone(),
        arguments,
        risk: meta.risk,
        capability: meta.capability,
        policy,
        model_output_policy: meta.model_output_policy,
        display_policy: meta.display_policy,
        authored: Some(std::sync::Arc::new(AuthoredSpec {
            slot_path: tool.slot_path.clone(),
            dir: tool.dir.clone(),
            module,
            function,
            capabilities: tool.capabilities.clone(),
        })),
        mcp: None,
    })
}

/// The key of [`CatalogInput::host_unavailable`] that makes every authored
/// tool unavailable (their runner is a child process).
pub const AUTHORED_RUNNER: &str = "authored:runner";

#[cfg(test)]
#[path = "builtin_schemas_tests.rs"]
mod builtin_schemas_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn input(tools: &[&str]) -> CatalogInput {
        CatalogInput {
            core_id: "c".into(),
            builtin_tools: tools.iter().map(|s| s.to_string()).collect(),
            grants: CapabilityGrants::new(
                vec!["fs.read".to_owned()],
                Vec::<(String, Vec<String>)>::new(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn registry_parses_with_every_toolset_tool() {
        let b = builtins();
        assert_eq!(b.len(), 21);
        let rf = b.iter().find(|s| s.name == "read_file").unwrap();
        assert_eq!(
            (rf.risk, rf.capability.as_deref(), rf.approval_policy),
            (Risk::Low, Some("fs.read"), ApprovalPolicy::Auto)
        );
        let t = b.iter().find(|s| s.name == "terminal").unwrap();
        assert_eq!(
            (t.risk, t.capability.as_deref(), t.approval_policy),
            (Risk::High, Some("terminal.exec"), ApprovalPolicy::Prompt)
        );
        let w = b.iter().find(|s| s.name == "write_file").unwrap();
        assert_eq!(
            (w.risk, w.approval_policy),
            (Risk::Medium, ApprovalPolicy::Prompt)
        );
    }

    #[test]
    fn toolsets_are_known_by_name() {
        assert_eq!(toolset("coding").unwrap().len(), 12);
        assert_eq!(toolset("demiurge_control").unwrap().len(), 8);
        assert_eq!(
            toolset("schedule").unwrap(),
            vec!["schedule_manage".to_owned()]
        );
        assert!(toolset("codng").is_none());
    }

    #[test]
    fn catalog_resolves_only_what_it_holds() {
        let c = ResolvedCatalog::build(&input(&["read_file", "tools_list"]));
        assert!(c.resolve("read_file").is_some());
        assert!(c.resolve("write_file").is_none());
        assert!(c.resolve("no_such_tool").is_none());
        assert_eq!(c.definitions().len(), 2);
    }

    #[test]
    fn metadata_overrides_only_tighten_builtins_and_can_disable() {
        let mut i = input(&["read_file", "write_file", "todo"]);
        i.overrides.insert(
            "write_file".into(),
            MetadataOverride {
                approval_policy: Some(ApprovalPolicy::Auto),
                risk: Some(Risk::Low),
                ..Default::default()
            },
        );
        i.overrides.insert(
            "read_file".into(),
            MetadataOverride {
                approval_policy: Some(ApprovalPolicy::Deny),
                ..Default::default()
            },
        );
        i.overrides.insert(
            "todo".into(),
            MetadataOverride {
                enabled: Some(false),
                ..Default::default()
            },
        );
        let c = ResolvedCatalog::build(&i);
        let w = c.resolve("write_file").unwrap();
        assert_eq!(
            (w.policy, w.risk),
            (ApprovalPolicy::Prompt, Risk::Medium),
            "auto never weakens a registry prompt"
        );
        assert_eq!(c.resolve("read_file").unwrap().policy, ApprovalPolicy::Deny);
        assert!(c.resolve("todo").is_none());
    }

    #[test]
    fn core_and_global_auto_never_weaken_but_deny_wins() {
        let mut i = input(&["write_file", "read_file"]);
        i.core_approval = Some(ApprovalBlock {
            default: Some(ApprovalPolicy::Auto),
            ..Default::default()
        });
        i.global_approval = Some(ApprovalBlock {
            tools: [("read_file".to_owned(), ApprovalPolicy::Deny)]
                .into_iter()
                .collect(),
            ..Default::default()
        });
        let c = ResolvedCatalog::build(&i);
        assert_eq!(
            c.resolve("write_file").unwrap().policy,
            ApprovalPolicy::Prompt
        );
        assert_eq!(c.resolve("read_file").unwrap().policy, ApprovalPolicy::Deny);
    }

    #[test]
    fn every_builtin_has_an_adapter() {
        let c = ResolvedCatalog::build(&input(&["read_file", "evolve_core"]));
        assert!(c.resolve("evolve_core").is_some());
        assert!(c
            .listing()
            .get("unavailable")
            .is_none_or(|u| u == &json!([])));
    }

    #[test]
    fn a_narrowed_catalog_keeps_only_what_it_is_told() {
        let c = ResolvedCatalog::build(&input(&["read_file", "write_file", "todo"]));
        let n = c.narrowed(|e| e.name != "write_file");
        assert!(n.resolve("write_file").is_none());
        assert!(n.resolve("read_file").is_some() && n.resolve("todo").is_some());
        let defs: Vec<&str> = n
            .definitions()
            .iter()
            .map(|d| d["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(defs, ["read_file", "todo"]);
        assert_ne!(n.fingerprint(), c.fingerprint());
        assert_ne!(c.narrowed(|_| false).fingerprint(), n.fingerprint());
        assert_eq!(n.core_id(), c.core_id());
    }

    #[test]
    fn tools_the_host_cannot_run_are_unavailable_with_their_reason() {
        let mut i = input(&["read_file", "terminal"]);
        i.host_unavailable
            .insert("terminal".into(), "no Landlock here".into());
        let c = ResolvedCatalog::build(&i);
        assert!(c.resolve("terminal").is_none());
        assert!(c.resolve("read_file").is_some());
        assert_eq!(c.listing()["unavailable"], json!(["terminal"]));
        assert_eq!(
            c.listing()["unavailable_reasons"]["terminal"],
            json!("no Landlock here")
        );
        assert!(!c
            .definitions()
            .iter()
            .any(|d| d["function"]["name"] == "terminal"));
    }

    #[test]
    fn a_schema_that_does_not_compile_makes_the_tool_unavailable_with_the_reason() {
        let mut registry = builtins().to_vec();
        let read = registry.iter_mut().find(|s| s.name == "read_file").unwrap();
        read.input_schema["properties"]["path"]["pattern"] = json!("^(unclosed");
        let c = ResolvedCatalog::build_from(&input(&["read_file", "tools_list"]), &registry);
        assert!(c.resolve("read_file").is_none(), "never callable unchecked");
        assert!(c.resolve("tools_list").is_some());
        let listing = c.listing();
        assert_eq!(listing["unavailable"], json!(["read_file"]));
        let reason = listing["unavailable_reasons"]["read_file"]
            .as_str()
            .unwrap();
        assert!(
            reason.starts_with("input schema does not compile at /properties/path/pattern"),
            "{reason}"
        );
        assert!(!c
            .definitions()
            .iter()
            .any(|d| d["function"]["name"] == "read_file"));
        // The same tool with its real schema is available.
        let ok = ResolvedCatalog::build(&input(&["read_file"]));
        assert!(ok.resolve("read_file").is_some());
        assert_eq!(ok.listing()["unavailable"], json!([]));
    }

    #[test]
    fn each_entry_validates_with_its_compiled_schema() {
        let c = ResolvedCatalog::build(&input(&["read_file"]));
        let e = c.resolve("read_file").unwrap();
        assert!(e.arguments.validate(&json!({"path": "a"})).is_ok());
        let errors = e.arguments.validate(&json!({"path": 3})).unwrap_err();
        assert_eq!(errors, [r#"arguments.path: value is not of type "string""#]);
    }

    fn authored(name: &str, risk: Risk, policy: ApprovalPolicy) -> AuthoredInput {
        AuthoredInput {
            name: name.into(),
            description: format!("{name} tool"),
            input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            metadata: Metadata {
                risk,
                capability: Some(format!("tool.call:{name}")),
                approval_policy: policy,
                model_output_policy: "content".into(),
                display_policy: "summary".into(),
                enabled: true,
            },
            entrypoint: "module:execute".into(),
            slot_path: format!("agent/tools/{name}"),
            dir: std::path::PathBuf::from(format!("/core/agent/tools/{name}")),
            capabilities: vec!["fs.read".into()],
        }
    }

    #[test]
    fn authored_tools_join_the_catalog_with_their_runner_spec() {
        let mut i = input(&["read_file"]);
        i.authored = vec![authored("echo", Risk::Low, ApprovalPolicy::Auto)];
        let c = ResolvedCatalog::build(&i);
        let e = c.resolve("echo").unwrap();
        assert_eq!(e.source, Source::Authored);
        assert_eq!(e.provenance, "authored agent/tools/echo");
        assert_eq!((e.risk, e.policy), (Risk::Low, ApprovalPolicy::Auto));
        assert_eq!(e.capability.as_deref(), Some("tool.call:echo"));
        let spec = e.authored.as_deref().unwrap();
        assert_eq!(
            (
                spec.module.as_str(),
                spec.function.as_str(),
                spec.slot_path.as_str()
            ),
            ("module", "execute", "agent/tools/echo")
        );
        assert_eq!(spec.capabilities, ["fs.read"]);
        assert!(c
            .definitions()
            .iter()
            .any(|d| d["function"]["name"] == "echo"));
        assert!(c.resolve("read_file").unwrap().authored.is_none());
    }

    #[test]
    fn core_and_global_approval_only_tighten_authored_tools() {
        let mut i = input(&[]);
        i.authored = vec![
            authored("echo", Risk::Low, ApprovalPolicy::Auto),
            authored("note", Risk::Low, ApprovalPolicy::Auto),
        ];
        i.core_approval = Some(ApprovalBlock {
            tools: [("echo".to_owned(), ApprovalPolicy::Prompt)].into(),
            ..Default::default()
        });
        i.global_approval = Some(ApprovalBlock {
            capabilities: [("tool.call:note".to_owned(), ApprovalPolicy::Deny)].into(),
            ..Default::default()
        });
        let c = ResolvedCatalog::build(&i);
        assert_eq!(c.resolve("echo").unwrap().policy, ApprovalPolicy::Prompt);
        assert_eq!(c.resolve("note").unwrap().policy, ApprovalPolicy::Deny);
        // Core metadata may change an authored tool's own registry values.
        let mut i = input(&[]);
        i.authored = vec![authored("echo", Risk::Low, ApprovalPolicy::Auto)];
        i.overrides.insert(
            "echo".into(),
            MetadataOverride {
                risk: Some(Risk::High),
                approval_policy: Some(ApprovalPolicy::Prompt),
                ..Default::default()
            },
        );
        let c = ResolvedCatalog::build(&i);
        let e = c.resolve("echo").unwrap();
        assert_eq!((e.risk, e.policy), (Risk::High, ApprovalPolicy::Prompt));
        i.overrides.insert(
            "echo".into(),
            MetadataOverride {
                enabled: Some(false),
                ..Default::default()
            },
        );
        assert!(ResolvedCatalog::build(&i).resolve("echo").is_none());
    }

    #[test]
    fn broken_authored_tools_are_listed_unavailable_with_their_error() {
        let mut i = input(&[]);
        let mut bad_entry = authored("bad_entry", Risk::Low, ApprovalPolicy::Auto);
        bad_entry.entrypoint = "module".into();
        let mut bad_schema = authored("bad_schema", Risk::Low, ApprovalPolicy::Auto);
        bad_schema.input_schema =
            json!({"type": "object", "properties": {"p": {"type": "string", "pattern": "("}}});
        i.authored = vec![
            bad_entry,
            bad_schema,
            authored("echo", Risk::Low, ApprovalPolicy::Auto),
        ];
        i.broken_authored = vec![(
            "broken".into(),
            "agent/tools/broken/tool.yaml: unknown field `timeout_seconds`".into(),
        )];
        let c = ResolvedCatalog::build(&i);
        let listing = c.listing();
        assert_eq!(
            listing["unavailable"],
            json!(["broken", "bad_entry", "bad_schema"])
        );
        let reasons = &listing["unavailable_reasons"];
        assert!(reasons["broken"]
            .as_str()
            .unwrap()
            .contains("timeout_seconds"));
        assert!(reasons["bad_entry"]
            .as_str()
            .unwrap()
            .contains("module:function"));
        assert!(reasons["bad_schema"]
            .as_str()
            .unwrap()
            .contains("input_schema"));
        assert!(c.resolve("echo").is_some());
        // Where the runner cannot be confined, every authored tool is unavailable.
        i.host_unavailable
            .insert(AUTHORED_RUNNER.into(), "no Landlock".into());
        let c = ResolvedCatalog::build(&i);
        assert!(c.resolve("echo").is_none());
        assert_eq!(c.listing()["unavailable_reasons"]["echo"], "no Landlock");
    }

    #[test]
    fn entrypoints_are_module_colon_function() {
        assert_eq!(
            parse_entrypoint("module:execute"),
            Ok(("module".into(), "execute".into()))
        );
        assert_eq!(
            parse_entrypoint(" pkg.sub:run_1 "),
            Ok(("pkg.sub".into(), "run_1".into()))
        );
        for bad in [
            "module",
            ":x",
            "m:",
            "../m:x",
            "m:x:y",
            "1m:x",
            "m.:x",
            "m:x-y",
            "os.system('x'):y",
        ] {
            assert!(parse_entrypoint(bad).is_err(), "{bad}");
        }
    }

    fn grants(defaults: &[&str]) -> CapabilityGrants {
        CapabilityGrants::new(
            defaults.iter().map(|s| s.to_string()),
            Vec::<(String, Vec<String>)>::new(),
        )
    }

    #[test]
    fn a_child_catalog_never_exceeds_its_parent() {
        // The child core grants and auto-allows more than its parent.
        let mut child = input(&["read_file", "write_file", "terminal", "todo"]);
        child.grants = grants(&["fs.read", "fs.write", "terminal.exec", "secret.bind:K"]);
        child.overrides.insert(
            "terminal".into(),
            serde_json::from_value(json!({"approval_policy": "auto"})).unwrap(),
        );
        child.core_approval = Some(ApprovalBlock {
            default: Some(ApprovalPolicy::Auto),
            ..Default::default()
        });
        let child = ResolvedCatalog::build(&child);
        // The parent grants no terminal, prompts for reads and denies todo.
        let mut parent = input(&["read_file", "write_file"]);
        parent.grants = grants(&["fs.read", "fs.write"]);
        parent.core_approval = Some(ApprovalBlock {
            tools: [
                ("read_file".to_owned(), ApprovalPolicy::Prompt),
                ("todo".to_owned(), ApprovalPolicy::Deny),
            ]
            .into(),
            ..Default::default()
        });
        let parent = ResolvedCatalog::build(&parent);
        let bounded = child.bounded_by(&parent);
        let names: Vec<&str> = bounded.entries().iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["read_file", "write_file", "todo"]);
        assert_eq!(bounded.definitions().len(), 3);
        assert_eq!(
            bounded.resolve("read_file").unwrap().policy,
            ApprovalPolicy::Prompt
        );
        assert_eq!(
            bounded.resolve("write_file").unwrap().policy,
            ApprovalPolicy::Prompt
        );
        assert_eq!(
            bounded.resolve("todo").unwrap().policy,
            ApprovalPolicy::Deny
        );
        // Handler-time checks answer as the parent would too.
        let g = bounded.grants();
        assert!(g.allows("fs.write", None, &[], false));
        assert!(!g.allows("terminal.exec", None, &[], false));
        assert!(!g.allows_exact_default("secret.bind:K"));
        assert!(!child.grants().fingerprint().contains("within"));
        assert_ne!(bounded.grants().fingerprint(), child.grants().fingerprint());
        assert_ne!(bounded.fingerprint(), child.fingerprint());
        // A grandchild stays under every ancestor.
        let mut top = input(&["read_file"]);
        top.grants = grants(&["fs.read"]);
        let top = ResolvedCatalog::build(&top);
        let grandchild = child.bounded_by(&bounded.clone()).bounded_by(&top);
        assert!(grandchild.resolve("write_file").is_none());
        assert!(!grandchild.grants().allows("fs.write", None, &[], false));
        assert!(grandchild.grants().allows("fs.read", None, &[], false));
    }
}

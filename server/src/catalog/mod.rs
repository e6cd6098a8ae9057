//! The per-turn resolved catalog: which tools a turn may see and call, and
//! the provider definitions and `tools_list` view derived from it. A model's
//! tool name is resolved only through a [`ResolvedCatalog`].
//!
//! Built-in metadata (names, schemas, risks, capabilities, default approval)
//! comes from `builtin_tools.json`, taken from the Python project's registry.

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{json, Value};

/// One built-in tool as the registry defines it.
#[derive(Debug, Clone, Deserialize)]
pub struct BuiltinSpec {
    pub name: String,
    pub toolset: String,
    pub description: String,
    pub input_schema: Value,
    pub risk: String,
    pub capability: Option<String>,
    pub approval_policy: String,
    pub display_policy: String,
    pub model_output_policy: String,
}

static BUILTINS: OnceLock<Vec<BuiltinSpec>> = OnceLock::new();

/// The built-in registry, parsed once per process.
pub fn builtins() -> &'static [BuiltinSpec] {
    BUILTINS.get_or_init(|| {
        // The file is part of the binary and checked by a unit test; an
        // unparsable registry would be a build defect, so fall back to empty.
        serde_json::from_str(include_str!("builtin_tools.json")).unwrap_or_default()
    })
}

/// Where a catalog entry comes from (authored and MCP sources join later).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Builtin,
}

/// A tool the turn may call, bound to its adapter.
#[derive(Debug, Clone)]
pub struct ResolvedEntry {
    pub spec: &'static BuiltinSpec,
    pub source: Source,
}

/// Built once per turn; the only way a tool name becomes an adapter.
#[derive(Debug, Clone)]
pub struct ResolvedCatalog {
    entries: Vec<ResolvedEntry>,
}

/// Built-in tools this host has adapters for.
const IMPLEMENTED: &[&str] = &["tools_list"];

impl ResolvedCatalog {
    pub fn build() -> Self {
        let entries = builtins()
            .iter()
            .filter(|s| IMPLEMENTED.contains(&s.name.as_str()))
            .map(|spec| ResolvedEntry {
                spec,
                source: Source::Builtin,
            })
            .collect();
        Self { entries }
    }

    pub fn resolve(&self, name: &str) -> Option<&ResolvedEntry> {
        self.entries.iter().find(|e| e.spec.name == name)
    }

    /// Provider tool definitions (OpenAI function-tool shape).
    pub fn definitions(&self) -> Vec<Value> {
        self.entries
            .iter()
            .map(|e| {
                json!({"type": "function", "function": {
                    "name": e.spec.name, "description": e.spec.description, "parameters": e.spec.input_schema}})
            })
            .collect()
    }

    /// What `tools_list` and `GET /v1/sessions/{id}/tools` show.
    pub fn listing(&self) -> Value {
        Value::Array(
            self.entries
                .iter()
                .map(|e| {
                    json!({"name": e.spec.name, "source": "builtin", "toolset": e.spec.toolset,
                        "description": e.spec.description, "risk": e.spec.risk,
                        "capability": e.spec.capability, "approval_policy": e.spec.approval_policy,
                        "input_schema": e.spec.input_schema})
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_parses_with_every_toolset_tool() {
        let b = builtins();
        assert_eq!(b.len(), 21);
        for name in [
            "read_file",
            "write_file",
            "patch",
            "terminal",
            "tools_list",
            "schedule_manage",
        ] {
            assert!(b.iter().any(|s| s.name == name), "{name}");
        }
        let rf = b.iter().find(|s| s.name == "read_file").unwrap();
        assert_eq!(
            (
                rf.risk.as_str(),
                rf.capability.as_deref(),
                rf.approval_policy.as_str()
            ),
            ("low", Some("fs.read"), "auto")
        );
        let t = b.iter().find(|s| s.name == "terminal").unwrap();
        assert_eq!(
            (
                t.risk.as_str(),
                t.capability.as_deref(),
                t.approval_policy.as_str()
            ),
            ("high", Some("terminal.exec"), "prompt")
        );
    }

    #[test]
    fn catalog_resolves_only_what_it_holds() {
        let c = ResolvedCatalog::build();
        assert!(c.resolve("tools_list").is_some());
        assert!(c.resolve("no_such_tool").is_none());
        assert_eq!(
            c.definitions().len(),
            c.listing().as_array().map(Vec::len).unwrap_or(0)
        );
    }
}

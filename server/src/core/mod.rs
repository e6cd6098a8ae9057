//! Agent Cores on disk: the manifest types, the loader that validates a core
//! folder into a [`LoadedCore`], and the host's default `assistant` seed.
//!
//! # Layout of a core
//!
//! ```text
//! <core>/agent.yaml                              manifest (schema_version 1)
//! <core>/<surface_root>/SOUL.md                  system text (surface_root = "agent" by default)
//! <core>/<surface_root>/pipelines.yaml           slot order per phase (optional)
//! <core>/<surface_root>/{bootstrap,input,output}/<slot_id>/slot.yaml
//! <core>/<slots.tools>/<tool_id>/tool.yaml       authored tools, only when slots.tools is set
//! <core>/<slots.skills>/<id>.md | **/<id>/SKILL.md   default root <surface_root>/skills
//! <core>/<slots.mcp>/<server>.yaml               default root <surface_root>/mcp (listed only)
//! ```
//!
//! The format is the one used by the Python Demiurge project's example cores,
//! so those cores load unchanged.
//!
//! # What loading checks
//!
//! * `agent.yaml` parses, has no unknown keys where the format forbids them,
//!   `schema_version` is 1, `agent.id` equals the host's core id,
//!   `runtime.max_model_steps` is 1..=90, every configured path stays inside
//!   the core folder, and `runtime.surface_root` exists.
//! * Every `tools.toolsets` entry is a toolset the host knows (the lookup is
//!   passed in by the host, which owns the registry); built-in tool names are
//!   collected in toolset order without duplicates.
//! * `tools.metadata.<name>` only uses `risk`, `capability`,
//!   `approval_policy`, `model_output_policy`, `display_policy`, `enabled`,
//!   with valid risk and policy values.
//! * Each slot folder's `slot.yaml` and each authored `tool.yaml` has only
//!   its own keys; `pipelines.yaml` names only existing slot folders, each at
//!   most once per phase; slot ids are unique across phases.
//! * An authored tool may not share its name with a built-in tool of the
//!   core's toolsets (the error names both and asks for a rename), nor with a
//!   slot id.
//!
//! Nothing is executed and nothing is connected: MCP manifests are listed
//! with their raw YAML, skills are listed by id, schedules are not read.
//!
//! Errors are [`CoreError`]s, one line each:
//! `agent.yaml: tools.toolsets[1]: unknown toolset "codng" (known: coding, demiurge_control, schedule)`.

pub mod changes;
pub mod edit;
pub mod gates;
pub mod git;
pub mod loader;
pub mod manifest;
pub mod mcp_review;
pub mod path;
pub mod pipeline;
pub mod repository;
pub mod rollback;
pub mod runs;
pub mod schedule_file;
pub mod schedule_spec;
pub mod seed;
pub mod skill_doc;

pub use loader::{
    load_core, load_global_fallback, AuthoredTool, CoreError, CoreErrorKind, LoadedCore,
    McpManifest, Phase, SkillRef, SlotRef,
};
pub use manifest::{
    AgentYaml, ApprovalInfo, ApprovalPolicy, CapabilitiesInfo, GlobalYaml, Grants, PipelinesYaml,
    Risk, SlotYaml, ToolMetadataOverride, ToolYaml,
};
pub use seed::{seed_assistant, seed_evolver};

#[cfg(test)]
#[path = "fixtures_tests.rs"]
mod fixtures;

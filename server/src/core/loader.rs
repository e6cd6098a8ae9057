//! Load and validate one Agent Core directory into a [`LoadedCore`].
//!
//! The loader reads only manifests and text (`agent.yaml`, `SOUL.md`,
//! `pipelines.yaml`, `slot.yaml`, `tool.yaml`, MCP `*.yaml`) and lists skill
//! files. It never runs authored code and never connects to anything. Every
//! failure is a [`CoreError`] naming the file (relative to the core folder),
//! the field path when known, and the problem, on one line.
//!
//! Every path a manifest names must stay inside the core folder, both as
//! written (no absolute paths, no `..`) and after symlinks are resolved.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_yaml_ng::{Mapping, Value};
use sha2::{Digest, Sha256};

use super::manifest::{
    AgentYaml, GlobalYaml, PipelinesYaml, SlotYaml, ToolMetadataOverride, ToolYaml,
};

/// Toolset names the upstream registry defines. The loader's lookup is a
/// closure, so these are only used to list the known names in an
/// "unknown toolset" message (each is shown only if the lookup resolves it).
const UPSTREAM_TOOLSETS: &[&str] = &["coding", "demiurge_control", "schedule"];

/// `runtime.max_model_steps` must lie in this range.
const MAX_MODEL_STEPS: i64 = 90;

/// Skill folders nested deeper than this below the skill root are ignored.
const MAX_SKILL_DEPTH: usize = 16;

// ---------------------------------------------------------------------------
// Errors

/// What went wrong, for callers that branch on it (the text is for people).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoreErrorKind {
    /// A file or folder could not be read.
    Io,
    /// A required file or folder is missing.
    Missing,
    /// The file is not valid YAML (or not UTF-8).
    Syntax,
    /// Valid YAML of the wrong shape: unknown key, wrong type, bad enum value.
    Schema,
    /// A value is well-formed but not allowed (range, empty, mismatch).
    Invalid,
    /// `tools.toolsets` names a toolset the host does not have.
    UnknownToolset,
    /// `pipelines.yaml` names a slot that does not exist or lists one twice.
    Pipeline,
    /// The same model-visible tool name comes from two places.
    Collision,
    /// Two slots, skills or MCP manifests share an id.
    Duplicate,
    /// A path leaves the core folder.
    PathEscape,
}

/// A core that failed to load. Displays as one line:
/// `<file>: <field>: <problem>` (or `<file>: <problem>` without a field).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", render_error(.file, .field.as_deref(), .problem))]
pub struct CoreError {
    pub kind: CoreErrorKind,
    /// The file, relative to the core folder (`agent.yaml`,
    /// `agent/tools/echo/tool.yaml`); `.` for the folder itself.
    pub file: String,
    /// Field path inside the file, e.g. `tools.toolsets[1]`.
    pub field: Option<String>,
    pub problem: String,
}

fn render_error(file: &str, field: Option<&str>, problem: &str) -> String {
    match field {
        Some(field) => format!("{file}: {field}: {problem}"),
        None => format!("{file}: {problem}"),
    }
}

impl CoreError {
    fn new(
        kind: CoreErrorKind,
        file: impl Into<String>,
        field: Option<String>,
        problem: impl Into<String>,
    ) -> Self {
        let problem: String = problem.into();
        Self {
            kind,
            file: file.into(),
            field,
            problem: one_line(&problem),
        }
    }

    fn at(kind: CoreErrorKind, file: &str, field: &str, problem: impl Into<String>) -> Self {
        Self::new(kind, file, Some(field.to_owned()), problem)
    }

    fn io(file: &str, err: &io::Error) -> Self {
        Self::new(CoreErrorKind::Io, file, None, format!("cannot read: {err}"))
    }

    /// A YAML parse error. Its text is `<path>: <message> at line L column C`
    /// (no path at the document root); the path becomes the field.
    fn yaml(kind: CoreErrorKind, file: &str, err: &serde_yaml_ng::Error) -> Self {
        let text = err.to_string();
        let (field, problem) = split_yaml_path(&text);
        Self::new(kind, file, field, problem)
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn split_yaml_path(text: &str) -> (Option<String>, String) {
    if let Some((head, rest)) = text.split_once(": ") {
        let looks_like_path = !head.is_empty()
            && !head.contains(char::is_whitespace)
            && !head.contains(['`', '"', '\'']);
        if looks_like_path {
            return (Some(head.to_owned()), rest.to_owned());
        }
    }
    (None, text.to_owned())
}

// ---------------------------------------------------------------------------
// Loaded core

/// A pipeline phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    Bootstrap,
    Input,
    Output,
}

impl Phase {
    pub const ALL: [Phase; 3] = [Phase::Bootstrap, Phase::Input, Phase::Output];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Bootstrap => "bootstrap",
            Phase::Input => "input",
            Phase::Output => "output",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An authored tool: `<slots.tools>/<name>/tool.yaml`.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthoredTool {
    /// Model-visible name (the folder name).
    pub name: String,
    /// Tool folder relative to the core, e.g. `agent/tools/echo`.
    pub dir_rel: String,
    pub manifest: ToolYaml,
}

/// An authored tool whose `tool.yaml` does not validate: listed as
/// unavailable with its error, never dropped silently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenTool {
    pub name: String,
    pub dir_rel: String,
    /// The loader's one-line error (file, field, problem).
    pub error: String,
}

/// A bootstrap/input/output slot: `<surface_root>/<phase>/<id>/slot.yaml`.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotRef {
    pub phase: Phase,
    pub id: String,
    /// Slot folder relative to the core, e.g. `agent/input/base_input`.
    pub dir_rel: String,
    pub manifest: SlotYaml,
}

/// A skill file found under the skill root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillRef {
    /// `<id>.md` stem, or the folder name holding `SKILL.md`.
    pub id: String,
    /// The skill's markdown file relative to the core.
    pub path_rel: String,
}

/// An MCP server manifest, listed but not validated or connected.
#[derive(Debug, Clone, PartialEq)]
pub struct McpManifest {
    /// Server id (file stem).
    pub name: String,
    pub path_rel: String,
    /// The file as parsed (an empty file is an empty mapping).
    pub raw: Value,
}

/// A validated Agent Core.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedCore {
    /// The core id the host asked for (equal to `agent.id`).
    pub id: String,
    /// The core folder as given to [`load_core`].
    pub root: PathBuf,
    pub manifest: AgentYaml,
    /// Built-in tool names from `tools.toolsets`: toolset order, then the
    /// toolset's own order, duplicates dropped.
    pub builtin_tools: Vec<String>,
    /// Authored tools, sorted by name. Empty unless `slots.tools` is set.
    pub authored: Vec<AuthoredTool>,
    /// Authored tools whose `tool.yaml` is invalid, sorted by name.
    pub broken_tools: Vec<BrokenTool>,
    /// MCP server ids, sorted.
    pub mcp_servers: Vec<String>,
    /// MCP manifests in the same order as `mcp_servers`.
    pub mcp_manifests: Vec<McpManifest>,
    /// Skills, sorted by id.
    pub skills: Vec<SkillRef>,
    /// The skill root relative to the core (`slots.skills`, default
    /// `<surface_root>/skills`); `skill_manage` writes only under it.
    pub skills_root: String,
    /// The schedules root relative to the core (`slots.schedules`, default
    /// `<surface_root>/schedules`); not read by the loader.
    pub schedules_root: String,
    /// SOUL text (`slots.soul`, then `<surface_root>/SOUL.md`, trimmed,
    /// joined by a blank line); `None` when there is none.
    pub soul: Option<String>,
    /// `pipelines.yaml` as loaded; every id in it names an entry of `slots`.
    /// Empty (all phases empty) when the file is absent.
    pub pipelines: PipelinesYaml,
    /// Every slot folder with a `slot.yaml` (listed in the pipeline or not),
    /// sorted by phase, then id.
    pub slots: Vec<SlotRef>,
    /// Hex SHA-256 over the core id and every file the loader read (path and
    /// bytes, in a fixed order) plus the listed skill paths. Equal inputs give
    /// equal fingerprints across runs and platforms.
    pub fingerprint: String,
}

impl LoadedCore {
    /// Core-wide capability grant names (`capabilities.defaults`), sorted.
    pub fn capability_defaults(&self) -> Vec<String> {
        self.manifest.capabilities.defaults.names()
    }

    /// Path-scoped grants (`capabilities.slots`): `(slot path, grant names)`,
    /// both sorted.
    pub fn capability_slots(&self) -> Vec<(String, Vec<String>)> {
        self.manifest
            .capabilities
            .slots
            .iter()
            .map(|(path, grants)| (path.clone(), grants.names()))
            .collect()
    }

    /// `tools.metadata.<name>`, if configured.
    pub fn metadata_override(&self, name: &str) -> Option<&ToolMetadataOverride> {
        self.manifest.tools.metadata.get(name)
    }

    /// The authored tool with this model-visible name.
    pub fn authored_tool(&self, name: &str) -> Option<&AuthoredTool> {
        self.authored.iter().find(|t| t.name == name)
    }

    /// The slot with this id in this phase.
    pub fn slot(&self, phase: Phase, id: &str) -> Option<&SlotRef> {
        self.slots.iter().find(|s| s.phase == phase && s.id == id)
    }
}

// ---------------------------------------------------------------------------
// Entry points

/// Load and validate the core in `core_dir` for the host id `core_id`.
///
/// `builtin_toolsets` maps a toolset name to its tool names (`None` if the
/// host has no such toolset).
pub fn load_core(
    core_dir: &Path,
    core_id: &str,
    builtin_toolsets: &dyn Fn(&str) -> Option<Vec<String>>,
) -> Result<LoadedCore, CoreError> {
    let mut cx = Cx::new(core_dir)?;

    // agent.yaml
    let agent_bytes = cx.read_required("agent.yaml")?;
    let manifest: AgentYaml = parse_yaml("agent.yaml", &agent_bytes)?;
    check_agent(&manifest, core_id)?;
    let surface = check_surface_root(&cx, &manifest)?;

    let builtin_tools = resolve_toolsets(&manifest, builtin_toolsets)?;

    let soul = load_soul(&mut cx, &manifest, &surface)?;

    // bootstrap/input/output slots, then the pipeline that orders them
    let slots = discover_phase_slots(&mut cx, &surface)?;
    let pipelines = load_pipelines(&mut cx, &surface, &slots)?;

    // authored tools (only with slots.tools)
    let (authored, broken_tools) = match manifest.slots.tools.as_deref() {
        Some(root) => {
            let root = cx.configured_root(root, "slots.tools")?;
            discover_tools(&mut cx, &root, &builtin_tools, &slots)?
        }
        None => (Vec::new(), Vec::new()),
    };

    let mcp_root = match manifest.slots.mcp.as_deref() {
        Some(root) => cx.configured_root(root, "slots.mcp")?,
        None => format!("{surface}/mcp"),
    };
    let mcp_manifests = list_mcp(&mut cx, &mcp_root)?;

    let skills_root = match manifest.slots.skills.as_deref() {
        Some(root) => cx.configured_root(root, "slots.skills")?,
        None => format!("{surface}/skills"),
    };
    let skills = list_skills(&cx, &skills_root)?;
    let schedules_root = match manifest.slots.schedules.as_deref() {
        Some(root) => cx.configured_root(root, "slots.schedules")?,
        None => format!("{surface}/schedules"),
    };

    let fingerprint = cx.fingerprint(core_id, &skills);
    Ok(LoadedCore {
        id: core_id.to_owned(),
        root: core_dir.to_path_buf(),
        manifest,
        builtin_tools: builtin_tools.into_iter().map(|(name, _)| name).collect(),
        authored,
        broken_tools,
        mcp_servers: mcp_manifests.iter().map(|m| m.name.clone()).collect(),
        mcp_manifests,
        skills,
        skills_root: skills_root.trim_end_matches('/').to_owned(),
        schedules_root: schedules_root.trim_end_matches('/').to_owned(),
        soul,
        pipelines,
        slots,
        fingerprint,
    })
}

/// Load the global fallback (`agents/agent.yaml`). A missing file is
/// `Ok(None)`; an empty file is all defaults. Only `model`, `ui` and
/// `approval` are allowed. Errors name the file as `path` was given.
pub fn load_global_fallback(path: &Path) -> Result<Option<GlobalYaml>, CoreError> {
    let file = path.display().to_string();
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(CoreError::io(&file, &e)),
    };
    parse_yaml::<GlobalYaml>(&file, &bytes)
        .map(Some)
        .map_err(|mut e| {
            if e.kind == CoreErrorKind::Schema && e.problem.contains("unknown field") {
                e.problem
                    .push_str(" (the global fallback may only set model, ui and approval)");
            }
            e
        })
}

// ---------------------------------------------------------------------------
// Reading files

/// Load context: the core folder and everything read so far.
struct Cx {
    dir: PathBuf,
    canonical: PathBuf,
    /// `(relative path, bytes)` in read order, for the fingerprint.
    read: Vec<(String, Vec<u8>)>,
}

impl Cx {
    fn new(dir: &Path) -> Result<Self, CoreError> {
        let canonical = fs::canonicalize(dir).map_err(|e| {
            let kind = if e.kind() == io::ErrorKind::NotFound {
                CoreErrorKind::Missing
            } else {
                CoreErrorKind::Io
            };
            CoreError::new(
                kind,
                ".",
                None,
                format!("core folder {} is not readable: {e}", dir.display()),
            )
        })?;
        if !canonical.is_dir() {
            return Err(CoreError::new(
                CoreErrorKind::Missing,
                ".",
                None,
                format!("core folder {} is not a directory", dir.display()),
            ));
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            canonical,
            read: Vec::new(),
        })
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    /// Fails if `rel` exists but resolves (through symlinks) outside the core.
    fn check_inside(&self, rel: &str) -> Result<(), CoreError> {
        match fs::canonicalize(self.path(rel)) {
            Ok(real) if real.starts_with(&self.canonical) => Ok(()),
            Ok(real) => Err(CoreError::new(
                CoreErrorKind::PathEscape,
                rel,
                None,
                format!("resolves outside the core folder (to {})", real.display()),
            )),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(CoreError::io(rel, &e)),
        }
    }

    /// Read a file that must exist.
    fn read_required(&mut self, rel: &str) -> Result<Vec<u8>, CoreError> {
        match self.read_optional(rel)? {
            Some(bytes) => Ok(bytes),
            None => Err(CoreError::new(
                CoreErrorKind::Missing,
                rel,
                None,
                format!("missing (looked in {})", self.dir.display()),
            )),
        }
    }

    /// Read a file if it exists (`None` if it does not or is not a file).
    fn read_optional(&mut self, rel: &str) -> Result<Option<Vec<u8>>, CoreError> {
        let path = self.path(rel);
        if !path.is_file() {
            return Ok(None);
        }
        self.check_inside(rel)?;
        let bytes = fs::read(&path).map_err(|e| CoreError::io(rel, &e))?;
        self.read.push((rel.to_owned(), bytes.clone()));
        Ok(Some(bytes))
    }

    /// A `slots.*` root from agent.yaml, normalised to `a/b` form.
    fn configured_root(&self, raw: &str, field: &str) -> Result<String, CoreError> {
        let rel = normalize_rel(raw).map_err(|problem| {
            CoreError::at(CoreErrorKind::PathEscape, "agent.yaml", field, problem)
        })?;
        self.check_inside(&rel).map_err(|mut e| {
            e.file = "agent.yaml".to_owned();
            e.field = Some(field.to_owned());
            e.problem = format!("{rel:?} {}", e.problem);
            e
        })?;
        Ok(rel)
    }

    /// Folder entries of `rel` sorted by name: `None` if it does not exist,
    /// an error if it exists but is not a folder.
    fn list_dir(&self, rel: &str, what: &str) -> Result<Option<Vec<DirItem>>, CoreError> {
        let path = self.path(rel);
        if !path.exists() {
            return Ok(None);
        }
        if !path.is_dir() {
            return Err(CoreError::new(
                CoreErrorKind::Invalid,
                rel,
                None,
                format!("{what} must be a directory"),
            ));
        }
        self.check_inside(rel)?;
        list_dir_at(&path, rel).map(Some)
    }

    fn fingerprint(&self, core_id: &str, skills: &[SkillRef]) -> String {
        let mut h = Sha256::new();
        let mut field = |tag: &[u8], data: &[u8]| {
            h.update(tag);
            h.update((data.len() as u64).to_le_bytes());
            h.update(data);
        };
        field(b"core", core_id.as_bytes());
        for (rel, bytes) in &self.read {
            field(b"path", rel.as_bytes());
            field(b"file", bytes);
        }
        for skill in skills {
            field(b"skil", skill.path_rel.as_bytes());
        }
        hex_digest(h)
    }
}

/// Lowercase hex of a finished SHA-256.
fn hex_digest(h: Sha256) -> String {
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

struct DirItem {
    name: String,
    rel: String,
    path: PathBuf,
}

fn list_dir_at(path: &Path, rel: &str) -> Result<Vec<DirItem>, CoreError> {
    let entries = fs::read_dir(path).map_err(|e| CoreError::io(rel, &e))?;
    let mut items = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| CoreError::io(rel, &e))?;
        // Names that are not UTF-8 cannot be tool, slot or skill ids.
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        items.push(DirItem {
            rel: format!("{rel}/{name}"),
            path: entry.path(),
            name,
        });
    }
    items.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(items)
}

/// `a/./b/` → `a/b`. Rejects empty, absolute and `..` paths.
fn normalize_rel(raw: &str) -> Result<String, String> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err("path must not be empty".to_owned());
    }
    let mut parts = Vec::new();
    for component in Path::new(trimmed).components() {
        match component {
            Component::Normal(part) => match part.to_str() {
                Some(part) => parts.push(part),
                None => return Err(format!("{trimmed:?} is not valid UTF-8")),
            },
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(format!("{trimmed:?} must not contain '..'"));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!("{trimmed:?} must be relative to the core folder"));
            }
        }
    }
    if parts.is_empty() {
        return Err(format!("{trimmed:?} must name a path inside the core"));
    }
    Ok(parts.join("/"))
}

/// Parse a YAML file. An empty document counts as an empty mapping (the
/// Python loader reads files with `safe_load(...) or {}`).
fn parse_yaml<T: DeserializeOwned>(file: &str, bytes: &[u8]) -> Result<T, CoreError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        CoreError::new(CoreErrorKind::Syntax, file, None, format!("not UTF-8: {e}"))
    })?;
    let value: Value = serde_yaml_ng::from_str(text)
        .map_err(|e| CoreError::yaml(CoreErrorKind::Syntax, file, &e))?;
    let parsed = if value.is_null() {
        T::deserialize(Value::Mapping(Mapping::new()))
    } else {
        // Parse the text again (not the Value) so errors keep line/column.
        serde_yaml_ng::from_str::<T>(text)
    };
    parsed.map_err(|e| CoreError::yaml(CoreErrorKind::Schema, file, &e))
}

// ---------------------------------------------------------------------------
// agent.yaml checks

fn check_agent(manifest: &AgentYaml, core_id: &str) -> Result<(), CoreError> {
    let err = |field: &str, problem: String| {
        CoreError::at(CoreErrorKind::Invalid, "agent.yaml", field, problem)
    };
    if manifest.schema_version != 1 {
        return Err(err(
            "schema_version",
            format!(
                "unsupported schema_version {} (expected 1)",
                manifest.schema_version
            ),
        ));
    }
    let id = manifest.agent.id.trim();
    if id.is_empty() {
        return Err(err("agent.id", "must not be empty".to_owned()));
    }
    if id != core_id {
        return Err(err(
            "agent.id",
            format!("{id:?} does not match the core id {core_id:?}"),
        ));
    }
    let steps = manifest.runtime.max_model_steps;
    if !(1..=MAX_MODEL_STEPS).contains(&steps) {
        return Err(err(
            "runtime.max_model_steps",
            format!("{steps} is out of range (1..={MAX_MODEL_STEPS})"),
        ));
    }
    if let Some(workspace) = &manifest.runtime.workspace {
        if workspace.trim().is_empty() {
            return Err(err(
                "runtime.workspace",
                "must be null or a non-empty path".to_owned(),
            ));
        }
    }
    for (name, config) in &manifest.channels {
        let name = match name {
            Value::String(s) if !s.trim().is_empty() => s.clone(),
            _ => {
                return Err(err(
                    "channels",
                    "channel names must be non-empty strings".to_owned(),
                ))
            }
        };
        if !matches!(config, Value::Mapping(_) | Value::Null) {
            return Err(err(
                &format!("channels.{name}"),
                "must be a mapping".to_owned(),
            ));
        }
    }
    for name in manifest.tools.metadata.keys() {
        if name.trim().is_empty() || name.trim() != name {
            return Err(err(
                "tools.metadata",
                format!("{name:?} is not a valid tool name"),
            ));
        }
    }
    Ok(())
}

/// Validates `runtime.surface_root` and returns it in `a/b` form.
fn check_surface_root(cx: &Cx, manifest: &AgentYaml) -> Result<String, CoreError> {
    let surface = cx.configured_root(&manifest.runtime.surface_root, "runtime.surface_root")?;
    if !cx.path(&surface).is_dir() {
        return Err(CoreError::at(
            CoreErrorKind::Missing,
            "agent.yaml",
            "runtime.surface_root",
            format!("folder {surface}/ does not exist"),
        ));
    }
    Ok(surface)
}

/// `(tool name, toolset)` in catalog order, duplicates dropped.
fn resolve_toolsets(
    manifest: &AgentYaml,
    lookup: &dyn Fn(&str) -> Option<Vec<String>>,
) -> Result<Vec<(String, String)>, CoreError> {
    let mut tools: Vec<(String, String)> = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, toolset) in manifest.tools.toolsets.iter().enumerate() {
        let Some(names) = lookup(toolset) else {
            let known: Vec<&str> = UPSTREAM_TOOLSETS
                .iter()
                .copied()
                .filter(|t| lookup(t).is_some())
                .collect();
            let known = if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            };
            return Err(CoreError::at(
                CoreErrorKind::UnknownToolset,
                "agent.yaml",
                &format!("tools.toolsets[{i}]"),
                format!("unknown toolset {toolset:?} (known: {known})"),
            ));
        };
        for name in names {
            if seen.insert(name.clone()) {
                tools.push((name, toolset.clone()));
            }
        }
    }
    Ok(tools)
}

fn load_soul(
    cx: &mut Cx,
    manifest: &AgentYaml,
    surface: &str,
) -> Result<Option<String>, CoreError> {
    let mut candidates = Vec::new();
    if let Some(soul) = manifest.slots.soul.as_deref() {
        candidates.push(cx.configured_root(soul, "slots.soul")?);
    }
    candidates.push(format!("{surface}/SOUL.md"));
    candidates.dedup();
    let mut parts = Vec::new();
    for rel in candidates {
        if let Some(bytes) = cx.read_optional(&rel)? {
            let text = String::from_utf8(bytes)
                .map_err(|_| CoreError::new(CoreErrorKind::Syntax, &rel, None, "not UTF-8"))?;
            let text = text.trim();
            if !text.is_empty() {
                parts.push(text.to_owned());
            }
        }
    }
    Ok(if parts.is_empty() {
        None
    } else {
        Some(parts.join("\n\n"))
    })
}

// ---------------------------------------------------------------------------
// Slots and pipelines

fn discover_phase_slots(cx: &mut Cx, surface: &str) -> Result<Vec<SlotRef>, CoreError> {
    let mut slots: Vec<SlotRef> = Vec::new();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for phase in Phase::ALL {
        let root = format!("{surface}/{}", phase.as_str());
        let what = format!("the {phase} slot folder");
        let Some(items) = cx.list_dir(&root, &what)? else {
            continue;
        };
        for item in items {
            if !item.path.is_dir() {
                continue;
            }
            let manifest_rel = format!("{}/slot.yaml", item.rel);
            let Some(bytes) = cx.read_optional(&manifest_rel)? else {
                continue;
            };
            let manifest: SlotYaml = parse_yaml(&manifest_rel, &bytes)?;
            if let Some(prior) = seen.get(&item.name) {
                return Err(CoreError::new(
                    CoreErrorKind::Duplicate,
                    &manifest_rel,
                    None,
                    format!(
                        "slot id {:?} is used twice ({prior} and {}); slot ids must be unique across phases",
                        item.name, item.rel
                    ),
                ));
            }
            seen.insert(item.name.clone(), item.rel.clone());
            slots.push(SlotRef {
                phase,
                id: item.name,
                dir_rel: item.rel,
                manifest,
            });
        }
    }
    Ok(slots)
}

fn load_pipelines(
    cx: &mut Cx,
    surface: &str,
    slots: &[SlotRef],
) -> Result<PipelinesYaml, CoreError> {
    let file = format!("{surface}/pipelines.yaml");
    let Some(bytes) = cx.read_optional(&file)? else {
        return Ok(PipelinesYaml {
            schema_version: 1,
            ..PipelinesYaml::default()
        });
    };
    let pipelines: PipelinesYaml = parse_yaml(&file, &bytes)?;
    if pipelines.schema_version != 1 {
        return Err(CoreError::at(
            CoreErrorKind::Invalid,
            &file,
            "schema_version",
            format!(
                "unsupported schema_version {} (expected 1)",
                pipelines.schema_version
            ),
        ));
    }
    let lanes: [(Phase, &str, &[String]); 5] = [
        (Phase::Bootstrap, "serial", &pipelines.bootstrap.serial),
        (Phase::Input, "serial", &pipelines.input.serial),
        (Phase::Input, "parallel", &pipelines.input.parallel),
        (Phase::Output, "serial", &pipelines.output.serial),
        (Phase::Output, "parallel", &pipelines.output.parallel),
    ];
    let mut listed: BTreeMap<(Phase, &str), String> = BTreeMap::new();
    for (phase, lane, ids) in lanes {
        for (i, id) in ids.iter().enumerate() {
            let field = format!("{phase}.{lane}[{i}]");
            if let Some(prior) = listed.get(&(phase, id.as_str())) {
                return Err(CoreError::at(
                    CoreErrorKind::Pipeline,
                    &file,
                    &field,
                    format!("slot {id:?} is listed twice in the {phase} phase (also at {prior})"),
                ));
            }
            if !slots.iter().any(|s| s.phase == phase && s.id == *id) {
                let dir = format!("{surface}/{phase}/{id}");
                let problem = match normalize_rel(id) {
                    Ok(norm) if norm == *id && !id.contains('/') => {
                        if cx.path(&dir).is_dir() {
                            format!("slot {id:?}: folder {dir}/ has no slot.yaml")
                        } else {
                            format!("slot {id:?} has no folder {dir}/")
                        }
                    }
                    _ => {
                        format!("{id:?} is not a slot id (a folder name under {surface}/{phase}/)")
                    }
                };
                return Err(CoreError::at(
                    CoreErrorKind::Pipeline,
                    &file,
                    &field,
                    problem,
                ));
            }
            listed.insert((phase, id.as_str()), field);
        }
    }
    Ok(pipelines)
}

// ---------------------------------------------------------------------------
// Authored tools

/// Provider function names: `[A-Za-z0-9_-]{1,64}`.
fn is_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn discover_tools(
    cx: &mut Cx,
    root: &str,
    builtins: &[(String, String)],
    slots: &[SlotRef],
) -> Result<(Vec<AuthoredTool>, Vec<BrokenTool>), CoreError> {
    let Some(items) = cx.list_dir(root, "slots.tools")? else {
        return Ok((Vec::new(), Vec::new()));
    };
    let mut tools = Vec::new();
    let mut broken = Vec::new();
    for item in items {
        if !item.path.is_dir() {
            continue;
        }
        let manifest_rel = format!("{}/tool.yaml", item.rel);
        let Some(bytes) = cx.read_optional(&manifest_rel)? else {
            continue;
        };
        if !is_tool_name(&item.name) {
            return Err(CoreError::new(
                CoreErrorKind::Invalid,
                &manifest_rel,
                None,
                format!(
                    "tool folder name {:?} is not a valid tool name (letters, digits, '_' and '-', at most 64)",
                    item.name
                ),
            ));
        }
        if let Some((_, toolset)) = builtins.iter().find(|(name, _)| *name == item.name) {
            return Err(CoreError::new(
                CoreErrorKind::Collision,
                &manifest_rel,
                None,
                format!(
                    "tool name {:?} is defined twice: builtin {toolset}/{name} and authored {manifest_rel}; \
                     rename the authored tool folder or remove the {toolset:?} toolset",
                    item.name,
                    name = item.name,
                ),
            ));
        }
        if let Some(slot) = slots.iter().find(|s| s.id == item.name) {
            return Err(CoreError::new(
                CoreErrorKind::Duplicate,
                &manifest_rel,
                None,
                format!(
                    "id {:?} is used by both authored tool {} and {} slot {}; rename one of them",
                    item.name, item.rel, slot.phase, slot.dir_rel
                ),
            ));
        }
        // One tool's invalid manifest makes that tool unavailable (with the
        // error), not the whole core.
        match parse_yaml::<ToolYaml>(&manifest_rel, &bytes) {
            Ok(manifest) => tools.push(AuthoredTool {
                name: item.name,
                dir_rel: item.rel,
                manifest,
            }),
            Err(e) => broken.push(BrokenTool {
                name: item.name,
                dir_rel: item.rel,
                error: e.to_string(),
            }),
        }
    }
    Ok((tools, broken))
}

// ---------------------------------------------------------------------------
// MCP manifests and skills

fn has_extension(name: &str, exts: &[&str]) -> Option<String> {
    let (stem, ext) = name.rsplit_once('.')?;
    if stem.is_empty() {
        return None;
    }
    exts.iter()
        .any(|e| ext.eq_ignore_ascii_case(e))
        .then(|| stem.to_owned())
}

fn list_mcp(cx: &mut Cx, root: &str) -> Result<Vec<McpManifest>, CoreError> {
    let Some(items) = cx.list_dir(root, "the MCP manifest folder")? else {
        return Ok(Vec::new());
    };
    let mut out: Vec<McpManifest> = Vec::new();
    for item in items {
        let Some(name) = has_extension(&item.name, &["yaml", "yml"]) else {
            continue;
        };
        if !item.path.is_file() {
            continue;
        }
        if let Some(prior) = out.iter().find(|m| m.name == name) {
            return Err(CoreError::new(
                CoreErrorKind::Duplicate,
                &item.rel,
                None,
                format!(
                    "MCP server id {name:?} is defined twice ({} and {})",
                    prior.path_rel, item.rel
                ),
            ));
        }
        let Some(bytes) = cx.read_optional(&item.rel)? else {
            continue;
        };
        let raw: Value = parse_yaml(&item.rel, &bytes)?;
        let raw = match raw {
            Value::Null => Value::Mapping(Mapping::new()),
            Value::Mapping(_) => raw,
            _ => {
                return Err(CoreError::new(
                    CoreErrorKind::Schema,
                    &item.rel,
                    None,
                    "an MCP server manifest must be a mapping",
                ))
            }
        };
        out.push(McpManifest {
            name,
            path_rel: item.rel,
            raw,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// `<root>/<id>.md` and `<root>/**/<id>/SKILL.md` (hidden folders and
/// symlinks skipped). Duplicate ids fail.
fn list_skills(cx: &Cx, root: &str) -> Result<Vec<SkillRef>, CoreError> {
    let Some(items) = cx.list_dir(root, "the skill folder")? else {
        return Ok(Vec::new());
    };
    let mut skills = Vec::new();
    for item in &items {
        if let Some(id) = has_extension(&item.name, &["md"]) {
            if item.path.is_file() {
                skills.push(SkillRef {
                    id,
                    path_rel: item.rel.clone(),
                });
            }
        }
    }
    walk_packaged_skills(items, 1, &mut skills)?;

    skills.sort_by(|a, b| a.id.cmp(&b.id).then(a.path_rel.cmp(&b.path_rel)));
    for pair in skills.windows(2) {
        if pair[0].id == pair[1].id {
            return Err(CoreError::new(
                CoreErrorKind::Duplicate,
                &pair[1].path_rel,
                None,
                format!(
                    "skill id {:?} is defined twice ({} and {})",
                    pair[0].id, pair[0].path_rel, pair[1].path_rel
                ),
            ));
        }
    }
    Ok(skills)
}

fn walk_packaged_skills(
    items: Vec<DirItem>,
    depth: usize,
    skills: &mut Vec<SkillRef>,
) -> Result<(), CoreError> {
    if depth > MAX_SKILL_DEPTH {
        return Ok(());
    }
    for item in items {
        if item.name.starts_with('.') {
            continue;
        }
        let is_real_dir = fs::symlink_metadata(&item.path)
            .map(|m| m.file_type().is_dir())
            .unwrap_or(false);
        if !is_real_dir {
            continue;
        }
        let skill_file = item.path.join("SKILL.md");
        let is_real_file = fs::symlink_metadata(&skill_file)
            .map(|m| m.file_type().is_file())
            .unwrap_or(false);
        if is_real_file {
            skills.push(SkillRef {
                id: item.name.clone(),
                path_rel: format!("{}/SKILL.md", item.rel),
            });
        }
        let children = list_dir_at(&item.path, &item.rel)?;
        walk_packaged_skills(children, depth + 1, skills)?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "loader_tests.rs"]
mod tests;

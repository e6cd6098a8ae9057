//! Planning a package operation on one core: the file edits an install,
//! upgrade or uninstall makes, and the core's registry (`packages.yaml`,
//! the Python project's format) after it. Reads the repository's sources
//! and the core's current files; writes nothing: the edits become one
//! core revision through the core edit path, which checks that the core
//! still loads before anything changes.
//!
//! Ownership: every target a package writes is recorded with its
//! component. A target that exists and is not the package's own is a
//! conflict naming its owner (two `web_search` providers both install
//! `agent/tools/web_search`); a shared library is reused when another
//! installed package installed the same source with the same config.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::recipe::{self, Anchor, Component, Kind, Recipe};
use super::repository::{self, Repository};
use crate::core::manifest::PipelinesYaml;

/// The core's registry of installed packages, `<core>/packages.yaml`.
pub const REGISTRY: &str = "packages.yaml";
/// Where slot pipelines are declared in a core.
const PIPELINES: &str = "agent/pipelines.yaml";

/// `packages.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Registry {
    pub schema_version: i64,
    #[serde(default)]
    pub installed: Vec<Installed>,
}

/// One installed package, as the registry records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Installed {
    pub package_id: String,
    pub repository_alias: String,
    pub repository_id: String,
    pub repository_type: String,
    #[serde(default)]
    pub repository_ref: Option<String>,
    #[serde(default)]
    pub repository_commit: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub components: Vec<InstalledComponent>,
    pub installed_at: String,
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Resolved options; secret ones are never recorded (`<redacted>` or absent).
    #[serde(default)]
    pub options: Map<String, Value>,
    /// Host extension: packages this one needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    /// Host extension: the tenant credentials its secret options name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub secrets: BTreeMap<String, String>,
}

/// One installed component.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstalledComponent {
    pub kind: String,
    pub component_id: String,
    pub package_id: String,
    pub repository_alias: String,
    /// `<kind>/<source>` in the repository.
    pub source: String,
    /// Core-relative file or folder.
    pub target: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipeline: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_hash: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reused: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_by: Option<String>,
    /// SHA-256 of what was installed (uninstall refuses drifted files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed_hash: Option<String>,
}

/// Core-relative paths and what happens to each, in order.
pub type Edits = Vec<(String, FileEdit)>;

/// A file edit of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileEdit {
    Put(Vec<u8>),
    Delete,
    DeleteTree,
}

/// What an operation does to a core.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Core-relative paths, in order.
    pub edits: Vec<(String, FileEdit)>,
    /// The package's record (installed, or the one removed).
    pub record: Installed,
    pub warnings: Vec<String>,
}

/// Why an operation cannot be made; the message says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The request does not fit the package (options, unknown package).
    #[error("{0}")]
    Invalid(String),
    /// The core as it is does not allow it (a target owned by another
    /// package, a missing requirement, a dependent package).
    #[error("{0}")]
    Conflict(String),
    #[error("no such package installed in this core: {0}")]
    NotInstalled(String),
    #[error("{0}")]
    Io(String),
}

/// The core's files a plan reads.
pub struct CoreFiles<'a> {
    pub dir: &'a Path,
}

impl CoreFiles<'_> {
    fn read(&self, rel: &str) -> Option<Vec<u8>> {
        let path = self.dir.join(rel);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        if !meta.is_file() {
            return None;
        }
        std::fs::read(path).ok()
    }

    fn exists(&self, rel: &str) -> bool {
        std::fs::symlink_metadata(self.dir.join(rel)).is_ok()
    }

    /// The registry (empty when the core has none).
    pub fn registry(&self) -> Result<Registry, PlanError> {
        match self.read(REGISTRY) {
            None => Ok(Registry {
                schema_version: 1,
                installed: Vec::new(),
            }),
            Some(bytes) => serde_yaml_ng::from_slice::<Registry>(&bytes).map_err(|e| {
                PlanError::Conflict(format!("{REGISTRY} of this core does not parse: {e}"))
            }),
        }
    }

    fn agent_yaml(&self) -> Map<String, Value> {
        self.read("agent.yaml")
            .and_then(|b| serde_yaml_ng::from_slice::<Value>(&b).ok())
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default()
    }

    /// A `slots.<name>` root of `agent.yaml`, or `<surface_root>/<fallback>`.
    fn slot_root(&self, name: &str, fallback: Option<&str>) -> Option<String> {
        let raw = self.agent_yaml();
        if let Some(s) = raw
            .get("slots")
            .and_then(|s| s.get(name))
            .and_then(Value::as_str)
            .map(|s| s.trim().trim_end_matches('/').to_owned())
            .filter(|s| !s.is_empty())
        {
            return Some(s);
        }
        let surface = raw
            .get("runtime")
            .and_then(|r| r.get("surface_root"))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .unwrap_or("agent")
            .trim_end_matches('/')
            .to_owned();
        fallback.map(|f| format!("{surface}/{f}"))
    }

    /// SHA-256 over a target's files (names and bytes); `None` if absent.
    fn hash(&self, rel: &str) -> Option<String> {
        let path = self.dir.join(rel);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        let mut h = Sha256::new();
        if meta.is_file() {
            h.update(std::fs::read(&path).ok()?);
        } else {
            for f in repository::files_under(&path).ok()? {
                h.update(f.as_bytes());
                h.update([0]);
                h.update(std::fs::read(path.join(&f)).ok()?);
                h.update([0]);
            }
        }
        Some(hex(&h.finalize()))
    }
}

/// Where the package comes from, as the registry records it.
pub struct Origin<'a> {
    pub alias: &'a str,
    pub kind: &'a str,
    pub reference: Option<&'a str>,
    pub commit: Option<&'a str>,
}

/// Plan installing `recipe` of `repo` into the core at `core` (or
/// upgrading it, when `upgrade` and it is installed: its old files go and
/// the new ones come in the same revision).
pub fn install(
    repo: &Repository,
    origin: &Origin<'_>,
    recipe: &Recipe,
    answers: &Map<String, Value>,
    core: &CoreFiles<'_>,
    upgrade: bool,
    now: &str,
) -> Result<Plan, PlanError> {
    let options = recipe::resolve_options(recipe, answers).map_err(PlanError::Invalid)?;
    // A secret option's value is a tenant credential: the core gets its
    // placeholder, the outgoing request its value (`authored::http`).
    let mut rendered = options.clone();
    for o in recipe.options.iter().filter(|o| o.is_secret()) {
        rendered.insert(
            o.id.clone(),
            Value::String(format!(
                "{}{}",
                crate::sealing::CREDENTIAL_PLACEHOLDER,
                credential_name(&recipe.id, &o.id)
            )),
        );
    }
    let mut registry = core.registry()?;
    let mut edits: Vec<(String, FileEdit)> = Vec::new();
    let mut pipelines = Pipelines::read(core)?;
    let mut warnings: Vec<String> = recipe
        .manual_dependencies
        .iter()
        .map(|d| format!("needs, set up by hand: {d}"))
        .collect();
    if let Some(at) = registry
        .installed
        .iter()
        .position(|i| i.package_id == recipe.id)
    {
        if !upgrade {
            return Err(PlanError::Conflict(format!(
                "package {} is already installed in this core; upgrade it or uninstall it first",
                recipe.id
            )));
        }
        let old = registry.installed.remove(at);
        let removal = removal_edits(&old, &registry, core, &mut pipelines, true)?;
        edits.extend(removal.0);
    }
    for need in &recipe.requires {
        if !registry.installed.iter().any(|i| &i.package_id == need) {
            return Err(PlanError::Conflict(format!(
                "package {} needs package {need} installed in this core first",
                recipe.id
            )));
        }
    }
    let being_removed: Vec<String> = edits.iter().map(|(p, _)| p.clone()).collect();
    let mut components = Vec::new();
    let mut seen_targets = std::collections::BTreeSet::new();
    for c in recipe
        .components
        .iter()
        .filter(|c| recipe::condition_matches(&c.when, &options))
    {
        let source_dir = repository::source_path(&repo.root, c).map_err(PlanError::Invalid)?;
        let target = target_of(c, core)?;
        if !seen_targets.insert(target.clone()) {
            return Err(PlanError::Invalid(format!(
                "package {} installs {target} twice",
                recipe.id
            )));
        }
        let config = recipe::render_config(c, &rendered);
        let mut record = InstalledComponent {
            kind: c.kind.as_str().to_owned(),
            component_id: c.id.clone(),
            package_id: recipe.id.clone(),
            repository_alias: origin.alias.to_owned(),
            source: format!("{}/{}", c.kind.as_str(), c.source),
            target: target.clone(),
            slot_id: None,
            pipeline: None,
            config_hash: None,
            reused: false,
            reused_by: None,
            installed_hash: None,
        };
        let files: Vec<(String, Vec<u8>)> = if c.kind.is_manifest_file() {
            let text = std::fs::read(&source_dir).map_err(|e| PlanError::Io(e.to_string()))?;
            let mut manifest = match serde_yaml_ng::from_slice::<Value>(&text) {
                Ok(Value::Object(m)) => m,
                _ => {
                    return Err(PlanError::Invalid(format!(
                        "{}: not a YAML mapping",
                        record.source
                    )))
                }
            };
            if let Some(cfg) = &config {
                recipe::merge(&mut manifest, cfg);
            }
            record.config_hash = Some(json_hash(&Value::Object(manifest.clone())));
            vec![(target.clone(), yaml(&Value::Object(manifest))?)]
        } else {
            let mut out = Vec::new();
            for rel in repository::files_under(&source_dir).map_err(PlanError::Invalid)? {
                if config.is_some() && rel == "config.yaml" {
                    continue;
                }
                let bytes = std::fs::read(source_dir.join(&rel))
                    .map_err(|e| PlanError::Io(e.to_string()))?;
                out.push((format!("{target}/{rel}"), bytes));
            }
            if let Some(patch) = &config {
                let base = std::fs::read(source_dir.join("config.yaml"))
                    .ok()
                    .and_then(|b| serde_yaml_ng::from_slice::<Value>(&b).ok())
                    .and_then(|v| v.as_object().cloned())
                    .unwrap_or_default();
                let mut merged = base;
                recipe::merge(&mut merged, patch);
                let merged = Value::Object(merged);
                record.config_hash = Some(json_hash(&merged));
                out.push((format!("{target}/config.yaml"), yaml(&merged)?));
            }
            out
        };
        // What the target holds now: free, this package's own (upgrade), a
        // shared library, or someone else's.
        if core.exists(&target) && !being_removed.iter().any(|p| p == &target) {
            match owner_of(&registry, &target) {
                Some(other)
                    if other.repository_alias == origin.alias
                        && other.source == record.source
                        && other.config_hash == record.config_hash
                        && c.kind == Kind::Lib =>
                {
                    record.reused = true;
                    record.reused_by = Some(other.package_id.clone());
                    components.push(record);
                    continue;
                }
                Some(other) => {
                    return Err(PlanError::Conflict(format!(
                        "{target} is installed by package {} in this core; uninstall it first (one core holds one provider of a tool)",
                        other.package_id
                    )))
                }
                None => {
                    return Err(PlanError::Conflict(format!(
                        "{target} already exists in this core and no package installed it"
                    )))
                }
            }
        }
        if c.kind.is_pipeline() {
            let slot_id = target.rsplit('/').next().unwrap_or(&target).to_owned();
            let placement = c.pipeline.as_ref().ok_or_else(|| {
                PlanError::Invalid(format!("component {} has no pipeline placement", c.id))
            })?;
            pipelines.insert(c.kind, &slot_id, placement)?;
            record.pipeline = Some(serde_json::json!({
                "group": placement.group,
                "anchor": match &placement.anchor {
                    Anchor::Append => serde_json::json!("append"),
                    Anchor::Before(t) => serde_json::json!({"before": t}),
                    Anchor::After(t) => serde_json::json!({"after": t}),
                },
            }));
            record.slot_id = Some(slot_id);
        }
        record.installed_hash = Some(files_hash(&target, &files));
        for (path, bytes) in files {
            edits.push((path, FileEdit::Put(bytes)));
        }
        components.push(record);
    }
    if let Some(bytes) = pipelines.changed()? {
        edits.push((PIPELINES.to_owned(), FileEdit::Put(bytes)));
    }
    if !recipe.options.iter().all(|o| !o.is_secret()) {
        warnings.push(
            "its secret options are read from the tenant's credentials when a tool runs, never from the core"
                .into(),
        );
    }
    let record = Installed {
        package_id: recipe.id.clone(),
        repository_alias: origin.alias.to_owned(),
        repository_id: repo.info.id.clone(),
        repository_type: origin.kind.to_owned(),
        repository_ref: origin.reference.map(str::to_owned),
        repository_commit: origin.commit.map(str::to_owned),
        tags: recipe.tags.clone(),
        components,
        installed_at: now.to_owned(),
        warnings: warnings.clone(),
        options: options
            .into_iter()
            .filter(|(k, _)| !recipe.options.iter().any(|o| &o.id == k && o.is_secret()))
            .collect(),
        requires: recipe.requires.clone(),
        secrets: recipe
            .options
            .iter()
            .filter(|o| o.is_secret())
            .map(|o| (o.id.clone(), credential_name(&recipe.id, &o.id)))
            .collect(),
    };
    registry.installed.push(record.clone());
    edits.push((
        REGISTRY.to_owned(),
        FileEdit::Put(yaml(&to_value(&registry)?)?),
    ));
    Ok(Plan {
        edits: dedupe(edits),
        record,
        warnings,
    })
}

/// The tenant credential a package's secret option names.
pub fn credential_name(package: &str, option: &str) -> String {
    format!("{package}.{option}")
}

/// The credentials the package that installed `target` (a tool or slot
/// folder) may put into its requests.
pub fn credentials_of(registry: &Registry, target: &str) -> Vec<String> {
    registry
        .installed
        .iter()
        .filter(|i| i.components.iter().any(|c| c.target == target))
        .flat_map(|i| i.secrets.values().cloned())
        .collect()
}

/// Plan uninstalling `package_id`: its targets go (unless another
/// installed package shares them), its pipeline entries too. A package
/// another one requires stays; a drifted file (changed since install)
/// stays unless `force`.
pub fn uninstall(core: &CoreFiles<'_>, package_id: &str, force: bool) -> Result<Plan, PlanError> {
    let mut registry = core.registry()?;
    let at = registry
        .installed
        .iter()
        .position(|i| i.package_id == package_id)
        .ok_or_else(|| PlanError::NotInstalled(package_id.to_owned()))?;
    let record = registry.installed.remove(at);
    if let Some(dependent) = registry
        .installed
        .iter()
        .find(|i| i.requires.iter().any(|r| r == package_id))
    {
        return Err(PlanError::Conflict(format!(
            "package {} needs {package_id}; uninstall it first",
            dependent.package_id
        )));
    }
    let mut pipelines = Pipelines::read(core)?;
    let (mut edits, warnings) = removal_edits(&record, &registry, core, &mut pipelines, force)?;
    if let Some(bytes) = pipelines.changed()? {
        edits.push((PIPELINES.to_owned(), FileEdit::Put(bytes)));
    }
    if registry.installed.is_empty() {
        edits.push((REGISTRY.to_owned(), FileEdit::Delete));
    } else {
        edits.push((
            REGISTRY.to_owned(),
            FileEdit::Put(yaml(&to_value(&registry)?)?),
        ));
    }
    Ok(Plan {
        edits,
        record,
        warnings,
    })
}

/// The edits that take `record`'s targets out (with `remaining` still installed).
fn removal_edits(
    record: &Installed,
    remaining: &Registry,
    core: &CoreFiles<'_>,
    pipelines: &mut Pipelines,
    force: bool,
) -> Result<(Edits, Vec<String>), PlanError> {
    let mut edits = Vec::new();
    let mut warnings = Vec::new();
    for c in record.components.iter().rev() {
        if let Some(slot) = &c.slot_id {
            if let Some(kind) = Kind::parse(&c.kind) {
                pipelines.remove(kind, slot);
            }
        }
        if c.reused || owner_of(remaining, &c.target).is_some() {
            warnings.push(format!("kept shared {}", c.target));
            continue;
        }
        if !core.exists(&c.target) {
            warnings.push(format!("{} was already gone", c.target));
            continue;
        }
        if let (Some(want), false) = (&c.installed_hash, force) {
            if core.hash(&c.target).as_ref() != Some(want) {
                return Err(PlanError::Conflict(format!(
                    "{} changed since package {} installed it; force the uninstall to remove it anyway",
                    c.target, record.package_id
                )));
            }
        }
        let is_dir = std::fs::symlink_metadata(core.dir.join(&c.target)).is_ok_and(|m| m.is_dir());
        edits.push((
            c.target.clone(),
            if is_dir {
                FileEdit::DeleteTree
            } else {
                FileEdit::Delete
            },
        ));
    }
    Ok((edits, warnings))
}

/// The installed component (of a package still installed) that owns `target`.
fn owner_of<'a>(registry: &'a Registry, target: &str) -> Option<&'a InstalledComponent> {
    registry
        .installed
        .iter()
        .flat_map(|i| i.components.iter())
        .find(|c| c.target == target && !c.reused)
}

/// A component's core-relative target, checked.
fn target_of(c: &Component, core: &CoreFiles<'_>) -> Result<String, PlanError> {
    let base = c.source.rsplit('/').next().unwrap_or(&c.source).to_owned();
    let target = match (&c.target, c.kind) {
        (Some(t), _) => t.trim().trim_end_matches('/').to_owned(),
        (None, Kind::Mcp) => format!(
            "{}/{base}",
            core.slot_root("mcp", Some("mcp")).unwrap_or_default()
        ),
        (None, Kind::Schedule) => format!(
            "{}/{base}",
            core.slot_root("schedules", Some("schedules"))
                .unwrap_or_default()
        ),
        (None, k) => match k.default_root() {
            Some(root) => format!("{root}/{base}"),
            None => {
                return Err(PlanError::Invalid(format!(
                    "component {} ({}) has no target in a core",
                    c.id,
                    k.as_str()
                )))
            }
        },
    };
    if target.is_empty()
        || target.starts_with('/')
        || target
            .split('/')
            .any(|p| p.is_empty() || p == "." || p == "..")
    {
        return Err(PlanError::Invalid(format!(
            "component {}: target {target:?} must stay inside the core",
            c.id
        )));
    }
    if target == REGISTRY || target == "agent.yaml" || target == PIPELINES {
        return Err(PlanError::Invalid(format!(
            "component {}: {target} is the host's, not a package's",
            c.id
        )));
    }
    let within = |root: Option<String>, what: &str| -> Result<(), PlanError> {
        let Some(root) = root else {
            return Err(PlanError::Conflict(format!(
                "this core has no {what} root (slots.{what} in agent.yaml); component {} cannot be installed",
                c.id
            )));
        };
        match target.strip_prefix(&format!("{root}/")) {
            Some(rest) if !rest.contains('/') => Ok(()),
            _ => Err(PlanError::Conflict(format!(
                "component {}: {target} is not directly inside this core's {what} root {root}",
                c.id
            ))),
        }
    };
    match c.kind {
        Kind::Tool => within(core.slot_root("tools", None), "tools")?,
        Kind::Mcp => within(core.slot_root("mcp", Some("mcp")), "mcp")?,
        Kind::Schedule => within(core.slot_root("schedules", Some("schedules")), "schedules")?,
        _ => {}
    }
    if c.kind.is_manifest_file() && !(target.ends_with(".yaml") || target.ends_with(".yml")) {
        return Err(PlanError::Invalid(format!(
            "component {}: {target} must be a YAML file",
            c.id
        )));
    }
    Ok(target)
}

/// `agent/pipelines.yaml`, edited in memory as the core loader reads it
/// ([`PipelinesYaml`]).
struct Pipelines {
    before: Option<PipelinesYaml>,
    now: PipelinesYaml,
}

impl Pipelines {
    fn read(core: &CoreFiles<'_>) -> Result<Self, PlanError> {
        let before = match core.read(PIPELINES) {
            None => None,
            Some(b) => Some(serde_yaml_ng::from_slice::<PipelinesYaml>(&b).map_err(|e| {
                PlanError::Conflict(format!("{PIPELINES} of this core does not parse: {e}"))
            })?),
        };
        let now = before.clone().unwrap_or(PipelinesYaml {
            schema_version: 1,
            ..PipelinesYaml::default()
        });
        Ok(Self { before, now })
    }

    /// The phase's groups (`serial`, then `parallel` where it has one).
    fn groups(&mut self, kind: Kind) -> Vec<(&'static str, &mut Vec<String>)> {
        match kind {
            Kind::Bootstrap => vec![("serial", &mut self.now.bootstrap.serial)],
            Kind::Input => vec![
                ("serial", &mut self.now.input.serial),
                ("parallel", &mut self.now.input.parallel),
            ],
            Kind::Output => vec![
                ("serial", &mut self.now.output.serial),
                ("parallel", &mut self.now.output.parallel),
            ],
            _ => Vec::new(),
        }
    }

    fn insert(&mut self, kind: Kind, slot: &str, p: &recipe::Placement) -> Result<(), PlanError> {
        let mut groups = self.groups(kind);
        if groups
            .iter()
            .any(|(_, list)| list.iter().any(|s| s == slot))
        {
            return Err(PlanError::Conflict(format!(
                "the {} pipeline already holds slot {slot}",
                kind.as_str()
            )));
        }
        let Some((_, list)) = groups.iter_mut().find(|(g, _)| *g == p.group) else {
            return Err(PlanError::Invalid(format!(
                "the {} pipeline has no {} group",
                kind.as_str(),
                p.group
            )));
        };
        let at = match &p.anchor {
            Anchor::Append => list.len(),
            Anchor::Before(t) | Anchor::After(t) => {
                let i = list.iter().position(|s| s == t).ok_or_else(|| {
                    PlanError::Conflict(format!(
                        "the {} pipeline has no slot {t} to place {slot} next to",
                        kind.as_str()
                    ))
                })?;
                if matches!(p.anchor, Anchor::After(_)) {
                    i + 1
                } else {
                    i
                }
            }
        };
        list.insert(at, slot.to_owned());
        Ok(())
    }

    fn remove(&mut self, kind: Kind, slot: &str) {
        for (_, list) in self.groups(kind) {
            list.retain(|s| s != slot);
        }
    }

    /// The new file, if it changed.
    fn changed(&self) -> Result<Option<Vec<u8>>, PlanError> {
        let unchanged = match &self.before {
            Some(before) => before == &self.now,
            None => {
                self.now
                    == PipelinesYaml {
                        schema_version: 1,
                        ..PipelinesYaml::default()
                    }
            }
        };
        if unchanged {
            return Ok(None);
        }
        yaml(&to_value(&self.now)?).map(Some)
    }
}

/// Edits to one path collapse to the last (an upgrade removes then puts).
fn dedupe(edits: Vec<(String, FileEdit)>) -> Vec<(String, FileEdit)> {
    let mut out: Vec<(String, FileEdit)> = Vec::with_capacity(edits.len());
    for (path, edit) in edits {
        // A put under a folder removed earlier in the plan: keep the removal
        // first (the folder's other files go) and the put after it.
        if let Some(i) = out.iter().position(|(p, _)| p == &path) {
            out.remove(i);
        }
        out.push((path, edit));
    }
    out
}

fn files_hash(target: &str, files: &[(String, Vec<u8>)]) -> String {
    let mut sorted: Vec<&(String, Vec<u8>)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut h = Sha256::new();
    if sorted.len() == 1 && sorted[0].0 == target {
        h.update(&sorted[0].1);
    } else {
        for (path, bytes) in sorted {
            let rel = path.strip_prefix(&format!("{target}/")).unwrap_or(path);
            h.update(rel.as_bytes());
            h.update([0]);
            h.update(bytes);
            h.update([0]);
        }
    }
    hex(&h.finalize())
}

fn json_hash(v: &Value) -> String {
    hex(&Sha256::digest(v.to_string().as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn to_value<T: Serialize>(v: &T) -> Result<Value, PlanError> {
    serde_json::to_value(v).map_err(|e| PlanError::Io(e.to_string()))
}

fn yaml(v: &Value) -> Result<Vec<u8>, PlanError> {
    serde_yaml_ng::to_string(v)
        .map(String::into_bytes)
        .map_err(|e| PlanError::Io(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, body: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }

    #[test]
    fn a_slot_package_is_placed_in_its_pipeline_and_taken_out_again() {
        let repo_dir = tempfile::tempdir().unwrap();
        let core_dir = tempfile::tempdir().unwrap();
        let (r, c) = (repo_dir.path(), core_dir.path());
        write(r, "repository.yaml", "schema_version: 1\nid: t\n");
        write(
            r,
            "packages/style.yaml",
            "schema_version: 1\nid: style\ncomponents:\n- {id: s, kind: input, source: style, pipeline: {group: serial, after: base_input}}\n",
        );
        write(r, "input/style/slot.yaml", "entrypoint: module:run\n");
        write(r, "input/style/module.py", "def run(ctx): pass\n");
        write(c, "agent.yaml", "schema_version: 1\nagent: {id: a}\n");
        write(
            c,
            PIPELINES,
            "schema_version: 1\ninput:\n  serial: [base_input, last]\noutput:\n  serial: [base_output]\n",
        );
        let repo = Repository::load(r).unwrap();
        let recipe = repo.find("style").unwrap().recipe.clone().unwrap();
        let origin = Origin {
            alias: "t",
            kind: "path",
            reference: None,
            commit: None,
        };
        let files = CoreFiles { dir: c };
        let plan = install(&repo, &origin, &recipe, &Map::new(), &files, false, "now").unwrap();
        let put = |plan: &Plan, path: &str| -> PipelinesYaml {
            match plan.edits.iter().find(|(p, _)| p == path) {
                Some((_, FileEdit::Put(b))) => serde_yaml_ng::from_slice(b).unwrap(),
                other => panic!("{path}: {other:?}"),
            }
        };
        let after = put(&plan, PIPELINES);
        assert_eq!(after.input.serial, ["base_input", "style", "last"]);
        assert_eq!(after.output.serial, ["base_output"]);
        assert!(plan
            .edits
            .iter()
            .any(|(p, _)| p == "agent/input/style/module.py"));
        // Apply it, then plan the uninstall: the slot leaves the pipeline.
        for (path, e) in &plan.edits {
            if let FileEdit::Put(b) = e {
                write(c, path, std::str::from_utf8(b).unwrap());
            }
        }
        let plan = uninstall(&files, "style", false).unwrap();
        assert_eq!(put(&plan, PIPELINES).input.serial, ["base_input", "last"]);
        assert!(plan
            .edits
            .iter()
            .any(|(p, e)| p == "agent/input/style" && *e == FileEdit::DeleteTree));
        // A placement whose anchor is missing is refused.
        write(
            c,
            PIPELINES,
            "schema_version: 1\ninput:\n  serial: [other]\n",
        );
        write(c, REGISTRY, "schema_version: 1\ninstalled: []\n");
        std::fs::remove_dir_all(c.join("agent/input/style")).unwrap();
        let e = install(&repo, &origin, &recipe, &Map::new(), &files, false, "now").unwrap_err();
        assert!(e.to_string().contains("no slot base_input"), "{e}");
    }
}

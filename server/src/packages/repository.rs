//! One package repository on disk, read: its `repository.yaml`, and each
//! recipe under `packages/` with its components' sources checked (inside
//! the repository, no symlinks, a `tool.yaml`/`slot.yaml` with only the
//! keys the format allows, a `config.yaml` where the recipe configures
//! one). A broken recipe does not hide the others: it is listed with why.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::recipe::{self, Component, Kind, Recipe, RepositoryInfo};

/// Largest recipe or manifest file read.
const MAX_YAML_BYTES: u64 = 256 * 1024;
/// Most files one component may hold.
const MAX_COMPONENT_FILES: usize = 2_000;
/// Most bytes one component may hold.
pub const MAX_COMPONENT_BYTES: u64 = 16 * 1024 * 1024;

/// A recipe as listed: parsed and checked, or why not; and what this
/// server cannot install of it.
#[derive(Debug, Clone)]
pub struct Listed {
    /// The recipe's file name without `.yaml`.
    pub file: String,
    pub recipe: Result<Recipe, String>,
    /// Why this server cannot install it, though it is valid.
    pub unsupported: Option<String>,
}

impl Listed {
    /// The package id (the recipe's, or the file's when it does not parse).
    pub fn id(&self) -> &str {
        match &self.recipe {
            Ok(r) => &r.id,
            Err(_) => &self.file,
        }
    }
}

/// A repository, read.
#[derive(Debug, Clone)]
pub struct Repository {
    pub root: PathBuf,
    pub info: RepositoryInfo,
    pub packages: Vec<Listed>,
}

impl Repository {
    /// Read the repository at `root`.
    pub fn load(root: &Path) -> Result<Repository, String> {
        let info = recipe::parse_repository(&read_yaml(&root.join("repository.yaml"))?)?;
        let mut packages = Vec::new();
        let dir = root.join("packages");
        let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
            Ok(entries) => entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(format!("packages/: {e}")),
        };
        files.sort();
        let mut seen = std::collections::BTreeSet::new();
        for path in files {
            let file = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_owned();
            let parsed = read_yaml(&path)
                .and_then(|text| recipe::parse_recipe(&text, &file))
                .and_then(|r| {
                    if !seen.insert(r.id.clone()) {
                        return Err(format!("duplicate package id: {}", r.id));
                    }
                    for c in &r.components {
                        check_component(root, c).map_err(|e| format!("component {}: {e}", c.id))?;
                    }
                    Ok(r)
                })
                .map_err(|e| format!("packages/{file}.yaml: {e}"));
            let unsupported = parsed.as_ref().ok().and_then(unsupported);
            packages.push(Listed {
                file,
                recipe: parsed,
                unsupported,
            });
        }
        Ok(Repository {
            root: root.to_path_buf(),
            info,
            packages,
        })
    }

    pub fn find(&self, id: &str) -> Option<&Listed> {
        self.packages.iter().find(|p| p.id() == id)
    }
}

/// What of a valid recipe this server does not install.
fn unsupported(r: &Recipe) -> Option<String> {
    r.components
        .iter()
        .find(|c| c.kind == Kind::Core)
        .map(|c| {
            format!(
                "component {} creates a package-owned core (`kind: core`), which this server does not install; create the core through the core API instead",
                c.id
            )
        })
}

/// Where a component's source is, checked: inside the repository, no
/// symlink on the way or inside.
pub fn source_path(root: &Path, c: &Component) -> Result<PathBuf, String> {
    let rel = Path::new(c.kind.as_str()).join(&c.source);
    let mut at = root.to_path_buf();
    for part in rel.components() {
        match part {
            std::path::Component::Normal(p) => at.push(p),
            _ => {
                return Err(format!(
                    "source {:?} must stay inside the repository",
                    c.source
                ))
            }
        }
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!("source {} cannot be a symlink", rel.display()))
            }
            Ok(_) => {}
            Err(_) => return Err(format!("source not found: {}", rel.display())),
        }
    }
    Ok(at)
}

fn check_component(root: &Path, c: &Component) -> Result<(), String> {
    let path = source_path(root, c)?;
    let meta = std::fs::symlink_metadata(&path).map_err(|e| e.to_string())?;
    if c.kind.is_manifest_file() {
        let yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
        if !meta.is_file() || !yaml {
            return Err(format!(
                "a {} component's source must be a YAML file",
                c.kind.as_str()
            ));
        }
        return Ok(());
    }
    if !meta.is_dir() {
        return Err(format!(
            "a {} component's source must be a folder",
            c.kind.as_str()
        ));
    }
    // No symlink inside, and within the size bounds.
    files_under(&path)?;
    if c.kind.is_pipeline() {
        check_manifest(&path.join("slot.yaml"), SLOT_KEYS, "slot.yaml")?;
    }
    if c.kind == Kind::Tool {
        check_manifest(&path.join("tool.yaml"), TOOL_KEYS, "tool.yaml")?;
    }
    if (c.config.is_some() || !c.config_when.is_empty()) && c.kind != Kind::Core {
        let config = path.join("config.yaml");
        if !config.is_file() {
            return Err("its config needs the source's config.yaml".into());
        }
        match serde_yaml_ng::from_str::<Value>(&read_yaml(&config)?) {
            Ok(Value::Object(_)) => {}
            _ => return Err("config.yaml must be a YAML mapping".into()),
        }
    }
    Ok(())
}

const TOOL_KEYS: &[&str] = &[
    "entrypoint",
    "description",
    "input_schema",
    "risk",
    "capability",
    "approval_policy",
    "display_policy",
    "model_output_policy",
    "capabilities",
];
const SLOT_KEYS: &[&str] = &[
    "entrypoint",
    "description",
    "input_schema",
    "capabilities",
    "timeout_seconds",
    "failure_policy",
    "default_placement",
    "history_policy",
];

fn check_manifest(path: &Path, allowed: &[&str], name: &str) -> Result<(), String> {
    if !path.is_file() {
        return Err(format!("the source needs a {name}"));
    }
    let raw = match serde_yaml_ng::from_str::<Value>(&read_yaml(path)?) {
        Ok(Value::Object(m)) => m,
        Ok(_) => return Err(format!("{name} must be a YAML mapping")),
        Err(e) => return Err(format!("{name}: {e}")),
    };
    let unknown: Vec<&String> = raw
        .keys()
        .filter(|k| !allowed.contains(&k.as_str()))
        .collect();
    if !unknown.is_empty() {
        return Err(format!("invalid {name} key(s): {unknown:?}"));
    }
    Ok(())
}

/// Every regular file under `dir` (relative, `/`-separated, sorted), with
/// Python caches left out; a symlink anywhere is refused.
pub fn files_under(dir: &Path) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        for entry in entries.flatten() {
            let kind = entry.file_type().map_err(|e| e.to_string())?;
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if kind.is_symlink() {
                return Err(format!(
                    "the source cannot contain symlinks: {}",
                    path.strip_prefix(dir).unwrap_or(&path).display()
                ));
            }
            if kind.is_dir() {
                if name != "__pycache__" {
                    stack.push(path);
                }
                continue;
            }
            if !kind.is_file() || name.ends_with(".pyc") || name.ends_with(".pyo") {
                continue;
            }
            let rel = path
                .strip_prefix(dir)
                .map_err(|e| e.to_string())?
                .to_str()
                .ok_or("a file name is not UTF-8")?
                .to_owned();
            total += entry.metadata().map(|m| m.len()).unwrap_or(0);
            out.push(rel);
            if out.len() > MAX_COMPONENT_FILES || total > MAX_COMPONENT_BYTES {
                return Err(format!(
                    "the source holds more than {MAX_COMPONENT_FILES} files or {MAX_COMPONENT_BYTES} bytes"
                ));
            }
        }
    }
    out.sort();
    Ok(out)
}

fn read_yaml(path: &Path) -> Result<String, String> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let meta = std::fs::symlink_metadata(path).map_err(|_| format!("{name} not found"))?;
    if meta.file_type().is_symlink() {
        return Err(format!("{name} cannot be a symlink"));
    }
    if meta.len() > MAX_YAML_BYTES {
        return Err(format!("{name} is larger than {MAX_YAML_BYTES} bytes"));
    }
    std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))
}

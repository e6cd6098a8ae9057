//! A package repository's `repository.yaml` and its recipes
//! (`packages/<id>.yaml`), in the Python project's format, parsed and
//! checked without touching the disk; and a recipe's options resolved
//! against what the installer was given.
//!
//! The rules are the original's (`demiurge/packages.py`): schema version 1,
//! the nine component kinds, pipeline placements only for slot kinds,
//! removed v1 fields refused, `when`/`config_when` naming known options.
//! One host extension: `requires`, the ids of packages of the same
//! repository that must be installed in the core first.

use serde_json::{Map, Value};

#[cfg(test)]
#[path = "recipe_tests.rs"]
mod tests;

/// What a component installs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Lib,
    Bootstrap,
    Input,
    Output,
    Tool,
    Skill,
    Core,
    Mcp,
    Schedule,
}

impl Kind {
    pub const ALL: [Kind; 9] = [
        Kind::Lib,
        Kind::Bootstrap,
        Kind::Input,
        Kind::Output,
        Kind::Tool,
        Kind::Skill,
        Kind::Core,
        Kind::Mcp,
        Kind::Schedule,
    ];

    pub fn parse(s: &str) -> Option<Kind> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Lib => "lib",
            Kind::Bootstrap => "bootstrap",
            Kind::Input => "input",
            Kind::Output => "output",
            Kind::Tool => "tool",
            Kind::Skill => "skill",
            Kind::Core => "core",
            Kind::Mcp => "mcp",
            Kind::Schedule => "schedule",
        }
    }

    /// Where a directory component lands in the core by default.
    pub fn default_root(self) -> Option<&'static str> {
        match self {
            Kind::Bootstrap => Some("agent/bootstrap"),
            Kind::Input => Some("agent/input"),
            Kind::Output => Some("agent/output"),
            Kind::Tool => Some("agent/tools"),
            Kind::Skill => Some("agent/skills"),
            Kind::Lib => Some("agent/lib"),
            Kind::Core | Kind::Mcp | Kind::Schedule => None,
        }
    }

    /// Slot kinds, placed in `pipelines.yaml`.
    pub fn is_pipeline(self) -> bool {
        matches!(self, Kind::Bootstrap | Kind::Input | Kind::Output)
    }

    /// Kinds that install one YAML declaration file.
    pub fn is_manifest_file(self) -> bool {
        matches!(self, Kind::Mcp | Kind::Schedule)
    }
}

/// `repository.yaml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepositoryInfo {
    pub id: String,
    pub name: String,
    pub summary: String,
}

/// An option's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionType {
    String,
    Bool,
    Choice,
    Path,
    Secret,
}

impl OptionType {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "string" => Self::String,
            "bool" => Self::Bool,
            "choice" => Self::Choice,
            "path" => Self::Path,
            "secret" => Self::Secret,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Bool => "bool",
            Self::Choice => "choice",
            Self::Path => "path",
            Self::Secret => "secret",
        }
    }
}

/// One of a recipe's `options`.
#[derive(Debug, Clone, PartialEq)]
pub struct PackageOption {
    pub id: String,
    pub kind: OptionType,
    pub prompt: String,
    pub description: String,
    /// `Some` when the recipe gives a `default` (which may be `null`).
    pub default: Option<Value>,
    pub required: bool,
    pub choices: Vec<String>,
}

impl PackageOption {
    pub fn is_secret(&self) -> bool {
        self.kind == OptionType::Secret
    }
}

/// Where a slot component goes in its phase's pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// `serial` or `parallel` (bootstrap: serial only).
    pub group: String,
    pub anchor: Anchor,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Anchor {
    Append,
    Before(String),
    After(String),
}

/// One of a recipe's `components`.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    pub id: String,
    pub kind: Kind,
    /// Relative to the repository's `<kind>/` folder.
    pub source: String,
    pub target: Option<String>,
    pub target_core_id: Option<String>,
    pub pipeline: Option<Placement>,
    pub config: Option<Map<String, Value>>,
    /// Installed only when every option named here has the given value.
    pub when: Map<String, Value>,
    /// Config overlays applied when their `when` matches.
    pub config_when: Vec<(Map<String, Value>, Map<String, Value>)>,
}

/// A parsed, checked recipe.
#[derive(Debug, Clone, PartialEq)]
pub struct Recipe {
    pub id: String,
    pub name: String,
    pub summary: String,
    pub tags: Vec<String>,
    pub options: Vec<PackageOption>,
    pub capabilities: Vec<String>,
    /// Things a person must set up by hand (warnings only).
    pub manual_dependencies: Vec<String>,
    /// Host extension: packages of the same repository installed first.
    pub requires: Vec<String>,
    /// In install order (kind, then recipe order).
    pub components: Vec<Component>,
}

/// Parse `repository.yaml`.
pub fn parse_repository(text: &str) -> Result<RepositoryInfo, String> {
    let raw = mapping(text, "repository.yaml")?;
    if raw.get("schema_version").and_then(Value::as_i64) != Some(1) {
        return Err("repository.yaml: schema_version must be 1".into());
    }
    let id = required_str(&raw, "id", "repository.yaml")?;
    Ok(RepositoryInfo {
        name: opt_str(&raw, "name").unwrap_or_else(|| id.clone()),
        summary: opt_str(&raw, "summary").unwrap_or_default(),
        id,
    })
}

/// Fields of v0 recipes the format no longer accepts.
const REMOVED_FIELDS: &[&str] = &["slots", "tools", "files", "config_defaults", "metadata"];

/// Parse one recipe; `file_stem` is its file name without `.yaml`.
pub fn parse_recipe(text: &str, file_stem: &str) -> Result<Recipe, String> {
    let raw = mapping(text, file_stem)?;
    if raw.get("schema_version").and_then(Value::as_i64) != Some(1) {
        return Err("schema_version must be 1".into());
    }
    let removed: Vec<&str> = REMOVED_FIELDS
        .iter()
        .copied()
        .filter(|k| raw.contains_key(*k))
        .collect();
    if !removed.is_empty() {
        return Err(format!("uses removed v1 field(s): {}", removed.join(", ")));
    }
    let id = required_str(&raw, "id", "recipe")?;
    if !valid_id(&id) {
        return Err(format!(
            "package id {id:?} must be letters, digits, `_`, `-` or `.`"
        ));
    }
    let tags = string_list(&raw, "tags")?;
    let capabilities = string_list(&raw, "capabilities")?;
    let manual_dependencies = string_list(&raw, "manual_dependencies")?;
    let requires = string_list(&raw, "requires")?;
    let options = parse_options(raw.get("options"))?;
    let mut components = match raw.get("components") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|c| match c {
                Value::Object(m) => parse_component(m),
                _ => Err("components must be a list of objects".to_owned()),
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err("components must be a list of objects".into()),
    };
    let mut seen = std::collections::BTreeSet::new();
    for c in &components {
        if !seen.insert(c.id.as_str()) {
            return Err(format!("duplicate component id: {}", c.id));
        }
        let known = |id: &String| options.iter().any(|o| &o.id == id);
        for id in c.when.keys() {
            if !known(id) {
                return Err(format!(
                    "component {} references unknown option: {id}",
                    c.id
                ));
            }
        }
        for (when, _) in &c.config_when {
            for id in when.keys() {
                if !known(id) {
                    return Err(format!(
                        "component {} config_when references unknown option: {id}",
                        c.id
                    ));
                }
            }
        }
    }
    // Install order: libraries first, declarations last; recipe order within a kind.
    components.sort_by_key(|c| c.kind);
    Ok(Recipe {
        name: opt_str(&raw, "name").unwrap_or_else(|| id.clone()),
        summary: opt_str(&raw, "summary").unwrap_or_default(),
        id,
        tags,
        options,
        capabilities,
        manual_dependencies,
        requires,
        components,
    })
}

fn parse_component(raw: &Map<String, Value>) -> Result<Component, String> {
    let kind_text = opt_str(raw, "kind").unwrap_or_default();
    let kind = Kind::parse(kind_text.trim())
        .ok_or_else(|| format!("component has invalid kind: {kind_text:?}"))?;
    let id = opt_str(raw, "id").unwrap_or_default().trim().to_owned();
    let source = opt_str(raw, "source").unwrap_or_default().trim().to_owned();
    if id.is_empty() || source.is_empty() {
        return Err("a component needs an id and a source".into());
    }
    if raw.contains_key("metadata") || raw.contains_key("phase") {
        return Err(format!(
            "component {id} uses removed v1 metadata/phase fields"
        ));
    }
    if source.starts_with('/') || source.split('/').any(|p| p == "..") {
        return Err(format!(
            "component {id}: source must stay inside the repository"
        ));
    }
    let pipeline = match (raw.get("pipeline"), kind.is_pipeline()) {
        (Some(Value::Object(p)), true) => Some(parse_placement(kind, p, &id)?),
        (_, true) => {
            return Err(format!(
                "component {id}: pipeline is required and must be a mapping"
            ))
        }
        (None | Some(Value::Null), false) => None,
        (Some(_), false) => {
            return Err(format!(
                "component {id}: pipeline is only valid for bootstrap/input/output"
            ))
        }
    };
    let config = match raw.get("config") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m.clone()),
        Some(_) => return Err(format!("component {id}: config must be a mapping")),
    };
    let when = condition(raw.get("when"), &id)?;
    let config_when = match raw.get("config_when") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                let Value::Object(m) = item else {
                    return Err(format!(
                        "component {id}: config_when must be a list of objects"
                    ));
                };
                let Some(Value::Object(config)) = m.get("config") else {
                    return Err(format!(
                        "component {id}: config_when entries require a config mapping"
                    ));
                };
                Ok((condition(m.get("when"), &id)?, config.clone()))
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => {
            return Err(format!(
                "component {id}: config_when must be a list of objects"
            ))
        }
    };
    if kind == Kind::Core && (config.is_some() || !config_when.is_empty()) {
        return Err(format!(
            "component {id}: config is not valid for core components"
        ));
    }
    Ok(Component {
        target: opt_str(raw, "target"),
        target_core_id: opt_str(raw, "target_core_id"),
        id,
        kind,
        source,
        pipeline,
        config,
        when,
        config_when,
    })
}

fn parse_placement(kind: Kind, p: &Map<String, Value>, id: &str) -> Result<Placement, String> {
    let group = p.get("group").and_then(Value::as_str).unwrap_or_default();
    let groups: &[&str] = if kind == Kind::Bootstrap {
        &["serial"]
    } else {
        &["serial", "parallel"]
    };
    if !groups.contains(&group) {
        return Err(format!(
            "component {id}: pipeline.group must be one of {}",
            groups.join(", ")
        ));
    }
    let unknown: Vec<&String> = p
        .keys()
        .filter(|k| !["group", "before", "after", "append"].contains(&k.as_str()))
        .collect();
    if !unknown.is_empty() {
        return Err(format!(
            "component {id}: pipeline has invalid key(s): {unknown:?}"
        ));
    }
    let text = |k: &str| {
        p.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let append = p.get("append").and_then(Value::as_bool).unwrap_or(false);
    let anchor = match (text("before"), text("after"), append) {
        (Some(b), None, false) => Anchor::Before(b),
        (None, Some(a), false) => Anchor::After(a),
        (None, None, true) => Anchor::Append,
        _ => {
            return Err(format!(
                "component {id}: pipeline requires exactly one of before, after, or append"
            ))
        }
    };
    Ok(Placement {
        group: group.to_owned(),
        anchor,
    })
}

fn parse_options(raw: Option<&Value>) -> Result<Vec<PackageOption>, String> {
    let items = match raw {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err("options must be a list of objects".into()),
    };
    let mut out: Vec<PackageOption> = Vec::new();
    for item in items {
        let Value::Object(m) = item else {
            return Err("options must be a list of objects".into());
        };
        let id = opt_str(m, "id").unwrap_or_default().trim().to_owned();
        if id.is_empty() {
            return Err("an option has no id".into());
        }
        if out.iter().any(|o| o.id == id) {
            return Err(format!("duplicate option id: {id}"));
        }
        let type_text = opt_str(m, "type").unwrap_or_else(|| "string".into());
        let mut kind = OptionType::parse(type_text.trim())
            .ok_or_else(|| format!("option {id} has invalid type: {type_text}"))?;
        if m.get("secret").and_then(Value::as_bool) == Some(true) {
            kind = OptionType::Secret;
        }
        let choices = match m.get("choices") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(cs)) => cs
                .iter()
                .map(|c| match c {
                    Value::String(s) => Ok(s.clone()),
                    Value::Object(o) => o
                        .get("value")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .filter(|v| !v.trim().is_empty())
                        .ok_or_else(|| format!("option {id}: a choice requires a value")),
                    _ => Err(format!("option {id}: choices must be strings or objects")),
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => return Err(format!("option {id}: choices must be a list")),
        };
        if kind == OptionType::Choice && choices.is_empty() {
            return Err(format!("option {id}: choice options require choices"));
        }
        let default = m.get("default").cloned();
        if let (OptionType::Choice, Some(Value::String(d))) = (kind, &default) {
            if !d.is_empty() && !choices.contains(d) {
                return Err(format!("option {id}: default is not in choices"));
            }
        }
        out.push(PackageOption {
            prompt: opt_str(m, "prompt").unwrap_or_else(|| id.clone()),
            description: opt_str(m, "description").unwrap_or_default(),
            required: m.get("required").and_then(Value::as_bool).unwrap_or(false),
            id,
            kind,
            default,
            choices,
        });
    }
    Ok(out)
}

/// Resolve a recipe's options from the installer's answers: unknown
/// answers refused, defaults filled, values normalized by type, required
/// ones present. Secret options are never answered here (their values
/// live in the tenant's credential store); they resolve to `null`.
pub fn resolve_options(
    recipe: &Recipe,
    answers: &Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let unknown: Vec<&String> = answers
        .keys()
        .filter(|k| !recipe.options.iter().any(|o| &o.id == *k))
        .collect();
    if !unknown.is_empty() {
        return Err(format!(
            "unknown option(s) for package {}: {}",
            recipe.id,
            unknown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let mut out = Map::new();
    for o in &recipe.options {
        if o.is_secret() {
            if answers.get(&o.id).is_some_and(|v| !v.is_null()) {
                return Err(format!(
                    "option {} is a secret: set it in the tenant's credentials, not as an option",
                    o.id
                ));
            }
            out.insert(o.id.clone(), Value::Null);
            continue;
        }
        let value = answers
            .get(&o.id)
            .cloned()
            .or_else(|| o.default.clone())
            .unwrap_or(Value::Null);
        let value = match (o.kind, value) {
            (_, Value::Null) => Value::Null,
            (OptionType::Bool, Value::Bool(b)) => Value::Bool(b),
            (OptionType::Bool, Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "yes" | "on" | "1" => Value::Bool(true),
                "false" | "no" | "off" | "0" | "" => Value::Bool(false),
                _ => return Err(format!("option {} must be true or false", o.id)),
            },
            (OptionType::Bool, _) => return Err(format!("option {} must be true or false", o.id)),
            (OptionType::Choice, Value::String(s)) if s.is_empty() => Value::Null,
            (OptionType::Choice, Value::String(s)) => {
                if !o.choices.contains(&s) {
                    return Err(format!(
                        "option {} must be one of: {}",
                        o.id,
                        o.choices.join(", ")
                    ));
                }
                Value::String(s)
            }
            (OptionType::String | OptionType::Path, Value::String(s)) => Value::String(s),
            (OptionType::String | OptionType::Path, v @ (Value::Number(_) | Value::Bool(_))) => {
                Value::String(v.to_string())
            }
            (_, _) => return Err(format!("option {} has a value of the wrong type", o.id)),
        };
        let missing = match &value {
            Value::Null => true,
            Value::String(s) => s.trim().is_empty(),
            _ => false,
        };
        if o.required && missing {
            return Err(format!("package {} requires option {:?}", recipe.id, o.id));
        }
        out.insert(o.id.clone(), value);
    }
    Ok(out)
}

/// Whether every option named in `when` has the given value.
pub fn condition_matches(when: &Map<String, Value>, options: &Map<String, Value>) -> bool {
    when.iter()
        .all(|(k, want)| options.get(k).unwrap_or(&Value::Null) == want)
}

/// A component's config with `${options.<id>}` filled in and its matching
/// `config_when` overlays merged; `None` when it has none.
pub fn render_config(c: &Component, options: &Map<String, Value>) -> Option<Map<String, Value>> {
    let mut out = c.config.clone();
    for (when, overlay) in &c.config_when {
        if condition_matches(when, options) {
            let base = out.get_or_insert_with(Map::new);
            merge(base, overlay);
        }
    }
    out.map(|m| match fill(&Value::Object(m), options) {
        Value::Object(m) => m,
        _ => Map::new(),
    })
}

/// Deep-merge `overlay` into `base` (mappings merge; anything else replaces).
pub fn merge(base: &mut Map<String, Value>, overlay: &Map<String, Value>) {
    for (k, v) in overlay {
        match (base.get_mut(k), v) {
            (Some(Value::Object(b)), Value::Object(o)) => merge(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

/// Replace option references: a string that is exactly `${options.x}`
/// becomes the option's value (typed); references inside longer text are
/// replaced by the value's text.
fn fill(v: &Value, options: &Map<String, Value>) -> Value {
    match v {
        Value::String(s) => {
            if let Some(id) = s
                .strip_prefix("${options.")
                .and_then(|r| r.strip_suffix('}'))
                .filter(|id| !id.contains('}'))
            {
                return options.get(id).cloned().unwrap_or(Value::Null);
            }
            let mut out = String::new();
            let mut rest = s.as_str();
            while let Some(at) = rest.find("${options.") {
                out.push_str(&rest[..at]);
                let after = &rest[at + "${options.".len()..];
                match after.find('}') {
                    Some(end) => {
                        match options.get(&after[..end]) {
                            Some(Value::String(t)) => out.push_str(t),
                            Some(Value::Null) | None => {}
                            Some(other) => out.push_str(&other.to_string()),
                        }
                        rest = &after[end + 1..];
                    }
                    None => {
                        out.push_str(&rest[at..]);
                        rest = "";
                    }
                }
            }
            out.push_str(rest);
            Value::String(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|i| fill(i, options)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), fill(v, options)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Ids of packages, repositories and components: what a file name may hold.
pub fn valid_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn mapping(text: &str, what: &str) -> Result<Map<String, Value>, String> {
    match serde_yaml_ng::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(format!("{what}: must be a YAML mapping")),
        Err(e) => Err(format!("{what}: {e}")),
    }
}

fn required_str(m: &Map<String, Value>, key: &str, what: &str) -> Result<String, String> {
    opt_str(m, key)
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("{what}: `{key}` is required"))
}

fn opt_str(m: &Map<String, Value>, key: &str) -> Option<String> {
    match m.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn string_list(m: &Map<String, Value>, key: &str) -> Result<Vec<String>, String> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("{key} must be a list of strings"))
            })
            .collect(),
        Some(_) => Err(format!("{key} must be a list of strings")),
    }
}

fn condition(raw: Option<&Value>, id: &str) -> Result<Map<String, Value>, String> {
    match raw {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) if m.keys().all(|k| !k.trim().is_empty()) => Ok(m.clone()),
        Some(_) => Err(format!(
            "component {id}: when must be a mapping of option ids"
        )),
    }
}

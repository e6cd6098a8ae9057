//! `skills_list` and `skill_view`: read-only views of the core's skills
//! (`<id>.md` or `<id>/SKILL.md` with optional `references/`, `templates/`,
//! `scripts/`, `assets/` files). Only files the core declares are readable.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};

use super::contract::{Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};

const LINKED_DIRS: &[&str] = &["references", "templates", "scripts", "assets"];
/// Largest skill file shown.
const MAX_BYTES: u64 = 512 * 1024;

struct Meta {
    name: String,
    description: String,
    category: Option<String>,
}

/// `---` YAML front matter at the top of a skill file, if any.
fn front_matter(text: &str) -> Meta {
    let mut meta = Meta {
        name: String::new(),
        description: String::new(),
        category: None,
    };
    let Some(rest) = text.strip_prefix("---") else {
        return meta;
    };
    let Some(end) = rest.find("\n---") else {
        return meta;
    };
    if let Ok(serde_yaml_ng::Value::Mapping(m)) =
        serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&rest[..end])
    {
        let get = |k: &str| m.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        meta.name = get("name").unwrap_or_default();
        meta.description = get("description").unwrap_or_default();
        meta.category = get("category");
    }
    meta
}

/// A packaged skill's supporting files (regular files only, no symlinks).
fn linked_files(md: &Path) -> Vec<String> {
    let Some(dir) = md.parent() else {
        return Vec::new();
    };
    if md.file_name().and_then(|n| n.to_str()) != Some("SKILL.md") {
        return Vec::new();
    }
    let mut out = Vec::new();
    for sub in LINKED_DIRS {
        let mut stack = vec![dir.join(sub)];
        while let Some(d) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                let p = e.path();
                let Ok(m) = std::fs::symlink_metadata(&p) else {
                    continue;
                };
                if m.is_dir() {
                    stack.push(p);
                } else if m.is_file() {
                    if let Ok(rel) = p.strip_prefix(dir) {
                        out.push(rel.display().to_string());
                    }
                }
            }
        }
    }
    out.sort();
    out
}

fn read(path: &Path) -> Option<String> {
    let m = std::fs::symlink_metadata(path).ok()?;
    (m.is_file() && m.len() <= MAX_BYTES).then(|| std::fs::read_to_string(path).ok())?
}

struct Skill {
    id: String,
    md: PathBuf,
    meta: Meta,
    text: String,
}

fn load(skills: &[(String, PathBuf)]) -> Vec<Skill> {
    skills
        .iter()
        .filter_map(|(id, md)| {
            let text = read(md)?;
            Some(Skill {
                id: id.clone(),
                md: md.clone(),
                meta: front_matter(&text),
                text,
            })
        })
        .collect()
}

fn category(s: &Skill) -> String {
    s.meta.category.clone().unwrap_or_else(|| "general".into())
}

/// `skills_list`.
pub struct SkillsList;

#[derive(Debug, Deserialize)]
pub struct ListArgs {
    #[serde(default)]
    pub category: Option<String>,
}

impl Tool for SkillsList {
    type Args = ListArgs;
    /// The wanted category, if any.
    type Prepared = Option<String>;

    fn plan(_: &ToolEnv<'_>, args: ListArgs) -> Plan<Option<String>> {
        let wanted = args
            .category
            .as_deref()
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        Plan::run(Gate::PerCall, wanted)
    }

    async fn execute(env: &ToolEnv<'_>, wanted: Option<String>) -> ToolOutcome {
        skills_list(env, wanted).await
    }
}

/// `skill_view`.
pub struct SkillView;

#[derive(Debug, Deserialize)]
pub struct ViewArgs {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub file_path: Option<String>,
}

/// The skill (id or name) and, optionally, one of its linked files.
#[derive(Debug)]
pub struct Wanted {
    pub name: String,
    pub file_path: Option<String>,
}

impl Tool for SkillView {
    type Args = ViewArgs;
    type Prepared = Wanted;

    fn plan(_: &ToolEnv<'_>, args: ViewArgs) -> Plan<Wanted> {
        let name = args.name.trim().to_owned();
        if name.is_empty() {
            return Plan::Done(ToolOutcome::error(ToolStatus::Invalid, "name is required"));
        }
        let file_path = args
            .file_path
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_owned);
        Plan::run(Gate::PerCall, Wanted { name, file_path })
    }

    async fn execute(env: &ToolEnv<'_>, wanted: Wanted) -> ToolOutcome {
        skill_view(env, wanted).await
    }
}

async fn skills_list(env: &ToolEnv<'_>, wanted: Option<String>) -> ToolOutcome {
    let skills = env.ctx.skills.clone();
    let Ok(all) = tokio::task::spawn_blocking(move || load(&skills)).await else {
        return ToolOutcome::error(ToolStatus::Failed, "could not read skills");
    };
    let mut categories: Vec<String> = all.iter().map(category).collect();
    categories.sort();
    categories.dedup();
    let mut listed: Vec<&Skill> = all
        .iter()
        .filter(|s| wanted.as_ref().is_none_or(|c| *c == category(s)))
        .collect();
    listed.sort_by_key(|s| (category(s), s.id.clone()));
    let items: Vec<Value> = listed
        .iter()
        .map(|s| {
            json!({"name": if s.meta.name.is_empty() { s.id.clone() } else { s.meta.name.clone() },
                "skill_id": s.id, "description": s.meta.description, "category": category(s),
                "packaged": s.md.file_name().and_then(|n| n.to_str()) == Some("SKILL.md"),
                "linked_files": linked_files(&s.md)})
        })
        .collect();
    ToolOutcome::ok_json(
        json!({"success": true, "skills": items, "categories": categories, "count": items.len(),
        "hint": "use skill_view(name) to read one"}),
    )
}

async fn skill_view(env: &ToolEnv<'_>, wanted: Wanted) -> ToolOutcome {
    let Wanted { name, file_path } = wanted;
    let skills = env.ctx.skills.clone();
    let Ok(all) = tokio::task::spawn_blocking(move || load(&skills)).await else {
        return ToolOutcome::error(ToolStatus::Failed, "could not read skills");
    };
    let Some(skill) = all.iter().find(|s| s.id == name || s.meta.name == name) else {
        let known: Vec<&str> = all.iter().map(|s| s.id.as_str()).collect();
        return ToolOutcome::error(
            ToolStatus::NotFound,
            format!(
                "skill not found: {name}. Available skills: {}",
                known.join(", ")
            ),
        );
    };
    let linked = linked_files(&skill.md);
    match file_path {
        None => ToolOutcome::ok_text(
            format!(
                "<skill name=\"{}\" id=\"{}\">\n{}\n</skill>\nlinked files: {}",
                skill.meta.name,
                skill.id,
                skill.text,
                if linked.is_empty() {
                    "(none)".to_owned()
                } else {
                    linked.join(", ")
                }
            ),
            json!({"skill_id": skill.id, "name": skill.meta.name, "category": category(skill), "linked_files": linked}),
        ),
        Some(fp) => {
            // Only a declared linked file; never a path the model builds.
            if !linked.contains(&fp) {
                return ToolOutcome::error(
                    ToolStatus::NotFound,
                    format!("{fp} is not a file of skill {}", skill.id),
                );
            }
            let Some(dir) = skill.md.parent() else {
                return ToolOutcome::error(ToolStatus::NotFound, "skill has no folder");
            };
            match read(&dir.join(&fp)) {
                Some(text) => ToolOutcome::ok_text(
                    format!(
                        "<skill_file name=\"{}\" file_path=\"{fp}\">\n{text}\n</skill_file>",
                        skill.id
                    ),
                    json!({"skill_id": skill.id, "file_path": fp}),
                ),
                None => ToolOutcome::error(ToolStatus::Failed, format!("cannot read {fp}")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::front_matter;

    #[test]
    fn front_matter_is_optional_and_tolerant() {
        let m =
            front_matter("---\nname: Deploy\ndescription: How we deploy\ncategory: ops\n---\nbody");
        assert_eq!(
            (
                m.name.as_str(),
                m.description.as_str(),
                m.category.as_deref()
            ),
            ("Deploy", "How we deploy", Some("ops"))
        );
        let m = front_matter("no front matter");
        assert!(m.name.is_empty() && m.category.is_none());
        let m = front_matter("---\n: [broken\n---\nx");
        assert!(m.name.is_empty());
    }
}

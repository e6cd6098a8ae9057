//! `skills_list` and `skill_view`: read-only views of the core's skills
//! (`<id>.md` or `<id>/SKILL.md` with optional `references/`, `templates/`,
//! `scripts/`, `assets/` files). Only files the core declares are readable.
//! The skills and their text are those of the turn's core revision (read
//! once per revision), so a `skill_manage` change shows from the next turn;
//! a support file is read when it is viewed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};

use super::contract::{Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};
use crate::core::skill_doc::{CoreRef, SkillDoc};

const LINKED_DIRS: &[&str] = &["references", "templates", "scripts", "assets"];
/// Largest skill file shown.
const MAX_BYTES: u64 = crate::core::skill_doc::MAX_SKILL_BYTES;

struct Meta {
    name: String,
    description: String,
    category: Option<String>,
}

/// `---` YAML front matter at the top of a skill file, if any; the
/// description falls back to the body's first line (as in the original).
fn front_matter(text: &str) -> Meta {
    let mut meta = Meta {
        name: String::new(),
        description: String::new(),
        category: None,
    };
    let mut body = text;
    if let Some(rest) = text.strip_prefix("---") {
        if let Some(end) = rest.find("\n---") {
            if let Ok(serde_yaml_ng::Value::Mapping(m)) =
                serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&rest[..end])
            {
                let get = |k: &str| {
                    m.get(k)
                        .and_then(|v| v.as_str())
                        .map(|s| s.trim().to_owned())
                        .filter(|s| !s.is_empty())
                };
                meta.name = get("name").unwrap_or_default();
                meta.description = get("description").unwrap_or_default();
                meta.category = get("category");
            }
            body = &rest[end + 4..];
        }
    }
    if meta.description.is_empty() {
        meta.description = body
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && *l != "---" && *l != "...")
            .map(|l| l.trim_start_matches('#').trim().to_owned())
            .unwrap_or_default();
    }
    meta
}

/// A packaged skill's supporting files (regular files only, no symlinks),
/// by folder: `{"references": ["references/a.md", …], …}`.
fn linked_files(md: &Path) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let Some(dir) = md.parent() else {
        return out;
    };
    if md.file_name().and_then(|n| n.to_str()) != Some("SKILL.md") {
        return out;
    }
    for sub in LINKED_DIRS {
        let mut files = Vec::new();
        let mut stack = vec![dir.join(sub)];
        while let Some(d) = stack.pop() {
            if std::fs::symlink_metadata(&d).map_or(true, |m| !m.is_dir()) {
                continue;
            }
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
                        files.push(rel.display().to_string());
                    }
                }
            }
        }
        if !files.is_empty() {
            files.sort();
            out.insert((*sub).to_owned(), files);
        }
    }
    out
}

fn flat(linked: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    linked.values().flatten().cloned().collect()
}

fn read(path: &Path) -> Option<String> {
    let m = std::fs::symlink_metadata(path).ok()?;
    (m.is_file() && m.len() <= MAX_BYTES).then(|| std::fs::read_to_string(path).ok())?
}

struct Skill {
    id: String,
    md: PathBuf,
    /// The markdown file relative to the core folder.
    path: String,
    meta: Meta,
    text: String,
    /// The folder between the skill root and a packaged skill's folder
    /// (`ops` for `<root>/ops/deploy/SKILL.md`), the default category.
    folder: Option<String>,
}

impl Skill {
    fn name(&self) -> &str {
        if self.meta.name.is_empty() {
            &self.id
        } else {
            &self.meta.name
        }
    }

    fn packaged(&self) -> bool {
        self.md.file_name().and_then(|n| n.to_str()) == Some("SKILL.md")
    }

    /// Front matter `category`, else the folder the packaged skill sits in, else `general`.
    fn category(&self) -> String {
        self.meta
            .category
            .clone()
            .or_else(|| self.folder.clone())
            .unwrap_or_else(|| "general".into())
    }
}

/// The turn's skills, from the texts its core revision was loaded with.
fn load(skills: &[SkillDoc], core: &CoreRef) -> Vec<Skill> {
    let root = core.skills_root.trim_end_matches('/');
    skills
        .iter()
        .filter_map(|doc| {
            let (id, md) = (&doc.id, &doc.md);
            let text = doc.text.clone()?;
            let path = md
                .strip_prefix(&core.dir)
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_else(|_| md.display().to_string());
            let within = if root.is_empty() {
                Some(path.as_str())
            } else {
                path.strip_prefix(root).and_then(|r| r.strip_prefix('/'))
            };
            // `<folder…>/<id>/SKILL.md` below the root: the folder part.
            let folder = within
                .and_then(|w| w.strip_suffix("/SKILL.md"))
                .and_then(|w| w.rsplit_once('/'))
                .map(|(f, _)| f.to_owned());
            Some(Skill {
                id: id.clone(),
                md: md.clone(),
                path,
                meta: front_matter(&text),
                text,
                folder,
            })
        })
        .collect()
}

/// The `<skill>` block of each skill (by id or name) an input slot
/// activated for the turn (`ctx.skills.activate`), in the order asked;
/// unknown names are skipped, as in the original. In memory: the turn's
/// revision already holds the texts.
pub fn activation_blocks(skills: &[SkillDoc], core: &CoreRef, names: &[String]) -> Vec<String> {
    let all = load(skills, core);
    let mut seen = std::collections::HashSet::new();
    names
        .iter()
        .filter_map(|n| all.iter().find(|s| s.id == *n || s.name() == n))
        .filter(|s| seen.insert(s.id.clone()))
        .map(block)
        .collect()
}

fn block(skill: &Skill) -> String {
    format!(
        "<skill name=\"{}\" id=\"{}\" path=\"{}\">\n{}\n</skill>",
        skill.name(),
        skill.id,
        skill.path,
        skill.text
    )
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

async fn load_all(env: &ToolEnv<'_>) -> Option<Vec<Skill>> {
    let skills = env.ctx.skills.clone();
    let core = env.ctx.core.clone();
    tokio::task::spawn_blocking(move || load(&skills, &core))
        .await
        .ok()
}

fn metadata(s: &Skill) -> Value {
    json!({"name": s.name(), "skill_id": s.id, "description": s.meta.description,
        "category": s.category(), "path": s.path, "packaged": s.packaged(),
        "linked_files": linked_files(&s.md)})
}

/// The original's shape: the listing as JSON, which is also what the model sees.
async fn skills_list(env: &ToolEnv<'_>, wanted: Option<String>) -> ToolOutcome {
    let Some(all) = load_all(env).await else {
        return ToolOutcome::error(ToolStatus::Failed, "could not read skills");
    };
    let mut categories: Vec<String> = all.iter().map(Skill::category).collect();
    categories.sort();
    categories.dedup();
    let mut listed: Vec<&Skill> = all
        .iter()
        .filter(|s| wanted.as_ref().is_none_or(|c| *c == s.category()))
        .collect();
    listed.sort_by_key(|s| (s.category(), s.name().to_owned()));
    let items: Vec<Value> = listed.iter().map(|s| metadata(s)).collect();
    ToolOutcome::ok_json(
        json!({"success": true, "skills": items, "categories": categories,
        "count": items.len(),
        "hint": "Use skill_view(name) to load full content, or skill_view(name, file_path) for linked files."}),
    )
}

/// The original's shape: the model sees the `<skill>` block; the JSON
/// payload (with `path`) is the result's data.
async fn skill_view(env: &ToolEnv<'_>, wanted: Wanted) -> ToolOutcome {
    let Wanted { name, file_path } = wanted;
    let Some(all) = load_all(env).await else {
        return ToolOutcome::error(ToolStatus::Failed, "could not read skills");
    };
    let Some(skill) = all.iter().find(|s| s.id == name || s.name() == name) else {
        let known: Vec<&str> = all.iter().map(Skill::name).collect();
        return ToolOutcome::error(
            ToolStatus::NotFound,
            format!(
                "skill not found: {name}. Available skills: {}",
                if known.is_empty() {
                    "(none)".to_owned()
                } else {
                    known.join(", ")
                }
            ),
        );
    };
    let linked = linked_files(&skill.md);
    match file_path {
        None => {
            let mut model = block(skill);
            let all_linked = flat(&linked);
            if !all_linked.is_empty() {
                model.push_str("\n\nLinked files available via skill_view(name, file_path):\n");
                model.push_str(
                    &all_linked
                        .iter()
                        .map(|p| format!("- {p}"))
                        .collect::<Vec<_>>()
                        .join("\n"),
                );
            }
            ToolOutcome::ok_text(
                model,
                json!({"success": true, "name": skill.name(), "skill_id": skill.id,
                    "description": skill.meta.description, "category": skill.category(),
                    "content": skill.text, "path": skill.path, "linked_files": linked}),
            )
        }
        Some(fp) => {
            // Only a declared linked file; never a path the model builds.
            if !flat(&linked).contains(&fp) {
                return ToolOutcome::error(
                    ToolStatus::NotFound,
                    format!("linked skill file not found or not allowed: {fp}"),
                );
            }
            let Some(dir) = skill.md.parent() else {
                return ToolOutcome::error(ToolStatus::NotFound, "skill has no folder");
            };
            match read(&dir.join(&fp)) {
                Some(text) => {
                    let folder = skill.path.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
                    ToolOutcome::ok_text(
                        format!(
                            "<skill_file name=\"{}\" file_path=\"{fp}\">\n{text}\n</skill_file>",
                            skill.name()
                        ),
                        json!({"success": true, "name": skill.name(), "skill_id": skill.id,
                            "file_path": fp, "content": text, "path": format!("{folder}/{fp}")}),
                    )
                }
                None => ToolOutcome::error(
                    ToolStatus::Failed,
                    format!("linked skill file not readable: {fp}"),
                ),
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
        // Without a description, the body's first line stands in.
        let m = front_matter("---\nname: a\n---\n\n# Deploy safely\nmore");
        assert_eq!(m.description, "Deploy safely");
        assert_eq!(front_matter("plain text").description, "plain text");
    }
}

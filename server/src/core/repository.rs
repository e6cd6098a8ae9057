//! Each tenant's agents tree under the home (`tenants/<t>/agents/`), a live
//! checkout of its git repository's `refs/demiurge/live`. Cores are loaded
//! once per revision and cached: every change made through the host
//! ([`super::edit`]) drops the cached core, and an edit of `agent.yaml` made
//! outside the host is noticed by its mtime. The hot path does at most one
//! small stat per core per second, never a subprocess.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::catalog::CatalogInput;
use crate::ids::{CoreId, TenantId};
use crate::policy::approval_policy::{ApprovalBlock, MetadataOverride};
use crate::policy::capabilities::CapabilityGrants;

use super::git::GitRunner;
use super::{load_core, load_global_fallback, ApprovalInfo, LoadedCore, ToolMetadataOverride};

/// How long a loaded core is trusted before its revision is looked at again.
const RECHECK_EVERY: Duration = Duration::from_secs(1);

/// What a turn needs from its core.
#[derive(Debug)]
pub struct CoreView {
    pub catalog: CatalogInput,
    /// The catalog resolved once per core revision; turns share it.
    pub resolved: crate::catalog::ResolvedCatalog,
    pub soul: Option<String>,
    /// `agent.summary`.
    pub summary: String,
    /// The core's `model:` block (the global `agents/agent.yaml` one where
    /// the core leaves it unset).
    pub model: ModelChoice,
    pub max_model_steps: u32,
    /// Skills of the core with their text, read once per revision.
    pub skills: Arc<Vec<crate::core::skill_doc::SkillDoc>>,
    /// The core's folder on disk.
    pub dir: PathBuf,
    /// The skill root relative to the core folder.
    pub skills_root: String,
    /// The core's MCP declarations (manifest and status), in order.
    pub mcp: Vec<crate::mcp::Declared>,
    /// The bootstrap/input/output pipeline, resolved once per revision.
    pub pipeline: Arc<super::pipeline::Pipeline>,
    /// The schedules folder relative to the core folder.
    pub schedules_root: String,
    /// The schedule files of this revision, read once with it (a file that
    /// does not parse is kept with its reason: listed, never run).
    pub schedules: Arc<super::schedule_file::Parsed>,
    /// Slot ids of the input and output pipelines (serial, then parallel).
    pub input_slots: Vec<String>,
    pub output_slots: Vec<String>,
    /// `serve.mcp_server_tools`: `/v1/mcp` serves the core's MCP servers' tools too.
    pub serve_mcp_server_tools: bool,
}

/// Which provider and model a core's turns use, and with what options.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelChoice {
    /// `fake`, `openai`, `anthropic`; `None` for `auto` (the server's default).
    pub provider: Option<String>,
    pub model_name: Option<String>,
    /// `model_options` as JSON (`max_tokens`, `temperature`, `context_window`, …).
    pub options: serde_json::Map<String, serde_json::Value>,
}

impl ModelChoice {
    fn from_info(
        core: &super::manifest::ModelInfo,
        global: Option<&super::manifest::ModelInfo>,
    ) -> Self {
        let set = |s: &Option<String>| {
            s.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty() && *s != "auto")
                .map(str::to_owned)
        };
        let options = |info: &super::manifest::ModelInfo| {
            serde_json::to_value(&info.model_options)
                .ok()
                .and_then(|v| match v {
                    serde_json::Value::Object(m) => Some(m),
                    _ => None,
                })
                .unwrap_or_default()
        };
        let mut choice = Self {
            provider: set(&core.provider),
            model_name: set(&core.model_name),
            options: options(core),
        };
        if let Some(g) = global {
            if choice.provider.is_none() {
                choice.provider = set(&g.provider);
            }
            if choice.model_name.is_none() {
                choice.model_name = set(&g.model_name);
            }
            for (k, v) in options(g) {
                choice.options.entry(k).or_insert(v);
            }
        }
        choice
    }

    /// `model_options.context_window`, in tokens, if the core sets one.
    pub fn context_window(&self) -> Option<u64> {
        self.options
            .get("context_window")
            .and_then(serde_json::Value::as_u64)
    }
}

struct Cached {
    checked: Instant,
    revision: String,
    view: Result<Arc<CoreView>, String>,
}

#[derive(Clone)]
pub struct CoreRepository {
    pub(super) home: PathBuf,
    cache: Arc<Mutex<HashMap<(TenantId, CoreId), Cached>>>,
    /// One writer at a time per tenant tree (edits, rollbacks).
    pub(super) writers: Arc<Mutex<HashMap<TenantId, Arc<tokio::sync::Mutex<()>>>>>,
    /// Tools this host cannot run (name → reason), for every catalog.
    pub(super) host_unavailable: Arc<BTreeMap<String, String>>,
    /// The walls `git` runs inside: the agents tree is the tenant's, so the
    /// host's own commands there are confined like the tenant's.
    pub(super) walls: Option<Arc<crate::walls::Walls>>,
}

impl CoreRepository {
    pub fn new(home: &Path) -> Self {
        Self {
            home: home.to_path_buf(),
            cache: Arc::default(),
            writers: Arc::default(),
            host_unavailable: Arc::default(),
            walls: None,
        }
    }

    /// Runs `git` in agents trees inside these walls (without them, as in
    /// unit tests, it runs as the server, on trees the server just seeded).
    pub fn with_walls(mut self, walls: Arc<crate::walls::Walls>) -> Self {
        self.walls = Some(walls);
        self
    }

    /// Marks tools this host cannot run (e.g. child processes that cannot be
    /// confined) as unavailable in every catalog, with the reason.
    pub fn with_host_unavailable(mut self, tools: BTreeMap<String, String>) -> Self {
        self.host_unavailable = Arc::new(tools);
        self
    }

    pub fn agents_dir(&self, tenant: &TenantId) -> PathBuf {
        crate::home::HomeLayout::new(&self.home).agents_dir(tenant)
    }

    /// Give a tenant the host's cores (each once, when missing): the default
    /// `assistant` and the `evolver` that `evolve_core` runs, each committed
    /// to the tree's git repository. Runs at bootstrap, tenant creation and
    /// before tree changes, never per turn.
    pub fn ensure_seeded(&self, tenant: &TenantId) -> anyhow::Result<()> {
        use anyhow::Context;
        let agents = self.agents_dir(tenant);
        type Seed = fn(&Path) -> std::io::Result<()>;
        let seeds: [(&str, Seed); 2] = [
            ("assistant", super::seed_assistant),
            ("evolver", super::seed_evolver),
        ];
        for (id, seed) in seeds {
            let core = agents.join(id);
            // A folder that exists is the tenant's, whatever is in it.
            if std::fs::symlink_metadata(&core).is_ok() {
                continue;
            }
            crate::bootstrap::private_dir(&agents)?;
            seed(&core).with_context(|| format!("seed {}", core.display()))?;
            let author = super::git::Author {
                name: "demiurge".into(),
                email: "demiurge@localhost".into(),
            };
            let git = self.git_runner(tenant, &agents);
            if let Err(e) = git.and_then(|g| {
                g.commit_live(&agents, id, &author, &format!("seed the {id} core"))
                    .map_err(anyhow::Error::from)
            }) {
                // The core works without history; versioning needs git.
                tracing::warn!(error = %e, core = id, "could not commit a seeded core to git");
            }
        }
        Ok(())
    }

    pub fn exists(&self, tenant: &TenantId, core: &CoreId) -> bool {
        self.agents_dir(tenant)
            .join(core.as_str())
            .join("agent.yaml")
            .is_file()
    }

    /// The core as a turn sees it, or the load error (naming file and field).
    pub async fn load(&self, tenant: &TenantId, core: &CoreId) -> Result<Arc<CoreView>, String> {
        let key = (tenant.clone(), core.clone());
        let now = Instant::now();
        let stale_revision = {
            let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            match cache.get(&key) {
                Some(c) if now.duration_since(c.checked) < RECHECK_EVERY => return c.view.clone(),
                Some(c) => Some(c.revision.clone()),
                None => None,
            }
        };
        let agents = self.agents_dir(tenant);
        let core_dir = agents.join(core.as_str());
        let c = core_dir.clone();
        let revision = tokio::task::spawn_blocking(move || revision(&c))
            .await
            .unwrap_or_default();
        if stale_revision.as_deref() == Some(revision.as_str()) {
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(c) = cache.get_mut(&key) {
                c.checked = now;
                return c.view.clone();
            }
        }
        let core_id = core.to_string();
        let host_unavailable = self.host_unavailable.clone();
        let view = tokio::task::spawn_blocking(move || {
            build_view(&agents, &core_dir, &core_id, &host_unavailable)
        })
        .await
        .unwrap_or_else(|e| Err(format!("core loading panicked: {e}")));
        let view = view.map(Arc::new);
        if let Err(e) = &view {
            tracing::warn!(tenant = %tenant, core = %core, error = %e, "core failed to load");
        }
        self.cache.lock().unwrap_or_else(|p| p.into_inner()).insert(
            key,
            Cached {
                checked: now,
                revision,
                view: view.clone(),
            },
        );
        view
    }

    /// Forget a cached core (after evolve, rollback or a skill change).
    pub fn invalidate(&self, tenant: &TenantId, core: &CoreId) {
        self.cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(tenant.clone(), core.clone()));
    }
}

/// Schedule files read per revision at most.
const MAX_SCHEDULE_FILES: usize = 500;

/// The schedule files of a schedules folder (regular files only, never
/// through a link; a missing folder has none).
fn read_schedules(dir: &Path) -> super::schedule_file::Parsed {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Default::default();
    };
    let mut files: Vec<(String, String)> = Vec::new();
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        if !kind.is_file() || super::schedule_file::id_of(&name).is_none() {
            continue;
        }
        if files.len() >= MAX_SCHEDULE_FILES {
            tracing::warn!(dir = %dir.display(), "more schedule files than read; the rest are ignored");
            break;
        }
        // One byte past the limit is enough for the parser to refuse it.
        let mut bytes = Vec::new();
        let limit = super::schedule_file::MAX_FILE_BYTES as u64 + 1;
        if let Ok(f) = std::fs::File::open(entry.path()) {
            let _ = std::io::Read::read_to_end(&mut std::io::Read::take(f, limit), &mut bytes);
        }
        files.push((name, String::from_utf8_lossy(&bytes).into_owned()));
    }
    files.sort();
    super::schedule_file::parse_folder(files.iter().map(|(n, t)| (n.as_str(), t.as_str())))
}

/// The manifest's mtime: a cheap stat that notices an edit of `agent.yaml`
/// made outside the API (API writes invalidate the cache themselves).
/// SHA-256 over a folder's files (relative names and bytes, sorted),
/// `.git` and Python caches left out: the identity of what a core's
/// runners would load, and the pin of a folder package repository.
pub fn tree_hash(core_dir: &Path) -> String {
    use sha2::{Digest, Sha256};
    let mut files = Vec::new();
    let mut stack = vec![core_dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            if kind.is_dir() {
                if name != ".git" && name != "__pycache__" {
                    stack.push(entry.path());
                }
            } else if kind.is_file() && !name.to_string_lossy().ends_with(".pyc") {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    let mut h = Sha256::new();
    for f in files {
        let rel = f.strip_prefix(core_dir).unwrap_or(&f);
        h.update(rel.to_string_lossy().as_bytes());
        h.update([0]);
        if let Ok(bytes) = std::fs::read(&f) {
            h.update(&bytes);
        }
        h.update([0]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn revision(core_dir: &Path) -> String {
    let mtime = std::fs::metadata(core_dir.join("agent.yaml"))
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    // The agents tree's commit too: a change made by another process (the
    // CLI installing a package, another instance) moves it even when
    // `agent.yaml` stays as it was.
    let head = core_dir
        .parent()
        .map(|agents| agents.join(".git"))
        .and_then(|git| {
            let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
            match head.trim().strip_prefix("ref: ") {
                Some(r) => std::fs::read_to_string(git.join(r))
                    .ok()
                    .or_else(|| Some(format!("{r}@packed"))),
                None => Some(head),
            }
        })
        .unwrap_or_default();
    format!("{mtime}:{}", head.trim())
}

impl CoreRepository {
    /// How `git` runs in this tenant's agents tree (confined when the host has walls).
    pub(super) fn git_runner(&self, tenant: &TenantId, agents: &Path) -> anyhow::Result<GitRunner> {
        GitRunner::for_tenant(
            self.walls.as_ref().map(|w| &w.sandbox),
            &self.home,
            &super::git::GitScope {
                tenant,
                workdir: agents,
                network: false,
                read_only: &[],
            },
        )
    }
}

fn metadata_override(o: &ToolMetadataOverride) -> MetadataOverride {
    MetadataOverride {
        risk: o.risk,
        capability: o.capability.clone().map(Some),
        approval_policy: o.approval_policy,
        model_output_policy: o.model_output_policy.clone(),
        display_policy: o.display_policy.clone(),
        enabled: o.enabled,
    }
}

fn approval_block(a: &ApprovalInfo) -> ApprovalBlock {
    ApprovalBlock {
        default: a.default,
        tools: a.tools.clone(),
        capabilities: a.capabilities.clone(),
        risks: a.risks.clone(),
    }
}

fn build_view(
    agents: &Path,
    core_dir: &Path,
    core_id: &str,
    host_unavailable: &BTreeMap<String, String>,
) -> Result<CoreView, String> {
    let core: LoadedCore = load_core(core_dir, core_id, &crate::catalog::toolset)
        .map_err(|e| format!("core {core_id}: {e}"))?;
    let global = load_global_fallback(&agents.join("agent.yaml"))
        .map_err(|e| format!("global agents/agent.yaml: {e}"))?;
    let grants = CapabilityGrants::new(core.capability_defaults(), core.capability_slots());
    let overrides: BTreeMap<String, MetadataOverride> = core
        .manifest
        .tools
        .metadata
        .iter()
        .map(|(k, v)| (k.clone(), metadata_override(v)))
        .collect();
    let core_approval = approval_block(&core.manifest.approval);
    let global_approval = global.as_ref().map(|g| approval_block(&g.approval));
    // The loader's fingerprint covers what it read (the manifests); the
    // code the runners load (tool and slot modules, `agent/lib`) is folded
    // in too, so a revision that changes only code gets fresh runners and
    // approvals given for the old code do not carry over.
    let fingerprint = crate::redact::redactor::fingerprint(&format!(
        "{}|{}|{:?}|{}",
        core.fingerprint,
        grants.fingerprint(),
        global_approval,
        tree_hash(core_dir)
    ));
    let catalog = CatalogInput {
        core_id: core_id.to_owned(),
        builtin_tools: core.builtin_tools.clone(),
        overrides,
        core_approval: Some(core_approval),
        global_approval,
        grants,
        fingerprint,
        host_unavailable: host_unavailable.clone(),
        terminal_network_off: core.manifest.terminal.network
            == super::manifest::TerminalNetwork::None,
        mcp_servers: crate::mcp::statuses(
            core.mcp_manifests
                .iter()
                .map(|m| (m.name.as_str(), m.path_rel.as_str(), &m.raw)),
        ),
        authored: core
            .authored
            .iter()
            .map(|t| crate::catalog::AuthoredInput {
                name: t.name.clone(),
                description: t.manifest.description.clone(),
                input_schema: t.manifest.input_schema.clone(),
                metadata: crate::policy::approval_policy::Metadata {
                    risk: t.manifest.risk,
                    capability: t.manifest.capability.clone().filter(|c| !c.is_empty()),
                    approval_policy: t.manifest.approval_policy,
                    model_output_policy: t.manifest.model_output_policy.clone(),
                    display_policy: t.manifest.display_policy.clone(),
                    enabled: true,
                },
                entrypoint: t.manifest.entrypoint.clone(),
                slot_path: t.dir_rel.clone(),
                dir: core_dir.join(&t.dir_rel),
                capabilities: t.manifest.capabilities.clone(),
            })
            .collect(),
        broken_authored: core
            .broken_tools
            .iter()
            .map(|b| (b.name.clone(), b.error.clone()))
            .collect(),
    };
    Ok(CoreView {
        resolved: crate::catalog::ResolvedCatalog::build(&catalog),
        catalog,
        soul: core.soul.clone(),
        summary: core.manifest.agent.summary.clone(),
        model: ModelChoice::from_info(&core.manifest.model, global.as_ref().map(|g| &g.model)),
        skills: Arc::new(
            core.skills
                .iter()
                .map(|k| crate::core::skill_doc::SkillDoc::read(&k.id, core_dir.join(&k.path_rel)))
                .collect(),
        ),
        max_model_steps: core.manifest.runtime.max_model_steps.clamp(1, 90) as u32,
        pipeline: Arc::new(super::pipeline::Pipeline::from_core(
            &core,
            core_dir,
            &super::pipeline::native_of,
        )),
        schedules: Arc::new(read_schedules(&core_dir.join(&core.schedules_root))),
        schedules_root: core.schedules_root.clone(),
        input_slots: [&core.pipelines.input.serial, &core.pipelines.input.parallel]
            .into_iter()
            .flatten()
            .cloned()
            .collect(),
        output_slots: [
            &core.pipelines.output.serial,
            &core.pipelines.output.parallel,
        ]
        .into_iter()
        .flatten()
        .cloned()
        .collect(),
        mcp: crate::mcp::declarations(
            core.mcp_manifests
                .iter()
                .map(|m| (m.name.as_str(), m.path_rel.as_str(), &m.raw)),
        ),
        dir: core_dir.to_path_buf(),
        skills_root: core.skills_root.clone(),
        serve_mcp_server_tools: core.manifest.serve.mcp_server_tools,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revisions_schedule_files_are_read_once_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("schedules");
        assert!(read_schedules(&root).is_empty(), "no folder, no schedules");
        std::fs::create_dir_all(root.join("sub.yaml")).unwrap();
        std::fs::write(
            root.join("daily.yaml"),
            "schedule: '0 9 * * *'\nprompt: p\n",
        )
        .unwrap();
        std::fs::write(root.join("bad.yml"), "schedule: nope\nprompt: p\n").unwrap();
        std::fs::write(root.join("notes.md"), "not a schedule").unwrap();
        let big = format!(
            "schedule: '0 9 * * *'\nprompt: p\n#{}\n",
            "x".repeat(schedule_file_max())
        );
        std::fs::write(root.join("big.yaml"), big).unwrap();
        let parsed = read_schedules(&root);
        assert_eq!(
            parsed.keys().collect::<Vec<_>>(),
            ["bad", "big", "daily"],
            "folders and other files are skipped"
        );
        assert!(parsed["daily"].is_ok());
        assert!(parsed["bad"].is_err());
        assert_eq!(
            parsed["big"].as_ref().unwrap_err(),
            &super::super::schedule_file::ScheduleFileError::TooLarge
        );
    }

    fn schedule_file_max() -> usize {
        super::super::schedule_file::MAX_FILE_BYTES
    }
}

//! Each tenant's agents tree under the home (`tenants/<t>/agents/`), a live
//! checkout backed by a git repository. Cores are loaded once per revision
//! (HEAD commit plus the manifest's mtime) and cached; the hot path does at
//! most two small stats per core per second, never a subprocess.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::catalog::CatalogInput;
use crate::ids::{CoreId, TenantId};
use crate::policy::approval_policy::{ApprovalBlock, MetadataOverride, Policy, Risk};
use crate::policy::capabilities::CapabilityGrants;

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
    pub max_model_steps: u32,
    /// Skills of the core: (id, absolute path of its markdown file).
    pub skills: Vec<(String, std::path::PathBuf)>,
}

struct Cached {
    checked: Instant,
    revision: String,
    view: Result<Arc<CoreView>, String>,
}

#[derive(Clone)]
pub struct CoreRepository {
    home: PathBuf,
    cache: Arc<Mutex<HashMap<(TenantId, CoreId), Cached>>>,
    /// Tools this host cannot run (name → reason), for every catalog.
    host_unavailable: Arc<BTreeMap<String, String>>,
    /// The walls `git` runs inside: the agents tree is the tenant's, so the
    /// host's own commands there are confined like the tenant's.
    walls: Option<Arc<crate::tools::contract::Walls>>,
}

impl CoreRepository {
    pub fn new(home: &Path) -> Self {
        Self {
            home: home.to_path_buf(),
            cache: Arc::default(),
            host_unavailable: Arc::default(),
            walls: None,
        }
    }

    /// Runs `git` in agents trees inside these walls (without them, as in
    /// unit tests, it runs as the server, on trees the server just seeded).
    pub fn with_walls(mut self, walls: Arc<crate::tools::contract::Walls>) -> Self {
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

    /// Give a tenant its default `assistant` core (once), committed to the
    /// tree's git repository. Runs at bootstrap and tenant creation, never per turn.
    pub fn ensure_seeded(&self, tenant: &TenantId) -> anyhow::Result<()> {
        use anyhow::Context;
        let agents = self.agents_dir(tenant);
        let core = agents.join("assistant");
        if core.join("agent.yaml").exists() {
            return Ok(());
        }
        crate::bootstrap::private_dir(&agents)?;
        super::seed_assistant(&core).with_context(|| format!("seed {}", core.display()))?;
        let git = self.git_runner(tenant, &agents);
        if let Err(e) = git.and_then(|g| git_commit_all(&g, &agents, "seed the assistant core")) {
            // The core works without history; versioning needs git.
            tracing::warn!(error = %e, "could not commit the seeded core to git");
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
        let (a, c) = (agents.clone(), core_dir.clone());
        let revision = tokio::task::spawn_blocking(move || revision(&a, &c))
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

/// HEAD commit of the agents tree plus the manifest's mtime: changes with
/// every commit, and with an uncommitted edit of `agent.yaml`.
fn revision(agents: &Path, core_dir: &Path) -> String {
    let head = git_head(agents).unwrap_or_default();
    let mtime = std::fs::metadata(core_dir.join("agent.yaml"))
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{head}@{mtime}")
}

/// Read HEAD without spawning git: `.git/HEAD`, then the ref or packed-refs.
fn git_head(repo: &Path) -> Option<String> {
    let git = repo.join(".git");
    let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(r) = head.strip_prefix("ref: ") else {
        return Some(head.to_owned());
    };
    if let Ok(id) = std::fs::read_to_string(git.join(r)) {
        return Some(id.trim().to_owned());
    }
    let packed = std::fs::read_to_string(git.join("packed-refs")).ok()?;
    packed
        .lines()
        .find_map(|l| l.strip_suffix(r).map(|id| id.trim().to_owned()))
}

/// How `git` is started in one tenant's agents tree: its environment (an
/// allowlist, never the server's) and its confinement.
struct GitRunner {
    env: Vec<(String, String)>,
    confinement: Option<Arc<crate::exec::sandbox::Confinement>>,
}

impl CoreRepository {
    fn git_runner(&self, tenant: &TenantId, agents: &Path) -> anyhow::Result<GitRunner> {
        let layout = crate::home::HomeLayout::new(&self.home);
        let (home, tmp) = layout.host_tool_dirs(tenant);
        let confinement = match &self.walls {
            None => None,
            Some(walls) => walls
                .sandbox
                .prepare(&crate::exec::sandbox::Request {
                    tenant: tenant.as_str(),
                    workspace: agents,
                    home: &home,
                    tmp: &tmp,
                    network: false,
                    read_only: &[],
                })?
                .map(Arc::new),
        };
        crate::exec::ensure_runtime_home(&home)?;
        let overlay = [("GIT_CONFIG_NOSYSTEM".to_owned(), "1".to_owned())];
        let mut env = crate::exec::child_env(std::env::vars(), &home, &overlay);
        crate::exec::confine_env(
            &mut env,
            agents,
            confinement.as_ref().map(|c| (c.path_env(), tmp.as_path())),
        );
        Ok(GitRunner { env, confinement })
    }
}

fn git_commit_all(git: &GitRunner, repo: &Path, message: &str) -> anyhow::Result<()> {
    let run = |args: &[&str]| -> anyhow::Result<()> {
        let mut command = std::process::Command::new("git");
        command
            .env_clear()
            .envs(git.env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null());
        if let Some(c) = &git.confinement {
            c.clone().install(&mut command);
        }
        let out = command
            .args([
                "-c",
                "user.name=demiurge",
                "-c",
                "user.email=demiurge@localhost",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(repo)
            .output()?;
        if !out.status.success() {
            anyhow::bail!(
                "git {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    };
    if !repo.join(".git").exists() {
        run(&["init", "-q", "-b", "main"])?;
    }
    run(&["add", "-A"])?;
    run(&["commit", "-q", "-m", message])?;
    Ok(())
}

/// Convert between the manifest's and the policy's copies of an enum by name.
fn risk(r: super::Risk) -> Risk {
    r.as_str().parse().unwrap_or(Risk::Critical)
}

fn policy(p: super::ApprovalPolicy) -> Policy {
    p.as_str().parse().unwrap_or(Policy::Deny)
}

fn metadata_override(o: &ToolMetadataOverride) -> MetadataOverride {
    MetadataOverride {
        risk: o.risk.map(risk),
        capability: o.capability.clone().map(Some),
        approval_policy: o.approval_policy.map(policy),
        model_output_policy: o.model_output_policy.clone(),
        display_policy: o.display_policy.clone(),
        enabled: o.enabled,
    }
}

fn approval_block(a: &ApprovalInfo) -> ApprovalBlock {
    ApprovalBlock {
        default: a.default.map(policy),
        tools: a
            .tools
            .iter()
            .map(|(k, v)| (k.clone(), policy(*v)))
            .collect(),
        capabilities: a
            .capabilities
            .iter()
            .map(|(k, v)| (k.clone(), policy(*v)))
            .collect(),
        risks: a
            .risks
            .iter()
            .map(|(k, v)| (risk(*k), policy(*v)))
            .collect(),
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
    let fingerprint = crate::redact::redactor::fingerprint(&format!(
        "{}|{}|{:?}",
        core.fingerprint,
        grants.fingerprint(),
        global_approval
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
        authored: core
            .authored
            .iter()
            .map(|t| crate::catalog::AuthoredInput {
                name: t.name.clone(),
                description: t.manifest.description.clone(),
                input_schema: t.manifest.input_schema.clone(),
                metadata: crate::policy::approval_policy::Metadata {
                    risk: risk(t.manifest.risk),
                    capability: t.manifest.capability.clone().filter(|c| !c.is_empty()),
                    approval_policy: policy(t.manifest.approval_policy),
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
        skills: core
            .skills
            .iter()
            .map(|k| (k.id.clone(), core_dir.join(&k.path_rel)))
            .collect(),
        max_model_steps: core.manifest.runtime.max_model_steps.clamp(1, 90) as u32,
    })
}

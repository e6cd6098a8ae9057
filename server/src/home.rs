//! The server home's layout: every path under `--home` is named here, once,
//! so nobody rebuilds `tenants/…/workspaces` or `runtime/…` by hand.
//!
//! ```text
//! <home>/
//!   demiurge.db                                  SQLite database (without a database URL)
//!   demiurge-usage.db                            its usage tables (a writer of their own)
//!   node_id                                      this node's id
//!   keys/                                        the JWT signing key
//!   tenants/<tenant>/agents/                     the tenant's agent cores (a git tree)
//!   tenants/<tenant>/workspaces/<principal>/<ws>/  session workspaces, private per principal
//!   runtime/processes/                           records of running process groups
//!   runtime/artifacts/<tenant>/…                 terminal output (counted by the storage quota)
//!   runtime/terminal-home/<tenant>/<principal>/  HOME of terminal commands
//!   runtime/tmp/<tenant>/<principal>/            TMPDIR of terminal commands
//!   runtime/session-state/<session>/             per-session tool state
//! ```
//!
//! Pure: it only names paths; creating them (with private permissions) is up
//! to the caller. Tenant and principal segments are parsed ids, so they can
//! never climb out of their folder. The one effect here, [`absolute_home`],
//! runs once at start-up, so that the root (and every path named from it) is
//! absolute: confined children run in their workspace, not in the server's
//! current folder.

use std::path::{Component, Path, PathBuf};

use crate::ids::{PrincipalId, TenantId};

/// The paths under one server home.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HomeLayout {
    root: PathBuf,
}

impl HomeLayout {
    /// The layout under `root` (the `--home` folder).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        HomeLayout { root: root.into() }
    }

    /// The home itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The SQLite database used when no database URL is configured.
    pub fn database_file(&self) -> PathBuf {
        self.root.join("demiurge.db")
    }

    /// This node's id, written on first start.
    pub fn node_id_file(&self) -> PathBuf {
        self.root.join("node_id")
    }

    /// The folder of the JWT signing key.
    pub fn keys_dir(&self) -> PathBuf {
        self.root.join("keys")
    }

    /// Everything one tenant owns outside the database.
    pub fn tenant_dir(&self, tenant: &TenantId) -> PathBuf {
        self.root.join("tenants").join(tenant.as_str())
    }

    /// The tenant's agent cores (a git tree).
    pub fn agents_dir(&self, tenant: &TenantId) -> PathBuf {
        self.tenant_dir(tenant).join("agents")
    }

    /// One of a principal's workspace folders.
    pub fn workspace_dir(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
        workspace: &str,
    ) -> PathBuf {
        self.tenant_dir(tenant)
            .join("workspaces")
            .join(principal.as_str())
            .join(workspace)
    }

    /// Host-owned state of running work (never a tenant's own files).
    pub fn runtime_dir(&self) -> PathBuf {
        self.root.join("runtime")
    }

    /// Records of running process groups, reaped after a crash.
    pub fn processes_dir(&self) -> PathBuf {
        self.runtime_dir().join("processes")
    }

    /// Terminal artifacts of every tenant:
    /// `<root>/<tenant>/<session root>/<spawn_id>.<stream>.log`.
    pub fn artifacts_root(&self) -> PathBuf {
        self.runtime_dir().join("artifacts")
    }

    /// One tenant's terminal artifacts (what its storage quota counts).
    pub fn tenant_artifacts_dir(&self, tenant: &TenantId) -> PathBuf {
        self.artifacts_root().join(tenant.as_str())
    }

    /// `HOME` of a principal's terminal commands: dotfiles one principal
    /// writes never run for another.
    pub fn terminal_home(&self, tenant: &TenantId, principal: &PrincipalId) -> PathBuf {
        self.runtime_dir()
            .join("terminal-home")
            .join(tenant.as_str())
            .join(principal.as_str())
    }

    /// `TMPDIR` of a principal's terminal commands (`/tmp` is outside the walls).
    pub fn terminal_tmp(&self, tenant: &TenantId, principal: &PrincipalId) -> PathBuf {
        self.runtime_dir()
            .join("tmp")
            .join(tenant.as_str())
            .join(principal.as_str())
    }

    /// `HOME` and `TMPDIR` of the commands the host itself runs in a
    /// tenant's agents tree (`git`), confined like the tenant's own.
    pub fn host_tool_dirs(&self, tenant: &TenantId) -> (PathBuf, PathBuf) {
        let base = self.runtime_dir().join("host-tools").join(tenant.as_str());
        (base.join("home"), base.join("tmp"))
    }

    /// Read-only copy of a core revision's authored tools and the runner
    /// with its `demiurge.sdk`, which confined runners of the tenant may read.
    pub fn authored_runtime(&self, tenant: &TenantId, revision: &str) -> PathBuf {
        self.runtime_dir()
            .join("authored")
            .join(tenant.as_str())
            .join(revision)
    }

    /// Where a core's authored tools and slots run from: the host's copy of
    /// the core's code (`agent.yaml`, `agent/`) beside the files its
    /// packages keep (`memory/`, `context/`), laid out as the Python
    /// project lays out a core, so code that finds its core root by walking
    /// up from `__file__` finds this one. The state outlives revisions.
    pub fn core_runtime_root(&self, tenant: &TenantId, core: &crate::ids::CoreId) -> PathBuf {
        self.tenant_dir(tenant)
            .join("core-state")
            .join(core.as_str())
    }

    /// Per-session tool state.
    pub fn session_state_dir(&self, session: &str) -> PathBuf {
        self.runtime_dir().join("session-state").join(session)
    }
}

/// `path` made absolute against `cwd`, lexically: `.` dropped, `..` folded
/// (never above `/`). Pure, so every shape of input can be tested.
pub fn absolute_from(cwd: &Path, path: &Path) -> Result<PathBuf, String> {
    if path.as_os_str().is_empty() {
        return Err("the home path is empty".into());
    }
    let mut out = if path.is_absolute() {
        PathBuf::from("/")
    } else {
        absolute_from(Path::new("/"), cwd)?
    };
    for part in path.components() {
        match part {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    Ok(out)
}

/// The home as the server uses it: absolute against the current folder,
/// with the part that already exists resolved through its links, so the
/// walls that compare paths (read roots, the server's own home) see the
/// same path the kernel does.
pub fn absolute_home(path: &Path) -> Result<PathBuf, String> {
    let cwd = std::env::current_dir().map_err(|e| format!("the current folder: {e}"))?;
    let lexical = absolute_from(&cwd, path)?;
    for existing in lexical.ancestors() {
        if let Ok(real) = existing.canonicalize() {
            let rest = lexical.strip_prefix(existing).unwrap_or(Path::new(""));
            return Ok(if rest.as_os_str().is_empty() {
                real
            } else {
                real.join(rest)
            });
        }
    }
    Ok(lexical)
}

#[cfg(test)]
#[path = "home_tests.rs"]
mod tests;

//! Packages: the Python project's package repositories, installed per
//! tenant into a core from the sources the server operator trusts.
//!
//! - [`recipe`]: `repository.yaml` and recipes parsed and checked (pure).
//! - [`repository`]: a repository on disk, each recipe listed with its
//!   validity and what this server cannot install of it.
//! - [`sources`]: the operator's trusted list, the repositories tenants
//!   add where the operator allows it, pins, git sync.
//! - [`plan`]: the file edits of an install, upgrade or uninstall and the
//!   core's `packages.yaml` after it.
//!
//! [`Packages`] is the service: listing for any member of the tenant,
//! installs and removals for tenant admins, each as one core revision
//! through [`CoreChanges`] (the staged core must load, or nothing changes)
//! and one audit record.

pub mod plan;
pub mod recipe;
pub mod repository;
pub mod sources;

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::auth::PrincipalScope;
use crate::core::changes::CoreChanges;
use crate::core::edit::{CoreChange, CoreEditError, Edit};
use crate::core::path::CoreFilePath;
use crate::core::repository::CoreRepository;
use crate::ids::CoreId;
use crate::store::Surface;
use plan::{CoreFiles, FileEdit, Installed, PlanError};
use repository::Repository;
use sources::{Origin, Source};

/// Why a package operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    /// No such repository, package or core (another tenant's core looks the same).
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Forbidden(String),
    /// The request itself is wrong (options, names).
    #[error("{0}")]
    Invalid(String),
    /// The package cannot be installed as it is (an invalid recipe, a kind
    /// this server lacks) or the core would not load after it.
    #[error("{0}")]
    Unprocessable(String),
    /// The core as it is does not allow it.
    #[error("{0}")]
    Conflict(String),
    /// The repository is not ready (not synced, pin mismatch).
    #[error("{0}")]
    Unavailable(String),
    #[error(transparent)]
    Core(#[from] CoreEditError),
}

impl From<PlanError> for PackageError {
    fn from(e: PlanError) -> Self {
        match e {
            PlanError::Invalid(m) => PackageError::Invalid(m),
            PlanError::Conflict(m) => PackageError::Conflict(m),
            PlanError::NotInstalled(_) => PackageError::NotFound(e.to_string()),
            PlanError::Io(m) => PackageError::Core(CoreEditError::Internal(anyhow::anyhow!(m))),
        }
    }
}

/// A configured repository, as listed.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RepositoryView {
    pub alias: String,
    /// `operator` (the server's, every tenant's) or `tenant` (this tenant's own).
    pub owner: String,
    /// `path` or `git`.
    pub kind: String,
    /// The folder or the git URL.
    pub source: String,
    pub commit: Option<String>,
    /// Readable and matching its pin.
    pub ready: bool,
    pub error: Option<String>,
    /// `repository.yaml`'s `id`, `name` and `summary` once read.
    pub id: Option<String>,
    pub name: Option<String>,
    pub summary: Option<String>,
    pub package_count: usize,
}

/// A package of a repository, as listed.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PackageView {
    pub repository: String,
    pub id: String,
    pub name: String,
    pub summary: String,
    pub tags: Vec<String>,
    /// `{id, type, prompt, description, required, choices, default}`
    /// (secret options carry no default: their value is a tenant credential).
    #[schema(value_type = Vec<Object>)]
    pub options: Vec<Value>,
    pub capabilities: Vec<String>,
    /// `{id, kind}` in install order.
    #[schema(value_type = Vec<Object>)]
    pub components: Vec<Value>,
    pub requires: Vec<String>,
    pub manual_dependencies: Vec<String>,
    /// Whether the recipe is valid; `error` says why not.
    pub valid: bool,
    pub error: Option<String>,
    /// Why this server cannot install it, though valid.
    pub unsupported: Option<String>,
}

/// What `GET /v1/packages` answers.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PackageCatalog {
    pub repositories: Vec<RepositoryView>,
    pub packages: Vec<PackageView>,
    /// The core asked about (`?core=`), with its installed packages.
    pub core: Option<String>,
    #[schema(value_type = Vec<Object>)]
    pub installed: Vec<Installed>,
}

/// What an install, upgrade or uninstall did.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PackageChange {
    /// `install`, `upgrade` or `uninstall`.
    pub action: String,
    pub core: String,
    pub package: String,
    pub repository: String,
    /// The core's new live revision, and the one before.
    pub revision: String,
    pub previous: Option<String>,
    pub warnings: Vec<String>,
    /// The package's registry record.
    #[schema(value_type = Object)]
    pub record: Installed,
}

/// Where repositories may come from: the operator's list, and the
/// prefixes under which tenants may add their own (none: they may not).
#[derive(Debug, Clone, Default)]
pub struct Trust {
    pub sources: Vec<Source>,
    pub tenant_prefixes: Vec<String>,
}

/// Packages for every tenant; cheap to clone.
#[derive(Clone)]
pub struct Packages {
    home: PathBuf,
    trust: Arc<Trust>,
    store: crate::store::Store,
    cores: CoreRepository,
    changes: CoreChanges,
    /// The URL policy's client, and the sandbox git syncs run in.
    walls: Arc<crate::walls::Walls>,
}

impl Packages {
    pub fn new(
        home: PathBuf,
        trust: Trust,
        store: crate::store::Store,
        cores: CoreRepository,
        changes: CoreChanges,
        walls: Arc<crate::walls::Walls>,
    ) -> Self {
        Self {
            home,
            trust: Arc::new(trust),
            store,
            cores,
            changes,
            walls,
        }
    }

    /// The repositories `tenant` sees: the operator's, then its own.
    async fn sources_for(
        &self,
        tenant: &crate::ids::TenantId,
    ) -> Result<Vec<Source>, PackageError> {
        let mut all = self.trust.sources.clone();
        let rows = self
            .store
            .tenant_package_repositories(tenant)
            .await
            .map_err(|e| PackageError::Core(CoreEditError::Internal(e.into())))?;
        for row in rows {
            all.push(Source {
                alias: row.alias,
                origin: Origin::Git {
                    url: row.url,
                    commit: row.commit,
                },
                tenant: Some(tenant.clone()),
            });
        }
        Ok(all)
    }

    async fn source(
        &self,
        tenant: &crate::ids::TenantId,
        alias: &str,
    ) -> Result<Source, PackageError> {
        self.sources_for(tenant)
            .await?
            .into_iter()
            .find(|s| s.alias == alias)
            .ok_or_else(|| {
                PackageError::NotFound(format!("no package repository {alias:?} on this server"))
            })
    }

    /// Read a repository, verified against its pin (and a tenant's against
    /// the operator's prefixes as they are now).
    async fn load(&self, source: &Source) -> Result<Repository, String> {
        source.still_admitted(&self.trust.tenant_prefixes)?;
        let (home, source) = (self.home.clone(), source.clone());
        tokio::task::spawn_blocking(move || {
            source.verify(&home)?;
            Repository::load(&source.root(&home))
        })
        .await
        .map_err(|e| e.to_string())?
    }

    /// The configured repositories and their packages; with `core`, what
    /// is installed in it. Any member of the tenant may look.
    pub async fn list(
        &self,
        scope: &PrincipalScope,
        core: Option<&CoreId>,
    ) -> Result<PackageCatalog, PackageError> {
        let mut repositories = Vec::new();
        let mut packages = Vec::new();
        for source in self.sources_for(scope.tenant()).await? {
            let source = &source;
            let mut view = RepositoryView {
                alias: source.alias.clone(),
                owner: if source.tenant.is_some() {
                    "tenant"
                } else {
                    "operator"
                }
                .into(),
                kind: source.kind().into(),
                source: source.reference(),
                commit: source.commit().map(str::to_owned),
                ready: false,
                error: None,
                id: None,
                name: None,
                summary: None,
                package_count: 0,
            };
            match self.load(source).await {
                Ok(repo) => {
                    view.ready = true;
                    view.id = Some(repo.info.id.clone());
                    view.name = Some(repo.info.name.clone());
                    view.summary = Some(repo.info.summary.clone());
                    view.package_count = repo.packages.len();
                    packages.extend(repo.packages.iter().map(|p| package_view(&source.alias, p)));
                }
                Err(e) => view.error = Some(e),
            }
            repositories.push(view);
        }
        let installed = match core {
            Some(core) => {
                let dir = self.core_files(scope, core).await?;
                CoreFiles { dir: &dir }.registry()?.installed
            }
            None => Vec::new(),
        };
        Ok(PackageCatalog {
            repositories,
            packages,
            core: core.map(|c| c.to_string()),
            installed,
        })
    }

    /// Where the tenant's core lives, if it exists.
    async fn core_files(
        &self,
        scope: &PrincipalScope,
        core: &CoreId,
    ) -> Result<PathBuf, PackageError> {
        if !self.cores.exists(scope.tenant(), core) {
            return Err(PackageError::NotFound(format!(
                "no core {:?} in this tenant",
                core.as_str()
            )));
        }
        Ok(self.cores.agents_dir(scope.tenant()).join(core.as_str()))
    }

    /// Install `package` of repository `alias` into `core` (tenant admins),
    /// or upgrade it when `upgrade` and it is installed.
    #[allow(clippy::too_many_arguments)]
    pub async fn install(
        &self,
        scope: &PrincipalScope,
        via: &Surface,
        core: &CoreId,
        alias: &str,
        package: &str,
        options: Map<String, Value>,
        upgrade: bool,
    ) -> Result<PackageChange, PackageError> {
        scope
            .require_admin("install packages")
            .map_err(|e| PackageError::Forbidden(e.to_string()))?;
        let source = self.source(scope.tenant(), alias).await?;
        let repo = self
            .load(&source)
            .await
            .map_err(|e| PackageError::Unavailable(format!("package repository {alias}: {e}")))?;
        let listed = repo.find(package).ok_or_else(|| {
            PackageError::NotFound(format!("no package {package:?} in repository {alias}"))
        })?;
        let recipe = listed
            .recipe
            .as_ref()
            .map_err(|e| PackageError::Unprocessable(format!("package {package} is invalid: {e}")))?
            .clone();
        if let Some(why) = &listed.unsupported {
            return Err(PackageError::Unprocessable(format!(
                "package {package}: {why}"
            )));
        }
        let dir = self.core_files(scope, core).await?;
        let reference = source.reference();
        let origin = plan::Origin {
            alias,
            kind: source.kind(),
            reference: Some(reference.as_str()),
            commit: source.commit(),
        };
        let now = crate::time::rfc3339(crate::time::now_ms());
        let files = CoreFiles { dir: &dir };
        let was_installed = files
            .registry()?
            .installed
            .iter()
            .any(|i| i.package_id == recipe.id);
        let planned = plan::install(&repo, &origin, &recipe, &options, &files, upgrade, &now)?;
        let (action, audit_action) = if was_installed {
            ("upgrade", "package.upgraded")
        } else {
            ("install", "package.installed")
        };
        let change = self
            .apply(
                scope,
                via,
                core,
                planned.edits,
                format!("package {action}: {alias}/{}", recipe.id),
                audit_action,
                json!({"package": recipe.id, "repository": alias, "commit": source.commit()}),
            )
            .await?;
        Ok(PackageChange {
            action: action.into(),
            core: core.to_string(),
            package: recipe.id.clone(),
            repository: alias.to_owned(),
            revision: change.revision,
            previous: change.previous,
            warnings: planned.warnings,
            record: planned.record,
        })
    }

    /// Uninstall `package` from `core` (tenant admins); `force` removes
    /// files changed since the install too.
    pub async fn uninstall(
        &self,
        scope: &PrincipalScope,
        via: &Surface,
        core: &CoreId,
        package: &str,
        force: bool,
    ) -> Result<PackageChange, PackageError> {
        scope
            .require_admin("uninstall packages")
            .map_err(|e| PackageError::Forbidden(e.to_string()))?;
        let dir = self.core_files(scope, core).await?;
        let planned = plan::uninstall(&CoreFiles { dir: &dir }, package, force)?;
        let change = self
            .apply(
                scope,
                via,
                core,
                planned.edits,
                format!("package uninstall: {package}"),
                "package.uninstalled",
                json!({"package": package, "repository": planned.record.repository_alias}),
            )
            .await?;
        Ok(PackageChange {
            action: "uninstall".into(),
            core: core.to_string(),
            package: package.to_owned(),
            repository: planned.record.repository_alias.clone(),
            revision: change.revision,
            previous: change.previous,
            warnings: planned.warnings,
            record: planned.record,
        })
    }

    #[allow(clippy::too_many_arguments)]
    async fn apply(
        &self,
        scope: &PrincipalScope,
        via: &Surface,
        core: &CoreId,
        edits: Vec<(String, FileEdit)>,
        message: String,
        action: &str,
        detail: Value,
    ) -> Result<CoreChange, PackageError> {
        let edits = edits
            .into_iter()
            .map(|(path, e)| {
                let path = CoreFilePath::parse(&path)
                    .map_err(|e| PackageError::Invalid(format!("{path}: {}", e.0)))?;
                Ok((
                    path,
                    match e {
                        FileEdit::Put(b) => Edit::Put(b),
                        FileEdit::Delete => Edit::Delete,
                        FileEdit::DeleteTree => Edit::DeleteTree,
                    },
                ))
            })
            .collect::<Result<Vec<_>, PackageError>>()?;
        self.changes
            .change_recorded(scope, via, core, edits, message, action, detail)
            .await
            .map_err(|e| match e {
                CoreEditError::WouldBreak(m) => PackageError::Unprocessable(format!(
                    "the core would not load with this change, so nothing changed: {m}"
                )),
                other => PackageError::Core(other),
            })
    }

    /// Sync a git repository at its pinned commit (a folder one is only
    /// verified). An `https://` URL passes the URL policy first and git
    /// reaches only the addresses it accepted.
    pub async fn sync(
        &self,
        scope: &PrincipalScope,
        alias: &str,
    ) -> Result<RepositoryView, PackageError> {
        scope
            .require_admin("sync package repositories")
            .map_err(|e| PackageError::Forbidden(e.to_string()))?;
        let source = self.source(scope.tenant(), alias).await?;
        source
            .still_admitted(&self.trust.tenant_prefixes)
            .map_err(|e| PackageError::Unavailable(format!("package repository {alias}: {e}")))?;
        if let Origin::Git { url, commit } = &source.origin {
            let pinned = if url.starts_with("https://") {
                let verdict = self.walls.outbound.check(url).await;
                if !verdict.allowed {
                    return Err(PackageError::Unavailable(format!(
                        "package repository {alias}: the URL policy refuses {}: {}",
                        verdict.origin, verdict.reason
                    )));
                }
                let parsed =
                    url::Url::parse(url).map_err(|e| PackageError::Invalid(e.to_string()))?;
                Some((
                    parsed.host_str().unwrap_or_default().to_owned(),
                    parsed.port_or_known_default().unwrap_or(443),
                    verdict.addresses.clone(),
                ))
            } else {
                None
            };
            let (home, dir, url, commit) = (
                self.home.clone(),
                source.synced_dir(&self.home),
                url.clone(),
                commit.clone(),
            );
            let tenant_source = source.tenant.is_some();
            let prefixes = self.trust.tenant_prefixes.clone();
            let (walls, tenant) = (self.walls.clone(), scope.tenant().clone());
            // git runs as the tenant's own commands do: confined, the
            // staging folder its only writable place, the network only for
            // an https fetch, a local source readable.
            tokio::task::spawn_blocking(move || {
                let owner = walls.sandbox.workspace_owner(tenant.as_str());
                let local: Vec<PathBuf> = if url.starts_with('/') {
                    // A tenant's folder is judged as the disk has it: a
                    // symlink out of the operator's folder does not pass.
                    let real = std::fs::canonicalize(&url).map_err(|e| format!("{url}: {e}"))?;
                    if tenant_source {
                        let real_prefixes: Vec<String> = prefixes
                            .iter()
                            .filter_map(|p| std::fs::canonicalize(p).ok())
                            .map(|p| format!("{}/", p.display()))
                            .collect();
                        let shown = format!("{}/", real.display());
                        if !real_prefixes.iter().any(|p| shown.starts_with(p.as_str())) {
                            return Err(format!(
                                "{url} is not under a folder this server lets tenants use"
                            ));
                        }
                    }
                    vec![real]
                } else {
                    Vec::new()
                };
                let staging = sources::staging_dir(&dir, owner)?;
                let runner = crate::core::git::GitRunner::for_tenant(
                    Some(&walls.sandbox),
                    &home,
                    &crate::core::git::GitScope {
                        tenant: &tenant,
                        workdir: &staging,
                        network: pinned.is_some(),
                        read_only: &local,
                    },
                )
                .map_err(|e| {
                    let _ = std::fs::remove_dir_all(&staging);
                    e.to_string()
                })?;
                sources::sync_git(
                    &runner,
                    &dir,
                    &staging,
                    &url,
                    &commit,
                    pinned
                        .as_ref()
                        .map(|(h, p, a)| (h.as_str(), *p, a.as_slice())),
                )
            })
            .await
            .map_err(|e| PackageError::Unavailable(e.to_string()))?
            .map_err(|e| PackageError::Unavailable(format!("package repository {alias}: {e}")))?;
        }
        self.view_of(scope, alias).await
    }
}

impl Packages {
    /// Add a git repository for the caller's tenant (tenant admins), where
    /// the operator allows it; listed at once, usable once synced.
    pub async fn add_repository(
        &self,
        scope: &PrincipalScope,
        via: &Surface,
        alias: &str,
        url: &str,
        commit: &str,
    ) -> Result<RepositoryView, PackageError> {
        scope
            .require_admin("add package repositories")
            .map_err(|e| PackageError::Forbidden(e.to_string()))?;
        if self.trust.tenant_prefixes.is_empty() {
            return Err(PackageError::Forbidden(
                "this server does not let tenants add package repositories (the operator's --tenant-package-source)"
                    .into(),
            ));
        }
        let source = Source::tenant(
            scope.tenant(),
            alias,
            url,
            commit,
            &self.trust.tenant_prefixes,
        )
        .map_err(PackageError::Invalid)?;
        if self.trust.sources.iter().any(|s| s.alias == alias) {
            return Err(PackageError::Conflict(format!(
                "{alias:?} is a repository of the server operator's; choose another alias"
            )));
        }
        let Origin::Git { url, commit } = &source.origin else {
            return Err(PackageError::Invalid("a tenant's repository is git".into()));
        };
        let audit = scope.audit(
            via,
            "package.repository_added",
            alias,
            json!({"url": url, "commit": commit}),
        );
        let added = self
            .store
            .add_tenant_package_repository(
                scope.tenant(),
                alias,
                url,
                commit,
                scope.principal(),
                &audit,
            )
            .await
            .map_err(|e| PackageError::Core(CoreEditError::Internal(e.into())))?;
        if added.is_none() {
            return Err(PackageError::Conflict(format!(
                "this tenant has a package repository {alias:?} already; remove it first"
            )));
        }
        self.view_of(scope, alias).await
    }

    /// Remove one of the tenant's own repositories (tenant admins) and its
    /// synced copy; packages installed from it stay installed.
    pub async fn remove_repository(
        &self,
        scope: &PrincipalScope,
        via: &Surface,
        alias: &str,
    ) -> Result<(), PackageError> {
        scope
            .require_admin("remove package repositories")
            .map_err(|e| PackageError::Forbidden(e.to_string()))?;
        if self.trust.sources.iter().any(|s| s.alias == alias) {
            return Err(PackageError::Forbidden(format!(
                "{alias:?} is configured by the server operator"
            )));
        }
        let source = self.source(scope.tenant(), alias).await?;
        let audit = scope.audit(via, "package.repository_removed", alias, json!({}));
        let removed = self
            .store
            .remove_tenant_package_repository(scope.tenant(), alias, &audit)
            .await
            .map_err(|e| PackageError::Core(CoreEditError::Internal(e.into())))?;
        if !removed {
            return Err(PackageError::NotFound(format!(
                "no package repository {alias:?} on this server"
            )));
        }
        let dir = source.synced_dir(&self.home);
        let _ = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(dir)).await;
        Ok(())
    }

    async fn view_of(
        &self,
        scope: &PrincipalScope,
        alias: &str,
    ) -> Result<RepositoryView, PackageError> {
        self.list(scope, None)
            .await?
            .repositories
            .into_iter()
            .find(|r| r.alias == alias)
            .ok_or_else(|| PackageError::NotFound(alias.to_owned()))
    }
}

fn package_view(alias: &str, p: &repository::Listed) -> PackageView {
    match &p.recipe {
        Ok(r) => PackageView {
            repository: alias.to_owned(),
            id: r.id.clone(),
            name: r.name.clone(),
            summary: r.summary.clone(),
            tags: r.tags.clone(),
            options: r
                .options
                .iter()
                .map(|o| {
                    json!({"id": o.id, "type": o.kind.as_str(), "prompt": o.prompt,
                        "description": o.description, "required": o.required, "choices": o.choices,
                        "default": if o.is_secret() { Value::Null } else { o.default.clone().unwrap_or(Value::Null) }})
                })
                .collect(),
            capabilities: r.capabilities.clone(),
            components: r
                .components
                .iter()
                .map(|c| json!({"id": c.id, "kind": c.kind.as_str()}))
                .collect(),
            requires: r.requires.clone(),
            manual_dependencies: r.manual_dependencies.clone(),
            valid: true,
            error: None,
            unsupported: p.unsupported.clone(),
        },
        Err(e) => PackageView {
            repository: alias.to_owned(),
            id: p.file.clone(),
            name: p.file.clone(),
            summary: String::new(),
            tags: Vec::new(),
            options: Vec::new(),
            capabilities: Vec::new(),
            components: Vec::new(),
            requires: Vec::new(),
            manual_dependencies: Vec::new(),
            valid: false,
            error: Some(e.clone()),
            unsupported: None,
        },
    }
}

//! Packages: the operator's trusted repositories and their packages
//! (`GET /v1/packages`, any member), installs, upgrades and removals in a
//! core (tenant admins), syncing a git repository at its pin, and the
//! tenant's own repositories where the operator allows them.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, ApiResult, ErrorBody};
use super::extract::{ApiJson, ApiPath, ApiQuery, Auth, Via};
use crate::app::SharedApp;
use crate::ids::CoreId;
use crate::packages::{PackageCatalog, PackageChange, PackageError, RepositoryView};

impl From<PackageError> for ApiError {
    fn from(e: PackageError) -> Self {
        match e {
            PackageError::NotFound(m) => ApiError::new(StatusCode::NOT_FOUND, "not_found", m),
            PackageError::Forbidden(m) => ApiError::new(StatusCode::FORBIDDEN, "forbidden", m),
            PackageError::Invalid(m) => {
                ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", m)
            }
            PackageError::Unprocessable(m) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "package_invalid", m)
            }
            PackageError::Conflict(m) => ApiError::new(StatusCode::CONFLICT, "conflict", m),
            PackageError::Unavailable(m) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "repository_unavailable", m)
            }
            PackageError::Core(e) => e.into(),
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// A core of the tenant: its installed packages are listed too.
    #[param(pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")]
    pub core: Option<String>,
}

/// The repositories the server operator trusts, their packages (an
/// invalid one with why, one this server cannot install with why), and
/// with `?core=` what is installed in that core.
#[utoipa::path(get, path = "/v1/packages", tag = "packages", params(ListQuery),
    responses((status = 200, body = PackageCatalog), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list_packages(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<PackageCatalog>> {
    let core = match q.core.as_deref() {
        Some(c) => Some(CoreId::parse(c)?),
        None => None,
    };
    Ok(Json(app.packages.list(&scope, core.as_ref()).await?))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InstallRequest {
    /// The repository's alias (as listed).
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
    )]
    pub repository: String,
    /// The package id.
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
    )]
    pub package: String,
    /// Option answers by id (secret options are tenant credentials, never answered here).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub options: Map<String, Value>,
    /// Replace the installed version of the package (one revision).
    #[serde(default)]
    pub upgrade: bool,
}

/// Install a package into a core, or upgrade it (tenant admins): one new
/// live revision, checked to load first.
#[utoipa::path(post, path = "/v1/cores/{core}/packages", tag = "packages", request_body = InstallRequest,
    params(("core" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description = "Core id")),
    responses((status = 201, body = PackageChange), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, description = "a target is another package's, a requirement is missing, or it is installed already", body = ErrorBody),
        (status = 422, description = "the package is invalid or unsupported here, or the core would not load with it", body = ErrorBody),
        (status = 503, description = "the repository is not ready (not synced, pin mismatch)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn install_package(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiPath(core): ApiPath<String>,
    ApiJson(req): ApiJson<InstallRequest>,
) -> ApiResult<(StatusCode, Json<PackageChange>)> {
    let core = CoreId::parse(&core)?;
    let done = app
        .packages
        .install(
            &scope,
            &via,
            &core,
            &req.repository,
            &req.package,
            req.options,
            req.upgrade,
        )
        .await?;
    Ok((StatusCode::CREATED, Json(done)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UninstallQuery {
    /// Remove files changed since the install too.
    pub force: Option<bool>,
}

/// Uninstall a package from a core (tenant admins): its files and pipeline
/// entries go in one new revision; a shared library another package uses
/// stays.
#[utoipa::path(delete, path = "/v1/cores/{core}/packages/{package}", tag = "packages", params(
        ("core" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description = "Core id"),
        ("package" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", description = "Package id"),
        UninstallQuery),
    responses((status = 200, body = PackageChange), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, description = "another package needs it, or its files changed", body = ErrorBody),
        (status = 422, description = "the core would not load without it", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn uninstall_package(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiPath((core, package)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<UninstallQuery>,
) -> ApiResult<Json<PackageChange>> {
    let core = CoreId::parse(&core)?;
    if !crate::packages::recipe::valid_id(&package) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            format!("{package:?} is not a package id"),
        ));
    }
    let done = app
        .packages
        .uninstall(&scope, &via, &core, &package, q.force.unwrap_or(false))
        .await?;
    Ok(Json(done))
}

/// Sync a repository at its pin (tenant admins): a git one is fetched at
/// its commit through the URL policy; a folder one is checked.
#[utoipa::path(post, path = "/v1/packages/repositories/{alias}/sync", tag = "packages", params(
        ("alias" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", description = "Repository alias")),
    responses((status = 200, body = RepositoryView), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 503, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn sync_repository(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(alias): ApiPath<String>,
) -> ApiResult<Json<RepositoryView>> {
    Ok(Json(app.packages.sync(&scope, &alias).await?))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddRepository {
    /// The alias packages are installed by (unique in the tenant, not one of the operator's).
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
    )]
    pub alias: String,
    /// A git repository under one of the operator's `--tenant-package-source` prefixes.
    #[schema(min_length = 1, max_length = 512)]
    pub url: String,
    /// The full commit it is pinned to.
    #[schema(min_length = 40, max_length = 40, pattern = "^[0-9a-fA-F]{40}$")]
    pub commit: String,
}

/// Add a git repository of the tenant's own (tenant admins), where the
/// server operator allows it; sync it before installing from it.
#[utoipa::path(post, path = "/v1/packages/repositories", tag = "packages", request_body = AddRepository,
    responses((status = 201, body = RepositoryView), (status = 400, body = ErrorBody),
        (status = 403, description = "not an admin, or the operator lets no tenant add repositories", body = ErrorBody),
        (status = 409, description = "the alias is taken", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn add_repository(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiJson(req): ApiJson<AddRepository>,
) -> ApiResult<(StatusCode, Json<RepositoryView>)> {
    let view = app
        .packages
        .add_repository(&scope, &via, &req.alias, &req.url, &req.commit)
        .await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Remove one of the tenant's own repositories (tenant admins); packages
/// installed from it stay installed.
#[utoipa::path(delete, path = "/v1/packages/repositories/{alias}", tag = "packages", params(
        ("alias" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$", description = "Repository alias")),
    responses((status = 204), (status = 400, body = ErrorBody),
        (status = 403, description = "not an admin, or the operator's repository", body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn remove_repository(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiPath(alias): ApiPath<String>,
) -> ApiResult<StatusCode> {
    if !crate::packages::recipe::valid_id(&alias) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            format!("{alias:?} is not a repository alias"),
        ));
    }
    app.packages.remove_repository(&scope, &via, &alias).await?;
    Ok(StatusCode::NO_CONTENT)
}

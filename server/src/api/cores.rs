//! A tenant's Agent Cores: list, describe, read and write files, versions
//! and diffs. Everyone in the tenant reads; tenant operators and admins
//! write. A core of another tenant is simply not in the caller's tree.
//! A write moves the core's live revision, so the `allow_session` grants of
//! its sessions die with it.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, ApiResult, ErrorBody};
use super::extract::{ApiPath, ApiQuery, Auth, Via};
use crate::app::SharedApp;
use crate::core::edit::{
    CoreChange, CoreDetail, CoreDiff, CoreEditError, CoreSummary, CoreVersion,
};
use crate::core::path::{commit_message, CoreFilePath, RevisionSpec};
use crate::ids::CoreId;

/// The shape of a core file path in the document: `/`-separated segments
/// that do not start with `.`, without backslashes or control characters.
pub(super) const FILE_PATTERN: &str = "^[^./\\\\\\u0000-\\u001f\\u007f-\\u009f][^/\\\\\\u0000-\\u001f\\u007f-\\u009f]*(/[^./\\\\\\u0000-\\u001f\\u007f-\\u009f][^/\\\\\\u0000-\\u001f\\u007f-\\u009f]*)*$";

impl From<CoreEditError> for ApiError {
    fn from(e: CoreEditError) -> Self {
        match e {
            CoreEditError::NotFound => ApiError::not_found(),
            CoreEditError::Forbidden(m) => ApiError::new(StatusCode::FORBIDDEN, "forbidden", m),
            CoreEditError::Invalid(m) => {
                ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", m)
            }
            CoreEditError::Conflict(m) => ApiError::new(StatusCode::CONFLICT, "conflict", m),
            CoreEditError::TooLarge(m) => {
                ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", m)
            }
            CoreEditError::WouldBreak(m) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "core_invalid", m)
            }
            CoreEditError::GatesFailed(ref report) => {
                let details = serde_json::json!({ "gates": report });
                ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "gates_failed",
                    e.to_string(),
                )
                .with_details(details)
            }
            CoreEditError::McpReviewRequired { message, review } => {
                ApiError::new(StatusCode::CONFLICT, "mcp_review_required", message)
                    .with_details(serde_json::json!({ "mcp_security_review": review }))
            }
            CoreEditError::Internal(e) => crate::error::Error::Internal(e).into(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CoreList {
    pub cores: Vec<CoreSummary>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct VersionList {
    pub core: String,
    /// Newest first.
    pub versions: Vec<CoreVersion>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChangeQuery {
    /// Commit message (default: `update <core>/<path>` or `delete <core>/<path>`); at most 500 characters.
    /// No control characters but newlines and tabs, and not only whitespace.
    #[param(
        min_length = 1,
        max_length = 500,
        pattern = "^[^\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f]*[^\\s\\x00-\\x1f\\x7f-\\x9f][^\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f]*$"
    )]
    pub message: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct VersionsQuery {
    /// Most versions to return, 1 to 200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DiffQuery {
    /// `live`, `previous` or a commit id (4 to 40 hex digits).
    #[param(pattern = "^(live|previous|[0-9a-fA-F]{4,40})$")]
    pub from: String,
    /// Same forms as `from` (default `live`).
    #[param(pattern = "^(live|previous|[0-9a-fA-F]{4,40})$")]
    pub to: Option<String>,
}

fn core_id(raw: &str) -> ApiResult<CoreId> {
    Ok(CoreId::parse(raw)?)
}

fn file_path(raw: &str) -> ApiResult<CoreFilePath> {
    CoreFilePath::parse(raw).map_err(|e| CoreEditError::Invalid(e.0).into())
}

fn message(raw: Option<String>) -> ApiResult<Option<String>> {
    raw.map(|m| commit_message(&m))
        .transpose()
        .map_err(|e| CoreEditError::Invalid(e.0).into())
}

/// The caller's tenant's cores and whether each loads.
#[utoipa::path(get, path = "/v1/cores", tag = "cores",
    responses((status = 200, body = CoreList)),
    security(("bearer" = [])))]
pub async fn list_cores(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
) -> ApiResult<Json<CoreList>> {
    let cores = app.cores.list_cores(scope.tenant()).await?;
    Ok(Json(CoreList { cores }))
}

/// One core: whether it loads (or why not), its files, its live and previous revisions.
#[utoipa::path(get, path = "/v1/cores/{core}", tag = "cores",
    params(("core" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description = "Core id")),
    responses((status = 200, body = CoreDetail), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get_core(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(core): ApiPath<String>,
) -> ApiResult<Json<CoreDetail>> {
    let core = core_id(&core)?;
    Ok(Json(app.cores.describe(scope.tenant(), &core).await?))
}

/// A core file's raw contents.
#[utoipa::path(get, path = "/v1/cores/{core}/files/{path}", tag = "cores",
    params(("core" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description = "Core id"),
        ("path" = String, Path, max_length = 255, description = "File path inside the core, `/`-separated; no `..`, no hidden segments")),
    responses((status = 200, description = "The file's text (`application/octet-stream` when it is not UTF-8)",
            content((String = "text/plain"), (Vec<u8> = "application/octet-stream"))),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get_core_file(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath((core, path)): ApiPath<(String, String)>,
) -> ApiResult<Response> {
    let core = core_id(&core)?;
    let path = file_path(&path)?;
    let bytes = app.cores.read_file(scope.tenant(), &core, &path).await?;
    let content_type = if std::str::from_utf8(&bytes).is_ok() {
        "text/plain; charset=utf-8"
    } else {
        "application/octet-stream"
    };
    Ok((
        [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
        bytes,
    )
        .into_response())
}

/// The body of a file write: `text/plain`, UTF-8, within the body limit.
fn text_body(headers: &HeaderMap, body: Result<Bytes, BytesRejection>) -> ApiResult<Vec<u8>> {
    let is_text = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("text/plain"));
    if !is_text {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "a core file is sent as `text/plain`",
        ));
    }
    let bytes = body.map_err(|rej| {
        let status = rej.status();
        let code = super::error::code_for(status);
        let status = if status.is_client_error() {
            status
        } else {
            StatusCode::BAD_REQUEST
        };
        ApiError::new(status, code, rej.body_text())
    })?;
    if let Err(e) = std::str::from_utf8(&bytes) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            format!("the body is not UTF-8 text (byte {})", e.valid_up_to()),
        ));
    }
    Ok(bytes.to_vec())
}

/// Write a core file (tenant operators and admins) as a new live revision;
/// refused with 422 and the loader's error when the core would no longer
/// load. `agent.yaml` of a core that does not exist creates the core. The
/// next turn of every session on the core sees the change.
#[utoipa::path(put, path = "/v1/cores/{core}/files/{path}", tag = "cores",
    params(("core" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description = "Core id"),
        ("path" = String, Path, max_length = 255, description = "File path inside the core, `/`-separated; no `..`, no hidden segments"),
        ChangeQuery),
    request_body(content = String, content_type = "text/plain", description = "The file's new text (UTF-8)"),
    responses((status = 200, body = CoreChange),
        (status = 400, description = "a path or message the server does not take", body = ErrorBody),
        (status = 403, description = "members may read cores but not change them", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "the path runs through a file, a link or names a folder", body = ErrorBody),
        (status = 415, description = "the body is not `text/plain`", body = ErrorBody),
        (status = 422, description = "the core would no longer load; the loader's error", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn put_core_file(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiPath((core, path)): ApiPath<(String, String)>,
    ApiQuery(query): ApiQuery<ChangeQuery>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Json<CoreChange>> {
    let core = core_id(&core)?;
    let path = file_path(&path)?;
    let message = message(query.message)?;
    let text = text_body(&headers, body)?;
    // Live moves: grants made for the old revision die with it.
    let change = app
        .core_changes
        .put_file(&scope, &via, &core, &path, text, message)
        .await?;
    Ok(Json(change))
}

/// Delete a core file (tenant operators and admins) as a new live revision;
/// refused with 422 and the loader's error when the core would no longer load.
#[utoipa::path(delete, path = "/v1/cores/{core}/files/{path}", tag = "cores",
    params(("core" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description = "Core id"),
        ("path" = String, Path, max_length = 255, description = "File path inside the core, `/`-separated; no `..`, no hidden segments"),
        ChangeQuery),
    responses((status = 200, body = CoreChange),
        (status = 400, description = "a path or message the server does not take", body = ErrorBody),
        (status = 403, description = "members may read cores but not change them", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "the path runs through a file, a link or names a folder", body = ErrorBody),
        (status = 422, description = "the core would no longer load; the loader's error", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete_core_file(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiPath((core, path)): ApiPath<(String, String)>,
    ApiQuery(query): ApiQuery<ChangeQuery>,
) -> ApiResult<Json<CoreChange>> {
    let core = core_id(&core)?;
    let path = file_path(&path)?;
    let message = message(query.message)?;
    let change = app
        .core_changes
        .delete_file(&scope, &via, &core, &path, message)
        .await?;
    Ok(Json(change))
}

/// The revisions that changed this core, newest first, with author and message.
#[utoipa::path(get, path = "/v1/cores/{core}/versions", tag = "cores",
    params(("core" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description = "Core id"),
        VersionsQuery),
    responses((status = 200, body = VersionList), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list_core_versions(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(core): ApiPath<String>,
    ApiQuery(query): ApiQuery<VersionsQuery>,
) -> ApiResult<Json<VersionList>> {
    let core = core_id(&core)?;
    let limit = query.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(CoreEditError::Invalid("limit must be 1 to 200".into()).into());
    }
    let versions = app
        .cores
        .versions(scope.tenant(), &core, limit as usize)
        .await?;
    Ok(Json(VersionList {
        core: core.to_string(),
        versions,
    }))
}

/// What changed in this core between two revisions (unified diff, core-relative paths).
#[utoipa::path(get, path = "/v1/cores/{core}/diff", tag = "cores",
    params(("core" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description = "Core id"),
        DiffQuery),
    responses((status = 200, body = CoreDiff),
        (status = 404, description = "no such core, or a revision this tenant's tree does not have", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn diff_core(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(core): ApiPath<String>,
    ApiQuery(query): ApiQuery<DiffQuery>,
) -> ApiResult<Json<CoreDiff>> {
    let core = core_id(&core)?;
    let from = RevisionSpec::parse(&query.from).map_err(CoreEditError::from)?;
    let to = match query.to.as_deref() {
        None => RevisionSpec::Live,
        Some(t) => RevisionSpec::parse(t).map_err(CoreEditError::from)?,
    };
    Ok(Json(
        app.cores.diff(scope.tenant(), &core, &from, &to).await?,
    ))
}

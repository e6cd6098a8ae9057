//! Sessions: create, list (cursor-paginated), get; always the caller's own.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, ApiResult, ErrorBody};
use super::extract::{ApiJson, ApiPath, ApiQuery, Auth};
use crate::app::SharedApp;
use crate::ids::SessionId;
use crate::store::SessionRow;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSession {
    /// Free text, at most 200 characters.
    #[schema(max_length = 200)]
    pub title: Option<String>,
    /// The Agent Core to run (default `assistant`); one of the tenant's cores.
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")]
    pub core: Option<String>,
    /// One of the caller's own workspace folders (default `default`).
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")]
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SessionView {
    pub id: String,
    pub title: String,
    pub core: String,
    pub workspace: String,
    pub provider: String,
    /// RFC 3339.
    pub created_at: String,
    pub updated_at: String,
    /// Highest event `seq` so far.
    pub last_seq: i64,
}

impl From<SessionRow> for SessionView {
    fn from(r: SessionRow) -> Self {
        Self {
            id: r.id.to_string(),
            title: r.title,
            core: r.core,
            workspace: r.workspace,
            provider: r.provider,
            created_at: crate::time::rfc3339(r.created_at),
            updated_at: crate::time::rfc3339(r.updated_at),
            last_seq: r.last_seq,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SessionPage {
    pub items: Vec<SessionView>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// The `next_cursor` of the previous page (empty: the first page).
    #[param(
        pattern = "^(|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"
    )]
    pub cursor: Option<String>,
    /// Page size, 1 to 200 (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
}

/// Parse a session id from the path; malformed ids never reach a query.
pub(super) fn session_id(raw: &str) -> Result<SessionId, ApiError> {
    SessionId::parse(raw).map_err(|e| crate::error::Error::from(e).into())
}

/// Create a session owned by the caller.
#[utoipa::path(post, path = "/v1/sessions", tag = "sessions", request_body = CreateSession,
    responses((status = 201, body = SessionView), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create_session(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiJson(req): ApiJson<CreateSession>,
) -> ApiResult<(StatusCode, Json<SessionView>)> {
    let row = app
        .create_session(
            &scope,
            crate::app::SessionRequest {
                title: req.title,
                core: req.core,
                workspace: req.workspace,
            },
        )
        .await?;
    Ok((StatusCode::CREATED, Json(row.into())))
}

/// The caller's sessions, newest first.
#[utoipa::path(get, path = "/v1/sessions", tag = "sessions", params(ListQuery),
    responses((status = 200, body = SessionPage), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list_sessions(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<SessionPage>> {
    let limit = q.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(crate::error::Error::Invalid(format!(
            "limit {limit} is not between 1 and 200"
        ))
        .into());
    }
    let cursor = match q.cursor.as_deref().filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => Some(SessionId::parse(c).map_err(|_| {
            crate::error::Error::Invalid(format!(
                "cursor {:?} is not a cursor from this API",
                c.chars().take(40).collect::<String>()
            ))
        })?),
    };
    let mut rows = app
        .store
        .list_sessions(scope.tenant(), scope.principal(), cursor, limit + 1)
        .await?;
    let next_cursor = if rows.len() > limit as usize {
        rows.truncate(limit as usize);
        rows.last().map(|r| r.id.to_string())
    } else {
        None
    };
    Ok(Json(SessionPage {
        items: rows.into_iter().map(Into::into).collect(),
        next_cursor,
    }))
}

/// One of the caller's sessions.
#[utoipa::path(get, path = "/v1/sessions/{id}", tag = "sessions", params(("id" = String, Path, format = Uuid, description = "Session id")),
    responses((status = 200, body = SessionView), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get_session(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<SessionView>> {
    let id = session_id(&id)?;
    let row = app
        .store
        .get_session(scope.tenant(), scope.principal(), id)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(Json(row.into()))
}

//! The session's resolved tool catalog, as `tools_list` shows it.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::Value;

use super::error::{ApiError, ApiResult, ErrorBody};
use super::extract::{ApiPath, Auth};
use super::sessions::session_id;
use crate::app::SharedApp;
use crate::ids::CoreId;

/// The tools a turn of this session can see and call.
#[utoipa::path(get, path = "/v1/sessions/{id}/tools", tag = "tools",
    params(("id" = String, Path, format = Uuid, description = "Session id")),
    responses((status = 200, description = "`{\"core_id\", \"tools\": [...], \"unavailable\": [...]}`", body = Object),
        (status = 404, body = ErrorBody), (status = 409, description = "the session's core fails to load", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list_tools(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    let sid = session_id(&id)?;
    let session = app
        .store
        .get_session_cached(scope.tenant(), scope.principal(), sid)
        .await?
        .ok_or_else(ApiError::not_found)?;
    let core = CoreId::parse(&session.core)?;
    let view = app
        .cores
        .load(scope.tenant(), &core)
        .await
        .map_err(|e| ApiError::new(StatusCode::CONFLICT, "core_load_failed", e))?;
    // Tools of the MCP connections this principal already has.
    match app
        .dispatcher
        .mcp_listing(&scope, &view.resolved, &view.mcp)
    {
        Some(extended) => Ok(Json(extended.listing())),
        None => Ok(Json(view.resolved.listing())),
    }
}

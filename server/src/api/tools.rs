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

/// The tenant's MCP connections.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct McpConnections {
    pub items: Vec<crate::mcp::runtime::ConnectionInfo>,
}

/// The tenant's MCP server connections with their state and last error
/// (operators only): every principal's, live, failed (negative cache) or
/// left unconnected by the last turn. Never an env or header value.
#[utoipa::path(get, path = "/v1/mcp/connections", tag = "tools",
    responses((status = 200, body = McpConnections), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list_mcp_connections(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
) -> ApiResult<Json<McpConnections>> {
    if !scope.is_operator() {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "MCP connections are visible to the tenant's operators",
        ));
    }
    Ok(Json(McpConnections {
        items: app.dispatcher.mcp_connections(&scope),
    }))
}

//! The session's resolved tool catalog, as `tools_list` shows it.

use axum::extract::{Path, State};
use axum::Json;
use serde_json::{json, Value};

use super::error::{ApiError, ApiResult, ErrorBody};
use super::extract::Auth;
use super::sessions::session_id;
use crate::app::SharedApp;
use crate::catalog::ResolvedCatalog;

/// The tools a turn of this session can see and call.
#[utoipa::path(get, path = "/v1/sessions/{id}/tools", tag = "tools",
    params(("id" = String, Path, description = "Session id")),
    responses((status = 200, description = "`{\"tools\": [...]}`", body = Object), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list_tools(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let sid = session_id(&id)?;
    app.store
        .get_session_cached(scope.tenant(), scope.principal(), sid)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(Json(json!({"tools": ResolvedCatalog::build().listing()})))
}

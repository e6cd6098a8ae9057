//! Principals of the caller's tenant (tenant admins): list, disable and enable.

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiPath, Auth, Via};
use crate::app::SharedApp;
use crate::auth::admin;
use crate::ids::PrincipalId;

#[derive(Debug, Serialize, ToSchema)]
pub struct PrincipalState {
    pub tenant: String,
    pub principal: String,
    /// While true, every token of the principal is refused (401).
    pub disabled: bool,
}

/// A principal of the caller's tenant as its admins see it.
#[derive(Debug, Serialize, ToSchema)]
pub struct PrincipalView {
    pub principal: String,
    /// The role recorded when it was first seen; each token carries its own.
    pub role: String,
    pub disabled: bool,
    pub created_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PrincipalList {
    pub principals: Vec<PrincipalView>,
}

/// The principals of the caller's tenant (tenant admins).
#[utoipa::path(get, path = "/v1/principals", tag = "tokens",
    responses((status = 200, body = PrincipalList), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list_principals(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
) -> ApiResult<Json<PrincipalList>> {
    admin::may_administer(&scope)?;
    let rows = app.store.list_principals(scope.tenant()).await?;
    Ok(Json(PrincipalList {
        principals: rows
            .into_iter()
            .map(|r| PrincipalView {
                principal: r.id,
                role: r.role,
                disabled: r.disabled_at.is_some(),
                created_at: crate::time::rfc3339(r.created_at),
            })
            .collect(),
    }))
}

async fn set(
    app: SharedApp,
    scope: crate::auth::PrincipalScope,
    via: crate::store::Surface,
    id: &str,
    disabled: bool,
) -> ApiResult<Json<PrincipalState>> {
    admin::may_administer(&scope)?;
    let principal = PrincipalId::parse(id)?;
    admin::set_disabled(
        &app.revocations,
        &app.store,
        &scope,
        &via,
        principal.clone(),
        disabled,
    )
    .await?;
    Ok(Json(PrincipalState {
        tenant: scope.tenant().to_string(),
        principal: principal.to_string(),
        disabled,
    }))
}

/// Disable a principal of the caller's tenant: all its tokens are refused on
/// every instance within a second (tenant admins; not yourself).
#[utoipa::path(post, path = "/v1/principals/{id}/disable", tag = "tokens",
    params(("id" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$", description = "Principal id")),
    responses((status = 200, body = PrincipalState), (status = 400, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 409, description = "disabling yourself", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn disable_principal(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<PrincipalState>> {
    set(app, scope, via, &id, true).await
}

/// Enable a principal again; tokens revoked meanwhile stay revoked.
#[utoipa::path(post, path = "/v1/principals/{id}/enable", tag = "tokens",
    params(("id" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$", description = "Principal id")),
    responses((status = 200, body = PrincipalState), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn enable_principal(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<PrincipalState>> {
    set(app, scope, via, &id, false).await
}

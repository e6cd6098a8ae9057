//! Tokens of the caller's tenant (tenant admins): issue and revoke.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiJson, Auth, Via};
use crate::app::SharedApp;
use crate::auth::{admin, Role};
use crate::error::Error;
use crate::ids::PrincipalId;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IssueToken {
    /// The principal of your tenant (created if missing).
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$")]
    pub principal: String,
    /// `member` (default), `operator` or `admin`.
    #[schema(pattern = "^(member|operator|admin)$")]
    pub role: Option<String>,
    /// Lifetime, e.g. `1h` (default), `30m`, `7d`; at most the server's `--token-max-ttl`.
    pub ttl: Option<String>,
    /// Optional; when given it must be your own tenant.
    #[schema(pattern = "^[a-z0-9][a-z0-9_-]{0,62}$")]
    pub tenant: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct IssuedTokenView {
    pub token: String,
    pub jti: String,
    pub tenant: String,
    pub principal: String,
    pub role: String,
    pub expires_at: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeTokens {
    /// Revoke the token with this `jti` (in your tenant); give exactly one of `jti` and `principal`.
    #[schema(max_length = 200, pattern = "\\S")]
    pub jti: Option<String>,
    /// Or revoke every token of this principal issued until now.
    #[schema(pattern = "^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$")]
    pub principal: Option<String>,
}

/// `RevokeTokens` takes exactly one of `jti` and `principal` (what
/// `admin::revoke_target` accepts); utoipa cannot derive that, `doc` patches it in.
pub(super) fn revoke_one_of() -> serde_json::Value {
    let one = |given: &str, absent: &str| {
        serde_json::json!({
            "required": [given],
            "properties": {given: {"type": "string"}, absent: {"type": "null"}}
        })
    };
    serde_json::json!([one("jti", "principal"), one("principal", "jti")])
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RevocationView {
    /// `jti` or `principal`.
    pub kind: String,
    pub tenant: String,
    pub jti: Option<String>,
    pub principal: Option<String>,
    /// Tokens of the principal issued at or before this time are refused.
    pub revoked_at: String,
}

fn secs_rfc3339(secs: u64) -> String {
    crate::time::rfc3339(i64::try_from(secs.saturating_mul(1000)).unwrap_or(i64::MAX))
}

/// Issue a token for a principal of the caller's tenant (tenant admins).
#[utoipa::path(post, path = "/v1/tokens", tag = "tokens", request_body = IssueToken,
    responses((status = 201, body = IssuedTokenView), (status = 400, body = ErrorBody),
        (status = 403, description = "not an admin, or another tenant", body = ErrorBody),
        (status = 409, description = "the principal is disabled", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn issue_token(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiJson(req): ApiJson<IssueToken>,
) -> ApiResult<(StatusCode, Json<IssuedTokenView>)> {
    let role = match req.role.as_deref() {
        None => Role::Member,
        Some(r) => Role::parse(r).ok_or_else(|| {
            Error::Invalid(format!("role {r:?} is not one of member, operator, admin"))
        })?,
    };
    admin::may_issue(&scope, req.tenant.as_deref(), role)?;
    let principal = PrincipalId::parse(&req.principal)?;
    let ttl = crate::config::parse_duration("ttl", req.ttl.as_deref().unwrap_or("1h"))
        .map_err(|e| Error::Invalid(e.0))?;
    let issued = admin::issue(
        &app.tokens,
        &app.revocations,
        &app.store,
        &scope,
        &via,
        admin::NewToken {
            principal: &principal,
            role,
            ttl,
        },
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(IssuedTokenView {
            token: issued.token,
            jti: issued.jti,
            tenant: scope.tenant().to_string(),
            principal: principal.to_string(),
            role: role.as_str().into(),
            expires_at: secs_rfc3339(issued.expires_at),
        }),
    ))
}

/// Revoke a token by `jti`, or every token of a principal issued until now,
/// in the caller's tenant (tenant admins). Every instance refuses them within a second.
#[utoipa::path(post, path = "/v1/tokens/revoke", tag = "tokens", request_body = RevokeTokens,
    responses((status = 200, body = RevocationView), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn revoke_tokens(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiJson(req): ApiJson<RevokeTokens>,
) -> ApiResult<Json<RevocationView>> {
    admin::may_administer(&scope)?;
    let target = admin::revoke_target(req.jti.as_deref(), req.principal.as_deref())?;
    let row = admin::revoke(&app.revocations, &app.store, &scope, &via, target).await?;
    Ok(Json(RevocationView {
        kind: row.kind,
        tenant: scope.tenant().to_string(),
        jti: row.jti,
        principal: row.principal_id,
        revoked_at: secs_rfc3339(u64::try_from(row.cutoff).unwrap_or(0)),
    }))
}

//! The caller's tenant policy: which approval risks members decide for
//! themselves. Operators and admins read it; only admins change it; a caller
//! can only ever address its own tenant.

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiJson, Auth, Via};
use crate::app::SharedApp;
use crate::error::Error;
use crate::policy::approval_authority::MemberMaxRisk;

#[derive(Debug, Serialize, ToSchema)]
pub struct TenantPolicyView {
    pub tenant: String,
    /// Highest risk a member may decide for itself: `none`, `low`, `medium`,
    /// `high` or `critical`. Above it, a tenant operator or admin decides.
    pub member_max_risk: String,
    /// True while the tenant uses the server's default (`high`).
    pub default: bool,
    pub updated_at: Option<String>,
    /// The admin who last changed it.
    pub updated_by: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetTenantPolicy {
    /// `none`, `low`, `medium`, `high` or `critical`.
    #[schema(pattern = "^(none|low|medium|high|critical)$")]
    pub member_max_risk: String,
}

/// The caller's tenant policy (tenant operators and admins).
#[utoipa::path(get, path = "/v1/tenant/policy", tag = "tenant",
    responses((status = 200, body = TenantPolicyView), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get_tenant_policy(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
) -> ApiResult<Json<TenantPolicyView>> {
    let (policy, row) = app.approvals.tenant_policy_record(&scope).await?;
    Ok(Json(TenantPolicyView {
        tenant: scope.tenant().to_string(),
        member_max_risk: policy.member_max_risk.as_str().to_owned(),
        default: row.is_none(),
        updated_at: row.as_ref().map(|r| crate::time::rfc3339(r.updated_at)),
        updated_by: row.map(|r| r.updated_by),
    }))
}

/// Change the caller's tenant policy (tenant admins); applies to approvals
/// requested from now on.
#[utoipa::path(put, path = "/v1/tenant/policy", tag = "tenant", request_body = SetTenantPolicy,
    responses((status = 200, body = TenantPolicyView), (status = 400, body = ErrorBody),
        (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn put_tenant_policy(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiJson(req): ApiJson<SetTenantPolicy>,
) -> ApiResult<Json<TenantPolicyView>> {
    let max = MemberMaxRisk::parse(&req.member_max_risk).ok_or_else(|| {
        Error::Invalid(format!(
            "member_max_risk {:?} is not one of none, low, medium, high, critical",
            req.member_max_risk.chars().take(40).collect::<String>()
        ))
    })?;
    let row = app.approvals.set_tenant_policy(&scope, &via, max).await?;
    Ok(Json(TenantPolicyView {
        tenant: scope.tenant().to_string(),
        member_max_risk: row.member_max_risk,
        default: false,
        updated_at: Some(crate::time::rfc3339(row.updated_at)),
        updated_by: Some(row.updated_by),
    }))
}

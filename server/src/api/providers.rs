//! The caller's tenant's own model provider keys: tenant admins set and
//! remove them, operators and admins see which are set. A key is sealed at
//! rest and never returned.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiJson, ApiPath, Auth, Via};
use crate::app::SharedApp;
use crate::error::Error;
use crate::store::ProviderKeyRow;
use crate::turn::TENANT_PROVIDERS;

#[derive(Debug, Serialize, ToSchema)]
pub struct ProviderKeyView {
    /// `openai` or `anthropic`.
    pub provider: String,
    /// Always true: listed providers have a key (which is never shown).
    pub configured: bool,
    pub updated_at: String,
    /// The admin who set it.
    pub updated_by: String,
}

impl From<ProviderKeyRow> for ProviderKeyView {
    fn from(r: ProviderKeyRow) -> Self {
        Self {
            provider: r.provider,
            configured: true,
            updated_at: crate::time::rfc3339(r.updated_at),
            updated_by: r.updated_by,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ProviderKeyList {
    pub providers: Vec<ProviderKeyView>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetProviderKey {
    /// The provider's API key (stored sealed; never returned).
    #[schema(min_length = 1, max_length = 4096, pattern = "^[\\x21-\\x7e]+$")]
    pub api_key: String,
}

fn provider(raw: &str) -> ApiResult<&'static str> {
    TENANT_PROVIDERS
        .iter()
        .find(|p| **p == raw)
        .copied()
        .ok_or_else(|| {
            Error::Invalid(format!(
                "provider {:?} is not one of: {}",
                raw.chars().take(40).collect::<String>(),
                TENANT_PROVIDERS.join(", ")
            ))
            .into()
        })
}

/// Which model providers the caller's tenant has its own key for (operators and admins).
#[utoipa::path(get, path = "/v1/tenant/providers", tag = "tenant",
    responses((status = 200, body = ProviderKeyList), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list_provider_keys(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
) -> ApiResult<Json<ProviderKeyList>> {
    let rows = app.turns.provider_keys(&scope).await?;
    Ok(Json(ProviderKeyList {
        providers: rows.into_iter().map(Into::into).collect(),
    }))
}

/// Set the tenant's own key for a provider (tenant admins); the tenant's
/// turns on that provider use it instead of the server operator's.
#[utoipa::path(put, path = "/v1/tenant/providers/{provider}", tag = "tenant",
    params(("provider" = String, Path, pattern = "^(openai|anthropic)$", description = "`openai` or `anthropic`")),
    request_body = SetProviderKey,
    responses((status = 200, body = ProviderKeyView), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn put_provider_key(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiPath(name): ApiPath<String>,
    ApiJson(req): ApiJson<SetProviderKey>,
) -> ApiResult<Json<ProviderKeyView>> {
    let name = provider(&name)?;
    let key = req.api_key.trim();
    if key.is_empty() || key.len() > 4096 || !key.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return Err(Error::Invalid(
            "api_key must be 1 to 4096 printable ASCII characters without spaces".into(),
        )
        .into());
    }
    let row = app.turns.set_provider_key(&scope, &via, name, key).await?;
    Ok(Json(row.into()))
}

/// Remove the tenant's own key for a provider (tenant admins).
#[utoipa::path(delete, path = "/v1/tenant/providers/{provider}", tag = "tenant",
    params(("provider" = String, Path, pattern = "^(openai|anthropic)$", description = "`openai` or `anthropic`")),
    responses((status = 204, description = "removed"), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete_provider_key(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<StatusCode> {
    let name = provider(&name)?;
    app.turns.delete_provider_key(&scope, &via, name).await?;
    Ok(StatusCode::NO_CONTENT)
}

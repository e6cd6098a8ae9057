//! The caller's tenant's credentials for its packages' tools (a provider's
//! API key, say): tenant admins set, list and remove them by name. A value
//! is sealed at rest, never returned, and reaches only the outgoing request
//! of a tool whose package names it.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiJson, ApiPath, Auth, Via};
use crate::app::SharedApp;
use crate::error::Error;
use crate::sealing::{valid_credential_name, CredentialView, MAX_CREDENTIAL_BYTES};

#[derive(Debug, Serialize, ToSchema)]
pub struct CredentialList {
    pub credentials: Vec<CredentialView>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetCredential {
    /// The value (stored sealed; never returned).
    #[schema(min_length = 1, max_length = 8192, pattern = "^[\\x21-\\x7e]+$")]
    pub value: String,
}

fn name(raw: &str) -> ApiResult<&str> {
    if valid_credential_name(raw) {
        Ok(raw)
    } else {
        Err(Error::Invalid(format!(
            "{:?} is not a credential name (`<package>.<option>`: letters, digits, `_`, `-`, `.`)",
            raw.chars().take(40).collect::<String>()
        ))
        .into())
    }
}

/// The tenant's credentials, by name (tenant admins); never a value.
#[utoipa::path(get, path = "/v1/tenant/credentials", tag = "tenant",
    responses((status = 200, body = CredentialList), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list_credentials(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
) -> ApiResult<Json<CredentialList>> {
    Ok(Json(CredentialList {
        credentials: app.credentials.list(&scope).await?,
    }))
}

/// Set a credential (tenant admins), e.g. `web_search_brave.api_key`.
#[utoipa::path(put, path = "/v1/tenant/credentials/{name}", tag = "tenant",
    params(("name" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$", description = "`<package>.<option>`")),
    request_body = SetCredential,
    responses((status = 200, body = CredentialView), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn put_credential(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiPath(raw): ApiPath<String>,
    ApiJson(req): ApiJson<SetCredential>,
) -> ApiResult<Json<CredentialView>> {
    let name = name(&raw)?;
    let value = req.value.as_str();
    if value.is_empty()
        || value.len() > MAX_CREDENTIAL_BYTES
        || !value.bytes().all(|b| (0x21..=0x7e).contains(&b))
    {
        return Err(Error::Invalid(format!(
            "value must be 1 to {MAX_CREDENTIAL_BYTES} printable ASCII characters without spaces"
        ))
        .into());
    }
    Ok(Json(app.credentials.set(&scope, &via, name, value).await?))
}

/// Remove a credential (tenant admins).
#[utoipa::path(delete, path = "/v1/tenant/credentials/{name}", tag = "tenant",
    params(("name" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$", description = "`<package>.<option>`")),
    responses((status = 204, description = "removed"), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete_credential(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiPath(raw): ApiPath<String>,
) -> ApiResult<StatusCode> {
    let name = name(&raw)?;
    if app.credentials.remove(&scope, &via, name).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(Error::NotFound.into())
    }
}

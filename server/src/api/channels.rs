//! Chat channel accounts (tenant operators and admins) and the platforms'
//! inbound webhooks. Thin: the host is [`crate::channels::Channels`].

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiJson, ApiPath, Auth, Via};
use crate::app::SharedApp;
use crate::channels::{AccountInfo, NewAccount, PairingApproved, PairingInfo};

#[derive(Debug, Serialize, ToSchema)]
pub struct AccountList {
    pub items: Vec<AccountInfo>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PairingList {
    pub items: Vec<PairingInfo>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovePairing {
    /// The 8-character code the bot gave the user (case and dashes ignored).
    #[schema(min_length = 1, max_length = 32)]
    pub code: String,
}

/// Add a chat account to the caller's tenant.
#[utoipa::path(post, path = "/v1/channels/accounts", tag = "channels", request_body = NewAccount,
    responses((status = 201, body = AccountInfo), (status = 400, body = ErrorBody),
        (status = 403, description = "not a tenant operator or admin", body = ErrorBody),
        (status = 409, description = "the tenant has an account of that name", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn create_account(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiJson(req): ApiJson<NewAccount>,
) -> ApiResult<(StatusCode, Json<AccountInfo>)> {
    let info = app.channels.create_account(&scope, &via, req).await?;
    Ok((StatusCode::CREATED, Json(info)))
}

/// The tenant's chat accounts with their delivery status (never credentials).
#[utoipa::path(get, path = "/v1/channels/accounts", tag = "channels",
    responses((status = 200, body = AccountList),
        (status = 403, description = "not a tenant operator or admin", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list_accounts(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
) -> ApiResult<Json<AccountList>> {
    let items = app.channels.list_accounts(&scope).await?;
    Ok(Json(AccountList { items }))
}

/// One account and its status: last inbound, last delivery, last error.
#[utoipa::path(get, path = "/v1/channels/accounts/{id}", tag = "channels",
    params(("id" = String, Path, format = Uuid, description = "Account id")),
    responses((status = 200, body = AccountInfo), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get_account(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<AccountInfo>> {
    Ok(Json(app.channels.get_account(&scope, &id).await?))
}

/// Remove an account, its conversations' bindings and its pending messages.
#[utoipa::path(delete, path = "/v1/channels/accounts/{id}", tag = "channels",
    params(("id" = String, Path, format = Uuid, description = "Account id")),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete_account(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    app.channels.delete_account(&scope, &via, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Users waiting for a pairing approval (their codes are not listed).
#[utoipa::path(get, path = "/v1/channels/accounts/{id}/pairings", tag = "channels",
    params(("id" = String, Path, format = Uuid, description = "Account id")),
    responses((status = 200, body = PairingList), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list_pairings(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<PairingList>> {
    let items = app.channels.list_pairings(&scope, &id).await?;
    Ok(Json(PairingList { items }))
}

/// Approve the pairing code a platform user was given: the user may talk to
/// the agent from now on. Repeated wrong codes lock approvals for 15 minutes.
#[utoipa::path(post, path = "/v1/channels/accounts/{id}/pairings", tag = "channels", request_body = ApprovePairing,
    params(("id" = String, Path, format = Uuid, description = "Account id")),
    responses((status = 200, body = PairingApproved), (status = 400, body = ErrorBody),
        (status = 403, body = ErrorBody),
        (status = 404, description = "no such account, or no pending pairing with this code", body = ErrorBody),
        (status = 429, description = "too many wrong codes; retry after `Retry-After` seconds", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn approve_pairing(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<ApprovePairing>,
) -> ApiResult<Json<PairingApproved>> {
    Ok(Json(
        app.channels
            .approve_pairing(&scope, &via, &id, &req.code)
            .await?,
    ))
}

/// A platform's webhook for one account (the account's `webhook_path`),
/// verified by the platform's own signature: Telegram's secret-token
/// header, Slack's `v0` signature (Events API JSON, or interactivity
/// `payload=` forms), Discord's Ed25519 signature, or the generic webhook's
/// `X-Demiurge-Signature`. The answer comes at once; the agent replies
/// through the platform's API.
#[utoipa::path(post, path = "/v1/channels/{platform}/{account}", tag = "channels",
    request_body(content = Object, description = "The platform's payload, exactly as it signed it"),
    params(("platform" = String, Path, pattern = "^(telegram|slack|discord|webhook)$", description = "The account's platform"),
        ("account" = String, Path, format = Uuid, description = "Account id")),
    responses((status = 200, description = "Accepted (Slack's `challenge`, Discord's interaction response)", body = Object),
        (status = 202, description = "Generic webhook: accepted (`duplicate` when already received)", body = Object),
        (status = 400, description = "Signed, but not the platform's payload", body = ErrorBody),
        (status = 401, description = "Not signed for this account (nothing was recorded)", body = ErrorBody),
        (status = 404, description = "Not a platform", body = ErrorBody)),
    security(()))]
pub async fn webhook(
    State(app): State<SharedApp>,
    ApiPath((platform, account)): ApiPath<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let reply = app
        .channels
        .webhook(&platform, &account, &headers, &body)
        .await?;
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::OK);
    Ok((status, Json(reply.body)).into_response())
}

//! Extractors: the verified caller ([`Auth`]), JSON bodies whose rejections
//! use our error envelope ([`ApiJson`]), and parsed path ids.

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use serde::de::DeserializeOwned;

use super::error::ApiError;
use crate::app::SharedApp;
use crate::auth::{AuthError, PrincipalScope};
use crate::error::Error;
use crate::store::Surface;

/// The caller, verified from the bearer token alone, within its rate limit.
pub struct Auth(pub PrincipalScope);

/// The token of an `Authorization: Bearer …` header, if any.
pub fn bearer(parts: &Parts) -> Option<&str> {
    bearer_header(&parts.headers)
}

/// The same, from a header map.
pub fn bearer_header(headers: &axum::http::HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// Verify a token, refuse it if revoked or its principal is disabled (from
/// the in-memory cache; no query), and apply the principal's rate limit.
pub fn admit(app: &SharedApp, token: Option<&str>) -> Result<PrincipalScope, ApiError> {
    let token = token.ok_or(AuthError::Missing)?;
    let verified = app.tokens.verify(token)?;
    app.revocations.check(&verified)?;
    let scope = verified.scope;
    if let Err(secs) = app.limits.check_principal(&scope.rate_key()) {
        app.metrics.rate_limited();
        return Err(Error::RateLimited {
            retry_after_secs: secs,
        }
        .into());
    }
    Ok(scope)
}

/// Whether a token admitted earlier still holds: signature and expiry, not
/// revoked, principal not disabled (memory only). Long-lived streams ask
/// this every second and before acting on a client frame, so revoking or
/// disabling ends them too.
pub fn still_admitted(app: &SharedApp, token: &str) -> bool {
    app.tokens
        .verify(token)
        .ok()
        .is_some_and(|v| app.revocations.check(&v).is_ok())
}

/// How often an open stream re-checks its token.
pub const RECHECK_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

impl FromRequestParts<SharedApp> for Auth {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        app: &SharedApp,
    ) -> Result<Self, Self::Rejection> {
        admit(app, bearer(parts)).map(Auth)
    }
}

/// Where a REST call came from, for the audit log: the console marks its
/// calls with `X-Demiurge-Client: console`; anything else is `rest`. Not
/// authority (the caller is [`Auth`]'s), only which of its tools it used.
pub struct Via(pub Surface);

/// The header the console sends on every call.
pub const CLIENT_HEADER: &str = "x-demiurge-client";

impl<S: Send + Sync> FromRequestParts<S> for Via {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let console = parts
            .headers
            .get(CLIENT_HEADER)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("console"));
        Ok(Via(if console {
            Surface::Console
        } else {
            Surface::Rest
        }))
    }
}

/// A JSON body; malformed input is a 400/413/415 in our envelope.
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(ApiJson(v)),
            Err(rej) => Err(json_rejection(rej)),
        }
    }
}

fn json_rejection(rej: JsonRejection) -> ApiError {
    let status = rej.status();
    let code = match status {
        StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        _ => "invalid_request",
    };
    // Syntax and shape errors alike are a 400 with the parser's explanation.
    let status = match status {
        StatusCode::PAYLOAD_TOO_LARGE | StatusCode::UNSUPPORTED_MEDIA_TYPE => status,
        _ => StatusCode::BAD_REQUEST,
    };
    ApiError::new(status, code, rej.body_text())
}

/// A query string; a malformed one is a 400 in our envelope (axum's own
/// rejection answers `text/plain`).
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(v)| ApiQuery(v))
            .map_err(|rej| {
                ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", rej.body_text())
            })
    }
}

/// Path parameters; a segment that does not decode is a 400 in our envelope.
pub struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(v)) => Ok(ApiPath(v)),
            Err(rej) if rej.status().is_client_error() => Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                rej.body_text(),
            )),
            // A route whose parameters do not match its handler: our bug, not the caller's.
            Err(rej) => {
                Err(Error::Internal(anyhow::anyhow!("path parameters: {}", rej.body_text())).into())
            }
        }
    }
}

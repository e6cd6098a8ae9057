//! The one place where errors become HTTP: a fixed JSON envelope
//! `{"error":{"code","message"}}` for 4xx; a generic body for 5xx, with the
//! cause sent to the log.

use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::AuthError;
use crate::error::Error;

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable machine-readable code, e.g. `not_found`, `invalid_request`.
    pub code: String,
    pub message: String,
    /// What some errors carry beyond their message (e.g. the gate report of
    /// `gates_failed`, the MCP security review of `mcp_review_required`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub details: Option<serde_json::Value>,
}

/// An error ready for the wire.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub retry_after: Option<u64>,
    pub details: Option<serde_json::Value>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after: None,
            details: None,
        }
    }

    /// The same error carrying `details` in its body.
    pub fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", "not found")
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        match e {
            Error::Invalid(m) => ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", m),
            Error::NotFound => ApiError::not_found(),
            Error::Conflict(m) => ApiError::new(StatusCode::CONFLICT, "conflict", m),
            Error::Unauthorized(m) => ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", m),
            Error::Forbidden(m) => ApiError::new(StatusCode::FORBIDDEN, "forbidden", m),
            Error::RateLimited { retry_after_secs } => ApiError {
                retry_after: Some(retry_after_secs),
                ..ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limited",
                    "rate limit exceeded; retry later",
                )
            },
            Error::Unavailable(m) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", m)
            }
            Error::Database(e) => {
                tracing::error!(error = %e, "database error");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "internal error",
                )
            }
            Error::Internal(e) => {
                tracing::error!(error = format!("{e:#}"), "internal error");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "internal error",
                )
            }
        }
    }
}

impl From<crate::ids::IdError> for ApiError {
    fn from(e: crate::ids::IdError) -> Self {
        Error::from(e).into()
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> Self {
        Error::from(e).into()
    }
}

impl From<AuthError> for ApiError {
    fn from(e: AuthError) -> Self {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: self.message,
                details: self.details,
            },
        };
        let mut resp = (self.status, Json(body)).into_response();
        // Every 429 says when to come back, and never "0".
        let retry_after = match (self.retry_after, self.status) {
            (Some(secs), _) => Some(secs.max(1)),
            (None, StatusCode::TOO_MANY_REQUESTS) => Some(1),
            (None, _) => None,
        };
        if let Some(secs) = retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

/// The stable code of a status, for rejections made outside our handlers.
pub fn code_for(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "invalid_request",
        StatusCode::UNAUTHORIZED => "unauthorized",
        StatusCode::FORBIDDEN => "forbidden",
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::REQUEST_TIMEOUT => "request_timeout",
        StatusCode::CONFLICT => "conflict",
        StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        StatusCode::UPGRADE_REQUIRED => "upgrade_required",
        StatusCode::TOO_MANY_REQUESTS => "rate_limited",
        StatusCode::SERVICE_UNAVAILABLE => "unavailable",
        s if s.is_server_error() => "internal",
        _ => "invalid_request",
    }
}

/// Longest framework rejection text kept as the envelope's message.
const MAX_REJECTION_TEXT: usize = 1024;

/// Middleware: an error response that is not already JSON (a rejection by
/// axum or tower-http: 405, 408, 413, …) is rewritten into the envelope,
/// keeping its status and headers (`Allow`, `Retry-After`, …).
pub async fn envelope_errors(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let status = resp.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return resp;
    }
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    if is_json {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let fallback = || {
        status
            .canonical_reason()
            .unwrap_or("error")
            .to_ascii_lowercase()
    };
    let message = if status.is_server_error() {
        tracing::error!(status = status.as_u16(), "non-JSON server error response");
        "internal error".to_owned()
    } else {
        match axum::body::to_bytes(body, MAX_REJECTION_TEXT).await {
            Ok(b) if !b.trim_ascii().is_empty() => {
                String::from_utf8_lossy(b.trim_ascii()).into_owned()
            }
            _ => fallback(),
        }
    };
    let mut out = ApiError::new(status, code_for(status), message).into_response();
    let own: Vec<header::HeaderName> = out.headers().keys().cloned().collect();
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH && !own.contains(name) {
            out.headers_mut().append(name.clone(), value.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retry_after(e: ApiError) -> Option<String> {
        e.into_response()
            .headers()
            .get(header::RETRY_AFTER)
            .map(|v| v.to_str().unwrap().to_owned())
    }

    #[test]
    fn every_429_has_a_retry_after_of_at_least_one_second() {
        for (secs, want) in [(0, "1"), (1, "1"), (7, "7")] {
            let e = ApiError::from(Error::RateLimited {
                retry_after_secs: secs,
            });
            assert_eq!(e.status, StatusCode::TOO_MANY_REQUESTS);
            assert_eq!(retry_after(e).as_deref(), Some(want));
        }
        let bare = ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", "slow down");
        assert_eq!(retry_after(bare).as_deref(), Some("1"));
        assert_eq!(retry_after(ApiError::not_found()), None);
    }

    async fn through_envelope(
        resp: Response,
    ) -> (StatusCode, axum::http::HeaderMap, serde_json::Value) {
        use tower::ServiceExt;
        let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(resp)));
        let app = axum::Router::new()
            .route(
                "/",
                axum::routing::get(move || {
                    let slot = slot.clone();
                    async move { slot.lock().unwrap().take().unwrap() }
                }),
            )
            .layer(axum::middleware::from_fn(envelope_errors));
        let out = app
            .oneshot(
                Request::builder()
                    .uri("/")
                    .body(axum::body::Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        let (parts, body) = out.into_parts();
        let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap();
        let json = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
        (parts.status, parts.headers, json)
    }

    #[tokio::test]
    async fn framework_rejections_get_the_envelope_and_keep_their_headers() {
        let cases = [
            (
                StatusCode::REQUEST_TIMEOUT,
                "",
                "request_timeout",
                "request timeout",
            ),
            (
                StatusCode::METHOD_NOT_ALLOWED,
                "",
                "method_not_allowed",
                "method not allowed",
            ),
            (
                StatusCode::PAYLOAD_TOO_LARGE,
                "length limit exceeded",
                "payload_too_large",
                "length limit exceeded",
            ),
            (
                StatusCode::BAD_REQUEST,
                "  Failed to deserialize query string\n",
                "invalid_request",
                "Failed to deserialize query string",
            ),
            (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Expected JSON",
                "unsupported_media_type",
                "Expected JSON",
            ),
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "panic details",
                "internal",
                "internal error",
            ),
        ];
        for (status, text, code, message) in cases {
            let mut resp = (status, text.to_owned()).into_response();
            resp.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET,POST"));
            let (got, headers, body) = through_envelope(resp).await;
            assert_eq!(got, status);
            assert_eq!(headers[header::CONTENT_TYPE], "application/json");
            assert_eq!(headers[header::ALLOW], "GET,POST", "{status}");
            assert_eq!(body["error"]["code"], code, "{status}");
            assert_eq!(body["error"]["message"], message, "{status}");
        }
    }

    #[tokio::test]
    async fn json_errors_and_successes_pass_untouched() {
        let (st, _, body) = through_envelope(ApiError::not_found().into_response()).await;
        assert_eq!(st, StatusCode::NOT_FOUND);
        assert_eq!(body["error"]["message"], "not found");
        let ok = (StatusCode::OK, "plain text").into_response();
        let (st, headers, _) = through_envelope(ok).await;
        assert_eq!(st, StatusCode::OK);
        assert!(headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/plain"));
    }

    #[test]
    fn every_status_has_a_code() {
        assert_eq!(code_for(StatusCode::UPGRADE_REQUIRED), "upgrade_required");
        assert_eq!(code_for(StatusCode::BAD_GATEWAY), "internal");
        assert_eq!(code_for(StatusCode::IM_A_TEAPOT), "invalid_request");
    }
}

//! The one place where errors become HTTP: a fixed JSON envelope
//! `{"error":{"code","message"}}` for 4xx; a generic body for 5xx, with the
//! cause sent to the log.

use axum::http::{header, HeaderValue, StatusCode};
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
}

/// An error ready for the wire.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
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
}

//! Liveness, readiness, metrics and the OpenAPI document.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};

use crate::app::SharedApp;

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, body = Object)))]
pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// Readiness: the database answers and we are not shutting down.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses((status = 200, body = Object), (status = 503, body = Object)))]
pub async fn readyz(State(app): State<SharedApp>) -> (StatusCode, Json<Value>) {
    if app.shutdown.is_cancelled() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "shutting_down"})),
        );
    }
    if app.store.ping().await {
        (
            StatusCode::OK,
            Json(json!({"status": "ready", "database": "ok"})),
        )
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "unavailable", "database": "unreachable"})),
        )
    }
}

/// Prometheus text exposition.
#[utoipa::path(get, path = "/metrics", tag = "operations", responses((status = 200, content_type = "text/plain", body = String)))]
pub async fn metrics(State(app): State<SharedApp>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        app.metrics.render(),
    )
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", tag = "operations", responses((status = 200, body = Object)))]
pub async fn openapi_json() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        super::openapi_document(),
    )
}

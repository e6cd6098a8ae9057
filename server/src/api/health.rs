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
    let sandbox = sandbox_status(&app.walls.sandbox);
    if app.store.ping().await {
        (
            StatusCode::OK,
            Json(json!({"status": "ready", "database": "ok", "sandbox": sandbox})),
        )
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "unavailable", "database": "unreachable", "sandbox": sandbox})),
        )
    }
}

/// How child processes run: `confined`, `off` (announced), or `unavailable`
/// with the reason (the child-process tools are then unavailable).
fn sandbox_status(sandbox: &crate::exec::sandbox::Sandbox) -> Value {
    use crate::exec::sandbox::Availability;
    match sandbox.availability() {
        Availability::Confined {
            drop_privileges,
            scoped,
            tcp_rules,
        } => json!({
            "status": "confined",
            "landlock_abi": sandbox.facts().landlock_abi,
            "per_tenant_uid": drop_privileges,
            "scoped_signals": scoped,
            "tcp_rules": tcp_rules,
        }),
        Availability::Off => json!({"status": "off"}),
        Availability::Unavailable(reason) => json!({
            "status": "unavailable",
            "reason": reason,
            "unavailable_tools": crate::catalog::CHILD_PROCESS_TOOLS,
        }),
    }
}

/// Prometheus text exposition.
#[utoipa::path(get, path = "/metrics", tag = "operations", responses((status = 200, content_type = "text/plain", body = String)))]
pub async fn metrics(State(app): State<SharedApp>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        app.metrics.render()
            + &app.channels.metrics().render()
            + &app.meter.render_metrics()
            + &app.budgets.render_metrics(),
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

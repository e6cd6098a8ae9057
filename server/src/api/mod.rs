//! HTTP, SSE and WebSocket routes. Thin: parse, call the host, map errors.
//! [`router`] assembles every route; [`ApiDoc`] lists them for OpenAPI.

pub mod approvals;
pub mod audit;
pub mod budgets;
pub mod channels;
pub mod console;
pub mod cores;
pub mod credentials;
pub mod doc;
pub mod error;
pub mod events;
pub mod extract;
pub mod health;
pub mod mcp;
pub mod packages;
pub mod principals;
pub mod providers;
pub mod runs;
pub mod schedules;
pub mod search;
pub mod sessions;
pub mod stream;
pub mod tasks;
pub mod tenant_events;
pub mod tenant_policy;
pub mod tokens;
pub mod tools;
pub mod turns;
pub mod usage;

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, DefaultBodyLimit, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::Router;
use tower_http::timeout::TimeoutLayer;

use crate::app::SharedApp;
use error::ApiError;

pub use doc::{openapi_document, ApiDoc};

/// Every route, with limits and middleware.
pub fn router(app: SharedApp) -> Router {
    let timeout = app.config.request_timeout;
    // Ordinary request/response routes get a timeout; streams must not.
    let rest = Router::new()
        .route(
            "/v1/sessions",
            post(sessions::create_session).get(sessions::list_sessions),
        )
        .route("/v1/sessions/{id}", get(sessions::get_session))
        .route("/v1/sessions/{id}/turns", post(turns::start_turn))
        .route("/v1/sessions/{id}/turns/{turn_id}", get(turns::get_turn))
        .route(
            "/v1/sessions/{id}/turns/{turn_id}/cancel",
            post(turns::cancel_turn),
        )
        .route("/v1/sessions/{id}/tools", get(tools::list_tools))
        .route("/v1/mcp/connections", get(tools::list_mcp_connections))
        .route("/v1/sessions/{id}/tool-calls", post(turns::call_tool))
        .route(
            "/v1/sessions/{id}/approvals",
            delete(approvals::revoke_session_grants),
        )
        .route("/v1/approvals", get(approvals::list_approvals))
        .route("/v1/approvals/{id}", post(approvals::decide_approval))
        .route(
            "/v1/clarifications/{id}",
            post(approvals::answer_clarification),
        )
        .route("/v1/search", get(search::search))
        .route("/v1/audit", get(audit::list_audit))
        .route("/v1/usage", get(usage::get_usage))
        .route("/v1/tenant/events", get(tenant_events::tenant_events))
        .route(
            "/v1/budgets",
            get(budgets::get_budgets).put(budgets::put_budget),
        )
        .route("/v1/schedules", get(schedules::list_schedules))
        .route(
            "/v1/schedules/{id}",
            get(schedules::get_schedule).delete(schedules::delete_schedule),
        )
        .route("/v1/tasks", get(tasks::list_tasks))
        .route("/v1/tasks/{id}", get(tasks::get_task))
        .route("/v1/tasks/{id}/cancel", post(tasks::cancel_task))
        .route("/v1/tasks/{id}/logs", get(tasks::task_logs))
        .route("/v1/tokens", post(tokens::issue_token))
        .route("/v1/tokens/revoke", post(tokens::revoke_tokens))
        .route("/v1/principals", get(principals::list_principals))
        .route(
            "/v1/principals/{id}/disable",
            post(principals::disable_principal),
        )
        .route(
            "/v1/principals/{id}/enable",
            post(principals::enable_principal),
        )
        .route("/v1/tenant/credentials", get(credentials::list_credentials))
        .route(
            "/v1/tenant/credentials/{name}",
            axum::routing::put(credentials::put_credential).delete(credentials::delete_credential),
        )
        .route("/v1/tenant/providers", get(providers::list_provider_keys))
        .route(
            "/v1/tenant/providers/{provider}",
            axum::routing::put(providers::put_provider_key).delete(providers::delete_provider_key),
        )
        .route("/v1/packages", get(packages::list_packages))
        .route("/v1/packages/repositories", post(packages::add_repository))
        .route(
            "/v1/packages/repositories/{alias}",
            axum::routing::delete(packages::remove_repository),
        )
        .route(
            "/v1/packages/repositories/{alias}/sync",
            post(packages::sync_repository),
        )
        .route("/v1/cores/{core}/packages", post(packages::install_package))
        .route(
            "/v1/cores/{core}/packages/{package}",
            delete(packages::uninstall_package),
        )
        .route("/v1/cores", get(cores::list_cores))
        .route("/v1/cores/{core}", get(cores::get_core))
        .route(
            "/v1/cores/{core}/files/{*path}",
            get(cores::get_core_file)
                .put(cores::put_core_file)
                .delete(cores::delete_core_file),
        )
        .route("/v1/cores/{core}/versions", get(cores::list_core_versions))
        .route("/v1/cores/{core}/diff", get(cores::diff_core))
        .route("/v1/cores/{core}/runs", get(runs::list_runs))
        .route("/v1/cores/{core}/runs/{run_id}", get(runs::get_run))
        .route(
            "/v1/cores/{core}/runs/{run_id}/review",
            post(runs::review_run),
        )
        .route(
            "/v1/cores/{core}/runs/{run_id}/promote",
            post(runs::promote_run),
        )
        .route(
            "/v1/cores/{core}/runs/{run_id}/discard",
            post(runs::discard_run),
        )
        .route(
            "/v1/channels/accounts",
            post(channels::create_account).get(channels::list_accounts),
        )
        .route(
            "/v1/channels/accounts/{id}",
            get(channels::get_account).delete(channels::delete_account),
        )
        .route(
            "/v1/channels/accounts/{id}/pairings",
            get(channels::list_pairings).post(channels::approve_pairing),
        )
        .route(
            "/v1/tenant/policy",
            get(tenant_policy::get_tenant_policy).put(tenant_policy::put_tenant_policy),
        )
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            timeout,
        ));
    let streams = Router::new()
        .route("/v1/sessions/{id}/events", get(events::session_events))
        .route("/v1/sessions/{id}/stream", get(stream::session_stream));
    // Platforms call from a few addresses at high rates: their webhooks are
    // verified by signature and kept out of the per-address limit.
    let webhooks = Router::new()
        .route("/v1/channels/{platform}/{account}", post(channels::webhook))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            timeout,
        ));
    // MCP clients: calls may wait on people's approvals, so no timeout.
    let mcp = Router::new()
        .route_service("/v1/mcp", mcp::service(&app))
        .layer(middleware::from_fn_with_state(app.clone(), mcp::admit_mcp));
    let limited = rest
        .merge(streams)
        .merge(mcp)
        .layer(middleware::from_fn_with_state(app.clone(), ip_rate_limit));
    // The page reads the document from our own `/openapi.json` route.
    let docs = utoipa_swagger_ui::SwaggerUi::new("/docs")
        .config(utoipa_swagger_ui::Config::from("/openapi.json"));
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::metrics))
        .route("/openapi.json", get(health::openapi_json))
        .route("/console", get(console::console))
        .route("/console/{file}", get(console::console_asset))
        .merge(limited)
        .merge(webhooks)
        .merge(docs)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn(error::envelope_errors))
        .layer(DefaultBodyLimit::max(app.config.body_limit))
        .layer(middleware::from_fn_with_state(app.clone(), count_responses))
        .with_state(app)
}

async fn not_found() -> ApiError {
    ApiError::not_found()
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "method not allowed on this path",
    )
}

async fn count_responses(State(app): State<SharedApp>, req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    app.metrics.response(resp.status().as_u16());
    resp
}

async fn ip_rate_limit(State(app): State<SharedApp>, req: Request, next: Next) -> Response {
    let ip = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    if let Some(ip) = ip {
        if let Err(secs) = app.limits.check_ip(ip) {
            app.metrics.rate_limited();
            return ApiError::from(crate::error::Error::RateLimited {
                retry_after_secs: secs,
            })
            .into_response();
        }
    }
    next.run(req).await
}

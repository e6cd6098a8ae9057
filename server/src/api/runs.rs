//! Evolve runs of a core over REST: list, detail (goal, state, diff
//! against live, last gate report and MCP security summary), review,
//! promote and discard. Tenant operators and admins only; a run of another
//! core or tenant looks missing. A promote whose gates fail is a 422
//! `gates_failed` carrying the report; one that changes MCP declarations
//! without its review's token a 409 `mcp_review_required` carrying the
//! summary and the current token (both mapped with every core error in
//! [`super::cores`]). Promote moves live: the `allow_session` grants of the
//! changed cores die with it.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::error::{ApiError, ApiResult, ErrorBody};
use super::extract::{ApiPath, Auth, Via};
use crate::app::SharedApp;
use crate::auth::PrincipalScope;
use crate::core::edit::CoreEditError;
use crate::core::runs::{Review, RunDetail, RunSummary};
use crate::ids::CoreId;

#[derive(Debug, Serialize, ToSchema)]
pub struct RunList {
    pub core: String,
    /// Newest first.
    pub runs: Vec<RunSummary>,
}

/// The body of a promote (optional).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PromoteRequest {
    /// The `mcp-review:<sha256>` id of the run's last review; required when
    /// the run changes MCP declarations.
    #[schema(max_length = 200)]
    pub mcp_review: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RunPromoted {
    pub run_id: String,
    /// The new live revision (the reviewed commit).
    pub revision: String,
    /// The live revision before.
    pub previous: String,
    /// The cores whose files changed.
    pub cores: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RunDiscarded {
    pub run_id: String,
    pub discarded: bool,
}

/// Runs hold host paths and proposals: operators and admins only.
fn operator(scope: &PrincipalScope) -> ApiResult<()> {
    if scope.is_operator() {
        Ok(())
    } else {
        Err(CoreEditError::Forbidden(
            "only tenant operators and admins may see and act on evolve runs".into(),
        )
        .into())
    }
}

fn ids(core: &str, run: Option<&str>) -> ApiResult<(CoreId, String)> {
    let core = CoreId::parse(core)?;
    let run = match run {
        None => String::new(),
        Some(r) => crate::core::gates::check_run_id(r).map_err(CoreEditError::Invalid)?,
    };
    Ok((core, run))
}

/// The evolve runs of a core, newest first.
#[utoipa::path(get, path = "/v1/cores/{core}/runs", tag = "cores",
    params(("core" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description = "Core id")),
    responses((status = 200, body = RunList),
        (status = 403, description = "members may not see evolve runs", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list_runs(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(core): ApiPath<String>,
) -> ApiResult<Json<RunList>> {
    operator(&scope)?;
    let (core, _) = ids(&core, None)?;
    let runs = app.cores.run_list(scope.tenant(), core.as_str()).await?;
    Ok(Json(RunList {
        core: core.to_string(),
        runs,
    }))
}

/// One run: goal, state, its difference from live, its last review.
#[utoipa::path(get, path = "/v1/cores/{core}/runs/{run_id}", tag = "cores",
    params(("core" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description = "Core id"),
        ("run_id" = String, Path, pattern = "^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$", description = "Run id")),
    responses((status = 200, body = RunDetail),
        (status = 403, description = "members may not see evolve runs", body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get_run(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath((core, run)): ApiPath<(String, String)>,
) -> ApiResult<Json<RunDetail>> {
    operator(&scope)?;
    let (core, run) = ids(&core, Some(&run))?;
    Ok(Json(
        app.cores
            .run_detail(scope.tenant(), core.as_str(), &run)
            .await?,
    ))
}

/// Review a run: snapshot its content and run the host's gates. A failed
/// gate is a 200 with `report.passed: false`; when MCP declarations changed
/// the review carries their security summary and the token promote needs.
#[utoipa::path(post, path = "/v1/cores/{core}/runs/{run_id}/review", tag = "cores",
    params(("core" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description = "Core id"),
        ("run_id" = String, Path, pattern = "^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$", description = "Run id")),
    responses((status = 200, body = Review),
        (status = 403, description = "members may not act on evolve runs", body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn review_run(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath((core, run)): ApiPath<(String, String)>,
) -> ApiResult<Json<Review>> {
    operator(&scope)?;
    let (core, run) = ids(&core, Some(&run))?;
    Ok(Json(
        app.cores
            .run_review(scope.tenant(), core.as_str(), &run)
            .await?,
    ))
}

/// An optional JSON body: empty or `null` is the default.
fn promote_body(body: Result<Bytes, BytesRejection>) -> ApiResult<PromoteRequest> {
    let bytes = body.map_err(|rej| {
        let status = rej.status();
        let status = if status.is_client_error() {
            status
        } else {
            StatusCode::BAD_REQUEST
        };
        ApiError::new(status, super::error::code_for(status), rej.body_text())
    })?;
    if bytes.trim_ascii().is_empty() {
        return Ok(PromoteRequest::default());
    }
    // JSON `null` is the documented "no body" too (the schema is optional).
    serde_json::from_slice::<Option<PromoteRequest>>(&bytes)
        .map(Option::unwrap_or_default)
        .map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                format!("the body is not a promote request: {e}"),
            )
        })
}

/// Promote a reviewed run to live: the gates run again, the content must be
/// what was reviewed, live must still be the run's base, and an MCP change
/// needs the review's token. The next turn of every session on the changed
/// cores sees the new revision; a running turn keeps its own.
#[utoipa::path(post, path = "/v1/cores/{core}/runs/{run_id}/promote", tag = "cores",
    params(("core" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description = "Core id"),
        ("run_id" = String, Path, pattern = "^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$", description = "Run id")),
    request_body(content = Option<PromoteRequest>, content_type = "application/json",
        description = "Optional; `mcp_review` when the run changes MCP declarations"),
    responses((status = 200, body = RunPromoted),
        (status = 400, description = "not reviewed, changes nothing, or a body that does not parse", body = ErrorBody),
        (status = 403, description = "members may not act on evolve runs", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "`mcp_review_required` (with `details.mcp_security_review`: the summary and the current token), or `conflict`: changed since its review, or live moved", body = ErrorBody),
        (status = 422, description = "`gates_failed`, with the report in `details.gates`", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn promote_run(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiPath((core, run)): ApiPath<(String, String)>,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Json<RunPromoted>> {
    operator(&scope)?;
    let (core, run) = ids(&core, Some(&run))?;
    let req = promote_body(body)?;
    let done = app
        .core_changes
        .promote_run(&scope, &via, core.as_str(), &run, req.mcp_review.as_deref())
        .await?;
    Ok(Json(RunPromoted {
        run_id: run,
        revision: done.revision,
        previous: done.previous,
        cores: done.cores,
    }))
}

/// Discard a run: its worktree, folder and ref go, and its evolver child,
/// if still running, is cancelled.
#[utoipa::path(post, path = "/v1/cores/{core}/runs/{run_id}/discard", tag = "cores",
    params(("core" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description = "Core id"),
        ("run_id" = String, Path, pattern = "^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$", description = "Run id")),
    responses((status = 200, body = RunDiscarded),
        (status = 403, description = "members may not act on evolve runs", body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn discard_run(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath((core, run)): ApiPath<(String, String)>,
) -> ApiResult<Json<RunDiscarded>> {
    operator(&scope)?;
    let (core, run) = ids(&core, Some(&run))?;
    if !app
        .core_changes
        .discard_run(&scope, core.as_str(), &run)
        .await?
    {
        return Err(ApiError::not_found());
    }
    Ok(Json(RunDiscarded {
        run_id: run,
        discarded: true,
    }))
}

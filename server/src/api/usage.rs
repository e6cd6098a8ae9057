//! `GET /v1/usage`: the caller's tenant's usage per hour or day, as JSON or
//! CSV (tenant admins). The report is [`crate::usage::report`]'s.

use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;

use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiQuery, Auth};
use crate::app::SharedApp;
use crate::error::Error;
use crate::usage::report::{self, Report, ReportParams};

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UsageQuery {
    /// The first instant (RFC 3339), rounded down to its bucket. Default:
    /// a day before `to` by hour, 30 days by day. A span longer than the
    /// bucket's maximum keeps its newest part (the report's `from` says).
    #[param(value_type = Option<String>, format = DateTime)]
    pub from: Option<String>,
    /// The end (RFC 3339, exclusive), rounded up to its bucket. Default: now.
    #[param(value_type = Option<String>, format = DateTime)]
    pub to: Option<String>,
    /// `hour` (spans up to 31 days) or `day` (default; up to 400 days, UTC).
    #[param(pattern = "^(|hour|day)$")]
    pub bucket: Option<String>,
    /// Comma-separated: `principal`, `core`, `channel`, `provider`, `model`,
    /// `tool`, `status` (empty: one row per bucket).
    #[param(
        pattern = "^(|(principal|core|channel|provider|model|tool|status)(,(principal|core|channel|provider|model|tool|status))*)$"
    )]
    pub group: Option<String>,
    /// `json` (default) or `csv`; `Accept: text/csv` asks for CSV too.
    #[param(pattern = "^(|json|csv)$")]
    pub format: Option<String>,
}

/// The caller's tenant's usage (tenant admins): model calls and tokens,
/// tool calls, process CPU and fetched bytes, per bucket and group, with
/// cost where the server prices the model.
#[utoipa::path(get, path = "/v1/usage", tag = "tenant", params(UsageQuery),
    responses(
        (status = 200, description = "The report as JSON, or as CSV (`text/csv`) when asked",
            content((Report = "application/json"), (String = "text/csv"))),
        (status = 400, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get_usage(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<UsageQuery>,
) -> ApiResult<Response> {
    let csv = match q.format.as_deref().map(str::trim) {
        Some("csv") => true,
        Some("json") => false,
        None | Some("") => headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.split(',').any(|m| m.trim().starts_with("text/csv"))),
        Some(other) => {
            return Err(Error::Invalid(format!(
                "`format` {:?} is not json or csv",
                other.chars().take(20).collect::<String>()
            ))
            .into())
        }
    };
    let params = ReportParams {
        from: q.from.as_deref(),
        to: q.to.as_deref(),
        bucket: q.bucket.as_deref(),
        group: q.group.as_deref(),
    };
    let mut report = report::tenant_report(&app.store, &app.prices, &scope, &params)
        .await
        .map_err(Error::from)?;
    report.stored_bytes = Some(app.walls.quota.used(scope.tenant().as_str()));
    Ok(if csv {
        (
            [(header::CONTENT_TYPE, "text/csv; charset=utf-8")],
            report::to_csv(&report),
        )
            .into_response()
    } else {
        Json(report).into_response()
    })
}

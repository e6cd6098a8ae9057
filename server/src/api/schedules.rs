//! Schedules over REST: the caller's schedules, one by id, and deletion.
//! Creating and changing them is the model's `schedule_manage` tool (with
//! its approvals); another principal's schedule answers 404.

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiPath, Auth};
use crate::app::SharedApp;
use crate::error::Error;
use crate::store::ScheduleRow;

#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduleView {
    /// The owner's name for it (`schedule_id` of `schedule_manage`).
    pub schedule_id: String,
    pub enabled: bool,
    /// Cron expression (UTC), `every <duration>` or `at <RFC 3339 time>`.
    pub schedule: String,
    /// The first 120 characters of the prompt.
    pub prompt_preview: String,
    pub core_id: String,
    /// The session its runs take turns in.
    pub session_id: String,
    pub next_run_at: Option<String>,
    pub last_run_at: Option<String>,
    pub run_count: i64,
    pub created_at: String,
}

impl From<ScheduleRow> for ScheduleView {
    fn from(r: ScheduleRow) -> Self {
        let v = crate::tasks::schedules::view(&r);
        Self {
            prompt_preview: v["prompt_preview"].as_str().unwrap_or_default().to_owned(),
            schedule_id: r.name,
            enabled: r.enabled,
            schedule: r.spec,
            core_id: r.core,
            session_id: r.session_id.to_string(),
            next_run_at: r.next_fire_at.map(crate::time::rfc3339),
            last_run_at: r.last_fired_at.map(crate::time::rfc3339),
            run_count: r.fire_count,
            created_at: crate::time::rfc3339(r.created_at),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduleList {
    pub items: Vec<ScheduleView>,
}

fn schedule_id(raw: &str) -> Result<&str, Error> {
    if crate::tasks::schedules::valid_name(raw) {
        Ok(raw)
    } else {
        Err(Error::Invalid(format!(
            "invalid schedule id: {:?}",
            raw.chars().take(40).collect::<String>()
        )))
    }
}

/// The caller's schedules, by id.
#[utoipa::path(get, path = "/v1/schedules", tag = "schedules",
    responses((status = 200, body = ScheduleList)), security(("bearer" = [])))]
pub async fn list_schedules(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
) -> ApiResult<Json<ScheduleList>> {
    let rows = app
        .dispatcher
        .tasks
        .schedules()
        .list(&scope)
        .await
        .map_err(Error::from)?;
    Ok(Json(ScheduleList {
        items: rows.into_iter().map(Into::into).collect(),
    }))
}

/// One of the caller's schedules.
#[utoipa::path(get, path = "/v1/schedules/{id}", tag = "schedules",
    params(("id" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description = "schedule_id")),
    responses((status = 200, body = ScheduleView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get_schedule(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<ScheduleView>> {
    let row = app
        .dispatcher
        .tasks
        .schedules()
        .get(&scope, schedule_id(&id)?)
        .await
        .map_err(Error::from)?;
    Ok(Json(row.into()))
}

/// Delete one of the caller's schedules: no run of it starts afterwards
/// (its session and past runs stay).
#[utoipa::path(delete, path = "/v1/schedules/{id}", tag = "schedules",
    params(("id" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description = "schedule_id")),
    responses((status = 200, body = ScheduleView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete_schedule(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<ScheduleView>> {
    let row = app
        .dispatcher
        .tasks
        .schedules()
        .delete(&scope, schedule_id(&id)?)
        .await
        .map_err(Error::from)?;
    Ok(Json(row.into()))
}

//! Schedules over REST: the schedule files of the tenant's cores (members
//! may read cores, so every member sees them, with their owners), one by
//! id, and deletion. Creating and changing them is the model's
//! `schedule_manage` tool (with its approvals). Deleting is for the
//! schedule's owner (another principal's schedule answers 404) or, for a
//! file without an owner, for whoever may change the core (admins).

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiPath, ApiQuery, Auth};
use crate::app::SharedApp;
use crate::core::edit::{Authority, Edit};
use crate::core::path::CoreFilePath;
use crate::error::Error;
use crate::ids::CoreId;
use crate::tasks::schedules::Listed;

#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduleView {
    /// The file name without `.yaml` (`schedule_id` of `schedule_manage`).
    pub schedule_id: String,
    /// The core whose `schedules/` folder holds it.
    pub core_id: String,
    /// `null` when the file is unreadable (`error`).
    pub enabled: Option<bool>,
    /// Cron expression (UTC), `every <duration>` or `at <RFC 3339 time>`.
    pub schedule: Option<String>,
    /// The first 120 characters of the prompt.
    pub prompt_preview: Option<String>,
    /// Why the file is refused; such a schedule never runs.
    pub error: Option<String>,
    /// The principal its runs run as; `null`: it runs as nobody
    /// (`owner_reason`: no owner recorded, or changed outside
    /// `schedule_manage`).
    pub owner: Option<String>,
    pub owner_reason: Option<String>,
    pub next_run_at: Option<String>,
    pub last_run_at: Option<String>,
    /// The fresh session the latest run took its turn in.
    pub last_session_id: Option<String>,
    /// How the latest run went: `started`, or `failed: <why>`.
    pub last_status: Option<String>,
    pub run_count: i64,
}

impl From<&Listed> for ScheduleView {
    fn from(l: &Listed) -> Self {
        let v = crate::tasks::schedules::view(l);
        let s = |k: &str| v[k].as_str().map(str::to_owned);
        Self {
            schedule_id: l.schedule_id.clone(),
            core_id: l.core.clone(),
            enabled: v["enabled"].as_bool(),
            schedule: s("schedule"),
            prompt_preview: s("prompt_preview"),
            error: s("error"),
            owner: s("owner"),
            owner_reason: s("owner_reason"),
            next_run_at: s("next_run_at"),
            last_run_at: s("last_run_at"),
            last_session_id: s("last_session_id"),
            last_status: s("last_status"),
            run_count: v["run_count"].as_i64().unwrap_or_default(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ScheduleList {
    pub items: Vec<ScheduleView>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only this core's schedules (default: every core of the tenant).
    #[param(pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")]
    pub core: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OneQuery {
    /// The core whose schedule it is (default `assistant`).
    #[param(pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")]
    pub core: Option<String>,
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

fn core_of(raw: Option<String>) -> Result<String, Error> {
    let raw = raw.unwrap_or_else(|| "assistant".into());
    CoreId::parse(&raw).map_err(|_| {
        Error::Invalid(format!(
            "invalid core id: {:?}",
            raw.chars().take(40).collect::<String>()
        ))
    })?;
    Ok(raw)
}

/// The schedule files of the tenant's cores.
#[utoipa::path(get, path = "/v1/schedules", tag = "schedules", params(ListQuery),
    responses((status = 200, body = ScheduleList), (status = 400, body = ErrorBody),
        (status = 404, description = "no such core", body = ErrorBody),
        (status = 409, description = "the core does not load", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list_schedules(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<ScheduleList>> {
    let schedules = app.tasks.schedules();
    let rows = match q.core {
        Some(c) => schedules
            .list_core(scope.tenant(), &core_of(Some(c))?)
            .await
            .map_err(Error::from)?,
        None => schedules
            .list_tenant(scope.tenant())
            .await
            .map_err(Error::from)?,
    };
    Ok(Json(ScheduleList {
        items: rows.iter().map(Into::into).collect(),
    }))
}

async fn find(
    app: &SharedApp,
    scope: &crate::auth::PrincipalScope,
    core: &str,
    id: &str,
) -> Result<Listed, Error> {
    app.tasks
        .schedules()
        .list_core(scope.tenant(), core)
        .await
        .map_err(Error::from)?
        .into_iter()
        .find(|l| l.schedule_id == id)
        .ok_or(Error::NotFound)
}

/// One schedule file of a core.
#[utoipa::path(get, path = "/v1/schedules/{id}", tag = "schedules",
    params(("id" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description = "schedule_id"), OneQuery),
    responses((status = 200, body = ScheduleView), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get_schedule(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<OneQuery>,
) -> ApiResult<Json<ScheduleView>> {
    let core = core_of(q.core)?;
    let l = find(&app, &scope, &core, schedule_id(&id)?).await?;
    Ok(Json((&l).into()))
}

/// Delete a schedule file (a new core revision): no run of it starts
/// afterwards (the sessions of past runs stay). The owner deletes their
/// own; a file without an owner needs a role that may change cores.
#[utoipa::path(delete, path = "/v1/schedules/{id}", tag = "schedules",
    params(("id" = String, Path, pattern = "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", description = "schedule_id"), OneQuery),
    responses((status = 200, body = ScheduleView), (status = 400, body = ErrorBody),
        (status = 403, description = "a schedule without an owner, and a role that may not change cores", body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete_schedule(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<OneQuery>,
) -> ApiResult<Json<ScheduleView>> {
    let core = core_of(q.core)?;
    let id = schedule_id(&id)?;
    let l = find(&app, &scope, &core, id).await?;
    // The owner may always end their own schedule (it only takes a run
    // away); anyone else's looks missing.
    let authority = match &l.owner {
        Some(o) if o.principal_id == scope.principal().as_str() => Authority::Approved,
        Some(_) => return Err(Error::NotFound.into()),
        None => Authority::Role,
    };
    let schedules = app.tasks.schedules();
    let view = schedules
        .live(scope.tenant(), &core)
        .await
        .map_err(Error::from)?;
    let core_dir = app.cores.agents_dir(scope.tenant()).join(&core);
    let rel = crate::tasks::schedules::file_rel(&core_dir, &view.schedules_root, id)
        .map_err(|e| Error::Invalid(e.to_string()))?;
    let path = CoreFilePath::parse(&rel).map_err(|e| Error::Invalid(e.0))?;
    let core_id = CoreId::parse(&core).map_err(|_| Error::NotFound)?;
    app.core_changes
        .change(
            &scope,
            &core_id,
            vec![(path, Edit::Delete)],
            format!("delete schedule {id}"),
            authority,
        )
        .await?;
    schedules
        .forget(scope.tenant(), &core, id)
        .await
        .map_err(Error::from)?;
    Ok(Json((&l).into()))
}

//! Background tasks: the caller's tasks, cancellation, and (operators) logs.

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiPath, ApiQuery, Auth};
use crate::app::SharedApp;
use crate::error::Error;
use crate::store::TaskRow;
use crate::wire::TaskStatus;

#[derive(Debug, Serialize, ToSchema)]
pub struct TaskView {
    pub id: String,
    pub session_id: String,
    /// e.g. `terminal.exec`.
    pub kind: String,
    pub status: TaskStatus,
    pub running: bool,
    pub summary: String,
    /// The redacted result once finished (`content` for the model, `data` for operators).
    #[schema(value_type = Option<Object>)]
    pub result: Option<serde_json::Value>,
    pub created_at: String,
    pub completed_at: Option<String>,
}

impl From<TaskRow> for TaskView {
    fn from(r: TaskRow) -> Self {
        Self {
            running: r.status == TaskStatus::Running,
            id: r.id,
            session_id: r.session_id.to_string(),
            kind: r.kind,
            status: r.status,
            summary: r.summary,
            result: r.result.and_then(|s| serde_json::from_str(&s).ok()),
            created_at: crate::time::rfc3339(r.created_at),
            completed_at: r.completed_at.map(crate::time::rfc3339),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TaskList {
    pub items: Vec<TaskView>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TaskQuery {
    /// Only tasks of this session (empty: all).
    #[param(
        pattern = "^(|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"
    )]
    pub session: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogQuery {
    /// Only log rows after this row id.
    pub after: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LogChunk {
    pub id: i64,
    /// `stdout`, `stderr` or `host`.
    pub stream: String,
    pub text: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TaskLogs {
    pub items: Vec<LogChunk>,
}

fn task_id(raw: &str) -> Result<&str, Error> {
    let ok = raw.len() <= 64
        && raw.starts_with("task_")
        && raw[5..].chars().all(|c| c.is_ascii_hexdigit());
    if ok {
        Ok(raw)
    } else {
        Err(Error::Invalid(format!(
            "invalid task id: {:?}",
            raw.chars().take(40).collect::<String>()
        )))
    }
}

/// The caller's background tasks, newest first.
#[utoipa::path(get, path = "/v1/tasks", tag = "tasks", params(TaskQuery),
    responses((status = 200, body = TaskList), (status = 400, body = ErrorBody)), security(("bearer" = [])))]
pub async fn list_tasks(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiQuery(q): ApiQuery<TaskQuery>,
) -> ApiResult<Json<TaskList>> {
    let session = match q.session.as_deref().filter(|s| !s.is_empty()) {
        Some(s) => Some(super::sessions::session_id(s)?),
        None => None,
    };
    let rows = app.tasks.list(&scope, session).await?;
    Ok(Json(TaskList {
        items: rows.into_iter().map(Into::into).collect(),
    }))
}

/// One of the caller's tasks.
#[utoipa::path(get, path = "/v1/tasks/{id}", tag = "tasks", params(("id" = String, Path, pattern = "^task_[0-9a-fA-F]{0,59}$", description = "Task id")),
    responses((status = 200, body = TaskView), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn get_task(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<TaskView>> {
    let row = app.tasks.get(&scope, task_id(&id)?).await?;
    Ok(Json(row.into()))
}

/// Cancel one of the caller's tasks: ends its process tree; idempotent.
#[utoipa::path(post, path = "/v1/tasks/{id}/cancel", tag = "tasks", params(("id" = String, Path, pattern = "^task_[0-9a-fA-F]{0,59}$", description = "Task id")),
    responses((status = 200, body = TaskView), (status = 404, body = ErrorBody)), security(("bearer" = [])))]
pub async fn cancel_task(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<TaskView>> {
    let row = app.tasks.cancel(&scope, task_id(&id)?).await?;
    Ok(Json(row.into()))
}

/// A task's log (operators only; any task of the operator's tenant).
#[utoipa::path(get, path = "/v1/tasks/{id}/logs", tag = "tasks", params(("id" = String, Path, pattern = "^task_[0-9a-fA-F]{0,59}$", description = "Task id"), LogQuery),
    responses((status = 200, body = TaskLogs), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn task_logs(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<LogQuery>,
) -> ApiResult<Json<TaskLogs>> {
    let rows = app
        .tasks
        .logs(&scope, task_id(&id)?, q.after.unwrap_or(0))
        .await?;
    Ok(Json(TaskLogs {
        items: rows
            .into_iter()
            .map(|(id, stream, text)| LogChunk { id, stream, text })
            .collect(),
    }))
}

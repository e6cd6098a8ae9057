//! Turns: start (202), status, cancel (owner-checked, idempotent).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiJson, ApiPath, Auth};
use super::sessions::session_id;
use crate::app::SharedApp;
use crate::ids::TurnId;
use crate::store::TurnRow;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartTurn {
    /// The user's message.
    pub input: String,
    /// Fake provider only: steps to play, `{"content": …}` or `{"tool_calls": [{"name", "arguments"}]}`
    /// (its exact schema is [`script_schema`]).
    #[schema(value_type = Option<Vec<Object>>)]
    pub script: Option<Value>,
}

/// The JSON Schema of `StartTurn.script`, exactly what `turn::script::parse`
/// accepts (utoipa cannot derive it from a `Value`; `doc` patches it in).
pub(super) fn script_schema() -> Value {
    let call = serde_json::json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "pattern": "\\S"},
            "arguments": {"type": "object"}
        }
    });
    serde_json::json!({
        "type": ["array", "null"],
        "maxItems": crate::turn::script::MAX_STEPS,
        "items": {
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "content": {"type": ["string", "null"]},
                "tool_calls": {"type": "array", "items": call}
            },
            "anyOf": [
                {"required": ["content"], "properties": {"content": {"type": "string"}}},
                {"required": ["tool_calls"], "properties": {"tool_calls": {"minItems": 1}}}
            ]
        }
    })
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TurnStarted {
    pub turn_id: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TurnView {
    pub id: String,
    pub session_id: String,
    /// `running`, `completed`, `failed` or `cancelled`.
    pub status: String,
    pub input: String,
    pub output: Option<String>,
    /// Why it failed or was cancelled (`provider`, `max_model_steps`, `lost`, `cancelled`, `shutdown`, …).
    pub reason: Option<String>,
    pub error: Option<String>,
    /// Model calls made.
    pub steps: i64,
    pub created_at: String,
    pub finished_at: Option<String>,
}

impl From<TurnRow> for TurnView {
    fn from(r: TurnRow) -> Self {
        Self {
            id: r.id.to_string(),
            session_id: r.session_id.to_string(),
            status: r.status.as_str().to_owned(),
            input: r.input,
            output: r.output,
            reason: r.reason,
            error: r.error,
            steps: r.steps,
            created_at: crate::time::rfc3339(r.created_at),
            finished_at: r.finished_at.map(crate::time::rfc3339),
        }
    }
}

fn turn_id(raw: &str) -> Result<TurnId, super::error::ApiError> {
    TurnId::parse(raw).map_err(|e| crate::error::Error::from(e).into())
}

/// Start a turn; its events stream on `…/events` and `…/stream`.
#[utoipa::path(post, path = "/v1/sessions/{id}/turns", tag = "turns", request_body = StartTurn,
    params(("id" = String, Path, format = Uuid, description = "Session id")),
    responses((status = 202, body = TurnStarted), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "another turn of the session is running", body = ErrorBody),
        (status = 503, description = "the server is shutting down", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn start_turn(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<StartTurn>,
) -> ApiResult<(StatusCode, Json<TurnStarted>)> {
    let sid = session_id(&id)?;
    if app.shutdown.is_cancelled() {
        return Err(crate::error::Error::Unavailable("the server is shutting down".into()).into());
    }
    let turn = app.turns.start(&scope, sid, req.input, req.script).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(TurnStarted {
            turn_id: turn.to_string(),
        }),
    ))
}

/// Turn status and final output.
#[utoipa::path(get, path = "/v1/sessions/{id}/turns/{turn_id}", tag = "turns",
    params(("id" = String, Path, format = Uuid, description = "Session id"), ("turn_id" = String, Path, format = Uuid, description = "Turn id")),
    responses((status = 200, body = TurnView), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get_turn(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath((id, tid)): ApiPath<(String, String)>,
) -> ApiResult<Json<TurnView>> {
    let row = app
        .turns
        .get(&scope, session_id(&id)?, turn_id(&tid)?)
        .await?;
    Ok(Json(row.into()))
}

/// Cancel a running turn; cancelling a finished turn returns it unchanged.
#[utoipa::path(post, path = "/v1/sessions/{id}/turns/{turn_id}/cancel", tag = "turns",
    params(("id" = String, Path, format = Uuid, description = "Session id"), ("turn_id" = String, Path, format = Uuid, description = "Turn id")),
    responses((status = 200, body = TurnView), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn cancel_turn(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath((id, tid)): ApiPath<(String, String)>,
) -> ApiResult<Json<TurnView>> {
    let row = app
        .turns
        .cancel(&scope, session_id(&id)?, turn_id(&tid)?)
        .await?;
    Ok(Json(row.into()))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCallRequest {
    /// A tool of the session's resolved catalog.
    #[schema(min_length = 1, max_length = 128, pattern = "\\S")]
    pub tool: String,
    /// Its arguments (a JSON object).
    #[serde(default = "empty_object")]
    #[schema(value_type = Object)]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ToolCallStarted {
    pub turn_id: String,
    pub call_id: String,
}

/// Call one tool through the same dispatcher a model uses, approvals included.
#[utoipa::path(post, path = "/v1/sessions/{id}/tool-calls", tag = "tools", request_body = ToolCallRequest,
    params(("id" = String, Path, format = Uuid, description = "Session id")),
    responses((status = 202, body = ToolCallStarted), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "another turn of the session is running", body = ErrorBody),
        (status = 503, description = "the server is shutting down", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn call_tool(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<ToolCallRequest>,
) -> ApiResult<(StatusCode, Json<ToolCallStarted>)> {
    let sid = session_id(&id)?;
    if !req.arguments.is_object() {
        return Err(
            crate::error::Error::Invalid("`arguments` must be a JSON object".into()).into(),
        );
    }
    if app.shutdown.is_cancelled() {
        return Err(crate::error::Error::Unavailable("the server is shutting down".into()).into());
    }
    let (turn, call_id) = app
        .turns
        .start_tool_call(&scope, sid, req.tool, req.arguments)
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(ToolCallStarted {
            turn_id: turn.to_string(),
            call_id,
        }),
    ))
}

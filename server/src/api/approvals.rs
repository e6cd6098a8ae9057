//! Approvals and clarifications: the caller's pending requests and decisions,
//! and for tenant operators the tenant's requests that need an operator.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiJson, ApiPath, ApiQuery, Auth, Via};
use crate::app::SharedApp;
use crate::error::Error;
use crate::store::ApprovalRow;
use crate::wire::{ApprovalState, Decision, Risk};

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ApprovalQuery {
    /// `pending`, `allowed`, `denied` or `expired`; all when absent or empty.
    #[param(pattern = "^(|pending|allowed|denied|expired)$")]
    pub state: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ApprovalView {
    pub id: String,
    /// The principal whose turn asked.
    pub principal: String,
    pub session_id: String,
    pub turn_id: String,
    pub tool: String,
    pub risk: Risk,
    pub rule: String,
    pub reason: String,
    /// Redacted, bounded preview of the arguments.
    #[schema(value_type = Object)]
    pub preview: serde_json::Value,
    pub state: ApprovalState,
    pub decision: Option<Decision>,
    /// Decisions this request accepts.
    pub choices: Vec<Decision>,
    /// Who may decide: `owner` (the principal who asked) or `operator` (a
    /// tenant operator or admin; fixed from the tenant policy when it was asked).
    pub requires: String,
    pub created_at: String,
    pub expires_at: String,
    pub decided_at: Option<String>,
    /// The principal who decided.
    pub decided_by: Option<String>,
}

impl From<ApprovalRow> for ApprovalView {
    fn from(r: ApprovalRow) -> Self {
        Self {
            choices: crate::dispatch::approvals::choices(r.session_cacheable),
            id: r.id,
            principal: r.principal_id,
            session_id: r.session_id.to_string(),
            turn_id: r.turn_id.to_string(),
            tool: r.tool,
            risk: r.risk,
            rule: r.rule,
            reason: r.reason,
            preview: serde_json::from_str(&r.preview).unwrap_or(serde_json::Value::Null),
            state: r.state,
            decision: r.decision,
            requires: r.requires.as_str().to_owned(),
            created_at: crate::time::rfc3339(r.created_at),
            expires_at: crate::time::rfc3339(r.expires_at),
            decided_at: r.decided_at.map(crate::time::rfc3339),
            decided_by: r.decided_by,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ApprovalList {
    pub items: Vec<ApprovalView>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecideApproval {
    /// `allow_once`, `allow_session` (when the request offers it) or `deny`.
    #[schema(pattern = "^(allow_once|allow_session|deny)$")]
    pub decision: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerClarification {
    /// At most 20000 characters.
    #[schema(max_length = 20000)]
    pub answer: String,
}

/// The caller's approvals, newest first; for tenant operators and admins also
/// every approval of the tenant that needs an operator.
#[utoipa::path(get, path = "/v1/approvals", tag = "approvals", params(ApprovalQuery),
    responses((status = 200, body = ApprovalList), (status = 400, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list_approvals(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiQuery(q): ApiQuery<ApprovalQuery>,
) -> ApiResult<Json<ApprovalList>> {
    let state = q
        .state
        .as_deref()
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<ApprovalState>().map_err(|_| {
                Error::Invalid(format!(
                    "state {s:?} is not one of pending, allowed, denied, expired"
                ))
            })
        })
        .transpose()?;
    let rows = app
        .store
        .list_approvals(
            scope.tenant(),
            scope.principal(),
            scope.is_operator(),
            state,
            200,
        )
        .await?;
    Ok(Json(ApprovalList {
        items: rows.into_iter().map(Into::into).collect(),
    }))
}

/// Decide one of the caller's pending approvals (or, for tenant operators and
/// admins, one of the tenant's that needs an operator).
#[utoipa::path(post, path = "/v1/approvals/{id}", tag = "approvals", request_body = DecideApproval,
    params(("id" = String, Path, format = Uuid, description = "Approval id")),
    responses((status = 200, body = ApprovalView), (status = 400, body = ErrorBody),
        (status = 403, description = "the caller's own request needs a tenant operator", body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, description = "already decided or expired", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn decide_approval(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<DecideApproval>,
) -> ApiResult<Json<ApprovalView>> {
    let id = parse_id(&id, "approval id")?;
    let decision = req.decision.parse::<Decision>().map_err(|_| {
        Error::Invalid(format!(
            "decision {:?} is not one of allow_once, allow_session, deny",
            req.decision
        ))
    })?;
    let row = app.approvals.decide(&scope, &via, &id, decision).await?;
    Ok(Json(row.into()))
}

/// Answer a `clarify` question of the caller's turn.
#[utoipa::path(post, path = "/v1/clarifications/{id}", tag = "approvals", request_body = AnswerClarification,
    params(("id" = String, Path, format = Uuid, description = "Clarification id")),
    responses((status = 204), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn answer_clarification(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<AnswerClarification>,
) -> ApiResult<StatusCode> {
    let id = parse_id(&id, "clarification id")?;
    if req.answer.chars().count() > 20_000 {
        return Err(Error::Invalid("answer is longer than 20000 characters".into()).into());
    }
    app.clarifications
        .answer(&scope, &via, &id, &req.answer)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Ids are UUIDs; anything else never reaches a query.
fn parse_id(raw: &str, what: &str) -> Result<String, Error> {
    uuid::Uuid::try_parse(raw)
        .map(|u| u.as_hyphenated().to_string())
        .map_err(|_| {
            Error::Invalid(format!(
                "invalid {what}: {:?} is not a UUID",
                raw.chars().take(40).collect::<String>()
            ))
        })
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RevokedGrants {
    /// How many `allow_session` grants of the session were revoked.
    pub revoked: u64,
}

/// Revoke the `allow_session` grants of one of the caller's sessions: the
/// next identical request asks again, on every instance.
#[utoipa::path(delete, path = "/v1/sessions/{id}/approvals", tag = "approvals",
    params(("id" = String, Path, format = Uuid, description = "Session id")),
    responses((status = 200, body = RevokedGrants), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn revoke_session_grants(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<RevokedGrants>> {
    let id = super::sessions::session_id(&id)?;
    app.store
        .get_session(scope.tenant(), scope.principal(), id)
        .await?
        .ok_or(Error::NotFound)?;
    let revoked = app
        .approvals
        .revoke_session(&scope, &id.to_string())
        .await?;
    Ok(Json(RevokedGrants { revoked }))
}

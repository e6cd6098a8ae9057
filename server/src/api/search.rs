//! History search over the caller's sessions (`GET /v1/search`) and an
//! operator's audited tenant-wide search. The rules are in
//! [`crate::history`].

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiQuery, Auth, Via};
use crate::app::SharedApp;
use crate::error::Error;
use crate::history::{Page, Reach, RefuseSearch, Request, SearchError};

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// Words to find (all of them, any case), up to 200 characters. Without
    /// `q` and `session`, the sessions are listed (browse); with `session`
    /// alone, that session's newest messages.
    #[param(max_length = 200)]
    pub q: Option<String>,
    /// Only this session (empty: every session in reach).
    #[param(
        pattern = "^(|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"
    )]
    pub session: Option<String>,
    /// Most results, 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
    /// Where the page starts: a previous answer's `next_cursor` (empty: the first page).
    #[param(pattern = "^[0-9]{0,6}$")]
    pub cursor: Option<String>,
    /// `own` (default): the caller's sessions. `tenant`: every session of the
    /// tenant, for operators and admins with a `reason`, which is audited.
    #[param(pattern = "^(|own|tenant)$")]
    pub scope: Option<String>,
    /// Why an operator searches the tenant (required with `scope=tenant`).
    #[param(max_length = 500)]
    pub reason: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SearchHit {
    pub session_id: String,
    pub message_id: i64,
    pub turn_id: String,
    pub role: String,
    /// The (redacted) message text, at most 800 characters.
    pub content: String,
    pub created_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SessionSummaryView {
    pub session_id: String,
    pub title: String,
    pub updated_at: String,
    /// The last message with text, at most 120 characters.
    pub preview: String,
    pub message_count: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResults {
    /// Matching messages: sessions in the order of their best match, each
    /// session's messages in order. Empty when browsing.
    pub results: Vec<SearchHit>,
    /// Browse only: sessions, most recently updated first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<Vec<SessionSummaryView>>,
    /// Pass as `cursor` for the next page; absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl From<SearchError> for Error {
    fn from(e: SearchError) -> Self {
        match e {
            SearchError::Refused(RefuseSearch::NotOperator) => {
                Error::Forbidden(RefuseSearch::NotOperator.to_string())
            }
            SearchError::Refused(r) => Error::Invalid(r.to_string()),
            SearchError::SessionNotFound(_) => Error::NotFound,
            SearchError::Store(e) => Error::Database(e),
        }
    }
}

impl From<SearchError> for super::error::ApiError {
    fn from(e: SearchError) -> Self {
        Error::from(e).into()
    }
}

/// Search (or browse) the history of the caller's sessions.
#[utoipa::path(get, path = "/v1/search", tag = "sessions", params(SearchQuery),
    responses((status = 200, body = SearchResults), (status = 400, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn search(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiQuery(q): ApiQuery<SearchQuery>,
) -> ApiResult<Json<SearchResults>> {
    let session = match q.session.as_deref().filter(|s| !s.is_empty()) {
        Some(s) => Some(super::sessions::session_id(s)?.to_string()),
        None => None,
    };
    let offset = match q.cursor.as_deref().filter(|c| !c.is_empty()) {
        Some(c) => c
            .parse::<u32>()
            .ok()
            .filter(|n| *n <= 999_999)
            .ok_or_else(|| Error::Invalid("cursor is not a cursor this server gave".into()))?,
        None => 0,
    };
    let request = Request::new(
        q.q.as_deref(),
        session.as_deref(),
        q.limit.unwrap_or(20),
        offset,
    )
    .map_err(SearchError::from)?;
    if q.reason.as_deref().is_some_and(|r| r.chars().count() > 500) {
        return Err(Error::Invalid("reason is longer than 500 characters".into()).into());
    }
    let tenant_wide = match q.scope.as_deref() {
        None | Some("") | Some("own") => false,
        Some("tenant") => true,
        Some(other) => {
            return Err(Error::Invalid(format!(
                "scope {:?} is not own or tenant",
                crate::history::clip(other, 20)
            ))
            .into())
        }
    };
    let (reach, audit) = if tenant_wide {
        let reach = Reach::tenant(&scope, q.reason.as_deref()).map_err(SearchError::from)?;
        let row =
            crate::history::audit_row(&scope, &via, q.reason.as_deref().unwrap_or(""), &request);
        (reach, Some(row))
    } else {
        (Reach::owned(&scope), None)
    };
    let page = crate::history::search(&app.store, &reach, &request, audit.as_ref())
        .await
        .map_err(Error::from)?;
    Ok(Json(match page {
        Page::Hits { hits, next_offset } => SearchResults {
            results: hits
                .into_iter()
                .map(|h| SearchHit {
                    session_id: h.session_id,
                    message_id: h.message_id,
                    turn_id: h.turn_id,
                    role: h.role,
                    content: h.content,
                    created_at: crate::time::rfc3339(h.created_at),
                })
                .collect(),
            sessions: None,
            next_cursor: next_offset.map(|n| n.to_string()),
        },
        Page::Sessions {
            sessions,
            next_offset,
        } => SearchResults {
            results: Vec::new(),
            sessions: Some(
                sessions
                    .into_iter()
                    .map(|s| SessionSummaryView {
                        session_id: s.session_id,
                        title: s.title,
                        updated_at: crate::time::rfc3339(s.updated_at),
                        preview: s.preview,
                        message_count: s.message_count,
                    })
                    .collect(),
            ),
            next_cursor: next_offset.map(|n| n.to_string()),
        },
    }))
}

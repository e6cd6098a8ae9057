//! Owner-scoped history search over the caller's own sessions.

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiQuery, Auth};
use crate::app::SharedApp;
use crate::error::Error;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// Text to find (case-insensitive), 1 to 200 characters.
    #[param(min_length = 1, max_length = 200, pattern = "\\S")]
    pub q: String,
    /// Only this session of the caller's (empty: all).
    #[param(
        pattern = "^(|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"
    )]
    pub session: Option<String>,
    /// Most results, 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
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
pub struct SearchResults {
    pub results: Vec<SearchHit>,
}

/// Search the history of the caller's sessions.
#[utoipa::path(get, path = "/v1/search", tag = "sessions", params(SearchQuery),
    responses((status = 200, body = SearchResults), (status = 400, body = ErrorBody)), security(("bearer" = [])))]
pub async fn search(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiQuery(q): ApiQuery<SearchQuery>,
) -> ApiResult<Json<SearchResults>> {
    let needle = q.q.trim();
    if needle.is_empty() || needle.chars().count() > 200 {
        return Err(Error::Invalid("q must be 1 to 200 characters".into()).into());
    }
    let limit = q.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return Err(Error::Invalid(format!("limit {limit} is not between 1 and 100")).into());
    }
    let session = match q.session.as_deref().filter(|s| !s.is_empty()) {
        Some(s) => Some(super::sessions::session_id(s)?.to_string()),
        None => None,
    };
    let hits = app
        .store
        .search_messages(
            scope.tenant(),
            scope.principal(),
            session.as_deref(),
            needle,
            limit,
        )
        .await?;
    Ok(Json(SearchResults {
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
    }))
}

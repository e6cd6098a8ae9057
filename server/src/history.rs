//! Session history search: who may read which history, which of the three
//! modes a request is (one session's messages, browsing sessions, full
//! text), and [`search`], which runs one. The index's own vocabulary (reach
//! tokens, query words, the rows) is the store's
//! ([`crate::store::search_index`], re-exported here); its SQL is in
//! `store::history`.
//!
//! Reach is a value built from the caller's [`PrincipalScope`]: an ordinary
//! principal reads its own sessions, a channel principal only the session it
//! is bound to, and an operator the whole tenant only with a stated reason
//! that is audited before anything is read. A foreign session and a missing
//! one give the same answer.

use serde_json::Value;

use crate::auth::PrincipalScope;
use crate::store::search_index::session_token;
pub use crate::store::search_index::{clip, Hit, Reach, SessionSummary};

/// Most hits or sessions one page returns.
pub const MAX_LIMIT: u32 = 100;
/// Characters of a query accepted at all.
pub const MAX_QUERY_CHARS: usize = 200;
/// Characters of an operator's stated reason.
pub const MAX_REASON_CHARS: usize = 500;

/// Why a search is refused before anything is read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefuseSearch {
    #[error("only a tenant operator or admin may search the sessions of other principals")]
    NotOperator,
    #[error("a tenant-wide search needs a reason (1 to {MAX_REASON_CHARS} characters)")]
    NoReason,
    #[error("query is longer than {MAX_QUERY_CHARS} characters")]
    QueryTooLong,
    #[error("limit {0} is not between 1 and {MAX_LIMIT}")]
    Limit(u32),
}

/// Who gets which reach: decided here, from an authenticated scope.
impl Reach {
    /// The caller's own sessions.
    pub fn owned(scope: &PrincipalScope) -> Self {
        Reach::Owned {
            tenant: scope.tenant().clone(),
            principal: scope.principal().clone(),
        }
    }

    /// Only `session` (which the caller must own): a channel principal's view.
    pub fn bound(scope: &PrincipalScope, session: &str) -> Self {
        Reach::Bound {
            tenant: scope.tenant().clone(),
            principal: scope.principal().clone(),
            session: session.to_owned(),
        }
    }

    /// The whole tenant, for an operator with a stated reason (trimmed).
    pub fn tenant(scope: &PrincipalScope, reason: Option<&str>) -> Result<Self, RefuseSearch> {
        if !scope.is_operator() {
            return Err(RefuseSearch::NotOperator);
        }
        let reason = reason.map(str::trim).unwrap_or("");
        if reason.is_empty() || reason.chars().count() > MAX_REASON_CHARS {
            return Err(RefuseSearch::NoReason);
        }
        Ok(Reach::Tenant {
            tenant: scope.tenant().clone(),
        })
    }
}

/// What a request asks for, decided from its fields alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// One session's messages in order: the newest `limit` without a query,
    /// the matching ones with it.
    Session { session: String, query: String },
    /// The reach's sessions, most recently updated first (no query, no session).
    Browse,
    /// Ranked full-text hits across the reach.
    FullText { query: String },
}

/// One search request after validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub mode: Mode,
    pub limit: u32,
    pub offset: u32,
}

impl Request {
    /// Decide the mode; blank fields count as absent.
    pub fn new(
        query: Option<&str>,
        session: Option<&str>,
        limit: u32,
        offset: u32,
    ) -> Result<Self, RefuseSearch> {
        let query = query.map(str::trim).unwrap_or("");
        if query.chars().count() > MAX_QUERY_CHARS {
            return Err(RefuseSearch::QueryTooLong);
        }
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(RefuseSearch::Limit(limit));
        }
        let session = session.map(str::trim).filter(|s| !s.is_empty());
        let mode = match (session, query.is_empty()) {
            (Some(s), _) => Mode::Session {
                session: s.to_owned(),
                query: query.to_owned(),
            },
            (None, true) => Mode::Browse,
            (None, false) => Mode::FullText {
                query: query.to_owned(),
            },
        };
        Ok(Self {
            mode,
            limit,
            offset,
        })
    }
}

/// One page of an answer; `next_offset` is set when more follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Page {
    Hits {
        hits: Vec<Hit>,
        next_offset: Option<u32>,
    },
    Sessions {
        sessions: Vec<SessionSummary>,
        next_offset: Option<u32>,
    },
}

/// Ranked hits (best first) as the caller sees them: sessions in the order
/// of their best hit, and within a session in message order.
pub fn in_session_order(ranked: Vec<Hit>) -> Vec<Hit> {
    let mut order: Vec<String> = Vec::new();
    for h in &ranked {
        if !order.contains(&h.session_id) {
            order.push(h.session_id.clone());
        }
    }
    let mut out = ranked;
    out.sort_by_key(|h| (order.iter().position(|s| *s == h.session_id), h.message_id));
    out
}

/// Cut `fetched` (which asked for `limit + 1`) to a page and say where the
/// next one starts.
pub fn paginate<T>(mut fetched: Vec<T>, limit: u32, offset: u32) -> (Vec<T>, Option<u32>) {
    let more = fetched.len() > limit as usize;
    fetched.truncate(limit as usize);
    let next = more.then(|| offset.saturating_add(limit));
    (fetched, next)
}

/// The audit record of a tenant-wide search: what was asked, never the text.
pub fn audit_detail(req: &Request) -> Value {
    let (mode, query) = match &req.mode {
        Mode::Session { session, query } => {
            return serde_json::json!({"mode": "session", "session_id": session,
                "query_chars": query.chars().count(), "limit": req.limit, "offset": req.offset})
        }
        Mode::Browse => ("browse", ""),
        Mode::FullText { query } => ("full_text", query.as_str()),
    };
    serde_json::json!({"mode": mode, "query_chars": query.chars().count(),
        "limit": req.limit, "offset": req.offset})
}

/// Why a search failed.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error(transparent)]
    Refused(#[from] RefuseSearch),
    /// The session does not exist or lies outside the reach (one answer).
    #[error("session not found: {0}")]
    SessionNotFound(String),
    #[error(transparent)]
    Store(#[from] sqlx::Error),
}

/// The audit row of a tenant-wide search by `who` from `surface`, with
/// its stated reason: what was asked (shape only, never the searched text).
pub fn audit_row(
    who: &PrincipalScope,
    surface: &crate::store::Surface,
    reason: &str,
    req: &Request,
) -> crate::store::NewAudit {
    let mut detail = audit_detail(req);
    detail["reason"] = serde_json::Value::from(reason.trim());
    who.audit(surface, "history.search", "", detail)
}

/// Run one search inside `reach`; a tenant-wide reach is audited (the row
/// from [`audit_row`]) before anything is read.
pub async fn search(
    store: &crate::store::Store,
    reach: &Reach,
    req: &Request,
    audit: Option<&crate::store::NewAudit>,
) -> Result<Page, SearchError> {
    if let Some(row) = audit {
        store.append_audit(row).await?;
    }
    let fetch = req.limit + 1;
    match &req.mode {
        Mode::Session { session, query } => {
            let visible = store.session_in_reach(reach, session).await?;
            if !visible {
                return Err(SearchError::SessionNotFound(clip(session, 80)));
            }
            if query.is_empty() {
                let newest = store.history_recent(session, fetch, req.offset).await?;
                let (mut hits, next) = paginate(newest, req.limit, req.offset);
                hits.reverse();
                return Ok(Page::Hits {
                    hits,
                    next_offset: next,
                });
            }
            // Its owner was checked just above: the session's own token
            // narrows the index.
            let ranked = store
                .history_full_text(&session_token(session), query, fetch, req.offset)
                .await?;
            let (mut hits, next) = paginate(ranked, req.limit, req.offset);
            hits.sort_by_key(|h| h.message_id);
            Ok(Page::Hits {
                hits,
                next_offset: next,
            })
        }
        Mode::Browse => {
            let sessions = store.history_browse(reach, fetch, req.offset).await?;
            let (sessions, next) = paginate(sessions, req.limit, req.offset);
            Ok(Page::Sessions {
                sessions,
                next_offset: next,
            })
        }
        Mode::FullText { query } => {
            let ranked = store
                .history_full_text(&reach.token(), query, fetch, req.offset)
                .await?;
            let (page, next) = paginate(ranked, req.limit, req.offset);
            Ok(Page::Hits {
                hits: in_session_order(page),
                next_offset: next,
            })
        }
    }
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;

//! Session history search: who may read which history, which of the three
//! modes a request is (one session's messages, browsing sessions, full
//! text), and the full-text query built from the caller's words. Pure: the
//! SQL lives in `store::history`, the orchestration in [`search`].
//!
//! Reach is a value built from the caller's [`PrincipalScope`]: an ordinary
//! principal reads its own sessions, a channel principal only the session it
//! is bound to, and an operator the whole tenant only with a stated reason
//! that is audited before anything is read. A foreign session and a missing
//! one give the same answer.

use serde_json::Value;

use crate::auth::PrincipalScope;
use crate::ids::{PrincipalId, TenantId};

/// Most hits or sessions one page returns.
pub const MAX_LIMIT: u32 = 100;
/// Characters of a message text in a hit.
pub const HIT_CHARS: usize = 800;
/// Characters of a session preview when browsing.
pub const PREVIEW_CHARS: usize = 120;
/// Words of a full-text query that are used; the rest are ignored.
pub const MAX_TERMS: usize = 16;
/// Characters of a query accepted at all.
pub const MAX_QUERY_CHARS: usize = 200;
/// Characters of an operator's stated reason.
pub const MAX_REASON_CHARS: usize = 500;

/// Which sessions a search may read. Built by [`Reach::owned`],
/// [`Reach::bound`] or [`Reach::tenant`] from an authenticated scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// Every session the principal owns.
    Owned {
        tenant: TenantId,
        principal: PrincipalId,
    },
    /// Only this session of the principal (a channel principal's binding).
    Bound {
        tenant: TenantId,
        principal: PrincipalId,
        session: String,
    },
    /// Every session of the tenant: an operator's audited search.
    Tenant { tenant: TenantId },
}

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

    pub fn tenant_id(&self) -> &TenantId {
        match self {
            Reach::Owned { tenant, .. }
            | Reach::Bound { tenant, .. }
            | Reach::Tenant { tenant } => tenant,
        }
    }

    /// The index token every message inside this reach carries (see the
    /// `0040_history_search` migrations, which build the same tokens).
    pub fn token(&self) -> String {
        match self {
            Reach::Owned { tenant, principal } => owner_token(tenant, principal),
            Reach::Bound { session, .. } => session_token(session),
            Reach::Tenant { tenant } => format!("t{}", hex(tenant.as_str())),
        }
    }

    /// Whether a session row (its tenant and owner) lies inside this reach.
    pub fn admits(&self, tenant: &str, principal: &str, session: &str) -> bool {
        match self {
            Reach::Owned {
                tenant: t,
                principal: p,
            } => t.as_str() == tenant && p.as_str() == principal,
            Reach::Bound {
                tenant: t,
                principal: p,
                session: s,
            } => t.as_str() == tenant && p.as_str() == principal && s == session,
            Reach::Tenant { tenant: t } => t.as_str() == tenant,
        }
    }
}

/// The index token of an owner's messages.
pub fn owner_token(tenant: &TenantId, principal: &PrincipalId) -> String {
    format!("o{}", hex(&format!("{tenant}/{principal}")))
}

/// The index token of one session's messages.
pub fn session_token(session: &str) -> String {
    format!("s{}", hex(session))
}

fn hex(s: &str) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(s.len() * 2);
    for b in s.as_bytes() {
        let _ = write!(out, "{b:02x}");
    }
    out
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

/// The words of a query as the SQLite index tokenises text (`unicode61`:
/// runs of letters and digits, case-folded), at most [`MAX_TERMS`].
pub fn terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in query.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let w = word.to_lowercase();
        if !out.contains(&w) {
            out.push(w);
        }
        if out.len() == MAX_TERMS {
            break;
        }
    }
    out
}

/// The FTS5 `MATCH` expression: the reach token in the `reach` column and
/// every term in the `text` column. `None` when the query has no words.
/// Terms are letters and digits only, so quoting them cannot inject syntax.
pub fn fts5_match(reach_token: &str, query: &str) -> Option<String> {
    let words = terms(query);
    if words.is_empty() {
        return None;
    }
    let mut out = format!("reach : \"{reach_token}\"");
    for w in words {
        out.push_str(" AND text : \"");
        out.push_str(&w);
        out.push('"');
    }
    Some(out)
}

/// The PostgreSQL tsquery of a reach: its token at weight A (text words are
/// weight D, so a message cannot forge a reach).
pub fn pg_reach_query(reach_token: &str) -> String {
    format!("{reach_token}:A")
}

/// A message's role and searchable text from its model-history JSON: the
/// `content` string, or the text parts of a multi-part content.
pub fn message_text(body: &Value) -> (String, String) {
    let role = body
        .get("role")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let text = match body.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                Value::Object(o) => o.get("text").and_then(Value::as_str),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    (role, text)
}

/// One matching message.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Hit {
    pub session_id: String,
    pub message_id: i64,
    pub turn_id: String,
    pub role: String,
    pub content: String,
    pub created_at: i64,
}

/// One session when browsing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SessionSummary {
    pub session_id: String,
    pub title: String,
    pub updated_at: i64,
    pub preview: String,
    pub message_count: i64,
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

/// The first `max` characters of `s`, with `…` when cut.
pub fn clip(s: &str, max: usize) -> String {
    let mut it = s.char_indices();
    match it.nth(max) {
        None => s.to_owned(),
        Some((i, _)) => format!("{}…", &s[..i]),
    }
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

/// Run one search inside `reach`; a tenant-wide reach is audited (with the
/// caller and its reason) before anything is read.
pub async fn search(
    store: &crate::store::Store,
    reach: &Reach,
    req: &Request,
    audit: Option<(&PrincipalScope, &str)>,
) -> Result<Page, SearchError> {
    if let Some((who, reason)) = audit {
        store
            .append_audit(who, "history.search", reason.trim(), &audit_detail(req))
            .await?;
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

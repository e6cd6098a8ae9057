//! The history index's vocabulary: which sessions a search reads
//! ([`Reach`]) and the index token each reach and message carries, the
//! query words as the index tokenises them, the FTS5 and tsquery
//! expressions, a message's searchable text, and the rows a search returns.
//! Pure; the store writes and queries the index with it (`store::history`,
//! `store::events`), and [`crate::history`] decides from a caller's scope
//! which reach it gets. The tokens must match the `0040_history_search`
//! migrations, which build the same ones in SQL.

use serde_json::Value;

use crate::ids::{PrincipalId, TenantId};

/// Characters of a message text in a hit.
pub const HIT_CHARS: usize = 800;

/// Characters of a session preview when browsing.
pub const PREVIEW_CHARS: usize = 120;

/// Words of a full-text query that are used; the rest are ignored.
pub const MAX_TERMS: usize = 16;

/// Which sessions a search may read. Built by [`Reach::owned`],
/// [`Reach::bound`] or [`Reach::tenant`] from an authenticated scope (in
/// [`crate::history`], which decides who may get which).
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

impl Reach {
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

/// The first `max` characters of `s`, with `…` when cut.
pub fn clip(s: &str, max: usize) -> String {
    let mut it = s.char_indices();
    match it.nth(max) {
        None => s.to_owned(),
        Some((i, _)) => format!("{}…", &s[..i]),
    }
}

#[cfg(test)]
#[path = "search_index_tests.rs"]
mod tests;

//! History search: SQLite FTS5 and PostgreSQL full-text queries over message
//! text and sessions for browsing (an operator's search is audited in
//! [`super::audit`]). The
//! index's vocabulary is [`super::search_index`]; who gets which reach and
//! which mode a request is are decided in `crate::history`.

use sqlx::{AssertSqlSafe, Row};

use super::search_index::{clip, fts5_match, pg_reach_query, terms, Hit, Reach, SessionSummary};
use super::search_index::{HIT_CHARS, PREVIEW_CHARS};
use super::Store;
use crate::config::Backend;

fn hit(r: &sqlx::any::AnyRow) -> Result<Hit, sqlx::Error> {
    let text: String = r.try_get(4)?;
    Ok(Hit {
        message_id: r.try_get(0)?,
        session_id: r.try_get(1)?,
        turn_id: r.try_get(2)?,
        role: r.try_get(3)?,
        content: clip(&text, HIT_CHARS),
        created_at: r.try_get(5)?,
    })
}

impl Store {
    /// Whether `session` exists inside `reach`.
    pub async fn session_in_reach(
        &self,
        reach: &Reach,
        session: &str,
    ) -> Result<bool, sqlx::Error> {
        let row = sqlx::query("SELECT tenant_id, principal_id FROM sessions WHERE id = $1")
            .bind(session)
            .fetch_optional(self.pool())
            .await?;
        Ok(match row {
            Some(r) => {
                let tenant: String = r.try_get(0)?;
                let principal: String = r.try_get(1)?;
                reach.admits(&tenant, &principal, session)
            }
            None => false,
        })
    }

    /// A session's messages, newest first, skipping `offset`.
    pub async fn history_recent(
        &self,
        session: &str,
        limit: u32,
        offset: u32,
    ) -> Result<Vec<Hit>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT id, session_id, turn_id, role, text, created_at FROM messages \
             WHERE session_id = $1 ORDER BY id DESC LIMIT $2 OFFSET $3",
        )
        .bind(session)
        .bind(i64::from(limit))
        .bind(i64::from(offset))
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(hit).collect()
    }

    /// Messages carrying the index token `reach_token` whose text holds
    /// every word of `query`, best first (BM25 on SQLite, `ts_rank` on
    /// PostgreSQL; ties by message id).
    pub async fn history_full_text(
        &self,
        reach_token: &str,
        query: &str,
        limit: u32,
        offset: u32,
    ) -> Result<Vec<Hit>, sqlx::Error> {
        let rows = match self.backend() {
            Backend::Sqlite => {
                let Some(expr) = fts5_match(reach_token, query) else {
                    return Ok(Vec::new());
                };
                sqlx::query(
                    "SELECT m.id, m.session_id, m.turn_id, m.role, m.text, m.created_at \
                     FROM messages_fts f JOIN messages m ON m.id = f.rowid \
                     WHERE messages_fts MATCH $1 \
                     ORDER BY bm25(messages_fts, 0.0, 1.0), m.id LIMIT $2 OFFSET $3",
                )
                .bind(expr)
                .bind(i64::from(limit))
                .bind(i64::from(offset))
                .fetch_all(self.pool())
                .await?
            }
            Backend::Postgres => {
                if terms(query).is_empty() {
                    return Ok(Vec::new());
                }
                sqlx::query(
                    "SELECT m.id, m.session_id, m.turn_id, m.role, m.text, m.created_at \
                     FROM messages m \
                     WHERE m.tsv @@ (plainto_tsquery('simple', $1) && to_tsquery('simple', $2)) \
                     ORDER BY ts_rank(m.tsv, plainto_tsquery('simple', $1)) DESC, m.id \
                     LIMIT $3 OFFSET $4",
                )
                .bind(query)
                .bind(pg_reach_query(reach_token))
                .bind(i64::from(limit))
                .bind(i64::from(offset))
                .fetch_all(self.pool())
                .await?
            }
        };
        rows.iter().map(hit).collect()
    }

    /// Sessions inside `reach`, most recently updated first, with their
    /// message count and a preview of their last message with text.
    pub async fn history_browse(
        &self,
        reach: &Reach,
        limit: u32,
        offset: u32,
    ) -> Result<Vec<SessionSummary>, sqlx::Error> {
        // Count and preview per listed session in the same statement: one
        // round trip per page, each subquery an index range of one session.
        const COLS: &str = "SELECT s.id, s.title, s.updated_at, \
             (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id), \
             (SELECT m.text FROM messages m WHERE m.session_id = s.id AND m.text <> '' \
              ORDER BY m.id DESC LIMIT 1) \
             FROM sessions s WHERE s.tenant_id = $1";
        const ORDER: &str = "ORDER BY s.updated_at DESC, s.id DESC";
        let lim = i64::from(limit);
        let off = i64::from(offset);
        let rows = match reach {
            Reach::Owned { tenant, principal } => {
                sqlx::query(AssertSqlSafe(format!(
                    "{COLS} AND s.principal_id = $2 {ORDER} LIMIT $3 OFFSET $4"
                )))
                .bind(tenant.as_str())
                .bind(principal.as_str())
                .bind(lim)
                .bind(off)
                .fetch_all(self.pool())
                .await?
            }
            Reach::Bound {
                tenant,
                principal,
                session,
            } => {
                sqlx::query(AssertSqlSafe(format!(
                    "{COLS} AND s.principal_id = $2 AND s.id = $3 {ORDER} LIMIT $4 OFFSET $5"
                )))
                .bind(tenant.as_str())
                .bind(principal.as_str())
                .bind(session)
                .bind(lim)
                .bind(off)
                .fetch_all(self.pool())
                .await?
            }
            Reach::Tenant { tenant } => {
                sqlx::query(AssertSqlSafe(format!("{COLS} {ORDER} LIMIT $2 OFFSET $3")))
                    .bind(tenant.as_str())
                    .bind(lim)
                    .bind(off)
                    .fetch_all(self.pool())
                    .await?
            }
        };
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let last: Option<String> = r.try_get(4)?;
            let preview = last
                .map(|t| clip(&t.trim().replace('\n', " "), PREVIEW_CHARS))
                .unwrap_or_default();
            out.push(SessionSummary {
                session_id: r.try_get(0)?,
                title: r.try_get(1)?,
                updated_at: r.try_get(2)?,
                preview,
                message_count: r.try_get(3)?,
            });
        }
        Ok(out)
    }
}

//! Conversation history as the model sees it (the model-history view).

use sqlx::Row;

use super::Store;

impl Store {
    /// The newest `limit` messages of a session, oldest first.
    pub async fn recent_messages(
        &self,
        session_id: &str,
        limit: u32,
    ) -> Result<Vec<serde_json::Value>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT body FROM messages WHERE session_id = $1 ORDER BY id DESC LIMIT $2",
        )
        .bind(session_id)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows.iter().rev() {
            let body: String = r.try_get(0)?;
            // A row we cannot parse is skipped rather than failing the session.
            if let Ok(v) = serde_json::from_str(&body) {
                out.push(v);
            }
        }
        Ok(out)
    }
}

/// The latest summary of a session's older turns.
#[derive(Debug, Clone, PartialEq)]
pub struct Compaction {
    /// The last message id the summary covers.
    pub until_message_id: i64,
    pub summary: String,
}

/// A stored message with its id and turn.
#[derive(Debug, Clone)]
pub struct StoredMessage {
    pub id: i64,
    pub turn_id: String,
    pub body: serde_json::Value,
}

impl Store {
    /// The session's latest compaction, if any.
    pub async fn latest_compaction(
        &self,
        session_id: &str,
    ) -> Result<Option<Compaction>, sqlx::Error> {
        let row = sqlx::query(
            "SELECT until_message_id, summary FROM session_compactions \
             WHERE session_id = $1 ORDER BY id DESC LIMIT 1",
        )
        .bind(session_id)
        .fetch_optional(self.pool())
        .await?;
        row.map(|r| {
            Ok(Compaction {
                until_message_id: r.try_get(0)?,
                summary: r.try_get(1)?,
            })
        })
        .transpose()
    }

    /// The newest `limit` messages after `after_id`, oldest first.
    pub async fn messages_after(
        &self,
        session_id: &str,
        after_id: i64,
        limit: u32,
    ) -> Result<Vec<StoredMessage>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT id, turn_id, body FROM messages WHERE session_id = $1 AND id > $2 \
             ORDER BY id DESC LIMIT $3",
        )
        .bind(session_id)
        .bind(after_id)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows.iter().rev() {
            let body: String = r.try_get(2)?;
            // A row we cannot parse is skipped rather than failing the session.
            if let Ok(v) = serde_json::from_str(&body) {
                out.push(StoredMessage {
                    id: r.try_get(0)?,
                    turn_id: r.try_get(1)?,
                    body: v,
                });
            }
        }
        Ok(out)
    }

    /// Records a summary of the session's messages up to `until_message_id`.
    pub async fn save_compaction(
        &self,
        session_id: &str,
        until_message_id: i64,
        summary: &str,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO session_compactions (session_id, until_message_id, summary, created_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(session_id)
        .bind(until_message_id)
        .bind(summary)
        .bind(crate::time::now_ms())
        .execute(self.pool())
        .await?;
        Ok(())
    }
}

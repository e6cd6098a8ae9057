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

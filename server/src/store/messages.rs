//! Conversation history as the model sees it (the model-history view).

use sqlx::Row;

use super::Store;
use crate::time::now_ms;

impl Store {
    pub async fn append_messages(
        &self,
        session_id: &str,
        turn_id: &str,
        bodies: &[serde_json::Value],
    ) -> Result<(), sqlx::Error> {
        if bodies.is_empty() {
            return Ok(());
        }
        let _gate = self.write_gate().await;
        let now = now_ms();
        let mut sql =
            String::from("INSERT INTO messages (session_id, turn_id, body, created_at) VALUES ");
        for i in 0..bodies.len() {
            let b = i * 4;
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("(${}, ${}, ${}, ${})", b + 1, b + 2, b + 3, b + 4));
        }
        let mut q = sqlx::query(&sql);
        for body in bodies {
            q = q
                .bind(session_id)
                .bind(turn_id)
                .bind(body.to_string())
                .bind(now);
        }
        q.execute(self.pool()).await?;
        Ok(())
    }

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

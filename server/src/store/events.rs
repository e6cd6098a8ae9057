//! The durable event log. Appends are batched: one transaction hands out a
//! contiguous run of `seq` per session (an atomic `last_seq` bump, safe across
//! instances) and inserts the rows.

use sqlx::any::AnyRow;
use sqlx::Row;

use super::Store;

/// An event before it has a `seq`.
#[derive(Debug, Clone)]
pub struct NewEvent {
    pub session_id: String,
    pub turn_id: Option<String>,
    pub kind: String,
    pub at_ms: i64,
    pub data: serde_json::Value,
}

/// A persisted event.
#[derive(Debug, Clone)]
pub struct EventRow {
    pub session_id: String,
    pub seq: i64,
    pub turn_id: Option<String>,
    pub kind: String,
    pub at: String,
    pub data: String,
}

fn decode(r: &AnyRow) -> Result<EventRow, sqlx::Error> {
    Ok(EventRow {
        session_id: r.try_get("session_id")?,
        seq: r.try_get("seq")?,
        turn_id: r.try_get("turn_id")?,
        kind: r.try_get("type")?,
        at: r.try_get("at")?,
        data: r.try_get("data")?,
    })
}

/// Rows per multi-row INSERT (6 parameters each stays far below every limit).
const INSERT_CHUNK: usize = 64;

impl Store {
    /// Persist a batch in one transaction; returns rows in input order.
    pub async fn append_events(&self, batch: &[NewEvent]) -> Result<Vec<EventRow>, sqlx::Error> {
        let _gate = self.write_gate().await;
        let mut tx = self.pool().begin().await?;
        // Count per session, in first-appearance order.
        let mut sessions: Vec<(&str, i64)> = Vec::new();
        for e in batch {
            match sessions.iter_mut().find(|(s, _)| *s == e.session_id) {
                Some((_, n)) => *n += 1,
                None => sessions.push((&e.session_id, 1)),
            }
        }
        // Next seq per session: last_seq after the bump minus the count.
        let mut next: Vec<(&str, i64)> = Vec::with_capacity(sessions.len());
        for (sid, n) in &sessions {
            let row = sqlx::query(
                "UPDATE sessions SET last_seq = last_seq + $1, updated_at = $2 WHERE id = $3 RETURNING last_seq",
            )
            .bind(*n)
            .bind(crate::time::now_ms())
            .bind(*sid)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(row) = row else {
                return Err(sqlx::Error::RowNotFound);
            };
            let last: i64 = row.try_get(0)?;
            next.push((sid, last - n + 1));
        }
        let mut rows = Vec::with_capacity(batch.len());
        for e in batch {
            let slot = next
                .iter_mut()
                .find(|(s, _)| *s == e.session_id)
                .ok_or(sqlx::Error::RowNotFound)?;
            let seq = slot.1;
            slot.1 += 1;
            rows.push(EventRow {
                session_id: e.session_id.clone(),
                seq,
                turn_id: e.turn_id.clone(),
                kind: e.kind.clone(),
                at: crate::time::rfc3339(e.at_ms),
                data: e.data.to_string(),
            });
        }
        for chunk in rows.chunks(INSERT_CHUNK) {
            let mut sql = String::from(
                "INSERT INTO events (session_id, seq, turn_id, type, at, data) VALUES ",
            );
            for i in 0..chunk.len() {
                let b = i * 6;
                if i > 0 {
                    sql.push_str(", ");
                }
                sql.push_str(&format!(
                    "(${}, ${}, ${}, ${}, ${}, ${})",
                    b + 1,
                    b + 2,
                    b + 3,
                    b + 4,
                    b + 5,
                    b + 6
                ));
            }
            let mut q = sqlx::query(&sql);
            for r in chunk {
                q = q
                    .bind(&r.session_id)
                    .bind(r.seq)
                    .bind(&r.turn_id)
                    .bind(&r.kind)
                    .bind(&r.at)
                    .bind(&r.data);
            }
            q.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(rows)
    }

    /// Events of a session with `seq > after`, oldest first.
    pub async fn events_after(
        &self,
        session_id: &str,
        after: i64,
        limit: u32,
    ) -> Result<Vec<EventRow>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT session_id, seq, turn_id, type, at, data FROM events \
             WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
        )
        .bind(session_id)
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(decode).collect()
    }
}

//! The durable event log. Appends are batched: one transaction hands out a
//! contiguous run of `seq` per session (an atomic `last_seq` bump, safe across
//! instances) and inserts the rows.

use sqlx::any::AnyRow;
use sqlx::{AssertSqlSafe, Row};

use super::Store;
use crate::config::Backend;

/// A turn's terminal transition, written in the same transaction as its
/// terminal event so the state is durable before anyone can see the event.
#[derive(Debug, Clone)]
pub struct TurnFinish {
    pub turn_id: crate::ids::TurnId,
    pub status: super::TurnStatus,
    pub output: Option<String>,
    pub reason: Option<String>,
    pub error: Option<String>,
    pub steps: u32,
}

impl TurnFinish {
    pub fn completed(turn: crate::ids::TurnId, output: String, steps: u32) -> Self {
        Self {
            turn_id: turn,
            status: super::TurnStatus::Completed,
            output: Some(output),
            reason: None,
            error: None,
            steps,
        }
    }

    pub fn failed(turn: crate::ids::TurnId, reason: &str, error: String, steps: u32) -> Self {
        Self {
            turn_id: turn,
            status: super::TurnStatus::Failed,
            output: None,
            reason: Some(reason.to_owned()),
            error: Some(error),
            steps,
        }
    }

    pub fn cancelled(turn: crate::ids::TurnId, reason: &str, steps: u32) -> Self {
        Self {
            turn_id: turn,
            status: super::TurnStatus::Cancelled,
            output: None,
            reason: Some(reason.to_owned()),
            error: None,
            steps,
        }
    }
}

/// An event before it has a `seq`, with optional writes that must commit with it.
#[derive(Debug, Clone)]
pub struct NewEvent {
    pub session_id: String,
    pub turn_id: Option<String>,
    pub kind: String,
    pub at_ms: i64,
    pub data: serde_json::Value,
    /// If set, the event is written only if this transition wins (the turn was still running).
    pub finish: Option<TurnFinish>,
    /// Model-history messages of the turn to append.
    pub messages: Vec<serde_json::Value>,
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

/// `($1, $2, …), (…)` for `rows` rows of `cols` parameters.
/// The same with anonymous, positional `?` placeholders on SQLite, where a
/// named one costs a scan of the statement's parameter list at every bind
/// (SQLite's `sqlite3_bind_parameter_name` is linear, so binding n named
/// parameters is quadratic: a 64-row, 12-column usage batch spent more in
/// binding than in writing). Values are bound in the order written.
pub(super) fn values_clause_for(backend: Backend, rows: usize, cols: usize) -> String {
    match backend {
        Backend::Postgres => values_clause(rows, cols),
        Backend::Sqlite => {
            let row = format!("({})", vec!["?"; cols].join(", "));
            vec![row; rows].join(", ")
        }
    }
}

pub(super) fn values_clause(rows: usize, cols: usize) -> String {
    let mut sql = String::with_capacity(rows * cols * 5);
    for i in 0..rows {
        if i > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for c in 0..cols {
            if c > 0 {
                sql.push_str(", ");
            }
            sql.push('$');
            sql.push_str(&(i * cols + c + 1).to_string());
        }
        sql.push(')');
    }
    sql
}

impl Store {
    /// Persist a batch in one transaction. Returns, in input order, the
    /// stored row, or `None` for an event whose turn transition lost.
    pub async fn append_events(
        &self,
        batch: &[NewEvent],
    ) -> Result<Vec<Option<EventRow>>, sqlx::Error> {
        let _gate = self.write_gate().await;
        let now = crate::time::now_ms();
        let mut tx = self.pool().begin().await?;
        // 1. Turn transitions first: an event whose transition lost is dropped.
        let mut keep = vec![true; batch.len()];
        for (i, e) in batch.iter().enumerate() {
            if let Some(f) = &e.finish {
                let res = sqlx::query(super::turns::FINISH_TURN_SQL)
                    .bind(f.status.as_str())
                    .bind(&f.output)
                    .bind(&f.reason)
                    .bind(&f.error)
                    .bind(i64::from(f.steps))
                    .bind(now)
                    .bind(f.turn_id.to_string())
                    .execute(&mut *tx)
                    .await?;
                keep[i] = res.rows_affected() == 1;
            }
        }
        // 2. One statement bumps every session's last_seq and returns the new values.
        let mut sessions: Vec<(&str, i64)> = Vec::new();
        for (e, _) in batch.iter().zip(&keep).filter(|(_, k)| **k) {
            match sessions.iter_mut().find(|(s, _)| *s == e.session_id) {
                Some((_, n)) => *n += 1,
                None => sessions.push((&e.session_id, 1)),
            }
        }
        let mut next: Vec<(String, i64)> = Vec::with_capacity(sessions.len());
        if !sessions.is_empty() {
            let mut sql = String::from("UPDATE sessions SET last_seq = last_seq + CASE id");
            for i in 0..sessions.len() {
                sql.push_str(&format!(" WHEN ${} THEN ${}", 2 * i + 2, 2 * i + 3));
            }
            sql.push_str(" ELSE 0 END, updated_at = $1 WHERE id IN (");
            for i in 0..sessions.len() {
                if i > 0 {
                    sql.push_str(", ");
                }
                sql.push_str(&format!("${}", 2 * i + 2));
            }
            sql.push_str(") RETURNING id, last_seq");
            let mut q = sqlx::query(AssertSqlSafe(sql)).bind(now);
            for (sid, n) in &sessions {
                q = q.bind(*sid).bind(*n);
            }
            for row in q.fetch_all(&mut *tx).await? {
                let id: String = row.try_get(0)?;
                let last: i64 = row.try_get(1)?;
                let n = sessions
                    .iter()
                    .find(|(s, _)| *s == id)
                    .map(|(_, n)| *n)
                    .unwrap_or(0);
                next.push((id, last - n + 1));
            }
        }
        // 3. Assign seqs in input order and insert the events.
        let mut out = Vec::with_capacity(batch.len());
        let mut rows = Vec::with_capacity(batch.len());
        for (e, k) in batch.iter().zip(&keep) {
            if !*k {
                out.push(None);
                continue;
            }
            let slot = next
                .iter_mut()
                .find(|(s, _)| *s == e.session_id)
                .ok_or(sqlx::Error::RowNotFound)?;
            let row = EventRow {
                session_id: e.session_id.clone(),
                seq: slot.1,
                turn_id: e.turn_id.clone(),
                kind: e.kind.clone(),
                at: crate::time::rfc3339(e.at_ms),
                data: e.data.to_string(),
            };
            slot.1 += 1;
            rows.push(row.clone());
            out.push(Some(row));
        }
        for chunk in rows.chunks(INSERT_CHUNK) {
            let sql = format!(
                "INSERT INTO events (session_id, seq, turn_id, type, at, data) VALUES {}",
                values_clause_for(self.backend(), chunk.len(), 6)
            );
            let mut q = sqlx::query(AssertSqlSafe(sql));
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
        // 4. Model-history messages that ride along.
        let msgs: Vec<(&NewEvent, &serde_json::Value)> = batch
            .iter()
            .flat_map(|e| e.messages.iter().map(move |m| (e, m)))
            .collect();
        for chunk in msgs.chunks(INSERT_CHUNK) {
            let sql = format!(
                "INSERT INTO messages (session_id, turn_id, body, created_at, role, text) VALUES {}",
                values_clause_for(self.backend(), chunk.len(), 6)
            );
            let mut q = sqlx::query(AssertSqlSafe(sql));
            for (e, m) in chunk {
                // Role and plain text beside the JSON: what history search indexes.
                let (role, text) = super::search_index::message_text(m);
                q = q
                    .bind(&e.session_id)
                    .bind(e.turn_id.as_deref().unwrap_or(""))
                    .bind(m.to_string())
                    .bind(now)
                    .bind(role)
                    .bind(text);
            }
            q.execute(&mut *tx).await?;
        }
        if self.backend() == crate::config::Backend::Postgres {
            // Delivered to every listening instance when the batch commits.
            let pairs: Vec<(String, i64)> =
                next.iter().map(|(sid, n)| (sid.clone(), n - 1)).collect();
            for payload in super::peer_notify::payloads(&pairs) {
                sqlx::query("SELECT pg_notify($1, $2)")
                    .bind(super::peer_notify::CHANNEL)
                    .bind(payload)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        tx.commit().await?;
        Ok(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_on_postgresql_and_positional_on_sqlite() {
        assert_eq!(values_clause(2, 2), "($1, $2), ($3, $4)");
        assert_eq!(
            values_clause_for(Backend::Postgres, 2, 2),
            "($1, $2), ($3, $4)"
        );
        assert_eq!(
            values_clause_for(Backend::Sqlite, 2, 3),
            "(?, ?, ?), (?, ?, ?)"
        );
    }
}

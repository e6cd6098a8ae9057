//! Turns: the running-turn constraint, terminal transitions that happen
//! exactly once, and recovery of turns a crashed node left running.

use sqlx::any::AnyRow;
use sqlx::Row;

use super::{id, is_unique_violation, vocab, Store};
use crate::ids::{PrincipalId, SessionId, TenantId, TurnId};
use crate::time::now_ms;
use crate::wire::TurnStatus;

#[derive(Debug, Clone, serde::Serialize)]
pub struct TurnRow {
    pub id: TurnId,
    pub session_id: SessionId,
    pub status: TurnStatus,
    pub input: String,
    pub output: Option<String>,
    pub reason: Option<String>,
    pub error: Option<String>,
    pub steps: i64,
    pub created_at: i64,
    pub finished_at: Option<i64>,
}

#[derive(Debug, Clone)]
pub struct LostTurn {
    pub turn_id: TurnId,
    pub session_id: SessionId,
}

fn decode(r: &AnyRow) -> Result<TurnRow, sqlx::Error> {
    Ok(TurnRow {
        id: id(r, "id")?,
        session_id: id(r, "session_id")?,
        status: vocab(r, "status")?,
        input: r.try_get("input")?,
        output: r.try_get("output")?,
        reason: r.try_get("reason")?,
        error: r.try_get("error")?,
        steps: r.try_get("steps")?,
        created_at: r.try_get("created_at")?,
        finished_at: r.try_get("finished_at")?,
    })
}

/// The one terminal transition: only a running turn moves, exactly once.
pub(super) const FINISH_TURN_SQL: &str =
    "UPDATE turns SET status = $1, output = $2, reason = $3, error = $4, \
     steps = $5, finished_at = $6 WHERE id = $7 AND status = 'running'";

/// Outcome of trying to start a turn.
pub enum StartTurn {
    Started,
    /// Another turn of the session is running.
    Busy,
}

impl Store {
    /// Insert a running turn unless the session already has one.
    pub async fn start_turn(
        &self,
        id: TurnId,
        session: SessionId,
        tenant: &TenantId,
        principal: &PrincipalId,
        input: &str,
        node_id: &str,
    ) -> Result<StartTurn, sqlx::Error> {
        let _gate = self.write_gate().await;
        let res = sqlx::query(
            "INSERT INTO turns (id, session_id, tenant_id, principal_id, status, input, node_id, steps, created_at) \
             VALUES ($1, $2, $3, $4, 'running', $5, $6, 0, $7)",
        )
        .bind(id.to_string())
        .bind(session.to_string())
        .bind(tenant.as_str())
        .bind(principal.as_str())
        .bind(input)
        .bind(node_id)
        .bind(now_ms())
        .execute(self.pool())
        .await;
        match res {
            Ok(_) => Ok(StartTurn::Started),
            Err(e) if is_unique_violation(&e) => Ok(StartTurn::Busy),
            Err(e) => Err(e),
        }
    }

    /// Move a running turn to a terminal state. Returns false if it was no
    /// longer running (someone else finished it first).
    pub async fn finish_turn(
        &self,
        id: TurnId,
        status: TurnStatus,
        output: Option<&str>,
        reason: Option<&str>,
        error: Option<&str>,
        steps: u32,
    ) -> Result<bool, sqlx::Error> {
        let _gate = self.write_gate().await;
        let res = sqlx::query(FINISH_TURN_SQL)
            .bind(status.as_str())
            .bind(output)
            .bind(reason)
            .bind(error)
            .bind(i64::from(steps))
            .bind(now_ms())
            .bind(id.to_string())
            .execute(self.pool())
            .await?;
        Ok(res.rows_affected() == 1)
    }

    /// The turn if it belongs to this session of this owner.
    pub async fn get_turn(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
        session: SessionId,
        id: TurnId,
    ) -> Result<Option<TurnRow>, sqlx::Error> {
        sqlx::query(
            "SELECT id, session_id, status, input, output, reason, error, steps, created_at, finished_at \
             FROM turns WHERE id = $1 AND session_id = $2 AND tenant_id = $3 AND principal_id = $4",
        )
        .bind(id.to_string())
        .bind(session.to_string())
        .bind(tenant.as_str())
        .bind(principal.as_str())
        .fetch_optional(self.pool())
        .await?
        .as_ref()
        .map(decode)
        .transpose()
    }

    /// Mark every turn this node left running as failed (`lost`); never replay.
    /// `started_before` bounds it to turns the stopped run started (a
    /// survivor's claim must not reach turns a restart of it began since).
    pub async fn fail_lost_turns(
        &self,
        node_id: &str,
        started_before: i64,
    ) -> Result<Vec<LostTurn>, sqlx::Error> {
        let _gate = self.write_gate().await;
        let rows = sqlx::query(
            "UPDATE turns SET status = 'failed', reason = 'lost', error = 'the server stopped while the turn was running', \
             finished_at = $1 WHERE node_id = $2 AND status = 'running' AND created_at <= $3 RETURNING id, session_id",
        )
        .bind(now_ms())
        .bind(node_id)
        .bind(started_before)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                Ok(LostTurn {
                    turn_id: id(r, "id")?,
                    session_id: id(r, "session_id")?,
                })
            })
            .collect()
    }
}

//! Approval and clarification records. State moves out of `pending` exactly
//! once (conditional UPDATE), so a decision races safely with a timeout, a
//! restart or a decision on another node.

use sqlx::any::AnyRow;
use sqlx::{AssertSqlSafe, Row};

use super::{id, vocab, vocab_opt, Store};
use crate::ids::{PrincipalId, SessionId, TenantId, TurnId};
use crate::policy::approval_authority::Requirement;
use crate::time::now_ms;
use crate::wire::{ApprovalState, ClarificationState, Decision, Risk};

#[derive(Debug, Clone)]
pub struct NewApproval {
    pub id: String,
    pub tenant: String,
    pub principal: String,
    pub session_id: SessionId,
    pub turn_id: TurnId,
    pub node_id: String,
    pub tool: String,
    pub risk: Risk,
    pub rule: String,
    pub reason: String,
    pub preview: String,
    pub fingerprint: String,
    pub session_cacheable: bool,
    /// Who must decide, from the tenant policy.
    pub requires: Requirement,
    pub expires_at: i64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ApprovalRow {
    pub id: String,
    /// The principal whose turn asked.
    pub principal_id: String,
    pub session_id: SessionId,
    pub turn_id: TurnId,
    pub tool: String,
    pub risk: Risk,
    pub rule: String,
    pub reason: String,
    pub preview: String,
    pub state: ApprovalState,
    pub decision: Option<Decision>,
    pub session_cacheable: bool,
    /// Who must decide (see [`crate::policy::approval_authority`]).
    pub requires: Requirement,
    pub created_at: i64,
    pub expires_at: i64,
    pub decided_at: Option<i64>,
    /// The principal who decided (the owner or a tenant operator).
    pub decided_by: Option<String>,
}

const APPROVAL_COLUMNS: &str =
    "id, principal_id, session_id, turn_id, tool, risk, rule, reason, preview, state, decision, \
     session_cacheable, requires, created_at, expires_at, decided_at, decided_by";

fn decode_approval(r: &AnyRow) -> Result<ApprovalRow, sqlx::Error> {
    Ok(ApprovalRow {
        id: r.try_get("id")?,
        principal_id: r.try_get("principal_id")?,
        session_id: id(r, "session_id")?,
        turn_id: id(r, "turn_id")?,
        tool: r.try_get("tool")?,
        risk: vocab(r, "risk")?,
        rule: r.try_get("rule")?,
        reason: r.try_get("reason")?,
        preview: r.try_get("preview")?,
        state: vocab(r, "state")?,
        decision: vocab_opt(r, "decision")?,
        session_cacheable: r.try_get::<i64, _>("session_cacheable")? != 0,
        requires: vocab(r, "requires")?,
        created_at: r.try_get("created_at")?,
        expires_at: r.try_get("expires_at")?,
        decided_at: r.try_get("decided_at")?,
        decided_by: r.try_get("decided_by")?,
    })
}

#[derive(Debug, Clone)]
pub struct NewClarification {
    pub id: String,
    pub tenant: String,
    pub principal: String,
    pub session_id: SessionId,
    pub turn_id: TurnId,
    pub node_id: String,
    pub question: String,
    pub choices: String,
    pub expires_at: i64,
}

#[derive(Debug, Clone)]
pub struct ClarificationRow {
    pub id: String,
    pub session_id: SessionId,
    pub turn_id: TurnId,
    pub state: ClarificationState,
    pub answer: Option<String>,
}

impl Store {
    pub async fn insert_approval(&self, a: &NewApproval) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "INSERT INTO approvals (id, tenant_id, principal_id, session_id, turn_id, node_id, tool, risk, rule, reason, \
             preview, fingerprint, session_cacheable, requires, state, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, 'pending', $15, $16)",
        )
        .bind(&a.id)
        .bind(&a.tenant)
        .bind(&a.principal)
        .bind(a.session_id.to_string())
        .bind(a.turn_id.to_string())
        .bind(&a.node_id)
        .bind(&a.tool)
        .bind(a.risk.as_str())
        .bind(&a.rule)
        .bind(&a.reason)
        .bind(&a.preview)
        .bind(&a.fingerprint)
        .bind(i64::from(a.session_cacheable))
        .bind(a.requires.as_str())
        .bind(now_ms())
        .bind(a.expires_at)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Settle a pending approval. `None` decision means expired; `decided_by`
    /// is the deciding principal. Returns false if it was no longer pending.
    pub async fn settle_approval(
        &self,
        id: &str,
        state: ApprovalState,
        decision: Option<Decision>,
        decided_by: Option<&str>,
        audit: Option<&super::NewAudit>,
    ) -> Result<bool, sqlx::Error> {
        let _gate = self.write_gate().await;
        let mut tx = self.pool().begin().await?;
        let res = sqlx::query(
            "UPDATE approvals SET state = $1, decision = $2, decided_at = $3, decided_by = $4 \
             WHERE id = $5 AND state = 'pending'",
        )
        .bind(state.as_str())
        .bind(decision.map(Decision::as_str))
        .bind(now_ms())
        .bind(decided_by)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        let settled = res.rows_affected() == 1;
        // Only the decision that settled it is recorded.
        if let (true, Some(a)) = (settled, audit) {
            super::audit::append_in(self.backend(), &mut tx, a).await?;
        }
        tx.commit().await?;
        Ok(settled)
    }

    /// An approval of this tenant (any principal; the caller decides who may see it).
    pub async fn get_approval(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> Result<Option<ApprovalRow>, sqlx::Error> {
        let sql =
            format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE id = $1 AND tenant_id = $2");
        sqlx::query(AssertSqlSafe(sql))
            .bind(id)
            .bind(tenant.as_str())
            .fetch_optional(self.pool())
            .await?
            .as_ref()
            .map(decode_approval)
            .transpose()
    }

    /// Current state of an approval by id (for a waiter polling across nodes).
    pub async fn approval_state(
        &self,
        id: &str,
    ) -> Result<Option<(ApprovalState, Option<Decision>)>, sqlx::Error> {
        let row = sqlx::query("SELECT state, decision FROM approvals WHERE id = $1")
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        row.map(|r| Ok((vocab(&r, "state")?, vocab_opt(&r, "decision")?)))
            .transpose()
    }

    /// (session, turn, tool) of an approval, for its `approval.resolved` event.
    pub async fn approval_brief(
        &self,
        id: &str,
    ) -> Result<Option<(SessionId, TurnId, String)>, sqlx::Error> {
        let row = sqlx::query("SELECT session_id, turn_id, tool FROM approvals WHERE id = $1")
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        row.map(|r| {
            Ok((
                super::id(&r, "session_id")?,
                super::id(&r, "turn_id")?,
                r.try_get(2)?,
            ))
        })
        .transpose()
    }

    /// The principal's own approvals and, with `with_operator_queue`, every
    /// approval of the tenant that needs an operator; newest first.
    pub async fn list_approvals(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
        with_operator_queue: bool,
        state: Option<ApprovalState>,
        limit: u32,
    ) -> Result<Vec<ApprovalRow>, sqlx::Error> {
        // An absent filter is a NULL parameter: one statement serves both cases.
        let sql = format!(
            "SELECT {APPROVAL_COLUMNS} FROM approvals WHERE tenant_id = $1 \
             AND (principal_id = $2 OR ($3 = 1 AND requires = 'operator')) \
             AND (CAST($4 AS TEXT) IS NULL OR state = $4) ORDER BY created_at DESC LIMIT $5"
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(tenant.as_str())
            .bind(principal.as_str())
            .bind(i64::from(with_operator_queue))
            .bind(state.map(ApprovalState::as_str))
            .bind(i64::from(limit))
            .fetch_all(self.pool())
            .await?;
        rows.iter().map(decode_approval).collect()
    }

    /// After a restart nobody waits on this node's pending records: expire
    /// them (an expired approval is a deny, never an allow).
    pub async fn expire_pending_of_node(
        &self,
        node_id: &str,
        created_before: i64,
    ) -> Result<(Vec<ApprovalRow>, u64), sqlx::Error> {
        let _gate = self.write_gate().await;
        let sql = format!(
            "UPDATE approvals SET state = 'expired', decided_at = $1 WHERE node_id = $2 AND state = 'pending' \
             AND created_at <= $3 RETURNING {APPROVAL_COLUMNS}"
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(now_ms())
            .bind(node_id)
            .bind(created_before)
            .fetch_all(self.pool())
            .await?;
        let approvals = rows
            .iter()
            .map(decode_approval)
            .collect::<Result<Vec<_>, _>>()?;
        let res = sqlx::query(
            "UPDATE clarifications SET state = 'expired', answered_at = $1 WHERE node_id = $2 AND state = 'pending' \
             AND created_at <= $3",
        )
        .bind(now_ms())
        .bind(node_id)
        .bind(created_before)
        .execute(self.pool())
        .await?;
        Ok((approvals, res.rows_affected()))
    }

    pub async fn insert_clarification(&self, c: &NewClarification) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "INSERT INTO clarifications (id, tenant_id, principal_id, session_id, turn_id, node_id, question, choices, \
             state, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, $10)",
        )
        .bind(&c.id)
        .bind(&c.tenant)
        .bind(&c.principal)
        .bind(c.session_id.to_string())
        .bind(c.turn_id.to_string())
        .bind(&c.node_id)
        .bind(&c.question)
        .bind(&c.choices)
        .bind(now_ms())
        .bind(c.expires_at)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Answer (or expire, with `None`) a pending clarification; false if not pending.
    pub async fn settle_clarification(
        &self,
        id: &str,
        answer: Option<&str>,
        audit: Option<&super::NewAudit>,
    ) -> Result<bool, sqlx::Error> {
        let _gate = self.write_gate().await;
        let mut tx = self.pool().begin().await?;
        let state = if answer.is_some() {
            ClarificationState::Answered
        } else {
            ClarificationState::Expired
        };
        let res = sqlx::query(
            "UPDATE clarifications SET state = $1, answer = $2, answered_at = $3 WHERE id = $4 AND state = 'pending'",
        )
        .bind(state.as_str())
        .bind(answer)
        .bind(now_ms())
        .bind(id)
        .execute(&mut *tx)
        .await?;
        let settled = res.rows_affected() == 1;
        if let (true, Some(a)) = (settled, audit) {
            super::audit::append_in(self.backend(), &mut tx, a).await?;
        }
        tx.commit().await?;
        Ok(settled)
    }

    pub async fn get_clarification(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
        id: &str,
    ) -> Result<Option<ClarificationRow>, sqlx::Error> {
        sqlx::query(
            "SELECT id, session_id, turn_id, state, answer FROM clarifications \
             WHERE id = $1 AND tenant_id = $2 AND principal_id = $3",
        )
        .bind(id)
        .bind(tenant.as_str())
        .bind(principal.as_str())
        .fetch_optional(self.pool())
        .await?
        .map(|r| {
            Ok(ClarificationRow {
                id: r.try_get("id")?,
                session_id: super::id(&r, "session_id")?,
                turn_id: super::id(&r, "turn_id")?,
                state: vocab(&r, "state")?,
                answer: r.try_get("answer")?,
            })
        })
        .transpose()
    }

    pub async fn clarification_state(
        &self,
        id: &str,
    ) -> Result<Option<(ClarificationState, Option<String>)>, sqlx::Error> {
        let row = sqlx::query("SELECT state, answer FROM clarifications WHERE id = $1")
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        row.map(|r| Ok((vocab(&r, "state")?, r.try_get("answer")?)))
            .transpose()
    }
}

/// One `allow_session` grant, as [`Store::put_session_grant`] records it.
#[derive(Debug, Clone)]
pub struct SessionGrant<'a> {
    pub cache_key: &'a str,
    pub tenant: &'a TenantId,
    pub principal: &'a PrincipalId,
    pub session_id: SessionId,
    pub requirement: Requirement,
    pub expires_at: i64,
}

impl Store {
    /// The authority of a live `allow_session` grant under `cache_key`.
    pub async fn session_grant(&self, cache_key: &str) -> Result<Option<Requirement>, sqlx::Error> {
        let row = sqlx::query(
            "SELECT requirement FROM session_grants WHERE cache_key = $1 AND expires_at > $2",
        )
        .bind(cache_key)
        .bind(now_ms())
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(|r| vocab(r, "requirement")).transpose()
    }

    /// Record (or renew) a grant; expired grants are dropped on the way.
    pub async fn put_session_grant(&self, g: &SessionGrant<'_>) -> Result<(), sqlx::Error> {
        let now = now_ms();
        let _gate = self.write_gate().await;
        sqlx::query("DELETE FROM session_grants WHERE expires_at <= $1")
            .bind(now)
            .execute(self.pool())
            .await?;
        sqlx::query(
            "INSERT INTO session_grants (cache_key, tenant_id, principal_id, session_id, requirement, \
             expires_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
             ON CONFLICT (cache_key) DO UPDATE SET requirement = excluded.requirement, \
             expires_at = excluded.expires_at",
        )
        .bind(g.cache_key)
        .bind(g.tenant.as_str())
        .bind(g.principal.as_str())
        .bind(g.session_id.to_string())
        .bind(g.requirement.as_str())
        .bind(g.expires_at)
        .bind(now)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Drop every grant of every session of the tenant on `core` (its
    /// live revision moved: a grant made for one revision must not revive
    /// when a rollback brings that revision's fingerprint back); how many went.
    pub async fn delete_core_session_grants(
        &self,
        tenant: &TenantId,
        core: &str,
    ) -> Result<u64, sqlx::Error> {
        let _gate = self.write_gate().await;
        let res = sqlx::query(
            "DELETE FROM session_grants WHERE tenant_id = $1 AND session_id IN \
             (SELECT id FROM sessions WHERE tenant_id = $1 AND core = $2)",
        )
        .bind(tenant.as_str())
        .bind(core)
        .execute(self.pool())
        .await?;
        Ok(res.rows_affected())
    }

    /// Drop every grant of one of the principal's sessions; how many went.
    pub async fn delete_session_grants(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
        session_id: &str,
    ) -> Result<u64, sqlx::Error> {
        let _gate = self.write_gate().await;
        let res = sqlx::query(
            "DELETE FROM session_grants WHERE tenant_id = $1 AND principal_id = $2 AND session_id = $3",
        )
        .bind(tenant.as_str())
        .bind(principal.as_str())
        .bind(session_id)
        .execute(self.pool())
        .await?;
        Ok(res.rows_affected())
    }
}

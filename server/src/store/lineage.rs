//! The lineage of child sessions (`delegate_task`): written once with the
//! child session, read by every turn of it.

use sqlx::Row;

use super::Store;
use crate::ids::{PrincipalId, SessionId, TenantId};
use crate::tasks::children::{Delegation, Lineage, HARD_MAX_DEPTH};
use crate::time::now_ms;

impl Store {
    pub async fn insert_lineage(
        &self,
        session: SessionId,
        tenant: &TenantId,
        principal: &PrincipalId,
        l: &Lineage,
    ) -> Result<(), sqlx::Error> {
        let tools = l
            .tools
            .as_ref()
            .map(|t| serde_json::Value::from(t.clone()).to_string());
        let _gate = self.write_gate().await;
        sqlx::query(
            "INSERT INTO session_lineage (session_id, parent_session_id, tenant_id, principal_id, \
             parent_core, depth, max_depth, tools, workspace_run, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(session.to_string())
        .bind(l.parent_session.to_string())
        .bind(tenant.as_str())
        .bind(principal.as_str())
        .bind(&l.parent_core)
        .bind(i64::from(l.depth))
        .bind(i64::from(l.max_depth))
        .bind(tools)
        .bind(l.workspace_run.as_deref())
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// Where a session sits in a delegation chain; `None` for a session no
    /// `delegate_task` created. Walks up the chain (bounded by the hard
    /// depth cap) for the sessions and cores above it.
    pub async fn lineage(&self, session: SessionId) -> Result<Option<Delegation>, sqlx::Error> {
        let Some((parent_session, parent_core, r)) = self.lineage_row(session).await? else {
            return Ok(None);
        };
        let tools: Option<String> = r.try_get("tools")?;
        // An unreadable list fails closed: no tools.
        let tools = tools.map(|t| serde_json::from_str::<Vec<String>>(&t).unwrap_or_default());
        let depth: i64 = r.try_get("depth")?;
        let max_depth: i64 = r.try_get("max_depth")?;
        let mut ancestor_sessions = Vec::new();
        let mut ancestor_cores = vec![parent_core.clone()];
        let mut next = SessionId::parse(&parent_session).ok();
        while let Some(above) = next.take() {
            ancestor_sessions.push(above);
            if ancestor_sessions.len() > HARD_MAX_DEPTH as usize {
                break;
            }
            if let Some((p, core, _)) = self.lineage_row(above).await? {
                ancestor_cores.push(core);
                next = SessionId::parse(&p).ok();
            }
        }
        Ok(Some(Delegation {
            depth: u32::try_from(depth).unwrap_or(u32::MAX),
            max_depth: u32::try_from(max_depth).unwrap_or(0),
            tools,
            parent_core: Some(parent_core),
            workspace_run: r.try_get("workspace_run")?,
            ancestor_sessions,
            ancestor_cores,
        }))
    }

    async fn lineage_row(
        &self,
        session: SessionId,
    ) -> Result<Option<(String, String, sqlx::any::AnyRow)>, sqlx::Error> {
        let row = sqlx::query(
            "SELECT parent_session_id, parent_core, depth, max_depth, tools, workspace_run \
             FROM session_lineage WHERE session_id = $1",
        )
        .bind(session.to_string())
        .fetch_optional(self.pool())
        .await?;
        let Some(r) = row else {
            return Ok(None);
        };
        Ok(Some((
            r.try_get("parent_session_id")?,
            r.try_get("parent_core")?,
            r,
        )))
    }
}

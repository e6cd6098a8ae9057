//! The lineage of child sessions (`delegate_task`): written once with the
//! child session, read by every turn of it.

use sqlx::Row;

use super::Store;
use crate::ids::{PrincipalId, SessionId, TenantId};
use crate::time::now_ms;

/// No delegation chain is ever deeper than this, whatever a call asks.
pub const HARD_MAX_DEPTH: u32 = 3;

/// Where a session sits in a delegation chain. A top-level session is
/// depth 0 with the hard cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delegation {
    pub depth: u32,
    /// The deepest a chain through this session may reach.
    pub max_depth: u32,
    /// The tools this session's turns may see (`None`: every tool of its core).
    pub tools: Option<Vec<String>>,
    /// The core that delegated (its grants bound this session's tools).
    pub parent_core: Option<String>,
    /// The evolve run (of `parent_core`) whose worktree is this session's
    /// workspace: the evolver child of `evolve_core start`.
    pub workspace_run: Option<String>,
    /// The sessions above this one, the parent first: approvals asked here
    /// are mirrored to their streams.
    pub ancestor_sessions: Vec<SessionId>,
    /// The cores of every delegating session above, the parent's first:
    /// each one bounds this session's capabilities and approval policies.
    pub ancestor_cores: Vec<String>,
}

impl Delegation {
    /// A child agent's session (delegated by another session).
    pub fn is_child(&self) -> bool {
        self.depth > 0
    }

    /// `(core, run id)` when this session works in an evolve run's worktree.
    pub fn run_of(&self) -> Option<(&str, &str)> {
        Some((self.parent_core.as_deref()?, self.workspace_run.as_deref()?))
    }
}

impl Default for Delegation {
    fn default() -> Self {
        Self {
            depth: 0,
            max_depth: HARD_MAX_DEPTH,
            tools: None,
            parent_core: None,
            workspace_run: None,
            ancestor_sessions: Vec::new(),
            ancestor_cores: Vec::new(),
        }
    }
}

/// The lineage of a new child session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lineage {
    pub parent_session: SessionId,
    pub parent_core: String,
    pub depth: u32,
    pub max_depth: u32,
    pub tools: Option<Vec<String>>,
    /// See [`Delegation::workspace_run`].
    pub workspace_run: Option<String>,
    /// The child core's input/output slots its turns run (resolved ids,
    /// base included) and whether its bootstrap slots run.
    pub input_slots: Vec<String>,
    pub output_slots: Vec<String>,
    pub use_bootstrap: bool,
}

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

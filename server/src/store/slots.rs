//! A session's slot pipeline record (`session_slots`): the selection a
//! child session was given by `delegate_task`, and the bootstrap snapshot
//! once its bootstrap slots ran (they run once per session).

use sqlx::Row;

use super::Store;
use crate::ids::{SessionId, TenantId};
use crate::time::now_ms;

/// What a session's turns run of the core's pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSlots {
    /// `None`: the whole input pipeline; a list: those ids (base included).
    pub input: Option<Vec<String>>,
    pub output: Option<Vec<String>>,
    pub use_bootstrap: bool,
    /// The bootstrap snapshot, once bootstrap ran (`Some("")` when it added nothing).
    pub bootstrap: Option<String>,
}

impl Default for SessionSlots {
    /// A session no `delegate_task` made: the whole pipeline, bootstrap included.
    fn default() -> Self {
        Self {
            input: None,
            output: None,
            use_bootstrap: true,
            bootstrap: None,
        }
    }
}

fn list(v: &Option<Vec<String>>) -> Option<String> {
    v.as_ref()
        .map(|l| serde_json::Value::from(l.clone()).to_string())
}

impl Store {
    /// Record a child session's selection (before its first turn).
    pub async fn insert_session_slots(
        &self,
        session: SessionId,
        tenant: &TenantId,
        slots: &SessionSlots,
    ) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "INSERT INTO session_slots (session_id, tenant_id, input_slots, output_slots, \
             use_bootstrap, bootstrap_text, bootstrapped_at, created_at) \
             VALUES ($1, $2, $3, $4, $5, NULL, NULL, $6)",
        )
        .bind(session.to_string())
        .bind(tenant.as_str())
        .bind(list(&slots.input))
        .bind(list(&slots.output))
        .bind(i64::from(slots.use_bootstrap))
        .bind(now_ms())
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The session's record; the default (whole pipeline, bootstrap not yet
    /// run) when it has none.
    pub async fn session_slots(&self, session: SessionId) -> Result<SessionSlots, sqlx::Error> {
        let row = sqlx::query(
            "SELECT input_slots, output_slots, use_bootstrap, bootstrap_text, bootstrapped_at \
             FROM session_slots WHERE session_id = $1",
        )
        .bind(session.to_string())
        .fetch_optional(self.pool())
        .await?;
        let Some(r) = row else {
            return Ok(SessionSlots::default());
        };
        // An unreadable list fails closed: the base slot only.
        let parse = |t: Option<String>| {
            t.map(|t| serde_json::from_str::<Vec<String>>(&t).unwrap_or_default())
        };
        let done: Option<i64> = r.try_get("bootstrapped_at")?;
        let text: Option<String> = r.try_get("bootstrap_text")?;
        let use_bootstrap: i64 = r.try_get("use_bootstrap")?;
        Ok(SessionSlots {
            input: parse(r.try_get("input_slots")?),
            output: parse(r.try_get("output_slots")?),
            use_bootstrap: use_bootstrap != 0,
            bootstrap: done.map(|_| text.unwrap_or_default()),
        })
    }

    /// Keep the bootstrap snapshot of a session (the first write wins, so
    /// two racing first turns agree on one snapshot).
    pub async fn save_bootstrap(
        &self,
        session: SessionId,
        tenant: &TenantId,
        text: &str,
    ) -> Result<(), sqlx::Error> {
        let now = now_ms();
        let _gate = self.write_gate().await;
        sqlx::query(
            "INSERT INTO session_slots (session_id, tenant_id, input_slots, output_slots, \
             use_bootstrap, bootstrap_text, bootstrapped_at, created_at) \
             VALUES ($1, $2, NULL, NULL, 1, $3, $4, $4) \
             ON CONFLICT (session_id) DO UPDATE SET bootstrap_text = excluded.bootstrap_text, \
             bootstrapped_at = excluded.bootstrapped_at \
             WHERE session_slots.bootstrapped_at IS NULL",
        )
        .bind(session.to_string())
        .bind(tenant.as_str())
        .bind(text)
        .bind(now)
        .execute(self.pool())
        .await?;
        Ok(())
    }
}

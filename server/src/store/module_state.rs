//! Slot state documents (`module_state`): one JSON object per (tenant,
//! core, scope), read and changed by `ctx.state` (see `slots/state.rs` for
//! what a change means). Writes of one document queue (see
//! [`Store::write_module_state`]), so concurrent slots and instances never
//! lose an update.

use serde_json::Value;
use sqlx::Row;

use super::Store;
use crate::config::Backend;
use crate::policy::slot_state::{self as state, Request, StateError};
use crate::time::now_ms;

/// Tries before a write that keeps losing its race gives up.
const WRITE_TRIES: usize = 8;

fn storage(e: sqlx::Error) -> StateError {
    StateError::Unavailable(format!("state storage: {e}"))
}

impl Store {
    /// The document and its version (`None`: never written); `lock` takes
    /// the row lock of a write on PostgreSQL.
    async fn module_state_row<'e, E>(
        executor: E,
        backend: Backend,
        lock: bool,
        key: (&str, &str, &str),
    ) -> Result<Option<(Value, i64)>, StateError>
    where
        E: sqlx::Executor<'e, Database = sqlx::Any>,
    {
        let (tenant, core, scope) = key;
        let sql = if lock && backend == Backend::Postgres {
            "SELECT body, version FROM module_state \
             WHERE tenant_id = $1 AND core_id = $2 AND scope = $3 FOR UPDATE"
        } else {
            "SELECT body, version FROM module_state \
             WHERE tenant_id = $1 AND core_id = $2 AND scope = $3"
        };
        let row = sqlx::query(sql)
            .bind(tenant)
            .bind(core)
            .bind(scope)
            .fetch_optional(executor)
            .await
            .map_err(storage)?;
        let Some(r) = row else { return Ok(None) };
        let body: String = r.try_get("body").map_err(storage)?;
        let version: i64 = r.try_get("version").map_err(storage)?;
        // A document that no longer parses is not silently replaced.
        let doc = serde_json::from_str(&body).map_err(|e| {
            StateError::Unavailable(format!("the stored {scope} state is not JSON: {e}"))
        })?;
        Ok(Some((doc, version)))
    }

    /// Answer a read (`get`, `snapshot`).
    pub async fn read_module_state(
        &self,
        tenant: &str,
        core: &str,
        scope: &str,
        req: &Request,
    ) -> Result<Value, StateError> {
        let doc = Self::module_state_row(self.pool(), self.backend(), false, (tenant, core, scope))
            .await?
            .map(|(d, _)| d)
            .unwrap_or_else(state::empty_document);
        Ok(state::read(&doc, req))
    }

    /// Apply a write (`set`, `merge`, `append`) by `slot_path` in `turn`;
    /// returns the value now at the target.
    ///
    /// Writers of one document queue: on PostgreSQL on the row lock
    /// (`FOR UPDATE`), on SQLite on the store's write gate. The first write
    /// of a document may race another first write; the loser's insert does
    /// nothing and it tries again on the row the winner made. The version
    /// check keeps even an unexpected second SQLite writer from losing an update.
    pub async fn write_module_state(
        &self,
        tenant: &str,
        core: &str,
        scope: &str,
        req: &Request,
        slot_path: &str,
        turn: Option<&str>,
    ) -> Result<Value, StateError> {
        let key = (tenant, core, scope);
        for _ in 0..WRITE_TRIES {
            let _gate = self.write_gate().await;
            let mut tx = self.pool().begin().await.map_err(storage)?;
            let current = Self::module_state_row(&mut *tx, self.backend(), true, key).await?;
            let existed = current.is_some();
            let (mut doc, version) = current.unwrap_or_else(|| (state::empty_document(), 0));
            let now = state::apply(&mut doc, req)?;
            let body = doc.to_string();
            let res = if existed {
                sqlx::query(
                    "UPDATE module_state SET body = $1, version = version + 1, updated_by = $2, \
                     updated_turn = $3, updated_at = $4 \
                     WHERE tenant_id = $5 AND core_id = $6 AND scope = $7 AND version = $8",
                )
                .bind(&body)
                .bind(slot_path)
                .bind(turn)
                .bind(now_ms())
                .bind(tenant)
                .bind(core)
                .bind(scope)
                .bind(version)
                .execute(&mut *tx)
                .await
            } else {
                sqlx::query(
                    "INSERT INTO module_state (tenant_id, core_id, scope, body, version, \
                     updated_by, updated_turn, updated_at) VALUES ($1, $2, $3, $4, 1, $5, $6, $7) \
                     ON CONFLICT (tenant_id, core_id, scope) DO NOTHING",
                )
                .bind(tenant)
                .bind(core)
                .bind(scope)
                .bind(&body)
                .bind(slot_path)
                .bind(turn)
                .bind(now_ms())
                .execute(&mut *tx)
                .await
            };
            if res.map_err(storage)?.rows_affected() == 1 {
                tx.commit().await.map_err(storage)?;
                return Ok(now);
            }
            tx.rollback().await.map_err(storage)?;
        }
        Err(StateError::Unavailable(
            "the state changed under every try; try again".into(),
        ))
    }
}

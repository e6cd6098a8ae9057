//! A tenant's admin stream (`tenant_events`): events about a tenant as a
//! whole, appended once (a `once_key` that conflicts adds nothing, on
//! every instance) and read back in `id` order.

use sqlx::Row;

use super::Store;

/// One stored tenant event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantEventRow {
    pub id: i64,
    /// The event's `{"type","data"}` JSON.
    pub payload: String,
    /// When it was appended (ms).
    pub at: i64,
}

impl Store {
    /// Append an event to a tenant's stream. With a `once_key` the tenant
    /// already has, nothing is added and `None` comes back.
    pub async fn append_tenant_event(
        &self,
        tenant: &str,
        once_key: Option<&str>,
        payload: &str,
        at: i64,
    ) -> Result<Option<i64>, sqlx::Error> {
        let _gate = self.write_gate().await;
        let row = sqlx::query(
            "INSERT INTO tenant_events (tenant_id, once_key, payload, at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (tenant_id, once_key) DO NOTHING RETURNING id",
        )
        .bind(tenant)
        .bind(once_key)
        .bind(payload)
        .bind(at)
        .fetch_optional(self.pool())
        .await?;
        row.map(|r| r.try_get(0)).transpose()
    }

    /// A tenant's events after `after`, oldest first, at most `limit`.
    pub async fn tenant_events_after(
        &self,
        tenant: &str,
        after: i64,
        limit: u32,
    ) -> Result<Vec<TenantEventRow>, sqlx::Error> {
        sqlx::query(
            "SELECT id, payload, at FROM tenant_events WHERE tenant_id = $1 AND id > $2 \
             ORDER BY id LIMIT $3",
        )
        .bind(tenant)
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?
        .iter()
        .map(|r| {
            Ok(TenantEventRow {
                id: r.try_get(0)?,
                payload: r.try_get(1)?,
                at: r.try_get(2)?,
            })
        })
        .collect()
    }

    /// Delete every tenant's events appended before `before` (ms).
    pub async fn prune_tenant_events(&self, before: i64) -> Result<u64, sqlx::Error> {
        let _gate = self.write_gate().await;
        Ok(sqlx::query("DELETE FROM tenant_events WHERE at < $1")
            .bind(before)
            .execute(self.pool())
            .await?
            .rows_affected())
    }
}

//! Tenant model provider keys, sealed (see [`crate::sealing`]).

use sqlx::Row;

use super::Store;
use crate::ids::{PrincipalId, TenantId};

/// One configured provider of a tenant; `sealed` never leaves the host.
#[derive(Debug, Clone)]
pub struct ProviderKeyRow {
    pub provider: String,
    pub sealed: String,
    pub updated_at: i64,
    pub updated_by: String,
}

fn row(r: &sqlx::any::AnyRow) -> Result<ProviderKeyRow, sqlx::Error> {
    Ok(ProviderKeyRow {
        provider: r.try_get(0)?,
        sealed: r.try_get(1)?,
        updated_at: r.try_get(2)?,
        updated_by: r.try_get(3)?,
    })
}

impl Store {
    pub async fn provider_keys(
        &self,
        tenant: &TenantId,
    ) -> Result<Vec<ProviderKeyRow>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT provider, sealed, updated_at, updated_by FROM tenant_provider_keys \
             WHERE tenant_id = $1 ORDER BY provider",
        )
        .bind(tenant.as_str())
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(row).collect()
    }

    /// Every tenant's stored keys (the one-time re-seal at start).
    pub async fn all_provider_keys(&self) -> Result<Vec<(TenantId, ProviderKeyRow)>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT provider, sealed, updated_at, updated_by, tenant_id FROM tenant_provider_keys \
             ORDER BY tenant_id, provider",
        )
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                let tenant: String = r.try_get(4)?;
                let tenant = TenantId::parse(&tenant).map_err(|e| {
                    sqlx::Error::Decode(format!("tenant_id {tenant:?}: {e}").into())
                })?;
                Ok((tenant, row(r)?))
            })
            .collect()
    }

    /// Replace a key's sealed form if it is still `old` (a concurrent
    /// `PUT` wins); the row's author and time stay as they were.
    pub async fn reseal_provider_key(
        &self,
        tenant: &TenantId,
        provider: &str,
        old: &str,
        new: &str,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(
            "UPDATE tenant_provider_keys SET sealed = $1 \
             WHERE tenant_id = $2 AND provider = $3 AND sealed = $4",
        )
        .bind(new)
        .bind(tenant.as_str())
        .bind(provider)
        .bind(old)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    pub async fn provider_key(
        &self,
        tenant: &TenantId,
        provider: &str,
    ) -> Result<Option<ProviderKeyRow>, sqlx::Error> {
        let r = sqlx::query(
            "SELECT provider, sealed, updated_at, updated_by FROM tenant_provider_keys \
             WHERE tenant_id = $1 AND provider = $2",
        )
        .bind(tenant.as_str())
        .bind(provider)
        .fetch_optional(self.pool())
        .await?;
        r.as_ref().map(row).transpose()
    }

    /// Set a provider's sealed key; `audit` (when given) commits with it.
    pub async fn put_provider_key(
        &self,
        tenant: &TenantId,
        provider: &str,
        sealed: &str,
        by: &PrincipalId,
        audit: Option<&super::NewAudit>,
    ) -> Result<ProviderKeyRow, sqlx::Error> {
        let _gate = self.write_gate().await;
        let now = crate::time::now_ms();
        let mut tx = self.pool().begin().await?;
        sqlx::query("DELETE FROM tenant_provider_keys WHERE tenant_id = $1 AND provider = $2")
            .bind(tenant.as_str())
            .bind(provider)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO tenant_provider_keys (tenant_id, provider, sealed, updated_at, updated_by) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(tenant.as_str())
        .bind(provider)
        .bind(sealed)
        .bind(now)
        .bind(by.as_str())
        .execute(&mut *tx)
        .await?;
        if let Some(a) = audit {
            super::audit::append_in(self.backend(), &mut tx, a).await?;
        }
        tx.commit().await?;
        Ok(ProviderKeyRow {
            provider: provider.to_owned(),
            sealed: sealed.to_owned(),
            updated_at: now,
            updated_by: by.to_string(),
        })
    }

    /// Whether a key was there to delete; `audit` commits with a deletion.
    pub async fn delete_provider_key(
        &self,
        tenant: &TenantId,
        provider: &str,
        audit: &super::NewAudit,
    ) -> Result<bool, sqlx::Error> {
        let _gate = self.write_gate().await;
        let mut tx = self.pool().begin().await?;
        let r =
            sqlx::query("DELETE FROM tenant_provider_keys WHERE tenant_id = $1 AND provider = $2")
                .bind(tenant.as_str())
                .bind(provider)
                .execute(&mut *tx)
                .await?;
        let deleted = r.rows_affected() > 0;
        if deleted {
            super::audit::append_in(self.backend(), &mut tx, audit).await?;
        }
        tx.commit().await?;
        Ok(deleted)
    }
}

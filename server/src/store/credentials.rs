//! Tenant credentials for packages' tools, sealed (see [`crate::sealing`]).

use sqlx::Row;

use super::Store;
use crate::ids::{PrincipalId, TenantId};

/// One stored credential; `sealed` never leaves the host.
#[derive(Debug, Clone)]
pub struct CredentialRow {
    pub name: String,
    pub sealed: String,
    pub updated_at: i64,
    pub updated_by: String,
}

fn row(r: &sqlx::any::AnyRow) -> Result<CredentialRow, sqlx::Error> {
    Ok(CredentialRow {
        name: r.try_get(0)?,
        sealed: r.try_get(1)?,
        updated_at: r.try_get(2)?,
        updated_by: r.try_get(3)?,
    })
}

impl Store {
    pub async fn credentials(&self, tenant: &TenantId) -> Result<Vec<CredentialRow>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT name, sealed, updated_at, updated_by FROM tenant_credentials \
             WHERE tenant_id = $1 ORDER BY name",
        )
        .bind(tenant.as_str())
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(row).collect()
    }

    pub async fn credential(
        &self,
        tenant: &TenantId,
        name: &str,
    ) -> Result<Option<CredentialRow>, sqlx::Error> {
        let r = sqlx::query(
            "SELECT name, sealed, updated_at, updated_by FROM tenant_credentials \
             WHERE tenant_id = $1 AND name = $2",
        )
        .bind(tenant.as_str())
        .bind(name)
        .fetch_optional(self.pool())
        .await?;
        r.as_ref().map(row).transpose()
    }

    /// Set a credential's sealed value; `audit` commits with it.
    pub async fn put_credential(
        &self,
        tenant: &TenantId,
        name: &str,
        sealed: &str,
        by: &PrincipalId,
        audit: &super::NewAudit,
    ) -> Result<CredentialRow, sqlx::Error> {
        let _gate = self.write_gate().await;
        let now = crate::time::now_ms();
        let mut tx = self.pool().begin().await?;
        sqlx::query("DELETE FROM tenant_credentials WHERE tenant_id = $1 AND name = $2")
            .bind(tenant.as_str())
            .bind(name)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO tenant_credentials (tenant_id, name, sealed, updated_at, updated_by) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(tenant.as_str())
        .bind(name)
        .bind(sealed)
        .bind(now)
        .bind(by.as_str())
        .execute(&mut *tx)
        .await?;
        super::audit::append_in(self.backend(), &mut tx, audit).await?;
        tx.commit().await?;
        Ok(CredentialRow {
            name: name.to_owned(),
            sealed: sealed.to_owned(),
            updated_at: now,
            updated_by: by.to_string(),
        })
    }

    /// Whether a credential was there to delete; `audit` commits with a deletion.
    pub async fn delete_credential(
        &self,
        tenant: &TenantId,
        name: &str,
        audit: &super::NewAudit,
    ) -> Result<bool, sqlx::Error> {
        let _gate = self.write_gate().await;
        let mut tx = self.pool().begin().await?;
        let r = sqlx::query("DELETE FROM tenant_credentials WHERE tenant_id = $1 AND name = $2")
            .bind(tenant.as_str())
            .bind(name)
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

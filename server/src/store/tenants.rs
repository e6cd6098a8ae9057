//! Tenants and principals.

use super::Store;
use crate::auth::Role;
use crate::ids::{PrincipalId, TenantId};
use crate::time::now_ms;

impl Store {
    /// Create the tenant and principal if missing. An existing principal keeps
    /// its recorded role; tokens carry the role they were issued with.
    pub async fn ensure_principal(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
        role: Role,
    ) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        let now = now_ms();
        sqlx::query(
            "INSERT INTO tenants (id, created_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING",
        )
        .bind(tenant.as_str())
        .bind(now)
        .execute(self.pool())
        .await?;
        sqlx::query(
            "INSERT INTO principals (tenant_id, id, role, created_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (tenant_id, id) DO NOTHING",
        )
        .bind(tenant.as_str())
        .bind(principal.as_str())
        .bind(role.as_str())
        .bind(now)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    pub async fn tenant_exists(&self, tenant: &TenantId) -> Result<bool, sqlx::Error> {
        let row = sqlx::query("SELECT 1 FROM tenants WHERE id = $1")
            .bind(tenant.as_str())
            .fetch_optional(self.pool())
            .await?;
        Ok(row.is_some())
    }
}

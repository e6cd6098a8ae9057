//! Tenants, principals and tenant policies.

use sqlx::Row;

use super::Store;
use crate::ids::{PrincipalId, TenantId};
use crate::policy::Role;
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

    /// The principals of one tenant, in id order (for its admins).
    pub async fn list_principals(
        &self,
        tenant: &TenantId,
    ) -> Result<Vec<PrincipalRow>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT id, role, created_at, disabled_at FROM principals WHERE tenant_id = $1 ORDER BY id",
        )
        .bind(tenant.as_str())
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                Ok(PrincipalRow {
                    id: r.try_get(0)?,
                    role: r.try_get(1)?,
                    created_at: r.try_get(2)?,
                    disabled_at: r.try_get(3)?,
                })
            })
            .collect()
    }

    pub async fn tenant_exists(&self, tenant: &TenantId) -> Result<bool, sqlx::Error> {
        let row = sqlx::query("SELECT 1 FROM tenants WHERE id = $1")
            .bind(tenant.as_str())
            .fetch_optional(self.pool())
            .await?;
        Ok(row.is_some())
    }

    /// A tenant's stored approval policy: (member_max_risk, updated_at,
    /// updated_by), or `None` when the tenant uses the default.
    pub async fn tenant_policy(
        &self,
        tenant: &TenantId,
    ) -> Result<Option<StoredTenantPolicy>, sqlx::Error> {
        let row = sqlx::query(
            "SELECT member_max_risk, updated_at, updated_by FROM tenant_policies WHERE tenant_id = $1",
        )
        .bind(tenant.as_str())
        .fetch_optional(self.pool())
        .await?;
        row.map(|r| {
            Ok(StoredTenantPolicy {
                member_max_risk: r.try_get(0)?,
                updated_at: r.try_get(1)?,
                updated_by: r.try_get(2)?,
            })
        })
        .transpose()
    }

    /// Set (insert or replace) a tenant's approval policy, with its audit row.
    pub async fn set_tenant_policy(
        &self,
        tenant: &TenantId,
        member_max_risk: &str,
        updated_by: &PrincipalId,
        audit: &super::NewAudit,
    ) -> Result<StoredTenantPolicy, sqlx::Error> {
        let _gate = self.write_gate().await;
        let now = now_ms();
        let mut tx = self.pool().begin().await?;
        sqlx::query(
            "INSERT INTO tenant_policies (tenant_id, member_max_risk, updated_at, updated_by) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (tenant_id) DO UPDATE SET \
             member_max_risk = excluded.member_max_risk, updated_at = excluded.updated_at, \
             updated_by = excluded.updated_by",
        )
        .bind(tenant.as_str())
        .bind(member_max_risk)
        .bind(now)
        .bind(updated_by.as_str())
        .execute(&mut *tx)
        .await?;
        super::audit::append_in(self.backend(), &mut tx, audit).await?;
        tx.commit().await?;
        Ok(StoredTenantPolicy {
            member_max_risk: member_max_risk.to_owned(),
            updated_at: now,
            updated_by: updated_by.to_string(),
        })
    }
}

/// A tenant policy row as stored (parsed by the caller).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredTenantPolicy {
    pub member_max_risk: String,
    pub updated_at: i64,
    pub updated_by: String,
}

/// A principal as stored: its recorded role (tokens carry their own) and
/// whether it is disabled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrincipalRow {
    pub id: String,
    pub role: String,
    pub created_at: i64,
    pub disabled_at: Option<i64>,
}

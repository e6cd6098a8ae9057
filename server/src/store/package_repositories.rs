//! Package repositories tenants added (where the operator allows it).

use sqlx::Row;

use super::Store;
use crate::ids::{PrincipalId, TenantId};

/// One repository a tenant's admin added.
#[derive(Debug, Clone)]
pub struct TenantRepositoryRow {
    pub alias: String,
    pub url: String,
    pub commit: String,
    pub added_at: i64,
    pub added_by: String,
}

impl Store {
    pub async fn tenant_package_repositories(
        &self,
        tenant: &TenantId,
    ) -> Result<Vec<TenantRepositoryRow>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT alias, url, commit_sha, added_at, added_by FROM tenant_package_repositories \
             WHERE tenant_id = $1 ORDER BY alias",
        )
        .bind(tenant.as_str())
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                Ok(TenantRepositoryRow {
                    alias: r.try_get(0)?,
                    url: r.try_get(1)?,
                    commit: r.try_get(2)?,
                    added_at: r.try_get(3)?,
                    added_by: r.try_get(4)?,
                })
            })
            .collect()
    }

    /// Add a repository; `None` when the tenant has one by that alias.
    /// `audit` commits with it.
    pub async fn add_tenant_package_repository(
        &self,
        tenant: &TenantId,
        alias: &str,
        url: &str,
        commit: &str,
        by: &PrincipalId,
        audit: &super::NewAudit,
    ) -> Result<Option<TenantRepositoryRow>, sqlx::Error> {
        let _gate = self.write_gate().await;
        let now = crate::time::now_ms();
        let mut tx = self.pool().begin().await?;
        let r = sqlx::query(
            "INSERT INTO tenant_package_repositories \
             (tenant_id, alias, url, commit_sha, added_at, added_by) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, alias) DO NOTHING",
        )
        .bind(tenant.as_str())
        .bind(alias)
        .bind(url)
        .bind(commit)
        .bind(now)
        .bind(by.as_str())
        .execute(&mut *tx)
        .await?;
        if r.rows_affected() == 0 {
            return Ok(None);
        }
        super::audit::append_in(self.backend(), &mut tx, audit).await?;
        tx.commit().await?;
        Ok(Some(TenantRepositoryRow {
            alias: alias.to_owned(),
            url: url.to_owned(),
            commit: commit.to_owned(),
            added_at: now,
            added_by: by.to_string(),
        }))
    }

    /// Whether the repository was there to remove; `audit` commits with it.
    pub async fn remove_tenant_package_repository(
        &self,
        tenant: &TenantId,
        alias: &str,
        audit: &super::NewAudit,
    ) -> Result<bool, sqlx::Error> {
        let _gate = self.write_gate().await;
        let mut tx = self.pool().begin().await?;
        let r = sqlx::query(
            "DELETE FROM tenant_package_repositories WHERE tenant_id = $1 AND alias = $2",
        )
        .bind(tenant.as_str())
        .bind(alias)
        .execute(&mut *tx)
        .await?;
        let removed = r.rows_affected() > 0;
        if removed {
            super::audit::append_in(self.backend(), &mut tx, audit).await?;
        }
        tx.commit().await?;
        Ok(removed)
    }
}

//! Budgets and ceilings (`budgets`): a tenant admin's limits for the tenant
//! or one principal, and the server operator's ceiling per tenant. Limits
//! are stored as JSON ([`crate::usage::budget::Limits`]'s shape), so a new
//! kind of limit needs no migration.

use sqlx::Row;

use super::Store;

/// Whose limits a row holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetKind {
    /// A tenant admin's budget (tenant-wide, or one principal's).
    Budget,
    /// The server operator's ceiling for the tenant.
    Ceiling,
}

impl BudgetKind {
    fn as_str(self) -> &'static str {
        match self {
            BudgetKind::Budget => "budget",
            BudgetKind::Ceiling => "ceiling",
        }
    }
}

/// One stored row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetRow {
    /// Empty: the whole tenant.
    pub principal_id: String,
    pub kind: BudgetKind,
    /// The limits as JSON.
    pub limits: String,
    pub updated_at: i64,
    pub updated_by: String,
}

impl Store {
    /// Every budget and the ceiling of `tenant`.
    pub async fn budgets_of(&self, tenant: &str) -> Result<Vec<BudgetRow>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT principal_id, kind, limits, updated_at, updated_by FROM budgets \
             WHERE tenant_id = $1 ORDER BY kind, principal_id",
        )
        .bind(tenant)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|r| {
                let kind: String = r.try_get(1)?;
                Ok(BudgetRow {
                    principal_id: r.try_get(0)?,
                    kind: if kind == "ceiling" {
                        BudgetKind::Ceiling
                    } else {
                        BudgetKind::Budget
                    },
                    limits: r.try_get(2)?,
                    updated_at: r.try_get(3)?,
                    updated_by: r.try_get(4)?,
                })
            })
            .collect()
    }

    /// Set (`Some`) or remove (`None`) one row, with its audit row.
    pub async fn set_budget(
        &self,
        tenant: &str,
        principal: &str,
        kind: BudgetKind,
        limits: Option<&str>,
        by: &str,
        audit: &super::NewAudit,
    ) -> Result<(), sqlx::Error> {
        let _gate = self.write_gate().await;
        let mut tx = self.pool().begin().await?;
        match limits {
            Some(limits) => {
                sqlx::query(
                    "INSERT INTO budgets (tenant_id, principal_id, kind, limits, updated_at, \
                     updated_by) VALUES ($1, $2, $3, $4, $5, $6) \
                     ON CONFLICT (tenant_id, principal_id, kind) DO UPDATE SET \
                     limits = excluded.limits, updated_at = excluded.updated_at, \
                     updated_by = excluded.updated_by",
                )
                .bind(tenant)
                .bind(principal)
                .bind(kind.as_str())
                .bind(limits)
                .bind(crate::time::now_ms())
                .bind(by)
                .execute(&mut *tx)
                .await?;
            }
            None => {
                sqlx::query(
                    "DELETE FROM budgets WHERE tenant_id = $1 AND principal_id = $2 AND kind = $3",
                )
                .bind(tenant)
                .bind(principal)
                .bind(kind.as_str())
                .execute(&mut *tx)
                .await?;
            }
        }
        super::audit::append_in(self.backend(), &mut tx, audit).await?;
        tx.commit().await
    }
}

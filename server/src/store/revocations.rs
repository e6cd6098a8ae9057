//! Token revocations and disabled principals: an append-only log that every
//! instance polls by id (see `auth::revocation`), plus `principals.disabled_at`.
//! Appends are serialised (SQLite's single writer; an advisory lock on
//! PostgreSQL), so ids become visible in order and "id > last seen" misses none.

use sqlx::any::AnyRow;
use sqlx::{AssertSqlSafe, Row};

use super::Store;
use crate::config::Backend;
use crate::ids::{PrincipalId, TenantId};
use crate::time::now_ms;

/// Names the advisory lock that orders appends to `token_revocations`.
const PG_REVOCATION_LOCK: i64 = 0x64656d72;

/// One change to who may authenticate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevocationChange {
    /// Tokens with this `jti`, in one tenant or (`None`, operators only) any.
    Jti {
        tenant: Option<TenantId>,
        jti: String,
    },
    /// Every token of the principal with `iat <= cutoff`.
    Principal {
        tenant: TenantId,
        principal: PrincipalId,
    },
    Disable {
        tenant: TenantId,
        principal: PrincipalId,
    },
    Enable {
        tenant: TenantId,
        principal: PrincipalId,
    },
}

impl RevocationChange {
    fn kind(&self) -> &'static str {
        match self {
            RevocationChange::Jti { .. } => "jti",
            RevocationChange::Principal { .. } => "principal",
            RevocationChange::Disable { .. } => "disable",
            RevocationChange::Enable { .. } => "enable",
        }
    }
}

/// A stored row of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevocationRow {
    pub id: i64,
    pub kind: String,
    pub tenant_id: Option<String>,
    pub principal_id: Option<String>,
    pub jti: Option<String>,
    /// Unix seconds when it was recorded.
    pub cutoff: i64,
}

const COLUMNS: &str = "id, kind, tenant_id, principal_id, jti, cutoff";

fn decode(r: &AnyRow) -> Result<RevocationRow, sqlx::Error> {
    Ok(RevocationRow {
        id: r.try_get("id")?,
        kind: r.try_get("kind")?,
        tenant_id: r.try_get("tenant_id")?,
        principal_id: r.try_get("principal_id")?,
        jti: r.try_get("jti")?,
        cutoff: r.try_get("cutoff")?,
    })
}

/// What an instance loads at start: the log as it stands and who is disabled.
#[derive(Debug, Default)]
pub struct RevocationSnapshot {
    /// Highest id read before the rest; polling resumes after it.
    pub last_id: i64,
    pub rows: Vec<RevocationRow>,
    pub disabled: Vec<(String, String)>,
}

impl Store {
    /// Append a change (recorded at `cutoff`, Unix seconds); disabling and
    /// enabling also set the principal's flag, creating it (as a member) if
    /// missing. `audit`, its audit row, commits with it. Returns the stored
    /// row.
    pub async fn record_revocation(
        &self,
        change: &RevocationChange,
        cutoff: u64,
        audit: Option<&super::NewAudit>,
    ) -> Result<RevocationRow, sqlx::Error> {
        let _gate = self.write_gate().await;
        let now = now_ms();
        let cutoff = i64::try_from(cutoff).unwrap_or(i64::MAX);
        let mut tx = self.pool().begin().await?;
        if self.backend() == Backend::Postgres {
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(PG_REVOCATION_LOCK)
                .execute(&mut *tx)
                .await?;
        }
        let (tenant, principal, jti) = match change {
            RevocationChange::Jti { tenant, jti } => (
                tenant.as_ref().map(|t| t.as_str()),
                None,
                Some(jti.as_str()),
            ),
            RevocationChange::Principal { tenant, principal }
            | RevocationChange::Disable { tenant, principal }
            | RevocationChange::Enable { tenant, principal } => {
                (Some(tenant.as_str()), Some(principal.as_str()), None)
            }
        };
        if let RevocationChange::Disable { tenant, principal }
        | RevocationChange::Enable { tenant, principal } = change
        {
            sqlx::query(
                "INSERT INTO tenants (id, created_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING",
            )
            .bind(tenant.as_str())
            .bind(now)
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "INSERT INTO principals (tenant_id, id, role, created_at) VALUES ($1, $2, 'member', $3) \
                 ON CONFLICT (tenant_id, id) DO NOTHING",
            )
            .bind(tenant.as_str())
            .bind(principal.as_str())
            .bind(now)
            .execute(&mut *tx)
            .await?;
            let disabled_at = matches!(change, RevocationChange::Disable { .. }).then_some(now);
            sqlx::query("UPDATE principals SET disabled_at = $1 WHERE tenant_id = $2 AND id = $3")
                .bind(disabled_at)
                .bind(tenant.as_str())
                .bind(principal.as_str())
                .execute(&mut *tx)
                .await?;
        }
        let row = sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO token_revocations (kind, tenant_id, principal_id, jti, cutoff, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING {COLUMNS}"
        )))
        .bind(change.kind())
        .bind(tenant)
        .bind(principal)
        .bind(jti)
        .bind(cutoff)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        let row = decode(&row)?;
        if let Some(a) = audit {
            super::audit::append_in(self.backend(), &mut tx, a).await?;
        }
        tx.commit().await?;
        Ok(row)
    }

    /// Log rows after `id`, oldest first.
    pub async fn revocations_after(
        &self,
        id: i64,
        limit: i64,
    ) -> Result<Vec<RevocationRow>, sqlx::Error> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM token_revocations WHERE id > $1 ORDER BY id LIMIT $2"
        )))
        .bind(id)
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(decode).collect()
    }

    /// Everything an instance needs at start. The highest id is read first,
    /// so a change committed meanwhile is replayed by the first poll.
    pub async fn revocation_snapshot(&self) -> Result<RevocationSnapshot, sqlx::Error> {
        let last_id: Option<i64> = sqlx::query("SELECT MAX(id) FROM token_revocations")
            .fetch_one(self.pool())
            .await?
            .try_get(0)?;
        let last_id = last_id.unwrap_or(0);
        let rows = sqlx::query(AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM token_revocations WHERE id <= $1 AND kind IN ('jti', 'principal') ORDER BY id"
        )))
        .bind(last_id)
        .fetch_all(self.pool())
        .await?
        .iter()
        .map(decode)
        .collect::<Result<_, _>>()?;
        let disabled = sqlx::query(
            "SELECT tenant_id, id FROM principals WHERE disabled_at IS NOT NULL ORDER BY tenant_id, id",
        )
        .fetch_all(self.pool())
        .await?
        .iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect::<Result<_, sqlx::Error>>()?;
        Ok(RevocationSnapshot {
            last_id,
            rows,
            disabled,
        })
    }

    /// The latest principal-wide cutoff (Unix seconds), if any.
    pub async fn principal_cutoff(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
    ) -> Result<Option<u64>, sqlx::Error> {
        let max: Option<i64> = sqlx::query(
            "SELECT MAX(cutoff) FROM token_revocations \
             WHERE kind = 'principal' AND tenant_id = $1 AND principal_id = $2",
        )
        .bind(tenant.as_str())
        .bind(principal.as_str())
        .fetch_one(self.pool())
        .await?
        .try_get(0)?;
        Ok(max.and_then(|m| u64::try_from(m).ok()))
    }

    /// True when the principal exists and is disabled.
    pub async fn principal_disabled(
        &self,
        tenant: &TenantId,
        principal: &PrincipalId,
    ) -> Result<bool, sqlx::Error> {
        let row = sqlx::query(
            "SELECT 1 FROM principals WHERE tenant_id = $1 AND id = $2 AND disabled_at IS NOT NULL",
        )
        .bind(tenant.as_str())
        .bind(principal.as_str())
        .fetch_optional(self.pool())
        .await?;
        Ok(row.is_some())
    }

    /// Delete revocations no token can outlive (recorded before
    /// `revocations_before`, Unix seconds) and toggles older than
    /// `toggles_before_ms` (the flag on the principal stays). Returns rows deleted.
    pub async fn prune_revocations(
        &self,
        revocations_before: u64,
        toggles_before_ms: i64,
    ) -> Result<u64, sqlx::Error> {
        let _gate = self.write_gate().await;
        let before = i64::try_from(revocations_before).unwrap_or(i64::MAX);
        let a = sqlx::query(
            "DELETE FROM token_revocations WHERE kind IN ('jti', 'principal') AND cutoff < $1",
        )
        .bind(before)
        .execute(self.pool())
        .await?
        .rows_affected();
        let b = sqlx::query(
            "DELETE FROM token_revocations WHERE kind IN ('disable', 'enable') AND created_at < $1",
        )
        .bind(toggles_before_ms)
        .execute(self.pool())
        .await?
        .rows_affected();
        Ok(a + b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DatabaseConfig;

    fn ids(t: &str, p: &str) -> (TenantId, PrincipalId) {
        (TenantId::parse(t).unwrap(), PrincipalId::parse(p).unwrap())
    }

    #[tokio::test]
    async fn log_snapshot_cutoff_disable_and_prune() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&DatabaseConfig::resolve(dir.path(), None).unwrap())
            .await
            .unwrap();
        let (t, alice) = ids("acme", "alice");
        let (_, bob) = ids("acme", "bob");
        let r1 = store
            .record_revocation(
                &RevocationChange::Jti {
                    tenant: None,
                    jti: "j1".into(),
                },
                1_000,
                None,
            )
            .await
            .unwrap();
        assert_eq!((r1.kind.as_str(), r1.tenant_id.as_deref()), ("jti", None));
        for cutoff in [2_000, 3_000] {
            store
                .record_revocation(
                    &RevocationChange::Principal {
                        tenant: t.clone(),
                        principal: alice.clone(),
                    },
                    cutoff,
                    None,
                )
                .await
                .unwrap();
        }
        assert_eq!(
            store.principal_cutoff(&t, &alice).await.unwrap(),
            Some(3_000)
        );
        assert_eq!(store.principal_cutoff(&t, &bob).await.unwrap(), None);
        // Disabling creates a missing principal and sets its flag.
        store
            .record_revocation(
                &RevocationChange::Disable {
                    tenant: t.clone(),
                    principal: bob.clone(),
                },
                4_000,
                None,
            )
            .await
            .unwrap();
        assert!(store.principal_disabled(&t, &bob).await.unwrap());
        assert!(!store.principal_disabled(&t, &alice).await.unwrap());
        let all = store.revocations_after(0, 100).await.unwrap();
        assert_eq!(
            all.iter().map(|r| r.kind.as_str()).collect::<Vec<_>>(),
            ["jti", "principal", "principal", "disable"]
        );
        assert!(all.windows(2).all(|w| w[0].id < w[1].id));
        assert_eq!(
            store.revocations_after(all[1].id, 100).await.unwrap().len(),
            2
        );
        let snap = store.revocation_snapshot().await.unwrap();
        assert_eq!(snap.last_id, all[3].id);
        assert_eq!(snap.rows.len(), 3, "toggles come from the principal flag");
        assert_eq!(snap.disabled, vec![("acme".to_owned(), "bob".to_owned())]);
        store
            .record_revocation(
                &RevocationChange::Enable {
                    tenant: t.clone(),
                    principal: bob.clone(),
                },
                5_000,
                None,
            )
            .await
            .unwrap();
        assert!(!store.principal_disabled(&t, &bob).await.unwrap());
        assert!(store
            .revocation_snapshot()
            .await
            .unwrap()
            .disabled
            .is_empty());
        // Prune revocations before 2,500 s; toggles are newer than the bound.
        let deleted = store.prune_revocations(2_500, 0).await.unwrap();
        assert_eq!(deleted, 2);
        let left = store.revocations_after(0, 100).await.unwrap();
        assert_eq!(
            left.iter()
                .map(|r| (r.kind.as_str(), r.cutoff))
                .collect::<Vec<_>>(),
            [("principal", 3_000), ("disable", 4_000), ("enable", 5_000)]
        );
        assert_eq!(store.prune_revocations(0, i64::MAX).await.unwrap(), 2);
        store.close().await;
    }
}

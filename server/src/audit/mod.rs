//! The audit log: who changed what in a tenant, from where, kept as one
//! hash chain per tenant (the chain's arithmetic is [`crate::audit_chain`];
//! its rows, written in the same transaction as the change they record,
//! are [`crate::store`]'s).
//!
//! This room owns who may read the log, verification of a tenant's chain,
//! and retention. A row is made where the change is made: from the
//! caller's [`PrincipalScope`] ([`PrincipalScope::audit`]) or for the server
//! operator ([`crate::store::NewAudit::by_operator`]), and handed to the
//! store method that makes the change.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::audit_chain::{Broken, Link, Verifier};
use crate::auth::PrincipalScope;
use crate::store::{AuditEventRow, AuditFilter, Store};

/// The caller's tenant's rows matching `f`, newest first: tenant admins only.
pub async fn list_for(
    store: &Store,
    scope: &PrincipalScope,
    f: &AuditFilter,
    limit: u32,
) -> Result<Vec<AuditEventRow>, crate::error::Error> {
    scope.require_admin("read the audit log")?;
    Ok(store
        .audit_events(scope.tenant().as_str(), f, limit)
        .await?)
}

/// What verifying one tenant's chain found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub tenant: String,
    /// Rows checked (those after the latest checkpoint).
    pub rows: u64,
    /// The chain's last seq.
    pub head: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error(transparent)]
    Broken(#[from] Broken),
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
}

/// Walk `tenant`'s chain from its latest checkpoint (or its start) to its
/// recorded head.
pub async fn verify(store: &Store, tenant: &str) -> Result<Verified, VerifyError> {
    let (head, checkpoint) = store.audit_head(tenant).await?;
    let mut v = match &checkpoint {
        Some((seq, hash)) => Verifier::from_checkpoint(tenant, *seq, hash),
        None => Verifier::new(tenant),
    };
    let mut after = checkpoint.as_ref().map_or(0, |c| c.0);
    let mut rows = 0;
    loop {
        let page = store.audit_chain_page(tenant, after, 1_000).await?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        for r in &page {
            v.next(&link(tenant, r), &r.hash)?;
            rows += 1;
        }
    }
    let head_seq = v.finish(head.as_ref().map(|(s, h)| (*s, h.as_str())))?;
    Ok(Verified {
        tenant: tenant.to_owned(),
        rows,
        head: head_seq,
    })
}

fn link<'a>(tenant: &'a str, r: &'a AuditEventRow) -> Link<'a> {
    Link {
        tenant,
        seq: r.seq,
        at: r.at,
        actor: &r.actor,
        role: &r.role,
        surface: &r.surface,
        action: &r.action,
        target: &r.target,
        detail: &r.detail,
        prev_hash: &r.prev_hash,
    }
}

/// Prune rows older than `retention` every hour until `stop`; each
/// tenant's last pruned row becomes a checkpoint, so its chain still
/// verifies.
pub fn start_upkeep(store: Store, retention: Duration, stop: CancellationToken) {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(3600));
        loop {
            tokio::select! {
                _ = every.tick() => {}
                _ = stop.cancelled() => return,
            }
            let before = crate::time::now_ms() - retention.as_millis() as i64;
            match store.prune_audit(before).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(rows = n, "audit rows past retention pruned"),
                Err(e) => tracing::warn!(error = %e, "audit rows not pruned"),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DatabaseConfig;
    use crate::store::NewAudit;

    fn row(n: u32) -> NewAudit {
        NewAudit::by_operator(
            "acme",
            "budget.ceiling_set",
            "acme",
            serde_json::json!({"n": n}),
        )
    }

    /// Pruning leaves a checkpoint the chain continues from: it verifies
    /// before, after, and after more rows; a forged checkpoint does not.
    #[tokio::test]
    async fn a_pruned_chain_still_verifies_from_its_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&DatabaseConfig::resolve(dir.path(), None).unwrap())
            .await
            .unwrap();
        for n in 0..5 {
            store.append_audit(&row(n)).await.unwrap();
        }
        let v = verify(&store, "acme").await.unwrap();
        assert_eq!((v.rows, v.head), (5, 5));
        // Everything so far is past retention.
        let pruned = store.prune_audit(crate::time::now_ms() + 1).await.unwrap();
        assert_eq!(pruned, 5);
        let v = verify(&store, "acme").await.unwrap();
        assert_eq!((v.rows, v.head), (0, 5));
        store.append_audit(&row(5)).await.unwrap();
        let v = verify(&store, "acme").await.unwrap();
        assert_eq!((v.rows, v.head), (1, 6));
        sqlx::query("UPDATE audit_checkpoints SET hash = $1 WHERE tenant_id = 'acme'")
            .bind(crate::audit_chain::GENESIS)
            .execute(store.pool())
            .await
            .unwrap();
        match verify(&store, "acme").await {
            Err(VerifyError::Broken(b)) => assert_eq!(b.seq, 6, "{b}"),
            other => panic!("a forged checkpoint verified: {other:?}"),
        }
        // A tenant without a log has an empty, whole chain.
        let v = verify(&store, "nobody").await.unwrap();
        assert_eq!((v.rows, v.head), (0, 0));
    }
}

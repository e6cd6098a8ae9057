//! Which verified tokens are no longer accepted: revoked by `jti`, revoked
//! for a whole principal (every token issued at or before a cutoff), or held
//! by a disabled principal. The request path reads only this in-memory
//! cache; [`follow`] keeps it current by polling the database log by id, and
//! the instance that records a change applies it here at once.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::token::{AuthError, VerifiedToken, LEEWAY_SECS};
use crate::store::{RevocationChange, RevocationRow, Store};

/// How often each instance reads new log rows.
pub const POLL_INTERVAL: Duration = Duration::from_millis(300);

/// How long enable/disable rows stay in the log (the flag itself stays on
/// the principal and is read at start).
const TOGGLE_RETENTION_MS: i64 = 24 * 3600 * 1000;

/// One log entry as the cache understands it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    Jti {
        tenant: Option<String>,
        jti: String,
        at: u64,
    },
    Principal {
        tenant: String,
        principal: String,
        cutoff: u64,
    },
    Disable {
        tenant: String,
        principal: String,
    },
    Enable {
        tenant: String,
        principal: String,
    },
}

impl Entry {
    /// Read a stored row; rows of unknown kind or missing fields are skipped.
    pub fn from_row(r: &RevocationRow) -> Option<Entry> {
        let at = u64::try_from(r.cutoff).unwrap_or(0);
        let tp = || Some((r.tenant_id.clone()?, r.principal_id.clone()?));
        match r.kind.as_str() {
            "jti" => Some(Entry::Jti {
                tenant: r.tenant_id.clone(),
                jti: r.jti.clone()?,
                at,
            }),
            "principal" => tp().map(|(tenant, principal)| Entry::Principal {
                tenant,
                principal,
                cutoff: at,
            }),
            "disable" => tp().map(|(tenant, principal)| Entry::Disable { tenant, principal }),
            "enable" => tp().map(|(tenant, principal)| Entry::Enable { tenant, principal }),
            _ => None,
        }
    }
}

#[derive(Debug, Default)]
struct JtiRevocation {
    /// Revoked in every tenant (an operator's CLI revocation without `--tenant`).
    any_tenant: bool,
    tenants: HashSet<String>,
    /// Latest revocation time, Unix seconds; pruning starts from it.
    at: u64,
}

#[derive(Debug, Default)]
struct State {
    /// Highest log id applied by polling.
    last_id: i64,
    jtis: HashMap<String, JtiRevocation>,
    /// tenant → principal → cutoff (tokens with `iat <= cutoff` are revoked).
    cutoffs: HashMap<String, HashMap<String, u64>>,
    /// tenant → disabled principals.
    disabled: HashMap<String, HashSet<String>>,
}

impl State {
    fn apply(&mut self, e: &Entry) {
        match e {
            Entry::Jti { tenant, jti, at } => {
                let r = self.jtis.entry(jti.clone()).or_default();
                match tenant {
                    None => r.any_tenant = true,
                    Some(t) => {
                        r.tenants.insert(t.clone());
                    }
                }
                r.at = r.at.max(*at);
            }
            Entry::Principal {
                tenant,
                principal,
                cutoff,
            } => {
                let c = self
                    .cutoffs
                    .entry(tenant.clone())
                    .or_default()
                    .entry(principal.clone())
                    .or_default();
                *c = (*c).max(*cutoff);
            }
            Entry::Disable { tenant, principal } => {
                self.disabled
                    .entry(tenant.clone())
                    .or_default()
                    .insert(principal.clone());
            }
            Entry::Enable { tenant, principal } => {
                if let Some(set) = self.disabled.get_mut(tenant) {
                    set.remove(principal);
                    if set.is_empty() {
                        self.disabled.remove(tenant);
                    }
                }
            }
        }
    }
}

/// The in-memory revocation cache; cheap to share.
#[derive(Debug, Clone)]
pub struct Revocations {
    state: Arc<RwLock<State>>,
    /// Revocations older than this plus the leeway cannot match a live token.
    max_ttl_secs: u64,
}

impl Revocations {
    pub fn new(max_ttl_secs: u64) -> Self {
        Self {
            state: Arc::default(),
            max_ttl_secs,
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Accept or refuse a verified token. Never touches the database.
    pub fn check(&self, v: &VerifiedToken) -> Result<(), AuthError> {
        let s = self.read();
        let tenant = v.scope.tenant().as_str();
        let principal = v.scope.principal().as_str();
        if s.disabled
            .get(tenant)
            .is_some_and(|set| set.contains(principal))
        {
            return Err(AuthError::Disabled);
        }
        if s.cutoffs
            .get(tenant)
            .and_then(|m| m.get(principal))
            .is_some_and(|cutoff| v.issued_at <= *cutoff)
        {
            return Err(AuthError::Revoked);
        }
        if s.jtis
            .get(&v.jti)
            .is_some_and(|r| r.any_tenant || r.tenants.contains(tenant))
        {
            return Err(AuthError::Revoked);
        }
        Ok(())
    }

    /// The principal's latest cutoff: a token issued now must have a later `iat`.
    pub fn cutoff(&self, tenant: &str, principal: &str) -> Option<u64> {
        self.read()
            .cutoffs
            .get(tenant)
            .and_then(|m| m.get(principal))
            .copied()
    }

    /// True when the principal is disabled.
    pub fn is_disabled(&self, tenant: &str, principal: &str) -> bool {
        self.read()
            .disabled
            .get(tenant)
            .is_some_and(|set| set.contains(principal))
    }

    /// Apply a change this instance just recorded, before polling sees it.
    /// Re-applying it later (in log order) is harmless.
    pub fn apply_local(&self, e: &Entry) {
        self.write().apply(e);
    }

    /// Apply polled rows in id order and remember the last id.
    pub fn apply_polled(&self, rows: &[RevocationRow]) {
        let mut s = self.write();
        for r in rows {
            if r.id <= s.last_id {
                continue;
            }
            if let Some(e) = Entry::from_row(r) {
                s.apply(&e);
            }
            s.last_id = r.id;
        }
    }

    /// Replace everything with a fresh snapshot.
    pub fn load(&self, last_id: i64, rows: &[RevocationRow], disabled: &[(String, String)]) {
        let mut s = State {
            last_id,
            ..State::default()
        };
        for r in rows {
            if let Some(e) = Entry::from_row(r) {
                s.apply(&e);
            }
        }
        for (tenant, principal) in disabled {
            s.apply(&Entry::Disable {
                tenant: tenant.clone(),
                principal: principal.clone(),
            });
        }
        *self.write() = s;
    }

    pub fn last_id(&self) -> i64 {
        self.read().last_id
    }

    /// Revocations recorded before this time (Unix seconds) cannot match a
    /// token that is still accepted: such a token lives at most the maximum
    /// lifetime past its `iat`, plus the leeway.
    pub fn horizon(&self, now: u64) -> u64 {
        now.saturating_sub(self.max_ttl_secs.saturating_add(LEEWAY_SECS))
    }

    /// Forget revocations no accepted token can match any more.
    pub fn prune(&self, now: u64) {
        let horizon = self.horizon(now);
        let mut s = self.write();
        s.jtis.retain(|_, r| r.at >= horizon);
        for m in s.cutoffs.values_mut() {
            m.retain(|_, c| *c >= horizon);
        }
        s.cutoffs.retain(|_, m| !m.is_empty());
    }

    /// Counts of (jti revocations, principal cutoffs, disabled principals).
    pub fn sizes(&self) -> (usize, usize, usize) {
        let s = self.read();
        (
            s.jtis.len(),
            s.cutoffs.values().map(HashMap::len).sum(),
            s.disabled.values().map(HashSet::len).sum(),
        )
    }
}

/// Record a change in the database, with its audit row, and apply it to
/// this instance's cache at once; other instances see it at their next poll.
pub async fn record(
    cache: &Revocations,
    store: &Store,
    change: &RevocationChange,
    audit: Option<&crate::store::NewAudit>,
) -> Result<RevocationRow, sqlx::Error> {
    let row = store
        .record_revocation(change, crate::time::now_secs(), audit)
        .await?;
    if let Some(e) = Entry::from_row(&row) {
        cache.apply_local(&e);
    }
    Ok(row)
}

/// Load the current state from the database.
pub async fn load(cache: &Revocations, store: &Store) -> Result<(), sqlx::Error> {
    let snap = store.revocation_snapshot().await?;
    cache.load(snap.last_id, &snap.rows, &snap.disabled);
    Ok(())
}

/// Read log rows after the last one seen, until none are left.
pub async fn poll_once(cache: &Revocations, store: &Store) -> Result<usize, sqlx::Error> {
    let mut total = 0;
    loop {
        let rows = store.revocations_after(cache.last_id(), 1000).await?;
        total += rows.len();
        cache.apply_polled(&rows);
        if rows.len() < 1000 {
            return Ok(total);
        }
    }
}

/// Poll every [`POLL_INTERVAL`] until `stop`; prune the cache and the log
/// about once a minute.
pub async fn follow(cache: Revocations, store: Store, stop: CancellationToken) {
    let mut every = tokio::time::interval(POLL_INTERVAL);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut ticks: u32 = 0;
    let mut failing = false;
    loop {
        tokio::select! {
            _ = every.tick() => {},
            _ = stop.cancelled() => return,
        }
        match poll_once(&cache, &store).await {
            Ok(_) if failing => {
                failing = false;
                tracing::info!("revocation polling recovered");
            }
            Ok(_) => {}
            Err(e) if !failing => {
                failing = true;
                tracing::warn!(error = %e, "revocation poll failed; retrying");
            }
            Err(_) => {}
        }
        ticks = ticks.wrapping_add(1);
        if ticks.is_multiple_of(200) {
            let now = crate::time::now_secs();
            cache.prune(now);
            let toggles_before = crate::time::now_ms() - TOGGLE_RETENTION_MS;
            if let Err(e) = store
                .prune_revocations(cache.horizon(now), toggles_before)
                .await
            {
                tracing::warn!(error = %e, "pruning revocations failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{PrincipalScope, Role};
    use crate::ids::{PrincipalId, TenantId};

    fn tok(tenant: &str, principal: &str, jti: &str, iat: u64) -> VerifiedToken {
        VerifiedToken {
            scope: PrincipalScope::new(
                TenantId::parse(tenant).unwrap(),
                PrincipalId::parse(principal).unwrap(),
                Role::Member,
            ),
            jti: jti.into(),
            issued_at: iat,
            expires_at: iat + 3600,
        }
    }

    fn row(
        id: i64,
        kind: &str,
        t: Option<&str>,
        p: Option<&str>,
        jti: Option<&str>,
        at: i64,
    ) -> RevocationRow {
        RevocationRow {
            id,
            kind: kind.into(),
            tenant_id: t.map(Into::into),
            principal_id: p.map(Into::into),
            jti: jti.map(Into::into),
            cutoff: at,
        }
    }

    #[test]
    fn jti_revocation_is_per_tenant_unless_global() {
        let c = Revocations::new(3600);
        c.apply_polled(&[row(1, "jti", Some("acme"), None, Some("j1"), 100)]);
        assert_eq!(
            c.check(&tok("acme", "alice", "j1", 90)),
            Err(AuthError::Revoked)
        );
        assert_eq!(
            c.check(&tok("acme", "bob", "j1", 90)),
            Err(AuthError::Revoked)
        );
        assert_eq!(c.check(&tok("evil", "alice", "j1", 90)), Ok(()));
        assert_eq!(c.check(&tok("acme", "alice", "j2", 90)), Ok(()));
        c.apply_polled(&[row(2, "jti", None, None, Some("j2"), 100)]);
        assert_eq!(
            c.check(&tok("evil", "x", "j2", 90)),
            Err(AuthError::Revoked)
        );
        assert_eq!(c.last_id(), 2);
    }

    #[test]
    fn principal_cutoff_revokes_tokens_issued_until_then() {
        let c = Revocations::new(3600);
        c.apply_local(&Entry::Principal {
            tenant: "acme".into(),
            principal: "alice".into(),
            cutoff: 1000,
        });
        for (iat, want) in [
            (10, Err(AuthError::Revoked)),
            (999, Err(AuthError::Revoked)),
            (1000, Err(AuthError::Revoked)),
            (1001, Ok(())),
        ] {
            assert_eq!(c.check(&tok("acme", "alice", "j", iat)), want, "iat {iat}");
        }
        assert_eq!(c.check(&tok("acme", "bob", "j", 10)), Ok(()));
        assert_eq!(c.check(&tok("other", "alice", "j", 10)), Ok(()));
        // An older cutoff never lowers a newer one.
        c.apply_local(&Entry::Principal {
            tenant: "acme".into(),
            principal: "alice".into(),
            cutoff: 500,
        });
        assert_eq!(c.cutoff("acme", "alice"), Some(1000));
        // Local changes do not move the polling position.
        assert_eq!(c.last_id(), 0);
    }

    #[test]
    fn disable_and_enable_in_log_order() {
        let c = Revocations::new(3600);
        let t = tok("acme", "alice", "j", 10);
        c.apply_polled(&[row(1, "disable", Some("acme"), Some("alice"), None, 5)]);
        assert_eq!(c.check(&t), Err(AuthError::Disabled));
        assert!(c.is_disabled("acme", "alice"));
        assert_eq!(c.check(&tok("evil", "alice", "j", 10)), Ok(()));
        c.apply_polled(&[row(2, "enable", Some("acme"), Some("alice"), None, 6)]);
        assert_eq!(c.check(&t), Ok(()));
        // A batch ends in its last state; rows already seen are skipped.
        c.apply_polled(&[
            row(2, "disable", Some("acme"), Some("alice"), None, 6),
            row(3, "disable", Some("acme"), Some("alice"), None, 7),
            row(4, "enable", Some("acme"), Some("alice"), None, 8),
            row(5, "disable", Some("acme"), Some("alice"), None, 9),
        ]);
        assert_eq!(c.check(&t), Err(AuthError::Disabled));
        assert_eq!(c.last_id(), 5);
    }

    #[test]
    fn a_local_change_replayed_by_polling_ends_the_same() {
        let c = Revocations::new(3600);
        let t = tok("acme", "alice", "j", 10);
        // This instance enables (id 8) while another's disable (id 7) is not yet polled.
        c.apply_local(&Entry::Disable {
            tenant: "acme".into(),
            principal: "alice".into(),
        });
        c.apply_local(&Entry::Enable {
            tenant: "acme".into(),
            principal: "alice".into(),
        });
        c.apply_polled(&[
            row(7, "disable", Some("acme"), Some("alice"), None, 7),
            row(8, "enable", Some("acme"), Some("alice"), None, 8),
        ]);
        assert_eq!(c.check(&t), Ok(()));
    }

    #[test]
    fn unknown_or_incomplete_rows_are_skipped_but_counted_as_seen() {
        let c = Revocations::new(3600);
        c.apply_polled(&[
            row(1, "mystery", Some("acme"), Some("alice"), None, 1),
            row(2, "principal", Some("acme"), None, None, 1),
            row(3, "jti", Some("acme"), None, None, 1),
        ]);
        assert_eq!(c.sizes(), (0, 0, 0));
        assert_eq!(c.last_id(), 3);
    }

    #[test]
    fn load_replaces_state_and_prune_drops_what_no_token_can_outlive() {
        let c = Revocations::new(3600);
        c.apply_local(&Entry::Jti {
            tenant: None,
            jti: "stale".into(),
            at: 1,
        });
        c.load(
            9,
            &[
                row(3, "jti", Some("acme"), None, Some("old"), 1_000),
                row(4, "jti", Some("acme"), None, Some("new"), 10_000),
                row(5, "principal", Some("acme"), Some("alice"), None, 1_000),
                row(6, "principal", Some("acme"), Some("bob"), None, 10_000),
            ],
            &[("acme".into(), "carol".into())],
        );
        assert_eq!(c.last_id(), 9);
        assert_eq!(c.sizes(), (2, 2, 1));
        assert_eq!(c.check(&tok("x", "y", "stale", 0)), Ok(()));
        assert_eq!(
            c.check(&tok("acme", "carol", "j", 0)),
            Err(AuthError::Disabled)
        );
        // At 10,000 s, the horizon is 10,000 - 3,600 - leeway.
        assert_eq!(c.horizon(10_000), 10_000 - 3_600 - LEEWAY_SECS);
        c.prune(10_000);
        assert_eq!(c.sizes(), (1, 1, 1));
        assert_eq!(
            c.check(&tok("acme", "x", "new", 0)),
            Err(AuthError::Revoked)
        );
        assert_eq!(c.check(&tok("acme", "x", "old", 0)), Ok(()));
        assert_eq!(
            c.check(&tok("acme", "bob", "j", 9_000)),
            Err(AuthError::Revoked)
        );
        assert_eq!(c.horizon(100), 0);
    }
}

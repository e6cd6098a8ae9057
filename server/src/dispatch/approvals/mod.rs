//! Human approvals: persist the request, emit `approval.requested`, wait for
//! a decision (REST or WebSocket, on any node), a timeout (a deny) or the
//! turn's cancellation. `allow_session` decisions are grants held in the
//! database per principal, session, core fingerprint and rule key for at
//! most eight hours (so every instance honours them and a revocation reaches
//! all); identical concurrent requests share one decision.
//!
//! Who may decide is the tenant's policy
//! ([`crate::policy::approval_authority`]): each request records whether its
//! owner may decide it or a tenant operator must; [`Approvals::decide`]
//! enforces that for REST and WebSocket alike.
//!
//! What the approver sees of the arguments is [`preview::argument_preview`]:
//! bounded, with secrets redacted.

/// The preview is pure redaction, so it lives with the redactor.
pub use demiurge_redact::preview;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::auth::{PrincipalScope, Role};
use crate::error::{Error, Result};
use crate::events::EventLog;
use crate::ids::{SessionId, TenantId, TurnId};
use crate::policy::approval_authority::{
    access, requirement, Access, MemberMaxRisk, Requirement, TenantPolicy,
};
use crate::policy::approval_policy::Risk;
use crate::store::{ApprovalRow, NewApproval, SessionGrant, Store, StoredTenantPolicy, Surface};
use crate::wire::events::{self, EventPayload};
use crate::wire::ApprovalState;

/// How long an `allow_session` decision lasts.
pub const SESSION_ALLOW_TTL: Duration = Duration::from_secs(8 * 3600);
/// How often a waiter re-reads the record, to see decisions made on another node.
const POLL_EVERY: Duration = Duration::from_millis(500);

pub use crate::wire::Decision;

/// What the dispatcher wants approved.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    pub tool: String,
    pub risk: Risk,
    /// Stable key of what is being approved (tool, capability, action, target,
    /// and for ambiguous shapes an execution fingerprint).
    pub rule: String,
    pub reason: String,
    /// Redacted, bounded preview of the arguments.
    pub preview: Value,
    /// False for requests that must never be cached (secret bindings).
    pub session_cacheable: bool,
}

/// Who is asking, bound by the host.
#[derive(Debug, Clone)]
pub struct ApprovalScope<'a> {
    pub scope: &'a PrincipalScope,
    pub session_id: SessionId,
    pub turn_id: TurnId,
    /// Changes whenever the core or its grants change, so cached allows die with them.
    pub core_fingerprint: &'a str,
}

/// The outcome, with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// `auto`, `session_cache`, `allow_once`, `allow_session`.
    Allowed(&'static str),
    /// `policy`, `user`, `timeout`, `cancelled`, `expired`.
    Denied(&'static str),
}

type Outcome = Option<(ApprovalState, Option<Decision>)>; // (state, decision) once settled

#[derive(Default)]
struct Inner {
    waiters: HashMap<String, watch::Sender<Outcome>>,
    /// (session, rule) -> approval id of the request in flight.
    inflight: HashMap<(String, String), (String, watch::Receiver<Outcome>)>,
}

#[derive(Clone)]
pub struct Approvals {
    store: Store,
    events: EventLog,
    node_id: String,
    timeout: Duration,
    /// The policy of tenants that stored none (`--member-max-risk`).
    default_policy: TenantPolicy,
    inner: Arc<Mutex<Inner>>,
}

fn cache_key(a: &ApprovalScope<'_>, rule: &str) -> String {
    format!(
        "{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}",
        a.scope.tenant(),
        a.scope.principal(),
        a.session_id,
        a.core_fingerprint,
        rule
    )
}

impl Approvals {
    pub fn new(store: Store, events: EventLog, node_id: String, timeout: Duration) -> Self {
        Self {
            store,
            events,
            node_id,
            timeout,
            default_policy: TenantPolicy::default(),
            inner: Arc::default(),
        }
    }

    /// The policy of tenants whose admins have not set one.
    pub fn with_default_policy(mut self, policy: TenantPolicy) -> Self {
        self.default_policy = policy;
        self
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ask for approval of a `prompt`-policy request and wait for the answer.
    pub async fn request(
        &self,
        a: &ApprovalScope<'_>,
        req: ApprovalRequest,
        cancel: &CancellationToken,
    ) -> Result<Verdict> {
        let key = cache_key(a, &req.rule);
        let requires = self.requirement_for(a.scope.tenant(), req.risk).await?;
        // Grants live in the database: one made on any instance holds on
        // all, and a revocation reaches all at once.
        if req.session_cacheable {
            if let Some(by) = self.store.session_grant(&key).await? {
                if by >= requires {
                    return Ok(Verdict::Allowed("session_cache"));
                }
            }
        }
        // Share an identical request already waiting in this session.
        let flight_key = (
            a.session_id.to_string(),
            format!("{}\u{1f}{}", a.core_fingerprint, req.rule),
        );
        let joined = self
            .inner()
            .inflight
            .get(&flight_key)
            .map(|(id, rx)| (id.clone(), rx.clone()));
        let (id, rx, owner) = match joined {
            Some((id, rx)) => (id, rx, false),
            None => {
                let id = uuid::Uuid::now_v7().to_string();
                let (tx, rx) = watch::channel(None);
                {
                    let mut inner = self.inner();
                    inner.waiters.insert(id.clone(), tx);
                    inner
                        .inflight
                        .insert(flight_key.clone(), (id.clone(), rx.clone()));
                }
                if let Err(e) = self.open(a, &id, &req, requires).await {
                    self.forget(&id, &flight_key);
                    return Err(e);
                }
                (id, rx, true)
            }
        };
        let verdict = self.wait(&id, rx, cancel, owner).await;
        if owner {
            self.forget(&id, &flight_key);
        }
        let verdict = verdict?;
        if verdict == Verdict::Allowed("allow_session") && req.session_cacheable {
            // Only someone with the recorded authority could have decided it.
            let ttl = i64::try_from(SESSION_ALLOW_TTL.as_millis()).unwrap_or(i64::MAX / 4);
            self.store
                .put_session_grant(&SessionGrant {
                    cache_key: &key,
                    tenant: a.scope.tenant(),
                    principal: a.scope.principal(),
                    session_id: a.session_id,
                    requirement: requires,
                    expires_at: crate::time::now_ms() + ttl,
                })
                .await?;
        }
        Ok(verdict)
    }

    /// The tenant's approval policy (the default when none is stored). A
    /// stored value that no longer parses fails closed: members decide nothing.
    pub async fn tenant_policy(&self, tenant: &TenantId) -> Result<TenantPolicy> {
        Ok(match self.store.tenant_policy(tenant).await? {
            None => self.default_policy,
            Some(row) => policy_of(tenant, &row),
        })
    }

    /// The stored policy row, for the tenant policy API.
    pub async fn tenant_policy_record(
        &self,
        scope: &PrincipalScope,
    ) -> Result<(TenantPolicy, Option<StoredTenantPolicy>)> {
        if !scope.is_operator() {
            return Err(Error::Forbidden(
                "the tenant policy is for tenant operators and admins".into(),
            ));
        }
        let row = self.store.tenant_policy(scope.tenant()).await?;
        let policy = match &row {
            None => self.default_policy,
            Some(row) => policy_of(scope.tenant(), row),
        };
        Ok((policy, row))
    }

    /// Replace the caller's tenant's policy (tenant admins only). Applies to
    /// approvals requested from now on; pending ones keep their requirement.
    pub async fn set_tenant_policy(
        &self,
        scope: &PrincipalScope,
        via: &Surface,
        member_max_risk: MemberMaxRisk,
    ) -> Result<StoredTenantPolicy> {
        if scope.role() != Role::Admin {
            return Err(Error::Forbidden(
                "only a tenant admin may change the tenant policy".into(),
            ));
        }
        let audit = scope.audit(
            via,
            "tenant_policy.changed",
            scope.tenant().as_str(),
            serde_json::json!({"member_max_risk": member_max_risk.as_str()}),
        );
        let row = self
            .store
            .set_tenant_policy(
                scope.tenant(),
                member_max_risk.as_str(),
                scope.principal(),
                &audit,
            )
            .await?;
        tracing::info!(tenant = %scope.tenant(), by = %scope.principal(),
            member_max_risk = member_max_risk.as_str(), "tenant policy changed");
        Ok(row)
    }

    /// Who must decide a request of `risk` in this tenant, as of now.
    async fn requirement_for(&self, tenant: &TenantId, risk: Risk) -> Result<Requirement> {
        Ok(requirement(self.tenant_policy(tenant).await?, risk))
    }

    fn forget(&self, id: &str, flight_key: &(String, String)) {
        let mut inner = self.inner();
        inner.waiters.remove(id);
        if inner.inflight.get(flight_key).is_some_and(|(i, _)| i == id) {
            inner.inflight.remove(flight_key);
        }
    }

    async fn open(
        &self,
        a: &ApprovalScope<'_>,
        id: &str,
        req: &ApprovalRequest,
        requires: Requirement,
    ) -> Result<()> {
        let expires_at = crate::time::now_ms() + self.timeout.as_millis() as i64;
        let preview = req.preview.to_string();
        self.store
            .insert_approval(&NewApproval {
                id: id.to_owned(),
                tenant: a.scope.tenant().to_string(),
                principal: a.scope.principal().to_string(),
                session_id: a.session_id,
                turn_id: a.turn_id,
                node_id: self.node_id.clone(),
                tool: req.tool.clone(),
                risk: req.risk,
                rule: req.rule.clone(),
                reason: req.reason.clone(),
                preview,
                fingerprint: crate::redact::redactor::fingerprint(&req.rule),
                session_cacheable: req.session_cacheable,
                requires,
                expires_at,
            })
            .await?;
        let requested = events::ApprovalRequested {
            approval_id: id.to_owned(),
            tool: req.tool.clone(),
            risk: req.risk,
            rule: req.rule.clone(),
            reason: req.reason.clone(),
            preview: req.preview.clone(),
            choices: choices(req.session_cacheable),
            requires,
            expires_at: crate::time::rfc3339(expires_at),
            child_session_id: None,
        };
        self.events
            .append(
                a.session_id,
                Some(a.turn_id),
                EventPayload::ApprovalRequested(requested.clone()),
            )
            .await?;
        // A child agent's request also reaches the streams above it, so the
        // operator watching the parent can decide it.
        for above in self.sessions_above(a.session_id).await {
            let mirrored = events::ApprovalRequested {
                child_session_id: Some(a.session_id.to_string()),
                ..requested.clone()
            };
            if let Err(e) = self
                .events
                .append(above, None, EventPayload::ApprovalRequested(mirrored))
                .await
            {
                tracing::warn!(error = %e, "could not mirror an approval to a parent session");
            }
        }
        Ok(())
    }

    /// The sessions above a child agent's session (none for a top-level one).
    async fn sessions_above(&self, session: SessionId) -> Vec<SessionId> {
        match self.store.lineage(session).await {
            Ok(Some(d)) => d.ancestor_sessions,
            Ok(None) => Vec::new(),
            Err(e) => {
                tracing::warn!(error = %e, "could not read a session's lineage");
                Vec::new()
            }
        }
    }

    async fn wait(
        &self,
        id: &str,
        mut rx: watch::Receiver<Outcome>,
        cancel: &CancellationToken,
        owner: bool,
    ) -> Result<Verdict> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        loop {
            if let Some((state, decision)) = *rx.borrow() {
                return Ok(verdict_of(state, decision));
            }
            tokio::select! {
                changed = rx.changed() => {
                    if changed.is_err() {
                        // The owner went away; read the record.
                        if let Some((state, decision)) = self.store.approval_state(id).await? {
                            if state != ApprovalState::Pending {
                                return Ok(verdict_of(state, decision));
                            }
                        }
                        return Ok(Verdict::Denied("cancelled"));
                    }
                }
                _ = tokio::time::sleep(POLL_EVERY) => {
                    if let Some((state, decision)) = self.store.approval_state(id).await? {
                        if state != ApprovalState::Pending {
                            self.publish(id, state, decision);
                            return Ok(verdict_of(state, decision));
                        }
                    }
                }
                _ = tokio::time::sleep_until(deadline), if owner => {
                    return self.expire(id, "timeout").await;
                }
                _ = cancel.cancelled(), if owner => {
                    return self.expire(id, "cancelled").await;
                }
            }
        }
    }

    /// Close a pending approval without a human decision: always a deny.
    async fn expire(&self, id: &str, why: &'static str) -> Result<Verdict> {
        if self
            .store
            .settle_approval(id, ApprovalState::Expired, None, None, None)
            .await?
        {
            self.publish(id, ApprovalState::Expired, None);
            self.resolved_event(id, Decision::Deny, why, None).await;
            return Ok(Verdict::Denied(why));
        }
        // Someone decided at the same moment; honour what was recorded.
        match self.store.approval_state(id).await? {
            Some((state, decision)) => Ok(verdict_of(state, decision)),
            None => Ok(Verdict::Denied(why)),
        }
    }

    fn publish(&self, id: &str, state: ApprovalState, decision: Option<Decision>) {
        if let Some(tx) = self.inner().waiters.get(id) {
            let _ = tx.send(Some((state, decision)));
        }
    }

    async fn resolved_event(&self, id: &str, decision: Decision, reason: &str, by: Option<&str>) {
        let Ok(Some(row)) = self.store.approval_brief(id).await else {
            return;
        };
        let resolved = events::ApprovalResolved {
            approval_id: id.to_owned(),
            decision,
            reason: reason.to_owned(),
            tool: row.2,
            decided_by: by.map(str::to_owned),
            child_session_id: None,
        };
        let payload = EventPayload::ApprovalResolved(resolved.clone());
        if let Err(e) = self.events.append(row.0, Some(row.1), payload).await {
            tracing::error!(error = %e, "could not record approval.resolved");
        }
        for above in self.sessions_above(row.0).await {
            let mirrored = events::ApprovalResolved {
                child_session_id: Some(row.0.to_string()),
                ..resolved.clone()
            };
            if let Err(e) = self
                .events
                .append(above, None, EventPayload::ApprovalResolved(mirrored))
                .await
            {
                tracing::warn!(error = %e, "could not mirror an approval's end to a parent session");
            }
        }
    }

    /// A decision (REST or WebSocket) from the approval's owner or, when the
    /// request needs one, a tenant operator. Another tenant's approval, and
    /// another principal's that the caller may not decide, look missing.
    pub async fn decide(
        &self,
        scope: &PrincipalScope,
        via: &Surface,
        id: &str,
        decision: Decision,
    ) -> Result<ApprovalRow> {
        let row = self
            .store
            .get_approval(scope.tenant(), id)
            .await?
            .ok_or(Error::NotFound)?;
        let own = row.principal_id == scope.principal().as_str();
        match access(scope.role(), own, row.requires) {
            Access::Decide => {}
            Access::Hidden => return Err(Error::NotFound),
            Access::Forbidden => {
                return Err(Error::Forbidden(format!(
                    "this {} risk approval needs a tenant operator or admin: the tenant policy \
                     lets members decide only lower risks themselves",
                    row.risk
                )))
            }
        }
        if row.state != ApprovalState::Pending {
            return Err(Error::Conflict(format!(
                "approval is already {}",
                row.state
            )));
        }
        if decision == Decision::AllowSession && !row.session_cacheable {
            return Err(Error::Invalid(
                "this request cannot be allowed for the session; use allow_once".into(),
            ));
        }
        let state = decision.state();
        let by = scope.principal().as_str();
        let audit = scope.audit(
            via,
            "approval.decided",
            id,
            serde_json::json!({
                "decision": decision.as_str(),
                "tool": row.tool,
                "risk": row.risk.as_str(),
                "rule": row.rule,
                "fingerprint": fingerprint(&row),
                "session_id": row.session_id.to_string(),
                "turn_id": row.turn_id.to_string(),
                "requested_by": row.principal_id,
            }),
        );
        if !self
            .store
            .settle_approval(id, state, Some(decision), Some(by), Some(&audit))
            .await?
        {
            return Err(Error::Conflict("approval was settled meanwhile".into()));
        }
        // The resolution is in the log before the waiting turn goes on, so
        // `approval.resolved` always precedes the call's `tool.result`.
        self.resolved_event(id, decision, "user", Some(by)).await;
        self.publish(id, state, Some(decision));
        self.store
            .get_approval(scope.tenant(), id)
            .await?
            .ok_or(Error::NotFound)
    }

    /// At start-up: pending records of this node can never be answered; deny them.
    pub async fn expire_after_restart(&self) -> anyhow::Result<usize> {
        self.expire_of_node(&self.node_id, i64::MAX).await
    }

    /// Deny the pending records `node_id` made before `created_before`:
    /// that instance stopped, so nobody waits on them
    /// ([`crate::instances`]).
    pub async fn expire_of_node(
        &self,
        node_id: &str,
        created_before: i64,
    ) -> anyhow::Result<usize> {
        let (rows, _clarifications) = self
            .store
            .expire_pending_of_node(node_id, created_before)
            .await?;
        for r in &rows {
            self.events
                .append(
                    r.session_id,
                    Some(r.turn_id),
                    EventPayload::ApprovalResolved(events::ApprovalResolved {
                        approval_id: r.id.clone(),
                        decision: Decision::Deny,
                        reason: "expired".into(),
                        tool: r.tool.clone(),
                        decided_by: None,
                        child_session_id: None,
                    }),
                )
                .await?;
        }
        Ok(rows.len())
    }

    /// Revoke every `allow_session` grant of one of the caller's sessions,
    /// on every instance; how many there were.
    pub async fn revoke_session(&self, scope: &PrincipalScope, session_id: &str) -> Result<u64> {
        Ok(self
            .store
            .delete_session_grants(scope.tenant(), scope.principal(), session_id)
            .await?)
    }
}

/// The verdict of a settled (or, defensively, still pending) record.
/// What was approved, for the audit log: SHA-256 over the tool and the
/// (redacted) preview the decider saw, so a record names the exact request
/// without holding its text.
fn fingerprint(row: &ApprovalRow) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(row.tool.as_bytes());
    h.update(b"\n");
    h.update(row.preview.as_bytes());
    format!("{:x}", h.finalize())
}

fn verdict_of(state: ApprovalState, decision: Option<Decision>) -> Verdict {
    match state {
        ApprovalState::Allowed if decision == Some(Decision::AllowSession) => {
            Verdict::Allowed("allow_session")
        }
        ApprovalState::Allowed => Verdict::Allowed("allow_once"),
        ApprovalState::Denied => Verdict::Denied("user"),
        // Never allowed by default: a record read while still pending is no allow.
        ApprovalState::Expired | ApprovalState::Pending => Verdict::Denied("expired"),
    }
}

/// The decisions a request accepts (`allow_session` only when cacheable).
pub fn choices(session_cacheable: bool) -> Vec<Decision> {
    if session_cacheable {
        vec![Decision::AllowOnce, Decision::AllowSession, Decision::Deny]
    } else {
        vec![Decision::AllowOnce, Decision::Deny]
    }
}

/// Parse a stored tenant policy; an unreadable value fails closed.
fn policy_of(tenant: &TenantId, row: &StoredTenantPolicy) -> TenantPolicy {
    match MemberMaxRisk::parse(&row.member_max_risk) {
        Some(member_max_risk) => TenantPolicy { member_max_risk },
        None => {
            tracing::error!(%tenant, value = %row.member_max_risk,
                "unreadable tenant policy; members may decide nothing until it is set again");
            TenantPolicy {
                member_max_risk: MemberMaxRisk::new(None),
            }
        }
    }
}

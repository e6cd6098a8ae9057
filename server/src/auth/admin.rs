//! What a tenant admin may do with tokens over the API: issue them for its
//! own tenant, revoke them, and disable or enable principals. Decisions are
//! pure ([`may_administer`], [`may_issue`]); the actions record changes and
//! apply them to this instance's revocation cache at once.

use std::time::Duration;

use super::revocation::{self, Revocations};
use super::{IssueError, IssuedToken, PrincipalScope, Role, TokenService, MAX_JTI_LEN};
use crate::error::Error;
use crate::ids::PrincipalId;
#[cfg(test)]
use crate::ids::TenantId;
use crate::store::{RevocationChange, RevocationRow, Store, Surface};

/// Only a tenant's admins manage its tokens and principals.
pub fn may_administer(caller: &PrincipalScope) -> Result<(), Error> {
    if caller.role() == Role::Admin {
        Ok(())
    } else {
        Err(Error::Forbidden(format!(
            "managing tokens and principals needs the admin role; yours is {}",
            caller.role().as_str()
        )))
    }
}

/// An admin issues for its own tenant only, and never above its own role.
/// `tenant` is the request's optional tenant field.
pub fn may_issue(caller: &PrincipalScope, tenant: Option<&str>, role: Role) -> Result<(), Error> {
    may_administer(caller)?;
    if let Some(t) = tenant {
        if t != caller.tenant().as_str() {
            return Err(Error::Forbidden(
                "tokens can only be issued for your own tenant".into(),
            ));
        }
    }
    if role > caller.role() {
        return Err(Error::Forbidden(format!(
            "cannot issue a {} token above your own role",
            role.as_str()
        )));
    }
    Ok(())
}

impl From<IssueError> for Error {
    fn from(e: IssueError) -> Self {
        match e {
            IssueError::ZeroTtl | IssueError::TtlTooLong { .. } => Error::Invalid(e.to_string()),
            IssueError::Sign(_) => Error::Internal(anyhow::Error::new(e)),
        }
    }
}

/// A token to issue: for whom, with which role, for how long.
#[derive(Debug, Clone, Copy)]
pub struct NewToken<'a> {
    pub principal: &'a PrincipalId,
    pub role: Role,
    pub ttl: Duration,
}

/// Issue a token for a principal of the caller's tenant (created if
/// missing), after [`may_issue`] allowed it, recorded in the audit log from
/// `via`. Its `iat` follows any revocation of the same second, so it
/// survives it.
pub async fn issue(
    tokens: &TokenService,
    revocations: &Revocations,
    store: &Store,
    caller: &PrincipalScope,
    via: &Surface,
    new: NewToken<'_>,
) -> Result<IssuedToken, Error> {
    let NewToken {
        principal,
        role,
        ttl,
    } = new;
    tokens.check_ttl(ttl)?;
    let tenant = caller.tenant();
    if revocations.is_disabled(tenant.as_str(), principal.as_str())
        || store.principal_disabled(tenant, principal).await?
    {
        return Err(Error::Conflict(format!(
            "principal {principal} is disabled; enable it first"
        )));
    }
    store.ensure_principal(tenant, principal, role).await?;
    let cutoff = revocations.cutoff(tenant.as_str(), principal.as_str());
    let iat = crate::time::now_secs().max(cutoff.map_or(0, |c| c + 1));
    let issued = tokens.issue_at(tenant, principal, role, ttl, iat)?;
    // No token leaves without its audit row.
    store
        .append_audit(&caller.audit(
            via,
            "token.issued",
            principal.as_str(),
            serde_json::json!({"role": role.as_str(), "jti": issued.jti,
                "expires_at": crate::time::rfc3339(issued.expires_at as i64 * 1000)}),
        ))
        .await?;
    Ok(issued)
}

/// What to revoke in the caller's tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevokeTarget {
    Jti(String),
    Principal(PrincipalId),
}

/// Parse a revoke request: exactly one of `jti` and `principal`.
pub fn revoke_target(jti: Option<&str>, principal: Option<&str>) -> Result<RevokeTarget, Error> {
    match (jti, principal) {
        (Some(j), None) => {
            let j = j.trim();
            if j.is_empty() || j.len() > MAX_JTI_LEN {
                return Err(Error::Invalid(format!(
                    "jti must be 1 to {MAX_JTI_LEN} characters"
                )));
            }
            Ok(RevokeTarget::Jti(j.to_owned()))
        }
        (None, Some(p)) => Ok(RevokeTarget::Principal(PrincipalId::parse(p)?)),
        _ => Err(Error::Invalid(
            "give exactly one of jti or principal".into(),
        )),
    }
}

/// Revoke in the caller's tenant; other instances refuse it within a poll.
pub async fn revoke(
    revocations: &Revocations,
    store: &Store,
    caller: &PrincipalScope,
    via: &Surface,
    target: RevokeTarget,
) -> Result<RevocationRow, Error> {
    let tenant = caller.tenant();
    let (change, audit) = match target {
        RevokeTarget::Jti(jti) => (
            RevocationChange::Jti {
                tenant: Some(tenant.clone()),
                jti: jti.clone(),
            },
            caller.audit(via, "token.revoked", &jti, serde_json::json!({"jti": jti})),
        ),
        RevokeTarget::Principal(principal) => (
            RevocationChange::Principal {
                tenant: tenant.clone(),
                principal: principal.clone(),
            },
            caller.audit(
                via,
                "tokens.revoked",
                principal.as_str(),
                serde_json::json!({"until_now": true}),
            ),
        ),
    };
    Ok(revocation::record(revocations, store, &change, Some(&audit)).await?)
}

/// Disable or enable a principal of the caller's tenant. An admin cannot
/// disable itself (that would lock the tenant's admin out).
pub async fn set_disabled(
    revocations: &Revocations,
    store: &Store,
    caller: &PrincipalScope,
    via: &Surface,
    principal: PrincipalId,
    disabled: bool,
) -> Result<(), Error> {
    if disabled && &principal == caller.principal() {
        return Err(Error::Conflict("you cannot disable yourself".into()));
    }
    let tenant = caller.tenant().clone();
    let audit = caller.audit(
        via,
        if disabled {
            "principal.disabled"
        } else {
            "principal.enabled"
        },
        principal.as_str(),
        serde_json::json!({}),
    );
    let change = if disabled {
        RevocationChange::Disable { tenant, principal }
    } else {
        RevocationChange::Enable { tenant, principal }
    };
    revocation::record(revocations, store, &change, Some(&audit)).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(role: Role) -> PrincipalScope {
        PrincipalScope::new(
            TenantId::parse("acme").unwrap(),
            PrincipalId::parse("boss").unwrap(),
            role,
        )
    }

    #[test]
    fn only_admins_administer() {
        assert!(may_administer(&scope(Role::Admin)).is_ok());
        for r in [Role::Member, Role::Operator] {
            let e = may_administer(&scope(r)).unwrap_err();
            assert!(matches!(e, Error::Forbidden(_)), "{r:?}");
            assert!(e.to_string().contains(r.as_str()), "{e}");
        }
    }

    #[test]
    fn issue_rules() {
        let admin = scope(Role::Admin);
        for role in [Role::Member, Role::Operator, Role::Admin] {
            assert!(may_issue(&admin, None, role).is_ok(), "{role:?}");
            assert!(may_issue(&admin, Some("acme"), role).is_ok(), "{role:?}");
        }
        for other in ["evil", "ACME", "", "acme ", "default"] {
            assert!(
                matches!(
                    may_issue(&admin, Some(other), Role::Member),
                    Err(Error::Forbidden(_))
                ),
                "{other:?}"
            );
        }
        for caller in [Role::Member, Role::Operator] {
            for role in [Role::Member, Role::Operator, Role::Admin] {
                assert!(
                    matches!(
                        may_issue(&scope(caller), None, role),
                        Err(Error::Forbidden(_))
                    ),
                    "{caller:?} issuing {role:?}"
                );
            }
        }
    }

    #[test]
    fn revoke_targets() {
        assert_eq!(
            revoke_target(Some("abc"), None).unwrap(),
            RevokeTarget::Jti("abc".into())
        );
        assert_eq!(
            revoke_target(Some(" abc "), None).unwrap(),
            RevokeTarget::Jti("abc".into())
        );
        assert_eq!(
            revoke_target(None, Some("alice")).unwrap(),
            RevokeTarget::Principal(PrincipalId::parse("alice").unwrap())
        );
        let long = "x".repeat(MAX_JTI_LEN + 1);
        for (j, p) in [
            (None, None),
            (Some("a"), Some("b")),
            (Some(""), None),
            (Some("   "), None),
            (Some(long.as_str()), None),
            (None, Some("../etc")),
            (None, Some("")),
        ] {
            assert!(
                matches!(revoke_target(j, p), Err(Error::Invalid(_))),
                "{j:?} {p:?}"
            );
        }
    }

    #[test]
    fn issue_errors_map_to_invalid() {
        assert!(matches!(
            Error::from(IssueError::ZeroTtl),
            Error::Invalid(_)
        ));
        let e = Error::from(IssueError::TtlTooLong {
            ttl_secs: 10,
            max_secs: 5,
        });
        assert!(
            matches!(&e, Error::Invalid(m) if m.contains("maximum")),
            "{e}"
        );
    }
}

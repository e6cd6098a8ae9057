//! The caller's authority. Built by [`super::TokenService::verify`] from a
//! verified token and passed down; no request field can widen it.

use crate::ids::{PrincipalId, TenantId};

/// The role lives with the approval authority rules that decide on it.
pub use demiurge_policy::Role;

/// Who is calling: tenant, principal and role. Fields are private and there
/// is no public constructor outside this crate's auth code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrincipalScope {
    tenant: TenantId,
    principal: PrincipalId,
    role: Role,
}

impl PrincipalScope {
    pub(crate) fn new(tenant: TenantId, principal: PrincipalId, role: Role) -> Self {
        Self {
            tenant,
            principal,
            role,
        }
    }

    /// The server operator at the command line, acting as `tenant`'s admin
    /// under the name `principal` (the CLI passes `operator`). Only the CLI
    /// builds it: whoever runs it has the host already.
    pub fn operator_cli(tenant: TenantId, principal: PrincipalId) -> Self {
        Self::new(tenant, principal, Role::Admin)
    }

    pub fn tenant(&self) -> &TenantId {
        &self.tenant
    }

    pub fn principal(&self) -> &PrincipalId {
        &self.principal
    }

    pub fn role(&self) -> Role {
        self.role
    }

    /// An audit row for a change this caller makes from `surface`: the
    /// actor is who the token says, never a request field.
    pub fn audit(
        &self,
        surface: &crate::store::Surface,
        action: &str,
        target: &str,
        detail: serde_json::Value,
    ) -> crate::store::NewAudit {
        crate::store::NewAudit {
            tenant: self.tenant.as_str().to_owned(),
            actor: self.principal.as_str().to_owned(),
            role: self.role.as_str().to_owned(),
            surface: surface.to_string(),
            action: action.to_owned(),
            target: target.to_owned(),
            detail,
        }
    }

    /// Refuse anyone but a tenant admin: "only a tenant admin may {what}".
    pub fn require_admin(&self, what: &str) -> Result<(), crate::error::Error> {
        if self.role == Role::Admin {
            Ok(())
        } else {
            Err(crate::error::Error::Forbidden(format!(
                "only a tenant admin may {what}"
            )))
        }
    }

    /// Operators and admins may see operator surfaces (task logs, audits).
    pub fn is_operator(&self) -> bool {
        self.role >= Role::Operator
    }

    /// The rate-limit key: one bucket per principal of a tenant.
    pub fn rate_key(&self) -> String {
        format!("{}/{}", self.tenant, self.principal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_order_and_parse() {
        assert!(Role::Admin > Role::Operator && Role::Operator > Role::Member);
        for r in [Role::Member, Role::Operator, Role::Admin] {
            assert_eq!(Role::parse(r.as_str()), Some(r));
        }
        assert_eq!(Role::parse("root"), None);
        assert_eq!(Role::parse("Admin"), None);
    }

    #[test]
    fn operator_check() {
        let t = TenantId::parse("t").unwrap();
        let p = PrincipalId::parse("p").unwrap();
        assert!(!PrincipalScope::new(t.clone(), p.clone(), Role::Member).is_operator());
        assert!(PrincipalScope::new(t.clone(), p.clone(), Role::Operator).is_operator());
        assert!(PrincipalScope::new(t, p, Role::Admin).is_operator());
    }
}

//! Who may decide an approval: the pure rule behind the tenant policy.
//!
//! A tenant's [`TenantPolicy`] names the highest risk a member may decide
//! for itself (`member_max_risk`; default `high`). When an approval is
//! created, [`requirement`] turns the policy and the request's risk into a
//! [`Requirement`] that is recorded with it: `owner` (the principal whose
//! turn asked may decide) or `operator` (a tenant operator or admin must).
//! When someone decides, [`access`] turns the caller's role, whether the
//! approval is the caller's own, and the recorded requirement into an
//! [`Access`]: decide, forbidden (the caller's own, but above its role) or
//! hidden (someone else's that the caller may not see: it looks missing).
//!
//! No I/O. An unknown stored requirement is an error (the store refuses to
//! decode the row), never a guess.

use std::fmt;

use crate::approval_policy::Risk;
use crate::Role;

/// The highest risk a member may decide for itself; `None` means members
/// decide nothing themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemberMaxRisk(Option<Risk>);

impl MemberMaxRisk {
    /// Every accepted value, lowest first.
    pub const ALL: [MemberMaxRisk; 5] = [
        MemberMaxRisk(None),
        MemberMaxRisk(Some(Risk::Low)),
        MemberMaxRisk(Some(Risk::Medium)),
        MemberMaxRisk(Some(Risk::High)),
        MemberMaxRisk(Some(Risk::Critical)),
    ];

    pub fn new(max: Option<Risk>) -> Self {
        Self(max)
    }

    /// Exactly `none`, `low`, `medium`, `high` or `critical`.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self.0 {
            None => "none",
            Some(r) => r.as_str(),
        }
    }

    /// Whether a member may decide a request of this risk for itself.
    pub fn covers(self, risk: Risk) -> bool {
        self.0.is_some_and(|max| risk <= max)
    }
}

impl fmt::Display for MemberMaxRisk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tenant's approval authority policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TenantPolicy {
    pub member_max_risk: MemberMaxRisk,
}

impl Default for TenantPolicy {
    /// Members decide their own low, medium and high risks; critical needs an operator.
    fn default() -> Self {
        Self {
            member_max_risk: MemberMaxRisk(Some(Risk::High)),
        }
    }
}

/// Who must decide an approval, recorded when it is created.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Requirement {
    /// The principal whose turn asked (or an operator of the tenant acting on its own).
    Owner,
    /// A tenant operator or admin.
    Operator,
}

impl Requirement {
    pub fn as_str(self) -> &'static str {
        match self {
            Requirement::Owner => "owner",
            Requirement::Operator => "operator",
        }
    }
}

/// Exactly `owner` or `operator`; anything else is an error.
impl std::str::FromStr for Requirement {
    type Err = crate::UnknownValue;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "owner" => Ok(Requirement::Owner),
            "operator" => Ok(Requirement::Operator),
            _ => Err(crate::UnknownValue {
                kind: "approval requirement",
                value: s.to_owned(),
            }),
        }
    }
}

/// What the tenant policy requires for a request of `risk`.
pub fn requirement(policy: TenantPolicy, risk: Risk) -> Requirement {
    if policy.member_max_risk.covers(risk) {
        Requirement::Owner
    } else {
        Requirement::Operator
    }
}

/// What a caller may do with one approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The caller may decide it (and sees it in its list).
    Decide,
    /// The caller's own, but it needs an operator: 403 with a clear message.
    Forbidden,
    /// Not the caller's business: it answers exactly like a missing one.
    Hidden,
}

/// The decision rule. `own` is whether the approval belongs to the caller
/// (same tenant and principal); approvals of other tenants never reach here.
pub fn access(role: Role, own: bool, required: Requirement) -> Access {
    let operator = role >= Role::Operator;
    match (own, required) {
        (true, Requirement::Owner) => Access::Decide,
        (_, Requirement::Operator) if operator => Access::Decide,
        (true, Requirement::Operator) => Access::Forbidden,
        (false, _) => Access::Hidden,
    }
}

/// The whole rule at once: role × ownership × risk × tenant policy.
pub fn may_decide(role: Role, own: bool, risk: Risk, policy: TenantPolicy) -> Access {
    access(role, own, requirement(policy, risk))
}

#[cfg(test)]
#[path = "approval_authority_tests.rs"]
mod tests;

//! The two orders every approval decision is made of: [`Risk`] (how much
//! damage a call could do) and [`ApprovalPolicy`] (how a request is
//! approved). One enum each, used by the manifests, the catalog, the command
//! guard, the dispatcher, the approval records and the events.
//!
//! Both read exactly their lowercase spelling (YAML, JSON, database); any
//! other text is an [`UnknownValue`] error, never a default.

use std::fmt;
use std::str::FromStr;

use crate::UnknownValue;
use serde::{Deserialize, Serialize};

/// How much damage a tool call could do. Ordered `Low < … < Critical`, so
/// the higher of two risks is `a.max(b)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    /// Read-only, in-workspace (for the guard: a literal read-only command).
    Low,
    /// The authored-tool default (for the guard: read-only, but reaching
    /// outside the working tree).
    Medium,
    /// Writes, executes or leaves the workspace.
    High,
    /// Destructive or credential-bearing.
    Critical,
}

/// How a request is approved. Ordered by strictness `Auto < Prompt < Deny`,
/// so the stricter of two policies is `a.max(b)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum ApprovalPolicy {
    /// Run without asking.
    Auto,
    /// Ask a human (or use a cached session allow).
    Prompt,
    /// Refuse without asking.
    Deny,
}

impl Risk {
    /// All values, lowest first.
    pub const ALL: [Risk; 4] = [Risk::Low, Risk::Medium, Risk::High, Risk::Critical];

    /// The one spelling (YAML, JSON, database, events).
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
            Risk::Critical => "critical",
        }
    }
}

impl ApprovalPolicy {
    /// All values, weakest first.
    pub const ALL: [ApprovalPolicy; 3] = [
        ApprovalPolicy::Auto,
        ApprovalPolicy::Prompt,
        ApprovalPolicy::Deny,
    ];

    /// The one spelling (YAML, JSON, events).
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalPolicy::Auto => "auto",
            ApprovalPolicy::Prompt => "prompt",
            ApprovalPolicy::Deny => "deny",
        }
    }
}

impl fmt::Display for Risk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for ApprovalPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Exactly `low`, `medium`, `high` or `critical`.
impl FromStr for Risk {
    type Err = UnknownValue;

    fn from_str(s: &str) -> Result<Self, UnknownValue> {
        Risk::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownValue {
                kind: "tool risk",
                value: s.to_owned(),
            })
    }
}

/// Exactly `auto`, `prompt` or `deny`.
impl FromStr for ApprovalPolicy {
    type Err = UnknownValue;

    fn from_str(s: &str) -> Result<Self, UnknownValue> {
        ApprovalPolicy::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownValue {
                kind: "approval policy",
                value: s.to_owned(),
            })
    }
}

#[cfg(test)]
#[path = "risk_tests.rs"]
mod tests;

//! Lifecycle states as stored in the database and shown on the API: turns,
//! approvals (and their decisions), clarifications and background tasks.
//!
//! Each enum has one spelling per value ([`as_str`](TurnStatus::as_str),
//! serde, the OpenAPI schema) and one strict reading of stored text
//! ([`FromStr`](std::str::FromStr)): an unknown value is an [`UnknownValue`]
//! error — which the store turns into a decode error — never a default.

use std::fmt;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Reading a vocabulary fails the same way in the pure crates and here.
pub use demiurge_policy::UnknownValue;

/// One closed vocabulary: the enum, its spellings, a strict `FromStr`,
/// `Display`, serde and the OpenAPI schema, all from one list.
macro_rules! vocabulary {
    (
        $(#[$doc:meta])*
        $name:ident, $kind:literal {
            $( $(#[$vdoc:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$doc])*
        // The spellings are the snake_case variant names (a test checks
        // serde against `as_str`); `rename_all` is what the schema derive reads.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $( $(#[$vdoc])* $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The one spelling (database, JSON, events).
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        /// Exact spelling only; anything else is an [`UnknownValue`].
        impl std::str::FromStr for $name {
            type Err = UnknownValue;

            fn from_str(s: &str) -> Result<Self, UnknownValue> {
                match s {
                    $( $text => Ok($name::$variant), )+
                    _ => Err(UnknownValue { kind: $kind, value: s.to_owned() }),
                }
            }
        }
    };
}

vocabulary! {
    /// Where a turn stands. Only `running` moves, exactly once.
    TurnStatus, "turn status" {
        Running = "running",
        Completed = "completed",
        Failed = "failed",
        Cancelled = "cancelled",
    }
}

vocabulary! {
    /// Where an approval request stands. Only `pending` moves, exactly once.
    ApprovalState, "approval state" {
        Pending = "pending",
        /// A human allowed it (once or for the session).
        Allowed = "allowed",
        /// A human denied it.
        Denied = "denied",
        /// Nobody decided in time, the turn ended or the node restarted: a deny.
        Expired = "expired",
    }
}

vocabulary! {
    /// A human's answer to an approval request.
    Decision, "approval decision" {
        AllowOnce = "allow_once",
        /// Also allow identical requests of the session for a while.
        AllowSession = "allow_session",
        Deny = "deny",
    }
}

vocabulary! {
    /// Where a `clarify` question stands.
    ClarificationState, "clarification state" {
        Pending = "pending",
        Answered = "answered",
        /// Timed out, cancelled or orphaned by a restart.
        Expired = "expired",
    }
}

vocabulary! {
    /// Where a background task stands. Terminal states are reached exactly once.
    TaskStatus, "task status" {
        /// Recorded, waiting for a worker (and for its owner's running caps).
        Queued = "queued",
        /// Claimed by a worker; its instance holds the lease.
        Running = "running",
        Succeeded = "succeeded",
        Failed = "failed",
        Cancelled = "cancelled",
        /// Waiting on something outside the task (e.g. a child's approval).
        Blocked = "blocked",
        /// The instance running it died (lease expired) or stopped.
        Lost = "lost",
    }
}

vocabulary! {
    /// The typed outcome of a tool call (`tool.result`'s `status`).
    ToolStatus, "tool status" {
        Succeeded = "succeeded",
        /// A policy, a guard, a capability or a human refused it.
        Denied = "denied",
        /// The arguments do not fit the tool's schema or rules.
        Invalid = "invalid",
        /// No such tool in the turn's catalog.
        NotFound = "not_found",
        Failed = "failed",
        TimedOut = "timed_out",
        Cancelled = "cancelled",
        /// It may or may not have taken effect.
        Indeterminate = "indeterminate",
    }
}

vocabulary! {
    /// A task's completion notification: whether a completion turn is owed
    /// to its session, and who settled it.
    Completion, "task completion" {
        /// Not asked for.
        None = "none",
        /// Asked for; the task has not ended.
        Wanted = "wanted",
        /// The task ended; a completion turn is owed.
        Pending = "pending",
        /// An instance claimed the delivery and is starting the turn.
        Delivering = "delivering",
        /// The completion turn was started.
        Delivered = "delivered",
        /// `yield_until` returned the final status first (or the owner
        /// cancelled): no turn.
        Consumed = "consumed",
    }
}

impl TurnStatus {
    pub fn is_terminal(self) -> bool {
        self != TurnStatus::Running
    }
}

impl TaskStatus {
    /// No further transition happens.
    pub fn is_terminal(self) -> bool {
        match self {
            TaskStatus::Succeeded
            | TaskStatus::Failed
            | TaskStatus::Cancelled
            | TaskStatus::Lost => true,
            TaskStatus::Queued | TaskStatus::Running | TaskStatus::Blocked => false,
        }
    }

    /// `yield_until` returns (and consumes the completion) on these.
    pub fn settles_wait(self) -> bool {
        self.is_terminal() || self == TaskStatus::Blocked
    }

    /// Holding (or waiting for) a worker.
    pub fn is_active(self) -> bool {
        matches!(self, TaskStatus::Queued | TaskStatus::Running)
    }
}

impl Completion {
    /// The state at creation.
    pub fn at_start(notify: bool) -> Self {
        if notify {
            Completion::Wanted
        } else {
            Completion::None
        }
    }
}

impl Decision {
    /// The state an approval moves to with this decision.
    pub fn state(self) -> ApprovalState {
        match self {
            Decision::AllowOnce | Decision::AllowSession => ApprovalState::Allowed,
            Decision::Deny => ApprovalState::Denied,
        }
    }
}

#[cfg(test)]
#[path = "states_tests.rs"]
mod tests;

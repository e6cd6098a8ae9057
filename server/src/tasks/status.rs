//! The typed states of a task and of its completion notification, as stored.
//! Parsing is strict: an unknown stored value is an error, never a guess.

use serde::Serialize;

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    /// Recorded, waiting for a worker (and for its owner's caps).
    Queued,
    /// Claimed by a worker; its instance holds the lease.
    Running,
    Succeeded,
    Failed,
    Cancelled,
    /// Waiting on something outside the task (e.g. a child's approval).
    Blocked,
    /// Its instance died (the lease expired) or stopped while it ran.
    Lost,
}

impl TaskStatus {
    pub const ALL: [TaskStatus; 7] = [
        TaskStatus::Queued,
        TaskStatus::Running,
        TaskStatus::Succeeded,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
        TaskStatus::Blocked,
        TaskStatus::Lost,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Queued => "queued",
            TaskStatus::Running => "running",
            TaskStatus::Succeeded => "succeeded",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Blocked => "blocked",
            TaskStatus::Lost => "lost",
        }
    }

    /// A stored status; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// No further transition happens.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Succeeded | TaskStatus::Failed | TaskStatus::Cancelled | TaskStatus::Lost
        )
    }

    /// `yield_until` returns (and consumes the completion) on these.
    pub fn settles_wait(self) -> bool {
        self.is_terminal() || self == TaskStatus::Blocked
    }

    /// Still holding (or waiting for) a worker.
    pub fn is_active(self) -> bool {
        matches!(self, TaskStatus::Queued | TaskStatus::Running)
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The completion notification of a task: whether a completion turn is
/// owed to its session, and who settled it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Completion {
    /// No completion turn (not asked for).
    None,
    /// Asked for; the task has not ended yet.
    Wanted,
    /// The task ended; a completion turn is owed.
    Pending,
    /// An instance claimed the delivery and is starting the turn.
    Delivering,
    /// The completion turn was started.
    Delivered,
    /// `yield_until` returned the final status first; no turn.
    Consumed,
}

impl Completion {
    pub const ALL: [Completion; 6] = [
        Completion::None,
        Completion::Wanted,
        Completion::Pending,
        Completion::Delivering,
        Completion::Delivered,
        Completion::Consumed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Completion::None => "none",
            Completion::Wanted => "wanted",
            Completion::Pending => "pending",
            Completion::Delivering => "delivering",
            Completion::Delivered => "delivered",
            Completion::Consumed => "consumed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// The state at creation.
    pub fn at_start(notify: bool) -> Self {
        if notify {
            Completion::Wanted
        } else {
            Completion::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip_and_unknown_values_are_refused() {
        for st in TaskStatus::ALL {
            assert_eq!(TaskStatus::parse(st.as_str()), Some(st));
            assert_eq!(st.to_string(), st.as_str());
        }
        for bad in ["", "RUNNING", "done", "completed", "running ", "unknown"] {
            assert_eq!(TaskStatus::parse(bad), None, "{bad:?}");
        }
        for c in Completion::ALL {
            assert_eq!(Completion::parse(c.as_str()), Some(c));
        }
        assert_eq!(Completion::parse("sent"), None);
    }

    #[test]
    fn terminal_blocked_and_active_are_distinct() {
        use TaskStatus::*;
        let terminal: Vec<_> = TaskStatus::ALL
            .into_iter()
            .filter(|s| s.is_terminal())
            .collect();
        assert_eq!(terminal, [Succeeded, Failed, Cancelled, Lost]);
        assert!(Blocked.settles_wait() && !Blocked.is_terminal());
        assert!(!Running.settles_wait() && !Queued.settles_wait());
        assert!(Queued.is_active() && Running.is_active() && !Blocked.is_active());
        assert_eq!(Completion::at_start(true), Completion::Wanted);
        assert_eq!(Completion::at_start(false), Completion::None);
    }
}

//! Asking the user a question in the middle of a turn.

use futures_util::future::BoxFuture;

use crate::tools::context::CallContext;

/// A user's answer to a clarifying question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Answered(String),
    TimedOut,
    Cancelled,
}

/// Clarifying questions.
pub trait ClarifyHost: Send + Sync {
    /// Ask the user; the turn waits.
    fn clarify<'a>(
        &'a self,
        ctx: &'a CallContext,
        question: &'a str,
        choices: &'a [String],
    ) -> BoxFuture<'a, crate::error::Result<Answer>>;
}

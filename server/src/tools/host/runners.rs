//! The warm runners authored tools run on.

/// Authored-tool runners.
pub trait RunnerHost: Send + Sync {
    /// The warm authored-tool runners (and their per-call timeout).
    fn pool(&self) -> &crate::authored::Runners;
}

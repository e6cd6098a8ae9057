//! The one error of reading a closed vocabulary.

/// A stored or received text that is not one of the known values of a
/// vocabulary enum (state, decision, risk, approval policy, …).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind}: {value:?}")]
pub struct UnknownValue {
    /// What was being read, e.g. `turn status` or `tool risk`.
    pub kind: &'static str,
    /// The rejected text, verbatim.
    pub value: String,
}

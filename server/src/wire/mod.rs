//! The typed vocabulary: every closed set of words the server writes to the
//! database, the API or the event log, as Rust types.
//!
//! - [`states`]: lifecycle states (turns, approvals and their decisions,
//!   clarifications, tasks). Stored text that is not a known value is an
//!   [`UnknownValue`] error (the store reports it as a decode error), never a
//!   default.
//! - [`risk`]: the one [`Risk`] and the one [`ApprovalPolicy`].
//! - [`events`]: every event kind and its payload ([`events::EventPayload`]),
//!   and the event frame ([`events::Event`]); how to add a kind is in its docs.
//!
//! Adding a value to one of these enums is a wire change: every `match` on it
//! is exhaustive (no `_ =>` arms), so the compiler lists what must decide
//! about the new value.

pub mod events;
pub mod outcome;
pub mod tenant_events;
/// [`Risk`] and [`ApprovalPolicy`] are decided on by the pure policy crate,
/// which owns them.
pub use demiurge_policy::risk;
pub mod states;

pub use outcome::ToolOutcome;
pub use risk::{ApprovalPolicy, Risk};
pub use states::{
    ApprovalState, ClarificationState, Completion, Decision, TaskStatus, ToolStatus, TurnStatus,
    UnknownValue,
};

/// What starts a fake-model script written in a turn's input itself
/// (`script:[…]`, CONTRACT.md): the turn plays it, and `evolve_core` passes
/// such a goal to its evolver unframed.
pub const SCRIPT_INPUT_PREFIX: &str = "script:";

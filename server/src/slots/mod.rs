//! Agent slots: the bootstrap, input and output pipeline of a core
//! (`pipelines.yaml`, `<phase>/<id>/slot.yaml` + `module.py`) run around
//! each turn through the warm Python runner of authored tools.
//!
//! What runs in which order is the core's declared pipeline, planned in
//! [`crate::core::pipeline`] (pure, tested beside it); [`run`] executes a
//! planned phase on the runner and folds what the slots asked for (context,
//! deliveries, bootstrap text) into one result the turn applies; [`state`]
//! is what `ctx.state` requests mean (pure).

pub mod run;
/// Pure, so it lives with the other pure decisions.
pub use crate::policy::slot_state as state;

//! Authored tools: `tool.yaml` + Python module folders of a core, called
//! through the one dispatcher like every other tool. The dispatcher has
//! already required the singular `capability` (granted by the core for the
//! tool's path, never by the tool's own `capabilities` list) before
//! [`crate::tools::authored::AuthoredCall`] plans; the call then passes the entry's approval (risk
//! and policy after core metadata and the core/global approval blocks; a
//! bounded, redacted argument preview), and only then is the module
//! imported — in a confined runner ([`runner`]), speaking [`protocol`].

pub mod http;
pub mod protocol;
pub mod runner;

pub use runner::{HostAnswer, HostAsk, Runners, SlotRun};

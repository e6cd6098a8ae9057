//! A call's live output: what a running tool prints, delivered to the
//! session as it happens.

use crate::tools::contract::ToolEnv;

/// Live delivery of a call's output.
pub trait OutputHost: Send + Sync {
    /// Best-effort live output of this call as `tool.output` events,
    /// redacted line by line.
    fn output_sink(&self, call: &ToolEnv<'_>) -> tokio::sync::mpsc::Sender<(&'static str, String)>;
}

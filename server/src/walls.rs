//! The walls every effect of a tenant stays inside: the child-process
//! sandbox, the file tools' reach, the terminal's network, the storage
//! quota and the one outbound HTTP client. Built once at start-up and
//! shared by the tools, the core repository (its `git` runs confined) and
//! the MCP connections; it holds settings and effect gates only, so
//! anything above the effects floor may take it. The warm authored-tool
//! runners ([`crate::authored::Runners`]) are held beside the walls, not in
//! them: they run a core's code, the walls only confine it.

use std::sync::Arc;

/// The walls every effect of a tenant stays inside: the child-process
/// sandbox, the file tools' reach and the terminal's network.
#[derive(Debug)]
pub struct Walls {
    pub sandbox: crate::exec::sandbox::Sandbox,
    pub files: crate::policy::file_walls::FileWalls,
    /// `--terminal-network`: `false` cuts the network of terminal commands.
    pub terminal_network: bool,
    /// Bytes of command output (artifacts, task logs) per command and tenant.
    pub quota: Arc<crate::exec::StorageQuota>,
    /// The one outbound HTTP client (URL policy, `--url-allow`, pinning).
    pub outbound: crate::net::Outbound,
    /// `--mcp-idle-timeout`: an MCP connection unused this long is closed.
    pub mcp_idle_timeout: std::time::Duration,
    /// Tenants' credentials, opened only into an outgoing request that
    /// names one (`None` where nothing is sealed: tool unit tests).
    pub credentials: Option<crate::sealing::Credentials>,
}

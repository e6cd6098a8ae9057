//! MCP servers declared by Agent Cores (`agent/mcp/<server_id>.yaml`).
//!
//! This room owns the declarations ([`manifest`]: the original's format,
//! validation, tool filter, exposed names, fingerprints) and what operators
//! and `GET /v1/sessions/{id}/tools` see of each declared server
//! ([`ServerStatus`]).
//!
//! Not here yet: the client. No MCP server is started or connected by this
//! host; every valid, enabled declaration is reported `unavailable` with
//! that reason instead of being dropped silently. The connection layer
//! (rmcp over stdio through `exec::sandbox`, and Streamable HTTP through
//! [`crate::net::Outbound::pinned_client`]) joins here.

pub mod manifest;

use serde::Serialize;
use serde_yaml_ng::Value;

use manifest::ServerManifest;

/// Why a valid, enabled server has no tools on this host.
pub const NO_CLIENT: &str = "this host does not connect MCP servers yet";

/// A declared server's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerState {
    /// `enabled: false`.
    Disabled,
    /// The declaration does not validate (`last_error` says why).
    Invalid,
    /// Valid and enabled, but not connected (`last_error` says why).
    Unavailable,
}

/// What operators see of one declared server: never an env or header value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerStatus {
    pub server: String,
    /// The core-relative file.
    pub manifest: String,
    pub transport: Option<&'static str>,
    pub state: ServerState,
    pub last_error: Option<String>,
    /// The capability a connection needs (`mcp.connect:<server>`).
    pub connect_capability: String,
    /// The capability each call needs.
    pub call_capability: Option<String>,
    /// Identity of the declaration (a change means a new connection).
    pub fingerprint: String,
}

/// The status of every declared server, in the loader's order.
pub fn statuses<'a>(
    declared: impl IntoIterator<Item = (&'a str, &'a str, &'a Value)>,
) -> Vec<ServerStatus> {
    declared
        .into_iter()
        .map(|(server, path, raw)| {
            let fingerprint = manifest::fingerprint(server, raw);
            let connect_capability = ServerManifest::connect_capability(server);
            match ServerManifest::parse(raw) {
                Err(e) => ServerStatus {
                    server: server.to_owned(),
                    manifest: path.to_owned(),
                    transport: None,
                    state: ServerState::Invalid,
                    last_error: Some(e),
                    connect_capability,
                    call_capability: None,
                    fingerprint,
                },
                Ok(m) => ServerStatus {
                    server: server.to_owned(),
                    manifest: path.to_owned(),
                    transport: Some(m.transport.as_str()),
                    state: if m.enabled {
                        ServerState::Unavailable
                    } else {
                        ServerState::Disabled
                    },
                    last_error: m.enabled.then(|| NO_CLIENT.to_owned()),
                    call_capability: Some(m.call_capability(server)),
                    connect_capability,
                    fingerprint,
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_declaration_is_reported_never_dropped() {
        let ok: Value =
            serde_yaml_ng::from_str("command: uvx\nenv: {TOKEN: sk-live-123}\n").unwrap();
        let off: Value = serde_yaml_ng::from_str("enabled: false\ncommand: x\n").unwrap();
        let bad: Value = serde_yaml_ng::from_str("transport: streamable_http\n").unwrap();
        let list = statuses([
            ("time", "agent/mcp/time.yaml", &ok),
            ("old", "agent/mcp/old.yaml", &off),
            ("web", "agent/mcp/web.yaml", &bad),
        ]);
        let states: Vec<ServerState> = list.iter().map(|s| s.state).collect();
        assert_eq!(
            states,
            [
                ServerState::Unavailable,
                ServerState::Disabled,
                ServerState::Invalid
            ]
        );
        assert_eq!(list[0].last_error.as_deref(), Some(NO_CLIENT));
        assert_eq!(list[0].transport, Some("stdio"));
        assert_eq!(list[0].call_capability.as_deref(), Some("mcp.call:time"));
        assert_eq!(list[0].connect_capability, "mcp.connect:time");
        assert_eq!(list[1].last_error, None);
        assert!(list[2]
            .last_error
            .as_deref()
            .unwrap()
            .contains("requires url"));
        let shown = serde_json::to_string(&list).unwrap();
        assert!(!shown.contains("sk-live-123"), "{shown}");
    }
}

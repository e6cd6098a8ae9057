//! MCP servers declared by Agent Cores (`agent/mcp/<server_id>.yaml`).
//!
//! This room owns the declarations ([`manifest`]: the original's format,
//! validation, tool filter, exposed names, fingerprints) and what operators
//! and `GET /v1/sessions/{id}/tools` see of each declared server
//! ([`ServerStatus`]).
//!
//! The live connections are [`runtime`]'s (stdio servers confined like the
//! terminal; Streamable HTTP through the pinned outbound client, [`http`]);
//! the dispatcher decides who may connect and call. A valid, enabled
//! declaration that is not connected is reported `unavailable` with the
//! reason, never dropped.

pub mod http;
pub mod manifest;
pub mod runtime;

use serde::Serialize;
use serde_yaml_ng::Value;

use manifest::ServerManifest;

/// Identity of one connection: a change of any part is another connection.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConnKey {
    pub tenant: String,
    pub principal: String,
    pub core: String,
    /// The core's revision (its catalog fingerprint).
    pub revision: String,
    pub server: String,
    /// The declaration's fingerprint.
    pub fingerprint: String,
}

impl ConnKey {
    /// Whether `other` belongs to the same (tenant, principal, core).
    pub(crate) fn same_owner(&self, other: &ConnKey) -> bool {
        self.tenant == other.tenant && self.principal == other.principal && self.core == other.core
    }
}

/// Why a valid, enabled server has no tools on this host.
pub const NO_CLIENT: &str =
    "MCP server not connected: a turn connects it once mcp.connect:<server> is granted and approved";

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
    /// Connected; its tools are in the catalog.
    Connected,
}

/// What operators see of one declared server: never an env or header value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
    /// Tools the connection offers (after the filter), when connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<usize>,
}

/// One declared server: what operators see, and the validated manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct Declared {
    pub status: ServerStatus,
    pub manifest: Option<ServerManifest>,
}

/// Every declared server with its manifest, in the loader's order.
pub fn declarations<'a>(
    declared: impl IntoIterator<Item = (&'a str, &'a str, &'a Value)>,
) -> Vec<Declared> {
    declared
        .into_iter()
        .filter_map(|(server, path, raw)| {
            let status = statuses([(server, path, raw)]).into_iter().next()?;
            Some(Declared {
                status,
                manifest: ServerManifest::parse(raw).ok(),
            })
        })
        .collect()
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
                    tools: None,
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
                    tools: None,
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

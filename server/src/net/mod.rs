//! The network edge of the URL policy: DNS resolution and the one outbound
//! HTTP client for everything a tenant drives ([`outbound::Outbound`]):
//! `web_extract`, MCP servers over Streamable HTTP, and replies to URLs a
//! tenant configured (channel callbacks). [`crate::policy::url_policy`]
//! decides, purely; this room resolves, connects and records.
//!
//! # Using the client (for every tenant-set URL)
//!
//! The server builds one [`Outbound`] at start from `--url-allow` and hands
//! it down (it sits in the tool walls, [`crate::tools::contract::Walls`]).
//! Cloning is cheap. Never build a `reqwest::Client` of your own for a URL a
//! tenant or a model chose.
//!
//! - [`Outbound::precheck`]: pure, no DNS: the syntactic policy, refusals by
//!   name (`localhost`, metadata hostnames) and literal addresses. For
//!   validating a URL when it is configured, and before an approval.
//! - [`Outbound::check`]: the policy with real DNS; a [`UrlVerdict`].
//! - [`Outbound::send`]: one request ([`OutboundRequest`]), every hop
//!   resolved, judged and pinned, bounded in time and size; the answer
//!   ([`OutboundResponse`]) carries the final verdict and every decision.
//! - [`Outbound::pinned_client`]: a `reqwest::Client` that can reach only the
//!   validated addresses of one origin, with redirects off, for protocols
//!   that drive their own requests (MCP Streamable HTTP).
//!
//! Every decision is logged as a `url_decision` (origin, addresses, verdict:
//! never a path, query or credential) and returned to the caller, who puts
//! it in its result.

pub mod outbound;

pub use outbound::{
    DnsSettings, Limits, Outbound, OutboundError, OutboundErrorKind, OutboundRequest,
    OutboundResponse, OutboundSettings,
};

use crate::policy::url_policy::UrlVerdict;

/// The URL policy with real DNS, as a fetch would see it
/// (`demiurge check url`), honouring the operator's allowance.
pub async fn check_url(raw: &str, allow: Vec<ipnet::IpNet>) -> UrlVerdict {
    let outbound = Outbound::new(OutboundSettings {
        allow,
        ..OutboundSettings::default()
    });
    outbound.check(raw).await
}

//! The network edge of the URL policy: DNS resolution and the one outbound
//! HTTP client for everything a tenant drives ([`outbound::Outbound`]):
//! `web_extract`, MCP servers over Streamable HTTP, and replies to URLs a
//! tenant configured (channel callbacks). [`crate::policy::url_policy`]
//! decides, purely; this room resolves, connects and records.
//!
//! # Using the client (for every tenant-set URL)
//!
//! The server builds one [`Outbound`] at start from `--url-allow` and hands
//! it down: it sits in the tool walls ([`crate::walls::Walls`]),
//! so tools use `env.walls.outbound` and the rest of the server
//! `app.walls.outbound`. Cloning is cheap. Never build a `reqwest::Client` of your own for a URL a
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

/// A `reqwest` client builder with TLS ready: every client in the process
/// (the outbound one, model providers) starts here.
///
/// reqwest is built without a bundled crypto provider (its default would be
/// aws-lc-rs, a large C build), and panics when building a client before
/// one is installed; this installs rustls's ring provider once first.
pub fn client_builder() -> reqwest::ClientBuilder {
    install_tls_provider();
    reqwest::Client::builder()
}

/// Install rustls's ring provider as the process default (idempotent).
/// Test and bench programs that build their own `reqwest` clients call it.
pub fn install_tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err means another provider is already the default: that one serves.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The URL policy with real DNS, as a fetch would see it
/// (`demiurge check url`), honouring the operator's allowance.
pub async fn check_url(raw: &str, allow: Vec<ipnet::IpNet>) -> UrlVerdict {
    let outbound = Outbound::new(OutboundSettings {
        allow,
        ..OutboundSettings::default()
    });
    outbound.check(raw).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The TLS stack is wired: a client builds (provider and platform
    /// verifier in place) and a TLS handshake with a peer that does not
    /// speak TLS fails as an error, not a panic.
    #[tokio::test]
    async fn clients_build_and_tls_failures_are_errors() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            while let Ok((mut s, _)) = listener.accept().await {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\n\r\nplain").await;
            }
        });
        let client = client_builder().build().unwrap();
        let e = client
            .get(format!("https://{addr}/"))
            .send()
            .await
            .unwrap_err();
        assert!(e.is_connect(), "{e:?}");
        // Installing again is harmless.
        install_tls_provider();
        assert!(client_builder().build().is_ok());
    }
}

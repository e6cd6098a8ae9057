//! The outbound HTTP client: DNS through `hickory-resolver`, every answer
//! judged by [`crate::policy::url_policy`] (plus the operator's
//! `--url-allow`), the connection pinned to the judged addresses while the
//! `Host` header and TLS SNI keep the name (reqwest's per-name override,
//! with a resolver that refuses every other name), each redirect hop judged
//! afresh, no proxy, time and size bounded.
//!
//! Why a client is built per hop: the pinning is a property of the client
//! (`resolve_to_addrs`), and a shared client would resolve again on its own
//! between our check and its connect (DNS rebinding). Building one does no
//! I/O (the TLS roots are compiled in), so it is small next to the round
//! trip it serves; connections are not pooled across requests.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use hickory_resolver::config::{
    ConnectionConfig, LookupIpStrategy, NameServerConfig, ResolveHosts, ResolverConfig,
};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::TokioResolver;
use ipnet::IpNet;
use reqwest::header::{HeaderMap, HeaderName, LOCATION};
use reqwest::{Method, StatusCode};
use url::Url;

use crate::policy::url_policy::{decide_with, parse_target, ParsedTarget, UrlVerdict};

/// Where names are resolved.
#[derive(Debug, Clone, Default)]
pub enum DnsSettings {
    /// The machine's resolver configuration (`/etc/resolv.conf`, hosts file).
    #[default]
    System,
    /// These name servers only (UDP and TCP), no hosts file: for tests and
    /// for operators who pin the resolver.
    Servers(Vec<SocketAddr>),
}

/// What the client is built from.
#[derive(Debug, Clone)]
pub struct OutboundSettings {
    /// `--url-allow`: networks the policy would refuse that the operator allows.
    pub allow: Vec<IpNet>,
    pub dns: DnsSettings,
    pub user_agent: String,
}

impl Default for OutboundSettings {
    fn default() -> Self {
        Self {
            allow: Vec::new(),
            dns: DnsSettings::System,
            user_agent: concat!("demiurge/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

/// Bounds of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The whole exchange: every lookup, connect, redirect and the body.
    pub timeout: Duration,
    /// Body bytes kept; the rest is not read (`truncated`).
    pub max_bytes: usize,
    /// Redirects followed (each judged afresh); one more is an error.
    pub max_redirects: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(20),
            max_bytes: 2 * 1024 * 1024,
            max_redirects: 5,
        }
    }
}

/// One request through the policy.
#[derive(Debug, Clone)]
pub struct OutboundRequest {
    pub method: Method,
    pub url: String,
    /// Sent on the first origin only: a redirect to another origin keeps
    /// just the content headers (never `Authorization` or cookies).
    pub headers: HeaderMap,
    pub body: Option<Vec<u8>>,
    pub limits: Limits,
}

impl OutboundRequest {
    pub fn get(url: impl Into<String>, limits: Limits) -> Self {
        Self {
            method: Method::GET,
            url: url.into(),
            headers: HeaderMap::new(),
            body: None,
            limits,
        }
    }

    pub fn post_json(url: impl Into<String>, body: &serde_json::Value, limits: Limits) -> Self {
        let mut headers = HeaderMap::new();
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            reqwest::header::HeaderValue::from_static("application/json"),
        );
        Self {
            method: Method::POST,
            url: url.into(),
            headers,
            body: Some(body.to_string().into_bytes()),
            limits,
        }
    }
}

/// The answer of the last hop.
#[derive(Debug, Clone)]
pub struct OutboundResponse {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
    /// The body was longer than `max_bytes`.
    pub truncated: bool,
    /// The verdict of the hop that answered: its safe origin and addresses.
    pub verdict: UrlVerdict,
    /// Every hop's verdict, in order.
    pub decisions: Vec<UrlVerdict>,
}

impl OutboundResponse {
    pub fn content_type(&self) -> Option<&str> {
        self.headers
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
    }
}

/// Why a request did not complete, with the decisions made until then.
#[derive(Debug, thiserror::Error)]
#[error("{kind}")]
pub struct OutboundError {
    pub kind: OutboundErrorKind,
    pub decisions: Vec<UrlVerdict>,
}

#[derive(Debug, thiserror::Error)]
pub enum OutboundErrorKind {
    /// The policy refused a hop (the first, or a redirect).
    #[error("URL blocked by Host policy: {}", .0.reason)]
    Blocked(UrlVerdict),
    #[error("timed out after {0:?}")]
    TimedOut(Duration),
    #[error("more than {0} redirects")]
    TooManyRedirects(usize),
    #[error("redirect with an unusable Location")]
    BadRedirect,
    /// Connection, TLS or protocol failure; never carries the URL.
    #[error("{0}")]
    Request(String),
}

/// The one outbound client. Cheap to clone.
#[derive(Clone)]
pub struct Outbound {
    inner: Arc<Inner>,
}

struct Inner {
    /// `Err` when the resolver could not be configured: every lookup fails
    /// (closed), with this reason in the log.
    resolver: Result<TokioResolver, String>,
    allow: Vec<IpNet>,
    user_agent: String,
}

impl std::fmt::Debug for Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbound")
            .field("allow", &self.inner.allow)
            .field("resolver", &self.inner.resolver.as_ref().err())
            .finish()
    }
}

/// Headers that follow a redirect to another origin.
const CROSS_ORIGIN_HEADERS: &[&str] = &["accept", "accept-language", "content-type"];

impl Outbound {
    pub fn new(settings: OutboundSettings) -> Self {
        let resolver = build_resolver(&settings.dns);
        if let Err(e) = &resolver {
            tracing::warn!(error = %e, "no DNS resolver: every outbound lookup will fail");
        }
        Self {
            inner: Arc::new(Inner {
                resolver,
                allow: settings.allow,
                user_agent: settings.user_agent,
            }),
        }
    }

    /// The operator's allowance (`--url-allow`).
    pub fn allow(&self) -> &[IpNet] {
        &self.inner.allow
    }

    /// Pure, no DNS: the syntactic policy, refusals by name, and the
    /// judgement of a literal address. `Ok` means "resolve and judge
    /// again before connecting"; `Err` is the refusal.
    pub fn precheck(&self, raw: &str) -> Result<ParsedTarget, UrlVerdict> {
        let target = parse_target(raw)?;
        if let Some(ip) = target.literal_ip() {
            let verdict = decide_with(&target, Ok(&[ip]), &self.inner.allow);
            if !verdict.allowed {
                return Err(verdict);
            }
        }
        Ok(target)
    }

    /// The policy with real DNS. Recorded as a `url_decision`.
    pub async fn check(&self, raw: &str) -> UrlVerdict {
        let verdict = match self.judge(raw).await {
            Ok((_, verdict)) | Err(verdict) => verdict,
        };
        record(&verdict);
        verdict
    }

    /// Resolve (unless literal) and judge; `Ok` carries the target and the
    /// allowed verdict whose addresses are the ones to connect to.
    async fn judge(&self, raw: &str) -> Result<(ParsedTarget, UrlVerdict), UrlVerdict> {
        let target = parse_target(raw)?;
        let verdict = match target.literal_ip() {
            Some(ip) => decide_with(&target, Ok(&[ip]), &self.inner.allow),
            None => {
                let answer = self.lookup(target.host()).await;
                decide_with(
                    &target,
                    answer.as_deref().map_err(|_| ()),
                    &self.inner.allow,
                )
            }
        };
        if verdict.allowed {
            Ok((target, verdict))
        } else {
            Err(verdict)
        }
    }

    async fn lookup(&self, host: &str) -> Result<Vec<IpAddr>, ()> {
        let resolver = self.inner.resolver.as_ref().map_err(|_| ())?;
        // A trailing dot makes the name absolute: no search-domain guesses.
        match resolver.lookup_ip(format!("{host}.")).await {
            Ok(found) => Ok(found.iter().collect()),
            Err(e) => {
                tracing::debug!(error = %e, "outbound DNS lookup failed");
                Err(())
            }
        }
    }

    /// A client that reaches only the validated addresses of `raw`'s
    /// origin, redirects off: for protocols that make their own requests
    /// to one endpoint (MCP Streamable HTTP). Judge again (call this again)
    /// when reconnecting after a while.
    pub async fn pinned_client(
        &self,
        raw: &str,
        timeout: Duration,
    ) -> Result<(reqwest::Client, UrlVerdict), OutboundError> {
        let judged = self.judge(raw).await;
        let verdict = match &judged {
            Ok((_, v)) | Err(v) => v.clone(),
        };
        record(&verdict);
        let (target, verdict) = judged.map_err(|v| OutboundError {
            kind: OutboundErrorKind::Blocked(v.clone()),
            decisions: vec![v],
        })?;
        let client = self
            .client_for(&target, &verdict, timeout)
            .map_err(|e| OutboundError {
                kind: OutboundErrorKind::Request(describe(&e)),
                decisions: vec![verdict.clone()],
            })?;
        Ok((client, verdict))
    }

    fn client_for(
        &self,
        target: &ParsedTarget,
        verdict: &UrlVerdict,
        timeout: Duration,
    ) -> reqwest::Result<reqwest::Client> {
        let mut builder = crate::net::client_builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(NoOtherNames))
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .user_agent(self.inner.user_agent.clone());
        if target.literal_ip().is_none() {
            let sockets: Vec<SocketAddr> = verdict
                .addresses
                .iter()
                .filter_map(|a| a.parse::<IpAddr>().ok())
                .map(|ip| SocketAddr::new(ip, target.port()))
                .collect();
            builder = builder
                .resolve_to_addrs(target.host(), &sockets)
                .resolve_to_addrs(&format!("{}.", target.host()), &sockets);
        }
        builder.build()
    }

    /// One request: every hop resolved, judged, pinned; bounded by
    /// `limits`. A refusal at any hop is [`OutboundErrorKind::Blocked`].
    pub async fn send(&self, request: OutboundRequest) -> Result<OutboundResponse, OutboundError> {
        let limits = request.limits;
        let mut decisions = Vec::new();
        let outcome =
            tokio::time::timeout(limits.timeout, self.send_hops(request, &mut decisions)).await;
        match outcome {
            Ok(Ok((response, truncated, body))) => {
                let verdict = decisions.last().cloned().unwrap_or_else(|| UrlVerdict {
                    allowed: true,
                    reason: crate::policy::url_policy::reason::OK.to_owned(),
                    origin: String::new(),
                    addresses: Vec::new(),
                });
                Ok(OutboundResponse {
                    status: response.status.as_u16(),
                    headers: response.headers,
                    body,
                    truncated,
                    verdict,
                    decisions,
                })
            }
            Ok(Err(kind)) => Err(OutboundError { kind, decisions }),
            Err(_) => Err(OutboundError {
                kind: OutboundErrorKind::TimedOut(limits.timeout),
                decisions,
            }),
        }
    }

    async fn send_hops(
        &self,
        request: OutboundRequest,
        decisions: &mut Vec<UrlVerdict>,
    ) -> Result<(Head, bool, Vec<u8>), OutboundErrorKind> {
        let OutboundRequest {
            mut method,
            url,
            mut headers,
            mut body,
            limits,
        } = request;
        let mut url = url.trim().to_owned();
        let mut first_origin: Option<String> = None;
        for hop in 0..=limits.max_redirects {
            let judged = self.judge(&url).await;
            let verdict = match &judged {
                Ok((_, v)) | Err(v) => v.clone(),
            };
            record(&verdict);
            decisions.push(verdict.clone());
            let (target, verdict) = judged.map_err(OutboundErrorKind::Blocked)?;
            match &first_origin {
                None => first_origin = Some(verdict.origin.clone()),
                Some(origin) if *origin != verdict.origin => {
                    headers.retain_names(CROSS_ORIGIN_HEADERS);
                }
                Some(_) => {}
            }
            let client = self
                .client_for(&target, &verdict, limits.timeout)
                .map_err(|e| OutboundErrorKind::Request(describe(&e)))?;
            let mut builder = client
                .request(method.clone(), &url)
                .headers(headers.clone());
            if let Some(bytes) = &body {
                builder = builder.body(bytes.clone());
            }
            let mut response = builder
                .send()
                .await
                .map_err(|e| OutboundErrorKind::Request(describe(&e)))?;
            let status = response.status();
            if status.is_redirection() {
                if let Some(location) = response.headers().get(LOCATION) {
                    if hop == limits.max_redirects {
                        return Err(OutboundErrorKind::TooManyRedirects(limits.max_redirects));
                    }
                    let location = location
                        .to_str()
                        .map_err(|_| OutboundErrorKind::BadRedirect)?;
                    let next = Url::parse(&url)
                        .and_then(|base| base.join(location))
                        .map_err(|_| OutboundErrorKind::BadRedirect)?;
                    url = next.to_string();
                    if redirect_becomes_get(status, &method) {
                        method = Method::GET;
                        body = None;
                        headers.remove(reqwest::header::CONTENT_TYPE);
                    }
                    continue;
                }
            }
            let head = Head {
                status,
                headers: response.headers().clone(),
            };
            let mut kept = Vec::new();
            let mut truncated = false;
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| OutboundErrorKind::Request(describe(&e)))?
            {
                // Fetched bytes are the calling tool's usage.
                crate::usage::Tally::add_outbound_bytes(chunk.len() as u64);
                let room = limits.max_bytes.saturating_sub(kept.len());
                if chunk.len() > room {
                    kept.extend_from_slice(&chunk[..room]);
                    truncated = true;
                    break;
                }
                kept.extend_from_slice(&chunk);
            }
            return Ok((head, truncated, kept));
        }
        Err(OutboundErrorKind::TooManyRedirects(limits.max_redirects))
    }
}

struct Head {
    status: StatusCode,
    headers: HeaderMap,
}

/// The Fetch standard's rule: 303 turns anything but HEAD into GET; 301
/// and 302 turn POST into GET; 307 and 308 keep method and body.
fn redirect_becomes_get(status: StatusCode, method: &Method) -> bool {
    match status {
        StatusCode::SEE_OTHER => *method != Method::HEAD,
        StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND => *method == Method::POST,
        _ => false,
    }
}

/// Keep only the named headers.
trait RetainNames {
    fn retain_names(&mut self, keep: &[&str]);
}

impl RetainNames for HeaderMap {
    fn retain_names(&mut self, keep: &[&str]) {
        let drop: Vec<HeaderName> = self
            .keys()
            .filter(|name| !keep.contains(&name.as_str()))
            .cloned()
            .collect();
        for name in drop {
            self.remove(name);
        }
    }
}

/// A reqwest error without its URL (which may hold a query or credentials).
fn describe(e: &reqwest::Error) -> String {
    use std::error::Error as _;
    let mut text = if e.is_connect() {
        "connection failed".to_owned()
    } else if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_body() || e.is_decode() {
        "reading the response failed".to_owned()
    } else {
        "request failed".to_owned()
    };
    let mut source = e.source();
    while let Some(inner) = source {
        let part = inner.to_string();
        if !part.is_empty() && !part.contains("://") {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = inner.source();
    }
    text
}

/// Log one decision: origin, addresses and verdict only.
fn record(verdict: &UrlVerdict) {
    tracing::info!(
        target: "url_decision",
        allowed = verdict.allowed,
        reason = %verdict.reason,
        origin = %verdict.origin,
        addresses = ?verdict.addresses,
        "url_decision"
    );
}

fn build_resolver(dns: &DnsSettings) -> Result<TokioResolver, String> {
    let mut builder = match dns {
        DnsSettings::System => {
            TokioResolver::builder_tokio().map_err(|e| format!("system resolver: {e}"))?
        }
        DnsSettings::Servers(servers) => {
            let name_servers = servers
                .iter()
                .map(|s| {
                    let mut udp = ConnectionConfig::udp();
                    udp.port = s.port();
                    let mut tcp = ConnectionConfig::tcp();
                    tcp.port = s.port();
                    NameServerConfig::new(s.ip(), true, vec![udp, tcp])
                })
                .collect();
            let mut builder = TokioResolver::builder_with_config(
                ResolverConfig::from_name_servers(name_servers),
                TokioRuntimeProvider::default(),
            );
            builder.options_mut().use_hosts_file = ResolveHosts::Never;
            builder
        }
    };
    let options = builder.options_mut();
    // Both families at once: every answer is judged, so a bad AAAA next to
    // a good A is a mixed answer, not a detail.
    options.ip_strategy = LookupIpStrategy::Ipv4AndIpv6;
    options.timeout = Duration::from_secs(5);
    options.attempts = 1;
    builder.build().map_err(|e| format!("resolver: {e}"))
}

/// The fallback resolver of pinned clients: any name that is not pinned is
/// refused, so nothing is ever resolved behind the policy's back.
struct NoOtherNames;

impl reqwest::dns::Resolve for NoOtherNames {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let message = format!("{} was not validated by the URL policy", name.as_str());
        Box::pin(async move { Err(message.into()) })
    }
}

#[cfg(test)]
#[path = "outbound_tests.rs"]
mod tests;

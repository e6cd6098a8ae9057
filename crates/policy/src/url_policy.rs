//! Host URL policy: the single, pure decision point shared by `web_extract`,
//! MCP Streamable HTTP and callback URL validation.
//!
//! This module owns:
//! * parsing an outbound URL into a [`ParsedTarget`] (http/https only, WHATWG
//!   host parsing, lowercase/IDNA, trailing-dot removal, default ports) and
//!   normalising legacy IPv4 spellings (`2130706433`, `0x7f.1`, `0177.0.0.1`,
//!   `127.1`) to a literal address so they are never handed to a platform
//!   resolver;
//! * refusing blocked hostnames (`localhost`, `*.localhost`, cloud metadata
//!   names) before any DNS happens;
//! * classifying every IP address against the forbidden ranges
//!   ([`classify_ip`]), including IPv6 forms that embed an IPv4 address
//!   (mapped, compatible, SIIT, NAT64, 6to4, Teredo);
//! * the final verdict over a caller-supplied DNS answer ([`decide`]): DNS
//!   failure, empty answers and mixed answers fail closed;
//! * the credential-free origin summary used in approval previews and audit
//!   records ([`origin_summary`]).
//!
//! It performs no I/O. The caller resolves hostnames, calls [`decide`] for the
//! initial URL and again for every redirect hop, and connects only to the
//! addresses in an allowed [`UrlVerdict`], keeping the original host for the
//! `Host` header and TLS SNI. Nothing produced here contains userinfo, path,
//! query or fragment values.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;
use serde::Serialize;
use url::{Host, Url};

/// Placeholder returned by [`origin_summary`] when the input cannot be parsed.
pub const INVALID_URL_SUMMARY: &str = "<invalid-url>";

/// Stable snake_case reason keys carried by [`UrlVerdict::reason`] and
/// returned by [`classify_ip`].
pub mod reason {
    /// Target allowed.
    pub const OK: &str = "ok";
    /// Unparsable URL, bad port, malformed host or malformed legacy IPv4.
    pub const INVALID_URL: &str = "invalid_url";
    /// Scheme other than `http` / `https`.
    pub const SCHEME_NOT_ALLOWED: &str = "scheme_not_allowed";
    /// URL without a host.
    pub const MISSING_HOST: &str = "missing_host";
    /// `localhost`, `*.localhost` and similar loopback names.
    pub const LOCALHOST_HOSTNAME: &str = "localhost_hostname";
    /// Cloud metadata hostnames such as `metadata.google.internal`.
    pub const METADATA_HOSTNAME: &str = "metadata_hostname";
    /// The caller's DNS lookup failed.
    pub const DNS_FAILURE: &str = "dns_failure";
    /// The caller's DNS lookup returned no address.
    pub const DNS_NO_ADDRESSES: &str = "dns_no_addresses";
    /// Some, but not all, DNS answers are forbidden.
    pub const MIXED_ANSWER: &str = "mixed_answer";
    /// 127.0.0.0/8, ::1.
    pub const LOOPBACK: &str = "loopback";
    /// RFC 1918, unique-local fc00::/7, deprecated site-local fec0::/10,
    /// local-use NAT64 64:ff9b:1::/48.
    pub const PRIVATE: &str = "private";
    /// 169.254.0.0/16, fe80::/10.
    pub const LINK_LOCAL: &str = "link_local";
    /// Shared address space 100.64.0.0/10.
    pub const CGNAT: &str = "cgnat";
    /// Well-known cloud metadata endpoints (169.254.169.254, fd00:ec2::254, ...).
    pub const METADATA: &str = "metadata";
    /// 224.0.0.0/4, ff00::/8.
    pub const MULTICAST: &str = "multicast";
    /// 0.0.0.0, ::.
    pub const UNSPECIFIED: &str = "unspecified";
    /// Reserved, special-purpose or unallocated space (0.0.0.0/8, 240.0.0.0/4,
    /// 255.255.255.255, 192.0.0.0/24, ::/8 remainder, 2001::/23, ...).
    pub const RESERVED: &str = "reserved";
    /// 198.18.0.0/15, 2001:2::/48.
    pub const BENCHMARKING: &str = "benchmarking";
    /// 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32, 3fff::/20.
    pub const DOCUMENTATION: &str = "documentation";
}

/// Outcome of the policy for one URL (initial request or redirect hop).
///
/// Safe to log, persist and show to operators: `origin` is
/// `scheme://host[:port]` without userinfo/path/query/fragment, and
/// `addresses` are the (canonical, de-duplicated) addresses that were judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UrlVerdict {
    pub allowed: bool,
    pub reason: String,
    pub origin: String,
    pub addresses: Vec<String>,
}

impl UrlVerdict {
    fn deny(reason: &str, origin: String, addresses: Vec<String>) -> Self {
        Self {
            allowed: false,
            reason: reason.to_owned(),
            origin,
            addresses,
        }
    }
}

/// A URL that passed the syntactic part of the policy. Holds no credential,
/// path, query or fragment. Obtainable only through [`parse_target`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedTarget {
    scheme: &'static str,
    host: String,
    port: u16,
    origin: String,
    literal_ip: Option<IpAddr>,
}

impl ParsedTarget {
    /// Normalised host: lowercase ASCII (IDNA) domain without trailing dot, or
    /// the literal IP address in canonical text form, without brackets.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Effective port (explicit, or 80/443 by scheme).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `scheme://host[:port]`, the port only when not the scheme default.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// `"http"` or `"https"`.
    pub fn scheme(&self) -> &str {
        self.scheme
    }

    /// The literal address when the host is an IP (including normalised
    /// legacy IPv4 spellings); such targets must not be resolved.
    pub fn literal_ip(&self) -> Option<IpAddr> {
        self.literal_ip
    }
}

/// Parses and normalises `raw`, refusing anything that must not reach DNS.
///
/// The error verdict carries the reason and a credential-free origin (or
/// [`INVALID_URL_SUMMARY`]).
pub fn parse_target(raw: &str) -> Result<ParsedTarget, UrlVerdict> {
    let invalid =
        |reason: &str| UrlVerdict::deny(reason, INVALID_URL_SUMMARY.to_owned(), Vec::new());
    let url = Url::parse(raw).map_err(|err| match err {
        url::ParseError::EmptyHost => invalid(reason::MISSING_HOST),
        _ => invalid(reason::INVALID_URL),
    })?;
    let scheme = match url.scheme() {
        "http" => "http",
        "https" => "https",
        _ => {
            return Err(UrlVerdict::deny(
                reason::SCHEME_NOT_ALLOWED,
                foreign_origin(&url),
                Vec::new(),
            ))
        }
    };
    let (host, literal_ip, port) = normalise_http(&url).map_err(invalid)?;
    let origin = render_origin(scheme, &host, literal_ip, port);
    if literal_ip.is_none() {
        if let Some(blocked) = blocked_hostname(&host) {
            return Err(UrlVerdict::deny(blocked, origin, Vec::new()));
        }
    }
    Ok(ParsedTarget {
        scheme,
        host,
        port,
        origin,
        literal_ip,
    })
}

/// Judges `target` against the caller's DNS answer.
///
/// `resolved` is `Err(())` when resolution failed. For literal-IP targets the
/// literal itself is the only answer judged; `resolved` is ignored (callers
/// should pass the literal, and must not resolve it). Every address must pass
/// [`classify_ip`]; one bad address among good ones yields `mixed_answer`.
/// IPv4-mapped answers are reported in their IPv4 form.
pub fn decide(target: &ParsedTarget, resolved: Result<&[IpAddr], ()>) -> UrlVerdict {
    decide_with(target, resolved, &[])
}

/// [`decide`], where addresses inside one of the server operator's `allow`
/// networks (`--url-allow`) pass although their range is forbidden. Refusals
/// by name (metadata hostnames, `localhost`) and DNS failures are never
/// lifted: the allowance is about destinations, and only known ones.
pub fn decide_with(
    target: &ParsedTarget,
    resolved: Result<&[IpAddr], ()>,
    allow: &[IpNet],
) -> UrlVerdict {
    let origin = target.origin.clone();
    let answers: Vec<IpAddr> = match (target.literal_ip, resolved) {
        (Some(ip), _) => vec![ip],
        (None, Ok(list)) => list.to_vec(),
        (None, Err(())) => return UrlVerdict::deny(reason::DNS_FAILURE, origin, Vec::new()),
    };
    let mut canonical: Vec<IpAddr> = Vec::with_capacity(answers.len());
    for ip in answers {
        let ip = ip.to_canonical();
        if !canonical.contains(&ip) {
            canonical.push(ip);
        }
    }
    let addresses: Vec<String> = canonical.iter().map(IpAddr::to_string).collect();
    if canonical.is_empty() {
        return UrlVerdict::deny(reason::DNS_NO_ADDRESSES, origin, addresses);
    }
    let failures: Vec<&'static str> = canonical
        .iter()
        .filter(|ip| !allow.iter().any(|net| net.contains(*ip)))
        .filter_map(|ip| classify_ip(*ip).err())
        .collect();
    match failures.first() {
        None => UrlVerdict {
            allowed: true,
            reason: reason::OK.to_owned(),
            origin,
            addresses,
        },
        Some(first) if failures.len() == canonical.len() => {
            UrlVerdict::deny(first, origin, addresses)
        }
        Some(_) => UrlVerdict::deny(reason::MIXED_ANSWER, origin, addresses),
    }
}

/// Credential-free origin for approval previews: `scheme://host[:port]` with
/// the same normalisation as [`parse_target`] but without applying the
/// policy, `scheme:` for host-less URLs of other schemes, and
/// [`INVALID_URL_SUMMARY`] when unparsable.
pub fn origin_summary(raw: &str) -> String {
    let Ok(url) = Url::parse(raw) else {
        return INVALID_URL_SUMMARY.to_owned();
    };
    let scheme = match url.scheme() {
        "http" => "http",
        "https" => "https",
        _ => return foreign_origin(&url),
    };
    match normalise_http(&url) {
        Ok((host, literal_ip, port)) => render_origin(scheme, &host, literal_ip, port),
        Err(_) => INVALID_URL_SUMMARY.to_owned(),
    }
}

/// Returns `Err(reason)` when `ip` lies in any range outbound requests must not
/// reach. IPv6 addresses embedding an IPv4 address (mapped, compatible, SIIT,
/// NAT64, 6to4, Teredo) are judged by the embedded address as well.
pub fn classify_ip(ip: IpAddr) -> Result<(), &'static str> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

// ---------------------------------------------------------------------------
// Address ranges

const fn v4(a: u8, b: u8, c: u8, d: u8) -> u32 {
    Ipv4Addr::new(a, b, c, d).to_bits()
}

const fn v6(s: [u16; 8]) -> u128 {
    Ipv6Addr::new(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]).to_bits()
}

/// Cloud metadata endpoints (AWS IMDS/ECS/EKS, Azure, GCP, Oracle, Alibaba,
/// Tencent, DigitalOcean, ...). Checked before the generic ranges.
const V4_METADATA: &[u32] = &[
    v4(169, 254, 169, 254),
    v4(169, 254, 170, 2),
    v4(169, 254, 170, 23),
    v4(169, 254, 0, 23),
    v4(100, 100, 100, 200),
    v4(192, 0, 0, 192),
];

/// `(network, prefix length, reason)`, first match wins.
const V4_RANGES: &[(u32, u32, &str)] = &[
    (v4(0, 0, 0, 0), 32, reason::UNSPECIFIED),
    (v4(0, 0, 0, 0), 8, reason::RESERVED),
    (v4(10, 0, 0, 0), 8, reason::PRIVATE),
    (v4(100, 64, 0, 0), 10, reason::CGNAT),
    (v4(127, 0, 0, 0), 8, reason::LOOPBACK),
    (v4(169, 254, 0, 0), 16, reason::LINK_LOCAL),
    (v4(172, 16, 0, 0), 12, reason::PRIVATE),
    (v4(192, 0, 0, 0), 24, reason::RESERVED),
    (v4(192, 0, 2, 0), 24, reason::DOCUMENTATION),
    (v4(192, 88, 99, 0), 24, reason::RESERVED),
    (v4(192, 168, 0, 0), 16, reason::PRIVATE),
    (v4(198, 18, 0, 0), 15, reason::BENCHMARKING),
    (v4(198, 51, 100, 0), 24, reason::DOCUMENTATION),
    (v4(203, 0, 113, 0), 24, reason::DOCUMENTATION),
    (v4(224, 0, 0, 0), 4, reason::MULTICAST),
    (v4(240, 0, 0, 0), 4, reason::RESERVED),
];

const V6_METADATA: &[u128] = &[
    v6([0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254]),
    v6([0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0023]),
    v6([0xfd20, 0x00ce, 0, 0, 0, 0, 0, 0x0254]),
];

/// Plain IPv6 ranges, checked after metadata and the IPv4-embedding forms.
/// Anything outside 2000::/3 that matches nothing here is `reserved`.
const V6_RANGES: &[(u128, u32, &str)] = &[
    (v6([0, 0, 0, 0, 0, 0, 0, 0]), 128, reason::UNSPECIFIED),
    (v6([0, 0, 0, 0, 0, 0, 0, 1]), 128, reason::LOOPBACK),
    (
        v6([0x2001, 0x0002, 0, 0, 0, 0, 0, 0]),
        48,
        reason::BENCHMARKING,
    ),
    (
        v6([0x2001, 0x0db8, 0, 0, 0, 0, 0, 0]),
        32,
        reason::DOCUMENTATION,
    ),
    (v6([0x2001, 0, 0, 0, 0, 0, 0, 0]), 23, reason::RESERVED),
    (v6([0x3fff, 0, 0, 0, 0, 0, 0, 0]), 20, reason::DOCUMENTATION),
    (v6([0xfc00, 0, 0, 0, 0, 0, 0, 0]), 7, reason::PRIVATE),
    (v6([0xfe80, 0, 0, 0, 0, 0, 0, 0]), 10, reason::LINK_LOCAL),
    (v6([0xfec0, 0, 0, 0, 0, 0, 0, 0]), 10, reason::PRIVATE),
    (v6([0xff00, 0, 0, 0, 0, 0, 0, 0]), 8, reason::MULTICAST),
];

const V6_GLOBAL_UNICAST: u128 = v6([0x2000, 0, 0, 0, 0, 0, 0, 0]);

fn in_v4(bits: u32, net: u32, prefix: u32) -> bool {
    let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
    bits & mask == net & mask
}

fn in_v6(bits: u128, net: u128, prefix: u32) -> bool {
    let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
    bits & mask == net & mask
}

fn classify_v4(ip: Ipv4Addr) -> Result<(), &'static str> {
    let bits = ip.to_bits();
    if V4_METADATA.contains(&bits) {
        return Err(reason::METADATA);
    }
    match V4_RANGES
        .iter()
        .find(|(net, prefix, _)| in_v4(bits, *net, *prefix))
    {
        Some((_, _, why)) => Err(why),
        None => Ok(()),
    }
}

/// Judges the IPv4 address embedded in the low 32 bits of `bits`.
fn embedded_low32(bits: u128) -> Result<(), &'static str> {
    // Truncation is the point: the low 32 bits are the embedded address.
    classify_v4(Ipv4Addr::from_bits((bits & 0xffff_ffff) as u32))
}

fn classify_v6(ip: Ipv6Addr) -> Result<(), &'static str> {
    let bits = ip.to_bits();
    if V6_METADATA.contains(&bits) {
        return Err(reason::METADATA);
    }
    // ::ffff:0:0/96 IPv4-mapped, 64:ff9b::/96 NAT64 well-known prefix: these
    // reach exactly the embedded IPv4 address, public embeddings are allowed.
    if in_v6(bits, v6([0, 0, 0, 0, 0, 0xffff, 0, 0]), 96)
        || in_v6(bits, v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0]), 96)
    {
        return embedded_low32(bits);
    }
    // 6to4: 2002:AABB:CCDD::/48 embeds AA.BB.CC.DD.
    if in_v6(bits, v6([0x2002, 0, 0, 0, 0, 0, 0, 0]), 16) {
        // Shift leaves the 32 embedded bits in the low word.
        return classify_v4(Ipv4Addr::from_bits(((bits >> 80) & 0xffff_ffff) as u32));
    }
    // Teredo 2001::/32: server IPv4 in bits 32..64, client IPv4 obfuscated
    // (bit-inverted) in the low 32 bits. Never allowed; report the embedded
    // reason when there is one.
    if in_v6(bits, v6([0x2001, 0, 0, 0, 0, 0, 0, 0]), 32) {
        embedded_low32(!bits)?;
        classify_v4(Ipv4Addr::from_bits(((bits >> 64) & 0xffff_ffff) as u32))?;
        return Err(reason::RESERVED);
    }
    // Local-use NAT64 (RFC 8215), SIIT ::ffff:0:0:0/96 and deprecated
    // IPv4-compatible ::/96 (after :: and ::1) are never allowed; the embedded
    // address gives the more specific reason when it is itself forbidden.
    if in_v6(bits, v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0]), 48) {
        embedded_low32(bits)?;
        return Err(reason::PRIVATE);
    }
    if bits > 1 && (in_v6(bits, v6([0, 0, 0, 0, 0xffff, 0, 0, 0]), 96) || in_v6(bits, 0, 96)) {
        embedded_low32(bits)?;
        return Err(reason::RESERVED);
    }
    if let Some((_, _, why)) = V6_RANGES
        .iter()
        .find(|(net, prefix, _)| in_v6(bits, *net, *prefix))
    {
        return Err(why);
    }
    if in_v6(bits, V6_GLOBAL_UNICAST, 3) {
        Ok(())
    } else {
        Err(reason::RESERVED)
    }
}

// ---------------------------------------------------------------------------
// Host normalisation

/// Normalises the host and port of an http(s) URL.
fn normalise_http(url: &Url) -> Result<(String, Option<IpAddr>, u16), &'static str> {
    let port = url.port_or_known_default().ok_or(reason::INVALID_URL)?;
    if port == 0 {
        return Err(reason::INVALID_URL);
    }
    match url.host() {
        None => Err(reason::MISSING_HOST),
        Some(Host::Ipv4(ip)) => Ok((ip.to_string(), Some(IpAddr::V4(ip)), port)),
        Some(Host::Ipv6(ip)) => Ok((ip.to_string(), Some(IpAddr::V6(ip)), port)),
        Some(Host::Domain(domain)) => {
            let domain = domain.trim_end_matches('.').to_ascii_lowercase();
            if domain.is_empty() {
                return Err(reason::MISSING_HOST);
            }
            // The URL parser already turned numeric hosts into IPv4; a numeric
            // last label can only surface here after trailing-dot removal
            // (e.g. `127.0.0.1..`). Parse it ourselves, never resolve it.
            if ends_in_number(&domain) {
                let ip = parse_legacy_ipv4(&domain).ok_or(reason::INVALID_URL)?;
                return Ok((ip.to_string(), Some(IpAddr::V4(ip)), port));
            }
            if !valid_dns_name(&domain) {
                return Err(reason::INVALID_URL);
            }
            Ok((domain, None, port))
        }
    }
}

fn valid_dns_name(domain: &str) -> bool {
    domain.len() <= 253
        && domain
            .split('.')
            .all(|label| !label.is_empty() && label.len() <= 63)
}

/// WHATWG "ends in a number": the last label is decimal digits or `0x` hex.
fn ends_in_number(domain: &str) -> bool {
    let last = domain.rsplit('.').next().unwrap_or(domain);
    if !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()) {
        return true;
    }
    match last.strip_prefix("0x") {
        Some(hex) => hex.bytes().all(|b| b.is_ascii_hexdigit()),
        None => false,
    }
}

/// WHATWG IPv4 parser for legacy forms: 1–4 parts, each decimal, `0x` hex or
/// leading-zero octal; the last part fills the remaining bytes.
fn parse_legacy_ipv4(host: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut numbers = Vec::with_capacity(parts.len());
    for part in &parts {
        numbers.push(parse_ipv4_number(part)?);
    }
    let (last, init) = numbers.split_last()?;
    if init.iter().any(|n| *n > 255) {
        return None;
    }
    let last_bits = 8 * (5 - u32::try_from(numbers.len()).ok()?);
    if *last >= 1u64 << last_bits {
        return None;
    }
    let mut value = *last;
    for (i, n) in init.iter().enumerate() {
        value |= n << (8 * (3 - i));
    }
    u32::try_from(value).ok().map(Ipv4Addr::from_bits)
}

fn parse_ipv4_number(part: &str) -> Option<u64> {
    if part.is_empty() {
        return None;
    }
    let (digits, radix) =
        if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            (hex, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (&part[1..], 8)
        } else {
            (part, 10)
        };
    if digits.is_empty() {
        return Some(0);
    }
    // Cap the length so overflow is impossible (and absurd inputs are refused).
    if digits.len() > 16 || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// Hostnames refused before DNS, regardless of what they would resolve to.
fn blocked_hostname(host: &str) -> Option<&'static str> {
    const LOCALHOST: &[&str] = &[
        "localhost",
        "localhost.localdomain",
        "ip6-localhost",
        "ip6-loopback",
    ];
    const METADATA: &[&str] = &[
        "metadata.google.internal",
        "metadata.goog",
        "metadata",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
        "metadata.azure.com",
        "metadata.azure.internal",
        "metadata.packet.net",
        "metadata.platformequinix.com",
    ];
    if LOCALHOST.contains(&host) || host.ends_with(".localhost") {
        return Some(reason::LOCALHOST_HOSTNAME);
    }
    if METADATA.contains(&host) || host.ends_with(".metadata.google.internal") {
        return Some(reason::METADATA_HOSTNAME);
    }
    None
}

fn render_origin(scheme: &str, host: &str, literal_ip: Option<IpAddr>, port: u16) -> String {
    let default_port = if scheme == "https" { 443 } else { 80 };
    let host = match literal_ip {
        Some(IpAddr::V6(_)) => format!("[{host}]"),
        _ => host.to_owned(),
    };
    if port == default_port {
        format!("{scheme}://{host}")
    } else {
        format!("{scheme}://{host}:{port}")
    }
}

/// Origin of a non-http(s) URL, for refusal messages: never userinfo/path.
fn foreign_origin(url: &Url) -> String {
    match url.host_str() {
        Some(host) if !host.is_empty() => match url.port() {
            Some(port) => format!("{}://{host}:{port}", url.scheme()),
            None => format!("{}://{host}", url.scheme()),
        },
        _ => format!("{}:", url.scheme()),
    }
}

#[cfg(test)]
#[path = "url_policy_tests.rs"]
mod tests;

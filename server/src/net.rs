//! Network edges of the policies: DNS resolution for the URL policy
//! ([`crate::policy::url_policy`] decides on the answers, purely).

use crate::policy::url_policy::{decide, parse_target, UrlVerdict};

/// The URL policy with real DNS, as a fetch would see it.
pub async fn check_url(raw: &str) -> UrlVerdict {
    let target = match parse_target(raw) {
        Ok(t) => t,
        Err(v) => return v,
    };
    if let Some(ip) = target.literal_ip() {
        return decide(&target, Ok(&[ip]));
    }
    let host = target.host().to_owned();
    let resolved: Result<Vec<std::net::IpAddr>, ()> =
        match tokio::net::lookup_host((host.as_str(), target.port())).await {
            Ok(addrs) => Ok(addrs.map(|a| a.ip()).collect()),
            Err(_) => Err(()),
        };
    match resolved {
        Ok(ips) => decide(&target, Ok(&ips)),
        Err(()) => decide(&target, Err(())),
    }
}

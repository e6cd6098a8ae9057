//! `--url-allow`: address ranges the server operator lets outbound requests
//! reach although the URL policy would refuse them (a self-hosted gateway on
//! a private network, a local stand-in in tests). Pure: parse and match.

use std::net::IpAddr;

/// One `ADDR/PREFIX` range (a bare address is a single host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    net: IpAddr,
    prefix: u8,
}

impl Cidr {
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let net: IpAddr = addr
            .parse()
            .map_err(|_| format!("{addr:?} is not an IP address"))?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("prefix {p:?} is not between 0 and {max}"))?,
        };
        Ok(Self { net, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        // An IPv4-mapped IPv6 address is judged as the IPv4 address it is.
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        match (self.net, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

/// True when every address is inside one of the ranges (and there is at least one).
pub fn all_allowed(ranges: &[Cidr], addresses: &[IpAddr]) -> bool {
    !addresses.is_empty()
        && addresses
            .iter()
            .all(|a| ranges.iter().any(|r| r.contains(*a)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ranges_match_what_they_cover() {
        let cases = [
            ("127.0.0.1", "127.0.0.1", true),
            ("127.0.0.1", "127.0.0.2", false),
            ("127.0.0.0/8", "127.9.9.9", true),
            ("10.1.0.0/16", "10.1.255.1", true),
            ("10.1.0.0/16", "10.2.0.1", false),
            ("0.0.0.0/0", "8.8.8.8", true),
            ("127.0.0.1/32", "::ffff:127.0.0.1", true),
            ("::1", "::1", true),
            ("fd00::/8", "fd12::1", true),
            ("fd00::/8", "fe80::1", false),
            ("::1", "127.0.0.1", false),
        ];
        for (range, addr, want) in cases {
            let c = Cidr::parse(range).unwrap();
            assert_eq!(c.contains(ip(addr)), want, "{range} {addr}");
        }
    }

    #[test]
    fn bad_ranges_are_named() {
        for bad in ["", "x", "10.0.0.0/33", "::/129", "10.0.0.0/-1", "10.0.0/8"] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_address_must_be_allowed() {
        let r = [Cidr::parse("127.0.0.1").unwrap()];
        assert!(all_allowed(&r, &[ip("127.0.0.1")]));
        assert!(!all_allowed(&r, &[ip("127.0.0.1"), ip("10.0.0.1")]));
        assert!(!all_allowed(&r, &[]));
    }
}

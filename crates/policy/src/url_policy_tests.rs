use super::*;

use std::net::{IpAddr, Ipv4Addr};

fn ip(s: &str) -> IpAddr {
    s.parse()
        .unwrap_or_else(|e| panic!("bad test address {s}: {e}"))
}

/// Full pipeline for one URL and one DNS answer (`None` = DNS failure).
fn evaluate(raw: &str, answer: Option<&[&str]>) -> UrlVerdict {
    match parse_target(raw) {
        Err(verdict) => verdict,
        Ok(target) => {
            let parsed: Option<Vec<IpAddr>> = answer.map(|a| a.iter().map(|s| ip(s)).collect());
            match (&parsed, target.literal_ip()) {
                (_, Some(lit)) => decide(&target, Ok(&[lit])),
                (Some(list), None) => decide(&target, Ok(list)),
                (None, None) => decide(&target, Err(())),
            }
        }
    }
}

const OK: Option<&str> = None;

// ---------------------------------------------------------------------------
// classify_ip: IPv4

#[test]
fn classify_ipv4_table() {
    let cases: &[(&str, Option<&str>)] = &[
        // public
        ("93.184.216.34", OK),
        ("8.8.8.8", OK),
        ("1.1.1.1", OK),
        ("11.0.0.1", OK),
        ("100.63.255.255", OK),
        ("100.128.0.0", OK),
        ("172.15.255.255", OK),
        ("172.32.0.0", OK),
        ("192.167.255.255", OK),
        ("192.169.0.0", OK),
        ("198.17.255.255", OK),
        ("198.20.0.0", OK),
        ("223.255.255.255", OK),
        ("192.0.3.1", OK),
        ("169.253.255.255", OK),
        // unspecified / this network
        ("0.0.0.0", Some("unspecified")),
        ("0.0.0.1", Some("reserved")),
        ("0.255.255.255", Some("reserved")),
        // loopback
        ("127.0.0.1", Some("loopback")),
        ("127.255.255.254", Some("loopback")),
        ("127.0.1.1", Some("loopback")),
        // private
        ("10.0.0.8", Some("private")),
        ("10.255.255.255", Some("private")),
        ("172.16.0.1", Some("private")),
        ("172.31.255.255", Some("private")),
        ("192.168.0.1", Some("private")),
        ("192.168.255.255", Some("private")),
        // link-local and metadata
        ("169.254.0.1", Some("link_local")),
        ("169.254.255.255", Some("link_local")),
        ("169.254.169.254", Some("metadata")),
        ("169.254.170.2", Some("metadata")),
        ("169.254.170.23", Some("metadata")),
        ("169.254.0.23", Some("metadata")),
        ("100.100.100.200", Some("metadata")),
        ("192.0.0.192", Some("metadata")),
        // CGNAT
        ("100.64.0.1", Some("cgnat")),
        ("100.127.255.255", Some("cgnat")),
        // IETF protocol assignments, 6to4 relay
        ("192.0.0.1", Some("reserved")),
        ("192.0.0.170", Some("reserved")),
        ("192.88.99.1", Some("reserved")),
        // documentation
        ("192.0.2.1", Some("documentation")),
        ("198.51.100.7", Some("documentation")),
        ("203.0.113.255", Some("documentation")),
        // benchmarking
        ("198.18.0.1", Some("benchmarking")),
        ("198.19.255.255", Some("benchmarking")),
        // multicast
        ("224.0.0.1", Some("multicast")),
        ("239.255.255.250", Some("multicast")),
        ("233.252.0.1", Some("multicast")),
        // reserved / broadcast
        ("240.0.0.1", Some("reserved")),
        ("254.255.255.255", Some("reserved")),
        ("255.255.255.255", Some("reserved")),
    ];
    for (addr, want) in cases {
        let got = classify_ip(ip(addr)).err();
        assert_eq!(got, *want, "classify_ip({addr})");
    }
}

// ---------------------------------------------------------------------------
// classify_ip: IPv6

#[test]
fn classify_ipv6_table() {
    let cases: &[(&str, Option<&str>)] = &[
        // public
        ("2606:4700::1111", OK),
        ("2606:2800:220:1:248:1893:25c8:1946", OK),
        ("2001:4860:4860::8888", OK),
        ("2a00:1450:4001:81b::200e", OK),
        ("2001:200::1", OK),
        ("3ffe::1", OK),
        ("3fff:1000::1", OK),
        // plain special ranges
        ("::", Some("unspecified")),
        ("::1", Some("loopback")),
        ("fc00::1", Some("private")),
        ("fd00::1", Some("private")),
        ("fdff:ffff::1", Some("private")),
        ("fec0::1", Some("private")),
        ("fe80::1", Some("link_local")),
        ("febf:ffff::1", Some("link_local")),
        ("ff02::1", Some("multicast")),
        ("ff05::1:3", Some("multicast")),
        ("2001:db8::1", Some("documentation")),
        ("2001:db8:ffff::1", Some("documentation")),
        ("3fff::1", Some("documentation")),
        ("3fff:fff::1", Some("documentation")),
        ("2001:2::1", Some("benchmarking")),
        ("2001:10::1", Some("reserved")),
        ("2001:1::1", Some("reserved")),
        ("100::1", Some("reserved")),
        ("5f00::1", Some("reserved")),
        ("4000::1", Some("reserved")),
        ("::2:0:0:1", Some("reserved")),
        // metadata
        ("fd00:ec2::254", Some("metadata")),
        ("fd00:ec2::23", Some("metadata")),
        ("fd20:ce::254", Some("metadata")),
        // IPv4-mapped
        ("::ffff:127.0.0.1", Some("loopback")),
        ("::ffff:7f00:1", Some("loopback")),
        ("::ffff:10.0.0.1", Some("private")),
        ("::ffff:169.254.169.254", Some("metadata")),
        ("::ffff:100.64.0.1", Some("cgnat")),
        ("::ffff:0.0.0.0", Some("unspecified")),
        ("::ffff:224.0.0.1", Some("multicast")),
        ("::ffff:93.184.216.34", OK),
        // IPv4-compatible (deprecated) and SIIT: never allowed
        ("::127.0.0.1", Some("loopback")),
        ("::10.0.0.1", Some("private")),
        ("::93.184.216.34", Some("reserved")),
        ("::ffff:0:127.0.0.1", Some("loopback")),
        ("::ffff:0:93.184.216.34", Some("reserved")),
        // NAT64 well-known prefix
        ("64:ff9b::127.0.0.1", Some("loopback")),
        ("64:ff9b::a9fe:a9fe", Some("metadata")),
        ("64:ff9b::192.168.1.1", Some("private")),
        ("64:ff9b::93.184.216.34", OK),
        // local-use NAT64
        ("64:ff9b:1::10.0.0.1", Some("private")),
        ("64:ff9b:1::93.184.216.34", Some("private")),
        ("64:ff9b:1::127.0.0.1", Some("loopback")),
        // 6to4
        ("2002:7f00:1::1", Some("loopback")),
        ("2002:a9fe:a9fe::", Some("metadata")),
        ("2002:c0a8:101::1", Some("private")),
        ("2002:6440:1::1", Some("cgnat")),
        ("2002:5db8:d822::1", OK),
        // Teredo: client IPv4 is bit-inverted in the low 32 bits
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", Some("loopback")),
        ("2001:0:7f00:1::a247:27cb", Some("loopback")),
        ("2001:0:4136:e378:8000:63bf:f5ff:fff7", Some("private")),
        ("2001:0:4136:e378:8000:63bf:a247:27cb", Some("reserved")),
    ];
    for (addr, want) in cases {
        let got = classify_ip(ip(addr)).err();
        assert_eq!(got, *want, "classify_ip({addr})");
    }
}

// ---------------------------------------------------------------------------
// parse_target

#[test]
fn parse_target_accepts_and_normalises() {
    // (raw, host, port, origin, literal)
    let cases: &[(&str, &str, u16, &str, Option<&str>)] = &[
        (
            "http://example.com/",
            "example.com",
            80,
            "http://example.com",
            None,
        ),
        (
            "https://example.com",
            "example.com",
            443,
            "https://example.com",
            None,
        ),
        (
            "HTTPS://EXAMPLE.COM:443/A?b#c",
            "example.com",
            443,
            "https://example.com",
            None,
        ),
        (
            "http://example.com:80/",
            "example.com",
            80,
            "http://example.com",
            None,
        ),
        (
            "http://example.com:8080/x",
            "example.com",
            8080,
            "http://example.com:8080",
            None,
        ),
        (
            "https://example.com:80/",
            "example.com",
            80,
            "https://example.com:80",
            None,
        ),
        (
            "http://example.com./",
            "example.com",
            80,
            "http://example.com",
            None,
        ),
        (
            "http://example.com../",
            "example.com",
            80,
            "http://example.com",
            None,
        ),
        (
            "https://user:pw@example.com/x?token=abc",
            "example.com",
            443,
            "https://example.com",
            None,
        ),
        (
            "https://bücher.example./path",
            "xn--bcher-kva.example",
            443,
            "https://xn--bcher-kva.example",
            None,
        ),
        (
            "https:///missing-host",
            "missing-host",
            443,
            "https://missing-host",
            None,
        ),
        (
            "  http://example.com/  ",
            "example.com",
            80,
            "http://example.com",
            None,
        ),
        (
            "http://127.0.0.1.example.com/",
            "127.0.0.1.example.com",
            80,
            "http://127.0.0.1.example.com",
            None,
        ),
        // literals and legacy IPv4 spellings
        (
            "http://93.184.216.34/",
            "93.184.216.34",
            80,
            "http://93.184.216.34",
            Some("93.184.216.34"),
        ),
        (
            "http://2130706433/",
            "127.0.0.1",
            80,
            "http://127.0.0.1",
            Some("127.0.0.1"),
        ),
        (
            "http://0x7f000001/",
            "127.0.0.1",
            80,
            "http://127.0.0.1",
            Some("127.0.0.1"),
        ),
        (
            "http://017700000001/",
            "127.0.0.1",
            80,
            "http://127.0.0.1",
            Some("127.0.0.1"),
        ),
        (
            "http://0x7f.1/",
            "127.0.0.1",
            80,
            "http://127.0.0.1",
            Some("127.0.0.1"),
        ),
        (
            "http://0177.0.0.1/",
            "127.0.0.1",
            80,
            "http://127.0.0.1",
            Some("127.0.0.1"),
        ),
        (
            "http://0x7f.0x0.0x0.0x1/",
            "127.0.0.1",
            80,
            "http://127.0.0.1",
            Some("127.0.0.1"),
        ),
        (
            "http://127.1/",
            "127.0.0.1",
            80,
            "http://127.0.0.1",
            Some("127.0.0.1"),
        ),
        (
            "http://127.0.1/",
            "127.0.0.1",
            80,
            "http://127.0.0.1",
            Some("127.0.0.1"),
        ),
        (
            "http://0/",
            "0.0.0.0",
            80,
            "http://0.0.0.0",
            Some("0.0.0.0"),
        ),
        (
            "http://127.0.0.1./",
            "127.0.0.1",
            80,
            "http://127.0.0.1",
            Some("127.0.0.1"),
        ),
        (
            "http://127.0.0.1../",
            "127.0.0.1",
            80,
            "http://127.0.0.1",
            Some("127.0.0.1"),
        ),
        (
            "http://0x7f.1../",
            "127.0.0.1",
            80,
            "http://127.0.0.1",
            Some("127.0.0.1"),
        ),
        (
            "http://１２７.０.０.１/",
            "127.0.0.1",
            80,
            "http://127.0.0.1",
            Some("127.0.0.1"),
        ),
        (
            "http://user:pw@10.1.2.3:8443/x",
            "10.1.2.3",
            8443,
            "http://10.1.2.3:8443",
            Some("10.1.2.3"),
        ),
        ("http://[::1]/", "::1", 80, "http://[::1]", Some("::1")),
        (
            "https://[2606:4700::1111]:8443/",
            "2606:4700::1111",
            8443,
            "https://[2606:4700::1111]:8443",
            Some("2606:4700::1111"),
        ),
        (
            "http://[::ffff:127.0.0.1]/",
            "::ffff:127.0.0.1",
            80,
            "http://[::ffff:127.0.0.1]",
            Some("::ffff:127.0.0.1"),
        ),
        (
            "http://[::ffff:7f00:1]/",
            "::ffff:127.0.0.1",
            80,
            "http://[::ffff:127.0.0.1]",
            Some("::ffff:127.0.0.1"),
        ),
    ];
    for (raw, host, port, origin, literal) in cases {
        let target = parse_target(raw).unwrap_or_else(|v| panic!("{raw}: refused {v:?}"));
        assert_eq!(target.host(), *host, "host of {raw}");
        assert_eq!(target.port(), *port, "port of {raw}");
        assert_eq!(target.origin(), *origin, "origin of {raw}");
        assert_eq!(target.literal_ip(), literal.map(ip), "literal of {raw}");
        assert!(
            matches!(target.scheme(), "http" | "https"),
            "scheme of {raw}"
        );
    }
}

#[test]
fn parse_target_refusals() {
    // (raw, reason, origin in the refusal)
    let cases: &[(&str, &str, &str)] = &[
        ("file:///etc/passwd", "scheme_not_allowed", "file:"),
        (
            "ftp://user:pw@example.com/x",
            "scheme_not_allowed",
            "ftp://example.com",
        ),
        (
            "gopher://example.com:70/x",
            "scheme_not_allowed",
            "gopher://example.com:70",
        ),
        ("javascript:alert(1)", "scheme_not_allowed", "javascript:"),
        (
            "ws://example.com/",
            "scheme_not_allowed",
            "ws://example.com",
        ),
        ("data:text/plain,hi", "scheme_not_allowed", "data:"),
        ("", "invalid_url", "<invalid-url>"),
        ("example.com", "invalid_url", "<invalid-url>"),
        ("/relative/path", "invalid_url", "<invalid-url>"),
        ("http://", "missing_host", "<invalid-url>"),
        ("http://user:pw@/", "missing_host", "<invalid-url>"),
        ("http://./", "missing_host", "<invalid-url>"),
        (
            "https://public.example:99999/path",
            "invalid_url",
            "<invalid-url>",
        ),
        ("http://example.com:0/", "invalid_url", "<invalid-url>"),
        ("http://exa mple.com/", "invalid_url", "<invalid-url>"),
        ("http://example..com/", "invalid_url", "<invalid-url>"),
        ("http://.example.com/", "invalid_url", "<invalid-url>"),
        ("http://1.2.3.09/", "invalid_url", "<invalid-url>"),
        ("http://1.2.3.4.5/", "invalid_url", "<invalid-url>"),
        ("http://4294967296/", "invalid_url", "<invalid-url>"),
        ("http://256.0.0.1/", "invalid_url", "<invalid-url>"),
        ("http://foo.0x1/", "invalid_url", "<invalid-url>"),
        ("http://1.2.3.4.5../", "invalid_url", "<invalid-url>"),
        ("http://[fe80::1%25eth0]/", "invalid_url", "<invalid-url>"),
        ("http://[::1/", "invalid_url", "<invalid-url>"),
        // blocked hostnames: refused before DNS, origin kept for audit
        (
            "http://localhost/admin",
            "localhost_hostname",
            "http://localhost",
        ),
        (
            "http://LOCALHOST./",
            "localhost_hostname",
            "http://localhost",
        ),
        (
            "http://localhost%2e/",
            "localhost_hostname",
            "http://localhost",
        ),
        (
            "http://ｌｏｃａｌｈｏｓｔ/",
            "localhost_hostname",
            "http://localhost",
        ),
        (
            "http://service.localhost:8080/x",
            "localhost_hostname",
            "http://service.localhost:8080",
        ),
        (
            "http://localhost.localdomain/",
            "localhost_hostname",
            "http://localhost.localdomain",
        ),
        (
            "http://ip6-localhost/",
            "localhost_hostname",
            "http://ip6-localhost",
        ),
        (
            "http://metadata.google.internal/computeMetadata/v1",
            "metadata_hostname",
            "http://metadata.google.internal",
        ),
        (
            "http://Metadata.Google.Internal./x",
            "metadata_hostname",
            "http://metadata.google.internal",
        ),
        (
            "http://metadata.goog/computeMetadata/v1",
            "metadata_hostname",
            "http://metadata.goog",
        ),
        ("http://metadata/", "metadata_hostname", "http://metadata"),
        (
            "http://instance-data/latest",
            "metadata_hostname",
            "http://instance-data",
        ),
        (
            "http://instance-data.ec2.internal/",
            "metadata_hostname",
            "http://instance-data.ec2.internal",
        ),
        (
            "http://metadata.tencentyun.com/",
            "metadata_hostname",
            "http://metadata.tencentyun.com",
        ),
    ];
    for (raw, want_reason, want_origin) in cases {
        let verdict = match parse_target(raw) {
            Ok(t) => panic!("{raw}: accepted as {t:?}"),
            Err(v) => v,
        };
        assert!(!verdict.allowed, "{raw}");
        assert_eq!(verdict.reason, *want_reason, "reason for {raw}");
        assert_eq!(verdict.origin, *want_origin, "origin for {raw}");
        assert!(verdict.addresses.is_empty(), "{raw}");
    }
}

#[test]
fn lookalike_hostnames_are_not_blocked_by_name() {
    for raw in [
        "http://notlocalhost/",
        "http://localhost.example.com/",
        "http://metadata.google.internal.example.com/",
        "http://mymetadata.goog/",
    ] {
        assert!(parse_target(raw).is_ok(), "{raw}");
    }
}

// ---------------------------------------------------------------------------
// Literal and legacy targets through decide

#[test]
fn literal_and_legacy_targets_table() {
    // (raw, reason, normalised address)
    let cases: &[(&str, &str, &str)] = &[
        ("http://2130706433/", "loopback", "127.0.0.1"),
        ("http://0x7f000001/", "loopback", "127.0.0.1"),
        ("http://017700000001/", "loopback", "127.0.0.1"),
        ("http://0x7f.0x0.0x0.0x1/", "loopback", "127.0.0.1"),
        ("http://0177.0.0.1/", "loopback", "127.0.0.1"),
        ("http://127.1/", "loopback", "127.0.0.1"),
        ("http://127.0.1/", "loopback", "127.0.0.1"),
        ("http://127.0.0.1../", "loopback", "127.0.0.1"),
        ("http://0/", "unspecified", "0.0.0.0"),
        ("http://0x0/", "unspecified", "0.0.0.0"),
        ("http://0.0.0.1/", "reserved", "0.0.0.1"),
        ("http://[::ffff:127.0.0.1]/", "loopback", "127.0.0.1"),
        ("http://[::ffff:7f00:1]/", "loopback", "127.0.0.1"),
        ("http://[::ffff:a9fe:a9fe]/", "metadata", "169.254.169.254"),
        ("http://[::127.0.0.1]/", "loopback", "::7f00:1"),
        ("http://[64:ff9b::7f00:1]/", "loopback", "64:ff9b::7f00:1"),
        ("http://[2002:7f00:1::]/", "loopback", "2002:7f00:1::"),
        ("http://[::1]/admin", "loopback", "::1"),
        ("http://[fd00::1]/private", "private", "fd00::1"),
        ("http://[fd00:ec2::254]/latest", "metadata", "fd00:ec2::254"),
        ("http://[fe80::1]/", "link_local", "fe80::1"),
        ("http://[ff02::1]/", "multicast", "ff02::1"),
        ("http://[::]/", "unspecified", "::"),
        ("http://[2001:db8::1]/", "documentation", "2001:db8::1"),
        ("http://10.0.0.8/private", "private", "10.0.0.8"),
        (
            "http://169.254.169.254/latest/meta-data",
            "metadata",
            "169.254.169.254",
        ),
        ("http://2852039166/", "metadata", "169.254.169.254"),
        ("http://0xa9fea9fe/", "metadata", "169.254.169.254"),
        ("http://0251.0376.0251.0376/", "metadata", "169.254.169.254"),
        ("http://169.254.43518/", "metadata", "169.254.169.254"),
        ("http://100.64.0.1/", "cgnat", "100.64.0.1"),
        ("http://224.0.0.1/", "multicast", "224.0.0.1"),
        ("http://240.0.0.1/", "reserved", "240.0.0.1"),
        ("http://192.0.2.1/", "documentation", "192.0.2.1"),
        ("http://198.18.0.1/", "benchmarking", "198.18.0.1"),
        ("http://93.184.216.34/", "ok", "93.184.216.34"),
        ("http://1572395042/", "ok", "93.184.216.34"),
        ("https://[2606:4700::1111]/", "ok", "2606:4700::1111"),
        ("http://[::ffff:93.184.216.34]/", "ok", "93.184.216.34"),
    ];
    for (raw, want_reason, want_addr) in cases {
        let verdict = evaluate(raw, None);
        assert_eq!(verdict.reason, *want_reason, "reason for {raw}");
        assert_eq!(verdict.allowed, *want_reason == "ok", "allowed for {raw}");
        assert_eq!(
            verdict.addresses,
            vec![want_addr.to_string()],
            "addresses for {raw}"
        );
    }
}

#[test]
fn literal_target_ignores_caller_answer() {
    let target = parse_target("http://127.1/").unwrap_or_else(|v| panic!("{v:?}"));
    for resolved in [Ok(&[ip("93.184.216.34")][..]), Ok(&[][..]), Err(())] {
        let verdict = decide(&target, resolved);
        assert_eq!(verdict.reason, "loopback");
        assert_eq!(verdict.addresses, vec!["127.0.0.1".to_string()]);
    }
}

// ---------------------------------------------------------------------------
// DNS answers

/// (answer or `None` for DNS failure, reason, reported addresses)
type DnsCase = (
    Option<&'static [&'static str]>,
    &'static str,
    &'static [&'static str],
);

#[test]
fn dns_answer_table() {
    // (answer or None for DNS failure, reason, addresses)
    let cases: &[DnsCase] = &[
        (Some(&["93.184.216.34"]), "ok", &["93.184.216.34"]),
        (
            Some(&["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]),
            "ok",
            &["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
        ),
        (Some(&["2606:4700::1111"]), "ok", &["2606:4700::1111"]),
        (
            Some(&["93.184.216.34", "93.184.216.34"]),
            "ok",
            &["93.184.216.34"],
        ),
        (Some(&["::ffff:93.184.216.34"]), "ok", &["93.184.216.34"]),
        (
            Some(&["93.184.216.34", "10.0.0.8"]),
            "mixed_answer",
            &["93.184.216.34", "10.0.0.8"],
        ),
        (
            Some(&["10.0.0.8", "93.184.216.34"]),
            "mixed_answer",
            &["10.0.0.8", "93.184.216.34"],
        ),
        (
            Some(&["2606:4700::1111", "::1"]),
            "mixed_answer",
            &["2606:4700::1111", "::1"],
        ),
        (
            Some(&["93.184.216.34", "169.254.169.254"]),
            "mixed_answer",
            &["93.184.216.34", "169.254.169.254"],
        ),
        (
            Some(&["93.184.216.34", "::ffff:127.0.0.1"]),
            "mixed_answer",
            &["93.184.216.34", "127.0.0.1"],
        ),
        (Some(&["10.0.0.8"]), "private", &["10.0.0.8"]),
        (
            Some(&["127.0.0.1", "10.0.0.8"]),
            "loopback",
            &["127.0.0.1", "10.0.0.8"],
        ),
        (Some(&["::ffff:127.0.0.1"]), "loopback", &["127.0.0.1"]),
        (Some(&["fd00:ec2::254"]), "metadata", &["fd00:ec2::254"]),
        (Some(&["100.64.0.1"]), "cgnat", &["100.64.0.1"]),
        (Some(&["0.0.0.0"]), "unspecified", &["0.0.0.0"]),
        (Some(&[]), "dns_no_addresses", &[]),
        (None, "dns_failure", &[]),
    ];
    for (answer, want_reason, want_addrs) in cases {
        let verdict = evaluate("https://public.example/resource?token=abc", *answer);
        assert_eq!(verdict.reason, *want_reason, "reason for {answer:?}");
        assert_eq!(
            verdict.allowed,
            *want_reason == "ok",
            "allowed for {answer:?}"
        );
        assert_eq!(
            verdict.origin, "https://public.example",
            "origin for {answer:?}"
        );
        let want: Vec<String> = want_addrs.iter().map(|s| s.to_string()).collect();
        assert_eq!(verdict.addresses, want, "addresses for {answer:?}");
    }
}

#[test]
fn redirect_hop_is_judged_afresh() {
    let first = evaluate("https://public.example/start", Some(&["93.184.216.34"]));
    assert!(first.allowed);
    // Same host re-resolving to a private address on the redirect hop.
    let hop = evaluate(
        "https://public.example/next?token=SECRET",
        Some(&["10.0.0.8"]),
    );
    assert_eq!(hop.reason, "private");
    assert!(!hop.allowed);
    // Redirect to a legacy loopback spelling never needs DNS.
    let hop = evaluate("http://0x7f.1:8080/admin", Some(&["93.184.216.34"]));
    assert_eq!(hop.reason, "loopback");
    assert_eq!(hop.origin, "http://127.0.0.1:8080");
}

// ---------------------------------------------------------------------------
// Credential-free summaries

#[test]
fn origin_summary_table() {
    let cases: &[(&str, &str)] = &[
        ("http://user:pw@example.com/x?token=abc", "http://example.com"),
        (
            "https://user:SENSITIVE_PASSWORD@public.example:8443/SENSITIVE_PATH?token=SENSITIVE_QUERY#SENSITIVE_FRAGMENT",
            "https://public.example:8443",
        ),
        ("https://example.com:443/", "https://example.com"),
        ("http://example.com.:8080", "http://example.com:8080"),
        ("http://localhost/admin", "http://localhost"),
        ("http://0x7f.1/", "http://127.0.0.1"),
        ("http://[::1]:9000/x", "http://[::1]:9000"),
        ("ftp://user:pw@files.example.com/secret", "ftp://files.example.com"),
        ("mailto:someone@example.com", "mailto:"),
        ("not a url", "<invalid-url>"),
        ("http://", "<invalid-url>"),
        ("http://example.com:99999/", "<invalid-url>"),
    ];
    for (raw, want) in cases {
        assert_eq!(origin_summary(raw), *want, "summary of {raw}");
    }
}

#[test]
fn verdict_serialisation_has_no_secrets() {
    let raw = "https://user:SENSITIVE_PASSWORD@public.example:8443/SENSITIVE_PATH?token=SENSITIVE_QUERY#SENSITIVE_FRAGMENT";
    let verdict = evaluate(raw, Some(&["93.184.216.34"]));
    assert!(verdict.allowed);
    let json = serde_json::to_string(&verdict).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        json,
        r#"{"allowed":true,"reason":"ok","origin":"https://public.example:8443","addresses":["93.184.216.34"]}"#
    );
    assert!(!json.contains("SENSITIVE") && !json.contains("user"));
    let target = parse_target(raw).unwrap_or_else(|v| panic!("{v:?}"));
    let debug = format!("{target:?}");
    assert!(
        !debug.contains("SENSITIVE") && !debug.contains("user"),
        "{debug}"
    );
}

// ---------------------------------------------------------------------------
// Internal legacy IPv4 parser (used after trailing-dot removal)

#[test]
fn legacy_ipv4_parser_table() {
    let cases: &[(&str, Option<Ipv4Addr>)] = &[
        ("2130706433", Some(Ipv4Addr::new(127, 0, 0, 1))),
        ("0x7f000001", Some(Ipv4Addr::new(127, 0, 0, 1))),
        ("0X7F000001", Some(Ipv4Addr::new(127, 0, 0, 1))),
        ("017700000001", Some(Ipv4Addr::new(127, 0, 0, 1))),
        ("0177.0.0.1", Some(Ipv4Addr::new(127, 0, 0, 1))),
        ("127.1", Some(Ipv4Addr::new(127, 0, 0, 1))),
        ("127.0.1", Some(Ipv4Addr::new(127, 0, 0, 1))),
        ("0x7f.1", Some(Ipv4Addr::new(127, 0, 0, 1))),
        ("0", Some(Ipv4Addr::new(0, 0, 0, 0))),
        ("0x", Some(Ipv4Addr::new(0, 0, 0, 0))),
        ("4294967295", Some(Ipv4Addr::new(255, 255, 255, 255))),
        ("1.16777215", Some(Ipv4Addr::new(1, 255, 255, 255))),
        ("4294967296", None),
        ("1.16777216", None),
        ("256.1", None),
        ("1.2.3.256", None),
        ("1.2.3.4.5", None),
        ("1..2", None),
        ("08", None),
        ("0x1g", None),
        ("99999999999999999999999", None),
        ("", None),
    ];
    for (raw, want) in cases {
        assert_eq!(parse_legacy_ipv4(raw), *want, "parse_legacy_ipv4({raw:?})");
    }
}

#[test]
fn operator_allowance_lifts_only_address_refusals() {
    let allow: Vec<IpNet> = vec![
        "127.0.0.1/32".parse().unwrap(),
        "10.1.0.0/16".parse().unwrap(),
        "fd00:1::/32".parse().unwrap(),
    ];
    let judge = |raw: &str, answer: &[&str]| -> UrlVerdict {
        let answer: Vec<IpAddr> = answer.iter().map(|s| ip(s)).collect();
        match parse_target(raw) {
            Err(v) => v,
            Ok(t) => decide_with(&t, Ok(&answer), &allow),
        }
    };
    let cases: &[(&str, &[&str], bool, &str)] = &[
        ("http://127.0.0.1:8080/", &[], true, "ok"),
        ("http://127.0.0.2/", &[], false, "loopback"),
        ("http://2130706433/", &[], true, "ok"),
        ("http://[::ffff:127.0.0.1]/", &[], true, "ok"),
        ("http://svc.internal/", &["10.1.2.3"], true, "ok"),
        (
            "http://svc.internal/",
            &["10.1.2.3", "10.2.0.1"],
            false,
            "mixed_answer",
        ),
        ("http://svc.internal/", &["10.2.0.1"], false, "private"),
        (
            "http://svc.internal/",
            &["10.1.2.3", "93.184.216.34"],
            true,
            "ok",
        ),
        ("http://svc.internal/", &["fd00:1::5"], true, "ok"),
        ("http://svc.internal/", &["fd00:2::5"], false, "private"),
        // refused by name before DNS, whatever the allowance
        (
            "http://localhost:8080/",
            &["127.0.0.1"],
            false,
            "localhost_hostname",
        ),
        (
            "http://metadata.google.internal/",
            &["10.1.0.1"],
            false,
            "metadata_hostname",
        ),
        ("file:///etc/passwd", &[], false, "scheme_not_allowed"),
    ];
    for (raw, answer, allowed, reason) in cases {
        let v = judge(raw, answer);
        assert_eq!(
            (v.allowed, v.reason.as_str()),
            (*allowed, *reason),
            "{raw} {answer:?}"
        );
    }
    let target = parse_target("http://svc.internal/").unwrap();
    let failed = decide_with(&target, Err(()), &allow);
    assert_eq!(failed.reason, "dns_failure");
}

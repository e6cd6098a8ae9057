//! The outbound client against a local DNS server (a small UDP responder
//! answering from a table, so mixed and hostile answers can be served) and
//! local HTTP servers (redirects to blocked targets, Host kept, bounds).

use super::*;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::{Query, State};
use axum::http::HeaderMap as AxumHeaders;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

// ---------------------------------------------------------------------------
// A DNS responder: A/AAAA answers from a table; unknown names NXDOMAIN;
// `servfail.test` SERVFAIL.

type Zone = HashMap<String, Vec<IpAddr>>;

async fn dns_server(zone: Zone) -> SocketAddr {
    let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let addr = socket.local_addr().unwrap();
    tokio::spawn(async move {
        let mut buf = [0u8; 1500];
        loop {
            let Ok((n, peer)) = socket.recv_from(&mut buf).await else {
                return;
            };
            if let Some(reply) = dns_reply(&buf[..n], &zone) {
                let _ = socket.send_to(&reply, peer).await;
            }
        }
    });
    addr
}

fn dns_reply(query: &[u8], zone: &Zone) -> Option<Vec<u8>> {
    if query.len() < 12 {
        return None;
    }
    let mut labels = Vec::new();
    let mut i = 12;
    loop {
        let len = *query.get(i)? as usize;
        i += 1;
        if len == 0 {
            break;
        }
        labels.push(String::from_utf8_lossy(query.get(i..i + len)?).to_ascii_lowercase());
        i += len;
    }
    let qtype = u16::from_be_bytes([*query.get(i)?, *query.get(i + 1)?]);
    let question_end = i + 4;
    let name = labels.join(".");
    let (rcode, answers): (u8, Vec<IpAddr>) = if name == "servfail.test" {
        (2, Vec::new())
    } else {
        match zone.get(&name) {
            None => (3, Vec::new()),
            Some(ips) => (
                0,
                ips.iter()
                    .copied()
                    .filter(|ip| match qtype {
                        1 => ip.is_ipv4(),
                        28 => ip.is_ipv6(),
                        _ => false,
                    })
                    .collect(),
            ),
        }
    };
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(&query[0..2]);
    out.push(0x80 | (query[2] & 0x01));
    out.push(0x80 | rcode);
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(&(answers.len() as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(query.get(12..question_end)?);
    for ip in answers {
        out.extend_from_slice(&[0xc0, 0x0c]);
        let rdata: Vec<u8> = match ip {
            IpAddr::V4(v4) => {
                out.extend_from_slice(&1u16.to_be_bytes());
                v4.octets().to_vec()
            }
            IpAddr::V6(v6) => {
                out.extend_from_slice(&28u16.to_be_bytes());
                v6.octets().to_vec()
            }
        };
        out.extend_from_slice(&1u16.to_be_bytes());
        out.extend_from_slice(&60u32.to_be_bytes());
        out.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
        out.extend_from_slice(&rdata);
    }
    Some(out)
}

fn zone(entries: &[(&str, &[&str])]) -> Zone {
    entries
        .iter()
        .map(|(name, ips)| {
            (
                (*name).to_owned(),
                ips.iter().map(|s| s.parse().unwrap()).collect(),
            )
        })
        .collect()
}

fn outbound(dns: SocketAddr, allow: &[&str]) -> Outbound {
    Outbound::new(OutboundSettings {
        allow: allow.iter().map(|a| a.parse().unwrap()).collect(),
        dns: DnsSettings::Servers(vec![dns]),
        ..OutboundSettings::default()
    })
}

/// Names the table and the redirect tests resolve through the test server.
fn test_zone() -> Zone {
    zone(&[
        ("public.test", &["93.184.216.34"]),
        ("multi.test", &["93.184.216.34", "93.184.216.35", "8.8.8.8"]),
        (
            "dual.test",
            &["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
        ),
        ("v6only.test", &["2606:4700::1111"]),
        ("private.test", &["10.0.0.1"]),
        ("private172.test", &["172.16.5.4"]),
        ("private192.test", &["192.168.1.1"]),
        ("loopback.test", &["127.0.0.1"]),
        ("loopback6.test", &["::1"]),
        ("metadata-ip.test", &["169.254.169.254"]),
        ("metadata6.test", &["fd00:ec2::254"]),
        ("linklocal.test", &["169.254.1.1"]),
        ("linklocal6.test", &["fe80::1"]),
        ("cgnat.test", &["100.64.0.1"]),
        ("ula.test", &["fd12:3456::1"]),
        ("mapped.test", &["::ffff:127.0.0.1"]),
        ("nat64.test", &["64:ff9b::a9fe:a9fe"]),
        ("sixtofour.test", &["2002:c0a8:101::1"]),
        ("unspecified.test", &["0.0.0.0"]),
        ("multicast.test", &["224.0.0.1"]),
        ("reserved.test", &["240.0.0.1"]),
        ("doc.test", &["192.0.2.10"]),
        ("bench.test", &["198.18.0.1"]),
        ("mixed.test", &["93.184.216.34", "10.0.0.1"]),
        ("mixed-metadata.test", &["93.184.216.34", "169.254.169.254"]),
        ("mixed-family.test", &["93.184.216.34", "::1"]),
        ("mixed-v6.test", &["2606:4700::1111", "fe80::1"]),
        (
            "mixed-many.test",
            &["8.8.8.8", "1.1.1.1", "9.9.9.9", "127.0.0.1"],
        ),
        ("allowed-private.test", &["10.9.1.1"]),
        ("allowed-mixed.test", &["10.9.1.1", "10.8.0.1"]),
        ("empty.test", &[]),
        ("page.test", &["127.0.0.1"]),
        ("other.test", &["127.0.0.1"]),
    ])
}

// ---------------------------------------------------------------------------
// The table: at least 150 targets through the real resolver.

const OK: &str = "ok";

#[tokio::test]
async fn policy_table_through_the_resolver() {
    let dns = dns_server(test_zone()).await;
    let plain = outbound(dns, &[]);
    let allowing = outbound(dns, &["10.9.0.0/16", "127.0.0.1/32", "fd12:3456::/32"]);
    let mut rows: Vec<(String, &'static str)> = Vec::new();
    let mut add = |url: &str, want: &'static str| rows.push((url.to_owned(), want));

    // IPv4 literals: every category.
    for (ip, want) in [
        ("93.184.216.34", OK),
        ("8.8.8.8", OK),
        ("1.1.1.1", OK),
        ("100.63.255.255", OK),
        ("172.32.0.1", OK),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "reserved"),
        ("127.0.0.1", "loopback"),
        ("127.0.0.2", "loopback"),
        ("127.255.255.254", "loopback"),
        ("10.0.0.1", "private"),
        ("10.255.255.255", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.0.1", "private"),
        ("169.254.0.1", "link_local"),
        ("169.254.169.254", "metadata"),
        ("169.254.170.2", "metadata"),
        ("100.100.100.200", "metadata"),
        ("192.0.0.192", "metadata"),
        ("100.64.0.1", "cgnat"),
        ("100.127.255.255", "cgnat"),
        ("192.0.0.1", "reserved"),
        ("192.88.99.1", "reserved"),
        ("192.0.2.1", "documentation"),
        ("198.51.100.1", "documentation"),
        ("203.0.113.1", "documentation"),
        ("198.18.0.1", "benchmarking"),
        ("198.19.255.255", "benchmarking"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
    ] {
        add(&format!("http://{ip}/"), want);
        add(&format!("https://{ip}:8443/x?q=1"), want);
    }
    // Legacy IPv4 spellings are literals, never resolved.
    for (host, want) in [
        ("2130706433", "loopback"),
        ("0x7f000001", "loopback"),
        ("017700000001", "loopback"),
        ("0x7f.1", "loopback"),
        ("0177.0.0.1", "loopback"),
        ("127.1", "loopback"),
        ("127.0.1", "loopback"),
        ("0", "unspecified"),
        ("0x0", "unspecified"),
        ("3232235777", "private"),
        ("0xc0.0xa8.1.1", "private"),
        ("10.1", "private"),
        ("0xa9fea9fe", "metadata"),
        ("0251.0376.0251.0376", "metadata"),
        ("169.254.43518", "metadata"),
        ("0x64.0x40.0.1", "cgnat"),
        ("016.0.0.1", OK),
        ("1.65793", OK),
        ("127.0.0.1.", "loopback"),
        ("127.0.0.1..", "loopback"),
    ] {
        add(&format!("http://{host}/"), want);
    }
    // IPv6 literals.
    for (ip, want) in [
        ("2606:4700::1111", OK),
        ("2001:4860:4860::8888", OK),
        ("::", "unspecified"),
        ("::1", "loopback"),
        ("fc00::1", "private"),
        ("fd00::1", "private"),
        ("fec0::1", "private"),
        ("fe80::1", "link_local"),
        ("ff02::1", "multicast"),
        ("2001:db8::1", "documentation"),
        ("2001:2::1", "benchmarking"),
        ("2001:10::1", "reserved"),
        ("fd00:ec2::254", "metadata"),
        ("fd20:ce::254", "metadata"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:169.254.169.254", "metadata"),
        ("::ffff:10.0.0.1", "private"),
        ("::ffff:93.184.216.34", OK),
        ("::127.0.0.1", "loopback"),
        ("::ffff:0:127.0.0.1", "loopback"),
        ("64:ff9b::127.0.0.1", "loopback"),
        ("64:ff9b::a9fe:a9fe", "metadata"),
        ("64:ff9b::93.184.216.34", OK),
        ("64:ff9b:1::10.0.0.1", "private"),
        ("2002:7f00:1::1", "loopback"),
        ("2002:a9fe:a9fe::", "metadata"),
        ("2002:5db8:d822::1", OK),
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback"),
        ("100::1", "reserved"),
        ("4000::1", "reserved"),
    ] {
        add(&format!("http://[{ip}]/"), want);
    }
    // Names refused before DNS (the zone would not even answer them).
    for (host, want) in [
        ("localhost", "localhost_hostname"),
        ("LOCALHOST.", "localhost_hostname"),
        ("app.localhost", "localhost_hostname"),
        ("localhost.localdomain", "localhost_hostname"),
        ("ip6-localhost", "localhost_hostname"),
        ("metadata", "metadata_hostname"),
        ("metadata.google.internal", "metadata_hostname"),
        ("Metadata.Google.Internal.", "metadata_hostname"),
        (
            "computeMetadata.metadata.google.internal",
            "metadata_hostname",
        ),
        ("metadata.goog", "metadata_hostname"),
        ("instance-data", "metadata_hostname"),
        ("instance-data.ec2.internal", "metadata_hostname"),
        ("metadata.azure.com", "metadata_hostname"),
        ("metadata.tencentyun.com", "metadata_hostname"),
    ] {
        add(&format!("http://{host}/latest/meta-data"), want);
    }
    // Names through the test resolver.
    for (host, want) in [
        ("public.test", OK),
        ("PUBLIC.test.", OK),
        ("multi.test", OK),
        ("dual.test", OK),
        ("v6only.test", OK),
        ("private.test", "private"),
        ("private172.test", "private"),
        ("private192.test", "private"),
        ("loopback.test", "loopback"),
        ("loopback6.test", "loopback"),
        ("metadata-ip.test", "metadata"),
        ("metadata6.test", "metadata"),
        ("linklocal.test", "link_local"),
        ("linklocal6.test", "link_local"),
        ("cgnat.test", "cgnat"),
        ("ula.test", "private"),
        ("mapped.test", "loopback"),
        ("nat64.test", "metadata"),
        ("sixtofour.test", "private"),
        ("unspecified.test", "unspecified"),
        ("multicast.test", "multicast"),
        ("reserved.test", "reserved"),
        ("doc.test", "documentation"),
        ("bench.test", "benchmarking"),
        ("mixed.test", "mixed_answer"),
        ("mixed-metadata.test", "mixed_answer"),
        ("mixed-family.test", "mixed_answer"),
        ("mixed-v6.test", "mixed_answer"),
        ("mixed-many.test", "mixed_answer"),
        ("nxdomain.test", "dns_failure"),
        ("servfail.test", "dns_failure"),
        ("empty.test", "dns_failure"),
        ("allowed-private.test", "private"),
    ] {
        add(&format!("https://{host}/path"), want);
    }
    // Not http(s), or not a URL.
    for (url, want) in [
        ("file:///etc/passwd", "scheme_not_allowed"),
        ("ftp://public.test/", "scheme_not_allowed"),
        ("gopher://public.test/", "scheme_not_allowed"),
        ("javascript:alert(1)", "scheme_not_allowed"),
        ("data:text/plain,hi", "scheme_not_allowed"),
        ("ws://public.test/", "scheme_not_allowed"),
        ("not a url", "invalid_url"),
        ("http://public.test:99999/", "invalid_url"),
        ("http://public.test:0/", "invalid_url"),
        ("http://256.256.256.256/", "invalid_url"),
    ] {
        add(url, want);
    }
    assert!(rows.len() >= 150, "only {} targets", rows.len());
    for (url, want) in &rows {
        let v = plain.check(url).await;
        assert_eq!(v.reason, *want, "{url}: {v:?}");
        assert_eq!(v.allowed, *want == OK, "{url}: {v:?}");
        assert!(
            !v.origin.contains("/path") && !v.origin.contains('?'),
            "{v:?}"
        );
    }

    // The operator's allowance lifts address refusals inside its networks only.
    for (url, want) in [
        ("http://allowed-private.test/", OK),
        ("http://allowed-mixed.test/", "mixed_answer"),
        ("http://127.0.0.1:8080/", OK),
        ("http://2130706433/", OK),
        ("http://[::ffff:127.0.0.1]/", OK),
        ("http://127.0.0.2/", "loopback"),
        ("http://ula.test/", OK),
        ("http://private.test/", "private"),
        ("http://localhost/", "localhost_hostname"),
        ("http://metadata.google.internal/", "metadata_hostname"),
        ("http://nxdomain.test/", "dns_failure"),
    ] {
        let v = allowing.check(url).await;
        assert_eq!((v.allowed, v.reason.as_str()), (want == OK, want), "{url}");
    }
}

#[tokio::test]
async fn verdicts_carry_the_judged_addresses_and_no_secrets() {
    let dns = dns_server(test_zone()).await;
    let o = outbound(dns, &[]);
    let v = o
        .check("https://user:hunter2@dual.test/p?token=s3cr3t#f")
        .await;
    assert!(v.allowed, "{v:?}");
    assert_eq!(v.origin, "https://dual.test");
    let mut addrs = v.addresses.clone();
    addrs.sort();
    assert_eq!(
        addrs,
        vec!["2606:2800:220:1:248:1893:25c8:1946", "93.184.216.34"]
    );
    let text = serde_json::to_string(&v).unwrap();
    for secret in ["hunter2", "s3cr3t", "user", "/p"] {
        assert!(!text.contains(secret), "{text}");
    }
    let m = o.check("http://mixed.test/").await;
    assert_eq!(m.addresses, vec!["93.184.216.34", "10.0.0.1"]);
}

#[tokio::test]
async fn a_missing_resolver_fails_closed() {
    // Port 9 (discard) on loopback: nothing answers.
    let dead: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let o = outbound(dead, &[]);
    let v = o.check("http://public.test/").await;
    assert_eq!((v.allowed, v.reason.as_str()), (false, "dns_failure"));
    // Literals need no resolver.
    assert!(o.check("http://93.184.216.34/").await.allowed);
}

#[test]
fn precheck_is_pure_and_judges_literals() {
    let o = Outbound::new(OutboundSettings {
        allow: vec!["127.0.0.1/32".parse().unwrap()],
        dns: DnsSettings::Servers(vec!["127.0.0.1:9".parse().unwrap()]),
        ..OutboundSettings::default()
    });
    assert!(o.precheck("http://public.test/").is_ok());
    assert!(o.precheck("http://127.0.0.1:9000/").is_ok());
    for (url, reason) in [
        ("http://127.0.0.2/", "loopback"),
        ("http://[::1]/", "loopback"),
        ("http://0xa9fea9fe/", "metadata"),
        ("http://metadata/", "metadata_hostname"),
        ("file:///x", "scheme_not_allowed"),
    ] {
        assert_eq!(o.precheck(url).unwrap_err().reason, reason, "{url}");
    }
}

// ---------------------------------------------------------------------------
// Requests against local HTTP servers.

#[derive(Clone, Default)]
struct Hits(Arc<AtomicUsize>);

async fn serve(bind: &str, router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind(bind).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    addr
}

async fn echo(headers: AxumHeaders) -> Response {
    let host = headers
        .get("host")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let auth = headers.contains_key("authorization");
    axum::Json(serde_json::json!({"host": host, "authorization": auth})).into_response()
}

async fn redirect(Query(q): Query<HashMap<String, String>>) -> Response {
    let to = q.get("to").cloned().unwrap_or_default();
    match q.get("status").map(String::as_str) {
        Some("307") => Redirect::temporary(&to).into_response(),
        _ => Redirect::to(&to).into_response(),
    }
}

async fn big() -> Response {
    "x".repeat(100_000).into_response()
}

async fn slow() -> Response {
    tokio::time::sleep(Duration::from_secs(30)).await;
    "late".into_response()
}

async fn count(State(hits): State<Hits>) -> Response {
    hits.0.fetch_add(1, Ordering::SeqCst);
    "reached".into_response()
}

fn app() -> Router {
    Router::new()
        .route("/echo", get(echo))
        .route("/redirect", get(redirect))
        .route("/big", get(big))
        .route("/slow", get(slow))
        .route("/loop", get(|| async { Redirect::to("/loop") }))
}

fn limits() -> Limits {
    Limits {
        timeout: Duration::from_secs(10),
        max_bytes: 64 * 1024,
        max_redirects: 5,
    }
}

fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[tokio::test]
async fn pinned_request_keeps_the_host_and_records_the_decision() {
    let dns = dns_server(test_zone()).await;
    let web = serve("127.0.0.1:0", app()).await;
    let port = web.port();
    let o = outbound(dns, &["127.0.0.1/32"]);
    let r = o
        .send(OutboundRequest::get(
            format!("http://page.test:{port}/echo?secret=abc"),
            limits(),
        ))
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(body["host"], format!("page.test:{port}"));
    assert_eq!(r.verdict.origin, format!("http://page.test:{port}"));
    assert_eq!(r.verdict.addresses, vec!["127.0.0.1"]);
    assert_eq!(r.decisions.len(), 1);

    // Without the operator's allowance the same page is refused.
    let strict = outbound(dns, &[]);
    let e = strict
        .send(OutboundRequest::get(
            format!("http://page.test:{port}/echo"),
            limits(),
        ))
        .await
        .unwrap_err();
    match &e.kind {
        OutboundErrorKind::Blocked(v) => assert_eq!(v.reason, "loopback"),
        other => panic!("{other:?}"),
    }
    assert_eq!(e.decisions.len(), 1);
}

#[tokio::test]
async fn redirects_to_blocked_targets_are_refused_before_connecting() {
    let dns = dns_server(test_zone()).await;
    let web = serve("127.0.0.1:0", app()).await;
    let port = web.port();
    // A server on another loopback address that must never be reached.
    let hits = Hits::default();
    let trap = serve(
        "127.0.0.2:0",
        Router::new()
            .route("/", get(count))
            .with_state(hits.clone()),
    )
    .await;
    let o = outbound(dns, &["127.0.0.1/32"]);
    let trap_port = trap.port();
    let cases: Vec<(String, &str)> = vec![
        (format!("http://127.0.0.2:{trap_port}/"), "loopback"),
        (format!("http://0x7f000002:{trap_port}/"), "loopback"),
        (
            format!("http://[::ffff:127.0.0.2]:{trap_port}/"),
            "loopback",
        ),
        (
            "http://169.254.169.254/latest/meta-data/".into(),
            "metadata",
        ),
        (
            "http://metadata.google.internal/".into(),
            "metadata_hostname",
        ),
        ("http://metadata.azure.com/".into(), "metadata_hostname"),
        (
            format!("http://localhost:{port}/echo"),
            "localhost_hostname",
        ),
        ("http://private.test/".into(), "private"),
        ("http://mixed.test/".into(), "mixed_answer"),
        ("http://nxdomain.test/".into(), "dns_failure"),
        (format!("http://[::1]:{port}/echo"), "loopback"),
        ("file:///etc/passwd".into(), "scheme_not_allowed"),
    ];
    for status in ["303", "307"] {
        for (to, reason) in &cases {
            let url = format!(
                "http://127.0.0.1:{port}/redirect?status={status}&to={}",
                enc(to)
            );
            let e = o
                .send(OutboundRequest::get(url, limits()))
                .await
                .unwrap_err();
            match &e.kind {
                OutboundErrorKind::Blocked(v) => assert_eq!(v.reason, *reason, "{to}"),
                other => panic!("{to}: {other:?}"),
            }
            assert_eq!(e.decisions.len(), 2, "{to}");
            assert!(e.decisions[0].allowed);
        }
    }
    // Two redirects deep, the last hop blocked.
    let inner = format!(
        "http://page.test:{port}/redirect?to={}",
        enc("http://10.0.0.1/")
    );
    let e = o
        .send(OutboundRequest::get(
            format!("http://127.0.0.1:{port}/redirect?to={}", enc(&inner)),
            limits(),
        ))
        .await
        .unwrap_err();
    assert_eq!(e.decisions.len(), 3);
    assert!(matches!(&e.kind, OutboundErrorKind::Blocked(v) if v.reason == "private"));
    assert_eq!(
        hits.0.load(Ordering::SeqCst),
        0,
        "a blocked hop was reached"
    );
}

#[tokio::test]
async fn allowed_redirects_are_followed_and_credentials_stay_on_their_origin() {
    let dns = dns_server(test_zone()).await;
    let web = serve("127.0.0.1:0", app()).await;
    let port = web.port();
    let o = outbound(dns, &["127.0.0.1/32"]);
    let mut request = OutboundRequest::get(
        format!(
            "http://page.test:{port}/redirect?to={}",
            enc(&format!("http://other.test:{port}/echo"))
        ),
        limits(),
    );
    request.headers.insert(
        reqwest::header::AUTHORIZATION,
        "Bearer tenant-secret".parse().unwrap(),
    );
    let r = o.send(request.clone()).await.unwrap();
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(body["host"], format!("other.test:{port}"));
    assert_eq!(
        body["authorization"], false,
        "crossed origins with credentials"
    );
    assert_eq!(r.verdict.origin, format!("http://other.test:{port}"));
    assert_eq!(r.decisions.len(), 2);
    // Same origin: the header stays.
    request.url = format!("http://page.test:{port}/redirect?to=/echo");
    let r = o.send(request).await.unwrap();
    let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(body["authorization"], true);
}

#[tokio::test]
async fn size_time_and_redirect_bounds() {
    let dns = dns_server(test_zone()).await;
    let web = serve("127.0.0.1:0", app()).await;
    let port = web.port();
    let o = outbound(dns, &["127.0.0.1/32"]);
    let mut small = limits();
    small.max_bytes = 1000;
    let r = o
        .send(OutboundRequest::get(
            format!("http://127.0.0.1:{port}/big"),
            small,
        ))
        .await
        .unwrap();
    assert!(r.truncated);
    assert_eq!(r.body.len(), 1000);

    let mut quick = limits();
    quick.timeout = Duration::from_millis(300);
    let e = o
        .send(OutboundRequest::get(
            format!("http://127.0.0.1:{port}/slow"),
            quick,
        ))
        .await
        .unwrap_err();
    assert!(matches!(e.kind, OutboundErrorKind::TimedOut(_)), "{e:?}");
    assert_eq!(e.decisions.len(), 1);

    let e = o
        .send(OutboundRequest::get(
            format!("http://127.0.0.1:{port}/loop"),
            limits(),
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(e.kind, OutboundErrorKind::TooManyRedirects(5)),
        "{e:?}"
    );
    assert_eq!(e.decisions.len(), 6);
}

#[tokio::test]
async fn pinned_clients_reach_only_their_origin() {
    let dns = dns_server(test_zone()).await;
    let web = serve("127.0.0.1:0", app()).await;
    let port = web.port();
    let o = outbound(dns, &["127.0.0.1/32"]);
    let (client, verdict) = o
        .pinned_client(&format!("http://page.test:{port}/mcp"), limits().timeout)
        .await
        .unwrap();
    assert_eq!(verdict.addresses, vec!["127.0.0.1"]);
    let ok = client
        .get(format!("http://page.test:{port}/echo"))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    // Another name is not resolved at all, even one the zone knows.
    let err = client
        .get(format!("http://other.test:{port}/echo"))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_connect() || err.is_request(), "{err:?}");
    // And redirects are not followed.
    let r = client
        .get(format!("http://page.test:{port}/loop"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let refused = o
        .pinned_client("http://private.test/mcp", limits().timeout)
        .await
        .unwrap_err();
    assert!(matches!(refused.kind, OutboundErrorKind::Blocked(_)));
}

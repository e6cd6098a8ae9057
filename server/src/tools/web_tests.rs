use serde_json::json;

use super::*;
use crate::tools::testing::{fixture, plan};

#[test]
fn the_approval_shows_only_the_origin() {
    let f = fixture(&["network.fetch"]);
    let url = "https://user:pa55word@example.com:8443/private/path?token=s3cr3t#frag";
    let (gate, prepared) = plan::<WebExtract>(&f, "web_extract", json!({"url": url})).unwrap();
    let Gate::Ask(approvals) = gate else {
        panic!("expected an approval")
    };
    assert_eq!(approvals.len(), 1);
    let a = &approvals[0];
    assert_eq!(a.preview, json!({"origin": "https://example.com:8443"}));
    assert_eq!(a.reason, "Fetch https://example.com:8443");
    assert_eq!(a.action, "fetch");
    assert_eq!(a.baseline, ApprovalPolicy::Prompt);
    assert_eq!(a.risk, Risk::High);
    assert_eq!(a.target.len(), 64);
    let shown = format!("{} {} {}", a.preview, a.reason, a.target);
    for secret in ["pa55word", "s3cr3t", "private", "user", "frag"] {
        assert!(!shown.contains(secret), "{shown}");
    }
    assert_eq!(prepared.timeout, Duration::from_secs(20));
    assert_eq!(prepared.max_chars, 12_000);
}

#[test]
fn what_the_policy_refuses_without_dns_is_refused_before_approval() {
    let f = fixture(&["network.fetch"]);
    for (url, reason) in [
        ("http://127.0.0.1:8080/", "loopback"),
        ("http://2130706433/", "loopback"),
        ("http://[::1]/", "loopback"),
        ("http://169.254.169.254/latest/meta-data", "metadata"),
        ("http://metadata.google.internal/", "metadata_hostname"),
        ("http://localhost/", "localhost_hostname"),
        ("file:///etc/passwd", "scheme_not_allowed"),
        ("ftp://example.com/", "scheme_not_allowed"),
        ("http://10.0.0.1/", "private"),
    ] {
        let out = plan::<WebExtract>(&f, "web_extract", json!({"url": url})).unwrap_err();
        assert_eq!(out.status, ToolStatus::Denied, "{url}");
        assert_eq!(
            out.content,
            json!(format!("URL blocked by Host policy: {reason}")),
            "{url}"
        );
        assert_eq!(out.data["executionStarted"], false);
        assert_eq!(out.data["url_policy"]["reason"], reason);
    }
    let out = plan::<WebExtract>(&f, "web_extract", json!({"url": "  "})).unwrap_err();
    assert_eq!(out.status, ToolStatus::Invalid);
}

#[test]
fn bounds_follow_the_registry() {
    let f = fixture(&["network.fetch"]);
    for (args, timeout, chars) in [
        (json!({"timeout_seconds": 5, "max_chars": 100}), 5, 100),
        (
            json!({"timeout_seconds": 600, "max_chars": 999_999}),
            60,
            12_000,
        ),
        (json!({"timeout_seconds": 0, "max_chars": -3}), 20, 12_000),
        (json!({"timeout_seconds": "7", "max_chars": 10.9}), 7, 10),
    ] {
        let mut a = args.clone();
        a["url"] = json!("https://example.com/");
        let (_, p) = plan::<WebExtract>(&f, "web_extract", a).unwrap();
        assert_eq!(
            (p.timeout, p.max_chars),
            (Duration::from_secs(timeout), chars),
            "{args}"
        );
    }
}

#[test]
fn html_becomes_clean_markdown() {
    let html = r#"<!doctype html><html><head><title>T</title><style>body{color:red}</style>
        <script>var secret = "do-not-show";</script></head>
        <body><h1>Hello</h1><p>Some <b>bold</b> text and a <a href="https://example.com/x">link</a>.</p>


        <ul><li>one</li><li>two</li></ul><noscript>enable js</noscript></body></html>"#;
    let md = html_to_markdown(html);
    assert!(md.contains("# Hello"), "{md}");
    assert!(md.contains("**bold**"), "{md}");
    assert!(md.contains("[link](https://example.com/x)"), "{md}");
    assert!(md.contains("one") && md.contains("two"), "{md}");
    for gone in ["do-not-show", "color:red", "enable js", "<p>", "\n\n\n"] {
        assert!(!md.contains(gone), "{gone:?} in {md}");
    }
}

#[test]
fn html_is_recognised_by_type_or_by_its_start() {
    assert!(looks_like_html(Some("text/html; charset=utf-8"), "x"));
    assert!(looks_like_html(Some("application/xhtml+xml"), "x"));
    assert!(looks_like_html(None, "  <!DOCTYPE html><p>x"));
    assert!(looks_like_html(Some("application/octet-stream"), "<html>"));
    assert!(!looks_like_html(Some("text/plain"), "<html>"));
    assert!(!looks_like_html(Some("application/json"), "{}"));
    assert!(!looks_like_html(None, "plain words"));
}

#[test]
fn cutting_counts_characters() {
    assert_eq!(cut_chars("héllo", 3), ("hél".to_owned(), true));
    assert_eq!(cut_chars("héllo", 5), ("héllo".to_owned(), false));
    assert_eq!(cut_chars("", 5), (String::new(), false));
}

use std::collections::BTreeSet;

use super::*;

fn yaml(text: &str) -> Value {
    let v: Value = serde_yaml_ng::from_str(text).unwrap();
    if v.is_null() {
        Value::Mapping(Default::default())
    } else {
        v
    }
}

#[test]
fn the_originals_stdio_declaration_parses_with_its_defaults() {
    let m = ServerManifest::parse(&yaml(
        "command: uvx\nargs: [mcp-server-time, --local-timezone, UTC, 3]\nenv:\n  TZ_TOKEN: abc\n  N: 5\n",
    ))
    .unwrap();
    assert!(m.enabled);
    assert_eq!(m.transport, Transport::Stdio);
    assert_eq!(m.command.as_deref(), Some("uvx"));
    assert_eq!(m.args, ["mcp-server-time", "--local-timezone", "UTC", "3"]);
    assert_eq!(m.env.get("N").map(String::as_str), Some("5"));
    assert_eq!(
        (m.risk, m.approval_policy),
        (Risk::Medium, ApprovalPolicy::Prompt)
    );
    assert_eq!((m.connect_timeout_seconds, m.timeout_seconds), (30.0, 60.0));
    assert!(!m.supports_parallel_tool_calls);
    assert_eq!(m.call_capability("time"), "mcp.call:time");
    assert_eq!(
        ServerManifest::connect_capability("time"),
        "mcp.connect:time"
    );
    assert_eq!(m.secret_values(), ["5", "abc"]);
}

#[test]
fn streamable_http_declarations_need_an_http_url() {
    let m = ServerManifest::parse(&yaml(
        "transport: streamable_http\nurl: http://127.0.0.1:3001/mcp\nheaders: {Authorization: Bearer x}\ncapability: net.docs\ntools: {include: ['get_*'], exclude: [get_secret]}\nrisk: high\napproval_policy: auto\nconnect_timeout_seconds: 2.5\n",
    ))
    .unwrap();
    assert_eq!(m.transport, Transport::StreamableHttp);
    assert_eq!(m.call_capability("docs"), "net.docs");
    assert_eq!(m.risk, Risk::High);
    assert_eq!(m.connect_timeout_seconds, 2.5);
    for (text, want) in [
        ("transport: streamable_http\n", "requires url"),
        (
            "transport: streamable_http\nurl: ftp://x/\n",
            "must start with http",
        ),
        ("transport: streamable_http\nurl: '  '\n", "requires url"),
    ] {
        let e = ServerManifest::parse(&yaml(text)).unwrap_err();
        assert!(e.contains(want), "{text}: {e}");
    }
}

#[test]
fn invalid_declarations_name_the_problem() {
    for (text, want) in [
        ("", "requires command"),
        ("command: '   '\n", "requires command"),
        (
            "command: x\nunknown_key: 1\n",
            "unknown field `unknown_key`",
        ),
        ("command: x\ntransport: websocket\n", "transport"),
        ("command: x\nrisk: extreme\n", "risk"),
        ("command: x\napproval_policy: maybe\n", "approval_policy"),
        ("command: x\nargs: {a: b}\n", "args"),
        ("command: x\nenv: [A, B]\n", "env"),
        (
            "command: x\nconnect_timeout_seconds: 0\n",
            "connect_timeout_seconds",
        ),
        ("command: x\ntimeout_seconds: -1\n", "timeout_seconds"),
        ("command: x\ntools: {only: [a]}\n", "tools"),
    ] {
        let e = ServerManifest::parse(&yaml(text)).unwrap_err();
        assert!(e.contains(want), "{text:?}: {e}");
    }
    let off = ServerManifest::parse(&yaml("enabled: false\ncommand: x\n")).unwrap();
    assert!(!off.enabled);
}

#[test]
fn the_tool_filter_includes_then_excludes_with_globs() {
    let f = ToolFilter {
        include: vec!["get_*".into(), "echo".into()],
        exclude: vec!["get_secret*".into()],
    };
    for (tool, want) in [
        ("get_time", true),
        ("get_", true),
        ("echo", true),
        ("echo2", false),
        ("get_secret", false),
        ("get_secret_key", false),
        ("convert_time", false),
    ] {
        assert_eq!(f.selects(tool), want, "{tool}");
    }
    let all = ToolFilter::default();
    assert!(all.selects("anything"));
    let exclude_only = ToolFilter {
        include: vec![],
        exclude: vec!["*_admin".into(), "".into()],
    };
    assert!(!exclude_only.selects("db_admin"));
    assert!(exclude_only.selects("db_read"));
}

#[test]
fn globs() {
    for (p, v, want) in [
        ("a*c", "abc", true),
        ("a*c", "ac", true),
        ("a*c", "acb", false),
        ("*", "", true),
        ("*x*", "axb", true),
        ("*x*", "ab", false),
        ("a*b*c", "aXbYc", true),
        ("a*b*c", "aXcYb", false),
        ("ab*ab", "ab", false),
        ("exact", "exact", true),
        ("exact", "exactly", false),
        ("  ", "", false),
    ] {
        assert_eq!(glob_matches(p, v), want, "{p} {v}");
    }
}

#[test]
fn exposed_names_are_sanitised_unique_and_bounded() {
    let mut used = BTreeSet::new();
    let time = server_prefix("time", &mut used);
    let time2 = server_prefix("TIME", &mut used);
    let odd = server_prefix("9 lives!", &mut used);
    let long = server_prefix(&"x".repeat(80), &mut used);
    assert_eq!(time, "time");
    assert_eq!(time2, "TIME-2");
    assert_eq!(odd, "mcp-9-lives-");
    assert_eq!(long.len(), MAX_PREFIX);

    let mut reserved: BTreeSet<String> = ["read_file".to_owned()].into_iter().collect();
    assert_eq!(
        exposed_name("time", "get_current_time", &mut reserved),
        "time__get_current_time"
    );
    assert_eq!(
        exposed_name("time", "get.current time", &mut reserved),
        "time__get-current-time"
    );
    assert_eq!(
        exposed_name("time", "GET_CURRENT_TIME", &mut reserved),
        "time__GET_CURRENT_TIME-2"
    );
    assert_eq!(exposed_name("time", "", &mut reserved), "time__tool");
    assert_eq!(exposed_name("time", "1st", &mut reserved), "time__tool-1st");
    let bounded = exposed_name(&long, &"y".repeat(100), &mut reserved);
    assert_eq!(bounded.len(), MAX_NAME);
    let again = exposed_name(&long, &"y".repeat(100), &mut reserved);
    assert_eq!(again.len(), MAX_NAME);
    assert!(again.ends_with("-2"), "{again}");
    for name in &reserved {
        assert!(name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
    }
}

#[test]
fn fingerprints_follow_the_declaration_not_its_spelling() {
    let a = yaml("command: uvx\nargs: [mcp-server-time]\nenv: {A: '1', B: '2'}\n");
    let b = yaml("env: {B: '2', A: '1'}\nargs: [mcp-server-time]\ncommand: uvx\n");
    let c = yaml("command: uvx\nargs: [mcp-server-time, --x]\nenv: {A: '1', B: '2'}\n");
    assert_eq!(fingerprint("time", &a), fingerprint("time", &b));
    assert_ne!(fingerprint("time", &a), fingerprint("time", &c));
    assert_ne!(fingerprint("time", &a), fingerprint("clock", &a));
    assert_eq!(fingerprint("time", &a).len(), 32);
}

use super::*;

fn s(v: &str) -> String {
    v.to_owned()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| s(x)).collect()
}

fn grants(defaults: &[&str], slots: &[(&str, &[&str])]) -> CapabilityGrants {
    CapabilityGrants::new(
        strings(defaults),
        slots.iter().map(|(path, keys)| (s(path), strings(keys))),
    )
}

/// (grant, requested capability, expected)
const MATCH_TABLE: &[(&str, &str, bool)] = &[
    // exact keys
    ("fs.read", "fs.read", true),
    ("fs.write", "fs.write", true),
    ("fs.read", "fs.write", false),
    ("fs.read", "fs.rea", false),
    ("fs.read", "fs.read2", false),
    ("fs.read", "FS.READ", false),
    ("tool.call:evolve_core", "tool.call:evolve_core", true),
    ("tool.call:evolve_core", "tool.call:rollback_core", false),
    ("agents.spawn:evolver", "agents.spawn:assistant", false),
    ("a:b:c", "a:b:c", true),
    ("a:b:c", "a:b", false),
    ("a:b", "a:b:c", false),
    // one-level wildcard
    ("mcp.connect:*", "mcp.connect:docs", true),
    ("mcp.call:*", "mcp.call:docs", true),
    ("mcp.call:*", "mcp.connect:docs", false),
    ("mcp.connect:*", "mcp.connect", false),
    ("mcp.connect:*", "mcp.connectx:docs", false),
    ("mcp.conn:*", "mcp.connect:docs", false),
    ("agents.spawn:*", "agents.spawn:evolver", true),
    ("agents.run:*", "agents.spawn:evolver", false),
    ("skill.activate:*", "skill.activate:review", true),
    ("skill.activate:*", "skill.activate", false),
    // `a:*` also covers deeper keys
    ("a:*", "a:b", true),
    ("a:*", "a:b:c", true),
    ("a:*", "a:b:c:d", true),
    ("a:*", "b:a:c", false),
    ("a:*", "ab:c", false),
    ("a:*", "a", false),
    // `a:b:*`
    ("a:b:*", "a:b:c", true),
    ("a:b:*", "a:b:c:d", true),
    ("a:b:*", "a:b", false),
    ("a:b:*", "a:c:d", false),
    ("a:b:*", "a:bc:d", false),
    ("a:b:*", "a:*", false),
    ("a:b:c:*", "a:b:c:d", true),
    ("a:b:c:*", "a:b:c", false),
    ("a:b:c:*", "a:b:d:e", false),
    // keys without `:` only match exactly
    ("fs.*", "fs.read", false),
    ("fs*", "fs.read", false),
    ("fs", "fs.read", false),
    ("session.read", "session.read", true),
    ("task.control", "task.control:list", false),
    // wildcards elsewhere than the last segment are literal text
    ("a:*:c", "a:b:c", false),
    ("*:b", "a:b", false),
    ("a:*:*", "a:b:c", false),
    // bare `*` grants nothing, not even itself
    ("*", "fs.read", false),
    ("*", "a:b", false),
    ("*", "*", false),
    ("*", "", false),
    // secret bindings: only the exact key, never a wildcard
    ("secret.bind:*", "secret.bind:GITHUB_TOKEN", false),
    ("secret.bind:*", "secret.bind:*", false),
    ("secret.bind:A:*", "secret.bind:A:B", false),
    ("secret.bind:GITHUB_TOKEN", "secret.bind:GITHUB_TOKEN", true),
    ("secret.bind:GITHUB_TOKEN", "secret.bind:OTHER", false),
    ("secret.*", "secret.bind:GITHUB_TOKEN", false),
    ("secret.bind", "secret.bind:GITHUB_TOKEN", false),
    // empty segments behave like the Python prefix split
    (":*", ":x", true),
    ("a:*", "a:", true),
    ("a::*", "a::b", true),
    ("a:*", "a::b", true),
    ("", "", true),
    ("", "fs.read", false),
];

#[test]
fn match_table() {
    assert!(
        MATCH_TABLE.len() >= 50,
        "table has {} rows",
        MATCH_TABLE.len()
    );
    let mut failures = Vec::new();
    for (grant, cap, expected) in MATCH_TABLE {
        if matches(grant, cap) != *expected {
            failures.push(format!("matches({grant:?}, {cap:?}) != {expected}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Every grant the Python prefix rule would build for `cap` (except the
/// secret and bare-`*` exceptions) is accepted, and nothing else of the same
/// shape is.
#[test]
fn wildcard_grants_are_exactly_the_dropped_segment_prefixes() {
    let cap = "w:x:y:z";
    let accepted = ["w:x:y:z", "w:x:y:*", "w:x:*", "w:*"];
    let rejected = [
        "w:x:y:z:*",
        "w:x:y",
        "w:x",
        "w",
        "x:*",
        "w:y:*",
        "w:x:z:*",
        "*",
        "w:x:y:z:",
    ];
    for grant in accepted {
        assert!(matches(grant, cap), "{grant} should grant {cap}");
    }
    for grant in rejected {
        assert!(!matches(grant, cap), "{grant} should not grant {cap}");
    }
}

#[test]
fn builtins_are_checked_against_defaults_only() {
    let g = grants(
        &["fs.read"],
        &[("agent/tools/echo", &["fs.write", "terminal.exec"])],
    );
    assert!(g.allows("fs.read", None, &[], false));
    assert!(!g.allows("fs.write", None, &[], false));
    assert!(!g.allows("terminal.exec", None, &[], true));
    // A component list is ignored without a slot path.
    assert!(!g.allows("fs.write", None, &strings(&["fs.write"]), true));
}

#[test]
fn empty_slot_path_means_host() {
    let g = grants(&["fs.read"], &[("", &["fs.write"])]);
    assert!(!g.allows("fs.write", Some(""), &[], false));
    assert!(!g.allows("fs.write", Some(""), &strings(&["fs.write"]), true));
    assert!(g.allows("fs.read", Some(""), &[], false));
}

#[test]
fn slot_grants_apply_to_their_path_only() {
    let g = grants(
        &["fs.read"],
        &[
            ("agent/output/archive_summary", &["fs.write"]),
            ("agent/tools/echo", &["probe.effect"]),
        ],
    );
    assert!(g.allows("fs.write", Some("agent/output/archive_summary"), &[], false));
    assert!(!g.allows("fs.write", Some("agent/tools/echo"), &[], false));
    assert!(g.allows("probe.effect", Some("agent/tools/echo"), &[], false));
    assert!(!g.allows(
        "probe.effect",
        Some("agent/output/archive_summary"),
        &[],
        false
    ));
    // Paths are compared verbatim.
    assert!(!g.allows(
        "fs.write",
        Some("agent/output/archive_summary/"),
        &[],
        false
    ));
    assert!(!g.allows("fs.write", Some("Agent/output/archive_summary"), &[], false));
}

#[test]
fn defaults_apply_to_every_slot_path() {
    let g = grants(&["fs.read", "mcp.call:*"], &[("agent/tools/echo", &[])]);
    for path in [
        None,
        Some("agent/tools/echo"),
        Some("agent/input/base_input"),
    ] {
        assert!(g.allows("fs.read", path, &[], false), "{path:?}");
        assert!(g.allows("mcp.call:docs", path, &[], false), "{path:?}");
        assert!(!g.allows("fs.write", path, &[], false), "{path:?}");
    }
}

#[test]
fn slot_grants_support_wildcards() {
    let g = grants(&[], &[("agent/input/router", &["agents.run:*"])]);
    assert!(g.allows("agents.run:evolver", Some("agent/input/router"), &[], false));
    assert!(!g.allows(
        "agents.spawn:evolver",
        Some("agent/input/router"),
        &[],
        false
    ));
    assert!(!g.allows("agents.run:evolver", None, &[], false));
}

#[test]
fn component_list_only_when_included() {
    let g = grants(&["fs.read"], &[]);
    let component = strings(&["tool.call:project_note", "state.core:*"]);
    let path = Some("agent/tools/project_note");
    // Dispatcher gate: the tool cannot grant its own singular capability.
    assert!(!g.allows("tool.call:project_note", path, &component, false));
    // Implementation grant (ctx.capability.require).
    assert!(g.allows("tool.call:project_note", path, &component, true));
    assert!(g.allows("state.core:write", path, &component, true));
    assert!(!g.allows("state.core:write", path, &component, false));
    assert!(!g.allows("state.session:write", path, &component, true));
    // Defaults still apply either way.
    assert!(g.allows("fs.read", path, &component, false));
    assert!(g.allows("fs.read", path, &component, true));
}

#[test]
fn component_list_applies_even_without_manifest_slot_entry() {
    let g = grants(&[], &[("agent/tools/other", &["x"])]);
    let component = strings(&["probe.effect"]);
    assert!(g.allows("probe.effect", Some("agent/tools/echo"), &component, true));
    assert!(!g.allows("probe.effect", Some("agent/tools/echo"), &component, false));
}

#[test]
fn component_bare_star_and_secret_wildcard_grant_nothing() {
    let g = grants(&[], &[]);
    let component = strings(&["*", "secret.bind:*"]);
    let path = Some("agent/tools/echo");
    assert!(!g.allows("fs.read", path, &component, true));
    assert!(!g.allows("secret.bind:TOKEN", path, &component, true));
}

#[test]
fn default_bare_star_grants_nothing() {
    let g = grants(&["*"], &[("agent/tools/echo", &["*"])]);
    for cap in ["fs.read", "a:b", "*", "tool.call:echo"] {
        assert!(!g.allows(cap, None, &[], false), "{cap}");
        assert!(
            !g.allows(cap, Some("agent/tools/echo"), &[], false),
            "{cap}"
        );
    }
}

#[test]
fn secret_bind_exact_in_defaults_only() {
    let g = grants(
        &["secret.bind:GITHUB_TOKEN", "secret.bind:*", "secret.*", "*"],
        &[("agent/tools/echo", &["secret.bind:SLOT_TOKEN"])],
    );
    assert!(g.allows_exact_default("secret.bind:GITHUB_TOKEN"));
    assert!(!g.allows_exact_default("secret.bind:OTHER"));
    assert!(!g.allows_exact_default("secret.bind:*"));
    assert!(!g.allows_exact_default("secret.bind:SLOT_TOKEN"));
    assert!(!g.allows_exact_default("*"));
    assert!(!g.allows_exact_default(""));
    assert!(!g.allows_exact_default("secret.bind:github_token"));
}

#[test]
fn exact_default_ignores_prefix_grants() {
    let g = grants(&["mcp.call:*", "fs.read"], &[]);
    assert!(!g.allows_exact_default("mcp.call:docs"));
    assert!(g.allows_exact_default("fs.read"));
    assert!(!g.allows_exact_default("mcp.call:*"));
}

#[test]
fn wildcard_secret_grant_fails_the_general_check_too() {
    let g = grants(
        &["secret.bind:*"],
        &[("agent/tools/echo", &["secret.bind:*"])],
    );
    assert!(!g.allows("secret.bind:TOKEN", None, &[], false));
    assert!(!g.allows("secret.bind:TOKEN", Some("agent/tools/echo"), &[], true));
}

#[test]
fn example_assistant_core_grants() {
    let g = grants(
        &[
            "fs.read",
            "fs.write",
            "terminal.exec",
            "task.control",
            "session.read",
            "agents.spawn:evolver",
            "tool.call:evolve_core",
            "tool.call:rollback_core",
            "network.fetch",
            "schedule.manage",
        ],
        &[],
    );
    for cap in [
        "fs.read",
        "terminal.exec",
        "network.fetch",
        "agents.spawn:evolver",
        "tool.call:evolve_core",
    ] {
        assert!(g.allows(cap, None, &[], false), "{cap}");
    }
    // delegate_task with the default core id (the calling core) is denied.
    assert!(!g.allows("agents.spawn:assistant", None, &[], false));
    assert!(!g.allows("mcp.connect:docs", None, &[], false));
    assert!(!g.allows_exact_default("secret.bind:GITHUB_TOKEN"));
}

#[test]
fn empty_grants_deny_everything() {
    let g = CapabilityGrants::default();
    for cap in ["fs.read", "", "*", "a:b", "secret.bind:X"] {
        assert!(!g.allows(cap, None, &[], false), "{cap}");
        assert!(!g.allows(cap, Some("agent/tools/x"), &[], false), "{cap}");
        assert!(!g.allows_exact_default(cap), "{cap}");
    }
}

#[test]
fn duplicate_slot_paths_merge() {
    let g = CapabilityGrants::new(
        Vec::new(),
        vec![
            (s("agent/tools/echo"), strings(&["a"])),
            (s("agent/tools/echo"), strings(&["b"])),
        ],
    );
    assert!(g.allows("a", Some("agent/tools/echo"), &[], false));
    assert!(g.allows("b", Some("agent/tools/echo"), &[], false));
    assert_eq!(g.slot("agent/tools/echo").collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(g.slot("missing").count(), 0);
}

#[test]
fn accessors_are_sorted_and_deduplicated() {
    let g = grants(&["b", "a", "b"], &[]);
    assert_eq!(g.defaults().collect::<Vec<_>>(), ["a", "b"]);
}

#[test]
fn fingerprint_is_order_independent() {
    let a = grants(
        &["fs.read", "fs.write", "mcp.call:*"],
        &[
            ("agent/tools/echo", &["x", "y"]),
            ("agent/output/archive_summary", &["fs.write"]),
        ],
    );
    let b = grants(
        &["mcp.call:*", "fs.write", "fs.read", "fs.read"],
        &[
            ("agent/output/archive_summary", &["fs.write"]),
            ("agent/tools/echo", &["y", "x", "y"]),
        ],
    );
    assert_eq!(a.fingerprint(), b.fingerprint());
    assert_eq!(a, b);
}

#[test]
fn fingerprint_is_stable_text() {
    let g = grants(&["b", "a"], &[("p", &["k"])]);
    assert_eq!(
        g.fingerprint(),
        "caps/v1;defaults={1:a,1:b,};slots=1:p[{1:k,}]"
    );
    assert_eq!(
        CapabilityGrants::default().fingerprint(),
        "caps/v1;defaults={};slots="
    );
}

#[test]
fn fingerprint_ignores_empty_slot_entries() {
    let a = grants(&["fs.read"], &[]);
    let b = grants(&["fs.read"], &[("agent/tools/echo", &[])]);
    assert_eq!(a.fingerprint(), b.fingerprint());
}

#[test]
fn fingerprint_distinguishes_grants() {
    let base = grants(&["fs.read"], &[("p", &["x"])]);
    let variants = [
        grants(&["fs.write"], &[("p", &["x"])]),
        grants(&["fs.read", "fs.write"], &[("p", &["x"])]),
        grants(&["fs.read"], &[("q", &["x"])]),
        grants(&["fs.read"], &[("p", &["y"])]),
        grants(&["fs.read", "x"], &[]),
        grants(&[], &[("p", &["x", "fs.read"])]),
        grants(&["fs.read"], &[("p", &["x"]), ("q", &["x"])]),
    ];
    for v in &variants {
        assert_ne!(base.fingerprint(), v.fingerprint(), "{v:?}");
    }
}

#[test]
fn fingerprint_cannot_be_forged_by_key_text() {
    // Moving a separator-looking string between a key and a slot path must
    // still change the fingerprint.
    let a = grants(&["a,1:b"], &[]);
    let b = grants(&["a", "b"], &[]);
    assert_ne!(a.fingerprint(), b.fingerprint());
    let c = grants(&["x"], &[("p[{1:y,}]", &[])]);
    let d = grants(&["x"], &[("p", &["y"])]);
    assert_ne!(c.fingerprint(), d.fingerprint());
    let e = grants(&["}"], &[]);
    let f = grants(&[], &[("}", &["k"])]);
    assert_ne!(e.fingerprint(), f.fingerprint());
}

#[test]
fn denial_messages() {
    assert_eq!(
        denial_message("fs.write", None),
        "capability denied: fs.write for host"
    );
    assert_eq!(
        denial_message("fs.write", Some("")),
        "capability denied: fs.write for host"
    );
    assert_eq!(
        denial_message("probe.effect", Some("agent/tools/echo")),
        "capability denied: probe.effect for agent/tools/echo"
    );
    assert_eq!(
        exact_denial_message("secret.bind:TOKEN"),
        "exact capability denied: secret.bind:TOKEN for host"
    );
}

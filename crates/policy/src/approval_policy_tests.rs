use super::*;

const A: ApprovalPolicy = ApprovalPolicy::Auto;
const P: ApprovalPolicy = ApprovalPolicy::Prompt;
const D: ApprovalPolicy = ApprovalPolicy::Deny;
const BI: Source = Source::Builtin;
const AU: Source = Source::Authored;
const MC: Source = Source::Mcp;

const TOOL: &str = "probe";
const CAP: &str = "probe.effect";

/// A one-rule approval block, as seen by the entry `probe`
/// (`capability: probe.effect`, `risk: medium`).
#[derive(Debug, Clone, Copy)]
enum Blk {
    /// No block at all.
    N,
    /// `tools: {probe: p}`
    T(ApprovalPolicy),
    /// `capabilities: {probe.effect: p}`
    C(ApprovalPolicy),
    /// `capabilities: {tool.call:probe: p}`
    K(ApprovalPolicy),
    /// `risks: {medium: p}`
    R(ApprovalPolicy),
    /// `default: p`
    F(ApprovalPolicy),
    /// `tools: {other: p}` (does not apply)
    X(ApprovalPolicy),
    /// `risks: {low: p}` (does not apply)
    L(ApprovalPolicy),
}
use Blk::*;

fn block(b: Blk) -> Option<ApprovalBlock> {
    let mut out = ApprovalBlock::default();
    match b {
        N => return None,
        T(p) => {
            out.tools.insert(TOOL.to_owned(), p);
        }
        C(p) => {
            out.capabilities.insert(CAP.to_owned(), p);
        }
        K(p) => {
            out.capabilities.insert(format!("tool.call:{TOOL}"), p);
        }
        R(p) => {
            out.risks.insert(Risk::Medium, p);
        }
        F(p) => out.default = Some(p),
        X(p) => {
            out.tools.insert("other".to_owned(), p);
        }
        L(p) => {
            out.risks.insert(Risk::Low, p);
        }
    }
    Some(out)
}

fn entry(policy: ApprovalPolicy) -> Metadata {
    Metadata {
        risk: Risk::Medium,
        capability: Some(CAP.to_owned()),
        approval_policy: policy,
        model_output_policy: "content".to_owned(),
        display_policy: "summary".to_owned(),
        enabled: true,
    }
}

fn policy_override(p: ApprovalPolicy) -> MetadataOverride {
    MetadataOverride {
        approval_policy: Some(p),
        ..MetadataOverride::default()
    }
}

/// (source, registry policy, `tools.metadata` approval_policy, core block,
/// global block, expected effective policy)
type Row = (
    Source,
    ApprovalPolicy,
    Option<ApprovalPolicy>,
    Blk,
    Blk,
    ApprovalPolicy,
);

#[rustfmt::skip]
const POLICY_TABLE: &[Row] = &[
    (BI, A, None, N, N, A),
    (BI, A, None, N, T(A), A),
    (BI, A, None, N, T(P), P),
    (BI, A, None, N, T(D), D),
    (BI, A, None, T(A), N, A),
    (BI, A, None, T(A), T(A), A),
    (BI, A, None, T(A), T(P), P),
    (BI, A, None, T(A), T(D), D),
    (BI, A, None, T(P), N, P),
    (BI, A, None, T(P), T(A), P),
    (BI, A, None, T(P), T(P), P),
    (BI, A, None, T(P), T(D), D),
    (BI, A, None, T(D), N, D),
    (BI, A, None, T(D), T(A), D),
    (BI, A, None, T(D), T(P), D),
    (BI, A, None, T(D), T(D), D),
    (BI, P, None, N, N, P),
    (BI, P, None, N, T(A), P),
    (BI, P, None, N, T(P), P),
    (BI, P, None, N, T(D), D),
    (BI, P, None, T(A), N, P),
    (BI, P, None, T(A), T(A), P),
    (BI, P, None, T(A), T(P), P),
    (BI, P, None, T(A), T(D), D),
    (BI, P, None, T(P), N, P),
    (BI, P, None, T(P), T(A), P),
    (BI, P, None, T(P), T(P), P),
    (BI, P, None, T(P), T(D), D),
    (BI, P, None, T(D), N, D),
    (BI, P, None, T(D), T(A), D),
    (BI, P, None, T(D), T(P), D),
    (BI, P, None, T(D), T(D), D),
    (BI, D, None, N, N, D),
    (BI, D, None, N, T(A), D),
    (BI, D, None, N, T(P), D),
    (BI, D, None, N, T(D), D),
    (BI, D, None, T(A), N, D),
    (BI, D, None, T(A), T(A), D),
    (BI, D, None, T(A), T(P), D),
    (BI, D, None, T(A), T(D), D),
    (BI, D, None, T(P), N, D),
    (BI, D, None, T(P), T(A), D),
    (BI, D, None, T(P), T(P), D),
    (BI, D, None, T(P), T(D), D),
    (BI, D, None, T(D), N, D),
    (BI, D, None, T(D), T(A), D),
    (BI, D, None, T(D), T(P), D),
    (BI, D, None, T(D), T(D), D),
    (BI, A, None, C(A), N, A),
    (AU, A, None, N, C(A), A),
    (BI, A, None, C(D), N, D),
    (AU, A, None, N, C(D), D),
    (BI, A, None, K(A), N, A),
    (AU, A, None, N, K(A), A),
    (BI, A, None, K(D), N, D),
    (AU, A, None, N, K(D), D),
    (BI, A, None, R(A), N, A),
    (AU, A, None, N, R(A), A),
    (BI, A, None, R(D), N, D),
    (AU, A, None, N, R(D), D),
    (BI, A, None, F(A), N, A),
    (AU, A, None, N, F(A), A),
    (BI, A, None, F(D), N, D),
    (AU, A, None, N, F(D), D),
    (BI, P, None, C(A), N, P),
    (AU, P, None, N, C(A), P),
    (BI, P, None, C(D), N, D),
    (AU, P, None, N, C(D), D),
    (BI, P, None, K(A), N, P),
    (AU, P, None, N, K(A), P),
    (BI, P, None, K(D), N, D),
    (AU, P, None, N, K(D), D),
    (BI, P, None, R(A), N, P),
    (AU, P, None, N, R(A), P),
    (BI, P, None, R(D), N, D),
    (AU, P, None, N, R(D), D),
    (BI, P, None, F(A), N, P),
    (AU, P, None, N, F(A), P),
    (BI, P, None, F(D), N, D),
    (AU, P, None, N, F(D), D),
    (BI, D, None, C(A), N, D),
    (AU, D, None, N, C(A), D),
    (BI, D, None, C(D), N, D),
    (AU, D, None, N, C(D), D),
    (BI, D, None, K(A), N, D),
    (AU, D, None, N, K(A), D),
    (BI, D, None, K(D), N, D),
    (AU, D, None, N, K(D), D),
    (BI, D, None, R(A), N, D),
    (AU, D, None, N, R(A), D),
    (BI, D, None, R(D), N, D),
    (AU, D, None, N, R(D), D),
    (BI, D, None, F(A), N, D),
    (AU, D, None, N, F(A), D),
    (BI, D, None, F(D), N, D),
    (AU, D, None, N, F(D), D),
    (BI, A, None, X(D), L(D), A),
    (BI, P, None, X(D), L(D), P),
    (BI, D, None, X(D), L(D), D),
    (BI, A, Some(A), N, N, A),
    (BI, A, Some(P), N, N, P),
    (BI, A, Some(D), N, N, D),
    (BI, P, Some(A), N, N, P),
    (BI, P, Some(P), N, N, P),
    (BI, P, Some(D), N, N, D),
    (BI, D, Some(A), N, N, D),
    (BI, D, Some(P), N, N, D),
    (BI, D, Some(D), N, N, D),
    (AU, A, Some(A), N, N, A),
    (AU, A, Some(P), N, N, P),
    (AU, A, Some(D), N, N, D),
    (AU, P, Some(A), N, N, A),
    (AU, P, Some(P), N, N, P),
    (AU, P, Some(D), N, N, D),
    (AU, D, Some(A), N, N, A),
    (AU, D, Some(P), N, N, P),
    (AU, D, Some(D), N, N, D),
    (MC, A, Some(A), N, N, A),
    (MC, A, Some(P), N, N, P),
    (MC, A, Some(D), N, N, D),
    (MC, P, Some(A), N, N, A),
    (MC, P, Some(P), N, N, P),
    (MC, P, Some(D), N, N, D),
    (MC, D, Some(A), N, N, A),
    (MC, D, Some(P), N, N, P),
    (MC, D, Some(D), N, N, D),
    (BI, A, Some(A), T(A), T(P), P),
    (BI, A, Some(P), T(A), T(P), P),
    (BI, A, Some(D), T(A), T(P), D),
    (BI, P, Some(A), T(A), T(P), P),
    (BI, P, Some(P), T(A), T(P), P),
    (BI, P, Some(D), T(A), T(P), D),
    (BI, D, Some(A), T(A), T(P), D),
    (BI, D, Some(P), T(A), T(P), D),
    (BI, D, Some(D), T(A), T(P), D),
    (AU, A, Some(A), T(A), T(P), P),
    (AU, A, Some(P), T(A), T(P), P),
    (AU, A, Some(D), T(A), T(P), D),
    (AU, P, Some(A), T(A), T(P), P),
    (AU, P, Some(P), T(A), T(P), P),
    (AU, P, Some(D), T(A), T(P), D),
    (AU, D, Some(A), T(A), T(P), P),
    (AU, D, Some(P), T(A), T(P), P),
    (AU, D, Some(D), T(A), T(P), D),
];

#[test]
fn policy_table() {
    assert!(
        POLICY_TABLE.len() >= 60,
        "table has {} rows",
        POLICY_TABLE.len()
    );
    let mut failures = Vec::new();
    for (i, &(source, registry, ovr, core, global, expected)) in POLICY_TABLE.iter().enumerate() {
        let base = entry(registry);
        let resolved = match ovr {
            Some(p) => apply_override(&base, &policy_override(p), source),
            None => base,
        };
        let core_block = block(core);
        let global_block = block(global);
        let got = effective_policy(&resolved, TOOL, core_block.as_ref(), global_block.as_ref());
        if got != expected {
            failures.push(format!(
                "row {i}: {source:?} registry={registry} override={ovr:?} core={core:?} \
                 global={global:?}: got {got}, want {expected}"
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

const ALL_BLOCKS: [Blk; 22] = [
    N,
    T(A),
    T(P),
    T(D),
    C(A),
    C(P),
    C(D),
    K(A),
    K(P),
    K(D),
    R(A),
    R(P),
    R(D),
    F(A),
    F(P),
    F(D),
    X(A),
    X(P),
    X(D),
    L(A),
    L(P),
    L(D),
];

/// Exhaustive over source × registry × override × core × global: the fold is
/// never weaker than the (overridden) entry policy nor than any block that
/// applies, and a `deny` anywhere wins.
#[test]
fn fold_is_monotone_exhaustively() {
    let overrides = [None, Some(A), Some(P), Some(D)];
    let mut checked = 0usize;
    for source in [BI, AU, MC] {
        for registry in ApprovalPolicy::ALL {
            for ovr in overrides {
                let base = entry(registry);
                let resolved = match ovr {
                    Some(p) => apply_override(&base, &policy_override(p), source),
                    None => base,
                };
                if source == BI {
                    assert!(resolved.approval_policy >= registry);
                }
                for core in ALL_BLOCKS {
                    for global in ALL_BLOCKS {
                        let cb = block(core);
                        let gb = block(global);
                        let got = effective_policy(&resolved, TOOL, cb.as_ref(), gb.as_ref());
                        assert!(got >= resolved.approval_policy);
                        if source == BI {
                            assert!(got >= registry, "builtin weakened");
                        }
                        for b in [&cb, &gb].into_iter().flatten() {
                            if let Some(sel) = block_policy(b, TOOL, Some(CAP), Risk::Medium) {
                                assert!(got >= sel);
                            }
                        }
                        // The fold is exactly the maximum of its inputs.
                        let want = [&cb, &gb]
                            .into_iter()
                            .flatten()
                            .filter_map(|b| block_policy(b, TOOL, Some(CAP), Risk::Medium))
                            .fold(resolved.approval_policy, ApprovalPolicy::max);
                        assert_eq!(got, want);
                        if matches!(core, T(D) | C(D) | K(D) | R(D) | F(D))
                            || matches!(global, T(D) | C(D) | K(D) | R(D) | F(D))
                        {
                            assert_eq!(got, D, "deny must win: {core:?} {global:?}");
                        }
                        if matches!(core, N | X(_) | L(_)) && matches!(global, N | X(_) | L(_)) {
                            assert_eq!(got, resolved.approval_policy);
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(checked, 3 * 3 * 4 * 22 * 22);
}

#[test]
fn core_deny_beats_global_auto_and_registry_auto() {
    let core = block(T(D));
    let global = block(F(A));
    for registry in ApprovalPolicy::ALL {
        assert_eq!(
            effective_policy(&entry(registry), TOOL, core.as_ref(), global.as_ref()),
            D
        );
    }
}

#[test]
fn global_auto_cannot_weaken_builtin_prompt() {
    // Python TOOL-03: global tools.evolve_core = auto leaves the registry prompt.
    let mut evolve = Metadata::builtin_default();
    evolve.capability = Some("tool.call:evolve_core".to_owned());
    evolve.approval_policy = P;
    evolve.risk = Risk::High;
    let mut global = ApprovalBlock::default();
    global.tools.insert("evolve_core".to_owned(), A);
    assert_eq!(
        effective_policy(&evolve, "evolve_core", None, Some(&global)),
        P
    );
    let mut core = ApprovalBlock::default();
    core.tools.insert("evolve_core".to_owned(), D);
    assert_eq!(
        effective_policy(&evolve, "evolve_core", Some(&core), Some(&global)),
        D
    );
}

#[test]
fn authored_global_auto_cannot_weaken_prompt() {
    // Python TOOL-01.
    let tool = Metadata {
        capability: Some("probe.effect".to_owned()),
        ..Metadata::authored_default()
    };
    let mut global = ApprovalBlock::default();
    global.tools.insert("global_auto_probe".to_owned(), A);
    assert_eq!(
        effective_policy(&tool, "global_auto_probe", None, Some(&global)),
        P
    );
}

#[test]
fn authored_core_prompt_tightens_auto() {
    let tool = Metadata {
        approval_policy: A,
        ..Metadata::authored_default()
    };
    let mut core = ApprovalBlock::default();
    core.tools.insert("core_prompt_probe".to_owned(), P);
    assert_eq!(
        effective_policy(&tool, "core_prompt_probe", Some(&core), None),
        P
    );
    assert_eq!(effective_policy(&tool, "core_prompt_probe", None, None), A);
}

// ---- selection inside one block -------------------------------------------

#[test]
fn select_is_first_match_not_strictest() {
    let mut b = ApprovalBlock {
        default: Some(D),
        ..ApprovalBlock::default()
    };
    b.risks.insert(Risk::Medium, P);
    b.capabilities.insert(CAP.to_owned(), D);
    b.tools.insert(TOOL.to_owned(), A);
    assert_eq!(select_policy(&b, TOOL, CAP, Risk::Medium), Some(A));
    assert_eq!(select_policy(&b, "other", CAP, Risk::Medium), Some(D));
    assert_eq!(select_policy(&b, "other", "x", Risk::Medium), Some(P));
    assert_eq!(select_policy(&b, "other", "x", Risk::High), Some(D));
    assert_eq!(
        select_policy(&ApprovalBlock::default(), TOOL, CAP, Risk::Low),
        None
    );
}

#[test]
fn select_order_table() {
    // (tools, capabilities, risks, default, expected)
    type Opt = Option<ApprovalPolicy>;
    let rows: &[(Opt, Opt, Opt, Opt, Opt)] = &[
        (None, None, None, None, None),
        (Some(A), Some(D), Some(D), Some(D), Some(A)),
        (None, Some(A), Some(D), Some(D), Some(A)),
        (None, None, Some(A), Some(D), Some(A)),
        (None, None, None, Some(A), Some(A)),
        (Some(D), Some(A), Some(A), Some(A), Some(D)),
        (None, Some(P), None, Some(A), Some(P)),
        (None, None, Some(P), None, Some(P)),
    ];
    for &(t, c, r, d, want) in rows {
        let mut b = ApprovalBlock {
            default: d,
            ..ApprovalBlock::default()
        };
        if let Some(p) = t {
            b.tools.insert(TOOL.to_owned(), p);
        }
        if let Some(p) = c {
            b.capabilities.insert(CAP.to_owned(), p);
        }
        if let Some(p) = r {
            b.risks.insert(Risk::Medium, p);
        }
        assert_eq!(select_policy(&b, TOOL, CAP, Risk::Medium), want, "{b:?}");
    }
}

#[test]
fn block_consults_entry_capability_and_tool_call() {
    // capabilities[entry cap] = auto, default = prompt: the tool.call:<name>
    // lookup falls through to the default and the stricter answer wins.
    let mut b = ApprovalBlock {
        default: Some(P),
        ..ApprovalBlock::default()
    };
    b.capabilities.insert(CAP.to_owned(), A);
    assert_eq!(block_policy(&b, TOOL, Some(CAP), Risk::Medium), Some(P));
    // Without a default the entry-capability rule stands alone.
    b.default = None;
    assert_eq!(block_policy(&b, TOOL, Some(CAP), Risk::Medium), Some(A));
    // Both capability rules: the stricter wins.
    b.capabilities.insert(format!("tool.call:{TOOL}"), D);
    assert_eq!(block_policy(&b, TOOL, Some(CAP), Risk::Medium), Some(D));
    b.capabilities.insert(format!("tool.call:{TOOL}"), A);
    b.capabilities.insert(CAP.to_owned(), P);
    assert_eq!(block_policy(&b, TOOL, Some(CAP), Risk::Medium), Some(P));
}

#[test]
fn block_without_entry_capability_uses_tool_call_only() {
    let mut b = ApprovalBlock::default();
    b.capabilities.insert(CAP.to_owned(), D);
    assert_eq!(block_policy(&b, TOOL, None, Risk::Medium), None);
    assert_eq!(block_policy(&b, TOOL, Some(""), Risk::Medium), None);
    b.capabilities.insert("tool.call:probe".to_owned(), P);
    assert_eq!(block_policy(&b, TOOL, None, Risk::Medium), Some(P));
    assert_eq!(block_policy(&b, TOOL, Some(""), Risk::Medium), Some(P));
}

#[test]
fn block_capability_equal_to_tool_call_is_looked_up_once() {
    let mut b = ApprovalBlock::default();
    b.capabilities.insert("tool.call:evolve_core".to_owned(), D);
    assert_eq!(
        block_policy(&b, "evolve_core", Some("tool.call:evolve_core"), Risk::High),
        Some(D)
    );
    assert_eq!(
        block_policy(
            &ApprovalBlock::default(),
            "evolve_core",
            Some("tool.call:evolve_core"),
            Risk::High
        ),
        None
    );
}

#[test]
fn block_capability_rules_are_exact_not_wildcards() {
    let mut b = ApprovalBlock::default();
    b.capabilities.insert("mcp.call:*".to_owned(), D);
    assert_eq!(
        block_policy(&b, "docs_search", Some("mcp.call:docs"), Risk::Medium),
        None
    );
}

#[test]
fn block_risk_rule_uses_entry_risk() {
    let mut b = ApprovalBlock::default();
    b.risks.insert(Risk::Critical, D);
    let mut e = entry(A);
    assert_eq!(effective_policy(&e, TOOL, Some(&b), None), A);
    e.risk = Risk::Critical;
    assert_eq!(effective_policy(&e, TOOL, Some(&b), None), D);
}

#[test]
fn override_risk_feeds_block_risk_rules() {
    // A core that raises a builtin's risk also gets its risk rules applied.
    let mut b = ApprovalBlock::default();
    b.risks.insert(Risk::High, D);
    let base = Metadata::builtin_default();
    let raised = apply_override(
        &base,
        &MetadataOverride {
            risk: Some(Risk::High),
            ..MetadataOverride::default()
        },
        BI,
    );
    assert_eq!(effective_policy(&base, "todo", Some(&b), None), A);
    assert_eq!(effective_policy(&raised, "todo", Some(&b), None), D);
}

// ---- overrides ------------------------------------------------------------

fn risk_override(r: Risk) -> MetadataOverride {
    MetadataOverride {
        risk: Some(r),
        ..MetadataOverride::default()
    }
}

#[test]
fn builtin_risk_is_never_lowered() {
    for base_risk in Risk::ALL {
        for new in Risk::ALL {
            let base = Metadata {
                risk: base_risk,
                ..Metadata::builtin_default()
            };
            let out = apply_override(&base, &risk_override(new), BI);
            assert_eq!(out.risk, base_risk.max(new), "{base_risk} -> {new}");
            assert!(out.risk >= base_risk);
        }
    }
}

#[test]
fn authored_and_mcp_risk_take_any_value() {
    for source in [AU, MC] {
        for base_risk in Risk::ALL {
            for new in Risk::ALL {
                let base = Metadata {
                    risk: base_risk,
                    ..Metadata::authored_default()
                };
                assert_eq!(apply_override(&base, &risk_override(new), source).risk, new);
            }
        }
    }
}

#[test]
fn override_policy_table() {
    // (source, registry, override, expected entry policy)
    let rows: &[(Source, ApprovalPolicy, ApprovalPolicy, ApprovalPolicy)] = &[
        (BI, A, A, A),
        (BI, A, P, P),
        (BI, A, D, D),
        (BI, P, A, P),
        (BI, P, P, P),
        (BI, P, D, D),
        (BI, D, A, D),
        (BI, D, P, D),
        (BI, D, D, D),
        (AU, A, A, A),
        (AU, A, D, D),
        (AU, P, A, A),
        (AU, D, A, A),
        (AU, D, P, P),
        (MC, P, A, A),
        (MC, D, P, P),
        (MC, A, D, D),
    ];
    for &(source, registry, new, want) in rows {
        let out = apply_override(&entry(registry), &policy_override(new), source);
        assert_eq!(out.approval_policy, want, "{source:?} {registry} -> {new}");
    }
}

#[test]
fn weakening_override_leaves_other_fields_applied() {
    let base = Metadata {
        risk: Risk::High,
        capability: Some("network.fetch".to_owned()),
        approval_policy: P,
        ..Metadata::builtin_default()
    };
    let o = MetadataOverride {
        risk: Some(Risk::Low),
        capability: Some(Some("network.fetch:extract".to_owned())),
        approval_policy: Some(A),
        model_output_policy: Some("summary".to_owned()),
        display_policy: Some("full".to_owned()),
        enabled: Some(true),
    };
    let out = apply_override(&base, &o, BI);
    assert_eq!(
        out,
        Metadata {
            risk: Risk::High,
            capability: Some("network.fetch:extract".to_owned()),
            approval_policy: P,
            model_output_policy: "summary".to_owned(),
            display_policy: "full".to_owned(),
            enabled: true,
        }
    );
}

#[test]
fn empty_override_is_identity() {
    for source in [BI, AU, MC] {
        for base in [
            Metadata::builtin_default(),
            Metadata::authored_default(),
            entry(D),
        ] {
            assert_eq!(
                apply_override(&base, &MetadataOverride::default(), source),
                base
            );
        }
    }
}

#[test]
fn enabled_false_disables_every_source() {
    let o = MetadataOverride {
        enabled: Some(false),
        ..MetadataOverride::default()
    };
    for source in [BI, AU, MC] {
        assert!(!apply_override(&entry(P), &o, source).enabled);
    }
    let on = MetadataOverride {
        enabled: Some(true),
        ..MetadataOverride::default()
    };
    let disabled = Metadata {
        enabled: false,
        ..Metadata::authored_default()
    };
    assert!(apply_override(&disabled, &on, AU).enabled);
    assert!(!apply_override(&disabled, &MetadataOverride::default(), AU).enabled);
}

#[test]
fn capability_override_null_or_empty_keeps_registry_capability() {
    for source in [BI, AU, MC] {
        for value in [None, Some(String::new())] {
            let o = MetadataOverride {
                capability: Some(value.clone()),
                ..MetadataOverride::default()
            };
            assert_eq!(
                apply_override(&entry(P), &o, source).capability.as_deref(),
                Some(CAP),
                "{source:?} {value:?}"
            );
        }
        let o = MetadataOverride {
            capability: Some(Some("other.cap".to_owned())),
            ..MetadataOverride::default()
        };
        assert_eq!(
            apply_override(&entry(P), &o, source).capability.as_deref(),
            Some("other.cap")
        );
        // A capability can be added where the registry had none.
        let none = Metadata::builtin_default();
        assert_eq!(
            apply_override(&none, &o, source).capability.as_deref(),
            Some("other.cap")
        );
    }
}

#[test]
fn empty_display_hints_are_ignored() {
    let o = MetadataOverride {
        model_output_policy: Some(String::new()),
        display_policy: Some(String::new()),
        ..MetadataOverride::default()
    };
    let out = apply_override(&Metadata::builtin_default(), &o, AU);
    assert_eq!(out.model_output_policy, "content");
    assert_eq!(out.display_policy, "summary");
}

#[test]
fn seed_example_overrides() {
    // tools.metadata: web_extract: {approval_policy: deny};
    //                 project_note: {risk: low, enabled: false}
    let web_extract = Metadata {
        risk: Risk::Medium,
        capability: Some("network.fetch".to_owned()),
        approval_policy: P,
        ..Metadata::builtin_default()
    };
    let out = apply_override(&web_extract, &policy_override(D), BI);
    assert_eq!(effective_policy(&out, "web_extract", None, None), D);

    let project_note = Metadata::authored_default();
    let o = MetadataOverride {
        risk: Some(Risk::Low),
        enabled: Some(false),
        ..MetadataOverride::default()
    };
    let out = apply_override(&project_note, &o, AU);
    assert_eq!(out.risk, Risk::Low);
    assert!(!out.enabled);
}

// ---- handler-time requests ------------------------------------------------

#[test]
fn request_policy_is_stricter_of_both() {
    for baseline in ApprovalPolicy::ALL {
        for effective in ApprovalPolicy::ALL {
            let got = request_policy(baseline, effective);
            assert_eq!(got, baseline.max(effective));
            assert!(got >= baseline && got >= effective);
        }
    }
}

#[test]
fn terminal_guard_prompt_survives_global_auto() {
    // terminal registry prompt; global tools.terminal = auto; guard prompt/high.
    let terminal = Metadata {
        risk: Risk::High,
        capability: Some("terminal.exec".to_owned()),
        approval_policy: P,
        ..Metadata::builtin_default()
    };
    let mut global = ApprovalBlock::default();
    global.tools.insert("terminal".to_owned(), A);
    let effective = effective_policy(&terminal, "terminal", None, Some(&global));
    assert_eq!(request_policy(P, effective), P);
    assert_eq!(request_risk(Risk::High, terminal.risk), Risk::High);
}

#[test]
fn in_workspace_read_stays_auto_unless_tightened() {
    let read_file = Metadata {
        capability: Some("fs.read".to_owned()),
        ..Metadata::builtin_default()
    };
    assert_eq!(
        request_policy(A, effective_policy(&read_file, "read_file", None, None)),
        A
    );
    let mut core = ApprovalBlock::default();
    core.capabilities.insert("fs.read".to_owned(), P);
    let eff = effective_policy(&read_file, "read_file", Some(&core), None);
    assert_eq!(request_policy(A, eff), P);
    // A sensitive/outside read starts at prompt; auto everywhere cannot lower it.
    let mut auto_all = ApprovalBlock {
        default: Some(A),
        ..ApprovalBlock::default()
    };
    auto_all.tools.insert("read_file".to_owned(), A);
    let eff = effective_policy(&read_file, "read_file", Some(&auto_all), Some(&auto_all));
    assert_eq!(request_policy(P, eff), P);
}

#[test]
fn request_risk_is_higher_of_both() {
    for handler in Risk::ALL {
        for e in Risk::ALL {
            assert_eq!(request_risk(handler, e), handler.max(e));
        }
    }
}

// ---- orders, parsing, serde -----------------------------------------------

#[test]
fn orders() {
    assert!(A < P && P < D);
    assert!(Risk::Low < Risk::Medium && Risk::Medium < Risk::High && Risk::High < Risk::Critical);
    for a in ApprovalPolicy::ALL {
        for b in ApprovalPolicy::ALL {
            assert_eq!(stricter_policy(a, b), stricter_policy(b, a));
            assert!(stricter_policy(a, b) >= a);
        }
        assert_eq!(stricter_policy(a, D), D);
        assert_eq!(stricter_policy(a, A), a);
    }
    for a in Risk::ALL {
        for b in Risk::ALL {
            assert_eq!(higher_risk(a, b), higher_risk(b, a));
            assert!(higher_risk(a, b) >= a);
        }
        assert_eq!(higher_risk(a, Risk::Critical), Risk::Critical);
    }
}

#[test]
fn defaults_match_registry_resolution() {
    let b = Metadata::builtin_default();
    assert_eq!(
        (b.risk, b.approval_policy, b.capability.clone()),
        (Risk::Low, A, None)
    );
    assert_eq!(
        (b.model_output_policy.as_str(), b.display_policy.as_str()),
        ("content", "summary")
    );
    assert!(b.enabled);
    let a = Metadata::authored_default();
    assert_eq!((a.risk, a.approval_policy), (Risk::Medium, P));
    assert!(Source::Authored.may_loosen() && Source::Mcp.may_loosen());
    assert!(!Source::Builtin.may_loosen());
}

#[test]
fn parsing_is_exact() {
    // One spelling, as in the manifests: no trimming, no case folding.
    for odd in [" Prompt ", "DENY", "Auto"] {
        assert!(odd.parse::<ApprovalPolicy>().is_err(), "{odd:?}");
    }
    assert_eq!("auto".parse::<ApprovalPolicy>(), Ok(A));
    assert!("Critical\n".parse::<Risk>().is_err());
    let err = "ask".parse::<ApprovalPolicy>().unwrap_err();
    assert_eq!(err.to_string(), r#"invalid approval policy: "ask""#);
    assert!("".parse::<ApprovalPolicy>().is_err());
    assert_eq!(
        "severe".parse::<Risk>().unwrap_err().to_string(),
        r#"invalid tool risk: "severe""#
    );
    for p in ApprovalPolicy::ALL {
        assert_eq!(p.to_string().parse::<ApprovalPolicy>(), Ok(p));
    }
    for r in Risk::ALL {
        assert_eq!(r.as_str().parse::<Risk>(), Ok(r));
    }
}

#[test]
fn serde_round_trip() {
    assert_eq!(serde_json::to_string(&P).unwrap(), "\"prompt\"");
    assert_eq!(
        serde_json::to_string(&Risk::Critical).unwrap(),
        "\"critical\""
    );
    assert_eq!(
        serde_json::from_str::<ApprovalPolicy>("\"deny\"").unwrap(),
        D
    );
    assert!(serde_json::from_str::<ApprovalPolicy>("\"Deny\"").is_err());
    assert!(serde_json::from_str::<ApprovalPolicy>("\"maybe\"").is_err());
    assert_eq!(serde_json::to_string(&Source::Mcp).unwrap(), "\"mcp\"");
}

#[test]
fn approval_block_deserializes() {
    let b: ApprovalBlock = serde_json::from_str(
        r#"{"default": null, "tools": {"terminal": "prompt"},
            "capabilities": {"fs.write": "prompt"}, "risks": {"critical": "deny"}}"#,
    )
    .unwrap();
    assert_eq!(b.default, None);
    assert_eq!(b.tools.get("terminal"), Some(&P));
    assert_eq!(b.capabilities.get("fs.write"), Some(&P));
    assert_eq!(b.risks.get(&Risk::Critical), Some(&D));
    let empty: ApprovalBlock = serde_json::from_str("{}").unwrap();
    assert_eq!(empty, ApprovalBlock::default());
    assert!(serde_json::from_str::<ApprovalBlock>(r#"{"extra": 1}"#).is_err());
    assert!(serde_json::from_str::<ApprovalBlock>(r#"{"risks": {"severe": "deny"}}"#).is_err());
    assert!(serde_json::from_str::<ApprovalBlock>(r#"{"default": "sometimes"}"#).is_err());
}

#[test]
fn metadata_override_deserializes() {
    let absent: MetadataOverride = serde_json::from_str(r#"{"risk": "high"}"#).unwrap();
    assert_eq!(absent.risk, Some(Risk::High));
    assert_eq!(absent.capability, None);
    let null: MetadataOverride = serde_json::from_str(r#"{"capability": null}"#).unwrap();
    assert_eq!(null.capability, Some(None));
    let set: MetadataOverride = serde_json::from_str(
        r#"{"capability": "x.y", "enabled": false, "approval_policy": "deny"}"#,
    )
    .unwrap();
    assert_eq!(set.capability, Some(Some("x.y".to_owned())));
    assert_eq!(set.enabled, Some(false));
    assert_eq!(set.approval_policy, Some(D));
    assert!(serde_json::from_str::<MetadataOverride>(r#"{"timeout_seconds": 3}"#).is_err());
    assert!(serde_json::from_str::<MetadataOverride>(r#"{"risk": "severe"}"#).is_err());
}

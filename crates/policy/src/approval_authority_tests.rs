use super::*;

const ROLES: [Role; 3] = [Role::Member, Role::Operator, Role::Admin];

fn rank(r: Risk) -> u8 {
    match r {
        Risk::Low => 1,
        Risk::Medium => 2,
        Risk::High => 3,
        Risk::Critical => 4,
    }
}

fn max_rank(m: MemberMaxRisk) -> u8 {
    match m.as_str() {
        "none" => 0,
        "low" => 1,
        "medium" => 2,
        "high" => 3,
        "critical" => 4,
        other => panic!("unexpected {other}"),
    }
}

fn policy(s: &str) -> TenantPolicy {
    TenantPolicy {
        member_max_risk: MemberMaxRisk::parse(s).unwrap(),
    }
}

/// The default, written out case by case: members decide their own low,
/// medium and high; critical needs an operator or admin; nobody but an
/// operator ever sees another principal's approval, and only one that needs
/// an operator.
#[test]
fn default_policy_table() {
    use Access::*;
    use Risk::*;
    use Role::*;
    let p = TenantPolicy::default();
    let cases: &[(Role, bool, Risk, Access)] = &[
        (Member, true, Low, Decide),
        (Member, true, Medium, Decide),
        (Member, true, High, Decide),
        (Member, true, Critical, Forbidden),
        (Member, false, Low, Hidden),
        (Member, false, Medium, Hidden),
        (Member, false, High, Hidden),
        (Member, false, Critical, Hidden),
        (Operator, true, Low, Decide),
        (Operator, true, Medium, Decide),
        (Operator, true, High, Decide),
        (Operator, true, Critical, Decide),
        (Operator, false, Low, Hidden),
        (Operator, false, Medium, Hidden),
        (Operator, false, High, Hidden),
        (Operator, false, Critical, Decide),
        (Admin, true, Low, Decide),
        (Admin, true, Medium, Decide),
        (Admin, true, High, Decide),
        (Admin, true, Critical, Decide),
        (Admin, false, Low, Hidden),
        (Admin, false, Medium, Hidden),
        (Admin, false, High, Hidden),
        (Admin, false, Critical, Decide),
    ];
    assert_eq!(cases.len(), 3 * 2 * 4);
    for &(role, own, risk, want) in cases {
        assert_eq!(
            may_decide(role, own, risk, p),
            want,
            "{role:?} own={own} {risk}"
        );
    }
}

/// Every role × ownership × risk × policy, against an independent
/// formulation on numeric ranks.
#[test]
fn every_combination_matches_the_rank_rule() {
    let mut seen = 0;
    for m in MemberMaxRisk::ALL {
        let p = TenantPolicy { member_max_risk: m };
        for risk in Risk::ALL {
            let member_may = rank(risk) <= max_rank(m);
            let req = requirement(p, risk);
            assert_eq!(
                req,
                if member_may {
                    Requirement::Owner
                } else {
                    Requirement::Operator
                },
                "{m} {risk}"
            );
            for role in ROLES {
                for own in [true, false] {
                    let is_op = matches!(role, Role::Operator | Role::Admin);
                    let want = if own && (member_may || is_op) {
                        Access::Decide
                    } else if own {
                        Access::Forbidden
                    } else if !member_may && is_op {
                        Access::Decide
                    } else {
                        Access::Hidden
                    };
                    assert_eq!(
                        may_decide(role, own, risk, p),
                        want,
                        "{role:?} own={own} {risk} max={m}"
                    );
                    seen += 1;
                }
            }
        }
    }
    assert_eq!(seen, 5 * 4 * 3 * 2);
}

#[test]
fn medium_needs_an_operator_when_members_stop_at_low() {
    let p = policy("low");
    assert_eq!(requirement(p, Risk::Low), Requirement::Owner);
    for r in [Risk::Medium, Risk::High, Risk::Critical] {
        assert_eq!(requirement(p, r), Requirement::Operator, "{r}");
        assert_eq!(may_decide(Role::Member, true, r, p), Access::Forbidden);
        assert_eq!(may_decide(Role::Operator, false, r, p), Access::Decide);
    }
}

#[test]
fn none_leaves_every_decision_to_operators_and_critical_to_members() {
    for r in Risk::ALL {
        assert_eq!(requirement(policy("none"), r), Requirement::Operator);
        assert_eq!(requirement(policy("critical"), r), Requirement::Owner);
        assert_eq!(
            may_decide(Role::Member, true, r, policy("none")),
            Access::Forbidden
        );
        // With everything left to members, operators no longer see others' requests.
        assert_eq!(
            may_decide(Role::Admin, false, r, policy("critical")),
            Access::Hidden
        );
    }
}

#[test]
fn access_on_recorded_requirements() {
    use Access::*;
    use Requirement::*;
    let cases: &[(Role, bool, Requirement, Access)] = &[
        (Role::Member, true, Owner, Decide),
        (Role::Member, true, Operator, Forbidden),
        (Role::Member, false, Owner, Hidden),
        (Role::Member, false, Operator, Hidden),
        (Role::Operator, true, Owner, Decide),
        (Role::Operator, true, Operator, Decide),
        (Role::Operator, false, Owner, Hidden),
        (Role::Operator, false, Operator, Decide),
        (Role::Admin, true, Owner, Decide),
        (Role::Admin, true, Operator, Decide),
        (Role::Admin, false, Owner, Hidden),
        (Role::Admin, false, Operator, Decide),
    ];
    for &(role, own, req, want) in cases {
        assert_eq!(access(role, own, req), want, "{role:?} own={own} {req:?}");
    }
}

#[test]
fn member_max_risk_parses_exact_spellings_only() {
    for (s, want) in [
        ("none", None),
        ("low", Some(Risk::Low)),
        ("medium", Some(Risk::Medium)),
        ("high", Some(Risk::High)),
        ("critical", Some(Risk::Critical)),
    ] {
        let m = MemberMaxRisk::parse(s).unwrap();
        assert_eq!(m, MemberMaxRisk::new(want));
        assert_eq!(m.as_str(), s);
        assert_eq!(m.to_string(), s);
    }
    for bad in ["", "High", " high", "severe", "operator", "null", "all"] {
        assert_eq!(MemberMaxRisk::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn default_is_high() {
    assert_eq!(TenantPolicy::default(), policy("high"));
}

#[test]
fn stored_requirements_are_exact_and_unknown_ones_are_errors() {
    assert_eq!("owner".parse::<Requirement>(), Ok(Requirement::Owner));
    assert_eq!("operator".parse::<Requirement>(), Ok(Requirement::Operator));
    for odd in ["", "Owner", "member", "anyone", "owner "] {
        let e = odd.parse::<Requirement>().unwrap_err();
        assert_eq!(e.value, odd);
    }
    for r in [Requirement::Owner, Requirement::Operator] {
        assert_eq!(r.as_str().parse::<Requirement>(), Ok(r));
    }
}

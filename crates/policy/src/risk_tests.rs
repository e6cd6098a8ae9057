use super::*;

#[test]
fn orders_put_the_stricter_value_last() {
    assert!(Risk::Low < Risk::Medium && Risk::Medium < Risk::High && Risk::High < Risk::Critical);
    assert!(ApprovalPolicy::Auto < ApprovalPolicy::Prompt);
    assert!(ApprovalPolicy::Prompt < ApprovalPolicy::Deny);
    assert_eq!(Risk::High.max(Risk::Low), Risk::High);
    assert_eq!(
        ApprovalPolicy::Prompt.max(ApprovalPolicy::Auto),
        ApprovalPolicy::Prompt
    );
}

#[test]
fn one_spelling_for_text_serde_and_yaml() {
    for r in Risk::ALL {
        assert_eq!(r.as_str().parse::<Risk>(), Ok(r));
        assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
        assert_eq!(serde_yaml_ng::from_str::<Risk>(r.as_str()).unwrap(), r);
    }
    for p in ApprovalPolicy::ALL {
        assert_eq!(p.to_string().parse::<ApprovalPolicy>(), Ok(p));
        assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
        assert_eq!(
            serde_yaml_ng::from_str::<ApprovalPolicy>(p.as_str()).unwrap(),
            p
        );
    }
}

#[test]
fn anything_else_is_an_error_never_a_default() {
    for bad in ["", "High", "HIGH", " high", "severe", "none"] {
        let e = bad.parse::<Risk>().unwrap_err();
        assert_eq!((e.kind, e.value.as_str()), ("tool risk", bad));
        assert!(
            serde_json::from_value::<Risk>(bad.into()).is_err(),
            "{bad:?}"
        );
    }
    for bad in ["", "Prompt", "ask", "deny "] {
        let e = bad.parse::<ApprovalPolicy>().unwrap_err();
        assert_eq!((e.kind, e.value.as_str()), ("approval policy", bad));
        assert!(serde_json::from_value::<ApprovalPolicy>(bad.into()).is_err());
    }
    assert_eq!(
        "ask".parse::<ApprovalPolicy>().unwrap_err().to_string(),
        r#"invalid approval policy: "ask""#
    );
}

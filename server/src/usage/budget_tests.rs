use super::*;

fn limits() -> Limits {
    Limits {
        tokens_per_day: Some(1_000),
        cost_per_month: Some(5.0),
        ..Default::default()
    }
}

#[test]
fn a_spent_limit_stops_and_warnings_come_at_80_and_100() {
    let l = limits();
    let mut s = Spend::default();
    assert_eq!(exceeded(&l, &s), None);
    assert_eq!(warning(&l, &s), None);
    s.tokens_day = 799;
    assert_eq!(warning(&l, &s), None);
    s.tokens_day = 800;
    assert_eq!(warning(&l, &s), Some(80));
    assert_eq!(exceeded(&l, &s), None);
    s.tokens_day = 1_000;
    let over = exceeded(&l, &s).unwrap();
    assert_eq!(over.name, "tokens_per_day");
    assert_eq!(warning(&l, &s), Some(100));
    // Another limit can be the one spent.
    s.tokens_day = 0;
    s.cost_month = 5.01;
    assert_eq!(exceeded(&l, &s).unwrap().name, "cost_per_month");
    // No limits: nothing is ever spent.
    assert_eq!(exceeded(&Limits::default(), &s), None);
    // A zero limit allows nothing.
    let zero = Limits {
        tool_calls_per_day: Some(0),
        ..Default::default()
    };
    assert!(exceeded(&zero, &Spend::default()).is_some());
}

#[test]
fn a_budget_stays_within_the_ceiling() {
    let ceiling = limits();
    assert!(within_ceiling(&limits(), &ceiling).is_ok());
    let mut b = limits();
    b.tokens_per_day = Some(999);
    b.cpu_seconds_per_day = Some(60); // not capped by the ceiling
    assert!(within_ceiling(&b, &ceiling).is_ok());
    b.tokens_per_day = Some(1_001);
    let e = within_ceiling(&b, &ceiling).unwrap_err();
    assert!(e.contains("tokens_per_day") && e.contains("ceiling"), "{e}");
    b.tokens_per_day = None;
    let e = within_ceiling(&b, &ceiling).unwrap_err();
    assert!(e.contains("must be set"), "{e}");
    assert!(within_ceiling(&b, &Limits::default()).is_ok());
    assert!(check_limits(&Limits {
        cost_per_day: Some(-1.0),
        ..Default::default()
    })
    .is_err());
    assert!(check_limits(&Limits {
        tool_calls_per_day: Some(u64::MAX),
        ..Default::default()
    })
    .is_err());
}

#[test]
fn counts_may_be_written_as_whole_floats() {
    let l: Limits =
        serde_json::from_str(r#"{"tokens_per_day": 5.0, "tool_calls_per_day": 7}"#).unwrap();
    assert_eq!(l.tokens_per_day, Some(5));
    assert_eq!(l.tool_calls_per_day, Some(7));
    assert_eq!(l.cpu_seconds_per_day, None);
    for bad in [
        r#"{"tokens_per_day": 5.5}"#,
        r#"{"tokens_per_day": -1}"#,
        r#"{"weekly": 1}"#,
    ] {
        assert!(serde_json::from_str::<Limits>(bad).is_err(), "{bad}");
    }
}

#[test]
fn each_limit_past_80_percent_warns_with_its_level_and_period() {
    let l = limits();
    let mut s = Spend::default();
    assert!(warnings(&l, &s).is_empty());
    s.tokens_day = 850;
    s.cost_month = 5.0;
    let w: Vec<(&str, u8, Period)> = warnings(&l, &s)
        .iter()
        .map(|(line, level)| (line.name, *level, Period::of(line.name)))
        .collect();
    assert_eq!(
        w,
        [
            ("tokens_per_day", 80, Period::Day),
            ("cost_per_month", 100, Period::Month)
        ]
    );
}

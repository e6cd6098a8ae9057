use super::*;

const NOW: i64 = 1_780_000_000_000 + 1_234_567; // some instant in 2026

fn params<'a>(
    from: Option<&'a str>,
    to: Option<&'a str>,
    bucket: Option<&'a str>,
    group: Option<&'a str>,
) -> ReportParams<'a> {
    ReportParams {
        from,
        to,
        bucket,
        group,
    }
}

#[test]
fn ranges_are_whole_buckets_and_bounded() {
    let r = params(None, None, None, None).check(NOW).unwrap();
    assert_eq!(r.bucket, Bucket::Day);
    assert_eq!(r.from % DAY_MS, 0);
    assert_eq!(r.to % DAY_MS, 0);
    assert!(r.from <= NOW - 30 * DAY_MS && r.to > NOW);
    let r = params(
        Some("2026-12-01T10:30:00Z"),
        Some("2026-12-01T12:00:00+00:00"),
        Some("hour"),
        Some("tool, principal,tool"),
    )
    .check(NOW)
    .unwrap();
    assert_eq!(crate::time::rfc3339(r.from), "2026-12-01T10:00:00.000Z");
    assert_eq!(crate::time::rfc3339(r.to), "2026-12-01T12:00:00.000Z");
    assert_eq!(r.group, vec![UsageKey::Principal, UsageKey::Tool]);
    for (p, want) in [
        (params(None, None, Some("week"), None), "bucket"),
        (params(Some("yesterday"), None, None, None), "RFC 3339"),
        (params(None, None, None, Some("tenant")), "group"),
    ] {
        let e = p.check(NOW).unwrap_err();
        assert!(e.contains(want), "{e}");
    }
    // An empty range reads nothing; a long one keeps its newest part;
    // nothing is before 1970.
    let r = params(
        Some("2026-12-02T00:00:00Z"),
        Some("2026-12-01T00:00:00Z"),
        None,
        None,
    )
    .check(NOW)
    .unwrap();
    assert_eq!(r.from, r.to);
    let r = params(
        Some("2026-01-01T00:00:00Z"),
        Some("2026-03-01T00:00:00Z"),
        Some("hour"),
        None,
    )
    .check(NOW)
    .unwrap();
    assert_eq!(r.to - r.from, MAX_HOUR_SPAN_DAYS * DAY_MS);
    assert_eq!(crate::time::rfc3339(r.to), "2026-03-01T00:00:00.000Z");
    let r = params(
        Some("0001-01-01T00:00:00Z"),
        Some("1971-01-01T00:00:00Z"),
        None,
        None,
    )
    .check(NOW)
    .unwrap();
    assert_eq!(r.from, 0);
}

#[test]
fn prices_parse_and_refuse_nonsense() {
    let p = Prices::parse(
        "currency = \"EUR\"\n[models.\"m1\"]\ninput = 1.0\noutput = 2.0\n\
         [models.\"openai/m1\"]\ninput = 10\noutput = 20\ncached = 5\n",
    )
    .unwrap();
    assert_eq!(p.currency, "EUR");
    assert_eq!(p.of("openai", "m1").unwrap().input, 10.0);
    assert_eq!(p.of("anthropic", "m1").unwrap().input, 1.0);
    assert!(p.of("openai", "m2").is_none());
    assert!(Prices::parse("[models.x]\ninput = -1\noutput = 1\n").is_err());
    assert!(Prices::parse("[models.x]\ninput = 1\n").is_err());
    assert!(Prices::parse("[models.x]\ninput = 1\noutput = 1\nextra = 2\n").is_err());
    assert_eq!(Prices::parse("").unwrap().currency, "USD");
}

fn row(bucket: i64, keys: &[&str], provider: &str, model: &str, input: u64) -> UsageRow {
    UsageRow {
        bucket,
        tenant_id: "acme".into(),
        keys: keys.iter().map(|k| k.to_string()).collect(),
        provider: provider.into(),
        model: model.into(),
        sums: UsageSums {
            model_calls: 1,
            input_tokens: input,
            output_tokens: input / 2,
            cached_tokens: input / 4,
            ..Default::default()
        },
    }
}

#[test]
fn models_merge_and_only_priced_tokens_cost() {
    let prices =
        Prices::parse("[models.small]\ninput = 1.0\noutput = 2.0\ncached = 0.5\n").unwrap();
    let range = Range {
        bucket: Bucket::Hour,
        from: 0,
        to: 2 * HOUR_MS,
        group: vec![UsageKey::Principal],
    };
    let report = build(
        &range,
        vec![
            row(0, &["alice"], "fake", "small", 1_000_000),
            row(0, &["alice"], "fake", "large", 400),
            row(0, &["bob"], "fake", "large", 400),
            row(HOUR_MS, &["alice"], "fake", "small", 0),
        ],
        &prices,
    );
    assert_eq!(report.rows.len(), 3);
    let alice = &report.rows[0];
    assert_eq!(alice.principal.as_deref(), Some("alice"));
    assert_eq!(alice.model, None);
    assert_eq!(alice.model_calls, 2);
    assert_eq!(alice.input_tokens, 1_000_400);
    // 750k fresh input at 1, 250k cached at 0.5, 500k output at 2 per million.
    assert_eq!(alice.cost, Some(0.75 + 0.125 + 1.0));
    assert_eq!(alice.unpriced_tokens, 600);
    let bob = &report.rows[1];
    assert_eq!(bob.cost, None);
    assert_eq!(bob.unpriced_tokens, 600);
    // No tokens at all: nothing to price.
    assert_eq!(report.rows[2].cost, None);

    let csv = to_csv(&report);
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_owned).collect();
    assert_eq!(
        &header[..4],
        ["start", "tenant", "principal", "model_calls"]
    );
    let lines: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(&lines[1][2], "bob");
    assert_eq!(
        &lines[1][header.iter().position(|h| h == "cost").unwrap()],
        ""
    );
}

use std::time::Duration;

use chrono::DateTime;

use super::*;

fn ms(rfc: &str) -> i64 {
    DateTime::parse_from_rfc3339(rfc)
        .unwrap()
        .timestamp_millis()
}

fn show(ms: i64) -> String {
    utc(ms).format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn next(text: &str, after: &str) -> String {
    let spec = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    show(next_after(&spec, ms(after)).unwrap())
}

const MIN: Duration = Duration::from_secs(60);

#[test]
fn cron_next_fire_times_in_utc() {
    for (expr, after, want) in [
        ("0 9 * * *", "2030-01-01T08:00:00Z", "2030-01-01T09:00:00Z"),
        ("0 9 * * *", "2030-01-01T09:00:00Z", "2030-01-02T09:00:00Z"),
        ("0 9 * * *", "2030-01-01T09:00:30Z", "2030-01-02T09:00:00Z"),
        (
            "*/15 * * * *",
            "2030-01-01T10:07:00Z",
            "2030-01-01T10:15:00Z",
        ),
        (
            "*/15 * * * *",
            "2030-01-01T10:59:59Z",
            "2030-01-01T11:00:00Z",
        ),
        ("30 2 1 * *", "2030-01-15T00:00:00Z", "2030-02-01T02:30:00Z"),
        ("0 0 29 2 *", "2030-03-01T00:00:00Z", "2032-02-29T00:00:00Z"),
        ("0 12 * * 1", "2030-01-01T00:00:00Z", "2030-01-07T12:00:00Z"), // a Monday
        (
            "0 12 * * MON-FRI",
            "2030-01-05T13:00:00Z",
            "2030-01-07T12:00:00Z",
        ),
        ("0 12 * * 0", "2030-01-01T00:00:00Z", "2030-01-06T12:00:00Z"), // Sunday
        ("0 12 * * 7", "2030-01-01T00:00:00Z", "2030-01-06T12:00:00Z"), // Sunday too
        (
            "0 0 1 JAN *",
            "2030-06-01T00:00:00Z",
            "2031-01-01T00:00:00Z",
        ),
        (
            "5,35 * * * *",
            "2030-01-01T10:06:00Z",
            "2030-01-01T10:35:00Z",
        ),
        (
            "0 22-23 * * *",
            "2030-01-01T23:30:00Z",
            "2030-01-02T22:00:00Z",
        ),
        (
            "59 23 31 12 *",
            "2030-12-31T23:58:00Z",
            "2030-12-31T23:59:00Z",
        ),
        ("0 0 L * *", "2030-02-10T00:00:00Z", "2030-02-28T00:00:00Z"),
        ("@hourly", "2030-01-01T10:20:00Z", "2030-01-01T11:00:00Z"),
        ("@daily", "2030-01-01T10:20:00Z", "2030-01-02T00:00:00Z"),
        ("@weekly", "2030-01-01T10:20:00Z", "2030-01-06T00:00:00Z"),
        ("@monthly", "2030-01-01T10:20:00Z", "2030-02-01T00:00:00Z"),
        (
            "  0 9 * * *  ",
            "2030-01-01T08:00:00Z",
            "2030-01-01T09:00:00Z",
        ),
    ] {
        assert_eq!(next(expr, after), want, "{expr} after {after}");
    }
}

#[test]
fn non_standard_or_broken_cron_is_refused() {
    for bad in [
        "* * * *",
        "0 0 9 * * *",      // six fields: seconds are not standard
        "0 0 9 * * * 2030", // seven: years neither
        "61 * * * *",
        "* 24 * * *",
        "* * 32 * *",
        "* * * 13 *",
        "* * * * 8",
        "a b c d e",
        "*/0 * * * *",
        "@fortnightly",
    ] {
        match parse(bad) {
            Err(SpecError::Cron(_)) => {}
            other => panic!("{bad}: {other:?}"),
        }
    }
    assert_eq!(parse("  ").unwrap_err(), SpecError::Empty);
    assert_eq!(parse(&"1".repeat(300)).unwrap_err(), SpecError::TooLong);
}

#[test]
fn intervals_and_one_shots() {
    let now = ms("2030-01-01T00:00:00Z");
    let (spec, first) = check("every 5m", MIN, now).unwrap();
    assert_eq!(show(first), "2030-01-01T00:05:00Z");
    assert_eq!(
        show(next_after(&spec, first).unwrap()),
        "2030-01-01T00:10:00Z"
    );
    let (_, first) = check("every 1h 30m", MIN, now).unwrap();
    assert_eq!(show(first), "2030-01-01T01:30:00Z");
    let (spec, first) = check("at 2030-01-02T09:00:00+02:00", MIN, now).unwrap();
    assert_eq!(show(first), "2030-01-02T07:00:00Z");
    assert_eq!(next_after_run(&spec, first, first), None, "one shot");
    assert!(matches!(parse("every soon"), Err(SpecError::Interval(_))));
    assert!(matches!(parse("every 0s"), Err(SpecError::Interval(_))));
    assert!(matches!(parse("at tomorrow"), Err(SpecError::At(_))));
    assert!(matches!(
        check("at 2029-12-31T23:59:59Z", MIN, now),
        Err(SpecError::Past(_))
    ));
}

#[test]
fn the_minimum_interval_holds_for_every_kind() {
    let now = ms("2030-01-01T00:00:00Z");
    assert_eq!(
        check("every 10s", MIN, now).unwrap_err(),
        SpecError::TooFrequent {
            gap_secs: 10,
            min_secs: 60
        }
    );
    assert!(check("every 60s", MIN, now).is_ok());
    assert!(check("every 2s", Duration::from_secs(1), now).is_ok());
    // Every minute is fine at 60s, not at 5 minutes.
    assert!(check("* * * * *", MIN, now).is_ok());
    let five = Duration::from_secs(300);
    assert!(matches!(
        check("* * * * *", five, now),
        Err(SpecError::TooFrequent { gap_secs: 60, .. })
    ));
    // Irregular gaps: 0 and 1 past the hour are a minute apart.
    assert!(matches!(
        check("0,1 * * * *", five, now),
        Err(SpecError::TooFrequent { gap_secs: 60, .. })
    ));
    assert!(check("0,30 * * * *", five, now).is_ok());
    let msg = check("every 1s", MIN, now).unwrap_err().to_string();
    assert!(msg.contains("--schedule-min-interval"), "{msg}");
}

#[test]
fn missed_runs_are_coalesced_into_one() {
    let spec = parse("0 * * * *").unwrap();
    let due = ms("2030-01-01T01:00:00Z");
    // The server was down for five hours: one run now, the next after now.
    let now = ms("2030-01-01T06:10:00Z");
    assert_eq!(
        show(next_after_run(&spec, due, now).unwrap()),
        "2030-01-01T07:00:00Z"
    );
    // On time: simply the next one.
    assert_eq!(
        show(next_after_run(&spec, due, due).unwrap()),
        "2030-01-01T02:00:00Z"
    );
    let every = parse("every 10m").unwrap();
    assert_eq!(
        show(next_after_run(&every, due, now).unwrap()),
        "2030-01-01T06:20:00Z"
    );
    assert_eq!(
        show(next_after_run(&every, due, due + 500).unwrap()),
        "2030-01-01T01:10:00Z"
    );
}

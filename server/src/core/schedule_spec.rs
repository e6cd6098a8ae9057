//! What a schedule's `schedule` text means and when it fires next; pure,
//! times in UTC milliseconds.
//!
//! - a standard five-field cron expression (minute hour day-of-month month
//!   day-of-week, names and `@hourly`/`@daily`/… aliases allowed), parsed by
//!   the `croner` crate, evaluated in UTC;
//! - `every <duration>` (`every 90s`, `every 5m`, `every 1h 30m`): an
//!   interval, the first run one interval after creation;
//! - `at <RFC 3339 time>`: one run, then the schedule disables itself.
//!
//! Every kind must keep runs at least the minimum interval apart (a cron
//! expression is checked on its next runs), so no schedule can flood its
//! owner's sessions.

use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;

/// Characters of a `schedule` text.
pub const MAX_SPEC_CHARS: usize = 200;
/// Consecutive cron runs checked against the minimum interval.
const CRON_GAP_SAMPLES: usize = 64;

/// A parsed schedule.
#[derive(Debug, Clone)]
pub enum Spec {
    Cron(Box<Cron>),
    Every(Duration),
    At(i64),
}

/// Why a `schedule` text is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("schedule is empty")]
    Empty,
    #[error("schedule is longer than {MAX_SPEC_CHARS} characters")]
    TooLong,
    #[error("not a standard cron expression ({0}); use 5 fields, `every <duration>` or `at <RFC 3339 time>`")]
    Cron(String),
    #[error("`every` needs a duration such as `every 10m`: {0}")]
    Interval(String),
    #[error("`at` needs an RFC 3339 time such as `at 2030-01-01T09:00:00Z`: {0}")]
    At(String),
    #[error("runs would be {gap_secs}s apart; this server allows no less than {min_secs}s (--schedule-min-interval)")]
    TooFrequent { gap_secs: u64, min_secs: u64 },
    #[error("the time {0} is in the past")]
    Past(String),
    #[error("the cron expression never fires")]
    Never,
}

fn parser() -> CronParser {
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
}

fn utc(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms)
        .single()
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// Parse a `schedule` text (no minimum-interval check; see [`check`]).
pub fn parse(text: &str) -> Result<Spec, SpecError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(SpecError::Empty);
    }
    if t.chars().count() > MAX_SPEC_CHARS {
        return Err(SpecError::TooLong);
    }
    if let Some(rest) = t.strip_prefix("every ") {
        let d = humantime::parse_duration(rest.trim())
            .map_err(|e| SpecError::Interval(e.to_string()))?;
        if d.is_zero() {
            return Err(SpecError::Interval("the interval is zero".into()));
        }
        return Ok(Spec::Every(d));
    }
    if let Some(rest) = t.strip_prefix("at ") {
        let at =
            DateTime::parse_from_rfc3339(rest.trim()).map_err(|e| SpecError::At(e.to_string()))?;
        return Ok(Spec::At(at.timestamp_millis()));
    }
    // Five fields or an alias; croner would also take six or seven.
    if !t.starts_with('@') && t.split_whitespace().count() != 5 {
        return Err(SpecError::Cron(format!(
            "{} fields, a standard cron expression has 5",
            t.split_whitespace().count()
        )));
    }
    parser()
        .parse(t)
        .map(|c| Spec::Cron(Box::new(c)))
        .map_err(|e| SpecError::Cron(e.to_string()))
}

/// The first run strictly after `after_ms`; `None` when there is none
/// (a one-shot time already passed, a cron that never matches again).
pub fn next_after(spec: &Spec, after_ms: i64) -> Option<i64> {
    match spec {
        Spec::Every(d) => {
            let step = i64::try_from(d.as_millis()).ok()?;
            after_ms.checked_add(step)
        }
        Spec::At(at) => (*at > after_ms).then_some(*at),
        Spec::Cron(c) => c
            .find_next_occurrence(&utc(after_ms), false)
            .ok()
            .map(|t| t.timestamp_millis()),
    }
}

/// The run after a due run at `due_ms` when the scheduler looks at `now_ms`:
/// runs missed while no instance was up are coalesced into the one firing
/// now, so the next one is the first after both.
pub fn next_after_run(spec: &Spec, due_ms: i64, now_ms: i64) -> Option<i64> {
    match spec {
        Spec::At(_) => None,
        // An interval counts from the run that happens, not from the missed one.
        Spec::Every(_) => next_after(spec, due_ms.max(now_ms)),
        Spec::Cron(_) => next_after(spec, due_ms.max(now_ms)),
    }
}

/// Parse and check `text` against the minimum interval at `now_ms`; the
/// first run time.
pub fn check(text: &str, min: Duration, now_ms: i64) -> Result<(Spec, i64), SpecError> {
    let spec = parse(text)?;
    let too_frequent = |gap_ms: i64| SpecError::TooFrequent {
        gap_secs: u64::try_from(gap_ms / 1000).unwrap_or(0),
        min_secs: min.as_secs(),
    };
    let min_ms = i64::try_from(min.as_millis()).unwrap_or(i64::MAX);
    match &spec {
        Spec::Every(d) => {
            let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
            if ms < min_ms {
                return Err(too_frequent(ms));
            }
        }
        Spec::At(at) if *at <= now_ms => {
            return Err(SpecError::Past(utc(*at).to_rfc3339()));
        }
        Spec::At(_) => {}
        Spec::Cron(_) => {
            let mut prev = next_after(&spec, now_ms).ok_or(SpecError::Never)?;
            for _ in 0..CRON_GAP_SAMPLES {
                let Some(next) = next_after(&spec, prev) else {
                    break;
                };
                if next - prev < min_ms {
                    return Err(too_frequent(next - prev));
                }
                prev = next;
            }
        }
    }
    let first = next_after(&spec, now_ms).ok_or(SpecError::Never)?;
    Ok((spec, first))
}

#[cfg(test)]
#[path = "schedule_spec_tests.rs"]
mod tests;

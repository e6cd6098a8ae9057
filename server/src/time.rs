//! Wall-clock helpers: Unix milliseconds for storage, RFC 3339 for the wire.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 if the clock is before 1970).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Seconds since the Unix epoch, as JWT claims want them.
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Unix milliseconds of an RFC 3339 time (any offset) given as `name`; the
/// error names the parameter and shows what was given.
pub fn parse_rfc3339(name: &str, s: &str) -> Result<i64, String> {
    chrono::DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.timestamp_millis())
        .map_err(|_| {
            format!(
                "`{name}` {:?} is not an RFC 3339 time like 2026-12-01T00:00:00Z",
                s.chars().take(40).collect::<String>()
            )
        })
}

/// RFC 3339 (UTC, millisecond precision) for a Unix-millisecond timestamp.
pub fn rfc3339(ms: i64) -> String {
    let t = UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_millis(t).to_string()
}

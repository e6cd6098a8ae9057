//! Budget decisions, pure: what a tenant (or one of its principals) may
//! still spend today and this month, whether a budget fits the operator's
//! ceiling, and which warning a spend has crossed. The service that keeps
//! spend current and answers the turn is [`super::guard`].

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Limits of one budget (or of the operator's ceiling); `None`: no limit.
/// Days and months are UTC calendar days and months.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Model tokens (input and output) per day.
    #[serde(default, deserialize_with = "count")]
    pub tokens_per_day: Option<u64>,
    /// Model tokens per month.
    #[serde(default, deserialize_with = "count")]
    pub tokens_per_month: Option<u64>,
    /// Cost per day, in the server's price-list currency.
    #[schema(minimum = 0)]
    pub cost_per_day: Option<f64>,
    /// Cost per month.
    #[schema(minimum = 0)]
    pub cost_per_month: Option<f64>,
    /// CPU seconds of commands per day.
    #[serde(default, deserialize_with = "count")]
    pub cpu_seconds_per_day: Option<u64>,
    /// Tool calls per day.
    #[serde(default, deserialize_with = "count")]
    pub tool_calls_per_day: Option<u64>,
}

/// A count limit: a whole number ≥ 0, also when a client's JSON writes it
/// as `5.0` (JSON Schema's `integer` allows that).
fn count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    use serde::de::Error;
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else {
        return Ok(None);
    };
    if let Some(u) = n.as_u64() {
        return Ok(Some(u));
    }
    match n.as_f64() {
        Some(f) if f >= 0.0 && f.fract() == 0.0 && f < 9.223_372_036_854_775e18 => {
            Ok(Some(f as u64))
        }
        _ => Err(D::Error::custom(format!("{n} is not a whole number ≥ 0"))),
    }
}

/// What has been spent, for the same periods as [`Limits`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spend {
    pub tokens_day: u64,
    pub tokens_month: u64,
    pub cost_day: f64,
    pub cost_month: f64,
    pub cpu_ms_day: u64,
    pub tool_calls_day: u64,
}

impl Spend {
    pub fn add(&mut self, o: &Spend) {
        self.tokens_day += o.tokens_day;
        self.tokens_month += o.tokens_month;
        self.cost_day += o.cost_day;
        self.cost_month += o.cost_month;
        self.cpu_ms_day += o.cpu_ms_day;
        self.tool_calls_day += o.tool_calls_day;
    }
}

/// One limit against its spend.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    /// The limit's name, as [`Limits`] spells it.
    pub name: &'static str,
    pub limit: f64,
    pub used: f64,
}

impl Line {
    /// The share used, 0 to 1 (and past 1 once over).
    pub fn share(&self) -> f64 {
        if self.limit <= 0.0 {
            return if self.used > 0.0 { f64::INFINITY } else { 1.0 };
        }
        self.used / self.limit
    }
}

/// Every limit that is set, with its spend.
pub fn lines(limits: &Limits, spend: &Spend) -> Vec<Line> {
    let u = |v: Option<u64>| v.map(|n| n as f64);
    [
        (
            "tokens_per_day",
            u(limits.tokens_per_day),
            spend.tokens_day as f64,
        ),
        (
            "tokens_per_month",
            u(limits.tokens_per_month),
            spend.tokens_month as f64,
        ),
        ("cost_per_day", limits.cost_per_day, spend.cost_day),
        ("cost_per_month", limits.cost_per_month, spend.cost_month),
        (
            "cpu_seconds_per_day",
            u(limits.cpu_seconds_per_day),
            spend.cpu_ms_day as f64 / 1000.0,
        ),
        (
            "tool_calls_per_day",
            u(limits.tool_calls_per_day),
            spend.tool_calls_day as f64,
        ),
    ]
    .into_iter()
    .filter_map(|(name, limit, used)| limit.map(|limit| Line { name, limit, used }))
    .collect()
}

/// The first limit that is spent (used ≥ limit), if any: work that would
/// spend more must not start.
pub fn exceeded(limits: &Limits, spend: &Spend) -> Option<Line> {
    lines(limits, spend).into_iter().find(|l| l.used >= l.limit)
}

/// The highest warning level crossed: 100 (spent) or 80, or none.
pub fn warning(limits: &Limits, spend: &Spend) -> Option<u8> {
    let top = lines(limits, spend)
        .iter()
        .map(Line::share)
        .fold(0.0_f64, f64::max);
    if top >= 1.0 {
        Some(100)
    } else if top >= 0.8 {
        Some(80)
    } else {
        None
    }
}

/// Each limit at or past a warning level, with the level: 100 (spent) or
/// 80. Limits under 80 % are left out.
pub fn warnings(limits: &Limits, spend: &Spend) -> Vec<(Line, u8)> {
    lines(limits, spend)
        .into_iter()
        .filter_map(|l| {
            let share = l.share();
            if share >= 1.0 {
                Some((l, 100))
            } else if share >= 0.8 {
                Some((l, 80))
            } else {
                None
            }
        })
        .collect()
}

/// The period a limit counts over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Day,
    Month,
}

impl Period {
    /// The period of a limit, by its name (`…_per_day`, `…_per_month`).
    pub fn of(name: &str) -> Period {
        if name.ends_with("_per_month") {
            Period::Month
        } else {
            Period::Day
        }
    }
}

/// A tenant admin's budget must not exceed the operator's ceiling: each
/// limit the ceiling sets must be set in the budget too, at most as high.
pub fn within_ceiling(budget: &Limits, ceiling: &Limits) -> Result<(), String> {
    let pairs: [(&str, Option<f64>, Option<f64>); 6] = [
        (
            "tokens_per_day",
            budget.tokens_per_day.map(|n| n as f64),
            ceiling.tokens_per_day.map(|n| n as f64),
        ),
        (
            "tokens_per_month",
            budget.tokens_per_month.map(|n| n as f64),
            ceiling.tokens_per_month.map(|n| n as f64),
        ),
        ("cost_per_day", budget.cost_per_day, ceiling.cost_per_day),
        (
            "cost_per_month",
            budget.cost_per_month,
            ceiling.cost_per_month,
        ),
        (
            "cpu_seconds_per_day",
            budget.cpu_seconds_per_day.map(|n| n as f64),
            ceiling.cpu_seconds_per_day.map(|n| n as f64),
        ),
        (
            "tool_calls_per_day",
            budget.tool_calls_per_day.map(|n| n as f64),
            ceiling.tool_calls_per_day.map(|n| n as f64),
        ),
    ];
    for (name, mine, cap) in pairs {
        match (mine, cap) {
            (_, None) => {}
            (None, Some(cap)) => {
                return Err(format!(
                    "{name} must be set: the server operator's ceiling for this tenant is {cap}"
                ))
            }
            (Some(mine), Some(cap)) if mine > cap => {
                return Err(format!(
                    "{name} {mine} is above the server operator's ceiling for this tenant ({cap})"
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Every cost limit is a finite number ≥ 0; counts fit a signed 64-bit
/// integer (as the API's schema says).
pub fn check_limits(limits: &Limits) -> Result<(), String> {
    for (name, v) in [
        ("tokens_per_day", limits.tokens_per_day),
        ("tokens_per_month", limits.tokens_per_month),
        ("cpu_seconds_per_day", limits.cpu_seconds_per_day),
        ("tool_calls_per_day", limits.tool_calls_per_day),
    ] {
        if v.is_some_and(|n| n > i64::MAX as u64) {
            return Err(format!("{name} must be at most {}", i64::MAX));
        }
    }
    for (name, v) in [
        ("cost_per_day", limits.cost_per_day),
        ("cost_per_month", limits.cost_per_month),
    ] {
        if let Some(v) = v {
            if !v.is_finite() || v < 0.0 {
                return Err(format!("{name} must be a number ≥ 0"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "budget_tests.rs"]
mod tests;

//! Usage reports: what a tenant consumed per hour or day, grouped by
//! principal, core, channel, provider, model, tool or status, with cost
//! where the operator priced the model (`--model-prices`). Parsing the
//! request and shaping the answer are pure; the rows come from the store
//! (roll-ups plus raw rows not rolled up yet, [`Store::usage_report`]).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::store::{Store, UsageKey, UsageQuery, UsageRow, UsageSums};

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;
/// Hour buckets over at most this many days; day buckets over at most the
/// roll-ups' default retention. A longer span keeps its newest part.
const MAX_HOUR_SPAN_DAYS: i64 = 31;
const MAX_DAY_SPAN_DAYS: i64 = 400;
/// Rows one report may hold; a wider report asks for a narrower range.
pub const MAX_ROWS: usize = 20_000;

/// Prices per million tokens of one model.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Cached input tokens; the input price when absent.
    pub cached: Option<f64>,
}

/// The operator's price list (`--model-prices FILE`), e.g.
///
/// ```toml
/// currency = "USD"
/// [models."gpt-4o-mini"]
/// input = 0.15
/// output = 0.60
/// cached = 0.075
/// [models."anthropic/claude-sonnet-4-5"]
/// input = 3.0
/// output = 15.0
/// ```
///
/// A model is looked up as `provider/model` first, then as `model`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    #[serde(default = "default_currency")]
    pub currency: String,
    #[serde(default)]
    pub models: HashMap<String, Price>,
}

fn default_currency() -> String {
    "USD".into()
}

impl Default for Prices {
    fn default() -> Self {
        Self {
            currency: default_currency(),
            models: HashMap::new(),
        }
    }
}

impl Prices {
    /// Parse a price list; every price is a finite number ≥ 0.
    pub fn parse(text: &str) -> Result<Prices, String> {
        let prices: Prices = toml::from_str(text).map_err(|e| e.to_string())?;
        if prices.currency.trim().is_empty() || prices.currency.len() > 16 {
            return Err("currency must be a short name such as USD".into());
        }
        for (model, p) in &prices.models {
            for v in [Some(p.input), Some(p.output), p.cached]
                .into_iter()
                .flatten()
            {
                if !v.is_finite() || v < 0.0 {
                    return Err(format!("model {model:?}: prices must be numbers ≥ 0"));
                }
            }
        }
        Ok(prices)
    }

    /// Read a price list from a file.
    pub fn load(path: &Path) -> Result<Prices, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Prices::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The price list `--model-prices` names, or none (`serve` and the
    /// commands that report cost).
    pub fn from_flag(path: Option<&Path>) -> Result<Prices, String> {
        path.map_or_else(
            || Ok(Prices::default()),
            |p| Prices::load(p).map_err(|e| format!("--model-prices {e}")),
        )
    }

    fn of(&self, provider: &str, model: &str) -> Option<&Price> {
        self.models
            .get(&format!("{provider}/{model}"))
            .or_else(|| self.models.get(model))
    }

    /// The cost of `s`'s tokens of `provider`'s `model`; 0 when unpriced.
    pub fn cost_of(&self, provider: &str, model: &str, s: &UsageSums) -> f64 {
        self.of(provider, model).map_or(0.0, |p| Prices::cost(p, s))
    }

    /// The cost of `s`'s tokens at `price`. Cached tokens are part of the
    /// input tokens (as the providers count them).
    fn cost(price: &Price, s: &UsageSums) -> f64 {
        let cached = s.cached_tokens.min(s.input_tokens);
        let fresh = s.input_tokens - cached;
        (fresh as f64 * price.input
            + cached as f64 * price.cached.unwrap_or(price.input)
            + s.output_tokens as f64 * price.output)
            / 1_000_000.0
    }
}

/// A report's bucket size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bucket {
    Hour,
    Day,
}

impl Bucket {
    pub fn ms(self) -> i64 {
        match self {
            Bucket::Hour => HOUR_MS,
            Bucket::Day => DAY_MS,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Bucket::Hour => "hour",
            Bucket::Day => "day",
        }
    }
}

/// What a client asks for, as it wrote it (query parameters or flags).
#[derive(Debug, Clone, Default)]
pub struct ReportParams<'a> {
    /// RFC 3339; default: the span's length before `to`.
    pub from: Option<&'a str>,
    /// RFC 3339; default: now.
    pub to: Option<&'a str>,
    /// `hour` or `day` (default).
    pub bucket: Option<&'a str>,
    /// Comma-separated [`UsageKey`] names.
    pub group: Option<&'a str>,
}

/// The request checked: buckets aligned, the span bounded, the group known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    pub bucket: Bucket,
    pub from: i64,
    pub to: i64,
    pub group: Vec<UsageKey>,
}

fn parse_time(name: &str, s: &str) -> Result<i64, String> {
    // Nothing was recorded before 1970.
    Ok(crate::time::parse_rfc3339(name, s)?.max(0))
}

impl ReportParams<'_> {
    /// Check the request against `now` (ms). `from` is rounded down and `to`
    /// up to whole buckets (UTC), since roll-ups keep whole hours; a span
    /// past the bucket's maximum keeps its newest part, and `from` ≥ `to`
    /// is an empty range.
    pub fn check(&self, now: i64) -> Result<Range, String> {
        let bucket = match self.bucket.map(str::trim) {
            None | Some("") | Some("day") => Bucket::Day,
            Some("hour") => Bucket::Hour,
            Some(other) => {
                return Err(format!(
                    "`bucket` {:?} is not hour or day",
                    other.chars().take(20).collect::<String>()
                ))
            }
        };
        let max_days = match bucket {
            Bucket::Hour => MAX_HOUR_SPAN_DAYS,
            Bucket::Day => MAX_DAY_SPAN_DAYS,
        };
        let to = match self.to {
            Some(s) => parse_time("to", s)?,
            None => now,
        };
        let from = match self.from {
            Some(s) => parse_time("from", s)?,
            // A day of hours, or a month of days.
            None => to.saturating_sub(match bucket {
                Bucket::Hour => DAY_MS,
                Bucket::Day => 30 * DAY_MS,
            }),
        };
        let ms = bucket.ms();
        // Whole buckets; an empty range (from ≥ to) reads nothing.
        let to = to
            .div_euclid(ms)
            .saturating_add(i64::from(to.rem_euclid(ms) != 0))
            .saturating_mul(ms);
        let from = (from.div_euclid(ms) * ms).min(to);
        // A longer span keeps its last `max_days` (the report says which).
        let from = from.max(to.saturating_sub(max_days * DAY_MS));
        let mut group = Vec::new();
        for name in self
            .group
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            let key = UsageKey::parse(name).ok_or_else(|| {
                format!(
                    "`group` {:?} is not one of principal, core, channel, provider, model, tool, status",
                    name.chars().take(20).collect::<String>()
                )
            })?;
            group.push(key);
        }
        group.sort();
        group.dedup();
        Ok(Range {
            bucket,
            from,
            to,
            group,
        })
    }
}

/// One bucket of one tenant and group.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ReportRow {
    /// The bucket's start (RFC 3339, UTC).
    pub start: String,
    pub tenant: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub core: Option<String>,
    /// The chat platform; empty for the API's turns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// A tool call's status; `process` for a background command's time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    pub model_calls: u64,
    /// Model calls whose provider reported no usage: their tokens are
    /// unknown, not zero.
    pub unmetered_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Part of `input_tokens` read from the provider's prompt cache.
    pub cached_tokens: u64,
    pub model_latency_ms: u64,
    pub tool_calls: u64,
    pub tool_latency_ms: u64,
    /// CPU time of the commands the tools ran (user and system).
    pub cpu_seconds: f64,
    /// Bytes fetched from the network by web_extract and MCP over HTTP.
    pub outbound_bytes: u64,
    /// The tokens' cost in the report's currency; null when none of them
    /// has a price.
    pub cost: Option<f64>,
    /// Tokens of models the price list does not name (not in `cost`).
    pub unpriced_tokens: u64,
}

impl ReportRow {
    /// The row's value of a group key (`None` when not grouped by it).
    pub fn key(&self, key: UsageKey) -> Option<&str> {
        match key {
            UsageKey::Principal => &self.principal,
            UsageKey::Core => &self.core,
            UsageKey::Channel => &self.channel,
            UsageKey::Provider => &self.provider,
            UsageKey::Model => &self.model,
            UsageKey::Tool => &self.tool,
            UsageKey::Status => &self.status,
        }
        .as_deref()
    }
}

/// A usage report.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Report {
    /// `hour` or `day`.
    pub bucket: String,
    /// The first bucket's start (RFC 3339).
    pub from: String,
    /// The end of the last bucket (RFC 3339, exclusive).
    pub to: String,
    /// What the rows are grouped by, besides bucket and tenant.
    pub group: Vec<String>,
    /// The currency of `cost`.
    pub currency: String,
    /// Oldest bucket first; buckets with no use are left out.
    pub rows: Vec<ReportRow>,
    /// Bytes the tenant's command output takes now (artifacts and task
    /// logs: what `--tenant-storage-max-bytes` limits), as this instance
    /// counts it. Only in a tenant's own report.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stored_bytes: Option<u64>,
}

/// Shape store rows into a report: models merged unless grouped by, cost
/// summed over priced models.
pub fn build(range: &Range, rows: Vec<UsageRow>, prices: &Prices) -> Report {
    type Key = (i64, String, Vec<String>);
    let mut merged: BTreeMap<Key, (UsageSums, f64, bool, u64)> = BTreeMap::new();
    for r in rows {
        let entry = merged
            .entry((r.bucket, r.tenant_id, r.keys))
            .or_insert_with(|| (UsageSums::default(), 0.0, false, 0));
        let tokens = r.sums.input_tokens + r.sums.output_tokens;
        if tokens > 0 {
            match prices.of(&r.provider, &r.model) {
                Some(p) => {
                    entry.1 += Prices::cost(p, &r.sums);
                    entry.2 = true;
                }
                None => entry.3 += tokens,
            }
        }
        entry.0.add(&r.sums);
    }
    let rows = merged
        .into_iter()
        .map(|((bucket, tenant, keys), (s, cost, priced, unpriced))| {
            let key = |k: UsageKey| {
                range
                    .group
                    .iter()
                    .position(|g| *g == k)
                    .and_then(|i| keys.get(i).cloned())
            };
            ReportRow {
                start: crate::time::rfc3339(bucket),
                tenant,
                principal: key(UsageKey::Principal),
                core: key(UsageKey::Core),
                channel: key(UsageKey::Channel),
                provider: key(UsageKey::Provider),
                model: key(UsageKey::Model),
                tool: key(UsageKey::Tool),
                status: key(UsageKey::Status),
                model_calls: s.model_calls,
                unmetered_calls: s.unmetered_calls,
                input_tokens: s.input_tokens,
                output_tokens: s.output_tokens,
                cached_tokens: s.cached_tokens,
                model_latency_ms: s.model_latency_ms,
                tool_calls: s.tool_calls,
                tool_latency_ms: s.tool_latency_ms,
                cpu_seconds: s.cpu_ms as f64 / 1000.0,
                outbound_bytes: s.outbound_bytes,
                cost: priced.then_some(cost),
                unpriced_tokens: unpriced,
            }
        })
        .collect();
    Report {
        bucket: range.bucket.as_str().into(),
        from: crate::time::rfc3339(range.from),
        to: crate::time::rfc3339(range.to),
        group: range.group.iter().map(|k| k.as_str().to_owned()).collect(),
        currency: prices.currency.clone(),
        rows,
        stored_bytes: None,
    }
}

/// The report as CSV: a header row, then one line per row; the group's
/// columns follow `start` and `tenant`. `cost` is empty where unknown.
pub fn to_csv(report: &Report) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["start".to_owned(), "tenant".to_owned()];
    header.extend(report.group.iter().cloned());
    header.extend(
        [
            "model_calls",
            "unmetered_calls",
            "input_tokens",
            "output_tokens",
            "cached_tokens",
            "model_latency_ms",
            "tool_calls",
            "tool_latency_ms",
            "cpu_seconds",
            "outbound_bytes",
            "cost",
            "unpriced_tokens",
        ]
        .map(str::to_owned),
    );
    // Writing to a Vec cannot fail.
    let _ = w.write_record(&header);
    for r in &report.rows {
        let mut line = vec![r.start.clone(), r.tenant.clone()];
        for key in report.group.iter().filter_map(|g| UsageKey::parse(g)) {
            line.push(r.key(key).unwrap_or_default().to_owned());
        }
        line.extend([
            r.model_calls.to_string(),
            r.unmetered_calls.to_string(),
            r.input_tokens.to_string(),
            r.output_tokens.to_string(),
            r.cached_tokens.to_string(),
            r.model_latency_ms.to_string(),
            r.tool_calls.to_string(),
            r.tool_latency_ms.to_string(),
            r.cpu_seconds.to_string(),
            r.outbound_bytes.to_string(),
            r.cost.map(|c| c.to_string()).unwrap_or_default(),
            r.unpriced_tokens.to_string(),
        ]);
        let _ = w.write_record(&line);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// Why a report was not made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{0}")]
    Invalid(String),
    #[error("the report has more than {MAX_ROWS} rows; narrow the range or the grouping")]
    TooLarge,
    #[error("only a tenant admin may read the tenant's usage")]
    Forbidden,
    #[error(transparent)]
    Store(#[from] sqlx::Error),
}

/// Read and shape one report. `tenant` `None`: every tenant (the server
/// operator's CLI; the API always names the caller's tenant).
pub async fn report(
    store: &Store,
    prices: &Prices,
    tenant: Option<&str>,
    params: &ReportParams<'_>,
    now: i64,
) -> Result<Report, ReportError> {
    let range = params.check(now).map_err(ReportError::Invalid)?;
    let rows = store
        .usage_report(&UsageQuery {
            tenant: tenant.map(str::to_owned),
            from: range.from,
            to: range.to,
            bucket_ms: range.bucket.ms(),
            group: range.group.clone(),
        })
        .await?;
    if rows.len() > MAX_ROWS {
        return Err(ReportError::TooLarge);
    }
    Ok(build(&range, rows, prices))
}

/// The caller's own tenant's report: tenant admins only (usage is what the
/// tenant is billed for; members and tenant operators see their turns, not
/// the tenant's spending).
pub async fn tenant_report(
    store: &Store,
    prices: &Prices,
    scope: &crate::auth::PrincipalScope,
    params: &ReportParams<'_>,
) -> Result<Report, ReportError> {
    if scope.role() != crate::auth::Role::Admin {
        return Err(ReportError::Forbidden);
    }
    report(
        store,
        prices,
        Some(scope.tenant().as_str()),
        params,
        crate::time::now_ms(),
    )
    .await
}

impl From<ReportError> for crate::error::Error {
    fn from(e: ReportError) -> Self {
        match e {
            ReportError::Invalid(m) => crate::error::Error::Invalid(m),
            e @ ReportError::TooLarge => crate::error::Error::Invalid(e.to_string()),
            e @ ReportError::Forbidden => crate::error::Error::Forbidden(e.to_string()),
            ReportError::Store(e) => crate::error::Error::Database(e),
        }
    }
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;

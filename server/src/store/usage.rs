//! Usage metering rows (`usage_model_calls`): what each model call used,
//! attributed to tenant, principal, session, core and channel. Written in
//! batches by the meter ([`crate::usage`]), off the turn's path.

use sqlx::{AssertSqlSafe, Row};

use super::events::values_clause_for;
use super::Store;

/// Rows per multi-row INSERT (12 parameters each stays far below every limit).
const INSERT_CHUNK: usize = 64;

/// One model call to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewModelCall {
    pub tenant_id: String,
    pub principal_id: String,
    pub session_id: String,
    pub core_id: String,
    /// The chat channel kind of the turn; empty when it came from the API.
    pub channel: String,
    pub provider: String,
    pub model: String,
    /// `None`: the provider reported no usage (unknown, not zero).
    pub tokens: Option<(u64, u64, u64)>,
    pub latency_ms: u64,
    pub at: i64,
}

/// One recorded model call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelCallRow {
    pub id: i64,
    pub call: NewModelCall,
}

fn signed(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Store {
    /// Insert recorded model calls, in order, in one transaction.
    pub async fn insert_model_calls(&self, calls: &[NewModelCall]) -> Result<(), sqlx::Error> {
        if calls.is_empty() {
            return Ok(());
        }
        let _gate = self.usage_gate().await;
        let mut tx = self.usage_pool().begin().await?;
        for chunk in calls.chunks(INSERT_CHUNK) {
            let sql = format!(
                "INSERT INTO usage_model_calls (tenant_id, principal_id, session_id, core_id, \
                 channel, provider, model, input_tokens, output_tokens, cached_tokens, \
                 latency_ms, at) VALUES {}",
                values_clause_for(self.backend(), chunk.len(), 12)
            );
            // One shape per batch size: not kept in the connection's statement
            // cache, where it would push out the turns' hot statements.
            let mut q = sqlx::query(AssertSqlSafe(sql)).persistent(false);
            for c in chunk {
                let (input, output, cached) = match c.tokens {
                    Some((i, o, k)) => (Some(signed(i)), Some(signed(o)), Some(signed(k))),
                    None => (None, None, None),
                };
                q = q
                    .bind(&c.tenant_id)
                    .bind(&c.principal_id)
                    .bind(&c.session_id)
                    .bind(&c.core_id)
                    .bind(&c.channel)
                    .bind(&c.provider)
                    .bind(&c.model)
                    .bind(input)
                    .bind(output)
                    .bind(cached)
                    .bind(signed(c.latency_ms))
                    .bind(c.at);
            }
            q.execute(&mut *tx).await?;
        }
        tx.commit().await
    }

    /// A tenant's recorded model calls at or after `since` (ms), oldest first.
    pub async fn model_calls_of(
        &self,
        tenant: &str,
        since: i64,
        limit: u32,
    ) -> Result<Vec<ModelCallRow>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT id, tenant_id, principal_id, session_id, core_id, channel, provider, model, \
             input_tokens, output_tokens, cached_tokens, latency_ms, at FROM usage_model_calls \
             WHERE tenant_id = $1 AND at >= $2 ORDER BY id LIMIT $3",
        )
        .bind(tenant)
        .bind(since)
        .bind(i64::from(limit))
        .fetch_all(self.usage_pool())
        .await?;
        rows.iter()
            .map(|r| {
                let count = |i: usize| -> Result<Option<u64>, sqlx::Error> {
                    Ok(r.try_get::<Option<i64>, _>(i)?.map(|n| n.max(0) as u64))
                };
                let tokens = match (count(8)?, count(9)?, count(10)?) {
                    (Some(i), Some(o), Some(k)) => Some((i, o, k)),
                    _ => None,
                };
                Ok(ModelCallRow {
                    id: r.try_get(0)?,
                    call: NewModelCall {
                        tenant_id: r.try_get(1)?,
                        principal_id: r.try_get(2)?,
                        session_id: r.try_get(3)?,
                        core_id: r.try_get(4)?,
                        channel: r.try_get(5)?,
                        provider: r.try_get(6)?,
                        model: r.try_get(7)?,
                        tokens,
                        latency_ms: r.try_get::<i64, _>(11)?.max(0) as u64,
                        at: r.try_get(12)?,
                    },
                })
            })
            .collect()
    }
}

/// One tool call (`calls` 1) or process time measured after its call
/// returned (`calls` 0), to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewToolUsage {
    pub tenant_id: String,
    pub principal_id: String,
    pub session_id: String,
    pub core_id: String,
    pub channel: String,
    pub tool: String,
    /// The tool result's status (`ok`, `failed`, `denied`, …); `process`
    /// for time measured after the call.
    pub status: String,
    pub calls: u64,
    pub cpu_ms: u64,
    pub outbound_bytes: u64,
    pub latency_ms: u64,
    pub at: i64,
}

/// One hour's sums for one attribution, as `usage_hourly` keeps them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageSums {
    pub model_calls: u64,
    /// Model calls whose provider reported no usage.
    pub unmetered_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    pub model_latency_ms: u64,
    pub tool_calls: u64,
    pub tool_latency_ms: u64,
    pub cpu_ms: u64,
    pub outbound_bytes: u64,
}

impl UsageSums {
    pub fn add(&mut self, o: &UsageSums) {
        self.model_calls += o.model_calls;
        self.unmetered_calls += o.unmetered_calls;
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.cached_tokens += o.cached_tokens;
        self.model_latency_ms += o.model_latency_ms;
        self.tool_calls += o.tool_calls;
        self.tool_latency_ms += o.tool_latency_ms;
        self.cpu_ms += o.cpu_ms;
        self.outbound_bytes += o.outbound_bytes;
    }
}

/// What a usage row can be grouped by (besides its time bucket and tenant).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UsageKey {
    Principal,
    Core,
    Channel,
    Provider,
    Model,
    Tool,
    Status,
}

impl UsageKey {
    pub const ALL: [UsageKey; 7] = [
        UsageKey::Principal,
        UsageKey::Core,
        UsageKey::Channel,
        UsageKey::Provider,
        UsageKey::Model,
        UsageKey::Tool,
        UsageKey::Status,
    ];

    /// The name a client groups by (and the report's field).
    pub fn as_str(self) -> &'static str {
        match self {
            UsageKey::Principal => "principal",
            UsageKey::Core => "core",
            UsageKey::Channel => "channel",
            UsageKey::Provider => "provider",
            UsageKey::Model => "model",
            UsageKey::Tool => "tool",
            UsageKey::Status => "status",
        }
    }

    pub fn parse(s: &str) -> Option<UsageKey> {
        UsageKey::ALL.into_iter().find(|k| k.as_str() == s)
    }

    fn column(self) -> &'static str {
        match self {
            UsageKey::Principal => "principal_id",
            UsageKey::Core => "core_id",
            UsageKey::Channel => "channel",
            UsageKey::Provider => "provider",
            UsageKey::Model => "model",
            UsageKey::Tool => "tool",
            UsageKey::Status => "status",
        }
    }
}

/// What a usage report reads.
#[derive(Debug, Clone)]
pub struct UsageQuery {
    /// `None`: every tenant (the server operator).
    pub tenant: Option<String>,
    /// Bucket start (ms), inclusive; a multiple of `bucket_ms`.
    pub from: i64,
    /// Bucket end (ms), exclusive; a multiple of `bucket_ms`.
    pub to: i64,
    /// 3,600,000 (hour) or 86,400,000 (day, UTC).
    pub bucket_ms: i64,
    /// Sorted, without duplicates.
    pub group: Vec<UsageKey>,
}

/// One bucket of one tenant and group. `keys` follow the query's `group`;
/// `provider` and `model` are always kept apart, so a report can price
/// tokens per model (the caller merges them when not grouped by them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageRow {
    pub bucket: i64,
    pub tenant_id: String,
    pub keys: Vec<String>,
    pub provider: String,
    pub model: String,
    pub sums: UsageSums,
}

const HOUR_MS: i64 = 3_600_000;

/// The roll-up's key: tenant, hour, principal, core, channel, provider,
/// model, tool, status.
type HourKey = (
    String,
    i64,
    String,
    String,
    String,
    String,
    String,
    String,
    String,
);

/// Rows rolled up by [`Store::roll_up_usage`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RolledUp {
    pub model_calls: u64,
    pub tool_rows: u64,
}

fn unsigned(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

impl Store {
    /// Insert tool usage rows, in order, in one transaction.
    pub async fn insert_tool_usage(&self, rows: &[NewToolUsage]) -> Result<(), sqlx::Error> {
        if rows.is_empty() {
            return Ok(());
        }
        let _gate = self.usage_gate().await;
        let mut tx = self.usage_pool().begin().await?;
        for chunk in rows.chunks(INSERT_CHUNK) {
            let sql = format!(
                "INSERT INTO usage_tool_calls (tenant_id, principal_id, session_id, core_id, \
                 channel, tool, status, calls, cpu_ms, outbound_bytes, latency_ms, at) VALUES {}",
                values_clause_for(self.backend(), chunk.len(), 12)
            );
            // One shape per batch size: not kept in the connection's statement
            // cache, where it would push out the turns' hot statements.
            let mut q = sqlx::query(AssertSqlSafe(sql)).persistent(false);
            for r in chunk {
                q = q
                    .bind(&r.tenant_id)
                    .bind(&r.principal_id)
                    .bind(&r.session_id)
                    .bind(&r.core_id)
                    .bind(&r.channel)
                    .bind(&r.tool)
                    .bind(&r.status)
                    .bind(signed(r.calls))
                    .bind(signed(r.cpu_ms))
                    .bind(signed(r.outbound_bytes))
                    .bind(signed(r.latency_ms))
                    .bind(r.at);
            }
            q.execute(&mut *tx).await?;
        }
        tx.commit().await
    }

    /// A tenant's recorded tool usage rows at or after `since` (ms), oldest first.
    pub async fn tool_usage_of(
        &self,
        tenant: &str,
        since: i64,
        limit: u32,
    ) -> Result<Vec<NewToolUsage>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT tenant_id, principal_id, session_id, core_id, channel, tool, status, calls, \
             cpu_ms, outbound_bytes, latency_ms, at FROM usage_tool_calls \
             WHERE tenant_id = $1 AND at >= $2 ORDER BY id LIMIT $3",
        )
        .bind(tenant)
        .bind(since)
        .bind(i64::from(limit))
        .fetch_all(self.usage_pool())
        .await?;
        rows.iter()
            .map(|r| {
                Ok(NewToolUsage {
                    tenant_id: r.try_get(0)?,
                    principal_id: r.try_get(1)?,
                    session_id: r.try_get(2)?,
                    core_id: r.try_get(3)?,
                    channel: r.try_get(4)?,
                    tool: r.try_get(5)?,
                    status: r.try_get(6)?,
                    calls: unsigned(r.try_get(7)?),
                    cpu_ms: unsigned(r.try_get(8)?),
                    outbound_bytes: unsigned(r.try_get(9)?),
                    latency_ms: unsigned(r.try_get(10)?),
                    at: r.try_get(11)?,
                })
            })
            .collect()
    }

    /// Roll up to `limit` raw rows of each kind into `usage_hourly`, in one
    /// transaction that also marks them rolled. Safe to run on several
    /// instances at once: a row is claimed by the one statement that flips
    /// its flag, and the flag is rechecked under the row's lock, so no row
    /// is counted twice.
    pub async fn roll_up_usage(&self, limit: u32) -> Result<RolledUp, sqlx::Error> {
        let _gate = self.usage_gate().await;
        let mut tx = self.usage_pool().begin().await?;
        let limit = i64::from(limit);
        let mut sums: std::collections::BTreeMap<HourKey, UsageSums> = Default::default();
        let models = sqlx::query(
            "UPDATE usage_model_calls SET rolled = 1 WHERE rolled = 0 AND id IN \
             (SELECT id FROM usage_model_calls WHERE rolled = 0 ORDER BY id LIMIT $1) \
             RETURNING tenant_id, at, principal_id, core_id, channel, provider, model, \
             input_tokens, output_tokens, cached_tokens, latency_ms",
        )
        .bind(limit)
        .fetch_all(&mut *tx)
        .await?;
        for r in &models {
            let at: i64 = r.try_get(1)?;
            let key = (
                r.try_get(0)?,
                at.div_euclid(HOUR_MS) * HOUR_MS,
                r.try_get(2)?,
                r.try_get(3)?,
                r.try_get(4)?,
                r.try_get(5)?,
                r.try_get(6)?,
                String::new(),
                String::new(),
            );
            let s = sums.entry(key).or_default();
            s.model_calls += 1;
            let input: Option<i64> = r.try_get(7)?;
            match input {
                Some(i) => {
                    s.input_tokens += unsigned(i);
                    s.output_tokens += unsigned(r.try_get::<Option<i64>, _>(8)?.unwrap_or(0));
                    s.cached_tokens += unsigned(r.try_get::<Option<i64>, _>(9)?.unwrap_or(0));
                }
                None => s.unmetered_calls += 1,
            }
            s.model_latency_ms += unsigned(r.try_get(10)?);
        }
        let tools = sqlx::query(
            "UPDATE usage_tool_calls SET rolled = 1 WHERE rolled = 0 AND id IN \
             (SELECT id FROM usage_tool_calls WHERE rolled = 0 ORDER BY id LIMIT $1) \
             RETURNING tenant_id, at, principal_id, core_id, channel, tool, status, calls, \
             cpu_ms, outbound_bytes, latency_ms",
        )
        .bind(limit)
        .fetch_all(&mut *tx)
        .await?;
        for r in &tools {
            let at: i64 = r.try_get(1)?;
            let key = (
                r.try_get(0)?,
                at.div_euclid(HOUR_MS) * HOUR_MS,
                r.try_get(2)?,
                r.try_get(3)?,
                r.try_get(4)?,
                String::new(),
                String::new(),
                r.try_get(5)?,
                r.try_get(6)?,
            );
            let s = sums.entry(key).or_default();
            s.tool_calls += unsigned(r.try_get(7)?);
            s.cpu_ms += unsigned(r.try_get(8)?);
            s.outbound_bytes += unsigned(r.try_get(9)?);
            s.tool_latency_ms += unsigned(r.try_get(10)?);
        }
        // Keys in one order on every instance: concurrent upserts of the
        // same hours cannot deadlock.
        let sums: Vec<_> = sums.into_iter().collect();
        for chunk in sums.chunks(INSERT_CHUNK / 2) {
            let sql = format!(
                "INSERT INTO usage_hourly (tenant_id, hour, principal_id, core_id, channel, \
                 provider, model, tool, status, model_calls, unmetered_calls, input_tokens, \
                 output_tokens, cached_tokens, latency_ms, tool_calls, cpu_ms, outbound_bytes) \
                 VALUES {} ON CONFLICT (tenant_id, hour, principal_id, core_id, channel, \
                 provider, model, tool, status) DO UPDATE SET \
                 model_calls = usage_hourly.model_calls + excluded.model_calls, \
                 unmetered_calls = usage_hourly.unmetered_calls + excluded.unmetered_calls, \
                 input_tokens = usage_hourly.input_tokens + excluded.input_tokens, \
                 output_tokens = usage_hourly.output_tokens + excluded.output_tokens, \
                 cached_tokens = usage_hourly.cached_tokens + excluded.cached_tokens, \
                 latency_ms = usage_hourly.latency_ms + excluded.latency_ms, \
                 tool_calls = usage_hourly.tool_calls + excluded.tool_calls, \
                 cpu_ms = usage_hourly.cpu_ms + excluded.cpu_ms, \
                 outbound_bytes = usage_hourly.outbound_bytes + excluded.outbound_bytes",
                values_clause_for(self.backend(), chunk.len(), 18)
            );
            // One shape per batch size: not kept in the connection's statement
            // cache, where it would push out the turns' hot statements.
            let mut q = sqlx::query(AssertSqlSafe(sql)).persistent(false);
            for (k, s) in chunk {
                // One latency column: a model row's model latency, a tool
                // row's tool latency (the `tool` column tells them apart).
                let latency = s.model_latency_ms + s.tool_latency_ms;
                q = q
                    .bind(&k.0)
                    .bind(k.1)
                    .bind(&k.2)
                    .bind(&k.3)
                    .bind(&k.4)
                    .bind(&k.5)
                    .bind(&k.6)
                    .bind(&k.7)
                    .bind(&k.8)
                    .bind(signed(s.model_calls))
                    .bind(signed(s.unmetered_calls))
                    .bind(signed(s.input_tokens))
                    .bind(signed(s.output_tokens))
                    .bind(signed(s.cached_tokens))
                    .bind(signed(latency))
                    .bind(signed(s.tool_calls))
                    .bind(signed(s.cpu_ms))
                    .bind(signed(s.outbound_bytes));
            }
            q.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(RolledUp {
            model_calls: models.len() as u64,
            tool_rows: tools.len() as u64,
        })
    }

    /// Delete rolled raw rows older than `raw_before` and roll-ups of hours
    /// before `hourly_before` (ms). Unrolled raw rows are never deleted.
    /// Returns the rows deleted.
    pub async fn prune_usage(
        &self,
        raw_before: i64,
        hourly_before: i64,
    ) -> Result<u64, sqlx::Error> {
        let _gate = self.usage_gate().await;
        let mut n = 0;
        for sql in [
            "DELETE FROM usage_model_calls WHERE rolled = 1 AND at < $1",
            "DELETE FROM usage_tool_calls WHERE rolled = 1 AND at < $1",
        ] {
            n += sqlx::query(sql)
                .bind(raw_before)
                .execute(self.usage_pool())
                .await?
                .rows_affected();
        }
        n += sqlx::query("DELETE FROM usage_hourly WHERE hour < $1")
            .bind(hourly_before)
            .execute(self.usage_pool())
            .await?
            .rows_affected();
        Ok(n)
    }

    /// Usage per bucket, tenant and group: the roll-ups plus the raw rows
    /// not rolled up yet, read in one statement (one snapshot, so a roll-up
    /// committing meanwhile is counted once).
    pub async fn usage_report(&self, q: &UsageQuery) -> Result<Vec<UsageRow>, sqlx::Error> {
        let tenant = if q.tenant.is_some() {
            " AND tenant_id = $4"
        } else {
            ""
        };
        let mut keys = String::new();
        for k in &q.group {
            if matches!(k, UsageKey::Provider | UsageKey::Model) {
                continue;
            }
            keys.push_str(", ");
            keys.push_str(k.column());
        }
        let sum = |c: &str| format!("CAST(SUM({c}) AS BIGINT)");
        let sql = format!(
            "SELECT (hour / $3) * $3 AS bucket, tenant_id, provider, model{keys}, \
             {}, {}, {}, {}, {}, \
             CAST(SUM(CASE WHEN tool = '' THEN latency_ms ELSE 0 END) AS BIGINT), \
             {}, CAST(SUM(CASE WHEN tool = '' THEN 0 ELSE latency_ms END) AS BIGINT), {}, {} \
             FROM (\
               SELECT tenant_id, hour, principal_id, core_id, channel, provider, model, tool, \
               status, model_calls, unmetered_calls, input_tokens, output_tokens, \
               cached_tokens, latency_ms, tool_calls, cpu_ms, outbound_bytes \
               FROM usage_hourly WHERE hour >= $1 AND hour < $2{tenant} \
             UNION ALL \
               SELECT tenant_id, (at / {HOUR_MS}) * {HOUR_MS}, principal_id, core_id, channel, \
               provider, model, '', '', 1, \
               CASE WHEN input_tokens IS NULL THEN 1 ELSE 0 END, COALESCE(input_tokens, 0), \
               COALESCE(output_tokens, 0), COALESCE(cached_tokens, 0), latency_ms, 0, 0, 0 \
               FROM usage_model_calls WHERE rolled = 0 AND at >= $1 AND at < $2{tenant} \
             UNION ALL \
               SELECT tenant_id, (at / {HOUR_MS}) * {HOUR_MS}, principal_id, core_id, channel, \
               '', '', tool, status, 0, 0, 0, 0, 0, latency_ms, calls, cpu_ms, outbound_bytes \
               FROM usage_tool_calls WHERE rolled = 0 AND at >= $1 AND at < $2{tenant} \
             ) u GROUP BY (hour / $3) * $3, tenant_id, provider, model{keys} \
             ORDER BY 1, tenant_id, provider, model{keys}",
            sum("model_calls"),
            sum("unmetered_calls"),
            sum("input_tokens"),
            sum("output_tokens"),
            sum("cached_tokens"),
            sum("tool_calls"),
            sum("cpu_ms"),
            sum("outbound_bytes"),
        );
        let mut query = sqlx::query(AssertSqlSafe(sql))
            .bind(q.from)
            .bind(q.to)
            .bind(q.bucket_ms);
        if let Some(t) = &q.tenant {
            query = query.bind(t);
        }
        let rows = query.fetch_all(self.usage_pool()).await?;
        let own: Vec<UsageKey> = q
            .group
            .iter()
            .copied()
            .filter(|k| !matches!(k, UsageKey::Provider | UsageKey::Model))
            .collect();
        rows.iter()
            .map(|r| {
                let provider: String = r.try_get(2)?;
                let model: String = r.try_get(3)?;
                let mut at = 4 + own.len();
                let mut next = || -> Result<u64, sqlx::Error> {
                    let v: Option<i64> = r.try_get(at)?;
                    at += 1;
                    Ok(unsigned(v.unwrap_or(0)))
                };
                let sums = UsageSums {
                    model_calls: next()?,
                    unmetered_calls: next()?,
                    input_tokens: next()?,
                    output_tokens: next()?,
                    cached_tokens: next()?,
                    model_latency_ms: next()?,
                    tool_calls: next()?,
                    tool_latency_ms: next()?,
                    cpu_ms: next()?,
                    outbound_bytes: next()?,
                };
                let mut keys = Vec::with_capacity(q.group.len());
                for k in &q.group {
                    keys.push(match k {
                        UsageKey::Provider => provider.clone(),
                        UsageKey::Model => model.clone(),
                        other => {
                            let i = own.iter().position(|o| o == other).unwrap_or(0);
                            r.try_get(4 + i)?
                        }
                    });
                }
                Ok(UsageRow {
                    bucket: r.try_get(0)?,
                    tenant_id: r.try_get(1)?,
                    keys,
                    provider,
                    model,
                    sums,
                })
            })
            .collect()
    }
}

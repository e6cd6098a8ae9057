//! Usage metering rows (`usage_model_calls`): what each model call used,
//! attributed to tenant, principal, session, core and channel. Written in
//! batches by the meter ([`crate::usage`]), off the turn's path.

use sqlx::{AssertSqlSafe, Row};

use super::events::values_clause;
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
        let _gate = self.write_gate().await;
        let mut tx = self.pool().begin().await?;
        for chunk in calls.chunks(INSERT_CHUNK) {
            let sql = format!(
                "INSERT INTO usage_model_calls (tenant_id, principal_id, session_id, core_id, \
                 channel, provider, model, input_tokens, output_tokens, cached_tokens, \
                 latency_ms, at) VALUES {}",
                values_clause(chunk.len(), 12)
            );
            let mut q = sqlx::query(AssertSqlSafe(sql));
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
        .fetch_all(self.pool())
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

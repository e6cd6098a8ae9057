//! The events of a tenant's admin stream (`GET /v1/tenant/events`): what
//! happens to a tenant as a whole rather than in one session. On the wire
//! (an SSE `data:`) an event is `{"seq","at","type","data"}`, as a
//! session's events are; `type` and `data` are one [`TenantEventPayload`].

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// One event of a tenant's admin stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TenantEvent {
    /// Grows with every event of the tenant (not gapless: the sequence is
    /// shared); send it back as `Last-Event-ID` or `after` to resume.
    #[schema(minimum = 1)]
    pub seq: i64,
    /// RFC 3339, UTC.
    #[schema(format = DateTime)]
    pub at: String,
    #[serde(flatten)]
    pub payload: TenantEventPayload,
}

/// What happened (`type`) and its payload (`data`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", content = "data")]
pub enum TenantEventPayload {
    #[serde(rename = "budget.warning")]
    BudgetWarning(BudgetWarning),
}

/// A budget limit crossed 80 % or 100 % of its allowance. Sent once per
/// limit, period and level across every instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = tenant_events::BudgetWarning)]
pub struct BudgetWarning {
    /// Whose limit: `null` for the tenant's (its budget within the
    /// operator's ceiling), else the principal's own budget.
    #[schema(required = true)]
    pub principal: Option<String>,
    /// Which limit, as budgets name it (`tokens_per_day`, `cost_per_month`, …).
    pub name: String,
    /// 80: at least 80 % spent; 100: spent, and work stops until it is raised
    /// or the period turns.
    #[schema(minimum = 80, maximum = 100)]
    pub level: u8,
    /// Spent in the period when it was noticed.
    pub used: f64,
    /// The limit.
    pub limit: f64,
    /// The first moment (UTC) of the day or month the limit is for.
    #[schema(format = DateTime)]
    pub period_start: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warning_round_trips_with_its_type() {
        let ev = TenantEvent {
            seq: 3,
            at: "2026-12-07T10:00:00.000Z".into(),
            payload: TenantEventPayload::BudgetWarning(BudgetWarning {
                principal: None,
                name: "tokens_per_day".into(),
                level: 80,
                used: 850.0,
                limit: 1000.0,
                period_start: "2026-12-07T00:00:00.000Z".into(),
            }),
        };
        let json = serde_json::to_value(&ev).unwrap();
        assert_eq!(json["type"], "budget.warning");
        assert_eq!(json["data"]["principal"], serde_json::Value::Null);
        assert_eq!(json["data"]["level"], 80);
        assert_eq!(serde_json::from_value::<TenantEvent>(json).unwrap(), ev);
    }
}

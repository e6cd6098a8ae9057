//! `GET/PUT /v1/budgets`: the caller's tenant's budgets (tenant-wide and
//! per principal) with what has been spent against them, set by tenant
//! admins within the server operator's ceiling. Enforcement is
//! [`crate::usage::guard`]'s.

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiJson, Auth, Via};
use crate::app::SharedApp;
use crate::usage::budget::{self, Limits, Spend};
use crate::usage::guard::Status;

/// What has been spent in the current UTC day and month.
#[derive(Debug, Serialize, ToSchema)]
pub struct SpendView {
    pub tokens_today: u64,
    pub tokens_this_month: u64,
    pub cost_today: f64,
    pub cost_this_month: f64,
    pub cpu_seconds_today: f64,
    pub tool_calls_today: u64,
}

impl From<Spend> for SpendView {
    fn from(s: Spend) -> Self {
        Self {
            tokens_today: s.tokens_day,
            tokens_this_month: s.tokens_month,
            cost_today: s.cost_day,
            cost_this_month: s.cost_month,
            cpu_seconds_today: s.cpu_ms_day as f64 / 1000.0,
            tool_calls_today: s.tool_calls_day,
        }
    }
}

/// One limit that is set, against its spend.
#[derive(Debug, Serialize, ToSchema)]
pub struct LineView {
    /// The limit's name (`tokens_per_day`, …).
    pub name: String,
    pub limit: f64,
    pub used: f64,
    /// What is left (0 once spent).
    pub remaining: f64,
}

fn lines(limits: &Limits, spend: &Spend) -> Vec<LineView> {
    budget::lines(limits, spend)
        .into_iter()
        .map(|l| LineView {
            name: l.name.to_owned(),
            limit: l.limit,
            used: l.used,
            remaining: (l.limit - l.used).max(0.0),
        })
        .collect()
}

/// A principal's own budget.
#[derive(Debug, Serialize, ToSchema)]
pub struct PrincipalBudgetView {
    pub principal: String,
    pub limits: Limits,
    pub spent: SpendView,
    pub lines: Vec<LineView>,
    /// 80 or 100 once that share of a limit is spent.
    pub warning: Option<u8>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct BudgetsView {
    pub tenant: String,
    /// The currency of cost limits (the server's price list).
    pub currency: String,
    /// The tenant-wide budget as the tenant admin set it.
    pub budget: Limits,
    /// The server operator's ceiling for the tenant.
    pub ceiling: Limits,
    /// What is enforced tenant-wide: the stricter of budget and ceiling.
    pub effective: Limits,
    pub spent: SpendView,
    /// The effective limits against the tenant's spend.
    pub lines: Vec<LineView>,
    /// 80 or 100 once that share of a tenant-wide limit is spent.
    pub warning: Option<u8>,
    pub principals: Vec<PrincipalBudgetView>,
}

/// A tenant's status as the API (and `demiurge budget show`) shows it.
pub fn view(tenant: &str, currency: &str, s: Status) -> BudgetsView {
    BudgetsView {
        tenant: tenant.to_owned(),
        currency: currency.to_owned(),
        lines: lines(&s.effective, &s.spent),
        warning: budget::warning(&s.effective, &s.spent),
        budget: s.budget,
        ceiling: s.ceiling,
        effective: s.effective,
        spent: s.spent.into(),
        principals: s
            .principals
            .into_iter()
            .map(|(principal, limits, spent)| PrincipalBudgetView {
                principal,
                lines: lines(&limits, &spent),
                warning: budget::warning(&limits, &spent),
                limits,
                spent: spent.into(),
            })
            .collect(),
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetBudget {
    /// A principal of the tenant; absent: the tenant-wide budget.
    #[schema(pattern = "^(|[A-Za-z0-9][A-Za-z0-9_.@-]{0,127})$")]
    pub principal: Option<String>,
    /// The limits; every one absent (or null) removes the budget.
    pub limits: Limits,
}

/// The caller's tenant's budgets and spend (tenant admins).
#[utoipa::path(get, path = "/v1/budgets", tag = "tenant",
    responses((status = 200, body = BudgetsView), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn get_budgets(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
) -> ApiResult<Json<BudgetsView>> {
    let status = app.budgets.status_for(&scope).await?;
    Ok(Json(view(
        scope.tenant().as_str(),
        &app.prices.currency,
        status,
    )))
}

/// Set or remove a budget of the caller's tenant (tenant admins), within
/// the server operator's ceiling. Applies to model steps from now on, on
/// every instance within seconds.
#[utoipa::path(put, path = "/v1/budgets", tag = "tenant", request_body = SetBudget,
    responses((status = 200, body = BudgetsView), (status = 400, body = ErrorBody),
        (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn put_budget(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Via(via): Via,
    ApiJson(req): ApiJson<SetBudget>,
) -> ApiResult<Json<BudgetsView>> {
    let status = app
        .budgets
        .set(&scope, &via, req.principal.as_deref(), req.limits)
        .await?;
    Ok(Json(view(
        scope.tenant().as_str(),
        &app.prices.currency,
        status,
    )))
}

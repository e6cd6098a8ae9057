//! The budget guard: answers "may this tenant's principal start more
//! work?" before each model step, from a cached view of the tenant's limits
//! and spend.
//!
//! The database is the truth. Each tenant's view is read again once it is
//! older than [`REFRESH`] (one query for the limits, and for a tenant that
//! has any, one for this day's and month's spend from the usage tables),
//! and the meter adds what this instance records as it stores it. So an
//! instance sees its own spend at once, and another instance's within
//! [`REFRESH`] plus the meter's write delay. A turn in flight may finish the
//! model step it is in; the next one is refused.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use super::budget::{self, Limits, Line, Period, Spend};
use super::report::Prices;
use crate::events::tenant::TenantFeed;
use crate::store::{BudgetKind, NewModelCall, NewToolUsage, Store, UsageKey, UsageQuery};
use crate::wire::tenant_events::{BudgetWarning, TenantEventPayload};

/// How old a tenant's cached view may get.
pub const REFRESH: Duration = Duration::from_secs(2);

const DAY_MS: i64 = 86_400_000;

/// A spent limit: whose, which, and how far.
#[derive(Debug, Clone, PartialEq)]
pub struct Exceeded {
    /// `None`: the tenant's budget (or ceiling); else this principal's.
    pub principal: Option<String>,
    pub line: Line,
}

impl std::fmt::Display for Exceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let whose = match &self.principal {
            None => "the tenant's".to_owned(),
            Some(p) => format!("principal {p}'s"),
        };
        write!(
            f,
            "budget exceeded: {whose} {} is spent ({} of {}); a tenant admin can raise it",
            self.line.name, self.line.used, self.line.limit
        )
    }
}

/// One tenant's limits and spend, as last read.
#[derive(Debug, Clone, Default)]
struct View {
    /// The tenant-wide limits: the budget within the ceiling (the stricter
    /// of the two for every limit).
    tenant: Limits,
    /// Principals' own budgets.
    principals: HashMap<String, Limits>,
    /// The tenant's spend and each principal's.
    spent: Spend,
    spent_by: HashMap<String, Spend>,
    /// The UTC day the spend is of (its first ms); a new day reads again.
    day: i64,
    /// The UTC month the monthly spend is of (its first ms).
    month: i64,
    read_at: Option<Instant>,
}

impl View {
    fn any_limit(&self) -> bool {
        self.tenant != Limits::default() || !self.principals.is_empty()
    }
}

/// What a tenant's `budgets` rows say.
#[derive(Debug, Default)]
struct Stored {
    budget: Limits,
    ceiling: Limits,
    principals: HashMap<String, Limits>,
}

/// A tenant's budgets and spend, as `GET /v1/budgets` shows them.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// The tenant admin's tenant-wide budget as set.
    pub budget: Limits,
    /// The server operator's ceiling.
    pub ceiling: Limits,
    /// What is enforced tenant-wide: the stricter of the two.
    pub effective: Limits,
    pub spent: Spend,
    /// Principals' own budgets, with their spend, by principal.
    pub principals: Vec<(String, Limits, Spend)>,
}

#[derive(Clone)]
pub struct BudgetGuard {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    prices: Arc<Prices>,
    /// Where budget warnings are announced (the tenant's admin stream).
    feed: TenantFeed,
    /// Warnings this instance has announced (tenant, once-key), so a
    /// refresh does not write again what it already wrote; the stream's
    /// once-key is what holds across instances.
    announced: std::sync::Mutex<std::collections::HashSet<(String, String)>>,
    views: RwLock<HashMap<String, Arc<RwLock<View>>>>,
    /// One refresh per tenant at a time.
    refreshing: tokio::sync::Mutex<()>,
    /// Per tenant with limits: the warning level last seen (0, 80, 100) and
    /// the model steps refused, for `/metrics`.
    signals: std::sync::Mutex<std::collections::BTreeMap<String, (u8, u64)>>,
}

/// Tenants with a `/metrics` label of their own, per instance; the rest
/// share `(other)`.
const MAX_METRIC_TENANTS: usize = 1_000;

/// Warnings remembered per instance before the memory starts over.
const MAX_ANNOUNCED: usize = 10_000;

/// The limits that are set, for an audit record (an absent one is none).
fn set_limits(limits: &Limits) -> serde_json::Value {
    let mut v = serde_json::to_value(limits).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        m.retain(|_, x| !x.is_null());
    }
    v
}

/// The stricter of two limits.
fn min_opt<T: PartialOrd + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y < x { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Every limit at its stricter value of `a` and `b`.
pub fn stricter(a: &Limits, b: &Limits) -> Limits {
    Limits {
        tokens_per_day: min_opt(a.tokens_per_day, b.tokens_per_day),
        tokens_per_month: min_opt(a.tokens_per_month, b.tokens_per_month),
        cost_per_day: min_opt(a.cost_per_day, b.cost_per_day),
        cost_per_month: min_opt(a.cost_per_month, b.cost_per_month),
        cpu_seconds_per_day: min_opt(a.cpu_seconds_per_day, b.cpu_seconds_per_day),
        tool_calls_per_day: min_opt(a.tool_calls_per_day, b.tool_calls_per_day),
    }
}

/// The first ms of the UTC day and month holding `now`.
fn periods(now: i64) -> (i64, i64) {
    use chrono::{Datelike, TimeZone};
    let day = now.div_euclid(DAY_MS) * DAY_MS;
    let month = chrono::Utc
        .timestamp_millis_opt(now)
        .single()
        .and_then(|t| {
            chrono::Utc
                .with_ymd_and_hms(t.year(), t.month(), 1, 0, 0, 0)
                .single()
        })
        .map_or(day, |t| t.timestamp_millis());
    (day, month)
}

impl BudgetGuard {
    pub fn new(store: Store, prices: Arc<Prices>, feed: TenantFeed) -> Self {
        Self {
            inner: Arc::new(Inner {
                store,
                prices,
                feed,
                announced: Default::default(),
                views: Default::default(),
                refreshing: Default::default(),
                signals: Default::default(),
            }),
        }
    }

    fn slot(&self, tenant: &str) -> Arc<RwLock<View>> {
        if let Some(v) = self
            .inner
            .views
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(tenant)
        {
            return v.clone();
        }
        self.inner
            .views
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .entry(tenant.to_owned())
            .or_default()
            .clone()
    }

    /// May `principal` of `tenant` start more work? `Err` names the spent
    /// limit. Reads the database only when the cached view is stale.
    pub async fn check(&self, tenant: &str, principal: &str) -> Result<(), Exceeded> {
        let slot = self.slot(tenant);
        let now = crate::time::now_ms();
        let fresh = {
            let v = slot.read().unwrap_or_else(|p| p.into_inner());
            v.read_at.is_some_and(|t| t.elapsed() < REFRESH)
                && v.day == now.div_euclid(DAY_MS) * DAY_MS
        };
        if !fresh {
            if let Err(e) = self.refresh(tenant, &slot).await {
                // The last known view stands; a database hiccup does not
                // stop every turn (the meter's rows are the record).
                tracing::warn!(error = %e, tenant, "budget view not refreshed");
            }
        }
        let verdict = {
            let v = slot.read().unwrap_or_else(|p| p.into_inner());
            if let Some(line) = budget::exceeded(&v.tenant, &v.spent) {
                Err(Exceeded {
                    principal: None,
                    line,
                })
            } else if let Some(line) = v.principals.get(principal).and_then(|limits| {
                let spent = v.spent_by.get(principal).copied().unwrap_or_default();
                budget::exceeded(limits, &spent)
            }) {
                Err(Exceeded {
                    principal: Some(principal.to_owned()),
                    line,
                })
            } else {
                Ok(())
            }
        };
        if verdict.is_err() {
            self.signal(tenant, |s| s.1 += 1);
        }
        verdict
    }

    fn signal(&self, tenant: &str, f: impl FnOnce(&mut (u8, u64))) {
        let mut map = self.inner.signals.lock().unwrap_or_else(|p| p.into_inner());
        let key = if map.contains_key(tenant) || map.len() < MAX_METRIC_TENANTS {
            tenant
        } else {
            "(other)"
        };
        f(map.entry(key.to_owned()).or_default());
    }

    /// Note a fresh view's warning level; a level that rises is logged.
    fn note_level(&self, tenant: &str, view: &View) {
        if !view.any_limit() {
            return;
        }
        let mut level = budget::warning(&view.tenant, &view.spent).unwrap_or(0);
        for (p, limits) in &view.principals {
            let spent = view.spent_by.get(p).copied().unwrap_or_default();
            level = level.max(budget::warning(limits, &spent).unwrap_or(0));
        }
        let mut before = 0;
        self.signal(tenant, |s| {
            before = s.0;
            s.0 = level;
        });
        if level > before {
            tracing::warn!(
                tenant,
                level,
                "budget warning: {level} % of a limit is spent"
            );
        }
        self.announce(tenant, view);
    }

    /// Put each limit that crossed 80 % or 100 % on the tenant's admin
    /// stream, once per limit value, period and level (across instances:
    /// the stream's once-key). A raised limit warns again when it is
    /// crossed in its turn.
    fn announce(&self, tenant: &str, view: &View) {
        let whose = std::iter::once((None, &view.tenant, view.spent)).chain(
            view.principals.iter().map(|(p, limits)| {
                let spent = view.spent_by.get(p).copied().unwrap_or_default();
                (Some(p.as_str()), limits, spent)
            }),
        );
        let mut new = Vec::new();
        for (principal, limits, spent) in whose {
            for (line, level) in budget::warnings(limits, &spent) {
                let period_start = match Period::of(line.name) {
                    Period::Day => view.day,
                    Period::Month => view.month,
                };
                let key = format!(
                    "budget.warning:{}:{}:{}:{period_start}:{level}",
                    principal.unwrap_or(""),
                    line.name,
                    line.limit
                );
                let mut announced = self
                    .inner
                    .announced
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                if announced.len() >= MAX_ANNOUNCED {
                    // Forgetting costs one more insert that adds nothing.
                    announced.clear();
                }
                if announced.insert((tenant.to_owned(), key.clone())) {
                    new.push((
                        key,
                        TenantEventPayload::BudgetWarning(BudgetWarning {
                            principal: principal.map(str::to_owned),
                            name: line.name.to_owned(),
                            level,
                            used: line.used,
                            limit: line.limit,
                            period_start: crate::time::rfc3339(period_start),
                        }),
                    ));
                }
            }
        }
        if new.is_empty() {
            return;
        }
        // Off the model step's path: the check has already answered.
        let (feed, tenant) = (self.inner.feed.clone(), tenant.to_owned());
        tokio::spawn(async move {
            for (key, payload) in new {
                if let Err(e) = feed.append(&tenant, Some(&key), &payload).await {
                    tracing::warn!(error = %e, tenant, "budget warning not put on the stream");
                }
            }
        });
    }

    /// The budget gauges and counters, for `/metrics`.
    pub fn render_metrics(&self) -> String {
        use std::fmt::Write;
        let map = self
            .inner
            .signals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# HELP demiurge_budget_warning_level The highest share of a budget limit spent, as last read: 0, 80 or 100 (tenants with budgets)."
        );
        let _ = writeln!(s, "# TYPE demiurge_budget_warning_level gauge");
        for (tenant, (level, _)) in &map {
            let _ = writeln!(
                s,
                "demiurge_budget_warning_level{{tenant=\"{}\"}} {level}",
                super::counters::escape(tenant)
            );
        }
        let _ = writeln!(
            s,
            "# HELP demiurge_budget_refusals_total Model steps refused because a budget was spent."
        );
        let _ = writeln!(s, "# TYPE demiurge_budget_refusals_total counter");
        for (tenant, (_, n)) in &map {
            let _ = writeln!(
                s,
                "demiurge_budget_refusals_total{{tenant=\"{}\"}} {n}",
                super::counters::escape(tenant)
            );
        }
        s
    }

    /// Forget a tenant's view (its limits changed here): the next check reads.
    pub fn invalidate(&self, tenant: &str) {
        let slot = self.slot(tenant);
        slot.write().unwrap_or_else(|p| p.into_inner()).read_at = None;
    }

    async fn refresh(&self, tenant: &str, slot: &RwLock<View>) -> Result<(), sqlx::Error> {
        let _one = self.inner.refreshing.lock().await;
        // Someone else may have just done it.
        if slot
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .read_at
            .is_some_and(|t| t.elapsed() < REFRESH)
        {
            return Ok(());
        }
        let view = self.read_view(tenant).await?;
        self.note_level(tenant, &view);
        *slot.write().unwrap_or_else(|p| p.into_inner()) = view;
        Ok(())
    }

    /// The caller's tenant's status: tenant admins only.
    pub async fn status_for(
        &self,
        scope: &crate::auth::PrincipalScope,
    ) -> Result<Status, crate::error::Error> {
        scope.require_admin("read or change budgets")?;
        Ok(self.status(scope.tenant().as_str()).await?)
    }

    /// Set (or, with no limit at all, remove) the tenant-wide budget or one
    /// principal's, as a tenant admin, within the operator's ceiling.
    pub async fn set(
        &self,
        scope: &crate::auth::PrincipalScope,
        via: &crate::store::Surface,
        principal: Option<&str>,
        limits: Limits,
    ) -> Result<Status, crate::error::Error> {
        use crate::error::Error;
        scope.require_admin("read or change budgets")?;
        budget::check_limits(&limits).map_err(Error::Invalid)?;
        let tenant = scope.tenant().as_str();
        let principal = match principal.map(str::trim).filter(|p| !p.is_empty()) {
            Some(p) => crate::ids::PrincipalId::parse(p)
                .map_err(|e| Error::Invalid(format!("principal: {e}")))?
                .to_string(),
            None => String::new(),
        };
        let ceiling = self.stored(tenant).await?.ceiling;
        let remove = limits == Limits::default();
        if !remove {
            budget::within_ceiling(&limits, &ceiling).map_err(Error::Invalid)?;
        }
        let json = serde_json::to_string(&limits).map_err(|e| Error::Internal(e.into()))?;
        let audit = scope.audit(
            via,
            if remove {
                "budget.removed"
            } else {
                "budget.set"
            },
            if principal.is_empty() {
                tenant
            } else {
                &principal
            },
            serde_json::json!({"principal": (!principal.is_empty()).then_some(&principal),
                "limits": set_limits(&limits)}),
        );
        self.inner
            .store
            .set_budget(
                tenant,
                &principal,
                BudgetKind::Budget,
                (!remove).then_some(json.as_str()),
                scope.principal().as_str(),
                &audit,
            )
            .await?;
        tracing::info!(tenant, principal = %principal, by = %scope.principal(), removed = remove,
            "budget changed");
        self.invalidate(tenant);
        Ok(self.status(tenant).await?)
    }

    /// Set (or remove, with no limit at all) a tenant's ceiling: the server
    /// operator's, from the command line.
    pub async fn set_ceiling(&self, tenant: &str, limits: Limits) -> Result<(), String> {
        budget::check_limits(&limits)?;
        let remove = limits == Limits::default();
        let json = serde_json::to_string(&limits).map_err(|e| e.to_string())?;
        let audit = crate::store::NewAudit::by_operator(
            tenant,
            if remove {
                "budget.ceiling_removed"
            } else {
                "budget.ceiling_set"
            },
            tenant,
            serde_json::json!({"limits": set_limits(&limits)}),
        );
        self.inner
            .store
            .set_budget(
                tenant,
                "",
                BudgetKind::Ceiling,
                (!remove).then_some(json.as_str()),
                "(server operator)",
                &audit,
            )
            .await
            .map_err(|e| e.to_string())?;
        self.invalidate(tenant);
        Ok(())
    }

    /// A tenant's stored budget, ceiling and principals' budgets; an
    /// unreadable row is logged and left out.
    async fn stored(&self, tenant: &str) -> Result<Stored, sqlx::Error> {
        let mut out = Stored::default();
        for row in self.inner.store.budgets_of(tenant).await? {
            let limits: Limits = match serde_json::from_str(&row.limits) {
                Ok(l) => l,
                Err(e) => {
                    tracing::error!(error = %e, tenant, "stored budget unreadable; ignored");
                    continue;
                }
            };
            match (row.kind, row.principal_id.is_empty()) {
                (BudgetKind::Ceiling, _) => out.ceiling = limits,
                (BudgetKind::Budget, true) => out.budget = limits,
                // On top of the tenant-wide limits, which every principal meets too.
                (BudgetKind::Budget, false) => {
                    out.principals.insert(row.principal_id, limits);
                }
            }
        }
        Ok(out)
    }

    /// A tenant's budgets, ceiling and spend, read now (for `GET
    /// /v1/budgets`); also refreshes the cached view.
    pub async fn status(&self, tenant: &str) -> Result<Status, sqlx::Error> {
        let (view, budget, ceiling) = self.read(tenant).await?;
        self.note_level(tenant, &view);
        *self.slot(tenant).write().unwrap_or_else(|p| p.into_inner()) = view.clone();
        let mut principals: Vec<(String, Limits, Spend)> = view
            .principals
            .iter()
            .map(|(p, l)| {
                (
                    p.clone(),
                    *l,
                    view.spent_by.get(p).copied().unwrap_or_default(),
                )
            })
            .collect();
        principals.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Status {
            budget,
            ceiling,
            effective: view.tenant,
            spent: view.spent,
            principals,
        })
    }

    async fn read_view(&self, tenant: &str) -> Result<View, sqlx::Error> {
        Ok(self.read(tenant).await?.0)
    }

    /// The view, and the tenant's own budget and ceiling as stored.
    async fn read(&self, tenant: &str) -> Result<(View, Limits, Limits), sqlx::Error> {
        let now = crate::time::now_ms();
        let (day, month) = periods(now);
        let mut view = View {
            day,
            month,
            read_at: Some(Instant::now()),
            ..Default::default()
        };
        let Stored {
            budget,
            ceiling,
            principals,
        } = self.stored(tenant).await?;
        view.principals = principals;
        view.tenant = stricter(&budget, &ceiling);
        if !view.any_limit() {
            return Ok((view, budget, ceiling));
        }
        let rows = self
            .inner
            .store
            .usage_report(&UsageQuery {
                tenant: Some(tenant.to_owned()),
                from: month,
                to: day + DAY_MS,
                bucket_ms: DAY_MS,
                group: vec![UsageKey::Principal],
            })
            .await?;
        for r in rows {
            let tokens = r.sums.input_tokens + r.sums.output_tokens;
            let cost = self.inner.prices.cost_of(&r.provider, &r.model, &r.sums);
            let today = r.bucket == day;
            let s = Spend {
                tokens_day: if today { tokens } else { 0 },
                tokens_month: tokens,
                cost_day: if today { cost } else { 0.0 },
                cost_month: cost,
                cpu_ms_day: if today { r.sums.cpu_ms } else { 0 },
                tool_calls_day: if today { r.sums.tool_calls } else { 0 },
            };
            view.spent.add(&s);
            let principal = r.keys.first().cloned().unwrap_or_default();
            view.spent_by.entry(principal).or_default().add(&s);
        }
        Ok((view, budget, ceiling))
    }

    /// What the meter just stored on this instance: added to the cached
    /// views at once, so this instance's own spend shows before the next
    /// read (which then counts it from the database).
    pub fn recorded(&self, calls: &[NewModelCall], tools: &[NewToolUsage]) {
        let views = self.inner.views.read().unwrap_or_else(|p| p.into_inner());
        let add = |tenant: &str, principal: &str, s: Spend| {
            if let Some(slot) = views.get(tenant) {
                let mut v = slot.write().unwrap_or_else(|p| p.into_inner());
                if !v.any_limit() {
                    return;
                }
                v.spent.add(&s);
                v.spent_by.entry(principal.to_owned()).or_default().add(&s);
            }
        };
        for c in calls {
            let Some((i, o, k)) = c.tokens else { continue };
            let sums = crate::store::UsageSums {
                input_tokens: i,
                output_tokens: o,
                cached_tokens: k,
                ..Default::default()
            };
            let cost = self.inner.prices.cost_of(&c.provider, &c.model, &sums);
            add(
                &c.tenant_id,
                &c.principal_id,
                Spend {
                    tokens_day: i + o,
                    tokens_month: i + o,
                    cost_day: cost,
                    cost_month: cost,
                    ..Default::default()
                },
            );
        }
        for t in tools {
            add(
                &t.tenant_id,
                &t.principal_id,
                Spend {
                    cpu_ms_day: t.cpu_ms,
                    tool_calls_day: t.calls,
                    ..Default::default()
                },
            );
        }
        // What was just spent may cross a warning level: say so now, not
        // at the next read (a refused step does not read again).
        let touched: std::collections::BTreeSet<&str> = calls
            .iter()
            .map(|c| c.tenant_id.as_str())
            .chain(tools.iter().map(|t| t.tenant_id.as_str()))
            .collect();
        for tenant in touched {
            if let Some(slot) = views.get(tenant) {
                let v = slot.read().unwrap_or_else(|p| p.into_inner());
                if v.read_at.is_some() {
                    self.note_level(tenant, &v);
                }
            }
        }
    }
}

//! The application state every handler shares: one `Arc<App>`.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::auth::{RateLimits, Revocations, TokenService};
use crate::channels::Channels;
use crate::config::Config;
use crate::core::changes::CoreChanges;
use crate::core::repository::CoreRepository;
use crate::dispatch::approvals::Approvals;
use crate::dispatch::clarify::Clarifications;
use crate::dispatch::Dispatcher;
use crate::events::EventLog;
use crate::metrics::Metrics;
use crate::store::Store;
use crate::tasks::Tasks;
use crate::turn::TurnService;
use crate::walls::Walls;

pub struct App {
    pub config: Config,
    pub store: Store,
    pub tokens: TokenService,
    /// Revoked tokens and disabled principals, kept current by polling.
    pub revocations: Revocations,
    pub limits: RateLimits,
    pub events: EventLog,
    pub turns: TurnService,
    pub metrics: Arc<Metrics>,
    /// The call pipeline (tool calls over REST, MCP listings).
    pub dispatcher: Arc<Dispatcher>,
    /// The durable background task queue, its schedules and signals.
    pub tasks: Tasks,
    pub approvals: Approvals,
    pub clarifications: Clarifications,
    /// Every change that moves a core's live revision (and what follows it).
    pub core_changes: CoreChanges,
    /// The walls every effect stays inside (and the one outbound client).
    pub walls: Arc<Walls>,
    /// Usage metering (model and tool calls), written in batches.
    pub meter: crate::usage::Meter,
    /// The operator's price list per model (`--model-prices`).
    pub prices: Arc<crate::usage::report::Prices>,
    /// Budgets per tenant and principal, checked before each model step.
    pub budgets: crate::usage::guard::BudgetGuard,
    /// Each tenant's admin stream (budget warnings).
    pub tenant_events: crate::events::tenant::TenantFeed,
    /// Reading the tenants' cores (changes go through `core_changes`).
    pub cores: CoreRepository,
    /// Chat channel accounts, webhooks and the outbox.
    pub channels: Channels,
    /// Fired once on SIGTERM/SIGINT: streams close, turns cancel.
    pub shutdown: CancellationToken,
}

pub type SharedApp = Arc<App>;

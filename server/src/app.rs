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
    /// This instance among those serving the database (its id, heartbeat).
    pub membership: Arc<crate::instances::Membership>,
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
    /// Package repositories, and packages installed into cores.
    pub packages: crate::packages::Packages,
    /// Tenants' credentials for their packages' tools.
    pub credentials: crate::sealing::Credentials,
    /// Chat channel accounts, webhooks and the outbox.
    pub channels: Channels,
    /// Fired once on SIGTERM/SIGINT: the instance drains. `/readyz` says
    /// so, it takes no new connections or work, streams close with a
    /// reconnect hint; running turns and tasks go on for `--shutdown-grace`.
    pub shutdown: CancellationToken,
    /// Fired when the drain is over: what running work relied on (the
    /// heartbeat, task leases, cancels from other instances) stops.
    pub stopped: CancellationToken,
}

pub type SharedApp = Arc<App>;

/// What a new session is opened with (every field optional, as in `POST /v1/sessions`).
#[derive(Debug, Default, Clone)]
pub struct SessionRequest {
    pub title: Option<String>,
    pub core: Option<String>,
    pub workspace: Option<String>,
}

/// Longest session title, in characters.
pub const MAX_SESSION_TITLE: usize = 200;

impl App {
    /// Open a session owned by the caller: the REST route and the MCP
    /// endpoint's `initialize` both come here.
    pub async fn create_session(
        &self,
        scope: &crate::auth::PrincipalScope,
        req: SessionRequest,
    ) -> crate::error::Result<crate::store::SessionRow> {
        use crate::error::Error;
        use crate::ids::{CoreId, SessionId, WorkspaceName};
        let title = req.title.unwrap_or_default();
        if title.chars().count() > MAX_SESSION_TITLE {
            return Err(Error::Invalid(format!(
                "title is longer than {MAX_SESSION_TITLE} characters"
            )));
        }
        let core = CoreId::parse(req.core.as_deref().unwrap_or("assistant"))?;
        let workspace = WorkspaceName::parse(req.workspace.as_deref().unwrap_or("default"))?;
        if !self.cores.exists(scope.tenant(), &core) {
            if core.as_str() != "assistant" {
                return Err(Error::Invalid(format!(
                    "unknown core {:?} in this tenant",
                    core.as_str()
                )));
            }
            // A tenant's first session gets the default core (once; never on the turn path).
            let (cores, tenant) = (self.cores.clone(), scope.tenant().clone());
            tokio::task::spawn_blocking(move || cores.ensure_seeded(&tenant))
                .await
                .map_err(|e| Error::Internal(anyhow::anyhow!("seed core: {e}")))?
                .map_err(Error::Internal)?;
        }
        let dir = crate::home::HomeLayout::new(&self.config.home).workspace_dir(
            scope.tenant(),
            scope.principal(),
            workspace.as_str(),
        );
        crate::bootstrap::private_dir(&dir).map_err(Error::Internal)?;
        Ok(self
            .store
            .create_session(&crate::store::NewSession {
                id: SessionId::new(),
                tenant: scope.tenant().clone(),
                principal: scope.principal().clone(),
                title,
                core: core.to_string(),
                workspace: workspace.to_string(),
                provider: self.turns.default_provider().to_owned(),
            })
            .await?)
    }
}

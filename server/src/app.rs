//! The application state every handler shares: one `Arc<App>`.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::auth::{RateLimits, Revocations, TokenService};
use crate::channels::Channels;
use crate::config::Config;
use crate::core::repository::CoreRepository;
use crate::dispatch::Dispatcher;
use crate::events::EventLog;
use crate::metrics::Metrics;
use crate::store::Store;
use crate::turn::TurnService;

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
    pub dispatcher: Arc<Dispatcher>,
    pub cores: CoreRepository,
    /// Chat channel accounts, webhooks and the outbox.
    pub channels: Channels,
    /// Fired once on SIGTERM/SIGINT: streams close, turns cancel.
    pub shutdown: CancellationToken,
}

pub type SharedApp = Arc<App>;

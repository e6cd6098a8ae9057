//! Building and running the server: open the store, bootstrap, recover lost
//! turns, bind (port 0 works for tests), serve ([`http`]: header-read timeout,
//! connection cap), and drain on shutdown.

mod http;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::app::{App, SharedApp};
use crate::auth::{load_or_create_signing_key, RateLimits, Revocations, TokenService};
use crate::config::{Config, ProviderKind};
use crate::core::repository::CoreRepository;
use crate::dispatch::approvals::Approvals;
use crate::dispatch::clarify::Clarifications;
use crate::dispatch::Dispatcher;
use crate::events::{EventLog, Hub};
use crate::metrics::Metrics;
use crate::store::Store;
use crate::turn::anthropic::AnthropicProvider;
use crate::turn::fake::FakeProvider;
use crate::turn::openai::OpenAiProvider;
use crate::turn::{Providers, TurnDeps, TurnService};

/// A built, bound, not yet serving application.
pub struct Application {
    listener: TcpListener,
    app: SharedApp,
    /// True when this start created the default tenant.
    pub first_start: bool,
}

impl Application {
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        crate::bootstrap::private_home(&config.home)?;
        let node_id = match &config.instance_id {
            Some(id) => id.clone(),
            None => crate::bootstrap::node_id(&config.home)?,
        };
        let store = Store::open(&config.database).await?;
        let listener = TcpListener::bind(config.bind)
            .await
            .with_context(|| format!("bind {}", config.bind))?;
        // Before anything of a previous run is failed or reaped: a second
        // live process with this id (or on this SQLite database) stops here.
        let membership = Arc::new(
            crate::instances::Membership::join(
                store.clone(),
                node_id.clone(),
                listener.local_addr()?.to_string(),
                this_process(),
                |h| {
                    i32::try_from(h.pid).is_ok_and(|pid| {
                        crate::exec::kill::start_marker(pid)
                            .is_some_and(|m| i64::try_from(m).is_ok_and(|m| m == h.marker))
                    })
                },
                config.instance_lease,
                config.database.backend,
            )
            .await?,
        );
        let key = load_or_create_signing_key(&config.home)?;
        let tokens = TokenService::new(&key, &config.auth).context("load token keys")?;
        let revocations = Revocations::new(tokens.max_ttl_secs());
        crate::auth::revocation::load(&revocations, &store)
            .await
            .context("load token revocations")?;
        let metrics = Arc::new(Metrics::default());
        let events = EventLog::start(store.clone(), Hub::new(config.stream_buffer));
        if config.database.backend == crate::config::Backend::Postgres {
            events.follow_peers(config.database.url.clone());
        }
        let sealer =
            crate::sealing::Sealer::load_or_create(&config.home).context("load the sealing key")?;
        crate::sealing::reseal_legacy_provider_keys(&config.home, &store, &sealer)
            .await
            .context("re-seal provider keys under keys/sealing.key")?;
        let p = &config.provider;
        let openai: Option<Arc<dyn crate::turn::provider::Provider>> =
            if p.offers(&ProviderKind::OpenAi) {
                Some(Arc::new(OpenAiProvider::new(
                    &p.openai_base_url,
                    p.openai_api_key.clone(),
                    &p.model_for(&ProviderKind::OpenAi),
                )?))
            } else {
                None
            };
        let anthropic: Option<Arc<dyn crate::turn::provider::Provider>> =
            if p.offers(&ProviderKind::Anthropic) {
                Some(Arc::new(AnthropicProvider::new(
                    &p.anthropic_base_url,
                    p.anthropic_api_key.clone(),
                    &p.model_for(&ProviderKind::Anthropic),
                )?))
            } else {
                None
            };
        let providers = Providers {
            default: p.kind.name(),
            fake: Arc::new(FakeProvider),
            openai,
            anthropic,
            context_window: p.context_window,
            config: Some(p.clone()),
            sealer: Some(Arc::new(sealer.clone())),
        };
        let quota = seed_storage_quota(&config, &store).await?;
        let credentials = crate::sealing::Credentials::new(store.clone(), Arc::new(sealer.clone()));
        let walls = Arc::new(build_walls(&config, quota.clone(), credentials.clone())?);
        let mut host_unavailable = std::collections::BTreeMap::new();
        if let Some(reason) = walls.sandbox.unavailable_reason() {
            tracing::error!(
                reason,
                "child processes cannot be confined; the terminal is unavailable"
            );
            // Beside the token a newcomer reads, not only in the log.
            eprintln!(
                "WARNING: child processes are unavailable (terminal, authored tools, \
                 slots, MCP stdio servers, core history): {reason}"
            );
            for tool in crate::catalog::CHILD_PROCESS_TOOLS {
                host_unavailable.insert((*tool).to_owned(), reason.to_owned());
            }
        } else if matches!(
            walls.sandbox.availability(),
            crate::exec::sandbox::Availability::Off
        ) {
            tracing::warn!(
                "--sandbox off: child processes run UNCONFINED with the server's rights; \
                 any tenant that may approve a command can read the server's keys and data"
            );
            eprintln!(
                "WARNING: --sandbox off: child processes run unconfined with the server's rights"
            );
        } else {
            tracing::info!(sandbox = %walls.sandbox.describe(), "child processes are confined");
        }
        let cores = CoreRepository::new(&config.home)
            .with_host_unavailable(host_unavailable)
            .with_walls(walls.clone());
        let approvals = Approvals::new(
            store.clone(),
            events.clone(),
            node_id.clone(),
            config.approval_timeout,
        )
        .with_default_policy(config.default_tenant_policy);
        let clarifications = Clarifications::new(
            store.clone(),
            events.clone(),
            node_id.clone(),
            config.clarify_timeout,
        );
        // Model and tool calls' usage, written off the turn's path.
        let meter = crate::usage::Meter::start(store.clone());
        let tasks = crate::tasks::Tasks::new(
            store.clone(),
            events.clone(),
            node_id.clone(),
            crate::tasks::TaskSettings {
                per_principal: config.protection.max_background_tasks_principal,
                per_tenant: config.protection.max_background_tasks_tenant,
                max_queued_per_tenant: config.protection.max_queued_tasks_tenant,
                workers: config.protection.task_workers,
                lease: config.protection.task_lease,
                schedules: crate::tasks::schedules::ScheduleSettings {
                    min_interval: config.protection.schedule_min_interval,
                    max_per_tenant: config.protection.max_schedules_tenant,
                },
            },
            quota.clone(),
            metrics.clone(),
            meter.clone(),
        );
        if config.database.backend == crate::config::Backend::Postgres {
            tokio::spawn(tasks.signals().clone().listen(config.database.url.clone()));
        }
        let core_changes = crate::core::changes::CoreChanges::new(
            cores.clone(),
            store.clone(),
            Arc::new(tasks.clone()),
        );
        let runners = Arc::new(crate::authored::Runners::new(config.authored_timeout));
        let host = crate::dispatch::HostServices {
            tasks: tasks.clone(),
            events: events.clone(),
            store: store.clone(),
            clarifications: clarifications.clone(),
            core_changes: core_changes.clone(),
            runners: runners.clone(),
        };
        let prices = Arc::new(
            crate::usage::report::Prices::from_flag(config.usage.prices_file.as_deref())
                .map_err(anyhow::Error::msg)?,
        );
        // Budgets are checked before each model step and see what the
        // meter stores at once.
        let tenant_events = crate::events::tenant::TenantFeed::new(store.clone());
        let budgets = crate::usage::guard::BudgetGuard::new(
            store.clone(),
            prices.clone(),
            tenant_events.clone(),
        );
        meter.watch(budgets.clone());
        let dispatcher = Dispatcher::new(
            approvals.clone(),
            events.clone(),
            &config.home,
            walls.clone(),
            Arc::new(host),
            meter.clone(),
        );
        let turns = TurnService::new(
            store.clone(),
            events.clone(),
            metrics.clone(),
            TurnDeps {
                providers,
                dispatcher: dispatcher.clone(),
                tasks: tasks.clone(),
                walls: walls.clone(),
                runners,
                meter: meter.clone(),
                budgets: budgets.clone(),
                cores: cores.clone(),
                home: config.home.clone(),
                max_steps: config.max_model_steps,
                node_id,
            },
        );
        tasks.set_completions(Arc::new(turns.clone()));
        tasks.set_children(Arc::new(turns.clone()));
        let first_start = crate::bootstrap::default_tenant(&store).await?;
        cores
            .ensure_seeded(&crate::ids::TenantId::parse(
                crate::bootstrap::DEFAULT_TENANT,
            )?)
            .context("seed the default tenant's assistant core")?;
        // Nobody can answer approvals a previous run left pending: deny them
        // before their turns are marked lost.
        let expired = approvals
            .expire_after_restart()
            .await
            .context("expire pending approvals")?;
        if expired > 0 {
            tracing::warn!(
                count = expired,
                "denied approvals left pending by a previous run"
            );
        }
        let lost = turns.recover_lost().await.context("recover lost turns")?;
        let lost_tasks = tasks.recover_lost().await.context("recover lost tasks")?;
        if lost_tasks > 0 {
            tracing::warn!(
                count = lost_tasks,
                "marked tasks left running by a previous run as lost"
            );
        }
        // Process groups a crash left running: end them (start markers re-checked).
        let registry = crate::exec::ProcessRegistry::new(&config.home);
        let reaped = tokio::task::spawn_blocking(move || {
            registry.reap_after_restart(Duration::from_secs(2))
        })
        .await
        .unwrap_or(0);
        if reaped > 0 {
            tracing::warn!(
                count = reaped,
                "ended process groups left running by a previous run"
            );
        }
        if lost > 0 {
            tracing::warn!(
                count = lost,
                "marked turns left running by a previous run as failed (lost)"
            );
        }
        let shutdown = CancellationToken::new();
        let stopped = CancellationToken::new();
        // Chat relays and the outbox carry the replies of turns that finish
        // during a drain: they stop when the drain is over.
        let channels = crate::channels::Channels::new(crate::channels::ChannelDeps {
            store: store.clone(),
            events: events.clone(),
            turns: turns.clone(),
            approvals: approvals.clone(),
            clarifications: clarifications.clone(),
            cores: cores.clone(),
            home: config.home.clone(),
            sealer: sealer.clone(),
            outbound: walls.outbound.clone(),
            shutdown: stopped.clone(),
        })
        .context("set up chat channels")?;
        crate::packages::sources::check_prefixes(&config.tenant_package_sources)
            .map_err(|e| anyhow::anyhow!("--tenant-package-source {e}"))?;
        let packages = crate::packages::Packages::new(
            config.home.clone(),
            crate::packages::Trust {
                sources: crate::packages::sources::parse_all(&config.package_repositories)
                    .map_err(|e| anyhow::anyhow!("--package-repository {e}"))?,
                tenant_prefixes: config.tenant_package_sources.clone(),
            },
            store.clone(),
            cores.clone(),
            core_changes.clone(),
            walls.clone(),
        );
        let app = Arc::new(App {
            packages,
            credentials,
            channels,
            limits: RateLimits::new(&config.rate_limit),
            config,
            store,
            tokens,
            revocations,
            events,
            turns,
            metrics,
            dispatcher,
            tasks,
            approvals,
            clarifications,
            core_changes,
            walls,
            meter,
            prices,
            budgets,
            tenant_events,
            cores,
            membership,
            shutdown,
            stopped,
        });
        Ok(Self {
            listener,
            app,
            first_start,
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    pub fn app(&self) -> &SharedApp {
        &self.app
    }

    /// Serve until `shutdown` fires; then drain: `/readyz` unready, no new
    /// connections or work (writes on open connections get 503), streams
    /// closed with a reconnect hint, running turns and tasks given
    /// `--shutdown-grace` to finish before they are cancelled, tasks that
    /// never started handed back; then stop and close the pool.
    pub async fn run(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let app = self.app;
        let token = app.shutdown.clone();
        tokio::spawn(async move {
            shutdown.await;
            tracing::info!("shutting down");
            token.cancel();
        });
        let limits = app.limits.clone();
        let prune_stop = app.shutdown.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(60));
            loop {
                tokio::select! {
                    _ = every.tick() => limits.prune(),
                    _ = prune_stop.cancelled() => return,
                }
            }
        });
        tokio::spawn(crate::auth::revocation::follow(
            app.revocations.clone(),
            app.store.clone(),
            app.stopped.clone(),
        ));
        // Replies a previous run left undelivered, deliveries it left unhandled.
        app.channels
            .start()
            .await
            .context("start chat channel delivery")?;
        app.tasks
            .start_pool(app.shutdown.clone(), app.stopped.clone());
        app.dispatcher.start_mcp_sweeper(app.stopped.clone());
        app.tasks.schedules().set_cores(app.cores.clone());
        app.tasks.schedules().start(app.shutdown.clone());
        app.turns.follow_cancels(app.stopped.clone());
        app.tenant_events.start_upkeep(app.shutdown.clone());
        crate::audit::start_upkeep(
            app.store.clone(),
            app.config.audit_retention,
            app.shutdown.clone(),
        );
        crate::usage::Meter::start_upkeep(
            app.store.clone(),
            crate::usage::Retention {
                raw: app.config.usage.raw_retention,
                hourly: app.config.usage.rollup_retention,
                every: Duration::from_secs(60),
            },
            app.shutdown.clone(),
        );
        // Orphans of tenants' commands are reaped here, not left to init.
        crate::exec::reaper::start(app.stopped.clone());
        // Beat, and fail what a silent instance left running.
        let (turns, approvals) = (app.turns.clone(), app.approvals.clone());
        app.membership.clone().start(
            Arc::new(move |row: crate::store::InstanceRow| {
                let (turns, approvals) = (turns.clone(), approvals.clone());
                Box::pin(async move {
                    let before = crate::time::now_ms();
                    match approvals.expire_of_node(&row.node_id, before).await {
                        Ok(n) if n > 0 => tracing::warn!(count = n, node_id = %row.node_id, "denied approvals a lost instance left pending"),
                        Ok(_) => {}
                        Err(e) => tracing::warn!(error = %e, "could not expire a lost instance's approvals"),
                    }
                    match turns.fail_lost_of(&row.node_id, before).await {
                        Ok(n) if n > 0 => tracing::warn!(count = n, node_id = %row.node_id, "failed turns a lost instance left running"),
                        Ok(_) => {}
                        Err(e) => tracing::warn!(error = %e, "could not fail a lost instance's turns"),
                    }
                })
            }),
            app.stopped.clone(),
        );
        // The drain of running work starts with the shutdown signal, beside
        // the HTTP drain (a request may wait on a turn's approval).
        let work = {
            let app = app.clone();
            tokio::spawn(async move {
                app.shutdown.cancelled().await;
                app.membership.drain().await;
                let grace = app.config.shutdown_grace;
                let (turns, tasks) = tokio::join!(app.turns.drain(grace), app.tasks.drain(grace));
                tracing::info!(
                    turns_finished = turns,
                    tasks_finished = tasks,
                    "running work drained"
                );
            })
        };
        let router = crate::api::router(app.clone());
        http::serve(
            self.listener,
            router,
            http::HttpLimits {
                header_read_timeout: app.config.protection.header_read_timeout,
                max_connections: app.config.protection.max_connections,
            },
            app.metrics.clone(),
            app.shutdown.clone(),
        )
        .await;
        let _ = work.await;
        app.channels.settle(Duration::from_secs(5)).await;
        app.stopped.cancel();
        // The usage of the turns that just ended is written before exit.
        app.meter.flush().await;
        // Whatever escaped its command's group (setsid) ends with the server.
        let ended = tokio::task::spawn_blocking(crate::exec::reaper::end_orphans)
            .await
            .unwrap_or(0);
        if ended > 0 {
            tracing::info!(ended, "ended processes that had left their command's group");
        }
        app.membership.leave().await;
        app.store.close().await;
        tracing::info!("stopped");
        Ok(())
    }
}

/// The storage quota, with each tenant's usage counted once: artifacts on
/// this node's disk plus task logs in the database.
async fn seed_storage_quota(
    config: &Config,
    store: &Store,
) -> anyhow::Result<Arc<crate::exec::StorageQuota>> {
    let quota = crate::exec::StorageQuota::new(
        config.protection.artifact_max_bytes,
        config.protection.tenant_storage_max_bytes,
    );
    let root = crate::home::HomeLayout::new(&config.home).artifacts_root();
    let seeding = quota.clone();
    let on_disk = tokio::task::spawn_blocking(move || seeding.seed_from_artifacts(&root))
        .await
        .context("count stored artifacts")?
        .context("count stored artifacts")?;
    let mut in_logs = 0u64;
    for (tenant, bytes) in store
        .task_log_bytes_by_tenant()
        .await
        .context("count stored task logs")?
    {
        let bytes = u64::try_from(bytes).unwrap_or(0);
        quota.add_existing(&tenant, bytes);
        in_logs += bytes;
    }
    tracing::info!(
        artifact_bytes = on_disk,
        task_log_bytes = in_logs,
        per_command = quota.per_command(),
        per_tenant = quota.per_tenant(),
        "storage quota counted"
    );
    Ok(quota)
}

/// This server process as the instances table records it.
fn this_process() -> crate::store::Holder {
    let (pid, marker) = crate::exec::kill::this_process().unwrap_or((0, 0));
    crate::store::Holder {
        host: crate::exec::kill::host_name().unwrap_or_default(),
        pid: i64::from(pid),
        marker: i64::try_from(marker).unwrap_or(0),
    }
}

/// Resolves on SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let term = signal(SignalKind::terminate());
    let int = signal(SignalKind::interrupt());
    match (term, int) {
        (Ok(mut t), Ok(mut i)) => {
            tokio::select! {
                _ = t.recv() => {},
                _ = i.recv() => {},
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// The walls a command-line change to a tenant's cores runs inside (git in
/// the agents tree runs confined as the server's does): the server's
/// settings from the same flags and `DEMIURGE_*` variables; no credentials.
pub fn command_line_walls(config: &Config) -> anyhow::Result<crate::walls::Walls> {
    let quota = crate::exec::StorageQuota::new(
        config.protection.artifact_max_bytes,
        config.protection.tenant_storage_max_bytes,
    );
    let mut walls = build_walls_with(config, quota)?;
    walls.credentials = None;
    Ok(walls)
}

/// The sandbox and the file tools' walls, from canonical paths.
fn build_walls(
    config: &Config,
    quota: Arc<crate::exec::StorageQuota>,
    credentials: crate::sealing::Credentials,
) -> anyhow::Result<crate::walls::Walls> {
    let mut walls = build_walls_with(config, quota)?;
    walls.credentials = Some(credentials);
    Ok(walls)
}

fn build_walls_with(
    config: &Config,
    quota: Arc<crate::exec::StorageQuota>,
) -> anyhow::Result<crate::walls::Walls> {
    let home = config
        .home
        .canonicalize()
        .with_context(|| format!("resolve the home {}", config.home.display()))?;
    let databases = config.database.sqlite_files();
    let sandbox = crate::exec::sandbox::Sandbox::detect(config.sandbox.clone(), &home, &databases);
    Ok(crate::walls::Walls {
        sandbox,
        files: crate::policy::file_walls::FileWalls::new(
            home,
            config.read_roots.clone(),
            databases,
        ),
        terminal_network: config.terminal_network,
        quota,
        credentials: None,
        mcp_idle_timeout: config.mcp_idle_timeout,
        outbound: crate::net::Outbound::new(crate::net::OutboundSettings {
            allow: config.url_allow.clone(),
            ..Default::default()
        }),
    })
}

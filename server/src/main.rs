//! The `demiurge` binary: parse the command line and hand off to the library.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use demiurge::auth::{load_or_create_signing_key, Role, TokenService};
use demiurge::cli::{
    AuditCommand, BudgetCommand, CheckCommand, Cli, Command, CommonArgs, PrincipalCommand, RoleArg,
    TokenCommand, UsageCommand,
};
use demiurge::config::{AuthConfig, Config, DatabaseConfig};
use demiurge::ids::{PrincipalId, TenantId};
use demiurge::startup::{shutdown_signal, Application};
use demiurge::store::{RevocationChange, Store};

fn main() -> ExitCode {
    let cli = Cli::parse();
    demiurge::telemetry::init(cli.common.log_format);
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => serve(&cli.common, &args).await,
        Command::Token {
            command:
                TokenCommand::Issue {
                    tenant,
                    principal,
                    role,
                    ttl,
                },
        } => issue_token(&cli.common, &tenant, &principal, role, &ttl).await,
        Command::Token {
            command:
                TokenCommand::Revoke {
                    jti,
                    tenant,
                    principal,
                },
        } => revoke(&cli.common, jti, tenant, principal).await,
        Command::Principal { command } => toggle_principal(&cli.common, command).await,
        Command::Check { command } => check(command).await,
        Command::Usage { command } => usage(&cli.common, command).await,
        Command::Budget { command } => budget(&cli.common, command).await,
        Command::Audit { command } => audit(&cli.common, command).await,
        Command::Package { command } => package(&cli.common, command).await,
        Command::Openapi => {
            println!("{}", demiurge::api::openapi_document());
            Ok(())
        }
        Command::Migrate => {
            let db = DatabaseConfig::resolve(&cli.common.home, cli.common.database_url.as_deref())?;
            demiurge::bootstrap::private_home(&cli.common.home)?;
            Store::open(&db).await?.close().await;
            println!("migrations applied");
            Ok(())
        }
    }
}

async fn budget(common: &CommonArgs, command: BudgetCommand) -> anyhow::Result<()> {
    use demiurge::events::tenant::TenantFeed;
    use demiurge::usage::budget::Limits;
    use demiurge::usage::guard::BudgetGuard;
    let db = DatabaseConfig::resolve(&common.home, common.database_url.as_deref())?;
    let load = |p: &Option<std::path::PathBuf>| {
        demiurge::usage::report::Prices::from_flag(p.as_deref()).map_err(anyhow::Error::msg)
    };
    match command {
        BudgetCommand::Ceiling {
            tenant,
            tokens_per_day,
            tokens_per_month,
            cost_per_day,
            cost_per_month,
            cpu_seconds_per_day,
            tool_calls_per_day,
            model_prices,
        } => {
            let tenant = TenantId::parse(&tenant)?;
            let limits = Limits {
                tokens_per_day,
                tokens_per_month,
                cost_per_day,
                cost_per_month,
                cpu_seconds_per_day,
                tool_calls_per_day,
            };
            let store = Store::open(&db).await?;
            let guard = BudgetGuard::new(
                store.clone(),
                std::sync::Arc::new(load(&model_prices)?),
                TenantFeed::new(store.clone()),
            );
            let done = guard.set_ceiling(tenant.as_str(), limits).await;
            store.close().await;
            done.map_err(|e| anyhow::anyhow!(e))?;
            if limits == Limits::default() {
                println!("ceiling of tenant {tenant} removed");
            } else {
                println!(
                    "ceiling of tenant {tenant} set: {}",
                    serde_json::to_string(&limits)?
                );
            }
            Ok(())
        }
        BudgetCommand::Show {
            tenant,
            model_prices,
        } => {
            let tenant = TenantId::parse(&tenant)?;
            let store = Store::open(&db).await?;
            let guard = BudgetGuard::new(
                store.clone(),
                std::sync::Arc::new(load(&model_prices)?),
                TenantFeed::new(store.clone()),
            );
            let status = guard.status(tenant.as_str()).await;
            store.close().await;
            // The same view a tenant admin gets from `GET /v1/budgets`.
            let prices = load(&model_prices)?;
            let out = demiurge::api::budgets::view(tenant.as_str(), &prices.currency, status?);
            println!("{}", serde_json::to_string_pretty(&out)?);
            Ok(())
        }
    }
}

async fn usage(common: &CommonArgs, command: UsageCommand) -> anyhow::Result<()> {
    let db = DatabaseConfig::resolve(&common.home, common.database_url.as_deref())?;
    match command {
        UsageCommand::Report {
            tenant,
            from,
            to,
            bucket,
            group,
            format,
            model_prices,
        } => {
            let csv = match format.as_str() {
                "json" => false,
                "csv" => true,
                other => anyhow::bail!("--format {other:?} is not json or csv"),
            };
            let prices = demiurge::usage::report::Prices::from_flag(model_prices.as_deref())
                .map_err(anyhow::Error::msg)?;
            let tenant = tenant.map(|t| TenantId::parse(&t)).transpose()?;
            let params = demiurge::usage::report::ReportParams {
                from: from.as_deref(),
                to: to.as_deref(),
                bucket: Some(&bucket),
                group: Some(&group),
            };
            let store = Store::open(&db).await?;
            let report = demiurge::usage::report::report(
                &store,
                &prices,
                tenant.as_ref().map(TenantId::as_str),
                &params,
                demiurge::time::now_ms(),
            )
            .await;
            store.close().await;
            let report = report?;
            if csv {
                print!("{}", demiurge::usage::report::to_csv(&report));
            } else {
                println!("{}", serde_json::to_string_pretty(&report)?);
            }
            Ok(())
        }
        UsageCommand::Rollup {
            raw_retention,
            rollup_retention,
        } => {
            let retention = demiurge::usage::Retention {
                raw: demiurge::config::parse_duration("--raw-retention", &raw_retention)?,
                hourly: demiurge::config::parse_duration("--rollup-retention", &rollup_retention)?,
                every: Duration::from_secs(60),
            };
            let store = Store::open(&db).await?;
            let done = demiurge::usage::upkeep(&store, retention).await;
            store.close().await;
            done?;
            println!("usage rolled up");
            Ok(())
        }
    }
}

async fn serve(common: &CommonArgs, args: &demiurge::cli::ServeArgs) -> anyhow::Result<()> {
    let config = Config::from_args(common, args)?;
    let app = Application::build(config).await?;
    let addr = app.local_addr()?;
    if app.first_start {
        let tokens = &app.app().tokens;
        // 30 days, or the configured maximum lifetime if that is shorter.
        let ttl = Duration::from_secs(tokens.max_ttl_secs().min(30 * 24 * 3600));
        let token = tokens.issue(
            &TenantId::parse(demiurge::bootstrap::DEFAULT_TENANT)?,
            &PrincipalId::parse(demiurge::bootstrap::OPERATOR_PRINCIPAL)?,
            Role::Operator,
            ttl,
        )?;
        let valid = match ttl.as_secs() {
            s if s % (24 * 3600) == 0 => format!("{} days", s / (24 * 3600)),
            _ => humantime::format_duration(ttl).to_string(),
        };
        println!(
            "operator token (tenant default, valid {valid}): {}",
            token.token
        );
    }
    println!("console: http://{addr}/console");
    println!("listening on http://{addr}");
    tracing::info!(%addr, "listening");
    app.run(shutdown_signal()).await
}

async fn issue_token(
    common: &CommonArgs,
    tenant: &str,
    principal: &str,
    role: RoleArg,
    ttl: &str,
) -> anyhow::Result<()> {
    let tenant = TenantId::parse(tenant)?;
    let principal = PrincipalId::parse(principal)?;
    let ttl = demiurge::config::parse_duration("--ttl", ttl)?;
    let role = match role {
        RoleArg::Member => Role::Member,
        RoleArg::Operator => Role::Operator,
        RoleArg::Admin => Role::Admin,
    };
    let max_ttl = demiurge::config::token_max_ttl(common)?;
    let audience = std::env::var("DEMIURGE_JWT_AUDIENCE").unwrap_or_else(|_| "demiurge".into());
    demiurge::bootstrap::private_home(&common.home)?;
    let key = load_or_create_signing_key(&common.home)?;
    let tokens = TokenService::new(
        &key,
        &AuthConfig {
            audience,
            external_issuer: None,
            external_key: None,
            max_ttl,
        },
    )?;
    // Refuse a bad lifetime before touching the database.
    tokens
        .check_ttl(ttl)
        .map_err(|e| anyhow::anyhow!("--ttl: {e}"))?;
    let db = DatabaseConfig::resolve(&common.home, common.database_url.as_deref())?;
    let store = Store::open(&db).await?;
    let prepared = async {
        if store.principal_disabled(&tenant, &principal).await? {
            anyhow::bail!(
                "principal {principal} of tenant {tenant} is disabled; \
                 enable it first with `demiurge principal enable`"
            );
        }
        store.ensure_principal(&tenant, &principal, role).await?;
        let cutoff = store.principal_cutoff(&tenant, &principal).await?;
        // A token must outlive a revocation of the same second.
        let iat = demiurge::time::now_secs().max(cutoff.map_or(0, |c| c + 1));
        let issued = tokens.issue_at(&tenant, &principal, role, ttl, iat)?;
        // No token leaves without its audit row.
        store
            .append_audit(&demiurge::store::NewAudit::by_operator(
                tenant.as_str(),
                "token.issued",
                principal.as_str(),
                serde_json::json!({"role": role.as_str(), "jti": issued.jti,
                    "expires_at": demiurge::time::rfc3339(issued.expires_at as i64 * 1000)}),
            ))
            .await?;
        Ok(issued)
    }
    .await;
    store.close().await;
    println!("{}", prepared?.token);
    Ok(())
}

async fn revoke(
    common: &CommonArgs,
    jti: Option<String>,
    tenant: Option<String>,
    principal: Option<String>,
) -> anyhow::Result<()> {
    let tenant = tenant.as_deref().map(TenantId::parse).transpose()?;
    let change = match (jti, principal, tenant) {
        (Some(jti), None, tenant) => {
            let jti = jti.trim().to_owned();
            if jti.is_empty() || jti.len() > demiurge::auth::MAX_JTI_LEN {
                anyhow::bail!(
                    "--jti must be 1 to {} characters",
                    demiurge::auth::MAX_JTI_LEN
                );
            }
            RevocationChange::Jti { tenant, jti }
        }
        (None, Some(principal), Some(tenant)) => RevocationChange::Principal {
            tenant,
            principal: PrincipalId::parse(&principal)?,
        },
        _ => anyhow::bail!("give --jti J, or --tenant T --principal P"),
    };
    let row = record_change(common, &change).await?;
    match change {
        RevocationChange::Jti { tenant: None, jti } => {
            println!("revoked token {jti} in every tenant")
        }
        RevocationChange::Jti {
            tenant: Some(t),
            jti,
        } => println!("revoked token {jti} in tenant {t}"),
        RevocationChange::Principal { tenant, principal } => println!(
            "revoked every token of {principal} (tenant {tenant}) issued until {}",
            humantime::format_rfc3339_seconds(
                std::time::UNIX_EPOCH + Duration::from_secs(u64::try_from(row).unwrap_or(0))
            )
        ),
        _ => {}
    }
    Ok(())
}

async fn toggle_principal(common: &CommonArgs, command: PrincipalCommand) -> anyhow::Result<()> {
    let (change, verb) = match command {
        PrincipalCommand::Disable { tenant, principal } => (
            RevocationChange::Disable {
                tenant: TenantId::parse(&tenant)?,
                principal: PrincipalId::parse(&principal)?,
            },
            "disabled",
        ),
        PrincipalCommand::Enable { tenant, principal } => (
            RevocationChange::Enable {
                tenant: TenantId::parse(&tenant)?,
                principal: PrincipalId::parse(&principal)?,
            },
            "enabled",
        ),
    };
    record_change(common, &change).await?;
    if let RevocationChange::Disable { tenant, principal }
    | RevocationChange::Enable { tenant, principal } = &change
    {
        println!("{verb} principal {principal} of tenant {tenant}");
    }
    Ok(())
}

/// Append a change to the database, with its audit row (in the tenant's
/// chain; a token revoked in every tenant is in none); running servers pick
/// it up by polling. Returns the recorded cutoff (Unix seconds).
async fn record_change(common: &CommonArgs, change: &RevocationChange) -> anyhow::Result<i64> {
    use demiurge::store::NewAudit;
    demiurge::bootstrap::private_home(&common.home)?;
    let db = DatabaseConfig::resolve(&common.home, common.database_url.as_deref())?;
    let store = Store::open(&db).await?;
    let audit = match change {
        RevocationChange::Jti {
            tenant: Some(t),
            jti,
        } => Some(NewAudit::by_operator(
            t.as_str(),
            "token.revoked",
            jti,
            serde_json::json!({"jti": jti}),
        )),
        RevocationChange::Jti { tenant: None, .. } => None,
        RevocationChange::Principal { tenant, principal } => Some(NewAudit::by_operator(
            tenant.as_str(),
            "tokens.revoked",
            principal.as_str(),
            serde_json::json!({"until_now": true}),
        )),
        RevocationChange::Disable { tenant, principal } => Some(NewAudit::by_operator(
            tenant.as_str(),
            "principal.disabled",
            principal.as_str(),
            serde_json::json!({}),
        )),
        RevocationChange::Enable { tenant, principal } => Some(NewAudit::by_operator(
            tenant.as_str(),
            "principal.enabled",
            principal.as_str(),
            serde_json::json!({}),
        )),
    };
    let row = store
        .record_revocation(change, demiurge::time::now_secs(), audit.as_ref())
        .await;
    store.close().await;
    Ok(row?.cutoff)
}

async fn audit(common: &CommonArgs, command: AuditCommand) -> anyhow::Result<()> {
    let db = DatabaseConfig::resolve(&common.home, common.database_url.as_deref())?;
    let store = Store::open(&db).await?;
    let done = match command {
        AuditCommand::Verify { tenant } => audit_verify(&store, tenant).await,
        AuditCommand::Export {
            tenant,
            from,
            to,
            actor,
            action,
        } => audit_export(&store, tenant, from, to, actor, action).await,
    };
    store.close().await;
    done
}

async fn audit_verify(store: &Store, tenant: Option<String>) -> anyhow::Result<()> {
    let tenants = match tenant {
        Some(t) => vec![TenantId::parse(&t)?.to_string()],
        None => store.audit_tenants().await?,
    };
    let mut broken = 0;
    for t in &tenants {
        match demiurge::audit::verify(store, t).await {
            Ok(v) => println!(
                "tenant {}: ok, {} records checked, head at {}",
                v.tenant, v.rows, v.head
            ),
            Err(demiurge::audit::VerifyError::Broken(b)) => {
                broken += 1;
                println!("{b}");
            }
            Err(e) => return Err(e.into()),
        }
    }
    if broken > 0 {
        anyhow::bail!("{broken} of {} audit chains are broken", tenants.len());
    }
    Ok(())
}

async fn audit_export(
    store: &Store,
    tenant: String,
    from: Option<String>,
    to: Option<String>,
    actor: Option<String>,
    action: Option<String>,
) -> anyhow::Result<()> {
    use std::io::Write;
    let tenant = TenantId::parse(&tenant)?;
    let time = |name: &str, v: Option<String>| -> anyhow::Result<Option<i64>> {
        v.map(|s| demiurge::time::parse_rfc3339(name, &s))
            .transpose()
            .map_err(anyhow::Error::msg)
    };
    let mut filter = demiurge::store::AuditFilter {
        from: time("--from", from)?,
        to: time("--to", to)?,
        actor,
        action,
        ..Default::default()
    };
    // Pages come newest first; gather, then print oldest first.
    let mut rows = Vec::new();
    loop {
        let page = store.audit_events(tenant.as_str(), &filter, 1_000).await?;
        let Some(last) = page.last() else { break };
        filter.before_seq = Some(last.seq);
        rows.extend(page);
    }
    let mut out = std::io::stdout().lock();
    for r in rows.into_iter().rev() {
        let record = demiurge::api::audit::AuditRecord::from(r);
        writeln!(out, "{}", serde_json::to_string(&record)?)?;
    }
    Ok(())
}

async fn check(command: CheckCommand) -> anyhow::Result<()> {
    match command {
        CheckCommand::Command { cwd, command } => {
            // One argument is the command line as written; several are joined
            // with spaces, the way a shell would have received them.
            let line = command.join(" ");
            let verdict = demiurge::policy::command_guard::classify_in(&line, cwd.as_deref());
            println!("{}", serde_json::to_string(&verdict)?);
        }
        CheckCommand::Url { url, url_allow } => {
            let allow = demiurge::config::parse_url_allow(&url_allow)?;
            let verdict = demiurge::net::check_url(&url, allow).await;
            println!("{}", serde_json::to_string(&verdict)?);
        }
    }
    Ok(())
}

/// The CLI cannot cancel a background task (no worker runs here).
struct NoTasks;

impl demiurge::core::changes::CancelTask for NoTasks {
    fn cancel_task<'a>(
        &'a self,
        _scope: &'a demiurge::auth::PrincipalScope,
        _task_id: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Result<(), String>> {
        Box::pin(async { Err("tasks are not reachable from the command line".to_owned()) })
    }
}

async fn package(
    common: &CommonArgs,
    command: demiurge::cli::PackageCommand,
) -> anyhow::Result<()> {
    use demiurge::cli::PackageCommand;
    use demiurge::packages::{sources, Packages};
    use std::sync::Arc;
    let repositories = match &command {
        PackageCommand::List { repositories, .. }
        | PackageCommand::Install { repositories, .. }
        | PackageCommand::Sync { repositories, .. } => repositories.package_repositories.clone(),
        PackageCommand::Uninstall { .. } => Vec::new(),
    };
    let sources = sources::parse_all(&repositories)
        .map_err(|e| anyhow::anyhow!("--package-repository {e}"))?;
    let db = DatabaseConfig::resolve(&common.home, common.database_url.as_deref())?;
    let store = Store::open(&db).await?;
    // The server's settings from the same flags and variables: git in the
    // agents tree runs confined as the server runs it.
    let cli = demiurge::cli::Cli::try_parse_from(["demiurge", "serve"])?;
    let serve = match cli.command {
        Command::Serve(serve) => serve,
        _ => anyhow::bail!("internal: `serve` did not parse as serve"),
    };
    let config = Config::from_args(common, &serve).map_err(|e| anyhow::anyhow!("{}", e.0))?;
    let url_allow = match &command {
        PackageCommand::Sync { url_allow, .. } => {
            demiurge::config::parse_url_allow(url_allow).map_err(|e| anyhow::anyhow!("{}", e.0))?
        }
        _ => Vec::new(),
    };
    let mut walls = demiurge::startup::command_line_walls(&config)?;
    walls.outbound = demiurge::net::Outbound::new(demiurge::net::OutboundSettings {
        allow: url_allow,
        ..Default::default()
    });
    let walls = Arc::new(walls);
    let cores =
        demiurge::core::repository::CoreRepository::new(&common.home).with_walls(walls.clone());
    let changes =
        demiurge::core::changes::CoreChanges::new(cores.clone(), store.clone(), Arc::new(NoTasks));
    // The tenants' own repositories are theirs to add over the API; the
    // command line sees them when the operator's flags allow them.
    let trust = demiurge::packages::Trust {
        sources,
        tenant_prefixes: config.tenant_package_sources.clone(),
    };
    let packages = Packages::new(
        common.home.clone(),
        trust,
        store.clone(),
        cores,
        changes,
        walls,
    );
    let operator = PrincipalId::parse("operator")?;
    let via = demiurge::store::Surface::Cli;
    let scope = |tenant: &str| -> anyhow::Result<demiurge::auth::PrincipalScope> {
        Ok(demiurge::auth::PrincipalScope::operator_cli(
            TenantId::parse(tenant)?,
            operator.clone(),
        ))
    };
    let out: anyhow::Result<serde_json::Value> = async {
        Ok(match command {
            PackageCommand::List { tenant, core, .. } => {
                let core = core.map(|c| demiurge::ids::CoreId::parse(&c)).transpose()?;
                serde_json::to_value(packages.list(&scope(&tenant)?, core.as_ref()).await?)?
            }
            PackageCommand::Install {
                package,
                tenant,
                core,
                options,
                upgrade,
                ..
            } => {
                let (repo, id) = package
                    .split_once('/')
                    .ok_or_else(|| anyhow::anyhow!("name the package as <repository>/<package>"))?;
                let mut answers = serde_json::Map::new();
                for o in options {
                    let (k, v) = o
                        .split_once('=')
                        .ok_or_else(|| anyhow::anyhow!("--option {o:?}: expected <id>=<value>"))?;
                    answers.insert(k.to_owned(), serde_json::Value::String(v.to_owned()));
                }
                let core = demiurge::ids::CoreId::parse(&core)?;
                serde_json::to_value(
                    packages
                        .install(&scope(&tenant)?, &via, &core, repo, id, answers, upgrade)
                        .await?,
                )?
            }
            PackageCommand::Uninstall {
                package,
                tenant,
                core,
                force,
            } => {
                let core = demiurge::ids::CoreId::parse(&core)?;
                serde_json::to_value(
                    packages
                        .uninstall(&scope(&tenant)?, &via, &core, &package, force)
                        .await?,
                )?
            }
            PackageCommand::Sync { alias, .. } => {
                serde_json::to_value(packages.sync(&scope("default")?, &alias).await?)?
            }
        })
    }
    .await;
    store.close().await;
    println!("{}", serde_json::to_string_pretty(&out?)?);
    Ok(())
}

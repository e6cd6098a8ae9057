//! The `demiurge` binary: parse the command line and hand off to the library.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use demiurge::auth::{load_or_create_signing_key, Role, TokenService};
use demiurge::cli::{CheckCommand, Cli, Command, CommonArgs, RoleArg, TokenCommand};
use demiurge::config::{AuthConfig, Config, DatabaseConfig};
use demiurge::ids::{PrincipalId, TenantId};
use demiurge::startup::{shutdown_signal, Application};
use demiurge::store::Store;

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
        Command::Check { command } => check(command).await,
        Command::Openapi => {
            println!("{}", demiurge::api::openapi_document());
            Ok(())
        }
        Command::Migrate => {
            let db = DatabaseConfig::resolve(&cli.common.home, cli.common.database_url.as_deref())?;
            demiurge::bootstrap::private_dir(&cli.common.home)?;
            Store::open(&db).await?.close().await;
            println!("migrations applied");
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
        let token = tokens.issue(
            &TenantId::parse(demiurge::bootstrap::DEFAULT_TENANT)?,
            &PrincipalId::parse(demiurge::bootstrap::OPERATOR_PRINCIPAL)?,
            Role::Operator,
            Duration::from_secs(30 * 24 * 3600),
        )?;
        println!("operator token (tenant default, valid 30 days): {token}");
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
    if ttl.is_zero() {
        anyhow::bail!("--ttl must be longer than zero");
    }
    let role = match role {
        RoleArg::Member => Role::Member,
        RoleArg::Operator => Role::Operator,
        RoleArg::Admin => Role::Admin,
    };
    demiurge::bootstrap::private_dir(&common.home)?;
    let db = DatabaseConfig::resolve(&common.home, common.database_url.as_deref())?;
    let store = Store::open(&db).await?;
    store.ensure_principal(&tenant, &principal, role).await?;
    store.close().await;
    let key = load_or_create_signing_key(&common.home)?;
    let audience = std::env::var("DEMIURGE_JWT_AUDIENCE").unwrap_or_else(|_| "demiurge".into());
    let tokens = TokenService::new(
        &key,
        &AuthConfig {
            audience,
            external_issuer: None,
            external_key: None,
        },
    )?;
    println!("{}", tokens.issue(&tenant, &principal, role, ttl)?);
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
        CheckCommand::Url { url } => {
            let verdict = demiurge::policy::check_url(&url).await;
            println!("{}", serde_json::to_string(&verdict)?);
        }
    }
    Ok(())
}

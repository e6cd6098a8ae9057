//! The command line: `serve`, `token issue|revoke`, `principal
//! disable|enable`, `check`, `openapi`, `migrate`.
//! Every flag has a `DEMIURGE_*` environment equivalent.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "demiurge",
    version,
    about = "A multi-tenant host for Demiurge-style Agent Cores"
)]
pub struct Cli {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Where state lives; shared by every command that touches it.
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// Home folder for keys, the SQLite database, cores, workspaces and
    /// artifacts; a relative path is taken from the current folder.
    #[arg(
        long,
        global = true,
        env = "DEMIURGE_HOME",
        default_value = ".demiurge",
        value_parser = parse_home
    )]
    pub home: PathBuf,
    /// Database URL (`sqlite://…` or `postgres://…`); default: SQLite at `<home>/demiurge.db`.
    #[arg(long, global = true, env = "DATABASE_URL")]
    pub database_url: Option<String>,
    /// Log format: `text` (coloured only when stderr is a terminal and
    /// `NO_COLOR` is unset) or `json` (one object a line).
    #[arg(
        long,
        global = true,
        env = "DEMIURGE_LOG_FORMAT",
        value_enum,
        default_value = "text"
    )]
    pub log_format: LogFormat,
    /// Longest token lifetime (`exp - iat`) the server accepts and `token issue` signs.
    #[arg(
        long,
        global = true,
        env = "DEMIURGE_TOKEN_MAX_TTL",
        default_value = "30d"
    )]
    pub token_max_ttl: String,
}

/// `--home` as an absolute path, fixed once at parse time (default and
/// environment included): every path derived from the home reaches confined
/// children whose working folder is a workspace, the database and clients,
/// so none may be relative to the server's own current folder.
fn parse_home(s: &str) -> Result<PathBuf, String> {
    crate::home::absolute_home(std::path::Path::new(s)).map_err(|e| format!("{s:?}: {e}"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server.
    Serve(Box<ServeArgs>),
    /// Issue and revoke tokens.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Disable or enable a principal: while disabled, all its tokens are refused.
    Principal {
        #[command(subcommand)]
        command: PrincipalCommand,
    },
    /// Print a policy verdict as JSON.
    Check {
        #[command(subcommand)]
        command: CheckCommand,
    },
    /// Usage reports across tenants, and the roll-up (the server operator).
    Usage {
        #[command(subcommand)]
        command: UsageCommand,
    },
    /// A tenant's budget ceiling, and its budgets and spend (the server operator).
    Budget {
        #[command(subcommand)]
        command: BudgetCommand,
    },
    /// Verify tenants' audit chains, or export one tenant's audit log (the server operator).
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Package repositories and the packages installed in a tenant's cores
    /// (the server operator, acting as the tenant's admin).
    Package {
        #[command(subcommand)]
        command: PackageCommand,
    },
    /// Print the OpenAPI document.
    Openapi,
    /// Apply database migrations and exit.
    Migrate,
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Print a signed JWT for a principal (creating the tenant and principal if missing).
    Issue {
        /// The tenant (created if missing).
        #[arg(long)]
        tenant: String,
        /// The principal the token speaks for (created if missing).
        #[arg(long)]
        principal: String,
        /// The role the token carries (a new principal is recorded with it).
        #[arg(long, value_enum, default_value = "member")]
        role: RoleArg,
        /// Lifetime, e.g. `1h`, `30m`, `7d` (at most `--token-max-ttl`).
        #[arg(long, default_value = "1h")]
        ttl: String,
    },
    /// Revoke one token by its `jti`, or every token of a principal issued until now.
    /// Running servers refuse them within a second.
    #[command(group(clap::ArgGroup::new("what").required(true).args(["jti", "principal"])))]
    Revoke {
        /// The token's `jti` claim.
        #[arg(long, conflicts_with = "principal")]
        jti: Option<String>,
        /// Tenant: required with `--principal`; with `--jti`, limits the revocation to it.
        #[arg(long)]
        tenant: Option<String>,
        /// Revoke every token of this principal issued until now.
        #[arg(long, requires = "tenant")]
        principal: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum BudgetCommand {
    /// Set the most a tenant's admins may budget (and what is enforced when
    /// they set less or nothing); without a limit, the ceiling is removed.
    Ceiling {
        /// The tenant.
        #[arg(long)]
        tenant: String,
        /// Model tokens (input and output) per UTC day.
        #[arg(long)]
        tokens_per_day: Option<u64>,
        /// Model tokens per UTC month.
        #[arg(long)]
        tokens_per_month: Option<u64>,
        /// Cost per UTC day, in the price list's currency.
        #[arg(long)]
        cost_per_day: Option<f64>,
        /// Cost per UTC month.
        #[arg(long)]
        cost_per_month: Option<f64>,
        /// CPU seconds of commands per UTC day.
        #[arg(long)]
        cpu_seconds_per_day: Option<u64>,
        /// Tool calls per UTC day.
        #[arg(long)]
        tool_calls_per_day: Option<u64>,
        /// A price list in the format of `serve`'s, for the cost limits.
        #[arg(long, env = "DEMIURGE_MODEL_PRICES")]
        model_prices: Option<PathBuf>,
    },
    /// Print a tenant's ceiling, budgets and spend as JSON.
    Show {
        /// The tenant.
        #[arg(long)]
        tenant: String,
        /// A price list in the format of `serve`'s, for the spend's cost.
        #[arg(long, env = "DEMIURGE_MODEL_PRICES")]
        model_prices: Option<PathBuf>,
    },
}

/// The trusted package repositories, as `serve` takes them.
#[derive(Debug, Clone, Args)]
pub struct RepositoryArgs {
    /// The trusted repositories (the same list `serve` takes).
    #[arg(
        long = "package-repository",
        env = "DEMIURGE_PACKAGE_REPOSITORIES",
        value_delimiter = ','
    )]
    pub package_repositories: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum PackageCommand {
    /// The repositories and their packages (with `--core`, what is installed there) as JSON.
    List {
        /// The tenant whose core is looked at.
        #[arg(long, default_value = "default")]
        tenant: String,
        /// A core of the tenant: its installed packages are listed too.
        #[arg(long)]
        core: Option<String>,
        #[command(flatten)]
        repositories: RepositoryArgs,
    },
    /// Install `<repository>/<package>` into a core as one revision.
    Install {
        /// `<repository alias>/<package id>`.
        package: String,
        /// The tenant whose core changes.
        #[arg(long, default_value = "default")]
        tenant: String,
        /// The core to install into.
        #[arg(long, default_value = "assistant")]
        core: String,
        /// An option answer, `<id>=<value>` (repeatable; never a secret).
        #[arg(long = "option")]
        options: Vec<String>,
        /// Replace the installed version.
        #[arg(long)]
        upgrade: bool,
        #[command(flatten)]
        repositories: RepositoryArgs,
    },
    /// Uninstall a package from a core as one revision.
    Uninstall {
        /// The package id.
        package: String,
        /// The tenant whose core changes.
        #[arg(long, default_value = "default")]
        tenant: String,
        /// The core to uninstall from.
        #[arg(long, default_value = "assistant")]
        core: String,
        /// Remove files changed since the install too.
        #[arg(long)]
        force: bool,
    },
    /// Fetch a git repository at its pinned commit (a folder one is checked).
    Sync {
        /// The repository's alias.
        alias: String,
        /// URL policy allowances for the fetch (as `serve` takes them).
        #[arg(long, env = "DEMIURGE_URL_ALLOW", value_delimiter = ',')]
        url_allow: Vec<String>,
        #[command(flatten)]
        repositories: RepositoryArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Walk each tenant's audit chain (or one tenant's) from its start or
    /// latest checkpoint to its recorded head; exits non-zero naming the
    /// first broken row.
    Verify {
        /// Only this tenant (default: every tenant with an audit log).
        #[arg(long)]
        tenant: Option<String>,
    },
    /// Print a tenant's audit records as JSON lines, oldest first.
    Export {
        /// The tenant.
        #[arg(long)]
        tenant: String,
        /// Records at or after this instant (RFC 3339).
        #[arg(long)]
        from: Option<String>,
        /// Records before this instant (RFC 3339).
        #[arg(long)]
        to: Option<String>,
        /// Only this actor's records.
        #[arg(long)]
        actor: Option<String>,
        /// Only this action, or a family ending in a dot (`approval.`).
        #[arg(long)]
        action: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum UsageCommand {
    /// Print a usage report: one tenant's, or every tenant's without `--tenant`.
    Report {
        /// Only this tenant (default: every tenant).
        #[arg(long)]
        tenant: Option<String>,
        /// The first instant, RFC 3339 (default: a day or 30 days before `--to`).
        #[arg(long)]
        from: Option<String>,
        /// The end, RFC 3339, exclusive (default: now).
        #[arg(long)]
        to: Option<String>,
        /// `hour` or `day`.
        #[arg(long, default_value = "day")]
        bucket: String,
        /// Comma-separated: principal, core, channel, provider, model, tool, status.
        #[arg(long, default_value = "")]
        group: String,
        /// `json` or `csv`.
        #[arg(long, default_value = "json")]
        format: String,
        /// A price list in the format of `serve`'s price list, for the cost column.
        #[arg(long, env = "DEMIURGE_MODEL_PRICES")]
        model_prices: Option<PathBuf>,
    },
    /// Roll raw usage up into hourly sums now and prune by retention (the
    /// server does this every minute).
    Rollup {
        /// Keep rolled-up raw rows this long.
        #[arg(long, env = "DEMIURGE_USAGE_RAW_RETENTION", default_value = "7d")]
        raw_retention: String,
        /// Keep hourly sums this long.
        #[arg(long, env = "DEMIURGE_USAGE_ROLLUP_RETENTION", default_value = "400d")]
        rollup_retention: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum PrincipalCommand {
    /// Refuse every token of the principal until it is enabled again.
    Disable {
        /// The principal's tenant.
        #[arg(long)]
        tenant: String,
        /// The principal to disable.
        #[arg(long)]
        principal: String,
    },
    /// Accept the principal's tokens again (revoked ones stay revoked).
    Enable {
        /// The principal's tenant.
        #[arg(long)]
        tenant: String,
        /// The principal to enable.
        #[arg(long)]
        principal: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RoleArg {
    Member,
    Operator,
    Admin,
}

#[derive(Debug, Subcommand)]
pub enum CheckCommand {
    /// Classify a shell command with the terminal guard.
    Command {
        /// Working directory the command would run in (only raises risk; never read).
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// The command, after `--`.
        #[arg(last = true, required = true, num_args = 1..)]
        command: Vec<String>,
    },
    /// Check a URL against the host URL policy (resolves DNS like a real fetch).
    Url {
        /// The URL, e.g. `https://example.com/page`.
        url: String,
        /// Networks the policy would block that the operator allows (as `serve`).
        #[arg(long, env = "DEMIURGE_URL_ALLOW", value_delimiter = ',')]
        url_allow: Vec<String>,
    },
}

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "DEMIURGE_BIND", default_value = "127.0.0.1:8080")]
    pub bind: String,
    /// Default model provider: `fake` (offline, deterministic), `openai` (any
    /// compatible endpoint) or `anthropic` (the Messages API). A core's
    /// `model.provider` may choose another configured one.
    #[arg(long, env = "DEMIURGE_PROVIDER")]
    pub provider: Option<String>,
    /// Base URL of the OpenAI-compatible endpoint.
    #[arg(
        long,
        env = "DEMIURGE_OPENAI_BASE_URL",
        default_value = "https://api.openai.com/v1"
    )]
    pub openai_base_url: String,
    /// Base URL of the Anthropic Messages API.
    #[arg(
        long,
        env = "DEMIURGE_ANTHROPIC_BASE_URL",
        default_value = "https://api.anthropic.com"
    )]
    pub anthropic_base_url: String,
    /// Model name sent to the provider when a core names none (default
    /// `gpt-4o-mini` for openai, `claude-sonnet-4-5` for anthropic).
    #[arg(long, env = "DEMIURGE_MODEL")]
    pub model: Option<String>,
    /// Server maximum of model calls in one turn; a core's
    /// `runtime.max_model_steps` (default 90) applies below it.
    #[arg(long, env = "DEMIURGE_MAX_MODEL_STEPS", default_value_t = 90)]
    pub max_model_steps: u32,
    /// The model's context window in tokens, when a core's
    /// `model_options.context_window` does not say: history sent to the
    /// model is kept within it, older turns compacted into a summary.
    #[arg(long, env = "DEMIURGE_CONTEXT_WINDOW", default_value_t = 128_000)]
    pub context_window: u64,
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "DEMIURGE_BODY_LIMIT", default_value_t = 1024 * 1024)]
    pub body_limit: usize,
    /// Timeout for ordinary (non-streaming) requests, e.g. `30s`.
    #[arg(long, env = "DEMIURGE_REQUEST_TIMEOUT", default_value = "30s")]
    pub request_timeout: String,
    /// Requests per second allowed per principal (0 disables the limit).
    #[arg(long, env = "DEMIURGE_RATE_LIMIT_PRINCIPAL", default_value_t = 50)]
    pub rate_limit_principal: u32,
    /// Requests per second allowed per client IP (0 disables the limit).
    #[arg(long, env = "DEMIURGE_RATE_LIMIT_IP", default_value_t = 200)]
    pub rate_limit_ip: u32,
    /// Burst size for both rate limits.
    #[arg(long, env = "DEMIURGE_RATE_LIMIT_BURST", default_value_t = 400)]
    pub rate_limit_burst: u32,
    /// Events a slow WebSocket subscriber may fall behind before it is closed.
    #[arg(long, env = "DEMIURGE_STREAM_BUFFER", default_value_t = 1024)]
    pub stream_buffer: usize,
    /// How long a tool call waits for a human approval before it is denied.
    #[arg(long, env = "DEMIURGE_APPROVAL_TIMEOUT", default_value = "5m")]
    pub approval_timeout: String,
    /// How long `clarify` waits for the user's answer.
    #[arg(long, env = "DEMIURGE_CLARIFY_TIMEOUT", default_value = "10m")]
    pub clarify_timeout: String,
    /// PEM file with a public key for tokens of an external identity provider.
    #[arg(long, env = "DEMIURGE_JWT_PUBLIC_KEY_FILE")]
    pub jwt_public_key_file: Option<PathBuf>,
    /// Algorithm of that key: `RS256` or `EdDSA`.
    #[arg(long, env = "DEMIURGE_JWT_PUBLIC_KEY_ALG", default_value = "RS256")]
    pub jwt_public_key_alg: String,
    /// Expected `iss` of external tokens (local tokens use `demiurge`).
    #[arg(long, env = "DEMIURGE_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    /// Expected `aud` of every token.
    #[arg(long, env = "DEMIURGE_JWT_AUDIENCE", default_value = "demiurge")]
    pub jwt_audience: String,
    /// Confine every child process (`on`), or run children with the server's
    /// rights (`off`, announced at start).
    #[arg(long, env = "DEMIURGE_SANDBOX", default_value = "on")]
    pub sandbox: String,
    /// Extra folders confined children may read (comma-separated), beside the system folders.
    #[arg(long, env = "DEMIURGE_SANDBOX_READ_ROOTS", value_delimiter = ',')]
    pub sandbox_read_root: Vec<PathBuf>,
    /// Folders outside workspaces that file tools may read after approval (comma-separated).
    #[arg(long, env = "DEMIURGE_READ_ROOTS", value_delimiter = ',')]
    pub read_root: Vec<PathBuf>,
    /// Destinations the URL policy would block that every outbound request
    /// may reach anyway (comma-separated CIDRs or addresses), e.g. a
    /// self-hosted service on a private network.
    #[arg(long, env = "DEMIURGE_URL_ALLOW", value_delimiter = ',')]
    pub url_allow: Vec<String>,
    /// Package repositories tenants may install from (comma-separated
    /// `<alias>=<folder>[#sha256:<hex>]` or `<alias>=<git-url>@<commit>`);
    /// see docs/packages.md.
    #[arg(
        long = "package-repository",
        env = "DEMIURGE_PACKAGE_REPOSITORIES",
        value_delimiter = ','
    )]
    pub package_repositories: Vec<String>,
    /// Where tenant admins may add package repositories of their own
    /// (comma-separated prefixes: https://host/path or an absolute folder of
    /// git repositories); none: they may not.
    #[arg(
        long = "tenant-package-source",
        env = "DEMIURGE_TENANT_PACKAGE_SOURCES",
        value_delimiter = ','
    )]
    pub tenant_package_sources: Vec<String>,
    /// This instance's id among the instances serving one database (letters,
    /// digits, `.`, `_`, `-`; e.g. the pod's name). Instances that share a
    /// home each need their own; a lone instance keeps the id its home holds.
    #[arg(long, env = "DEMIURGE_INSTANCE_ID")]
    pub instance_id: Option<String>,
    /// How long an instance may go without a heartbeat (renewed every third
    /// of it) before a survivor declares it lost and fails its running turns.
    #[arg(long, env = "DEMIURGE_INSTANCE_LEASE", default_value = "15s")]
    pub instance_lease: String,
    /// On SIGTERM, how long running turns and tasks may go on to finish
    /// before they are cancelled (the instance takes no new work meanwhile).
    #[arg(long, env = "DEMIURGE_SHUTDOWN_GRACE", default_value = "30s")]
    pub shutdown_grace: String,
    /// Network of terminal commands: `on`, or `none` (no TCP; on a root server no network at all).
    #[arg(long, env = "DEMIURGE_TERMINAL_NETWORK", default_value = "on")]
    pub terminal_network: String,
    /// Longest an authored tool call may run before its runner is killed (`timed_out`).
    #[arg(long, env = "DEMIURGE_AUTHORED_TIMEOUT", default_value = "60s")]
    pub authored_timeout: String,
    /// Close an MCP server connection that no turn or call used this long
    /// (the next turn reconnects it).
    #[arg(long, env = "DEMIURGE_MCP_IDLE_TIMEOUT", default_value = "15m")]
    pub mcp_idle_timeout: String,
    /// CPU seconds per child process (`RLIMIT_CPU`).
    #[arg(long, env = "DEMIURGE_SANDBOX_CPU_SECONDS", default_value_t = 3600)]
    pub sandbox_cpu_seconds: u64,
    /// Processes per tenant uid (root server) or per command tree (`RLIMIT_NPROC`).
    #[arg(long, env = "DEMIURGE_SANDBOX_MAX_PROCESSES", default_value_t = 512)]
    pub sandbox_max_processes: u64,
    /// Largest file a child may write, in bytes (`RLIMIT_FSIZE`).
    #[arg(long, env = "DEMIURGE_SANDBOX_MAX_FILE_SIZE", default_value_t = 1024 * 1024 * 1024)]
    pub sandbox_max_file_size: u64,
    /// Open files per child process (`RLIMIT_NOFILE`).
    #[arg(long, env = "DEMIURGE_SANDBOX_MAX_OPEN_FILES", default_value_t = 1024)]
    pub sandbox_max_open_files: u64,
    /// Highest risk a member may approve for itself in tenants whose admins
    /// set no policy: `none`, `low`, `medium`, `high` or `critical`.
    #[arg(long, env = "DEMIURGE_MEMBER_MAX_RISK", default_value = "high")]
    pub member_max_risk: String,
    /// Private writable memory per child process, in bytes (`RLIMIT_DATA`).
    #[arg(long, env = "DEMIURGE_SANDBOX_MAX_MEMORY", default_value_t = 4 * 1024 * 1024 * 1024)]
    pub sandbox_max_memory: u64,
    /// First uid of the per-tenant range children switch to on a root server.
    #[arg(long, env = "DEMIURGE_SANDBOX_UID_BASE", default_value_t = 200_000)]
    pub sandbox_uid_base: u32,
    /// Most output one command may store (artifacts and task log), e.g.
    /// `256MiB`; past it the command is ended and fails.
    #[arg(long, env = "DEMIURGE_ARTIFACT_MAX_BYTES", default_value = "256MiB")]
    pub artifact_max_bytes: String,
    /// Most command output one tenant may store in all, e.g. `4GiB`.
    #[arg(
        long,
        env = "DEMIURGE_TENANT_STORAGE_MAX_BYTES",
        default_value = "4GiB"
    )]
    pub tenant_storage_max_bytes: String,
    /// Background tasks one principal may have running at once.
    #[arg(
        long,
        env = "DEMIURGE_MAX_BACKGROUND_TASKS_PRINCIPAL",
        default_value_t = 8
    )]
    pub max_background_tasks_principal: usize,
    /// Background tasks one tenant may have running at once.
    #[arg(
        long,
        env = "DEMIURGE_MAX_BACKGROUND_TASKS_TENANT",
        default_value_t = 32
    )]
    pub max_background_tasks_tenant: usize,
    /// Background tasks one tenant may have queued (waiting for a worker or
    /// for its running caps) on one instance; more are refused.
    #[arg(long, env = "DEMIURGE_MAX_QUEUED_TASKS_TENANT", default_value_t = 1000)]
    pub max_queued_tasks_tenant: usize,
    /// Background tasks one instance runs at once (its worker pool).
    #[arg(long, env = "DEMIURGE_TASK_WORKERS", default_value_t = 64)]
    pub task_workers: usize,
    /// How long a task's lease lasts without renewal (renewed every third
    /// of it); a task whose instance stops renewing is taken over as `lost`.
    #[arg(long, env = "DEMIURGE_TASK_LEASE", default_value = "15s")]
    pub task_lease: String,
    /// The shortest time between two runs of one schedule (`schedule_manage`),
    /// at least 1s.
    #[arg(long, env = "DEMIURGE_SCHEDULE_MIN_INTERVAL", default_value = "60s")]
    pub schedule_min_interval: String,
    /// Schedules one tenant may have.
    #[arg(long, env = "DEMIURGE_MAX_SCHEDULES_TENANT", default_value_t = 100)]
    pub max_schedules_tenant: usize,
    /// How long a client may take to send a request's headers (also an idle
    /// keep-alive connection's next request), e.g. `10s`.
    #[arg(long, env = "DEMIURGE_HEADER_READ_TIMEOUT", default_value = "10s")]
    pub header_read_timeout: String,
    /// Open HTTP connections served at once; more are closed at accept.
    #[arg(long, env = "DEMIURGE_MAX_CONNECTIONS", default_value_t = 4096)]
    pub max_connections: usize,
    /// How long each metered call is kept once rolled up into hourly sums,
    /// e.g. `7d`.
    #[arg(long, env = "DEMIURGE_USAGE_RAW_RETENTION", default_value = "7d")]
    pub usage_raw_retention: String,
    /// How long hourly usage sums are kept, e.g. `400d`.
    #[arg(long, env = "DEMIURGE_USAGE_ROLLUP_RETENTION", default_value = "400d")]
    pub usage_rollup_retention: String,
    /// How long audit records are kept, e.g. `730d` (at least `1d`); older
    /// ones are pruned behind a checkpoint, so each chain still verifies.
    #[arg(long, env = "DEMIURGE_AUDIT_RETENTION", default_value = "730d")]
    pub audit_retention: String,
    /// A TOML price list per model (input, output and cached price per
    /// million tokens), so usage reports carry cost (docs/usage.md).
    #[arg(long, env = "DEMIURGE_MODEL_PRICES")]
    pub model_prices: Option<std::path::PathBuf>,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::Cli;

    fn home_of(args: &[&str]) -> std::path::PathBuf {
        Cli::try_parse_from(args).unwrap().common.home
    }

    #[test]
    fn a_relative_home_on_the_command_line_becomes_absolute() {
        let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
        let home = home_of(&["demiurge", "--home", "state/home", "migrate"]);
        assert_eq!(home, cwd.join("state/home"));
        let home = home_of(&["demiurge", "migrate", "--home", "./x/../y"]);
        assert_eq!(home, cwd.join("y"));
        let home = home_of(&["demiurge", "serve", "--home", "/srv/demiurge"]);
        assert_eq!(home, std::path::PathBuf::from("/srv/demiurge"));
    }

    #[test]
    fn the_default_home_is_absolute_too() {
        // DEMIURGE_HOME may be set around the test run; parse as clap would either way.
        let home = home_of(&["demiurge", "migrate"]);
        assert!(home.is_absolute(), "{}", home.display());
        if std::env::var_os("DEMIURGE_HOME").is_none() {
            let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
            assert_eq!(home, cwd.join(".demiurge"));
        }
    }

    #[test]
    fn an_empty_home_is_refused_with_a_message() {
        let err = Cli::try_parse_from(["demiurge", "--home", "", "migrate"]).unwrap_err();
        assert!(err.to_string().contains("empty"), "{err}");
    }
}

//! Settings, parsed once from flags and environment into typed values.
//! A bad value fails start-up with one line naming it.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::cli::{CommonArgs, ServeArgs};

/// Default cap on one command's stored output.
pub const DEFAULT_ARTIFACT_MAX_BYTES: u64 = 256 * 1024 * 1024;
/// Default cap on one tenant's stored output.
pub const DEFAULT_TENANT_STORAGE_MAX_BYTES: u64 = 4 * 1024 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// Which backend a database URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

#[derive(Debug, Clone)]
pub struct DatabaseConfig {
    pub url: String,
    pub backend: Backend,
}

impl DatabaseConfig {
    /// The configured URL, or SQLite under the home.
    pub fn resolve(home: &std::path::Path, url: Option<&str>) -> Result<Self, ConfigError> {
        let url = match url {
            Some(u) if !u.trim().is_empty() => u.trim().to_owned(),
            _ => format!(
                "sqlite://{}?mode=rwc",
                crate::home::HomeLayout::new(home).database_file().display()
            ),
        };
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Backend::Postgres
        } else {
            return Err(ConfigError(format!(
                "database URL {:?} must start with sqlite:// or postgres://",
                redact_url(&url)
            )));
        };
        Ok(Self { url, backend })
    }

    /// The file behind a SQLite URL (`sqlite://PATH?…`), canonical when it
    /// exists; `None` on PostgreSQL and for an in-memory database.
    pub fn sqlite_file(&self) -> Option<PathBuf> {
        let (path, _) = sqlite_path(&self.url)?;
        let path = PathBuf::from(path);
        Some(path.canonicalize().unwrap_or(path))
    }

    /// On SQLite, the URL of the usage file beside the database
    /// (`demiurge.db` → `demiurge-usage.db`, same options): usage rows are
    /// written there so their writes never queue behind a turn's on
    /// SQLite's one writer. `None` on PostgreSQL (one database holds all)
    /// and for an in-memory database (which has no beside).
    pub fn usage_url(&self) -> Option<String> {
        let (path, query) = sqlite_path(&self.url)?;
        let usage = match path.strip_suffix(".db") {
            Some(stem) => format!("{stem}-usage.db"),
            None => format!("{path}-usage"),
        };
        Some(match query {
            Some(q) => format!("sqlite://{usage}?{q}"),
            None => format!("sqlite://{usage}"),
        })
    }

    /// Every SQLite file the server writes (the database and its usage
    /// file): what no tool and no child may touch.
    pub fn sqlite_files(&self) -> Vec<PathBuf> {
        let usage = self.usage_url().and_then(|u| {
            DatabaseConfig {
                url: u,
                backend: Backend::Sqlite,
            }
            .sqlite_file()
        });
        self.sqlite_file().into_iter().chain(usage).collect()
    }
}

/// The path and options of a file-backed SQLite URL.
fn sqlite_path(url: &str) -> Option<(&str, Option<&str>)> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let (path, query) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    let memory = path.is_empty()
        || path == ":memory:"
        || query.is_some_and(|q| q.split('&').any(|kv| kv == "mode=memory"));
    (!memory).then_some((path, query))
}

/// A database URL without its password, for messages.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://<redacted>@{}", &url[..s], &url[at + 1..]),
        _ => url.to_owned(),
    }
}

/// An API key: kept out of `Debug`, logs and errors.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: String) -> Self {
        Self(key)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderKind {
    Fake,
    OpenAi,
    Anthropic,
}

impl ProviderKind {
    pub fn name(&self) -> &'static str {
        match self {
            ProviderKind::Fake => "fake",
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
        }
    }
}

#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub openai_base_url: String,
    pub openai_api_key: Option<ApiKey>,
    pub anthropic_base_url: String,
    pub anthropic_api_key: Option<ApiKey>,
    /// `--model`, if given; otherwise each provider's own default.
    pub model: Option<String>,
    /// Tokens of context when a core does not say (`--context-window`).
    pub context_window: u64,
}

impl ProviderConfig {
    /// Whether the server can speak `kind` (the default one, or one with a key).
    pub fn offers(&self, kind: &ProviderKind) -> bool {
        &self.kind == kind
            || match kind {
                ProviderKind::Fake => true,
                ProviderKind::OpenAi => self.openai_api_key.is_some(),
                ProviderKind::Anthropic => self.anthropic_api_key.is_some(),
            }
    }

    /// The model a provider is asked for when the core names none.
    pub fn model_for(&self, kind: &ProviderKind) -> String {
        match (&self.model, kind) {
            (Some(m), k) if k == &self.kind => m.clone(),
            (_, ProviderKind::Anthropic) => "claude-sonnet-4-5".into(),
            (_, _) => "gpt-4o-mini".into(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ExternalJwtKey {
    pub pem: Vec<u8>,
    pub algorithm: jsonwebtoken::Algorithm,
}

#[derive(Debug, Clone)]
pub struct AuthConfig {
    pub audience: String,
    pub external_issuer: Option<String>,
    pub external_key: Option<ExternalJwtKey>,
    /// Longest token lifetime (`exp - iat`) issued or accepted.
    pub max_ttl: Duration,
}

#[derive(Debug, Clone, Copy)]
pub struct RateLimitConfig {
    pub per_principal: u32,
    pub per_ip: u32,
    pub burst: u32,
}

/// Limits that keep one tenant (or one client) from hurting the others.
#[derive(Debug, Clone, Copy)]
pub struct ProtectionConfig {
    /// Output one command may store (artifacts plus task log).
    pub artifact_max_bytes: u64,
    /// Command output one tenant may store in all.
    pub tenant_storage_max_bytes: u64,
    /// Running background tasks per principal.
    pub max_background_tasks_principal: usize,
    /// Running background tasks per tenant.
    pub max_background_tasks_tenant: usize,
    /// Queued background tasks per tenant (per instance).
    pub max_queued_tasks_tenant: usize,
    /// Background tasks one instance runs at once.
    pub task_workers: usize,
    /// A task lease's lifetime without renewal.
    pub task_lease: Duration,
    /// The shortest time between two runs of one schedule.
    pub schedule_min_interval: Duration,
    /// Schedules per tenant.
    pub max_schedules_tenant: usize,
    /// Time allowed for a request's headers (and between keep-alive requests).
    pub header_read_timeout: Duration,
    /// Open HTTP connections served at once.
    pub max_connections: usize,
}

impl Default for ProtectionConfig {
    fn default() -> Self {
        Self {
            artifact_max_bytes: DEFAULT_ARTIFACT_MAX_BYTES,
            tenant_storage_max_bytes: DEFAULT_TENANT_STORAGE_MAX_BYTES,
            max_background_tasks_principal: 8,
            max_background_tasks_tenant: 32,
            max_queued_tasks_tenant: 1000,
            task_workers: 64,
            task_lease: Duration::from_secs(15),
            schedule_min_interval: Duration::from_secs(60),
            max_schedules_tenant: 100,
            header_read_timeout: Duration::from_secs(10),
            max_connections: 4096,
        }
    }
}

/// A byte size: a whole number, optionally with a binary unit
/// (`K`/`KiB`, `M`/`MiB`, `G`/`GiB`, `T`/`TiB`; `B` for bytes).
pub fn parse_bytes(name: &str, s: &str) -> Result<u64, ConfigError> {
    let text = s.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let shift = match unit.trim() {
        "" | "B" => 0,
        "K" | "KiB" | "k" => 10,
        "M" | "MiB" => 20,
        "G" | "GiB" => 30,
        "T" | "TiB" => 40,
        _ => u32::MAX,
    };
    digits
        .parse::<u64>()
        .ok()
        .filter(|_| shift != u32::MAX)
        .and_then(|n| n.checked_mul(1u64.checked_shl(shift)?))
        .ok_or_else(|| {
            ConfigError(format!(
                "{name} {s:?} is not a byte size; use e.g. 1048576, 512KiB, 256MiB, 4GiB"
            ))
        })
}

impl ProtectionConfig {
    pub fn from_args(serve: &ServeArgs) -> Result<Self, ConfigError> {
        let artifact_max_bytes = parse_bytes("--artifact-max-bytes", &serve.artifact_max_bytes)?;
        let tenant_storage_max_bytes = parse_bytes(
            "--tenant-storage-max-bytes",
            &serve.tenant_storage_max_bytes,
        )?;
        if artifact_max_bytes < 1024 {
            return Err(ConfigError(format!(
                "--artifact-max-bytes {artifact_max_bytes} is below 1024 bytes"
            )));
        }
        if tenant_storage_max_bytes < 1024 {
            return Err(ConfigError(format!(
                "--tenant-storage-max-bytes {tenant_storage_max_bytes} is below 1024 bytes"
            )));
        }
        if serve.max_background_tasks_principal == 0 || serve.max_background_tasks_tenant == 0 {
            return Err(ConfigError(
                "--max-background-tasks-principal and --max-background-tasks-tenant must be at least 1"
                    .into(),
            ));
        }
        if serve.max_queued_tasks_tenant == 0 || serve.task_workers == 0 {
            return Err(ConfigError(
                "--max-queued-tasks-tenant and --task-workers must be at least 1".into(),
            ));
        }
        let task_lease = parse_duration("--task-lease", &serve.task_lease)?;
        if task_lease < Duration::from_secs(1) {
            return Err(ConfigError("--task-lease must be at least 1s".into()));
        }
        let schedule_min_interval =
            parse_duration("--schedule-min-interval", &serve.schedule_min_interval)?;
        if schedule_min_interval < Duration::from_secs(1) {
            return Err(ConfigError(
                "--schedule-min-interval must be at least 1s".into(),
            ));
        }
        if serve.max_schedules_tenant == 0 {
            return Err(ConfigError(
                "--max-schedules-tenant must be at least 1".into(),
            ));
        }
        let header_read_timeout =
            parse_duration("--header-read-timeout", &serve.header_read_timeout)?;
        if header_read_timeout.is_zero() {
            return Err(ConfigError("--header-read-timeout must be above 0".into()));
        }
        if serve.max_connections == 0 {
            return Err(ConfigError("--max-connections must be at least 1".into()));
        }
        Ok(Self {
            artifact_max_bytes,
            tenant_storage_max_bytes,
            max_background_tasks_principal: serve.max_background_tasks_principal,
            max_background_tasks_tenant: serve.max_background_tasks_tenant,
            max_queued_tasks_tenant: serve.max_queued_tasks_tenant,
            task_workers: serve.task_workers,
            task_lease,
            schedule_min_interval,
            max_schedules_tenant: serve.max_schedules_tenant,
            header_read_timeout,
            max_connections: serve.max_connections,
        })
    }
}

/// `--mcp-idle-timeout`: at least a second (the sweeper runs a quarter of
/// it apart, at least every 100 ms).
pub fn parse_mcp_idle_timeout(s: &str) -> Result<Duration, ConfigError> {
    let idle = parse_duration("--mcp-idle-timeout", s)?;
    if idle < Duration::from_secs(1) {
        return Err(ConfigError(format!("--mcp-idle-timeout {s:?} is below 1s")));
    }
    Ok(idle)
}

/// Everything `serve` needs.
#[derive(Debug, Clone)]
pub struct Config {
    pub bind: SocketAddr,
    pub home: PathBuf,
    pub database: DatabaseConfig,
    pub provider: ProviderConfig,
    pub max_model_steps: u32,
    pub body_limit: usize,
    pub request_timeout: Duration,
    pub rate_limit: RateLimitConfig,
    pub stream_buffer: usize,
    pub auth: AuthConfig,
    pub approval_timeout: Duration,
    pub clarify_timeout: Duration,
    /// How children are confined (`--sandbox…`).
    pub sandbox: crate::policy::sandbox_plan::Settings,
    /// Canonical folders outside workspaces that file tools may read after approval.
    pub read_roots: Vec<PathBuf>,
    /// `--terminal-network`: `false` cuts the network of terminal commands.
    pub terminal_network: bool,
    /// `--authored-timeout`: one authored tool call, at most.
    pub authored_timeout: Duration,
    /// `--mcp-idle-timeout`: an MCP connection no turn or call used this long is closed.
    pub mcp_idle_timeout: Duration,
    /// `--url-allow`: networks the URL policy would refuse that the operator allows.
    pub url_allow: Vec<ipnet::IpNet>,
    /// `--package-repository`: the package repositories the operator trusts,
    /// as given (`packages::sources::Source::parse` reads them at start).
    pub package_repositories: Vec<String>,
    /// `--tenant-package-source`: the prefixes under which tenants may add
    /// package repositories (checked at start by `packages::sources`).
    pub tenant_package_sources: Vec<String>,
    /// `--instance-id`: this instance's id (`None`: the one its home keeps).
    pub instance_id: Option<String>,
    /// `--instance-lease`: silence after which survivors declare an instance lost.
    pub instance_lease: Duration,
    /// `--shutdown-grace`: how long running work may finish after SIGTERM.
    pub shutdown_grace: Duration,
    /// `--member-max-risk`: the approval policy of tenants that set none.
    pub default_tenant_policy: crate::policy::approval_authority::TenantPolicy,
    pub protection: ProtectionConfig,
    pub usage: UsageConfig,
    /// `--audit-retention`: how long audit records are kept.
    pub audit_retention: Duration,
}

/// Usage metering's retention and price list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageConfig {
    /// Raw rows (each call) once rolled up.
    pub raw_retention: Duration,
    /// Hourly roll-ups.
    pub rollup_retention: Duration,
    /// `--model-prices`: read and checked at start.
    pub prices_file: Option<PathBuf>,
}

impl UsageConfig {
    pub fn from_args(serve: &ServeArgs) -> Result<Self, ConfigError> {
        let raw_retention = parse_duration("--usage-raw-retention", &serve.usage_raw_retention)?;
        let rollup_retention =
            parse_duration("--usage-rollup-retention", &serve.usage_rollup_retention)?;
        if raw_retention < Duration::from_secs(3_600) {
            return Err(ConfigError(
                "--usage-raw-retention must be at least 1h".into(),
            ));
        }
        if rollup_retention < raw_retention {
            return Err(ConfigError(
                "--usage-rollup-retention must be at least --usage-raw-retention".into(),
            ));
        }
        Ok(Self {
            raw_retention,
            rollup_retention,
            prices_file: serve.model_prices.clone(),
        })
    }
}

pub fn parse_duration(name: &str, s: &str) -> Result<Duration, ConfigError> {
    humantime::parse_duration(s.trim()).map_err(|e| {
        ConfigError(format!(
            "{name} {s:?} is not a duration ({e}); use e.g. 30s, 5m, 1h"
        ))
    })
}

/// `--url-allow`: CIDRs (`10.0.0.0/8`, `fd00::/8`) or single addresses;
/// empty items are ignored.
pub fn parse_url_allow(items: &[String]) -> Result<Vec<ipnet::IpNet>, ConfigError> {
    let mut nets = Vec::new();
    for item in items.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        let net = item
            .parse::<ipnet::IpNet>()
            .or_else(|_| item.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
            .map_err(|_| {
                ConfigError(format!(
                    "--url-allow {item:?} is not a network like 10.0.0.0/8 or an address"
                ))
            })?;
        nets.push(net.trunc());
    }
    Ok(nets)
}

/// `--token-max-ttl`, shared by `serve` and the token commands.
pub fn token_max_ttl(common: &CommonArgs) -> Result<Duration, ConfigError> {
    let d = parse_duration("--token-max-ttl", &common.token_max_ttl)?;
    if d.as_secs() == 0 {
        return Err(ConfigError(
            "--token-max-ttl must be at least one second".into(),
        ));
    }
    Ok(d)
}

impl Config {
    pub fn from_args(common: &CommonArgs, serve: &ServeArgs) -> Result<Self, ConfigError> {
        let bind: SocketAddr = serve.bind.parse().map_err(|_| {
            ConfigError(format!(
                "--bind {:?} is not an address like 127.0.0.1:8080",
                serve.bind
            ))
        })?;
        // Absolute already: `cli::parse_home` is its one owner (clap builds
        // every `CommonArgs`).
        let home = common.home.clone();
        let database = DatabaseConfig::resolve(&home, common.database_url.as_deref())?;
        let api_key = std::env::var("DEMIURGE_OPENAI_API_KEY")
            .ok()
            .filter(|k| !k.trim().is_empty())
            .map(ApiKey);
        let anthropic_key = std::env::var("DEMIURGE_ANTHROPIC_API_KEY")
            .ok()
            .filter(|k| !k.trim().is_empty())
            .map(ApiKey);
        let kind = match serve.provider.as_deref().map(str::trim) {
            None | Some("") => {
                if api_key.is_some() {
                    ProviderKind::OpenAi
                } else if anthropic_key.is_some() {
                    ProviderKind::Anthropic
                } else {
                    ProviderKind::Fake
                }
            }
            Some("fake") => ProviderKind::Fake,
            Some("openai") => ProviderKind::OpenAi,
            Some("anthropic") => ProviderKind::Anthropic,
            Some(other) => {
                return Err(ConfigError(format!(
                    "--provider {other:?} is not one of: fake, openai, anthropic"
                )))
            }
        };
        if serve.context_window < 1024 {
            return Err(ConfigError(format!(
                "--context-window {} is below 1024 tokens",
                serve.context_window
            )));
        }
        if serve.max_model_steps == 0 {
            return Err(ConfigError("--max-model-steps must be at least 1".into()));
        }
        if serve.body_limit < 1024 {
            return Err(ConfigError(format!(
                "--body-limit {} is below 1024 bytes",
                serve.body_limit
            )));
        }
        if serve.stream_buffer < 16 {
            return Err(ConfigError(format!(
                "--stream-buffer {} is below 16",
                serve.stream_buffer
            )));
        }
        let external_key = match &serve.jwt_public_key_file {
            None => None,
            Some(path) => {
                let pem = std::fs::read(path).map_err(|e| {
                    ConfigError(format!("--jwt-public-key-file {}: {e}", path.display()))
                })?;
                let algorithm = match serve.jwt_public_key_alg.as_str() {
                    "RS256" => jsonwebtoken::Algorithm::RS256,
                    "EdDSA" => jsonwebtoken::Algorithm::EdDSA,
                    other => {
                        return Err(ConfigError(format!(
                            "--jwt-public-key-alg {other:?} is not one of: RS256, EdDSA"
                        )))
                    }
                };
                Some(ExternalJwtKey { pem, algorithm })
            }
        };
        let enabled = match serve.sandbox.trim() {
            "on" => true,
            "off" => false,
            other => {
                return Err(ConfigError(format!(
                    "--sandbox {other:?} is not one of: on, off"
                )))
            }
        };
        let terminal_network = match serve.terminal_network.trim() {
            "on" => true,
            "none" => false,
            other => {
                return Err(ConfigError(format!(
                    "--terminal-network {other:?} is not one of: on, none"
                )))
            }
        };
        let url_allow = parse_url_allow(&serve.url_allow)?;
        let package_repositories: Vec<String> = serve
            .package_repositories
            .iter()
            .map(|r| r.trim().to_owned())
            .filter(|r| !r.is_empty())
            .collect();
        let tenant_package_sources: Vec<String> = serve
            .tenant_package_sources
            .iter()
            .map(|r| r.trim().to_owned())
            .filter(|r| !r.is_empty())
            .collect();
        let instance_id = match serve.instance_id.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(id) => {
                if id.len() > 64
                    || !id
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
                {
                    return Err(ConfigError(format!(
                        "--instance-id {id:?}: 1 to 64 letters, digits, `.`, `_` or `-`"
                    )));
                }
                Some(id.to_owned())
            }
        };
        let instance_lease = parse_duration("--instance-lease", &serve.instance_lease)?;
        if instance_lease < Duration::from_secs(1) {
            return Err(ConfigError("--instance-lease must be at least 1s".into()));
        }
        let shutdown_grace = parse_duration("--shutdown-grace", &serve.shutdown_grace)?;
        let mut read_roots = Vec::new();
        for root in serve.read_root.iter().filter(|r| !r.as_os_str().is_empty()) {
            let canonical = root
                .canonicalize()
                .map_err(|e| ConfigError(format!("--read-root {}: {e}", root.display())))?;
            read_roots.push(canonical);
        }
        let mut extra_read_roots = Vec::new();
        for root in serve
            .sandbox_read_root
            .iter()
            .filter(|r| !r.as_os_str().is_empty())
        {
            if !root.is_absolute() {
                return Err(ConfigError(format!(
                    "--sandbox-read-root {} must be an absolute path",
                    root.display()
                )));
            }
            extra_read_roots.push(root.clone());
        }
        let limits = crate::policy::sandbox_plan::Limits {
            cpu_seconds: serve.sandbox_cpu_seconds,
            processes: serve.sandbox_max_processes,
            file_size: serve.sandbox_max_file_size,
            open_files: serve.sandbox_max_open_files,
            memory: serve.sandbox_max_memory,
        };
        for (name, value, least) in [
            ("--sandbox-cpu-seconds", limits.cpu_seconds, 1),
            ("--sandbox-max-processes", limits.processes, 8),
            ("--sandbox-max-file-size", limits.file_size, 4096),
            ("--sandbox-max-open-files", limits.open_files, 16),
            ("--sandbox-max-memory", limits.memory, 64 * 1024 * 1024),
        ] {
            if value < least {
                return Err(ConfigError(format!("{name} {value} is below {least}")));
            }
        }
        if serve.sandbox_uid_base < 1000 {
            return Err(ConfigError(format!(
                "--sandbox-uid-base {} is below 1000 (system uids)",
                serve.sandbox_uid_base
            )));
        }
        let sandbox = crate::policy::sandbox_plan::Settings {
            enabled,
            extra_read_roots,
            limits,
            uid_base: serve.sandbox_uid_base,
            uid_span: 100_000u32.min(u32::MAX - serve.sandbox_uid_base),
        };
        let member_max_risk =
            crate::policy::approval_authority::MemberMaxRisk::parse(serve.member_max_risk.trim())
                .ok_or_else(|| {
                ConfigError(format!(
                    "--member-max-risk {:?} is not one of: none, low, medium, high, critical",
                    serve.member_max_risk
                ))
            })?;
        Ok(Self {
            default_tenant_policy: crate::policy::approval_authority::TenantPolicy {
                member_max_risk,
            },
            sandbox,
            read_roots,
            terminal_network,
            url_allow,
            package_repositories,
            tenant_package_sources,
            instance_id,
            instance_lease,
            shutdown_grace,
            bind,
            home,
            database,
            provider: ProviderConfig {
                kind,
                openai_base_url: serve.openai_base_url.trim_end_matches('/').to_owned(),
                openai_api_key: api_key,
                anthropic_base_url: serve.anthropic_base_url.trim_end_matches('/').to_owned(),
                anthropic_api_key: anthropic_key,
                model: serve.model.clone().filter(|m| !m.trim().is_empty()),
                context_window: serve.context_window,
            },
            max_model_steps: serve.max_model_steps,
            body_limit: serve.body_limit,
            request_timeout: parse_duration("--request-timeout", &serve.request_timeout)?,
            rate_limit: RateLimitConfig {
                per_principal: serve.rate_limit_principal,
                per_ip: serve.rate_limit_ip,
                burst: serve.rate_limit_burst.max(1),
            },
            stream_buffer: serve.stream_buffer,
            approval_timeout: parse_duration("--approval-timeout", &serve.approval_timeout)?,
            authored_timeout: parse_duration("--authored-timeout", &serve.authored_timeout)?,
            mcp_idle_timeout: parse_mcp_idle_timeout(&serve.mcp_idle_timeout)?,
            clarify_timeout: parse_duration("--clarify-timeout", &serve.clarify_timeout)?,
            protection: ProtectionConfig::from_args(serve)?,
            usage: UsageConfig::from_args(serve)?,
            audit_retention: {
                let d = parse_duration("--audit-retention", &serve.audit_retention)?;
                if d < Duration::from_secs(86_400) {
                    return Err(ConfigError("--audit-retention must be at least 1d".into()));
                }
                d
            },
            auth: AuthConfig {
                audience: serve.jwt_audience.clone(),
                external_issuer: serve.jwt_issuer.clone(),
                external_key,
                max_ttl: token_max_ttl(common)?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_urls() {
        let home = std::path::Path::new("/h");
        let d = DatabaseConfig::resolve(home, None).unwrap();
        assert_eq!(d.backend, Backend::Sqlite);
        assert_eq!(d.url, "sqlite:///h/demiurge.db?mode=rwc");
        let d = DatabaseConfig::resolve(home, Some("postgres://u:p@localhost/test")).unwrap();
        assert_eq!(d.backend, Backend::Postgres);
        let e = DatabaseConfig::resolve(home, Some("mysql://u:secret@h/db")).unwrap_err();
        assert!(e.0.contains("mysql://<redacted>@h/db"), "{}", e.0);
        assert!(!e.0.contains("secret"));
    }

    #[test]
    fn the_usage_file_sits_beside_a_sqlite_database() {
        let home = std::path::Path::new("/h");
        let d = DatabaseConfig::resolve(home, None).unwrap();
        assert_eq!(
            d.usage_url().as_deref(),
            Some("sqlite:///h/demiurge-usage.db?mode=rwc")
        );
        assert_eq!(
            d.sqlite_files(),
            vec![
                PathBuf::from("/h/demiurge.db"),
                PathBuf::from("/h/demiurge-usage.db")
            ]
        );
        let other = DatabaseConfig::resolve(home, Some("sqlite://data/x.sqlite")).unwrap();
        assert_eq!(
            other.usage_url().as_deref(),
            Some("sqlite://data/x.sqlite-usage")
        );
        for memory in [
            "sqlite::memory:",
            "sqlite://:memory:",
            "sqlite://x.db?mode=memory",
        ] {
            let m = DatabaseConfig::resolve(home, Some(memory)).unwrap();
            assert_eq!(m.usage_url(), None, "{memory}");
            assert!(m.sqlite_files().is_empty(), "{memory}");
        }
        let pg = DatabaseConfig::resolve(home, Some("postgres://u@h/d")).unwrap();
        assert_eq!(pg.usage_url(), None);
        assert!(pg.sqlite_files().is_empty());
    }

    #[test]
    fn redact_url_hides_passwords() {
        assert_eq!(
            redact_url("postgres://a:b@h/d"),
            "postgres://<redacted>@h/d"
        );
        assert_eq!(redact_url("sqlite:///x.db"), "sqlite:///x.db");
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("x", "30s").unwrap(), Duration::from_secs(30));
        assert_eq!(
            parse_duration("x", "1h").unwrap(),
            Duration::from_secs(3600)
        );
        assert!(parse_duration("x", "soon").unwrap_err().0.contains("soon"));
    }

    #[test]
    fn byte_sizes() {
        for (text, bytes) in [
            ("0", 0),
            ("1048576", 1_048_576),
            ("1024B", 1024),
            ("512KiB", 512 * 1024),
            ("4k", 4096),
            ("1 MiB", 1 << 20),
            ("256MiB", 256 << 20),
            ("4GiB", 4 << 30),
            ("2T", 2 << 40),
        ] {
            assert_eq!(parse_bytes("x", text).unwrap(), bytes, "{text}");
        }
        for bad in [
            "",
            "MiB",
            "1.5MiB",
            "-1",
            "10 parsecs",
            "99999999999999999999",
            "20000000TiB",
        ] {
            let err = parse_bytes("--artifact-max-bytes", bad).unwrap_err();
            assert!(err.0.contains("--artifact-max-bytes"), "{bad}: {}", err.0);
        }
    }

    #[test]
    fn protection_defaults_and_checks() {
        use clap::Parser;
        let parse = |extra: &[&str]| {
            let mut argv = vec!["demiurge", "serve"];
            argv.extend_from_slice(extra);
            let cli = crate::cli::Cli::try_parse_from(argv).unwrap();
            match cli.command {
                crate::cli::Command::Serve(serve) => ProtectionConfig::from_args(&serve),
                _ => Err(ConfigError("not serve".into())),
            }
        };
        let d = parse(&[]).unwrap();
        assert_eq!(d.artifact_max_bytes, 256 << 20);
        assert_eq!(d.tenant_storage_max_bytes, 4 << 30);
        assert_eq!(
            (
                d.max_background_tasks_principal,
                d.max_background_tasks_tenant
            ),
            (8, 32)
        );
        assert_eq!(
            (d.max_queued_tasks_tenant, d.task_workers, d.task_lease),
            (1000, 64, Duration::from_secs(15))
        );
        assert_eq!(d.header_read_timeout, Duration::from_secs(10));
        assert_eq!(d.max_connections, 4096);
        let c = parse(&[
            "--artifact-max-bytes",
            "1MiB",
            "--tenant-storage-max-bytes",
            "3MiB",
            "--max-background-tasks-principal",
            "2",
            "--header-read-timeout",
            "1s",
            "--max-connections",
            "100",
        ])
        .unwrap();
        assert_eq!(
            (c.artifact_max_bytes, c.tenant_storage_max_bytes),
            (1 << 20, 3 << 20)
        );
        assert_eq!(c.max_background_tasks_principal, 2);
        assert_eq!(c.header_read_timeout, Duration::from_secs(1));
        assert_eq!(c.max_connections, 100);
        for bad in [
            &["--artifact-max-bytes", "10"][..],
            &["--tenant-storage-max-bytes", "lots"],
            &["--max-background-tasks-tenant", "0"],
            &["--task-workers", "0"],
            &["--max-queued-tasks-tenant", "0"],
            &["--task-lease", "100ms"],
            &["--header-read-timeout", "0s"],
            &["--max-connections", "0"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn url_allow_takes_networks_and_addresses() {
        let nets = parse_url_allow(&[
            "10.0.0.0/8".into(),
            " 192.168.1.7 ".into(),
            "".into(),
            "fd00::1/16".into(),
        ])
        .unwrap();
        let shown: Vec<String> = nets.iter().map(|n| n.to_string()).collect();
        assert_eq!(shown, ["10.0.0.0/8", "192.168.1.7/32", "fd00::/16"]);
        for bad in ["10.0.0.0/33", "example.com", "10.0.0"] {
            let e = parse_url_allow(&[bad.into()]).unwrap_err();
            assert!(e.0.contains(bad), "{e:?}");
        }
    }

    #[test]
    fn mcp_idle_timeout_is_a_duration_of_a_second_or_more() {
        assert_eq!(
            parse_mcp_idle_timeout("15m").unwrap(),
            Duration::from_secs(900)
        );
        assert_eq!(
            parse_mcp_idle_timeout("1s").unwrap(),
            Duration::from_secs(1)
        );
        for bad in ["500ms", "0s", "soon"] {
            let e = parse_mcp_idle_timeout(bad).unwrap_err();
            assert!(e.0.contains("--mcp-idle-timeout"), "{e:?}");
        }
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from(["demiurge", "serve"]).unwrap();
        let crate::cli::Command::Serve(serve) = cli.command else {
            panic!("not serve")
        };
        assert_eq!(
            parse_mcp_idle_timeout(&serve.mcp_idle_timeout).unwrap(),
            crate::mcp::runtime::DEFAULT_IDLE_TIMEOUT
        );
    }

    #[test]
    fn api_key_debug_is_redacted() {
        let k = ApiKey("sk-verysecret".into());
        assert!(!format!("{k:?}").contains("verysecret"));
    }
}

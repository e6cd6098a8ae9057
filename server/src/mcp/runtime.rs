//! Live MCP connections (stdio): the host starts each declared server as a
//! confined child (the terminal's sandbox, its allowlisted environment plus
//! the manifest's `env`), speaks MCP over its pipes with the official `rmcp`
//! client, and keeps the connection per [`ConnKey`] (tenant, principal,
//! core, core revision, server, declaration fingerprint).
//!
//! Discovery (`initialize` + `tools/list`) is bounded by the manifest's
//! `connect_timeout_seconds`, at most [`MAX_CONCURRENT_CONNECTS`] at once; a
//! server that fails stays in a negative cache for [`NEGATIVE_TTL`] while
//! healthy ones stay connected. A server's stderr is kept in a window of
//! [`STDERR_WINDOW`] characters and appended, redacted, to a private log
//! when the connection closes. Every error is redacted with the manifest's
//! env values before anyone sees it.
//!
//! A server that does not declare `supports_parallel_tool_calls` gets one
//! call at a time on its connection. A `notifications/tools/list_changed`
//! marks the connection stale: the next turn lists its tools again (a new
//! tool generation, so the cached catalog of [`super::extend`] is rebuilt).
//! A connection no call or turn used for the idle timeout
//! (`--mcp-idle-timeout`) is closed by [`McpRuntime::sweep`].
//!
//! Who may connect (capability, approval) is decided by the dispatcher
//! before [`McpRuntime::connect`] is called; this room only runs.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::ServiceExt;
use serde::Serialize;
use tokio::io::AsyncReadExt;
use tokio::sync::Semaphore;

use super::http::PinnedHttp;
/// Declared with the server declarations, which the catalog reads too.
pub use super::ConnKey;
use crate::exec::sandbox::Confinement;
use crate::policy::json_schema::ArgumentSchema;
use crate::redact::redactor::{SecretRedactor, View};

/// Discoveries running at once, host-wide.
pub const MAX_CONCURRENT_CONNECTS: usize = 4;
/// How long a failed server is not retried.
pub const NEGATIVE_TTL: Duration = Duration::from_secs(30);
/// Characters of a server's stderr kept in memory.
pub const STDERR_WINDOW: usize = 12_000;
/// `--mcp-idle-timeout` when the operator sets none.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Connection identities, host-wide: a new connection never reuses one, so a
/// cached catalog that names a closed connection can never match again.
static CONNECTION_IDS: AtomicU64 = AtomicU64::new(1);

/// A confined child speaking MCP over its stdin/stdout.
pub struct StdioLaunch {
    pub command: String,
    pub args: Vec<String>,
    /// The complete child environment (allowlist + manifest env).
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub confinement: Option<Arc<Confinement>>,
}

/// An endpoint reached through the pinned outbound client.
pub struct HttpLaunch {
    pub url: String,
    pub client: PinnedHttp,
}

/// How to reach one server.
pub enum Endpoint {
    Stdio(StdioLaunch),
    Http(HttpLaunch),
}

/// Everything needed to start one server, built by the host.
pub struct Launch {
    pub endpoint: Endpoint,
    pub connect_timeout: Duration,
    /// (name, value) of the manifest's env and headers: never shown.
    pub secrets: Vec<(String, String)>,
    /// The private log the stderr window is appended to on close.
    pub log: PathBuf,
    /// `supports_parallel_tool_calls`: without it, one call at a time.
    pub parallel: bool,
}

/// The client side's handler: it only notes that the server's tool list
/// changed (the relist happens on the next turn, outside rmcp's loop).
#[derive(Clone, Default)]
pub struct Notices {
    stale: Arc<AtomicBool>,
}

impl rmcp::ClientHandler for Notices {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.stale.store(true, Ordering::SeqCst);
        std::future::ready(())
    }
}

/// One listed tool, prepared once per connection (not per turn).
#[derive(Debug, Clone)]
pub struct PreparedTool {
    /// The tool's name on the server.
    pub name: String,
    /// Redacted with the server's secrets.
    pub description: String,
    pub input_schema: serde_json::Value,
    pub arguments: Result<ArgumentSchema, String>,
}

/// A connected server and the tools it listed.
pub struct Connection {
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Notices>>>,
    /// Host-wide identity of this connection ([`CONNECTION_IDS`]).
    id: u64,
    /// The listed tools; replaced whole by a relist.
    tools: RwLock<Arc<Vec<PreparedTool>>>,
    /// Bumped by every relist (part of the cached catalog's stamp).
    generation: AtomicU64,
    /// Set by the server's `notifications/tools/list_changed`.
    stale: Arc<AtomicBool>,
    /// Held across each call when the server cannot take parallel calls.
    serial: Option<tokio::sync::Mutex<()>>,
    /// Calls running now (an idle sweep never closes a busy connection).
    busy: AtomicUsize,
    /// A call found the transport gone (the server died or closed its
    /// pipes); rmcp's service may not have noticed yet.
    broken: AtomicBool,
    /// The last call or turn that used it.
    last_used: Mutex<Instant>,
    stderr: Arc<Mutex<String>>,
    /// Body bytes received from an HTTP server; `None` over stdio.
    received: Option<Arc<AtomicU64>>,
    redactor: SecretRedactor,
    log: PathBuf,
    pgid: Option<i32>,
}

/// Counts a running call for [`Connection::idle_for`].
struct Busy<'a>(&'a Connection);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
        self.0.touch();
    }
}

impl Connection {
    /// The tools the server listed last.
    pub fn tools(&self) -> Arc<Vec<PreparedTool>> {
        match self.tools.read() {
            Ok(t) => t.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// (connection identity, tool generation): what a cached catalog of
    /// this connection's tools was built from.
    pub fn stamp(&self) -> (u64, u64) {
        (self.id, self.generation.load(Ordering::SeqCst))
    }

    /// Whether the server said its tool list changed since the last listing.
    pub fn needs_relist(&self) -> bool {
        self.stale.load(Ordering::SeqCst)
    }

    /// List the tools again (after `notifications/tools/list_changed`),
    /// bounded by `timeout`; the new list is a new generation.
    pub async fn relist(&self, timeout: Duration) -> Result<usize, String> {
        // Cleared first: a change announced during the listing is listed again.
        self.stale.store(false, Ordering::SeqCst);
        let peer = {
            let guard = self.service.lock().await;
            let Some(service) = guard.as_ref() else {
                return Err("the MCP connection is closed".into());
            };
            service.peer().clone()
        };
        let tools = match tokio::time::timeout(timeout, peer.list_all_tools()).await {
            Err(_) => {
                return Err(format!(
                    "MCP tools/list timed out after {}s",
                    timeout.as_secs_f64()
                ))
            }
            Ok(Err(e)) => return Err(self.redact(&format!("MCP tools/list failed: {e}"))),
            Ok(Ok(tools)) => prepare(tools, &self.redactor),
        };
        let count = tools.len();
        match self.tools.write() {
            Ok(mut t) => *t = Arc::new(tools),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(tools),
        }
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.touch();
        Ok(count)
    }

    /// Mark the connection used now (a turn offered its tools, a call ended).
    pub fn touch(&self) {
        if let Ok(mut at) = self.last_used.lock() {
            *at = Instant::now();
        }
    }

    /// How long nothing used it; `None` while a call runs.
    pub fn idle_for(&self) -> Option<Duration> {
        if self.busy.load(Ordering::SeqCst) > 0 {
            return None;
        }
        self.last_used.lock().ok().map(|at| at.elapsed())
    }

    /// Redact `text` with this server's known secrets (and the generic rules).
    pub fn redact(&self, text: &str) -> String {
        self.redactor.redact_str_for(text, View::Event)
    }

    /// Redact a JSON value with this server's known secrets.
    pub fn redact_json(&self, v: &serde_json::Value) -> serde_json::Value {
        self.redactor.redact_json_for(v, View::Event)
    }

    /// One `tools/call`, bounded by `timeout`.
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        timeout: Duration,
    ) -> Result<CallToolResult, String> {
        self.busy.fetch_add(1, Ordering::SeqCst);
        let _busy = Busy(self);
        let guard = self.service.lock().await;
        let Some(service) = guard.as_ref() else {
            return Err("the MCP connection is closed".into());
        };
        let peer = service.peer().clone();
        drop(guard);
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        // A server without parallel-call support sees one call at a time;
        // waiting for the turn counts against the call's timeout.
        let call = async {
            let _one = match &self.serial {
                Some(lock) => Some(lock.lock().await),
                None => None,
            };
            peer.call_tool(params).await
        };
        match tokio::time::timeout(timeout, call).await {
            Err(_) => Err(format!(
                "MCP call timed out after {}s",
                timeout.as_secs_f64()
            )),
            Ok(Err(e)) => {
                if matches!(
                    e,
                    rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_)
                ) {
                    self.broken.store(true, Ordering::SeqCst);
                }
                Err(self.redact(&format!("MCP call failed: {e}")))
            }
            Ok(Ok(result)) => Ok(result),
        }
    }

    /// Body bytes received from the server so far (HTTP only). A call's
    /// share is the growth while it ran; calls running at once on one
    /// connection share it.
    pub fn received_bytes(&self) -> Option<u64> {
        self.received.as_ref().map(|r| r.load(Ordering::Relaxed))
    }

    /// Whether the server's side is gone (crashed, closed its pipes).
    pub fn is_closed(&self) -> bool {
        if self.broken.load(Ordering::SeqCst) {
            return true;
        }
        match self.service.try_lock() {
            Ok(guard) => guard.as_ref().is_none_or(|s| s.is_closed()),
            // Someone is using it: not known to be closed.
            Err(_) => false,
        }
    }

    /// The redacted stderr window (for diagnostics).
    pub fn stderr_tail(&self) -> String {
        let text = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        self.redact(&text)
    }

    /// Stop the server and append its redacted stderr window to the log.
    pub async fn close(&self) {
        if let Some(service) = self.service.lock().await.take() {
            let _ = tokio::time::timeout(Duration::from_secs(2), service.cancel()).await;
        }
        self.kill_group();
        append_log(&self.log, &self.stderr_tail()).await;
    }

    fn kill_group(&self) {
        kill_group(self.pgid);
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // The group may hold grandchildren the pipes no longer reach.
        self.kill_group();
    }
}

async fn append_log(path: &std::path::Path, text: &str) {
    use tokio::io::AsyncWriteExt;
    if text.is_empty() {
        return;
    }
    if let Some(dir) = path.parent() {
        let _ = tokio::fs::create_dir_all(dir).await;
    }
    let mut options = tokio::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    options.mode(0o600);
    if let Ok(mut f) = options.open(path).await {
        let _ = f.write_all(text.as_bytes()).await;
        let _ = f.write_all(b"\n").await;
    }
}

/// Keep the last `max` characters of `window` after appending `chunk`.
pub fn push_window(window: &mut String, chunk: &str, max: usize) {
    window.push_str(chunk);
    let count = window.chars().count();
    if count > max {
        let cut = window
            .char_indices()
            .nth(count - max)
            .map(|(i, _)| i)
            .unwrap_or(0);
        window.drain(..cut);
    }
}

/// What a tenant's operators see of one connection (never a secret).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ConnectionInfo {
    pub server: String,
    pub principal: String,
    pub core: String,
    /// The core revision the connection belongs to.
    pub revision: String,
    /// The declaration's fingerprint.
    pub fingerprint: String,
    /// `connected`, `failed` (in the negative cache) or `unavailable`
    /// (the last turn left it unconnected: not granted, denied …; or it
    /// was closed after `--mcp-idle-timeout`).
    pub state: &'static str,
    /// Redacted.
    pub last_error: Option<String>,
    /// Tools the server listed (before the declaration's filter).
    pub tools: Option<usize>,
    /// Seconds until a failed server may be tried again.
    pub retry_in_seconds: Option<u64>,
}

/// The host's MCP connections.
#[derive(Clone)]
pub struct McpRuntime {
    inner: Arc<Inner>,
}

struct Inner {
    live: Mutex<HashMap<ConnKey, Arc<Connection>>>,
    failed: Mutex<HashMap<ConnKey, (Instant, String)>>,
    /// The last reason a turn left a server unconnected (for listings).
    notes: Mutex<HashMap<ConnKey, String>>,
    permits: Semaphore,
}

impl Default for McpRuntime {
    fn default() -> Self {
        Self::new()
    }
}

impl McpRuntime {
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                live: Mutex::new(HashMap::new()),
                failed: Mutex::new(HashMap::new()),
                notes: Mutex::new(HashMap::new()),
                permits: Semaphore::new(MAX_CONCURRENT_CONNECTS),
            }),
        }
    }

    /// Every connection of `tenant` the runtime knows of, by server,
    /// principal and core: live ones, failed ones still in the negative
    /// cache, and the reasons the last turns left others unconnected.
    pub fn snapshot(&self, tenant: &str) -> Vec<ConnectionInfo> {
        let mut out: HashMap<ConnKey, ConnectionInfo> = HashMap::new();
        let info = |k: &ConnKey, state, why: Option<String>| ConnectionInfo {
            server: k.server.clone(),
            principal: k.principal.clone(),
            core: k.core.clone(),
            revision: k.revision.clone(),
            fingerprint: k.fingerprint.clone(),
            state,
            last_error: why,
            tools: None,
            retry_in_seconds: None,
        };
        if let Ok(notes) = self.inner.notes.lock() {
            for (k, why) in notes.iter().filter(|(k, _)| k.tenant == tenant) {
                out.insert(k.clone(), info(k, "unavailable", Some(why.clone())));
            }
        }
        if let Ok(failed) = self.inner.failed.lock() {
            for (k, (at, why)) in failed.iter().filter(|(k, _)| k.tenant == tenant) {
                let Some(left) = NEGATIVE_TTL.checked_sub(at.elapsed()) else {
                    continue;
                };
                let mut i = info(k, "failed", Some(why.clone()));
                i.retry_in_seconds = Some(left.as_secs() + 1);
                out.insert(k.clone(), i);
            }
        }
        if let Ok(live) = self.inner.live.lock() {
            for (k, conn) in live.iter().filter(|(k, _)| k.tenant == tenant) {
                let mut i = info(k, "connected", None);
                i.tools = Some(conn.tools().len());
                out.insert(k.clone(), i);
            }
        }
        let mut items: Vec<ConnectionInfo> = out.into_values().collect();
        items.sort_by(|a, b| {
            (&a.core, &a.principal, &a.server).cmp(&(&b.core, &b.principal, &b.server))
        });
        items
    }

    /// Close every connection that neither a call nor a turn used for
    /// `idle` (none with a call running); their listings say why. Returns
    /// the closed connections' keys.
    pub async fn sweep(&self, idle: Duration) -> Vec<ConnKey> {
        let idle_ones: Vec<(ConnKey, Arc<Connection>)> = match self.inner.live.lock() {
            Ok(mut live) => {
                let keys: Vec<ConnKey> = live
                    .iter()
                    .filter(|(_, c)| c.idle_for().is_some_and(|d| d >= idle))
                    .map(|(k, _)| k.clone())
                    .collect();
                keys.into_iter()
                    .filter_map(|k| live.remove(&k).map(|c| (k, c)))
                    .collect()
            }
            Err(_) => Vec::new(),
        };
        let why = format!(
            "closed after {} idle (--mcp-idle-timeout); the next turn reconnects it",
            humantime::format_duration(idle)
        );
        let mut closed = Vec::with_capacity(idle_ones.len());
        for (key, conn) in idle_ones {
            conn.close().await;
            tracing::info!(server = %key.server, tenant = %key.tenant, "idle MCP connection closed");
            self.note(&key, Some(&why));
            closed.push(key);
        }
        closed
    }

    /// Run [`Self::sweep`] until `stop`, often enough that a connection is
    /// closed within about a quarter of `idle` after it went idle.
    pub fn start_sweeper(&self, idle: Duration, stop: tokio_util::sync::CancellationToken) {
        let runtime = self.clone();
        let every = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => { runtime.sweep(idle).await; }
                    _ = stop.cancelled() => return,
                }
            }
        });
    }

    /// The live connection of `key`, if any.
    pub fn live(&self, key: &ConnKey) -> Option<Arc<Connection>> {
        self.inner.live.lock().ok()?.get(key).cloned()
    }

    /// Why `key` failed less than [`NEGATIVE_TTL`] ago.
    pub fn recently_failed(&self, key: &ConnKey) -> Option<String> {
        let mut failed = self.inner.failed.lock().ok()?;
        match failed.get(key) {
            Some((at, why)) if at.elapsed() < NEGATIVE_TTL => Some(why.clone()),
            Some(_) => {
                failed.remove(key);
                None
            }
            None => None,
        }
    }

    /// Remember why a turn left `key` unconnected (`None`: it connected).
    pub fn note(&self, key: &ConnKey, why: Option<&str>) {
        if let Ok(mut notes) = self.inner.notes.lock() {
            match why {
                Some(why) => notes.insert(key.clone(), why.to_owned()),
                None => notes.remove(key),
            };
        }
    }

    /// Why `key` is not connected, as the last turn (or the negative cache) saw it.
    pub fn last_error(&self, key: &ConnKey) -> Option<String> {
        self.recently_failed(key)
            .or_else(|| self.inner.notes.lock().ok()?.get(key).cloned())
    }

    /// Close every connection of `owner`'s (tenant, principal, core) that is
    /// not in `keep` (a changed or removed declaration, a new revision).
    pub async fn retain(&self, owner: &ConnKey, keep: &[ConnKey]) {
        if let Ok(mut notes) = self.inner.notes.lock() {
            notes.retain(|k, _| !k.same_owner(owner) || keep.contains(k));
        }
        let stale: Vec<Arc<Connection>> = match self.inner.live.lock() {
            Ok(mut live) => {
                let gone: Vec<ConnKey> = live
                    .keys()
                    .filter(|k| k.same_owner(owner) && !keep.contains(k))
                    .cloned()
                    .collect();
                gone.iter().filter_map(|k| live.remove(k)).collect()
            }
            Err(_) => Vec::new(),
        };
        for conn in stale {
            conn.close().await;
        }
    }

    /// Start and discover one server (or return its live connection).
    pub async fn connect(&self, key: ConnKey, launch: Launch) -> Result<Arc<Connection>, String> {
        if let Some(conn) = self.live(&key) {
            return Ok(conn);
        }
        if let Some(why) = self.recently_failed(&key) {
            return Err(why);
        }
        let _permit = self
            .inner
            .permits
            .acquire()
            .await
            .map_err(|_| "the MCP runtime is shutting down".to_owned())?;
        if let Some(conn) = self.live(&key) {
            return Ok(conn);
        }
        match start(launch).await {
            Ok(conn) => {
                let conn = Arc::new(conn);
                if let Ok(mut live) = self.inner.live.lock() {
                    live.insert(key, conn.clone());
                }
                Ok(conn)
            }
            Err(why) => {
                if let Ok(mut failed) = self.inner.failed.lock() {
                    failed.insert(key, (Instant::now(), why.clone()));
                }
                Err(why)
            }
        }
    }

    /// Forget a connection that broke (its next use reconnects).
    pub async fn drop_broken(&self, key: &ConnKey, why: &str) {
        let conn = self.inner.live.lock().ok().and_then(|mut l| l.remove(key));
        if let Some(conn) = conn {
            conn.close().await;
        }
        if let Ok(mut failed) = self.inner.failed.lock() {
            failed.insert(key.clone(), (Instant::now(), why.to_owned()));
        }
    }
}

/// Reach the server, initialize, list its tools.
async fn start(launch: Launch) -> Result<Connection, String> {
    let mut redactor = SecretRedactor::new();
    for (name, value) in &launch.secrets {
        redactor.add_binding(name, value);
    }
    let stderr = Arc::new(Mutex::new(String::new()));
    let notices = Notices::default();
    let stale = notices.stale.clone();
    let mut received = None;
    let (discover, pgid, reader) = match launch.endpoint {
        Endpoint::Stdio(stdio) => {
            let (pgid, pipes, reader) =
                spawn(&stdio, &stderr).map_err(|e| redactor.redact_str_for(&e, View::Event))?;
            let discover = async move {
                let service = notices
                    .serve(pipes)
                    .await
                    .map_err(|e| format!("MCP initialize failed: {e}"))?;
                discover_tools(service).await
            }
            .boxed();
            (discover, pgid, Some(reader))
        }
        Endpoint::Http(http) => {
            received = Some(http.client.received());
            let config = StreamableHttpClientTransportConfig::with_uri(http.url.clone());
            let transport = StreamableHttpClientTransport::with_client(http.client, config);
            let discover = async move {
                let service = notices
                    .serve(transport)
                    .await
                    .map_err(|e| format!("MCP initialize failed: {e}"))?;
                discover_tools(service).await
            }
            .boxed();
            (discover, None, None)
        }
    };
    // A failed server's last words are its diagnostic: after the kill,
    // give the stderr reader a moment to drain the pipe.
    let drain = |reader: Option<tokio::task::JoinHandle<()>>| async move {
        if let Some(reader) = reader {
            let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
        }
    };
    let failed = |why: String| {
        let tail = stderr.lock().map(|s| s.clone()).unwrap_or_default();
        let tail: String = tail
            .trim()
            .chars()
            .rev()
            .take(500)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let why = if tail.is_empty() {
            why
        } else {
            format!("{why}; stderr: {tail}")
        };
        redactor.redact_str_for(&why, View::Event)
    };
    match tokio::time::timeout(launch.connect_timeout, discover).await {
        Err(_) => {
            kill_group(pgid);
            drain(reader).await;
            let why = failed(format!(
                "MCP server did not finish discovery within {}s (connect_timeout_seconds)",
                launch.connect_timeout.as_secs_f64()
            ));
            append_log(&launch.log, &why).await;
            Err(why)
        }
        Ok(Err(e)) => {
            kill_group(pgid);
            drain(reader).await;
            let why = failed(e);
            append_log(&launch.log, &why).await;
            Err(why)
        }
        Ok(Ok((service, tools))) => Ok(Connection {
            service: tokio::sync::Mutex::new(Some(service)),
            id: CONNECTION_IDS.fetch_add(1, Ordering::SeqCst),
            tools: RwLock::new(Arc::new(prepare(tools, &redactor))),
            generation: AtomicU64::new(0),
            stale,
            serial: (!launch.parallel).then(|| tokio::sync::Mutex::new(())),
            busy: AtomicUsize::new(0),
            broken: AtomicBool::new(false),
            last_used: Mutex::new(Instant::now()),
            stderr,
            received,
            redactor,
            log: launch.log,
            pgid,
        }),
    }
}

/// Listed tools as the catalog uses them: descriptions redacted with the
/// server's secrets, argument schemas compiled once.
fn prepare(tools: Vec<Tool>, redactor: &SecretRedactor) -> Vec<PreparedTool> {
    tools
        .into_iter()
        .map(|t| {
            let input_schema = serde_json::Value::Object((*t.input_schema).clone());
            PreparedTool {
                name: t.name.to_string(),
                description: t
                    .description
                    .as_deref()
                    .map(|d| redactor.redact_str_for(d, View::Event))
                    .unwrap_or_default(),
                arguments: ArgumentSchema::compile(&input_schema),
                input_schema,
            }
        })
        .collect()
}

type Discovered = Result<(RunningService<RoleClient, Notices>, Vec<Tool>), String>;

async fn discover_tools(service: RunningService<RoleClient, Notices>) -> Discovered {
    match service.list_all_tools().await {
        Ok(tools) => Ok((service, tools)),
        Err(e) => {
            let why = format!("MCP tools/list failed: {e}");
            let _ = tokio::time::timeout(Duration::from_secs(2), service.cancel()).await;
            Err(why)
        }
    }
}

type Pipes = (tokio::process::ChildStdout, tokio::process::ChildStdin);

/// Start the confined child; its stderr feeds `window` (the returned task
/// ends at the pipe's end).
fn spawn(
    launch: &StdioLaunch,
    window: &Arc<Mutex<String>>,
) -> Result<(Option<i32>, Pipes, tokio::task::JoinHandle<()>), String> {
    let mut command = tokio::process::Command::new(&launch.command);
    command
        .args(&launch.args)
        .current_dir(&launch.cwd)
        .env_clear()
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(confinement) = launch.confinement.clone() {
        confinement.install(command.as_std_mut());
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start MCP server {}: {e}", launch.command))?;
    let pgid = child.id().and_then(|p| i32::try_from(p).ok());
    let (Some(stdin), Some(stdout), Some(mut stderr_pipe)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        kill_group(pgid);
        return Err("MCP server has no pipes".into());
    };
    let window = window.clone();
    let reader = tokio::spawn(async move {
        let mut buf = vec![0u8; 4096];
        loop {
            match stderr_pipe.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let chunk = String::from_utf8_lossy(&buf[..n]);
                    if let Ok(mut w) = window.lock() {
                        push_window(&mut w, &chunk, STDERR_WINDOW);
                    }
                }
            }
        }
    });
    // Reaped here; the group is killed on close.
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    Ok((pgid, (stdout, stdin), reader))
}

fn kill_group(pgid: Option<i32>) {
    if let Some(pgid) = pgid {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pgid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stderr_window_keeps_the_last_characters() {
        let mut w = String::new();
        push_window(&mut w, "abc", 5);
        push_window(&mut w, "défgh", 5);
        assert_eq!(w, "défgh");
        push_window(&mut w, "é", 5);
        assert_eq!(w, "éfghé");
        assert_eq!(w.chars().count(), 5);
    }

    #[test]
    fn owners_are_tenant_principal_and_core() {
        let k = |p: &str, core: &str, fp: &str| ConnKey {
            tenant: "t".into(),
            principal: p.into(),
            core: core.into(),
            revision: "r".into(),
            server: "s".into(),
            fingerprint: fp.into(),
        };
        assert!(k("a", "c", "1").same_owner(&k("a", "c", "2")));
        assert!(!k("a", "c", "1").same_owner(&k("b", "c", "1")));
        assert!(!k("a", "c", "1").same_owner(&k("a", "d", "1")));
    }
}

//! MCP through the dispatcher: a turn's catalog gains the tools of the
//! core's declared servers once each connection is allowed (capability
//! `mcp.connect:<server>`) and approved (asked here, like every approval);
//! each call then goes the dispatcher's way (schema, `mcp.call:<server>`
//! or the manifest's capability, the per-call gate, typed status,
//! redaction with the server's env values).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::approvals::{ApprovalRequest, ApprovalScope, Verdict};
use super::Dispatcher;
use crate::catalog::mcp_cache::Stamp;
use crate::catalog::{McpOffer, McpTarget, ResolvedCatalog};
use crate::exec::sandbox;
use crate::home::HomeLayout;
use crate::mcp::http::PinnedHttp;
use crate::mcp::manifest::{ServerManifest, Transport};
use crate::mcp::runtime::{
    ConnKey, Connection, Endpoint, HttpLaunch, Launch, PreparedTool, StdioLaunch,
};
use crate::mcp::{Declared, ServerState, ServerStatus};
use crate::policy::approval_policy::ApprovalPolicy;
use crate::redact::redactor::{SecretRedactor, View};
use crate::tools::context::CallContext;
use crate::tools::contract::{Gate, ToolEnv, ToolOutcome, ToolStatus};

/// A server this turn may connect, once approved.
struct Pending {
    index: usize,
    key: ConnKey,
    launch: Launch,
}

impl Dispatcher {
    /// The turn's catalog: `catalog` plus the tools of every declared MCP
    /// server this turn may use. Connections are asked for (approval),
    /// started and discovered here, and relisted when their server said its
    /// tools changed; `None` when the core declares none. The extended
    /// catalog is cached ([`crate::catalog::mcp_cache`]): a turn whose base catalog,
    /// server states and connections are unchanged shares the last one.
    pub async fn mcp_catalog(
        &self,
        ctx: &CallContext,
        catalog: &ResolvedCatalog,
        declared: &[Declared],
    ) -> Option<Arc<ResolvedCatalog>> {
        let owner = self.conn_key(ctx, catalog, "", "");
        let keys: Vec<ConnKey> = declared
            .iter()
            .map(|d| self.conn_key(ctx, catalog, &d.status.server, &d.status.fingerprint))
            .collect();
        let keep: Vec<ConnKey> = declared
            .iter()
            .zip(&keys)
            .filter(|(d, _)| d.manifest.as_ref().is_some_and(|m| m.enabled))
            .map(|(_, k)| k.clone())
            .collect();
        // A changed or removed declaration (or a new core revision) closes
        // the old connection; so does removing the last one.
        self.mcp.retain(&owner, &keep).await;
        let owner_id = (
            owner.tenant.as_str(),
            owner.principal.as_str(),
            owner.core.as_str(),
        );
        if declared.is_empty() {
            self.mcp_catalogs.forget(owner_id);
            return None;
        }
        let mut statuses: Vec<ServerStatus> = declared.iter().map(|d| d.status.clone()).collect();
        let mut pending: Vec<Pending> = Vec::new();
        for (index, d) in declared.iter().enumerate() {
            let Some(m) = d.manifest.as_ref().filter(|m| m.enabled) else {
                continue;
            };
            let status = &mut statuses[index];
            let server = d.status.server.as_str();
            let key = &keys[index];
            if !catalog
                .grants()
                .allows(&status.connect_capability, None, &[], false)
            {
                status.last_error = Some(format!(
                    "capability {} is not granted to this core",
                    status.connect_capability
                ));
                continue;
            }
            if let Some(conn) = self.mcp.live(key) {
                // The server announced a new tool list: this turn sees it.
                if conn.needs_relist() {
                    let timeout = Duration::from_secs_f64(m.connect_timeout_seconds);
                    match conn.relist(timeout).await {
                        Ok(count) => tracing::debug!(server, count, "MCP tools relisted"),
                        Err(why) => {
                            tracing::warn!(server, error = %why, "MCP relist failed");
                            if conn.is_closed() {
                                self.mcp.drop_broken(key, &why).await;
                                status.last_error = Some(why);
                            }
                        }
                    }
                }
                continue;
            }
            if let Some(why) = self.mcp.recently_failed(key) {
                status.last_error = Some(why);
                continue;
            }
            if let Err(why) = self.approve_connect(ctx, server, m, &d.status).await {
                status.last_error = Some(why);
                continue;
            }
            match self.launch(ctx, catalog, server, m).await {
                Ok(launch) => pending.push(Pending {
                    index,
                    key: key.clone(),
                    launch,
                }),
                Err(why) => status.last_error = Some(why),
            }
        }
        // Discovery runs concurrently (the runtime bounds it host-wide).
        let results = futures_util::future::join_all(pending.into_iter().map(|p| {
            let runtime = self.mcp.clone();
            async move { (p.index, runtime.connect(p.key, p.launch).await) }
        }))
        .await;
        for (index, result) in results {
            if let Err(why) = result {
                statuses[index].last_error = Some(why);
            }
        }
        let mut live: Vec<Option<Arc<Connection>>> = Vec::with_capacity(declared.len());
        for (index, d) in declared.iter().enumerate() {
            let key = &keys[index];
            let conn = d.manifest.as_ref().and_then(|_| self.mcp.live(key));
            match &conn {
                Some(conn) => {
                    conn.touch();
                    self.mcp.note(key, None);
                    statuses[index].state = ServerState::Connected;
                    statuses[index].last_error = None;
                }
                None if d.manifest.as_ref().is_some_and(|m| m.enabled) => {
                    self.mcp.note(key, statuses[index].last_error.as_deref());
                }
                None => {}
            }
            live.push(conn);
        }
        let stamp = Stamp {
            base: catalog.fingerprint().to_owned(),
            statuses,
            connections: live.iter().map(|c| c.as_ref().map(|c| c.stamp())).collect(),
        };
        let statuses = stamp.statuses.clone();
        let extended = self.mcp_catalogs.get_or_build(owner_id, stamp, || {
            let mut statuses = statuses;
            let mut offers = Vec::new();
            for (index, d) in declared.iter().enumerate() {
                let (Some(m), Some(conn)) = (d.manifest.as_ref(), live[index].as_ref()) else {
                    continue;
                };
                let before = offers.len();
                offers.extend(offers_of(&conn.tools(), m, &keys[index], &d.status.server));
                statuses[index].tools = Some(offers.len() - before);
            }
            catalog.with_mcp(statuses, offers)
        });
        Some(extended)
    }

    /// The catalog `GET /v1/sessions/{id}/tools` shows: the connections this
    /// principal already has (nothing is started or asked for).
    pub fn mcp_listing(
        &self,
        scope: &crate::auth::PrincipalScope,
        catalog: &ResolvedCatalog,
        declared: &[Declared],
    ) -> Option<ResolvedCatalog> {
        if declared.is_empty() {
            return None;
        }
        let mut statuses: Vec<ServerStatus> = declared.iter().map(|d| d.status.clone()).collect();
        let mut offers = Vec::new();
        for (index, d) in declared.iter().enumerate() {
            let Some(m) = d.manifest.as_ref().filter(|m| m.enabled) else {
                continue;
            };
            let server = d.status.server.as_str();
            let key = ConnKey {
                tenant: scope.tenant().as_str().to_owned(),
                principal: scope.principal().as_str().to_owned(),
                core: catalog.core_id().to_owned(),
                revision: catalog.fingerprint().to_owned(),
                server: server.to_owned(),
                fingerprint: d.status.fingerprint.clone(),
            };
            if let Some(why) = self.mcp.last_error(&key) {
                statuses[index].last_error = Some(why);
            }
            let Some(conn) = self.mcp.live(&key) else {
                continue;
            };
            statuses[index].state = ServerState::Connected;
            statuses[index].last_error = None;
            let before = offers.len();
            offers.extend(offers_of(&conn.tools(), m, &key, server));
            statuses[index].tools = Some(offers.len() - before);
        }
        Some(catalog.with_mcp(statuses, offers))
    }

    /// Close idle MCP connections (`--mcp-idle-timeout`) until `stop`.
    pub fn start_mcp_sweeper(&self, stop: tokio_util::sync::CancellationToken) {
        self.mcp.start_sweeper(self.walls.mcp_idle_timeout, stop);
    }

    /// The tenant's MCP connections, for its operators.
    pub fn mcp_connections(
        &self,
        scope: &crate::auth::PrincipalScope,
    ) -> Vec<crate::mcp::runtime::ConnectionInfo> {
        self.mcp.snapshot(scope.tenant().as_str())
    }

    fn conn_key(
        &self,
        ctx: &CallContext,
        catalog: &ResolvedCatalog,
        server: &str,
        fingerprint: &str,
    ) -> ConnKey {
        ConnKey {
            tenant: ctx.scope.tenant().as_str().to_owned(),
            principal: ctx.scope.principal().as_str().to_owned(),
            core: catalog.core_id().to_owned(),
            revision: catalog.fingerprint().to_owned(),
            server: server.to_owned(),
            fingerprint: fingerprint.to_owned(),
        }
    }

    /// The connect approval: always asked (a session's "allow" covers the
    /// same declaration only); a manifest policy of `deny` refuses.
    async fn approve_connect(
        &self,
        ctx: &CallContext,
        server: &str,
        m: &ServerManifest,
        status: &ServerStatus,
    ) -> Result<(), String> {
        if m.approval_policy == ApprovalPolicy::Deny {
            return Err(format!("approval policy denies connecting {server}"));
        }
        let req = ApprovalRequest {
            tool: format!("mcp:{server}"),
            risk: m.risk,
            rule: format!(
                "mcp:{server}:{}:connect:{}",
                status.connect_capability, status.fingerprint
            ),
            reason: format!("connect MCP server {server}"),
            preview: connect_preview(server, m),
            session_cacheable: true,
        };
        let scope = ApprovalScope {
            scope: &ctx.scope,
            session_id: ctx.session_id,
            turn_id: ctx.turn_id,
            core_fingerprint: &ctx.core_fingerprint,
        };
        match self.approvals.request(&scope, req, &ctx.cancel).await {
            Ok(Verdict::Allowed(_)) => Ok(()),
            Ok(Verdict::Denied(why)) => Err(format!("connect approval denied ({why})")),
            Err(e) => {
                tracing::error!(error = %e, "MCP connect approval failed");
                Err("connect approval could not be requested".into())
            }
        }
    }

    /// How to reach `server` for this turn's principal: a confined child,
    /// or the declared endpoint through the pinned outbound client.
    async fn launch(
        &self,
        ctx: &CallContext,
        catalog: &ResolvedCatalog,
        server: &str,
        m: &ServerManifest,
    ) -> Result<Launch, String> {
        let layout = HomeLayout::new(&self.home);
        let (tenant, principal) = (ctx.scope.tenant(), ctx.scope.principal());
        let secrets: Vec<(String, String)> = m
            .env
            .iter()
            .chain(m.headers.iter())
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let log = layout
            .runtime_dir()
            .join("mcp-logs")
            .join(tenant.as_str())
            .join(principal.as_str())
            .join(format!("{server}.log"));
        let connect_timeout = Duration::from_secs_f64(m.connect_timeout_seconds);
        let endpoint = match m.transport {
            Transport::Stdio => Endpoint::Stdio(self.stdio_launch(ctx, catalog, m)?),
            Transport::StreamableHttp => {
                let Some(url) = m.url.clone() else {
                    return Err("streamable_http MCP server requires url".into());
                };
                // Judged by the URL policy (DNS included) and pinned to the
                // accepted addresses; `--url-allow` is the operator's.
                let (client, verdict) = self
                    .walls
                    .outbound
                    .pinned_client(&url, connect_timeout.max(Duration::from_secs(1)))
                    .await
                    .map_err(|e| format!("MCP endpoint refused: {e}"))?;
                tracing::debug!(server, origin = %verdict.origin, "MCP endpoint pinned");
                let headers: Vec<(String, String)> = m
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                Endpoint::Http(HttpLaunch {
                    url,
                    client: PinnedHttp::new(client, &headers)?,
                })
            }
        };
        Ok(Launch {
            endpoint,
            connect_timeout,
            secrets,
            log,
            parallel: m.supports_parallel_tool_calls,
        })
    }

    /// The confined child for a stdio server: the terminal's sandbox, its
    /// allowlisted environment, the manifest's env, a cwd in the workspace.
    fn stdio_launch(
        &self,
        ctx: &CallContext,
        catalog: &ResolvedCatalog,
        m: &ServerManifest,
    ) -> Result<StdioLaunch, String> {
        let Some(command) = m.command.clone() else {
            return Err("stdio MCP server requires command".into());
        };
        let cwd = resolve_cwd(&ctx.workspace, m.cwd.as_deref())?;
        let layout = HomeLayout::new(&self.home);
        let (tenant, principal) = (ctx.scope.tenant(), ctx.scope.principal());
        let runtime_home = layout.terminal_home(tenant, principal);
        crate::exec::ensure_runtime_home(&runtime_home)
            .map_err(|e| format!("cannot prepare the runtime home: {e}"))?;
        let tmp = layout.terminal_tmp(tenant, principal);
        let walls = &self.walls;
        let request = sandbox::Request {
            tenant: tenant.as_str(),
            workspace: &ctx.workspace,
            home: &runtime_home,
            tmp: &tmp,
            network: walls.terminal_network && !catalog.terminal_network_off(),
            read_only: &[],
            state: None,
        };
        let confinement = walls
            .sandbox
            .prepare(&request)
            .map_err(|e| e.to_string())?
            .map(std::sync::Arc::new);
        // The manifest's env joins after approval; it never sets what
        // controls execution (PATH, loader hooks, HOME …).
        let overlay: Vec<(String, String)> = m
            .env
            .iter()
            .filter(|(k, _)| !crate::exec::is_reserved_env_target(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut env = crate::exec::child_env(std::env::vars(), &runtime_home, &overlay);
        crate::exec::confine_env(
            &mut env,
            &ctx.workspace,
            confinement.as_ref().map(|c| (c.path_env(), tmp.as_path())),
        );
        Ok(StdioLaunch {
            command,
            args: m.args.clone(),
            env,
            cwd,
            confinement,
        })
    }

    /// One call of an MCP entry (after schema and capability checks).
    pub(super) async fn call_mcp(&self, env: &ToolEnv<'_>, target: &McpTarget) -> ToolOutcome {
        if env.ctx.cancel.is_cancelled() {
            return ToolOutcome::error(ToolStatus::Cancelled, "the turn was cancelled");
        }
        if let Some(refused) = self.pass(env, Gate::PerCall).await {
            return refused;
        }
        let Some(conn) = self.mcp.live(&target.key) else {
            return ToolOutcome::error(
                ToolStatus::Failed,
                format!("MCP server {} is not connected", target.server),
            );
        };
        let arguments = match env.args {
            Value::Object(map) => map.clone(),
            Value::Null => serde_json::Map::new(),
            _ => {
                return ToolOutcome::error(
                    ToolStatus::Invalid,
                    format!(
                        "invalid arguments for {}: expected an object",
                        env.entry.name
                    ),
                )
            }
        };
        let before = conn.received_bytes();
        let call = conn.call(&target.tool, arguments, target.timeout);
        let result = tokio::select! {
            r = call => r,
            _ = env.ctx.cancel.cancelled() => {
                return ToolOutcome::error(ToolStatus::Cancelled, "the turn was cancelled");
            }
        };
        // What the server sent while the call ran is the call's usage.
        if let (Some(before), Some(after)) = (before, conn.received_bytes()) {
            crate::usage::Tally::add_outbound_bytes(after.saturating_sub(before));
        }
        match result {
            Err(why) if why.contains("timed out") => ToolOutcome::error(ToolStatus::TimedOut, why),
            Err(why) => {
                // A broken transport is reconnected by a later turn.
                if conn.is_closed() {
                    self.mcp.drop_broken(&target.key, &why).await;
                }
                ToolOutcome::error(ToolStatus::Failed, why)
            }
            Ok(result) => {
                let blocks = serde_json::to_value(&result.content).unwrap_or(Value::Null);
                let text: Vec<String> = blocks
                    .as_array()
                    .map(|items| {
                        items
                            .iter()
                            .filter_map(|b| b.get("text").and_then(Value::as_str))
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                let status = if result.is_error == Some(true) {
                    ToolStatus::Failed
                } else {
                    ToolStatus::Succeeded
                };
                let content = conn.redact(&text.join("\n"));
                let data = conn.redact_json(&json!({
                    "server": target.server,
                    "tool": target.tool,
                    "content": blocks,
                    "structured_content": result.structured_content,
                    "is_error": result.is_error.unwrap_or(false),
                }));
                ToolOutcome {
                    status,
                    content: Value::String(content),
                    data,
                }
            }
        }
    }
}

/// The offers of a connection's tools that the declaration's filter selects.
fn offers_of<'a>(
    tools: &'a [PreparedTool],
    m: &'a ServerManifest,
    key: &'a ConnKey,
    server: &'a str,
) -> impl Iterator<Item = McpOffer> + 'a {
    let capability = m.call_capability(server);
    tools
        .iter()
        .filter(|t| m.tools.selects(&t.name))
        .map(move |tool| McpOffer {
            target: McpTarget {
                key: key.clone(),
                server: server.to_owned(),
                tool: tool.name.clone(),
                timeout: Duration::from_secs_f64(m.timeout_seconds),
            },
            description: tool.description.clone(),
            input_schema: tool.input_schema.clone(),
            arguments: tool.arguments.clone(),
            risk: m.risk,
            capability: capability.clone(),
            approval_policy: m.approval_policy,
        })
}

/// What the connect approval shows: safe launch metadata. Env and header
/// values never reach the approver (names only); an env or header value, a
/// secret-bearing option (`--api-key X`, `--token=X`) or a known token shape
/// in the command, args or cwd is redacted.
pub fn connect_preview(server: &str, m: &ServerManifest) -> Value {
    let preview = match m.transport {
        Transport::Stdio => json!({
            "server": server,
            "transport": m.transport.as_str(),
            "command": m.command,
            "args": m.args,
            "cwd": m.cwd,
            "env": m.env.keys().collect::<Vec<_>>(),
        }),
        Transport::StreamableHttp => json!({
            "server": server,
            "transport": m.transport.as_str(),
            "endpoint": m.url.as_deref().map(safe_endpoint),
            "headers": m.headers.keys().collect::<Vec<_>>(),
        }),
    };
    let mut redactor = SecretRedactor::new();
    for (name, value) in m.env.iter().chain(m.headers.iter()) {
        redactor.add_binding(name, value);
    }
    redactor.discover_json(&preview);
    redactor.redact_json_for(&preview, View::Event)
}

/// What an approver sees of an endpoint: scheme, host, port and path;
/// never credentials or a query.
pub fn safe_endpoint(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(u) => format!(
            "{}://{}{}{}",
            u.scheme(),
            u.host_str().unwrap_or(""),
            u.port().map(|p| format!(":{p}")).unwrap_or_default(),
            u.path()
        ),
        Err(_) => "(invalid url)".into(),
    }
}

/// `cwd:` of a declaration, inside the workspace (default: its root).
pub fn resolve_cwd(workspace: &Path, cwd: Option<&str>) -> Result<PathBuf, String> {
    let Some(rel) = cwd else {
        return Ok(workspace.to_path_buf());
    };
    let rel = Path::new(rel);
    if rel.is_absolute()
        || rel
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err("cwd must be a path inside the workspace".into());
    }
    let joined = workspace.join(rel);
    let canonical = joined
        .canonicalize()
        .map_err(|e| format!("cwd {}: {e}", rel.display()))?;
    if !canonical.starts_with(workspace) || !canonical.is_dir() {
        return Err("cwd must be a folder inside the workspace".into());
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use super::{connect_preview, resolve_cwd, safe_endpoint};
    use crate::mcp::manifest::ServerManifest;

    #[test]
    fn the_connect_preview_shows_no_secret_values() {
        let raw: serde_yaml_ng::Value = serde_yaml_ng::from_str(
            "command: /usr/bin/srv\nargs: [--api-key, sk-arg-secret-1234567, --region=eu, --token=tok-secret-7654321, pass-env-secret-99887766]\nenv: {SRV_TOKEN: pass-env-secret-99887766, MODE: verbose-mode}\n",
        )
        .unwrap();
        let m = ServerManifest::parse(&raw).unwrap();
        let shown = connect_preview("srv", &m).to_string();
        for secret in [
            "sk-arg-secret-1234567",
            "tok-secret-7654321",
            "pass-env-secret-99887766",
        ] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        // Names and harmless options stay readable.
        for seen in [
            "SRV_TOKEN",
            "MODE",
            "--api-key",
            "--region=eu",
            "/usr/bin/srv",
        ] {
            assert!(shown.contains(seen), "{seen} missing from {shown}");
        }
        let raw: serde_yaml_ng::Value = serde_yaml_ng::from_str(
            "transport: streamable_http\nurl: https://u:pw-in-url@example.com/mcp?key=q-secret\nheaders: {Authorization: Bearer hdr-secret-123456}\n",
        )
        .unwrap();
        let m = ServerManifest::parse(&raw).unwrap();
        let shown = connect_preview("web", &m).to_string();
        for secret in ["pw-in-url", "q-secret", "hdr-secret-123456"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("https://example.com/mcp"), "{shown}");
    }

    #[test]
    fn the_approver_sees_no_credentials_or_query() {
        assert_eq!(
            safe_endpoint("https://user:pw@example.com:8443/mcp?token=abc#x"),
            "https://example.com:8443/mcp"
        );
        assert_eq!(safe_endpoint("http://[::1]/mcp"), "http://[::1]/mcp");
        assert_eq!(safe_endpoint("not a url"), "(invalid url)");
    }

    #[test]
    fn cwd_stays_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        assert_eq!(resolve_cwd(&ws, None).unwrap(), ws);
        assert_eq!(resolve_cwd(&ws, Some("sub")).unwrap(), ws.join("sub"));
        for bad in ["/etc", "../x", "sub/../../x", "missing"] {
            assert!(resolve_cwd(&ws, Some(bad)).is_err(), "{bad}");
        }
        std::os::unix::fs::symlink("/etc", ws.join("out")).unwrap();
        assert!(resolve_cwd(&ws, Some("out")).is_err());
    }
}

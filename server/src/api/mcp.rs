//! `/v1/mcp`: a session's tool catalog served to outside MCP clients (an
//! IDE, a desktop assistant, another agent) over Streamable HTTP, with rmcp's
//! server side doing the protocol.
//!
//! - **Who**: every HTTP request is admitted like any REST call (bearer
//!   token, revocation, the principal's rate limit) by [`admit_mcp`]; the
//!   handler reads the caller from the request's extensions, never from
//!   the body.
//! - **Which session**: `initialize` binds the MCP session to one host
//!   session, named by the client (`X-Demiurge-Session` header or
//!   `?session=`), or created on the core it names (`X-Demiurge-Core` /
//!   `?core=`, default `assistant`). Every later request must come from the
//!   same principal; another one's looks like no session at all.
//! - **What**: `tools/list` is the session core's resolved catalog (the
//!   core's own MCP servers' tools only if `serve.mcp_server_tools` allows);
//!   `tools/call` is [`crate::turn::TurnService::call_attended`], the same
//!   dispatcher path as `POST …/tool-calls`, waited on with progress
//!   notifications; the workspace's files are resources
//!   ([`crate::tools::resources`]).
//! - **Stopping**: `notifications/cancelled` or the call's response stream
//!   closing before its result cancels the call's turn.
//! - **Bad input**: a body that is not JSON, or not a JSON-RPC message, is
//!   answered with a JSON-RPC error object here (rmcp would answer plain
//!   text); rmcp refuses a body over `--body-limit` with 413.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use futures_util::StreamExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorCode, InitializeRequestParams, InitializeResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::extract::{admit, bearer_header};
use crate::app::{SessionRequest, SharedApp};
use crate::auth::PrincipalScope;
use crate::error::Error;
use crate::ids::{CoreId, SessionId};
use crate::tools::resources::{self, ResourceError};
use crate::turn::attended::{AttendedCall, CallProgress};
use crate::wire::ToolStatus;

/// The header (or `?session=`) naming the host session to bind.
pub const SESSION_HEADER: &str = "x-demiurge-session";
/// The header (or `?core=`) naming the core of a session created on `initialize`.
pub const CORE_HEADER: &str = "x-demiurge-core";
/// Resource URIs: `workspace:///<path inside the workspace>`.
pub const RESOURCE_SCHEME: &str = "workspace:///";
/// An MCP session unused this long is closed (its handler and bindings dropped).
const IDLE_SESSION: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// The rmcp service mounted at `/v1/mcp` (behind [`admit_mcp`]).
pub fn service(app: &SharedApp) -> StreamableHttpService<McpHost, LocalSessionManager> {
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(IDLE_SESSION);
    let config = StreamableHttpServerConfig::default()
        // Callers prove who they are with a bearer token on every request,
        // never with ambient browser credentials, so the DNS-rebinding guard
        // (loopback hosts only) would only stop legitimate deployments.
        .disable_allowed_hosts()
        .with_max_request_body_bytes(app.config.body_limit)
        .with_cancellation_token(app.shutdown.child_token());
    let app = app.clone();
    StreamableHttpService::new(
        move || Ok(McpHost::new(app.clone())),
        Arc::new(sessions),
        config,
    )
}

/// Who sent one HTTP request to `/v1/mcp`, put in its extensions by [`admit_mcp`].
#[derive(Clone)]
pub struct McpCaller {
    pub scope: PrincipalScope,
    /// Cancelled when this request's response stream is dropped (the client
    /// went away or closed it).
    pub gone: CancellationToken,
}

/// Middleware of `/v1/mcp`: admit the caller, answer malformed JSON-RPC
/// with a JSON-RPC error, and tie a call to its response stream.
pub async fn admit_mcp(State(app): State<SharedApp>, req: Request, next: Next) -> Response {
    let scope = match admit(&app, bearer_header(req.headers())) {
        Ok(scope) => scope,
        Err(e) => return e.into_response(),
    };
    let (mut parts, body) = req.into_parts();
    let body = if parts.method == axum::http::Method::POST {
        let bytes = match axum::body::to_bytes(body, app.config.body_limit).await {
            Ok(b) => b,
            Err(_) => {
                return super::error::ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "payload_too_large",
                    format!(
                        "the request body is larger than {} bytes",
                        app.config.body_limit
                    ),
                )
                .into_response()
            }
        };
        if let Err((id, code, message)) = check_jsonrpc(&bytes) {
            return rpc_refusal(id, code, message);
        }
        Body::from(bytes)
    } else {
        body
    };
    let gone = CancellationToken::new();
    parts.extensions.insert(McpCaller {
        scope,
        gone: gone.clone(),
    });
    let resp = next.run(Request::from_parts(parts, body)).await;
    let (parts, body) = resp.into_parts();
    let guard = gone.drop_guard();
    let body = Body::from_stream(body.into_data_stream().map(move |chunk| {
        let _held = &guard;
        chunk
    }));
    Response::from_parts(parts, body)
}

/// `Err` with the id, code and message of a JSON-RPC error unless `body`
/// is a JSON-RPC message rmcp can take.
fn check_jsonrpc(body: &[u8]) -> Result<(), (Value, ErrorCode, String)> {
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return Err((
                Value::Null,
                ErrorCode::PARSE_ERROR,
                format!("parse error: {e}"),
            ))
        }
    };
    let id = value.get("id").cloned().unwrap_or(Value::Null);
    match serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(value) {
        Ok(_) => Ok(()),
        Err(e) => Err((
            id,
            ErrorCode::INVALID_REQUEST,
            format!("not a JSON-RPC 2.0 request or notification of MCP: {e}"),
        )),
    }
}

fn rpc_refusal(id: Value, code: ErrorCode, message: String) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code.0, "message": message}});
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Which host session an MCP session is bound to, and whose it is.
#[derive(Debug, Clone)]
struct Binding {
    scope: PrincipalScope,
    session: SessionId,
}

/// One MCP session's handler (rmcp makes one per `initialize`).
pub struct McpHost {
    app: SharedApp,
    binding: OnceLock<Binding>,
}

impl McpHost {
    fn new(app: SharedApp) -> Self {
        Self {
            app,
            binding: OnceLock::new(),
        }
    }

    /// The caller of this request, as [`admit_mcp`] admitted it.
    fn caller(context: &RequestContext<RoleServer>) -> Result<McpCaller, McpError> {
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<McpCaller>())
            .cloned()
            .ok_or_else(|| McpError::internal_error("request without an admitted caller", None))
    }

    /// The bound session, if this request's caller is the one who bound it.
    fn bound(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<(McpCaller, SessionId), McpError> {
        let caller = Self::caller(context)?;
        match self.binding.get() {
            Some(b)
                if b.scope.tenant() == caller.scope.tenant()
                    && b.scope.principal() == caller.scope.principal() =>
            {
                Ok((caller, b.session))
            }
            // Another principal's MCP session looks like none at all.
            _ => Err(McpError::invalid_request(
                "no such MCP session; send initialize first",
                None,
            )),
        }
    }

    /// The session named by the client, or a new one on the core it names.
    async fn bind(
        &self,
        caller: &McpCaller,
        parts: &axum::http::request::Parts,
    ) -> Result<Binding, McpError> {
        let named = |header: &str, param: &str| -> Option<String> {
            header_value(&parts.headers, header).or_else(|| query_value(parts.uri.query(), param))
        };
        let session = match named(SESSION_HEADER, "session") {
            Some(raw) => {
                let id = SessionId::parse(&raw)
                    .map_err(|e| McpError::invalid_params(e.to_string(), None))?;
                self.app
                    .store
                    .get_session_cached(caller.scope.tenant(), caller.scope.principal(), id)
                    .await
                    .map_err(|e| rpc_error(e.into()))?
                    .ok_or_else(|| {
                        McpError::invalid_params(format!("no such session: {raw}"), None)
                    })?
                    .id
            }
            None => {
                let req = SessionRequest {
                    title: Some("MCP client".into()),
                    core: named(CORE_HEADER, "core"),
                    workspace: query_value(parts.uri.query(), "workspace"),
                };
                self.app
                    .create_session(&caller.scope, req)
                    .await
                    .map_err(rpc_error)?
                    .id
            }
        };
        Ok(Binding {
            scope: caller.scope.clone(),
            session,
        })
    }

    /// The session's core, loaded (cached per revision).
    async fn core(
        &self,
        scope: &PrincipalScope,
        sid: SessionId,
    ) -> Result<Arc<crate::core::repository::CoreView>, McpError> {
        let session = self
            .app
            .store
            .get_session_cached(scope.tenant(), scope.principal(), sid)
            .await
            .map_err(|e| rpc_error(e.into()))?
            .ok_or_else(|| rpc_error(Error::NotFound))?;
        let core = CoreId::parse(&session.core).map_err(|e| rpc_error(e.into()))?;
        self.app
            .cores
            .load(scope.tenant(), &core)
            .await
            .map_err(|e| {
                McpError::internal_error(format!("the session's core does not load: {e}"), None)
            })
    }
}

impl ServerHandler for McpHost {
    fn get_info(&self) -> ServerConfig {
        let mut info: ServerConfig = from_json(json!({
            "protocolVersion": ProtocolVersion::LATEST_WITH_INITIALIZE,
            "capabilities": {"tools": {}, "resources": {}},
            "serverInfo": {"name": "demiurge", "version": env!("CARGO_PKG_VERSION")},
        }))
        .unwrap_or_else(|_| InitializeResult::new(Default::default()));
        info.instructions = Some(
            "The tools of one demiurge session. Calls run through the host's \
             capability checks and approvals: a call that needs a person's \
             approval waits (with progress notifications) until someone decides \
             it in the console, the API, the WebSocket or a chat."
                .into(),
        );
        info
    }

    /// Binding a session needs `initialize`: the versions without it
    /// (stateless, 2026-07-28 on) are not offered.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(
            &ProtocolVersion::LATEST_WITH_INITIALIZE,
        ))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        let caller = Self::caller(&context)?;
        let parts = context
            .extensions
            .get::<axum::http::request::Parts>()
            .ok_or_else(|| McpError::internal_error("initialize without its request", None))?;
        let binding = self.bind(&caller, parts).await?;
        let session = binding.session;
        if self.binding.set(binding).is_err() {
            return Err(McpError::invalid_request(
                "this MCP session is already initialized",
                None,
            ));
        }
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        result.instructions = Some(format!(
            "{} Bound to session {session}.",
            result.instructions.unwrap_or_default()
        ));
        result.meta = Some(rmcp::model::MetaObject(
            json!({"demiurge/session_id": session.to_string()})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        ));
        Ok(result)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let (caller, sid) = self.bound(&context)?;
        let core = self.core(&caller.scope, sid).await?;
        let extended = core
            .serve_mcp_server_tools
            .then(|| {
                self.app
                    .dispatcher
                    .mcp_listing(&caller.scope, &core.resolved, &core.mcp)
            })
            .flatten();
        let catalog = extended.as_ref().unwrap_or(&core.resolved);
        let tools: Vec<Value> = catalog
            .entries()
            .iter()
            .map(|e| {
                json!({
                    "name": e.name,
                    "description": e.description,
                    "inputSchema": e.input_schema,
                    "annotations": {
                        "readOnlyHint": e.policy == crate::wire::ApprovalPolicy::Auto
                            && e.risk == crate::wire::Risk::Low,
                    },
                })
            })
            .collect();
        from_json(json!({"tools": tools}))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let (caller, sid) = self.bound(&context)?;
        let core = self.core(&caller.scope, sid).await?;
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let progress_token = context.meta.get_progress_token();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<CallProgress>();
        let (ct, gone) = (context.ct.clone(), caller.gone.clone());
        let stop = async move {
            let why = tokio::select! {
                _ = ct.cancelled() => "the client cancelled it",
                _ = gone.cancelled() => "its response stream closed",
            };
            tracing::info!(why, "MCP tool call stopped");
        };
        let call = self.app.turns.call_attended(
            &caller.scope,
            sid,
            AttendedCall {
                tool: request.name.to_string(),
                arguments,
                mcp_server_tools: core.serve_mcp_server_tools,
            },
            stop,
            move |p| {
                let _ = tx.send(p);
            },
        );
        let peer = context.peer.clone();
        let forward = async move {
            let mut n = 0u32;
            while let Some(p) = rx.recv().await {
                let Some(token) = &progress_token else {
                    continue;
                };
                n += 1;
                let param = from_json(json!({
                    "progressToken": token,
                    "progress": n,
                    "message": progress_text(&p),
                }));
                if let Ok(param) = param {
                    let _ = peer.notify_progress(param).await;
                }
            }
        };
        let (outcome, ()) = tokio::join!(call, forward);
        let outcome = outcome.map_err(rpc_error)?;
        let text = match &outcome.content {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let result: rmcp::model::CallToolResult = from_json(json!({
            "content": [{"type": "text", "text": text}],
            "structuredContent": {
                "status": outcome.status,
                "turn_id": outcome.turn_id.to_string(),
                "call_id": outcome.call_id,
                "content": outcome.content,
            },
            "isError": outcome.status != ToolStatus::Succeeded,
        }))?;
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let (caller, sid) = self.bound(&context)?;
        let workspace = self
            .app
            .turns
            .session_workspace(&caller.scope, sid)
            .await
            .map_err(rpc_error)?;
        let walls = self.app.walls.clone();
        let (files, _cut) =
            tokio::task::spawn_blocking(move || resources::list(&walls.files, &workspace))
                .await
                .map_err(|e| McpError::internal_error(e.to_string(), None))?
                .map_err(|e| {
                    McpError::internal_error(format!("listing the workspace: {e}"), None)
                })?;
        let listed: Vec<Value> = files
            .iter()
            .map(|f| {
                json!({
                    "uri": resource_uri(&f.path),
                    "name": f.path,
                    "mimeType": mime_of(&f.path),
                    "size": f.size,
                })
            })
            .collect();
        from_json(json!({"resources": listed}))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let (caller, sid) = self.bound(&context)?;
        let Some(raw) = request.uri.strip_prefix(RESOURCE_SCHEME) else {
            return Err(McpError::invalid_params(
                format!("resource URIs of this server start with {RESOURCE_SCHEME}"),
                None,
            ));
        };
        let path = percent_encoding::percent_decode_str(raw)
            .decode_utf8()
            .map_err(|_| McpError::invalid_params("the resource path is not UTF-8", None))?
            .into_owned();
        let workspace = self
            .app
            .turns
            .session_workspace(&caller.scope, sid)
            .await
            .map_err(rpc_error)?;
        let bytes = resources::read(&self.app.walls.files, &workspace, &path)
            .await
            .map_err(|e| match e {
                ResourceError::NotFound(_) => McpError::resource_not_found(e.to_string(), None),
                ResourceError::Io { .. } => McpError::internal_error(e.to_string(), None),
                ResourceError::Refused(_) | ResourceError::TooLarge(_) => {
                    McpError::invalid_params(e.to_string(), None)
                }
            })?;
        let contents = match String::from_utf8(bytes) {
            Ok(text) => json!({"uri": request.uri, "mimeType": mime_of(&path), "text": text}),
            Err(e) => json!({
                "uri": request.uri,
                "mimeType": "application/octet-stream",
                "blob": base64::engine::general_purpose::STANDARD.encode(e.into_bytes()),
            }),
        };
        let result: rmcp::model::ReadResourceResult = from_json(json!({"contents": [contents]}))?;
        Ok(result.into())
    }
}

/// What the client is told while its call waits.
fn progress_text(p: &CallProgress) -> String {
    match p {
        CallProgress::Approval {
            approval_id,
            tool,
            reason,
            expires_at,
        } => format!(
            "waiting for approval {approval_id} of {tool} ({reason}); undecided by {expires_at} is a deny"
        ),
        CallProgress::Clarification { question, .. } => format!("waiting for an answer: {question}"),
        CallProgress::Output { stream, text } => format!("{stream}: {text}"),
    }
}

fn resource_uri(path: &str) -> String {
    const KEEP: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'/')
        .remove(b'.')
        .remove(b'-')
        .remove(b'_')
        .remove(b'~');
    format!(
        "{RESOURCE_SCHEME}{}",
        percent_encoding::utf8_percent_encode(path, KEEP)
    )
}

fn mime_of(path: &str) -> &'static str {
    match path
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .as_deref()
    {
        Some("md") => "text/markdown",
        Some("json") => "application/json",
        Some("html" | "htm") => "text/html",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("pdf") => "application/pdf",
        _ => "text/plain",
    }
}

fn header_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

fn query_value(query: Option<&str>, name: &str) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// An rmcp type from its wire form (many are `#[non_exhaustive]`).
fn from_json<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, McpError> {
    serde_json::from_value(v)
        .map_err(|e| McpError::internal_error(format!("building a reply: {e}"), None))
}

/// A host error as a JSON-RPC error; the codes the MCP spec names where one fits.
fn rpc_error(e: Error) -> McpError {
    match e {
        Error::Invalid(m) => McpError::invalid_params(m, None),
        Error::NotFound => McpError::invalid_request("no such session", None),
        Error::Conflict(m) => McpError::new(ErrorCode(-32009), m, Some(json!({"reason": "busy"}))),
        Error::Unauthorized(m) | Error::Forbidden(m) => {
            McpError::new(ErrorCode(-32003), m, Some(json!({"reason": "forbidden"})))
        }
        Error::RateLimited { retry_after_secs } => McpError::new(
            ErrorCode(-32029),
            "rate limit exceeded",
            Some(json!({"retry_after_secs": retry_after_secs})),
        ),
        Error::Unavailable(m) => {
            McpError::internal_error(m, Some(json!({"reason": "unavailable"})))
        }
        Error::Database(e) => {
            tracing::error!(error = %e, "database error in an MCP request");
            McpError::internal_error("internal error", None)
        }
        Error::Internal(e) => {
            tracing::error!(error = %e, "internal error in an MCP request");
            McpError::internal_error("internal error", None)
        }
    }
}

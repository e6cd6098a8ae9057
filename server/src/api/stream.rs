//! WebSocket event stream: the same events as SSE. Auth by header or by a
//! first frame `{"type":"auth","token":"…"}`; resume with `?after=`; pings
//! keep the connection alive.
//!
//! Close codes: 4001 bad auth, 4004 no such session, 4008 fell behind (resume
//! after the seq in the reason), 1001 server shutting down.

use std::time::Duration;

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;

use super::error::{ApiError, ApiResult, ErrorBody};
use super::events::{resume_point, AfterQuery};
use super::extract::{admit, bearer, ApiPath, ApiQuery};
use super::sessions::session_id;
use crate::app::SharedApp;
use crate::auth::PrincipalScope;
use crate::events::{OnLag, SubscriptionError};
use crate::ids::SessionId;
use crate::metrics::StreamKind;

pub const CLOSE_BAD_AUTH: u16 = 4001;
pub const CLOSE_NOT_FOUND: u16 = 4004;
pub const CLOSE_LAGGED: u16 = 4008;
pub const CLOSE_GOING_AWAY: u16 = 1001;
/// The server is restarting: reconnect (to any instance) and resume.
pub const CLOSE_SERVICE_RESTART: u16 = 1012;

const AUTH_FRAME_TIMEOUT: Duration = Duration::from_secs(10);
const PING_EVERY: Duration = Duration::from_secs(20);

/// The raw bearer header, checked after the upgrade so failures get a close code.
pub struct MaybeBearer(Option<String>);

impl FromRequestParts<SharedApp> for MaybeBearer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &SharedApp) -> Result<Self, Self::Rejection> {
        Ok(MaybeBearer(bearer(parts).map(str::to_owned)))
    }
}

/// A session's events over WebSocket (a `GET` with the WebSocket handshake
/// headers: `Connection: Upgrade`, `Upgrade: websocket`,
/// `Sec-WebSocket-Version: 13`, `Sec-WebSocket-Key`).
#[utoipa::path(get, path = "/v1/sessions/{id}/stream", tag = "events",
    params(("id" = String, Path, format = Uuid, description = "Session id"), AfterQuery),
    responses(
        (status = 101, description = "Switched to WebSocket. Text frames are event JSON (the `Event` schema). \
            Without an `Authorization` header the first client frame must be `{\"type\":\"auth\",\"token\":\"…\"}`; \
            a client frame `{\"type\":\"approval\",\"approval_id\",\"decision\"}` decides an approval. \
            Close codes: 4001 bad auth, 4004 no such session, 4008 fell behind (resume after the seq in the reason), \
            1001 server shutting down.",
            headers(("Upgrade" = String, description = "`websocket`"), ("Connection" = String, description = "`upgrade`"),
                ("Sec-WebSocket-Accept" = String, description = "The handshake answer"))),
        (status = 400, description = "Not a WebSocket handshake (checked after the token), a malformed id or `after`", body = ErrorBody),
        (status = 401, description = "Not a handshake and no valid bearer token", body = ErrorBody),
        (status = 405, description = "Not a `GET`", body = ErrorBody),
        (status = 426, description = "The connection cannot be upgraded", body = ErrorBody)),
    // The token may come in the first frame instead of the header.
    security(("bearer" = []), ()))]
pub async fn session_stream(
    State(app): State<SharedApp>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<AfterQuery>,
    MaybeBearer(token): MaybeBearer,
    headers: axum::http::HeaderMap,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> ApiResult<Response> {
    let ws = match ws {
        Ok(ws) => ws,
        // Not a handshake: nothing can carry an auth frame, so the header
        // decides, and a caller without a valid token learns only that (401).
        Err(rej) => {
            admit(&app, token.as_deref())?;
            session_id(&id)?;
            resume_point(&headers, q.after)?;
            return Err(upgrade_rejection(rej));
        }
    };
    let sid = session_id(&id)?;
    let after = resume_point(&headers, q.after)?;
    // Small buffers: an idle subscriber should cost a few KiB, not the
    // library's 128 KiB defaults; event frames are written whole.
    Ok(ws
        .read_buffer_size(4 * 1024)
        .write_buffer_size(0)
        .max_write_buffer_size(1024 * 1024)
        .max_message_size(64 * 1024)
        .on_upgrade(move |socket| serve_socket(app, socket, sid, after, token)))
}

/// A request that is not a WebSocket handshake, in our envelope.
fn upgrade_rejection(rej: WebSocketUpgradeRejection) -> ApiError {
    let status = rej.status();
    let code = if status == StatusCode::UPGRADE_REQUIRED {
        "upgrade_required"
    } else {
        "invalid_request"
    };
    ApiError::new(status, code, rej.body_text())
}

async fn close(socket: &mut WebSocket, code: u16, reason: &str) {
    let _ = socket
        .send(Message::Close(Some(CloseFrame {
            code,
            reason: reason.to_owned().into(),
        })))
        .await;
}

/// Wait for `{"type":"auth","token":"…"}` as the first frame.
async fn auth_frame(socket: &mut WebSocket) -> Option<String> {
    let msg = tokio::time::timeout(AUTH_FRAME_TIMEOUT, socket.recv())
        .await
        .ok()??
        .ok()?;
    let Message::Text(text) = msg else {
        return None;
    };
    let v: serde_json::Value = serde_json::from_str(text.as_str()).ok()?;
    if v.get("type")?.as_str()? != "auth" {
        return None;
    }
    v.get("token")?.as_str().map(str::to_owned)
}

async fn serve_socket(
    app: SharedApp,
    mut socket: WebSocket,
    sid: SessionId,
    after: i64,
    token: Option<String>,
) {
    let token = match token {
        Some(t) => Some(t),
        None => auth_frame(&mut socket).await,
    };
    let scope: PrincipalScope = match admit(&app, token.as_deref()) {
        Ok(s) => s,
        Err(e) => return close(&mut socket, CLOSE_BAD_AUTH, &e.message).await,
    };
    let session = match app
        .store
        .get_session_cached(scope.tenant(), scope.principal(), sid)
        .await
    {
        Ok(Some(s)) => s,
        Ok(None) => return close(&mut socket, CLOSE_NOT_FOUND, "not found").await,
        Err(e) => {
            tracing::error!(error = %e, "websocket session lookup failed");
            return close(&mut socket, 1011, "internal error").await;
        }
    };
    let _guard = app.metrics.stream_opened(StreamKind::Ws);
    let mut sub = app.events.subscribe(session.id, after, OnLag::Fail);
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.tick().await;
    let mut recheck = tokio::time::interval(super::extract::RECHECK_EVERY);
    recheck.tick().await;
    let token = token.unwrap_or_default();
    let mut awaiting_pong = false;
    // The seq to resume after, named in the close frame when the server stops.
    let mut last = after;
    loop {
        tokio::select! {
            _ = recheck.tick() => {
                if !super::extract::still_admitted(&app, &token) {
                    return close(&mut socket, CLOSE_BAD_AUTH, "token expired, revoked or principal disabled").await;
                }
            },
            next = sub.next() => match next {
                Ok(Some(ev)) => {
                    if socket.send(Message::Text(ev.json.clone())).await.is_err() {
                        return;
                    }
                    last = ev.seq;
                }
                Ok(None) => return close(&mut socket, CLOSE_GOING_AWAY, "stream ended").await,
                Err(SubscriptionError::Lagged(l)) => {
                    let reason = format!("lagged; resume with after={}", l.last_seq);
                    return close(&mut socket, CLOSE_LAGGED, &reason).await;
                }
                Err(SubscriptionError::Database(e)) => {
                    tracing::error!(error = %e, "websocket backlog read failed");
                    return close(&mut socket, 1011, "internal error").await;
                }
            },
            incoming = socket.recv() => match incoming {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                Some(Ok(Message::Pong(_))) => awaiting_pong = false,
                Some(Ok(Message::Text(text))) => {
                    // A frame acts with the token's authority: it must still hold.
                    if !super::extract::still_admitted(&app, &token) {
                        return close(&mut socket, CLOSE_BAD_AUTH, "token expired, revoked or principal disabled").await;
                    }
                    let reply = client_frame(&app, &scope, text.as_str()).await;
                    if socket.send(Message::Text(reply.to_string().into())).await.is_err() {
                        return;
                    }
                }
                // Pings are answered by the library.
                Some(Ok(_)) => {}
            },
            _ = ping.tick() => {
                if awaiting_pong {
                    return close(&mut socket, 1011, "ping timeout").await;
                }
                awaiting_pong = true;
                if socket.send(Message::Ping(Vec::new().into())).await.is_err() {
                    return;
                }
            }
            _ = app.shutdown.cancelled() => {
                let reason = format!("server restarting; reconnect with after={last}");
                return close(&mut socket, CLOSE_SERVICE_RESTART, &reason).await;
            }
        }
    }
}

/// A client frame: `{"type":"approval","approval_id":…,"decision":…}` decides
/// an approval exactly like `POST /v1/approvals/{id}` (same authority rule;
/// a refusal answers `{"type":"error","code":…,"message":…}`).
async fn client_frame(app: &SharedApp, scope: &PrincipalScope, text: &str) -> serde_json::Value {
    use crate::wire::Decision;
    let error = |msg: String| serde_json::json!({"type": "error", "message": msg});
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
        return error("frames must be JSON objects".into());
    };
    if v.get("type").and_then(|t| t.as_str()) != Some("approval") {
        return error("unknown frame type; expected \"approval\"".into());
    }
    let raw = v
        .get("approval_id")
        .and_then(|t| t.as_str())
        .unwrap_or_default();
    let Ok(id) = uuid::Uuid::try_parse(raw).map(|u| u.as_hyphenated().to_string()) else {
        return error("approval_id must be an approval id".into());
    };
    let id = id.as_str();
    let Some(decision) = v
        .get("decision")
        .and_then(|t| t.as_str())
        .and_then(|d| d.parse::<Decision>().ok())
    else {
        return error("decision must be allow_once, allow_session or deny".into());
    };
    match app
        .approvals
        .decide(scope, &crate::store::Surface::WebSocket, id, decision)
        .await
    {
        Ok(row) => {
            serde_json::json!({"type": "approval.ack", "approval_id": row.id, "state": row.state, "decision": row.decision})
        }
        Err(e) => {
            let e = super::error::ApiError::from(e);
            serde_json::json!({"type": "error", "code": e.code, "message": e.message})
        }
    }
}

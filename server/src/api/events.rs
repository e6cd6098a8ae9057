//! Server-Sent Events: a session's events from `?after=` (or `Last-Event-ID`)
//! onwards, then live. Each SSE `id:` is the event's `seq`.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::stream::{self, Stream};
use serde::Deserialize;
use utoipa::IntoParams;

use super::error::{ApiError, ApiResult, ErrorBody};
use super::extract::Auth;
use super::sessions::session_id;
use crate::app::SharedApp;
use crate::events::{OnLag, Subscription};
use crate::metrics::{StreamGuard, StreamKind};

#[derive(Debug, Deserialize, IntoParams)]
pub struct AfterQuery {
    /// Only events with a greater `seq` (default 0: everything).
    pub after: Option<i64>,
}

/// Where to resume: `Last-Event-ID` wins over `?after=`, as browsers send it on reconnect.
pub(super) fn resume_point(headers: &HeaderMap, after: Option<i64>) -> Result<i64, ApiError> {
    if let Some(v) = headers.get("last-event-id") {
        let s = v.to_str().unwrap_or("");
        return s.trim().parse::<i64>().map(|n| n.max(0)).map_err(|_| {
            crate::error::Error::Invalid(format!(
                "Last-Event-ID {:?} is not a seq",
                s.chars().take(20).collect::<String>()
            ))
            .into()
        });
    }
    match after {
        Some(n) if n < 0 => {
            Err(crate::error::Error::Invalid(format!("after {n} is negative")).into())
        }
        Some(n) => Ok(n),
        None => Ok(0),
    }
}

struct SseState {
    sub: Subscription,
    app: SharedApp,
    /// Re-checked every second: a revoked token or disabled principal ends the stream.
    token: String,
    recheck: tokio::time::Interval,
    _guard: StreamGuard,
}

/// A session's events as Server-Sent Events.
#[utoipa::path(get, path = "/v1/sessions/{id}/events", tag = "events",
    params(("id" = String, Path, description = "Session id"), AfterQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "Resume after this seq")),
    responses((status = 200, content_type = "text/event-stream", description = "`data:` is one event JSON; `id:` its seq", body = String),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn session_events(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    Path(id): Path<String>,
    Query(q): Query<AfterQuery>,
    headers: HeaderMap,
) -> ApiResult<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>> {
    let sid = session_id(&id)?;
    let after = resume_point(&headers, q.after)?;
    let session = app
        .store
        .get_session_cached(scope.tenant(), scope.principal(), sid)
        .await?
        .ok_or_else(ApiError::not_found)?;
    let sub = app.events.subscribe(&session.id, after, OnLag::Refill);
    let token = super::extract::bearer_header(&headers)
        .unwrap_or_default()
        .to_owned();
    let mut recheck = tokio::time::interval(super::extract::RECHECK_EVERY);
    recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let state = SseState {
        sub,
        _guard: app.metrics.stream_opened(StreamKind::Sse),
        app: app.clone(),
        token,
        recheck,
    };
    let stream = stream::unfold(state, |mut st| async move {
        let next = loop {
            tokio::select! {
                n = st.sub.next() => break n,
                _ = st.recheck.tick() => {
                    if !super::extract::still_admitted(&st.app, &st.token) {
                        return None;
                    }
                },
                _ = st.app.shutdown.cancelled() => return None,
            }
        };
        match next {
            Ok(Some(ev)) => {
                let item = SseEvent::default()
                    .id(ev.seq.to_string())
                    .data(ev.json.as_str());
                Some((Ok(item), st))
            }
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(error = %e, "event stream ended");
                None
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

//! Server-Sent Events: a session's events from `?after=` (or `Last-Event-ID`)
//! onwards, then live. Each SSE `id:` is the event's `seq`.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseFrame, KeepAlive, Sse};
use futures_util::stream::{self, Stream};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiError, ApiResult, ErrorBody};
use super::extract::{ApiPath, ApiQuery, Auth};
use super::sessions::session_id;
use crate::app::SharedApp;
use crate::events::{OnLag, Subscription};
use crate::metrics::{StreamGuard, StreamKind};

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AfterQuery {
    /// Only events with a greater `seq` (default 0: everything).
    #[param(minimum = 0)]
    pub after: Option<i64>,
}

/// Where to resume: `Last-Event-ID` wins over `?after=`, as browsers send it on reconnect.
pub(super) fn resume_point(headers: &HeaderMap, after: Option<i64>) -> Result<i64, ApiError> {
    // A bad `after` is refused even when the header overrides it.
    if let Some(n) = after.filter(|n| *n < 0) {
        return Err(crate::error::Error::Invalid(format!("after {n} is negative")).into());
    }
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

/// One Server-Sent Event of `GET /v1/sessions/{id}/events` (keep-alive
/// comments aside). `data` holds one [`crate::wire::events::Event`] as JSON.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct SseEvent {
    /// The event's `seq`; send it back as `Last-Event-ID` to resume.
    #[schema(pattern = "^[0-9]+$")]
    pub id: String,
    /// One `Event`, as JSON.
    #[schema(content_media_type = "application/json")]
    pub data: String,
}

struct SseState {
    sub: Subscription,
    app: SharedApp,
    /// Re-checked every second: a revoked token or disabled principal ends the stream.
    token: String,
    recheck: tokio::time::Interval,
    /// The last seq sent: where a client resumes after a shutdown.
    last: i64,
    /// The reconnect frame went out: end.
    ended: bool,
    _guard: StreamGuard,
}

/// How soon a client told to reconnect should (`retry:`).
const RECONNECT_AFTER: Duration = Duration::from_millis(500);

/// A session's events as Server-Sent Events.
#[utoipa::path(get, path = "/v1/sessions/{id}/events", tag = "events",
    params(("id" = String, Path, format = Uuid, description = "Session id"), AfterQuery,
        ("Last-Event-ID" = Option<String>, Header, nullable = false, pattern = "^-?[0-9]{1,18}$", description = "Resume after this seq (wins over `after`)")),
    responses((status = 200, content_type = "text/event-stream", body = SseEvent,
            description = "Server-Sent Events: each `data:` is one `Event` as JSON and `id:` its seq; \
                a comment every 15 s keeps the connection alive. When the instance shuts down it sends one \
                `event: reconnect` frame (`retry:` 500 ms, data `{\"reason\":\"shutdown\",\"after\":<seq>}`) and ends: \
                reconnect, to any instance, with `Last-Event-ID` (or `after`) and nothing is missed."),
        (status = 400, description = "A malformed session id, `after` or `Last-Event-ID`", body = ErrorBody),
        (status = 404, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn session_events(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<AfterQuery>,
    headers: HeaderMap,
) -> ApiResult<Sse<impl Stream<Item = Result<SseFrame, Infallible>>>> {
    let sid = session_id(&id)?;
    let after = resume_point(&headers, q.after)?;
    let session = app
        .store
        .get_session_cached(scope.tenant(), scope.principal(), sid)
        .await?
        .ok_or_else(ApiError::not_found)?;
    let sub = app.events.subscribe(session.id, after, OnLag::Refill);
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
        last: after,
        ended: false,
    };
    let stream = stream::unfold(state, |mut st| async move {
        if st.ended {
            return None;
        }
        let next = loop {
            tokio::select! {
                n = st.sub.next() => break n,
                _ = st.recheck.tick() => {
                    if !super::extract::still_admitted(&st.app, &st.token) {
                        return None;
                    }
                },
                _ = st.app.shutdown.cancelled() => {
                    // The instance is going: say where to resume, then end.
                    st.ended = true;
                    let item = SseFrame::default()
                        .event("reconnect")
                        .retry(RECONNECT_AFTER)
                        .data(serde_json::json!({"reason": "shutdown", "after": st.last}).to_string());
                    return Some((Ok(item), st));
                }
            }
        };
        match next {
            Ok(Some(ev)) => {
                st.last = ev.seq;
                let item = SseFrame::default()
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

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_header(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("last-event-id", HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn resume_point_prefers_the_header_and_refuses_bad_values() {
        let none = HeaderMap::new();
        assert_eq!(resume_point(&none, None).unwrap(), 0);
        assert_eq!(resume_point(&none, Some(7)).unwrap(), 7);
        assert_eq!(resume_point(&with_header("12"), Some(7)).unwrap(), 12);
        assert_eq!(resume_point(&with_header(" 3 "), None).unwrap(), 3);
        // A negative header is clamped (browsers never send one).
        assert_eq!(resume_point(&with_header("-4"), None).unwrap(), 0);
        for (h, after) in [
            (none.clone(), Some(-1)),
            // A bad `after` is refused even when the header overrides it.
            (with_header("0"), Some(-1)),
            (with_header("null"), None),
            (with_header(""), Some(1)),
            (with_header("99999999999999999999"), None),
        ] {
            let e = resume_point(&h, after).unwrap_err();
            assert_eq!(
                e.status,
                axum::http::StatusCode::BAD_REQUEST,
                "{h:?} {after:?}"
            );
        }
    }
}

//! `GET /v1/tenant/events`: the caller's tenant's admin stream (budget
//! warnings), for tenant admins. Server-Sent Events when the client asks
//! for `text/event-stream` (resumable by `Last-Event-ID` or `after`, like a
//! session's events), else one JSON page. The stream is
//! [`crate::events::tenant`]'s.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::sse::{Event as SseFrame, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::stream;
use serde::Serialize;
use utoipa::ToSchema;

use super::error::{ApiResult, ErrorBody};
use super::events::{resume_point, AfterQuery};
use super::extract::{ApiQuery, Auth};
use crate::app::SharedApp;
use crate::metrics::StreamKind;
use crate::wire::tenant_events::TenantEvent;

/// One page of a tenant's admin stream.
#[derive(Debug, Serialize, ToSchema)]
pub struct TenantEventPage {
    /// Oldest first, at most 200; ask again with `after` = the last `seq`.
    pub events: Vec<TenantEvent>,
}

/// One Server-Sent Event of `GET /v1/tenant/events` (keep-alive comments
/// aside). `data` holds one `TenantEvent` as JSON.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct TenantSseEvent {
    /// The event's `seq`; send it back as `Last-Event-ID` to resume.
    #[schema(pattern = "^[0-9]+$")]
    pub id: String,
    /// One `TenantEvent`, as JSON.
    #[schema(content_media_type = "application/json")]
    pub data: String,
}

fn wants_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"))
}

/// The caller's tenant's admin stream: budget warnings (80 % and 100 % of a
/// limit, once per limit, period and level). Tenant admins only.
#[utoipa::path(get, path = "/v1/tenant/events", tag = "usage",
    params(AfterQuery,
        ("Last-Event-ID" = Option<String>, Header, nullable = false, pattern = "^-?[0-9]{1,18}$", description = "Resume after this seq (wins over `after`)")),
    responses(
        (status = 200, description = "With `Accept: text/event-stream`: Server-Sent Events, each `data:` one \
            `TenantEvent` as JSON and `id:` its seq, a comment every 15 s keeping the connection alive; \
            otherwise one page of events as JSON.",
            content(
                (TenantEventPage = "application/json"),
                (TenantSseEvent = "text/event-stream"),
            )),
        (status = 400, description = "A malformed `after` or `Last-Event-ID`", body = ErrorBody),
        (status = 403, description = "Not a tenant admin", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn tenant_events(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    ApiQuery(q): ApiQuery<AfterQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let after = resume_point(&headers, q.after)?;
    if !wants_stream(&headers) {
        let events = app.tenant_events.page_for(&scope, after).await?;
        return Ok(Json(TenantEventPage { events }).into_response());
    }
    let follower = app.tenant_events.follow_for(&scope, after)?;
    let token = super::extract::bearer_header(&headers)
        .unwrap_or_default()
        .to_owned();
    let mut recheck = tokio::time::interval(super::extract::RECHECK_EVERY);
    recheck.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let guard = app.metrics.stream_opened(StreamKind::Sse);
    let state = (follower, app.clone(), token, recheck, guard);
    let events = stream::unfold(state, |mut st| async move {
        let next = loop {
            tokio::select! {
                n = st.0.next() => break n,
                _ = st.3.tick() => {
                    // A revoked token or disabled principal ends the stream.
                    if !super::extract::still_admitted(&st.1, &st.2) {
                        return None;
                    }
                },
                _ = st.1.shutdown.cancelled() => return None,
            }
        };
        match next {
            Ok(ev) => {
                let data = serde_json::to_string(&ev).unwrap_or_default();
                let frame = SseFrame::default().id(ev.seq.to_string()).data(data);
                Some((Ok::<_, Infallible>(frame), st))
            }
            Err(e) => {
                tracing::warn!(error = %e, "tenant event stream ended");
                None
            }
        }
    });
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

//! MCP over Streamable HTTP through the host's one outbound client.
//!
//! `rmcp`'s own reqwest transport would resolve names on its own and read
//! bodies unbounded (and its feature enables reqwest's default TLS stack,
//! aws-lc-rs). So the transport here is rmcp's generic [`StreamableHttpClientTransport`] over
//! [`PinnedHttp`], which implements rmcp's [`StreamableHttpClient`] with a
//! `reqwest::Client` from [`crate::net::Outbound::pinned_client`]: it
//! reaches only the addresses the URL policy accepted for the declared
//! origin (no redirects, no proxy), keeps Host and SNI, and bounds every
//! body. The manifest's headers ride on every request; their values are
//! secrets and never appear in an error (see `runtime`'s redaction).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use futures_util::stream::{BoxStream, StreamExt};
use http::{HeaderMap, HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::{Sse, SseStream};

/// Largest JSON answer read into memory.
pub const MAX_JSON_BODY: usize = 8 * 1024 * 1024;
/// Largest SSE stream (all events together) read from one response.
pub const MAX_SSE_STREAM: usize = 32 * 1024 * 1024;
/// Largest error body kept for a diagnostic.
const MAX_ERROR_BODY: usize = 2_000;

/// Why a request failed (never carries the URL or a header value).
#[derive(Debug, thiserror::Error)]
pub enum PinnedHttpError {
    #[error("{0}")]
    Request(String),
    #[error("the MCP server's answer exceeded {0} bytes")]
    TooLarge(usize),
}

impl From<reqwest::Error> for PinnedHttpError {
    fn from(e: reqwest::Error) -> Self {
        // reqwest's Display names the URL; keep only the kind.
        let kind = if e.is_timeout() {
            "timed out"
        } else if e.is_connect() {
            "connection failed"
        } else if e.is_body() || e.is_decode() {
            "reading the answer failed"
        } else {
            "request failed"
        };
        PinnedHttpError::Request(format!("MCP HTTP {kind}"))
    }
}

type HttpResult<T> = Result<T, StreamableHttpError<PinnedHttpError>>;

/// A pinned client for one MCP endpoint, plus the manifest's headers.
#[derive(Clone)]
pub struct PinnedHttp {
    client: reqwest::Client,
    headers: Arc<HeaderMap>,
    /// Body bytes received from the server (usage: outbound bytes).
    received: Arc<std::sync::atomic::AtomicU64>,
}

impl PinnedHttp {
    /// `headers`: the manifest's (name, value) pairs; an invalid one is refused.
    pub fn new(client: reqwest::Client, headers: &[(String, String)]) -> Result<Self, String> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("invalid header name {name:?}"))?;
            let reserved = [
                HEADER_SESSION_ID,
                HEADER_LAST_EVENT_ID,
                "accept",
                "content-type",
            ];
            if reserved
                .iter()
                .any(|r| name.as_str().eq_ignore_ascii_case(r))
            {
                return Err(format!("header {name} is set by the MCP transport"));
            }
            let mut value = HeaderValue::from_str(value)
                .map_err(|_| format!("header {name} has an invalid value"))?;
            value.set_sensitive(true);
            map.insert(name, value);
        }
        Ok(Self {
            client,
            headers: Arc::new(map),
            received: Arc::default(),
        })
    }

    /// The count of body bytes received over this client, shared.
    pub fn received(&self) -> Arc<std::sync::atomic::AtomicU64> {
        self.received.clone()
    }

    fn request(
        &self,
        method: reqwest::Method,
        uri: &str,
        session_id: Option<&str>,
        auth: Option<String>,
        custom: HashMap<HeaderName, HeaderValue>,
    ) -> reqwest::RequestBuilder {
        let mut builder = self
            .client
            .request(method, uri)
            .headers((*self.headers).clone());
        for (name, value) in custom {
            builder = builder.header(name, value);
        }
        if let Some(id) = session_id {
            builder = builder.header(HEADER_SESSION_ID, id);
        }
        if let Some(token) = auth {
            builder = builder.bearer_auth(token);
        }
        builder
    }
}

fn content_type(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.to_ascii_lowercase())
}

fn is_type(ct: Option<&str>, mime: &str) -> bool {
    ct.is_some_and(|ct| ct.split(';').next().unwrap_or("").trim() == mime)
}

/// Read at most `max` bytes of the body.
async fn read_bounded(
    response: reqwest::Response,
    max: usize,
    received: &std::sync::atomic::AtomicU64,
) -> HttpResult<Vec<u8>> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| StreamableHttpError::Client(e.into()))?;
        received.fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::Relaxed);
        if body.len() + chunk.len() > max {
            return Err(StreamableHttpError::Client(PinnedHttpError::TooLarge(max)));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The answer's SSE events, the whole stream bounded by [`MAX_SSE_STREAM`].
fn sse(
    response: reqwest::Response,
    received: Arc<std::sync::atomic::AtomicU64>,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let mut seen = 0usize;
    let bytes = response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(PinnedHttpError::from)?;
        received.fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::Relaxed);
        seen += chunk.len();
        if seen > MAX_SSE_STREAM {
            return Err(PinnedHttpError::TooLarge(MAX_SSE_STREAM));
        }
        Ok(chunk)
    });
    SseStream::from_bytes_stream(bytes).boxed()
}

fn session_header(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get(HEADER_SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

impl StreamableHttpClient for PinnedHttp {
    type Error = PinnedHttpError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        custom: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<StreamableHttpPostResponse> {
        let body = serde_json::to_vec(&message)?;
        let response = self
            .request(
                reqwest::Method::POST,
                &uri,
                session_id.as_deref(),
                auth,
                custom,
            )
            .header(
                reqwest::header::ACCEPT,
                format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
            )
            .header(reqwest::header::CONTENT_TYPE, JSON_MIME_TYPE)
            .body(body)
            .send()
            .await
            .map_err(|e| StreamableHttpError::Client(e.into()))?;
        let status = response.status();
        if matches!(
            status,
            reqwest::StatusCode::ACCEPTED | reqwest::StatusCode::NO_CONTENT
        ) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == reqwest::StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let awaits_nothing = !matches!(message, ClientJsonRpcMessage::Request(_));
        let ct = content_type(&response);
        let session = session_header(&response);
        if !status.is_success() {
            let body = read_bounded(response, MAX_JSON_BODY, &self.received)
                .await
                .unwrap_or_default();
            if is_type(ct.as_deref(), JSON_MIME_TYPE) {
                if let Ok(msg @ ServerJsonRpcMessage::Error(_)) =
                    serde_json::from_slice::<ServerJsonRpcMessage>(&body)
                {
                    return Ok(StreamableHttpPostResponse::Json(msg, session));
                }
            }
            let text: String = String::from_utf8_lossy(&body)
                .chars()
                .take(MAX_ERROR_BODY)
                .collect();
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status}: {text}"),
            )));
        }
        if is_type(ct.as_deref(), EVENT_STREAM_MIME_TYPE) {
            return Ok(StreamableHttpPostResponse::Sse(
                sse(response, self.received.clone()),
                session,
            ));
        }
        if is_type(ct.as_deref(), JSON_MIME_TYPE) {
            let body = read_bounded(response, MAX_JSON_BODY, &self.received).await?;
            return match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                Ok(msg) => Ok(StreamableHttpPostResponse::Json(msg, session)),
                Err(_) if awaits_nothing => Ok(StreamableHttpPostResponse::Accepted),
                Err(e) => Err(StreamableHttpError::Deserialize(e)),
            };
        }
        if awaits_nothing {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        Err(StreamableHttpError::UnexpectedContentType(ct))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth: Option<String>,
        custom: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<()> {
        let response = self
            .request(
                reqwest::Method::DELETE,
                &uri,
                Some(&session_id),
                auth,
                custom,
            )
            .send()
            .await
            .map_err(|e| StreamableHttpError::Client(e.into()))?;
        let status = response.status();
        if status.is_success() || status == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            Ok(())
        } else {
            Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status} on closing the session"),
            )))
        }
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth: Option<String>,
        custom: HashMap<HeaderName, HeaderValue>,
    ) -> HttpResult<BoxStream<'static, Result<Sse, SseError>>> {
        let mut builder = self
            .request(
                reqwest::Method::GET,
                &uri,
                session_id.as_deref(),
                auth,
                custom,
            )
            .header(
                reqwest::header::ACCEPT,
                format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
            );
        if let Some(id) = last_event_id {
            builder = builder.header(HEADER_LAST_EVENT_ID, id);
        }
        let response = builder
            .send()
            .await
            .map_err(|e| StreamableHttpError::Client(e.into()))?;
        let status = response.status();
        if status == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !status.is_success() {
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status} on the event stream"),
            )));
        }
        let ct = content_type(&response);
        if !is_type(ct.as_deref(), EVENT_STREAM_MIME_TYPE) {
            return Err(StreamableHttpError::UnexpectedContentType(ct));
        }
        Ok(sse(response, self.received.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_headers_are_checked_and_sensitive() {
        let client = crate::net::client_builder().build().unwrap();
        let ok = PinnedHttp::new(
            client.clone(),
            &[("Authorization".into(), "Bearer sk-1".into())],
        )
        .unwrap();
        assert!(ok.headers.get("authorization").unwrap().is_sensitive());
        for (name, value) in [
            ("Mcp-Session-Id", "x"),
            ("accept", "x"),
            ("bad name", "x"),
            ("X-Token", "line\nbreak"),
        ] {
            assert!(
                PinnedHttp::new(client.clone(), &[(name.into(), value.into())]).is_err(),
                "{name}"
            );
        }
    }

    #[test]
    fn content_types_are_matched_without_parameters() {
        assert!(is_type(
            Some("application/json; charset=utf-8"),
            JSON_MIME_TYPE
        ));
        assert!(is_type(Some("text/event-stream"), EVENT_STREAM_MIME_TYPE));
        assert!(!is_type(Some("text/html"), JSON_MIME_TYPE));
        assert!(!is_type(None, JSON_MIME_TYPE));
    }
}

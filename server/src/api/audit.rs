//! `GET /v1/audit`: the caller's tenant's audit log (tenant admins),
//! newest first, filtered by time, actor, action and target, paged by a
//! cursor; as JSON, or as JSON lines (`Accept: application/x-ndjson` or
//! `format=jsonl`) for export. The log is [`crate::audit`]'s.

use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::{ApiResult, ErrorBody};
use super::extract::{ApiQuery, Auth};
use crate::app::SharedApp;
use crate::error::Error;
use crate::store::{AuditEventRow, AuditFilter};

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Records older than this cursor (a previous answer's `next_cursor`;
    /// empty: the newest).
    #[param(pattern = "^(|[1-9][0-9]{0,17})$")]
    pub cursor: Option<String>,
    /// Most records, 1 to 1000 (default 50).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// Records at or after this instant (RFC 3339).
    #[param(value_type = Option<String>, format = DateTime)]
    pub from: Option<String>,
    /// Records before this instant (RFC 3339).
    #[param(value_type = Option<String>, format = DateTime)]
    pub to: Option<String>,
    /// Only this actor's records (a principal, or `operator`).
    #[param(max_length = 128)]
    pub actor: Option<String>,
    /// Only this action (`approval.decided`), or a family of them ending in
    /// a dot (`approval.`).
    #[param(max_length = 64)]
    pub action: Option<String>,
    /// Only records about this target (a principal, an approval id, a core…).
    #[param(max_length = 256)]
    pub target: Option<String>,
    /// `json` (default) or `jsonl` (one record a line, for export);
    /// `Accept: application/x-ndjson` asks for JSON lines too.
    #[param(pattern = "^(|json|jsonl)$")]
    pub format: Option<String>,
}

/// One audit record.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditRecord {
    /// The record's place in the tenant's chain (1, 2, …); also its cursor.
    pub id: i64,
    /// Who acted: a principal of the tenant, or `operator` for the server
    /// operator at the command line.
    pub principal: String,
    /// The actor's role then (`member`, `operator`, `admin`, `server`).
    pub role: String,
    /// Where from: `rest`, `console`, `websocket`, `chat:<platform>`, `cli`.
    pub surface: String,
    /// What was done (`token.issued`, `approval.decided`, …).
    pub action: String,
    /// What it was done to.
    pub target: String,
    /// The reason the actor stated, where one is asked for (else empty).
    pub reason: String,
    /// The rest of what was done (never a secret).
    #[schema(value_type = Object)]
    pub detail: serde_json::Value,
    pub at: String,
    /// The hash of the record before it in the chain, and its own.
    pub prev_hash: String,
    pub hash: String,
}

impl From<AuditEventRow> for AuditRecord {
    fn from(r: AuditEventRow) -> Self {
        let detail: serde_json::Value =
            serde_json::from_str(&r.detail).unwrap_or(serde_json::Value::Null);
        Self {
            id: r.seq,
            principal: r.actor,
            role: r.role,
            surface: r.surface,
            action: r.action,
            target: r.target,
            reason: detail["reason"].as_str().unwrap_or_default().to_owned(),
            detail,
            at: crate::time::rfc3339(r.at),
            prev_hash: r.prev_hash,
            hash: r.hash,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AuditLog {
    /// Newest first.
    pub records: Vec<AuditRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Given but empty is not a time either.
fn time(name: &str, v: Option<&str>) -> Result<Option<i64>, Error> {
    v.map(|s| crate::time::parse_rfc3339(name, s))
        .transpose()
        .map_err(Error::Invalid)
}

/// A text filter within its documented length; empty is no filter.
fn text(name: &str, v: Option<String>, max: usize) -> Result<Option<String>, Error> {
    match v {
        Some(s) if s.chars().count() > max => Err(Error::Invalid(format!(
            "`{name}` is longer than {max} characters"
        ))),
        v => Ok(v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())),
    }
}

/// The caller's tenant's audit log (tenant admins), newest first.
#[utoipa::path(get, path = "/v1/audit", tag = "tenant", params(AuditQuery),
    responses(
        (status = 200, description = "A page of records as JSON, or as JSON lines when asked",
            content((AuditLog = "application/json"), (String = "application/x-ndjson"))),
        (status = 400, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list_audit(
    State(app): State<SharedApp>,
    Auth(scope): Auth,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<AuditQuery>,
) -> ApiResult<Response> {
    let lines = match q.format.as_deref().map(str::trim) {
        Some("jsonl") => true,
        Some("json") => false,
        None | Some("") => headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("application/x-ndjson")),
        Some(other) => {
            return Err(Error::Invalid(format!(
                "`format` {:?} is not json or jsonl",
                other.chars().take(20).collect::<String>()
            ))
            .into())
        }
    };
    let limit = q.limit.unwrap_or(50);
    if !(1..=1000).contains(&limit) {
        return Err(Error::Invalid(format!("limit {limit} is not between 1 and 1000")).into());
    }
    let before_seq = match q.cursor.as_deref().filter(|c| !c.is_empty()) {
        Some(c) => Some(
            c.parse::<i64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| Error::Invalid("cursor is not a cursor this server gave".into()))?,
        ),
        None => None,
    };
    let filter = AuditFilter {
        from: time("from", q.from.as_deref())?,
        to: time("to", q.to.as_deref())?,
        actor: text("actor", q.actor, 128)?,
        action: text("action", q.action, 64)?,
        target: text("target", q.target, 256)?,
        before_seq,
    };
    let mut rows = crate::audit::list_for(&app.store, &scope, &filter, limit + 1).await?;
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next_cursor = more
        .then(|| rows.last().map(|r| r.seq.to_string()))
        .flatten();
    let records: Vec<AuditRecord> = rows.into_iter().map(AuditRecord::from).collect();
    if lines {
        let mut body = String::new();
        for r in &records {
            body.push_str(&serde_json::to_string(r).unwrap_or_default());
            body.push('\n');
        }
        let mut resp = ([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response();
        if let Some(c) = next_cursor {
            // JSON lines have no envelope: the next page's cursor is a header.
            if let Ok(v) = c.parse() {
                resp.headers_mut().insert("x-next-cursor", v);
            }
        }
        return Ok(resp);
    }
    Ok(Json(AuditLog {
        records,
        next_cursor,
    })
    .into_response())
}

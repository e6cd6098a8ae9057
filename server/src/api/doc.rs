//! The OpenAPI document: every route's annotation collected in [`ApiDoc`],
//! the statuses every `/v1` route shares added in one place, and what
//! utoipa cannot say (an SSE frame's JSON payload schema) patched in last.

use serde_json::{json, Value};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{Content, HeaderBuilder, ObjectBuilder, Ref, RefOr, ResponseBuilder, Type};
use utoipa::{Modify, OpenApi};

use super::error::ErrorBody;
use super::events::SseEvent;
use super::{
    approvals, audit, budgets, channels, cores, credentials, events, health, packages, principals,
    providers, runs, schedules, search, sessions, stream, tasks, tenant_events, tenant_policy,
    tokens, tools, turns, usage,
};
use crate::wire::events::{Event, EventPayload};

#[derive(OpenApi)]
#[openapi(
    info(title = "demiurge", description = "A multi-tenant host for Demiurge-style Agent Cores. \
        Every error is `{\"error\":{\"code\",\"message\"}}` (the `ErrorBody` schema)."),
    paths(
        health::healthz, health::readyz, health::metrics, health::openapi_json,
        sessions::create_session, sessions::list_sessions, sessions::get_session,
        turns::start_turn, turns::get_turn, turns::cancel_turn,
        events::session_events, stream::session_stream,
        tools::list_tools, tools::list_mcp_connections, turns::call_tool,
        approvals::list_approvals, approvals::decide_approval, approvals::answer_clarification,
        approvals::revoke_session_grants,
        tasks::list_tasks, tasks::get_task, tasks::cancel_task, tasks::task_logs,
        schedules::list_schedules, schedules::get_schedule, schedules::delete_schedule, search::search, audit::list_audit,
        tokens::issue_token, tokens::revoke_tokens,
        principals::list_principals, principals::disable_principal, principals::enable_principal,
        tenant_policy::get_tenant_policy, tenant_policy::put_tenant_policy, usage::get_usage,
        budgets::get_budgets, budgets::put_budget, tenant_events::tenant_events,
        channels::create_account, channels::list_accounts, channels::get_account,
        channels::delete_account, channels::list_pairings, channels::approve_pairing,
        channels::webhook,
        providers::list_provider_keys, providers::put_provider_key, providers::delete_provider_key,
        credentials::list_credentials, credentials::put_credential, credentials::delete_credential,
        cores::list_cores, cores::get_core, cores::get_core_file, cores::put_core_file,
        cores::delete_core_file, cores::list_core_versions, cores::diff_core,
        runs::list_runs, runs::get_run, runs::review_run, runs::promote_run, runs::discard_run,
        packages::list_packages, packages::install_package, packages::uninstall_package,
        packages::sync_repository, packages::add_repository, packages::remove_repository,
    ),
    components(schemas(ErrorBody, Event, EventPayload, SseEvent)),
    modifiers(&BearerAuth, &SharedResponses),
    tags((name = "sessions"), (name = "turns"), (name = "events"), (name = "tools"), (name = "approvals"), (name = "tasks"), (name = "schedules"), (name = "tokens"), (name = "tenant"), (name = "channels"), (name = "cores"), (name = "packages"), (name = "operations"))
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
    }
}

/// The rejections every `/v1` route shares, as named responses
/// (`#/components/responses/…`), and which route gets which.
struct SharedResponses;

/// `(status, component name, description)`.
const SHARED: &[(&str, &str, &str)] = &[
    ("400", "BadRequest", "Malformed request: a path id, query parameter, header or body that does not parse or is out of range"),
    ("401", "Unauthorized", "Missing, invalid, expired or revoked bearer token, or a disabled principal"),
    ("408", "RequestTimeout", "The request took longer than the server's `--request-timeout`"),
    ("413", "PayloadTooLarge", "The body is larger than the server's `--body-limit`"),
    ("415", "UnsupportedMediaType", "The body is not `application/json`"),
    ("429", "RateLimited", "Over the caller's or the client address's rate limit; retry after `Retry-After` seconds"),
];

fn shared_response(code: &str, description: &str) -> utoipa::openapi::Response {
    let mut r = ResponseBuilder::new().description(description).content(
        "application/json",
        Content::new(Some(Ref::from_schema_name("ErrorBody"))),
    );
    match code {
        "401" => {
            r = r.header(
                "WWW-Authenticate",
                HeaderBuilder::new()
                    .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
                    .description(Some("`Bearer`"))
                    .build(),
            )
        }
        "429" => {
            r = r.header(
                "Retry-After",
                HeaderBuilder::new()
                    .schema(Some(
                        ObjectBuilder::new()
                            .schema_type(Type::Integer)
                            .minimum(Some(1)),
                    ))
                    .description(Some("Seconds to wait, at least 1"))
                    .build(),
            )
        }
        _ => {}
    }
    r.build()
}

impl Modify for SharedResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        for (code, name, description) in SHARED {
            components
                .responses
                .insert((*name).into(), RefOr::T(shared_response(code, description)));
        }
        for (path, item) in openapi.paths.paths.iter_mut() {
            if !path.starts_with("/v1/") {
                continue;
            }
            // Streams are exempt from the request timeout.
            let streaming = path.ends_with("/events") || path.ends_with("/stream");
            let ops = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for op in ops.into_iter().flatten() {
                let has_body = op.request_body.is_some();
                let has_params = op.parameters.as_ref().is_some_and(|p| !p.is_empty());
                let mut wanted = vec!["401", "429"];
                if has_body || has_params {
                    wanted.push("400");
                }
                if has_body {
                    wanted.extend(["413", "415"]);
                }
                if !streaming {
                    wanted.push("408");
                }
                for code in wanted {
                    let Some((_, name, _)) = SHARED.iter().find(|(c, _, _)| *c == code) else {
                        continue;
                    };
                    // A route's own description of a status wins.
                    op.responses
                        .responses
                        .entry(code.to_owned())
                        .or_insert_with(|| RefOr::Ref(Ref::from_response_name(*name)));
                }
            }
        }
    }
}

/// What utoipa cannot express: the SSE frame's `data` is JSON of the
/// `Event` schema; a core file path's pattern (a `const`, not a literal);
/// a response's `description`, which OpenAPI 3.1 requires but utoipa 6
/// omits when it is empty (it follows 3.2, where it is optional).
fn patch(doc: &mut Value) {
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for item in paths.values_mut().filter_map(Value::as_object_mut) {
            for op in item.values_mut() {
                let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else {
                    continue;
                };
                for r in responses.values_mut().filter_map(Value::as_object_mut) {
                    if !r.contains_key("$ref") && !r.contains_key("description") {
                        r.insert("description".into(), json!(""));
                    }
                }
            }
        }
        for (path, item) in paths.iter_mut() {
            if !path.starts_with("/v1/cores/") || !path.ends_with("/files/{path}") {
                continue;
            }
            for op in ["get", "put", "delete"] {
                let Some(params) = item.pointer_mut(&format!("/{op}/parameters")) else {
                    continue;
                };
                for p in params.as_array_mut().into_iter().flatten() {
                    if p["name"] == "path" {
                        p["schema"]["pattern"] = json!(cores::FILE_PATTERN);
                    }
                }
            }
        }
    }
    if let Some(data) = doc.pointer_mut("/components/schemas/SseEvent/properties/data") {
        data["contentSchema"] = json!({"$ref": "#/components/schemas/Event"});
    }
    if let Some(revoke) = doc.pointer_mut("/components/schemas/RevokeTokens") {
        revoke["oneOf"] = tokens::revoke_one_of();
    }
    if let Some(script) = doc.pointer_mut("/components/schemas/StartTurn/properties/script") {
        let description = script.get("description").cloned();
        *script = turns::script_schema();
        if let Some(d) = description {
            script["description"] = d;
        }
    }
}

/// The OpenAPI document as pretty JSON (what `demiurge openapi` prints and
/// `GET /openapi.json` serves).
pub fn openapi_document() -> String {
    let mut doc = ApiDoc::openapi();
    // The version is the document's, not the build's, so the checked-in copy stays stable.
    doc.info.version = "1".into();
    let Ok(mut value) = serde_json::to_value(&doc) else {
        return "{}".into();
    };
    patch(&mut value);
    serde_json::to_string_pretty(&value).unwrap_or_else(|_| "{}".into())
}

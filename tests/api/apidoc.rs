//! The API document clients can trust: every rejection is the JSON error
//! envelope, and the OpenAPI document says where each parameter goes and
//! which statuses each route answers.

use serde_json::{json, Value};

use crate::helpers::*;

/// Status, content type and body of a response.
async fn read(r: reqwest::Response) -> (u16, String, Value) {
    let status = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = r.json().await.unwrap_or(Value::Null);
    (status, ct, body)
}

fn assert_envelope(what: &str, got: &(u16, String, Value), status: u16, code: &str) {
    let (st, ct, body) = got;
    assert_eq!(*st, status, "{what}: {body}");
    assert!(
        ct.starts_with("application/json"),
        "{what}: content type {ct}"
    );
    assert_eq!(body["error"]["code"], code, "{what}: {body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{what}: {body}"
    );
}

#[tokio::test]
async fn every_rejection_answers_the_json_error_envelope() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let c = &app.client;

    // Query strings that do not parse (axum's own rejection is text/plain).
    for path in [
        "/v1/sessions?limit=abc",
        "/v1/sessions?limit=-1",
        "/v1/search?limit=x",
        "/v1/tasks/task_00/logs?after=x",
    ] {
        let r = c.get(app.url(path)).bearer_auth(&tok).send().await.unwrap();
        assert_envelope(path, &read(r).await, 400, "invalid_request");
    }
    // A malformed path id.
    let r = c
        .get(app.url("/v1/sessions/not-a-uuid"))
        .bearer_auth(&tok)
        .send()
        .await
        .unwrap();
    assert_envelope("malformed id", &read(r).await, 400, "invalid_request");
    // A body that is not JSON.
    let r = c
        .post(app.url("/v1/sessions"))
        .bearer_auth(&tok)
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_envelope("text body", &read(r).await, 415, "unsupported_media_type");
    // A method the route does not have keeps its `Allow` header.
    let r = c
        .delete(app.url("/v1/sessions"))
        .bearer_auth(&tok)
        .send()
        .await
        .unwrap();
    let allow = r
        .headers()
        .get("allow")
        .map(|v| v.to_str().unwrap().to_owned());
    assert_envelope("DELETE", &read(r).await, 405, "method_not_allowed");
    assert!(allow.is_some_and(|a| a.contains("GET") && a.contains("POST")));
    // An unknown route.
    let r = c.get(app.url("/nowhere")).send().await.unwrap();
    assert_envelope("unknown route", &read(r).await, 404, "not_found");
    // Tool arguments must be an object.
    let (st, b) = app
        .post(
            &tok,
            &format!("/v1/sessions/{sid}/tool-calls"),
            json!({"tool": "tools_list", "arguments": [1]}),
        )
        .await;
    assert_eq!(st, 400, "{b}");
    assert_eq!(b["error"]["code"], "invalid_request");
    // A negative `after` is refused even when `Last-Event-ID` overrides it.
    let r = c
        .get(app.url(&format!("/v1/sessions/{sid}/events?after=-1")))
        .bearer_auth(&tok)
        .header("last-event-id", "0")
        .send()
        .await
        .unwrap();
    assert_envelope("after=-1", &read(r).await, 400, "invalid_request");
}

#[tokio::test]
async fn the_websocket_route_checks_the_token_before_the_handshake() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let url = app.url(&format!("/v1/sessions/{sid}/stream"));
    // No token, no Upgrade: 401, not a complaint about the handshake.
    let r = app.client.get(&url).send().await.unwrap();
    assert_eq!(
        r.headers().get("www-authenticate").unwrap(),
        "Bearer",
        "a 401 names the scheme"
    );
    assert_envelope("no token", &read(r).await, 401, "unauthorized");
    let r = app
        .client
        .get(&url)
        .bearer_auth("nope")
        .send()
        .await
        .unwrap();
    assert_envelope("bad token", &read(r).await, 401, "unauthorized");
    // A valid token but a plain GET: 400 in the envelope.
    let r = app.client.get(&url).bearer_auth(&tok).send().await.unwrap();
    assert_envelope("plain GET", &read(r).await, 400, "invalid_request");
}

#[tokio::test]
async fn the_openapi_document_places_parameters_and_lists_every_status() {
    let out = std::process::Command::new(BIN)
        .arg("openapi")
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let op = |path: &str, method: &str| doc["paths"][path][method].clone();

    // Query parameters are in the query, and optional.
    let list = op("/v1/sessions", "get");
    for p in list["parameters"].as_array().unwrap() {
        assert_eq!(p["in"], "query", "{p}");
        assert_eq!(p["required"], false, "{p}");
    }
    let mut in_path = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            for p in op["parameters"].as_array().into_iter().flatten() {
                if p["in"] == "path" {
                    in_path += 1;
                    assert!(
                        path.contains(&format!("{{{}}}", p["name"].as_str().unwrap())),
                        "{method} {path}: path parameter {} is not in the path",
                        p["name"]
                    );
                }
            }
            // OpenAPI 3.1 requires a description on every response object.
            assert_eq!(doc["openapi"], "3.1.0");
            for (status, r) in op["responses"].as_object().unwrap() {
                assert!(
                    r.get("$ref").is_some() || r["description"].is_string(),
                    "{method} {path} {status} has no description"
                );
            }
            if !path.starts_with("/v1/") {
                continue;
            }
            let responses = op["responses"].as_object().unwrap();
            for status in ["401", "429"] {
                assert!(
                    responses.contains_key(status),
                    "{method} {path} lacks {status}"
                );
            }
            let has_params = op["parameters"].as_array().is_some_and(|p| !p.is_empty());
            if has_params || op.get("requestBody").is_some() {
                assert!(responses.contains_key("400"), "{method} {path} lacks 400");
            }
            if op.get("requestBody").is_some() {
                for status in ["413", "415"] {
                    assert!(
                        responses.contains_key(status),
                        "{method} {path} lacks {status}"
                    );
                }
            }
        }
    }
    assert!(in_path > 10);
    // Shared rejections point at named responses with the error schema.
    assert_eq!(
        doc["components"]["responses"]["Unauthorized"]["content"]["application/json"]["schema"]
            ["$ref"],
        "#/components/schemas/ErrorBody"
    );
    assert!(doc["components"]["responses"]["RateLimited"]["headers"]
        .get("Retry-After")
        .is_some());
    // The SSE stream is typed: each frame's data is an `Event`.
    let sse = &op("/v1/sessions/{id}/events", "get")["responses"]["200"]["content"];
    assert_eq!(
        sse["text/event-stream"]["schema"]["$ref"],
        "#/components/schemas/SseEvent"
    );
    let data = &doc["components"]["schemas"]["SseEvent"]["properties"]["data"];
    assert_eq!(data["contentMediaType"], "application/json");
    assert_eq!(data["contentSchema"]["$ref"], "#/components/schemas/Event");
    // Each event type is one tagged alternative whose `data` has its own schema.
    let schemas = &doc["components"]["schemas"];
    let mut kinds: Vec<&Value> = Vec::new();
    for alt in schemas["EventPayload"]["oneOf"].as_array().unwrap() {
        kinds.push(&alt["properties"]["type"]["enum"][0]);
        // Each payload has its own schema (no clash with an API body's name).
        let name = alt["properties"]["data"]["$ref"]
            .as_str()
            .unwrap()
            .trim_start_matches("#/components/schemas/");
        assert!(name.starts_with("events."), "{name}");
        assert!(schemas.get(name).is_some(), "{name} is missing");
    }
    assert_eq!(
        schemas["events.TurnStarted"]["required"],
        json!(["input"]),
        "turn.started carries the input"
    );
    for kind in [
        "turn.started",
        "message",
        "tool.call",
        "tool.output",
        "tool.result",
        "approval.requested",
        "approval.resolved",
        "clarify.requested",
        "clarify.answered",
        "task.updated",
        "turn.completed",
        "turn.failed",
        "turn.cancelled",
    ] {
        assert!(kinds.contains(&&json!(kind)), "no schema for {kind}");
    }
    let result = &schemas["events.ToolResult"]["properties"]["status"];
    assert_eq!(result["$ref"], "#/components/schemas/ToolStatus");
    // The WebSocket route documents its handshake and its refusals.
    let ws = op("/v1/sessions/{id}/stream", "get");
    for status in ["101", "400", "401", "429"] {
        assert!(
            ws["responses"].get(status).is_some(),
            "stream lacks {status}"
        );
    }
}

//! `web_extract` end to end: a local page reached only because the server
//! operator allows its address (`--url-allow`), driven through a turn by a
//! `script:` message, approved, and turned into markdown; the same page
//! without the allowance is refused before any approval or connection.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::helpers::*;

const PAGE: &str = r#"<!doctype html><html><head><title>Field notes</title>
<script>var leaked = "script-body-must-not-appear";</script><style>p{color:red}</style></head>
<body><h1>Field notes</h1><p>The heron waits at <b>dawn</b>.</p>
<ul><li>first</li><li>second</li></ul></body></html>"#;

/// A local page server counting its requests.
async fn page_server() -> (u16, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let app = axum::Router::new().route(
        "/notes",
        axum::routing::get(move || {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                (
                    [(axum::http::header::CONTENT_TYPE, "text/html; charset=utf-8")],
                    PAGE,
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (port, hits)
}

/// The user text that makes the fake provider call `web_extract`.
fn script_message(url: &str) -> String {
    let steps = json!([
        {"tool_calls": [{"name": "web_extract", "arguments": {"url": url, "max_chars": 5000}}]},
        {"content": "read it"}
    ]);
    format!("script:{steps}")
}

async fn turn_events(app: &TestApp, tok: &str, sid: &str, input: &str, allow: bool) -> Vec<Value> {
    let (_, session) = app.get(tok, &format!("/v1/sessions/{sid}")).await;
    let mut after = session["last_seq"].as_i64().unwrap();
    app.start_turn(tok, sid, json!({"input": input})).await;
    let mut all: Vec<Value> = Vec::new();
    loop {
        let evs = app
            .sse_until(tok, sid, &format!("?after={after}"), None, |e| {
                is_terminal(e) || e["type"] == "approval.requested"
            })
            .await;
        assert!(
            !evs.is_empty(),
            "stalled after {:?}\n{}",
            types(&all),
            app.log()
        );
        after = evs.last().unwrap()["seq"].as_i64().unwrap();
        all.extend(evs);
        let last = all.last().unwrap().clone();
        if is_terminal(&last) {
            return all;
        }
        assert!(allow, "an approval was asked: {last}");
        let id = last["data"]["approval_id"].as_str().unwrap();
        let (st, b) = app
            .post(
                tok,
                &format!("/v1/approvals/{id}"),
                json!({"decision": "allow_once"}),
            )
            .await;
        assert_eq!(st, 200, "{b}");
    }
}

fn tool_result(evs: &[Value]) -> &Value {
    evs.iter()
        .find(|e| e["type"] == "tool.result")
        .unwrap_or_else(|| panic!("no tool.result in {:?}", types(evs)))
}

#[tokio::test]
async fn a_page_the_operator_allows_is_extracted_through_an_approved_turn() {
    for backend in backends() {
        let (port, hits) = page_server().await;
        let app = spawn_with(
            backend,
            Opts::default().env("DEMIURGE_URL_ALLOW", "127.0.0.1/32"),
        )
        .await;
        let tok = app.token("default", "alice");
        let sid = app.create_session(&tok).await;
        let url = format!("http://127.0.0.1:{port}/notes?key=page-secret-123");
        let evs = turn_events(&app, &tok, &sid, &script_message(&url), true).await;
        let t = types(&evs);
        assert_eq!(t.last(), Some(&"turn.completed"), "{backend:?} {t:?}");

        let asked = evs
            .iter()
            .find(|e| e["type"] == "approval.requested")
            .expect("web_extract asks first");
        let origin = format!("http://127.0.0.1:{port}");
        assert_eq!(
            asked["data"]["preview"],
            json!({"origin": origin}),
            "{asked}"
        );
        assert!(!asked.to_string().contains("page-secret-123"), "{asked}");
        assert!(!asked.to_string().contains("/notes"), "{asked}");

        let result = tool_result(&evs);
        assert_eq!(result["data"]["status"], "succeeded", "{result}");
        let text = result["data"]["content"].as_str().unwrap();
        assert!(text.contains("# Field notes"), "{text}");
        assert!(text.contains("**dawn**"), "{text}");
        assert!(!text.contains("script-body-must-not-appear"), "{text}");
        assert!(!text.contains("<p>"), "{text}");
        let data = &result["data"]["data"];
        assert_eq!(data["url"], origin, "{data}");
        assert_eq!(data["addresses"], json!(["127.0.0.1"]), "{data}");
        assert_eq!(data["status"], 200);
        assert_eq!(data["format"], "markdown");
        assert_eq!(data["url_policy"]["allowed"], true);
        assert!(!data.to_string().contains("page-secret-123"), "{data}");
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        // The page's bytes are the call's usage.
        let used = tool_usage(&app, "default", "web_extract").await;
        assert!(used["outbound_bytes"].as_u64().unwrap() > 100, "{used}");

        // The model was handed the page.
        let (_, turn) = app
            .get(
                &tok,
                &format!(
                    "/v1/sessions/{sid}/turns/{}",
                    evs[0]["turn_id"].as_str().unwrap()
                ),
            )
            .await;
        assert_eq!(turn["status"], "completed", "{turn}");
        // The decision is in the log, origin and addresses only.
        let log = app.log();
        assert!(log.contains("url_decision"), "{log}");
        assert!(!log.contains("page-secret-123"));
    }
}

#[tokio::test]
async fn without_the_allowance_the_same_page_is_refused_before_approval() {
    let (port, hits) = page_server().await;
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    for url in [
        format!("http://127.0.0.1:{port}/notes"),
        format!("http://2130706433:{port}/notes"),
        format!("http://[::ffff:127.0.0.1]:{port}/notes"),
        format!("http://localhost:{port}/notes"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://metadata.google.internal/".to_owned(),
    ] {
        let evs = turn_events(&app, &tok, &sid, &script_message(&url), false).await;
        let result = tool_result(&evs);
        assert_eq!(result["data"]["status"], "denied", "{url}: {result}");
        assert!(
            result["data"]["content"]
                .as_str()
                .unwrap()
                .starts_with("URL blocked by Host policy: "),
            "{result}"
        );
        assert_eq!(result["data"]["data"]["executionStarted"], false);
        assert!(!types(&evs).contains(&"approval.requested"));
    }
    assert_eq!(hits.load(Ordering::SeqCst), 0, "a refused page was fetched");
    // `check url` agrees, and honours the same allowance.
    let out = app.cli(&["check", "url", &format!("http://127.0.0.1:{port}/")]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["allowed"].clone(), v["reason"].clone()),
        (json!(false), json!("loopback"))
    );
    let out = app.cli(&[
        "check",
        "url",
        "--url-allow",
        "127.0.0.0/8",
        &format!("http://127.0.0.1:{port}/"),
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["allowed"], true, "{v}");
}

//! Models per core: the Anthropic Messages provider against a local
//! stand-in speaking its documented streaming format (tool use included),
//! a core's `model:` block choosing provider, model, options and step
//! limit, and context kept within the model's window over a long session.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::helpers::*;

const KEY: &str = "sk-ant-test-0123456789abcdef-secret";

/// One request the stand-in received.
#[derive(Clone, Debug)]
struct Seen {
    api_key: Option<String>,
    version: Option<String>,
    body: Value,
    bytes: usize,
}

#[derive(Default)]
struct State {
    replies: Mutex<VecDeque<String>>,
    requests: Mutex<Vec<Seen>>,
}

/// A stand-in for `POST /v1/messages` that streams Server-Sent Events the
/// way Anthropic documents them. Queued replies go first; then a compaction
/// request gets a summary and anything else a short text.
struct Anthropic {
    base_url: String,
    state: Arc<State>,
}

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {}\n\n", e["type"].as_str().unwrap(), e))
        .collect()
}

fn start_events() -> Vec<Value> {
    vec![
        json!({"type": "message_start", "message": {"id": "msg_01", "type": "message", "role": "assistant",
        "model": "claude-stand-in", "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    ]
}

fn text_stream(text: &str) -> String {
    let mut ev = start_events();
    ev.push(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}));
    ev.push(json!({"type": "ping"}));
    let mid = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(0, |(i, _)| i);
    for part in [&text[..mid], &text[mid..]] {
        ev.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": part}}));
    }
    ev.push(json!({"type": "content_block_stop", "index": 0}));
    ev.push(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 5}}));
    ev.push(json!({"type": "message_stop"}));
    sse(&ev)
}

fn tool_stream(id: &str, name: &str, input: Value) -> String {
    let json = input.to_string();
    let mid = json.len() / 2;
    let mut ev = start_events();
    ev.push(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}));
    ev.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me look."}}));
    ev.push(json!({"type": "content_block_stop", "index": 0}));
    ev.push(json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}));
    ev.push(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}));
    for part in [&json[..mid], &json[mid..]] {
        ev.push(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": part}}));
    }
    ev.push(json!({"type": "content_block_stop", "index": 1}));
    ev.push(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 40}}));
    ev.push(json!({"type": "message_stop"}));
    sse(&ev)
}

impl Anthropic {
    async fn start() -> Anthropic {
        use axum::extract::State as S;
        use axum::http::HeaderMap;
        let state = Arc::new(State::default());
        async fn messages(
            S(s): S<Arc<State>>,
            headers: HeaderMap,
            body: axum::body::Bytes,
        ) -> axum::response::Response {
            use axum::response::IntoResponse;
            let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let header = |k: &str| {
                headers
                    .get(k)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            s.requests.lock().unwrap().push(Seen {
                api_key: header("x-api-key"),
                version: header("anthropic-version"),
                body: value.clone(),
                bytes: body.len(),
            });
            let queued = s.replies.lock().unwrap().pop_front();
            let reply = queued.unwrap_or_else(|| {
                let system = value["system"].as_str().unwrap_or_default();
                if system.contains("Summarize the prior conversation") {
                    // A long-winded summary: the host must bound it.
                    text_stream(&format!(
                        "Summary: the user sent numbered notes. {}",
                        "detail ".repeat(600)
                    ))
                } else {
                    text_stream("noted")
                }
            });
            (
                [
                    ("content-type", "text/event-stream"),
                    ("cache-control", "no-cache"),
                ],
                reply,
            )
                .into_response()
        }
        let router = axum::Router::new()
            .route("/v1/messages", axum::routing::post(messages))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await.ok() });
        Anthropic {
            base_url: format!("http://{addr}"),
            state,
        }
    }

    fn push(&self, stream: String) {
        self.state.replies.lock().unwrap().push_back(stream);
    }

    fn requests(&self) -> Vec<Seen> {
        self.state.requests.lock().unwrap().clone()
    }

    /// Server options that offer this stand-in as the `anthropic` provider.
    fn opts(&self, default: bool) -> Opts {
        let o = Opts::default()
            .env("DEMIURGE_ANTHROPIC_BASE_URL", &self.base_url)
            .env("DEMIURGE_ANTHROPIC_API_KEY", KEY);
        if default {
            o.env("DEMIURGE_PROVIDER", "anthropic")
        } else {
            o
        }
    }
}

async fn put_core(app: &TestApp, tok: &str, core: &str, yaml: &str) {
    let r = app
        .client
        .put(app.url(&format!("/v1/cores/{core}/files/agent.yaml")))
        .bearer_auth(tok)
        .header("content-type", "text/plain")
        .body(yaml.to_owned())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
}

#[tokio::test]
async fn an_anthropic_compatible_server_drives_a_tool_using_turn() {
    let standin = Anthropic::start().await;
    standin.push(tool_stream("toolu_01A", "tools_list", json!({})));
    standin.push(text_stream("I can list tools."));
    let app = spawn_with(Backend::Sqlite, standin.opts(true)).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let (_, s) = app.get(&tok, &format!("/v1/sessions/{sid}")).await;
    assert_eq!(s["provider"], "anthropic");
    let tid = app
        .start_turn(&tok, &sid, json!({"input": "what can you do?"}))
        .await;
    let turn = app.wait_turn(&tok, &sid, &tid).await;
    assert_eq!(turn["status"], "completed", "{turn}\n{}", app.log());
    assert_eq!(turn["output"], "I can list tools.");
    let evs = app.sse_until(&tok, &sid, "", None, is_terminal).await;
    assert_eq!(
        types(&evs),
        [
            "turn.started",
            "message",
            "tool.call",
            "tool.result",
            "message",
            "turn.completed"
        ]
    );
    assert_eq!(evs[2]["data"]["call_id"], "toolu_01A");
    assert_eq!(evs[3]["data"]["status"], "succeeded");

    let reqs = standin.requests();
    assert_eq!(reqs.len(), 2);
    for r in &reqs {
        assert_eq!(r.api_key.as_deref(), Some(KEY));
        assert_eq!(r.version.as_deref(), Some("2023-06-01"));
        assert_eq!(r.body["stream"], true);
        assert_eq!(r.body["model"], "claude-sonnet-4-5");
        assert!(r.body["max_tokens"].as_u64().unwrap() > 0);
        assert!(r.body["system"].as_str().unwrap().contains("assistant"));
    }
    let tool = reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "tools_list")
        .expect("tools are sent in Anthropic's shape");
    assert_eq!(tool["input_schema"]["type"], "object");
    // The second request carries the tool use and its result.
    let msgs = reqs[1].body["messages"].as_array().unwrap();
    assert_eq!(
        msgs[0],
        json!({"role": "user", "content": [{"type": "text", "text": "what can you do?"}]})
    );
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(
        msgs[1]["content"][1],
        json!({"type": "tool_use", "id": "toolu_01A", "name": "tools_list", "input": {}})
    );
    assert_eq!(msgs[2]["role"], "user");
    assert_eq!(msgs[2]["content"][0]["type"], "tool_result");
    assert_eq!(msgs[2]["content"][0]["tool_use_id"], "toolu_01A");
    assert!(msgs[2]["content"][0]["content"]
        .as_str()
        .unwrap()
        .contains("tools_list"));
    // The key never reaches the log or the events.
    assert!(!app.log().contains(KEY));
    assert!(!serde_json::to_string(&evs).unwrap().contains(KEY));
    // The streamed usage of both calls is recorded: input from
    // message_start, output as message_delta last counted it.
    let rows = model_usage(&app, "default", 2).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["provider"], "anthropic");
    assert_eq!(rows[0]["model"], "claude-sonnet-4-5");
    assert_eq!(rows[0]["model_calls"], 2);
    assert_eq!(rows[0]["unmetered_calls"], 0);
    assert_eq!(rows[0]["input_tokens"], 20);
    assert_eq!(rows[0]["output_tokens"], 45);
}

#[tokio::test]
async fn a_cores_model_block_chooses_provider_model_options_and_step_limit() {
    let standin = Anthropic::start().await;
    // The server's default stays `fake`; anthropic is offered because its key is set.
    let app = spawn_with(Backend::Sqlite, standin.opts(false)).await;
    let op = app.token_with("default", "olga", "operator", "1h");
    put_core(
        &app,
        &op,
        "claude",
        "schema_version: 1\nagent:\n  id: claude\nruntime:\n  max_model_steps: 2\nmodel:\n  provider: anthropic\n  model_name: claude-test-1\n  model_options:\n    max_tokens: 321\n    temperature: 0.5\ntools:\n  toolsets: [coding, demiurge_control]\n",
    )
    .await;
    put_core(
        &app,
        &op,
        "gpt",
        "schema_version: 1\nagent:\n  id: gpt\nmodel:\n  provider: openai\n",
    )
    .await;
    let (_, s) = app
        .post(&op, "/v1/sessions", json!({"core": "claude"}))
        .await;
    let sid = s["id"].as_str().unwrap().to_owned();
    standin.push(text_stream("hello from the core's model"));
    let tid = app.start_turn(&op, &sid, json!({"input": "hi"})).await;
    let turn = app.wait_turn(&op, &sid, &tid).await;
    assert_eq!(turn["output"], "hello from the core's model", "{turn}");
    let r = standin.requests().pop().unwrap();
    assert_eq!(r.body["model"], "claude-test-1");
    assert_eq!(r.body["max_tokens"], 321);
    assert_eq!(r.body["temperature"], 0.5);

    // The core's step limit (2) ends a model that never stops calling tools.
    for i in 0..3 {
        standin.push(tool_stream(
            &format!("toolu_{i}"),
            "todo",
            json!({"todos": []}),
        ));
    }
    let before = standin.requests().len();
    let tid = app.start_turn(&op, &sid, json!({"input": "loop"})).await;
    let turn = app.wait_turn(&op, &sid, &tid).await;
    assert_eq!(turn["status"], "failed", "{turn}");
    assert_eq!(turn["reason"], "max_model_steps");
    assert_eq!(standin.requests().len() - before, 2);

    // A provider the server does not offer fails the turn with a clear reason.
    let (_, s) = app.post(&op, "/v1/sessions", json!({"core": "gpt"})).await;
    let sid = s["id"].as_str().unwrap().to_owned();
    let tid = app.start_turn(&op, &sid, json!({"input": "hi"})).await;
    let turn = app.wait_turn(&op, &sid, &tid).await;
    assert_eq!(turn["reason"], "provider_unavailable", "{turn}");
    assert!(turn["error"].as_str().unwrap().contains("openai"));
}

#[tokio::test]
async fn a_500_turn_session_stays_within_the_token_budget() {
    const WINDOW: usize = 3000;
    const TURNS: usize = 500;
    for backend in backends() {
        let standin = Anthropic::start().await;
        let app = spawn_with(backend, standin.opts(true)).await;
        let op = app.token_with("default", "olga", "operator", "1h");
        put_core(
            &app,
            &op,
            "notes",
            &format!("schema_version: 1\nagent:\n  id: notes\nmodel:\n  model_options:\n    context_window: {WINDOW}\n    max_tokens: 256\ntools:\n  toolsets: []\n"),
        )
        .await;
        let (_, s) = app
            .post(&op, "/v1/sessions", json!({"core": "notes"}))
            .await;
        let sid = s["id"].as_str().unwrap().to_owned();
        for i in 0..TURNS {
            let input = format!(
                "note {i}: {}",
                "the quick brown fox jumps over the lazy dog ".repeat(6)
            );
            let tid = app.start_turn(&op, &sid, json!({"input": input})).await;
            let turn = app.wait_turn(&op, &sid, &tid).await;
            assert_eq!(turn["status"], "completed", "turn {i}: {turn}");
        }
        let reqs = standin.requests();
        let compactions = reqs
            .iter()
            .filter(|r| {
                r.body["system"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("Summarize the prior conversation")
            })
            .count();
        assert_eq!(reqs.len(), TURNS + compactions);
        assert!(
            compactions >= 10,
            "older turns are compacted ({compactions})"
        );
        // Every request, turns and compactions alike, fits the window: at
        // most three bytes of JSON per token of the window.
        let largest = reqs.iter().map(|r| r.bytes).max().unwrap();
        assert!(
            largest <= WINDOW * 3,
            "{largest} bytes is over the {WINDOW}-token window"
        );
        // The last turn's request has the summary and the latest notes.
        let last = reqs.last().unwrap();
        let text = last.body.to_string();
        assert!(last.body["system"]
            .as_str()
            .unwrap()
            .contains("[CONTEXT COMPACTION - REFERENCE ONLY]"));
        assert!(text.contains(&format!("note {}:", TURNS - 1)));
        assert!(text.contains(&format!("note {}:", TURNS - 2)));
        assert!(
            !text.contains("note 3:"),
            "early notes live on only in the summary"
        );
        // History is kept whole in the store; only the model's view is bounded.
        let (st, hits) = app
            .get(&op, &format!("/v1/search?q=note%203%3A&session={sid}"))
            .await;
        assert_eq!(st, 200);
        assert!(hits.to_string().contains("note 3:"), "{hits}");
    }
}

#[tokio::test]
async fn a_tenant_admins_provider_key_is_sealed_and_serves_only_that_tenant() {
    const TENANT_KEY: &str = "sk-ant-tenant-acme-7f3e9a1b2c";
    for backend in backends() {
        let standin = Anthropic::start().await;
        // The operator offers the endpoint but no key of its own.
        let app = spawn_with(
            backend,
            Opts::default().env("DEMIURGE_ANTHROPIC_BASE_URL", &standin.base_url),
        )
        .await;
        let admin = app.token_with("acme", "ada", "admin", "1h");
        let op = app.token_with("acme", "olga", "operator", "1h");
        let member = app.token("acme", "mia");
        let r = app
            .client
            .put(app.url("/v1/tenant/providers/anthropic"))
            .bearer_auth(&member)
            .json(&json!({"api_key": TENANT_KEY}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403);
        let r = app
            .client
            .put(app.url("/v1/tenant/providers/anthropic"))
            .bearer_auth(&admin)
            .json(&json!({"api_key": TENANT_KEY}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let body = r.text().await.unwrap();
        assert!(!body.contains(TENANT_KEY), "{body}");
        let (st, list) = app.get(&op, "/v1/tenant/providers").await;
        assert_eq!(st, 200);
        assert_eq!(list["providers"][0]["provider"], "anthropic");
        assert_eq!(list["providers"][0]["updated_by"], "ada");
        assert!(!list.to_string().contains(TENANT_KEY));
        assert_eq!(app.get(&member, "/v1/tenant/providers").await.0, 403);
        let (st, _) = app
            .post(&admin, "/v1/tenant/providers/nope", json!({}))
            .await;
        assert_eq!(st, 405);

        let core = "schema_version: 1\nagent:\n  id: claude\nmodel:\n  provider: anthropic\ntools:\n  toolsets: []\n";
        put_core(&app, &admin, "claude", core).await;
        let (_, s) = app
            .post(&member, "/v1/sessions", json!({"core": "claude"}))
            .await;
        let sid = s["id"].as_str().unwrap().to_owned();
        let tid = app.start_turn(&member, &sid, json!({"input": "hi"})).await;
        let turn = app.wait_turn(&member, &sid, &tid).await;
        assert_eq!(turn["status"], "completed", "{turn}");
        let seen = standin.requests();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].api_key.as_deref(), Some(TENANT_KEY));

        // Another tenant with the same core does not get acme's key.
        let globex = app.token_with("globex", "gus", "admin", "1h");
        put_core(&app, &globex, "claude", core).await;
        let (_, s) = app
            .post(&globex, "/v1/sessions", json!({"core": "claude"}))
            .await;
        let gsid = s["id"].as_str().unwrap().to_owned();
        let tid = app.start_turn(&globex, &gsid, json!({"input": "hi"})).await;
        let turn = app.wait_turn(&globex, &gsid, &tid).await;
        assert_eq!(turn["reason"], "provider_unavailable", "{turn}");
        assert_eq!(standin.requests().len(), 1);

        // Sealed at rest, never logged; the server key is private.
        if backend == Backend::Sqlite {
            let needle = TENANT_KEY.as_bytes();
            for file in ["demiurge.db", "demiurge.db-wal"] {
                let Ok(db) = std::fs::read(app.home.join(file)) else {
                    continue;
                };
                assert!(!db.windows(needle.len()).any(|w| w == needle), "{file}");
            }
        }
        assert!(!app.log().contains(TENANT_KEY));
        assert_eq!(mode(&app.home.join("keys/sealing.key")) & 0o777, 0o600);

        // Removed: the tenant's turns on that provider stop.
        let r = app
            .client
            .delete(app.url("/v1/tenant/providers/anthropic"))
            .bearer_auth(&admin)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 204);
        let tid = app
            .start_turn(&member, &sid, json!({"input": "again"}))
            .await;
        let turn = app.wait_turn(&member, &sid, &tid).await;
        assert_eq!(turn["reason"], "provider_unavailable", "{turn}");
    }
}

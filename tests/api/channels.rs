//! Chat channels end to end: the real server, and a local stand-in for each
//! platform's API (an axum server on a free port, reached through the
//! account's `api_base_url` under `--url-allow 127.0.0.1`) that records
//! every request the server makes. Payloads follow the platforms'
//! documented shapes; signatures are computed as the platforms do.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::*;

/// One request the server made to the platform.
#[derive(Debug, Clone)]
pub struct Rec {
    pub at: Instant,
    pub method: String,
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: Value,
    /// The message id the stand-in answered with.
    pub id: u64,
}

/// A scripted answer: status, headers, JSON body.
type Answer = (u16, Vec<(String, String)>, Value);

#[derive(Default)]
pub struct PlatformState {
    /// Scripted answers, used before the default success.
    pub script: Mutex<VecDeque<Answer>>,
    pub requests: Mutex<Vec<Rec>>,
    pub next_id: AtomicU64,
    /// While set, every request gets a 503.
    pub down: AtomicBool,
}

/// A stand-in for a chat platform's API. Its default answer satisfies every
/// platform at once: Telegram reads `result.message_id`, Slack `ok`/`ts`,
/// Discord `id`.
pub struct Platform {
    pub base_url: String,
    pub state: Arc<PlatformState>,
}

impl Platform {
    pub async fn start() -> Platform {
        use axum::body::Bytes;
        use axum::extract::State;
        use axum::http::{HeaderMap, Method, StatusCode, Uri};
        use axum::response::IntoResponse;
        let state = Arc::new(PlatformState::default());
        async fn any(
            State(s): State<Arc<PlatformState>>,
            method: Method,
            uri: Uri,
            headers: HeaderMap,
            body: Bytes,
        ) -> axum::response::Response {
            let id = s.next_id.fetch_add(1, Ordering::SeqCst) + 100;
            let body_json = serde_json::from_slice(&body)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into()));
            s.requests.lock().unwrap().push(Rec {
                at: Instant::now(),
                method: method.to_string(),
                path: uri.path().to_owned(),
                headers: headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_owned()))
                    .collect(),
                body: body_json,
                id,
            });
            if s.down.load(Ordering::SeqCst) {
                return (StatusCode::SERVICE_UNAVAILABLE, "down").into_response();
            }
            if let Some((status, hdrs, body)) = s.script.lock().unwrap().pop_front() {
                let mut resp =
                    (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response();
                for (k, v) in hdrs {
                    resp.headers_mut().insert(
                        axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                        v.parse().unwrap(),
                    );
                }
                return resp;
            }
            axum::Json(json!({"ok": true, "result": {"message_id": id},
                "ts": format!("{id}.000100"), "id": id.to_string()}))
            .into_response()
        }
        let router = axum::Router::new().fallback(any).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, router).await.ok();
        });
        Platform {
            base_url: format!("http://{addr}"),
            state,
        }
    }

    pub fn push(&self, status: u16, headers: &[(&str, &str)], body: Value) {
        self.state.script.lock().unwrap().push_back((
            status,
            headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            body,
        ));
    }

    pub fn requests(&self) -> Vec<Rec> {
        self.state.requests.lock().unwrap().clone()
    }

    /// Wait until `n` recorded requests satisfy `pred`; returns them.
    pub async fn wait(&self, n: usize, what: &str, pred: impl Fn(&Rec) -> bool) -> Vec<Rec> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let got: Vec<Rec> = self.requests().into_iter().filter(|r| pred(r)).collect();
            if got.len() >= n {
                return got;
            }
            if Instant::now() > deadline {
                let all: Vec<(String, Value)> = self
                    .requests()
                    .into_iter()
                    .map(|r| (r.path, r.body))
                    .collect();
                panic!("waited for {n} × {what}; the platform saw {all:#?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A server that may reach the local stand-ins.
pub async fn channel_app(backend: Backend) -> TestApp {
    spawn_with(
        backend,
        Opts {
            args: vec!["--url-allow".into(), "127.0.0.1/32".into()],
            ..Opts::default()
        },
    )
    .await
}

pub fn operator(app: &TestApp) -> String {
    app.token_with("default", "operator", "operator", "1h")
}

pub async fn create_account(app: &TestApp, op: &str, body: Value) -> Value {
    let (st, acct) = app.post(op, "/v1/channels/accounts", body).await;
    assert_eq!(st, 201, "{acct}");
    acct
}

pub async fn post_raw(
    app: &TestApp,
    path: &str,
    headers: &[(&str, String)],
    body: Vec<u8>,
) -> (u16, Value) {
    let mut req = app.client.post(app.url(path)).body(body);
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    let r = req.send().await.unwrap();
    let st = r.status().as_u16();
    (st, r.json().await.unwrap_or(Value::Null))
}

/// `script:` text the fake provider plays (CONTRACT.md).
pub fn script(steps: Value) -> String {
    format!("script:{steps}")
}

pub fn write_file_then(done: &str) -> String {
    script(json!([
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "chat.txt", "content": "hi"}}]},
        {"content": done}
    ]))
}

/// Numbered words, so order and completeness are checkable.
pub fn long_text(words: usize) -> String {
    (0..words)
        .map(|i| format!("w{i:05}"))
        .collect::<Vec<_>>()
        .join(" ")
}

// ------------------------------------------------------------------ Telegram

const TG_TOKEN: &str = "123456:TGsecretBOTtoken";
const TG_SECRET: &str = "tg_webhook_secret-1";

fn tg_message(update_id: i64, user: i64, text: &str) -> Value {
    json!({"update_id": update_id, "message": {"message_id": update_id,
        "from": {"id": user, "is_bot": false, "first_name": "Ada"},
        "chat": {"id": user, "first_name": "Ada", "type": "private"}, "date": 1700000000, "text": text}})
}

fn tg_callback(update_id: i64, user: i64, chat: i64, message_id: u64, data: &str) -> Value {
    json!({"update_id": update_id, "callback_query": {"id": format!("cb{update_id}"),
        "from": {"id": user, "is_bot": false, "first_name": "Ada"},
        "message": {"message_id": message_id, "chat": {"id": chat, "type": "private"}, "date": 1700000000, "text": "card"},
        "chat_instance": "42", "data": data}})
}

async fn tg_post(app: &TestApp, path: &str, secret: Option<&str>, update: &Value) -> u16 {
    let mut headers = vec![("content-type", "application/json".to_owned())];
    if let Some(s) = secret {
        headers.push(("x-telegram-bot-api-secret-token", s.to_owned()));
    }
    post_raw(app, path, &headers, serde_json::to_vec(update).unwrap())
        .await
        .0
}

fn tg_sends(r: &Rec, chat: i64) -> bool {
    r.path == format!("/bot{TG_TOKEN}/sendMessage")
        && r.body["chat_id"].as_str() == Some(chat.to_string().as_str())
}

fn text_of(r: &Rec) -> &str {
    r.body["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn telegram_end_to_end() {
    for backend in backends() {
        let tg = Platform::start().await;
        let app = channel_app(backend).await;
        let op = operator(&app);
        let acct = create_account(
            &app,
            &op,
            json!({"platform": "telegram", "name": "support",
                "credentials": {"bot_token": TG_TOKEN, "secret_token": TG_SECRET},
                "api_base_url": tg.base_url, "allowed_users": ["1001", "1003"]}),
        )
        .await;
        let path = acct["webhook_path"].as_str().unwrap().to_owned();
        assert!(path.starts_with("/v1/channels/telegram/"), "{path}");
        assert!(!acct.to_string().contains("TGsecret") && !acct.to_string().contains(TG_SECRET));
        // Members may not manage accounts; another tenant does not see them.
        let member = app.token("default", "alice");
        assert_eq!(app.get(&member, "/v1/channels/accounts").await.0, 403);
        let other = app.token_with("other", "boss", "operator", "1h");
        let id = acct["id"].as_str().unwrap();
        assert_eq!(
            app.get(&other, &format!("/v1/channels/accounts/{id}"))
                .await
                .0,
            404
        );
        let (_, list) = app.get(&op, "/v1/channels/accounts").await;
        assert_eq!(list["items"].as_array().unwrap().len(), 1);
        assert!(!list.to_string().contains("TGsecret"));

        // Unverified: 401, and nothing happens.
        assert_eq!(
            tg_post(&app, &path, Some("wrong"), &tg_message(1, 1001, "hello")).await,
            401
        );
        assert_eq!(
            tg_post(&app, &path, None, &tg_message(1, 1001, "hello")).await,
            401
        );
        let (_, a) = app.get(&op, &format!("/v1/channels/accounts/{id}")).await;
        assert!(a["status"]["last_inbound_at"].is_null(), "{a}");

        // A message, then the same update again (a platform retry): one turn.
        assert_eq!(
            tg_post(&app, &path, Some(TG_SECRET), &tg_message(1, 1001, "hello")).await,
            200
        );
        assert_eq!(
            tg_post(&app, &path, Some(TG_SECRET), &tg_message(1, 1001, "hello")).await,
            200
        );
        tg.wait(1, "the reply", |r| {
            tg_sends(r, 1001) && text_of(r) == "[fake] hello"
        })
        .await;
        assert_eq!(
            tg_post(&app, &path, Some(TG_SECRET), &tg_message(2, 1001, "second")).await,
            200
        );
        tg.wait(1, "the second reply", |r| {
            tg_sends(r, 1001) && text_of(r) == "[fake] second"
        })
        .await;
        assert_eq!(
            tg.requests()
                .iter()
                .filter(|r| text_of(r) == "[fake] hello")
                .count(),
            1,
            "a duplicated update ran twice"
        );

        // A reply longer than 4,096 characters arrives split, in order.
        let long = long_text(1800); // 10,799 characters
        let steps = script(json!([{"content": long}]));
        assert_eq!(
            tg_post(&app, &path, Some(TG_SECRET), &tg_message(3, 1001, &steps)).await,
            200
        );
        let parts = tg
            .wait(
                demiurge_channels::split::split(&long, demiurge_channels::split::TELEGRAM).len(),
                "every part",
                |r| tg_sends(r, 1001) && text_of(r).starts_with('w'),
            )
            .await;
        assert!(parts
            .iter()
            .all(|p| text_of(p).encode_utf16().count() <= 4096));
        let joined: String = parts.iter().map(text_of).collect();
        assert_eq!(joined, long);

        // A 429 with Retry-After is honoured before the retry.
        tg.push(
            429,
            &[("retry-after", "2")],
            json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 2",
                "parameters": {"retry_after": 2}}),
        );
        assert_eq!(
            tg_post(&app, &path, Some(TG_SECRET), &tg_message(4, 1001, "rate")).await,
            200
        );
        let tries = tg
            .wait(2, "a retried reply", |r| {
                tg_sends(r, 1001) && text_of(r) == "[fake] rate"
            })
            .await;
        let waited = tries[1].at.duration_since(tries[0].at);
        assert!(
            waited >= Duration::from_millis(1900),
            "retried after {waited:?}"
        );

        // An unknown user: one short reply with a pairing code, then silence.
        assert_eq!(
            tg_post(&app, &path, Some(TG_SECRET), &tg_message(5, 2002, "hi")).await,
            200
        );
        let refusal = tg.wait(1, "a pairing code", |r| tg_sends(r, 2002)).await;
        let text = text_of(&refusal[0]).to_owned();
        let code = text
            .split_whitespace()
            .find(|w| {
                w.len() == 8
                    && w.chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
            })
            .unwrap_or_else(|| panic!("no code in {text:?}"))
            .to_owned();
        assert_eq!(
            tg_post(
                &app,
                &path,
                Some(TG_SECRET),
                &tg_message(6, 2002, "hi again")
            )
            .await,
            200
        );
        assert_eq!(
            tg_post(&app, &path, Some(TG_SECRET), &tg_message(7, 1001, "sync")).await,
            200
        );
        tg.wait(1, "a later reply", |r| text_of(r) == "[fake] sync")
            .await;
        assert_eq!(
            tg.requests().iter().filter(|r| tg_sends(r, 2002)).count(),
            1
        );
        // The operator sees the pending pairing (without its code) and approves it.
        let pairings = format!("/v1/channels/accounts/{id}/pairings");
        let (_, pending) = app.get(&op, &pairings).await;
        assert_eq!(pending["items"][0]["platform_user"], "2002", "{pending}");
        assert!(!pending.to_string().contains(&code));
        assert_eq!(
            app.post(&member, &pairings, json!({"code": code})).await.0,
            403
        );
        assert_eq!(
            app.post(&op, &pairings, json!({"code": "AAAAAAAA"}))
                .await
                .0,
            404
        );
        let (st, ok) = app
            .post(&op, &pairings, json!({"code": code.to_lowercase()}))
            .await;
        assert_eq!(st, 200, "{ok}");
        assert_eq!(ok["platform_user"], "2002");
        tg.wait(1, "the paired notice", |r| {
            tg_sends(r, 2002) && text_of(r).contains("paired")
        })
        .await;
        assert_eq!(
            tg_post(&app, &path, Some(TG_SECRET), &tg_message(8, 2002, "now?")).await,
            200
        );
        tg.wait(1, "the paired user's reply", |r| {
            tg_sends(r, 2002) && text_of(r) == "[fake] now?"
        })
        .await;

        // A tool needing approval: a card with an inline keyboard; someone
        // else's press and a stale id are refused clearly; the owner's press
        // decides, and the card is edited to show it.
        let steps = write_file_then("written");
        assert_eq!(
            tg_post(&app, &path, Some(TG_SECRET), &tg_message(9, 1001, &steps)).await,
            200
        );
        let card = tg
            .wait(1, "an approval card", |r| {
                tg_sends(r, 1001) && r.body["reply_markup"].is_object()
            })
            .await
            .remove(0);
        let row = card.body["reply_markup"]["inline_keyboard"][0]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(row.len(), 3);
        assert_eq!(row[0]["text"], "Allow once");
        let allow_once = row[0]["callback_data"].as_str().unwrap().to_owned();
        assert!(text_of(&card).contains("/approve "), "{}", text_of(&card));
        assert_eq!(
            tg_post(
                &app,
                &path,
                Some(TG_SECRET),
                &tg_callback(10, 1003, 1003, card.id, &allow_once)
            )
            .await,
            200
        );
        let foreign = tg
            .wait(1, "a refusal of a foreign press", |r| {
                r.path.ends_with("/answerCallbackQuery") && r.body["callback_query_id"] == "cb10"
            })
            .await;
        assert!(
            foreign[0].body["text"]
                .as_str()
                .unwrap()
                .contains("no pending approval"),
            "{:?}",
            foreign[0].body
        );
        let stale = format!("/approve {}", uuid::Uuid::new_v4());
        assert_eq!(
            tg_post(&app, &path, Some(TG_SECRET), &tg_message(11, 1001, &stale)).await,
            200
        );
        tg.wait(1, "a stale-id reply", |r| {
            tg_sends(r, 1001) && text_of(r).contains("no pending approval")
        })
        .await;
        assert_eq!(
            tg_post(
                &app,
                &path,
                Some(TG_SECRET),
                &tg_callback(12, 1001, 1001, card.id, &allow_once)
            )
            .await,
            200
        );
        let edit = tg
            .wait(1, "the edited card", |r| {
                r.path.ends_with("/editMessageText")
            })
            .await
            .remove(0);
        assert_eq!(edit.body["message_id"], card.id.to_string());
        assert!(
            text_of(&edit).contains("Allowed once"),
            "{}",
            text_of(&edit)
        );
        tg.wait(1, "the tool card", |r| {
            tg_sends(r, 1001) && text_of(r).contains("write_file — succeeded")
        })
        .await;
        tg.wait(1, "the final reply", |r| {
            tg_sends(r, 1001) && text_of(r) == "written"
        })
        .await;

        // Status over REST; metrics per platform.
        let (_, a) = app.get(&op, &format!("/v1/channels/accounts/{id}")).await;
        assert!(a["status"]["last_inbound_at"].is_string(), "{a}");
        assert!(a["status"]["last_delivery_at"].is_string(), "{a}");
        assert!(
            a["status"]["last_error"]
                .as_str()
                .unwrap_or_default()
                .contains("429"),
            "{a}"
        );
        let metrics = app.metrics_text().await;
        assert!(
            metrics.contains("demiurge_channel_rejected_total{platform=\"telegram\"} 2"),
            "{metrics}"
        );
        assert!(
            metrics.contains("demiurge_channel_duplicates_total{platform=\"telegram\"} 1"),
            "{metrics}"
        );

        // The bot token is nowhere in the clear: not in the database, not in the log.
        if backend == Backend::Sqlite {
            assert!(assert_secret_absent(&app.home, "TGsecretBOTtoken", &[]) > 0);
        }
        assert!(!app.log().contains("TGsecretBOTtoken"));

        // Deleting the account stops its webhook.
        let del = app
            .client
            .delete(app.url(&format!("/v1/channels/accounts/{id}")))
            .bearer_auth(&op)
            .send()
            .await
            .unwrap();
        assert_eq!(del.status(), 204);
        assert_eq!(
            tg_post(&app, &path, Some(TG_SECRET), &tg_message(13, 1001, "gone")).await,
            401
        );
    }
}

#[tokio::test]
async fn telegram_reply_survives_a_restart() {
    for backend in backends() {
        let tg = Platform::start().await;
        let app = channel_app(backend).await;
        let op = operator(&app);
        let acct = create_account(
            &app,
            &op,
            json!({"platform": "telegram", "name": "support",
                "credentials": {"bot_token": TG_TOKEN, "secret_token": TG_SECRET},
                "api_base_url": tg.base_url, "allowed_users": ["1001"]}),
        )
        .await;
        let path = acct["webhook_path"].as_str().unwrap().to_owned();
        tg.state.down.store(true, Ordering::SeqCst);
        assert_eq!(
            tg_post(
                &app,
                &path,
                Some(TG_SECRET),
                &tg_message(1, 1001, "persist")
            )
            .await,
            200
        );
        tg.wait(1, "a failed attempt", |r| text_of(r) == "[fake] persist")
            .await;
        // Crash once the failed attempt is on record (its retry is due in
        // seconds); a crash in the middle of an attempt would leave the row
        // leased for LEASE_MS (30 s) instead, which this test does not wait out.
        let id = acct["id"].as_str().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        loop {
            let (_, a) = app.get(&op, &format!("/v1/channels/accounts/{id}")).await;
            if a["status"]["last_error"].is_string() {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no error recorded: {a}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let app = app.restart_after_crash().await;
        tg.state.down.store(false, Ordering::SeqCst);
        let before = tg.requests().len();
        let got = tg
            .wait(2, "the reply after the restart", |r| {
                text_of(r) == "[fake] persist"
            })
            .await;
        assert!(tg.requests().len() > before, "{got:?}");
        // A retry of the update after the restart is still a duplicate.
        assert_eq!(
            tg_post(
                &app,
                &path,
                Some(TG_SECRET),
                &tg_message(1, 1001, "persist")
            )
            .await,
            200
        );
        assert_eq!(
            tg_post(&app, &path, Some(TG_SECRET), &tg_message(2, 1001, "after")).await,
            200
        );
        tg.wait(1, "a later reply", |r| text_of(r) == "[fake] after")
            .await;
        let answered = tg.requests();
        let last_persist = answered
            .iter()
            .rposition(|r| text_of(r) == "[fake] persist")
            .unwrap();
        let after = answered
            .iter()
            .position(|r| text_of(r) == "[fake] after")
            .unwrap();
        assert!(last_persist < after);
    }
}

// --------------------------------------------------------------------- Slack

const SLACK_TOKEN: &str = "xoxb-17-SLACKsecretBOT";
const SLACK_SIGNING: &str = "8f742231b10e8888abcd99yyyzzz85a5";

fn slack_headers(body: &[u8], at: i64, content_type: &str) -> Vec<(&'static str, String)> {
    let mut base = format!("v0:{at}:").into_bytes();
    base.extend_from_slice(body);
    let sig = demiurge_channels::verify::webhook_signature(SLACK_SIGNING, &base).unwrap();
    vec![
        ("content-type", content_type.to_owned()),
        ("x-slack-request-timestamp", at.to_string()),
        ("x-slack-signature", sig.replacen("sha256=", "v0=", 1)),
    ]
}

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

async fn slack_event(app: &TestApp, path: &str, event: &Value) -> (u16, Value) {
    let body = serde_json::to_vec(event).unwrap();
    post_raw(
        app,
        path,
        &slack_headers(&body, now_s(), "application/json"),
        body,
    )
    .await
}

fn slack_message(event_id: &str, user: &str, channel: &str, ts: &str, text: &str) -> Value {
    json!({"token": "Jhj5dZrVaK7ZwHHjRyZWjbDl", "team_id": "T061EG9R6", "api_app_id": "A0PNCHHK2",
        "type": "event_callback", "event_id": event_id, "event_time": 1355517523,
        "event": {"type": "message", "channel": channel, "channel_type": "channel", "user": user,
            "text": text, "ts": ts, "event_ts": ts}})
}

fn slack_in_thread(event_id: &str, user: &str, ts: &str, thread: &str, text: &str) -> Value {
    let mut m = slack_message(event_id, user, "C1", ts, text);
    m["event"]["thread_ts"] = json!(thread);
    m
}

fn slack_posts(r: &Rec, channel: &str) -> bool {
    r.path == "/chat.postMessage" && r.body["channel"] == channel
}

#[tokio::test]
async fn slack_end_to_end() {
    for backend in backends() {
        let slack = Platform::start().await;
        let app = channel_app(backend).await;
        let op = operator(&app);
        let acct = create_account(
            &app,
            &op,
            json!({"platform": "slack", "name": "team",
                "credentials": {"bot_token": SLACK_TOKEN, "signing_secret": SLACK_SIGNING},
                "api_base_url": slack.base_url, "allowed_users": ["U1", "U3"]}),
        )
        .await;
        let path = acct["webhook_path"].as_str().unwrap().to_owned();

        // url_verification, signed; bad and stale signatures are refused.
        let challenge = json!({"token": "Jhj5dZrVaK7ZwHHjRyZWjbDl",
            "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", "type": "url_verification"});
        let (st, b) = slack_event(&app, &path, &challenge).await;
        assert_eq!(
            (st, b["challenge"].clone()),
            (200, challenge["challenge"].clone())
        );
        let body = serde_json::to_vec(&challenge).unwrap();
        let mut forged = slack_headers(&body, now_s(), "application/json");
        forged[2].1 = format!("v0={}", "0".repeat(64));
        assert_eq!(post_raw(&app, &path, &forged, body.clone()).await.0, 401);
        let stale = slack_headers(&body, now_s() - 600, "application/json");
        assert_eq!(post_raw(&app, &path, &stale, body).await.0, 401);

        // A channel message: the reply goes to its thread, with the bot token.
        let msg = slack_message("Ev1", "U1", "C1", "1700000001.000100", "hello");
        assert_eq!(slack_event(&app, &path, &msg).await.0, 200);
        assert_eq!(slack_event(&app, &path, &msg).await.0, 200); // Slack's retry
        let reply = slack
            .wait(1, "the reply", |r| {
                slack_posts(r, "C1") && r.body["text"] == "[fake] hello"
            })
            .await
            .remove(0);
        assert_eq!(reply.body["thread_ts"], "1700000001.000100");
        assert_eq!(
            reply.headers["authorization"],
            format!("Bearer {SLACK_TOKEN}")
        );
        let second = slack_message("Ev2", "U1", "C1", "1700000001.000200", "second");
        assert_eq!(slack_event(&app, &path, &second).await.0, 200);
        slack
            .wait(1, "the second reply", |r| r.body["text"] == "[fake] second")
            .await;
        assert_eq!(
            slack
                .requests()
                .iter()
                .filter(|r| r.body["text"] == "[fake] hello")
                .count(),
            1
        );

        // Longer than a section block: split in order.
        let long = long_text(1000); // 5,999 characters
        let m = slack_message(
            "Ev3",
            "U1",
            "C1",
            "1700000001.000300",
            &script(json!([{"content": long}])),
        );
        assert_eq!(slack_event(&app, &path, &m).await.0, 200);
        let parts = slack
            .wait(
                demiurge_channels::split::split(&long, demiurge_channels::split::SLACK_SECTION)
                    .len(),
                "every part",
                |r| slack_posts(r, "C1") && r.body["text"].as_str().unwrap_or("").starts_with('w'),
            )
            .await;
        assert!(parts
            .iter()
            .all(|p| p.body["text"].as_str().unwrap().chars().count() <= 3000));
        let joined: String = parts
            .iter()
            .map(|p| p.body["text"].as_str().unwrap())
            .collect();
        assert_eq!(joined, long);

        // 429 with Retry-After.
        slack.push(
            429,
            &[("retry-after", "2")],
            json!({"ok": false, "error": "ratelimited"}),
        );
        let m = slack_message("Ev4", "U1", "C1", "1700000001.000400", "rate");
        assert_eq!(slack_event(&app, &path, &m).await.0, 200);
        let tries = slack
            .wait(2, "a retried reply", |r| r.body["text"] == "[fake] rate")
            .await;
        assert!(tries[1].at.duration_since(tries[0].at) >= Duration::from_millis(1900));

        // Unknown user: one reply, then nothing until paired.
        let m = slack_message("Ev5", "U2", "C2", "1700000001.000500", "hi");
        assert_eq!(slack_event(&app, &path, &m).await.0, 200);
        let refusal = slack
            .wait(1, "a pairing code", |r| slack_posts(r, "C2"))
            .await;
        assert!(refusal[0].body["text"]
            .as_str()
            .unwrap()
            .contains("pairing code"));

        // Approval through Block Kit buttons.
        let m = slack_message(
            "Ev6",
            "U1",
            "C1",
            "1700000001.000600",
            &write_file_then("written"),
        );
        assert_eq!(slack_event(&app, &path, &m).await.0, 200);
        let card = slack
            .wait(1, "an approval card", |r| {
                slack_posts(r, "C1") && r.body["blocks"].is_array()
            })
            .await
            .remove(0);
        let buttons = card.body["blocks"][1]["elements"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(buttons.len(), 3);
        let value = buttons[1]["value"].as_str().unwrap(); // Allow for session
        let card_ts = format!("{}.000100", card.id);
        let payload = json!({"type": "block_actions", "user": {"id": "U1", "username": "ada"},
            "api_app_id": "A0PNCHHK2", "token": "x", "container": {"type": "message"},
            "trigger_id": "12321423423.333649436676.d8c1bb837935619ccad0f624c448ffb3",
            "channel": {"id": "C1", "name": "general"},
            "message": {"ts": card_ts, "thread_ts": "1700000001.000600", "text": "card"},
            "response_url": "https://hooks.slack.com/actions/T1/1/x",
            "actions": [{"action_id": "approval_allow_session", "block_id": "b", "value": value,
                "type": "button", "action_ts": "1700000002.000001"}]});
        let form = format!(
            "payload={}",
            url::form_urlencoded::byte_serialize(payload.to_string().as_bytes())
                .collect::<String>()
        );
        let headers = slack_headers(
            form.as_bytes(),
            now_s(),
            "application/x-www-form-urlencoded",
        );
        assert_eq!(
            post_raw(&app, &path, &headers, form.into_bytes()).await.0,
            200
        );
        let update = slack
            .wait(1, "the edited card", |r| r.path == "/chat.update")
            .await
            .remove(0);
        assert_eq!(update.body["ts"], card_ts);
        assert!(update.body["text"]
            .as_str()
            .unwrap()
            .contains("Allowed for the session"));
        assert_eq!(update.body["blocks"], json!([]));
        slack
            .wait(1, "the final reply", |r| r.body["text"] == "written")
            .await;

        // A question in a thread: the next message of the thread answers it.
        let ask = script(json!([
            {"tool_calls": [{"name": "clarify", "arguments": {"question": "Which branch?", "choices": ["main", "dev"]}}]},
            {"content": "thanks"}
        ]));
        let thread = "1700000001.000700";
        let m = slack_message("Ev7", "U1", "C1", thread, &ask);
        assert_eq!(slack_event(&app, &path, &m).await.0, 200);
        let q = slack
            .wait(1, "the question", |r| {
                r.body["text"]
                    .as_str()
                    .unwrap_or("")
                    .contains("Which branch?")
            })
            .await;
        assert!(q[0].body["text"].as_str().unwrap().contains("main / dev"));
        assert_eq!(q[0].body["thread_ts"], thread);
        let answer = slack_in_thread("Ev8", "U1", "1700000001.000800", thread, "dev");
        assert_eq!(slack_event(&app, &path, &answer).await.0, 200);
        slack
            .wait(1, "the turn going on", |r| {
                r.body["text"] == "thanks" && r.body["thread_ts"] == thread
            })
            .await;

        // /stop cancels the running turn (here: waiting on an approval);
        // /new starts a new session for the thread.
        let thread = "1700000001.000900";
        let m = slack_message("Ev9", "U1", "C1", thread, &write_file_then("never"));
        assert_eq!(slack_event(&app, &path, &m).await.0, 200);
        slack
            .wait(2, "a second card", |r| {
                slack_posts(r, "C1") && r.body["blocks"].is_array()
            })
            .await;
        let stop = slack_in_thread("Ev10", "U1", "1700000001.001000", thread, "/stop");
        assert_eq!(slack_event(&app, &path, &stop).await.0, 200);
        slack
            .wait(1, "the stop notice", |r| {
                r.body["text"] == "Stopped." && r.body["thread_ts"] == thread
            })
            .await;
        let new = slack_in_thread("Ev11", "U1", "1700000001.001100", thread, "/new");
        assert_eq!(slack_event(&app, &path, &new).await.0, 200);
        slack
            .wait(1, "the new-session notice", |r| {
                r.body["text"] == "Started a new session." && r.body["thread_ts"] == thread
            })
            .await;
        assert!(!slack.requests().iter().any(|r| r.body["text"] == "never"));

        // Pairing approvals lock after repeated wrong codes.
        let id = acct["id"].as_str().unwrap();
        let pairings = format!("/v1/channels/accounts/{id}/pairings");
        for _ in 0..5 {
            let (st, _) = app.post(&op, &pairings, json!({"code": "ZZZZZZZZ"})).await;
            assert_eq!(st, 404);
        }
        let (st, body) = app.post(&op, &pairings, json!({"code": "ZZZZZZZZ"})).await;
        assert_eq!(st, 429, "{body}");
    }
}

// ------------------------------------------------------------------- Discord

const DISCORD_APP: &str = "123456789012345678";
const DISCORD_TOKEN: &str = "MTk4.DISCORDsecret.bot";

fn discord_key() -> ed25519_dalek::SigningKey {
    ed25519_dalek::SigningKey::from_bytes(&[11u8; 32])
}

async fn discord_post(
    app: &TestApp,
    path: &str,
    body: &Value,
    key: &ed25519_dalek::SigningKey,
) -> (u16, Value) {
    use ed25519_dalek::Signer;
    let bytes = serde_json::to_vec(body).unwrap();
    let ts = now_s().to_string();
    let mut msg = ts.clone().into_bytes();
    msg.extend_from_slice(&bytes);
    let sig = hex::encode(key.sign(&msg).to_bytes());
    post_raw(
        app,
        path,
        &[
            ("content-type", "application/json".into()),
            ("x-signature-ed25519", sig),
            ("x-signature-timestamp", ts),
        ],
        bytes,
    )
    .await
}

fn discord_ask(id: &str, user: &str, text: &str) -> Value {
    json!({"id": id, "application_id": DISCORD_APP, "type": 2, "token": format!("tok{id}"),
        "version": 1, "channel_id": "C9", "guild_id": "G1",
        "member": {"user": {"id": user, "username": "ada"}},
        "data": {"id": "1", "name": "ask", "type": 1, "options": [{"name": "text", "type": 3, "value": text}]}})
}

#[tokio::test]
async fn discord_end_to_end() {
    for backend in backends() {
        let dc = Platform::start().await;
        let app = channel_app(backend).await;
        let op = operator(&app);
        let key = discord_key();
        let acct = create_account(
            &app,
            &op,
            json!({"platform": "discord", "name": "guild",
                "credentials": {"application_id": DISCORD_APP,
                    "public_key": hex::encode(key.verifying_key().to_bytes()), "bot_token": DISCORD_TOKEN},
                "api_base_url": dc.base_url, "allowed_users": ["U1"]}),
        )
        .await;
        let path = acct["webhook_path"].as_str().unwrap().to_owned();
        // PING, signed; a signature by another key is refused.
        let ping = json!({"id": "0", "application_id": DISCORD_APP, "type": 1, "token": "t", "version": 1});
        assert_eq!(
            discord_post(&app, &path, &ping, &key).await,
            (200, json!({"type": 1}))
        );
        let stranger = ed25519_dalek::SigningKey::from_bytes(&[12u8; 32]);
        assert_eq!(discord_post(&app, &path, &ping, &stranger).await.0, 401);

        // /ask: a deferred answer now, the reply replaces it through the interaction.
        let ask = discord_ask("5001", "U1", "hello");
        assert_eq!(
            discord_post(&app, &path, &ask, &key).await,
            (200, json!({"type": 5}))
        );
        assert_eq!(discord_post(&app, &path, &ask, &key).await.0, 200); // duplicate
        let reply = dc
            .wait(1, "the deferred answer", |r| {
                r.body["content"] == "[fake] hello"
            })
            .await
            .remove(0);
        assert_eq!(reply.method, "PATCH");
        assert_eq!(
            reply.path,
            format!("/webhooks/{DISCORD_APP}/tok5001/messages/@original")
        );

        // Longer than 2,000 characters: the first part replaces the deferred
        // answer, the rest follow in order.
        let long = long_text(700); // 4,199 characters
        let ask = discord_ask("5002", "U1", &script(json!([{"content": long}])));
        assert_eq!(discord_post(&app, &path, &ask, &key).await.0, 200);
        let parts = dc
            .wait(
                demiurge_channels::split::split(&long, demiurge_channels::split::DISCORD).len(),
                "every part",
                |r| r.body["content"].as_str().unwrap_or("").starts_with('w'),
            )
            .await;
        assert!(parts
            .iter()
            .all(|p| p.body["content"].as_str().unwrap().encode_utf16().count() <= 2000));
        assert_eq!(
            parts
                .iter()
                .map(|p| p.body["content"].as_str().unwrap())
                .collect::<String>(),
            long
        );
        assert_eq!(parts[0].method, "PATCH");

        // Unknown user: one refusal through the interaction.
        let ask = discord_ask("5003", "U2", "hi");
        assert_eq!(discord_post(&app, &path, &ask, &key).await.0, 200);
        let refusal = dc
            .wait(1, "a refusal", |r| r.path.contains("tok5003"))
            .await;
        assert!(refusal[0].body["content"]
            .as_str()
            .unwrap()
            .contains("pairing code"));

        // Approval with components: the press is answered by editing the card.
        let ask = discord_ask("5004", "U1", &write_file_then("written"));
        assert_eq!(discord_post(&app, &path, &ask, &key).await.0, 200);
        let card = dc
            .wait(1, "an approval card", |r| {
                r.body["components"].is_array() && r.method == "POST"
            })
            .await
            .remove(0);
        let buttons = card.body["components"][0]["components"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(buttons.len(), 3);
        let press = json!({"id": "5005", "application_id": DISCORD_APP, "type": 3, "token": "tok5005",
            "version": 1, "channel_id": "C9", "guild_id": "G1",
            "member": {"user": {"id": "U1", "username": "ada"}},
            "message": {"id": card.id.to_string()},
            "data": {"custom_id": buttons[0]["custom_id"], "component_type": 2}});
        let (st, answer) = discord_post(&app, &path, &press, &key).await;
        assert_eq!(st, 200);
        assert_eq!(answer["type"], 7, "{answer}");
        assert!(
            answer["data"]["content"]
                .as_str()
                .unwrap()
                .contains("Allow once"),
            "{answer}"
        );
        dc.wait(1, "the final reply", |r| r.body["content"] == "written")
            .await;
    }
}

// ------------------------------------------------------------------- Webhook

#[tokio::test]
async fn signed_webhook_end_to_end() {
    for backend in backends() {
        let hook = Platform::start().await;
        let app = channel_app(backend).await;
        let op = operator(&app);
        let secret = "whsec-demiurge-test";
        let acct = create_account(
            &app,
            &op,
            json!({"platform": "webhook", "name": "crm",
                "credentials": {"secret": secret, "callback_url": format!("{}/hook", hook.base_url)},
                "allowed_users": ["u1"]}),
        )
        .await;
        let path = acct["webhook_path"].as_str().unwrap().to_owned();
        let body = serde_json::to_vec(
            &json!({"user": "u1", "conversation": "c1", "text": "hello", "id": "m1"}),
        )
        .unwrap();
        let sig = demiurge_channels::verify::webhook_signature(secret, &body).unwrap();
        let bad = demiurge_channels::verify::webhook_signature("other", &body).unwrap();
        assert_eq!(
            post_raw(&app, &path, &[("x-demiurge-signature", bad)], body.clone())
                .await
                .0,
            401
        );
        let (st, b) = post_raw(
            &app,
            &path,
            &[("x-demiurge-signature", sig.clone())],
            body.clone(),
        )
        .await;
        assert_eq!((st, b["duplicate"].clone()), (202, json!(false)));
        let (_, b) = post_raw(&app, &path, &[("x-demiurge-signature", sig)], body).await;
        assert_eq!(b["duplicate"], true);
        let reply = hook
            .wait(1, "the callback", |r| r.body["text"] == "[fake] hello")
            .await
            .remove(0);
        assert_eq!(reply.path, "/hook");
        let raw = serde_json::to_vec(&reply.body).unwrap();
        // The callback is signed the same way (over the exact bytes sent).
        let expected = demiurge_channels::verify::webhook_signature(secret, &raw).unwrap();
        assert_eq!(reply.headers["x-demiurge-signature"], expected);
        assert_eq!(reply.body["conversation"], "c1");

        // Without --url-allow, a callback to a loopback address is refused by the URL policy.
        let strict = spawn_app(backend).await;
        let op2 = operator(&strict);
        let acct = create_account(
            &strict,
            &op2,
            json!({"platform": "webhook", "name": "crm",
                "credentials": {"secret": secret, "callback_url": format!("{}/strict", hook.base_url)},
                "allowed_users": ["u1"]}),
        )
        .await;
        let path = acct["webhook_path"].as_str().unwrap().to_owned();
        let body =
            serde_json::to_vec(&json!({"user": "u1", "conversation": "c1", "text": "hi"})).unwrap();
        let sig = demiurge_channels::verify::webhook_signature(secret, &body).unwrap();
        assert_eq!(
            post_raw(&strict, &path, &[("x-demiurge-signature", sig)], body)
                .await
                .0,
            202
        );
        let id = acct["id"].as_str().unwrap();
        let mut refused = Value::Null;
        for _ in 0..300 {
            let (_, a) = strict
                .get(&op2, &format!("/v1/channels/accounts/{id}"))
                .await;
            if a["status"]["last_error"].is_string() {
                refused = a;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            refused["status"]["last_error"]
                .as_str()
                .unwrap()
                .contains("URL policy"),
            "{refused}"
        );
        assert!(!hook.requests().iter().any(|r| r.path == "/strict"));
    }
}

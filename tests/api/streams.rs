//! Event streaming over SSE and WebSocket: order, resume without gap or
//! duplicate, and WebSocket authentication.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;

use crate::helpers::*;

async fn run_turns(app: &TestApp, tok: &str, sid: &str, n: usize) {
    for i in 0..n {
        let tid = app
            .start_turn(tok, sid, json!({"input": format!("turn {i}")}))
            .await;
        app.wait_turn(tok, sid, &tid).await;
    }
}

#[tokio::test]
async fn sse_resumes_after_last_event_id_or_after_with_no_gap_or_duplicate() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        let sid = app.create_session(&tok).await;
        run_turns(&app, &tok, &sid, 2).await; // seq 1..=6
        let first = app.sse_until(&tok, &sid, "", None, |e| e["seq"] == 4).await;
        assert_eq!(first.len(), 4);
        // Disconnected; more happens meanwhile.
        run_turns(&app, &tok, &sid, 1).await; // seq 7..=9
        let rest = app
            .sse_until(&tok, &sid, "", Some(4), |e| e["seq"] == 9)
            .await;
        let seqs: Vec<i64> = first
            .iter()
            .chain(&rest)
            .map(|e| e["seq"].as_i64().unwrap())
            .collect();
        assert_eq!(seqs, (1..=9).collect::<Vec<_>>(), "{backend:?}");
        let via_query = app
            .sse_until(&tok, &sid, "?after=7", None, |e| e["seq"] == 9)
            .await;
        assert_eq!(
            via_query
                .iter()
                .map(|e| e["seq"].as_i64().unwrap())
                .collect::<Vec<_>>(),
            [8, 9]
        );
        let r = app
            .client
            .get(app.url(&format!("/v1/sessions/{sid}/events?after=-1")))
            .bearer_auth(&tok)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400);
    }
}

pub(crate) async fn ws_connect(
    app: &TestApp,
    sid: &str,
    query: &str,
    header_token: Option<&str>,
) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    let mut req = format!("ws://{}/v1/sessions/{sid}/stream{query}", app.addr)
        .into_client_request()
        .unwrap();
    if let Some(t) = header_token {
        req.headers_mut()
            .insert("authorization", format!("Bearer {t}").parse().unwrap());
    }
    tokio_tungstenite::connect_async(req).await.unwrap().0
}

pub(crate) async fn ws_read_until(
    ws: &mut tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    until: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut out = Vec::new();
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("event in time");
        match msg {
            Some(Ok(Message::Text(t))) => {
                let v: Value = serde_json::from_str(t.as_str()).unwrap();
                let stop = until(&v);
                out.push(v);
                if stop {
                    return out;
                }
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
            other => panic!("unexpected frame {other:?}"),
        }
    }
}

#[tokio::test]
async fn websocket_streams_a_turn_with_header_auth_and_resumes_by_seq() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        let sid = app.create_session(&tok).await;
        let mut ws = ws_connect(&app, &sid, "", Some(&tok)).await;
        app.start_turn(&tok, &sid, json!({"input": "over websocket"}))
            .await;
        let evs = ws_read_until(&mut ws, is_terminal).await;
        assert_eq!(
            types(&evs),
            ["turn.started", "message", "turn.completed"],
            "{backend:?}"
        );
        assert_eq!(evs[1]["data"]["content"], "[fake] over websocket");
        drop(ws);
        run_turns(&app, &tok, &sid, 1).await; // seq 4..=6 while disconnected
        let mut ws = ws_connect(&app, &sid, "?after=3", Some(&tok)).await;
        let evs = ws_read_until(&mut ws, |e| e["seq"] == 6).await;
        assert_eq!(
            evs.iter()
                .map(|e| e["seq"].as_i64().unwrap())
                .collect::<Vec<_>>(),
            [4, 5, 6]
        );
    }
}

#[tokio::test]
async fn websocket_accepts_a_first_frame_token() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    run_turns(&app, &tok, &sid, 1).await;
    let mut ws = ws_connect(&app, &sid, "", None).await;
    ws.send(Message::Text(
        json!({"type": "auth", "token": tok}).to_string().into(),
    ))
    .await
    .unwrap();
    let evs = ws_read_until(&mut ws, is_terminal).await;
    assert_eq!(evs.len(), 3);
}

async fn expect_close(
    ws: &mut tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
) -> (u16, String) {
    loop {
        match tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("close in time")
        {
            Some(Ok(Message::Close(Some(f)))) => return (u16::from(f.code), f.reason.to_string()),
            Some(Ok(Message::Text(t))) => {
                panic!("no event may reach an unauthenticated socket: {t}")
            }
            Some(Ok(_)) => continue,
            other => panic!("expected a close frame, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn websocket_bad_auth_closes_with_4001_and_foreign_sessions_with_4004() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let bob = app.token("default", "bob");
    let sid = app.create_session(&tok).await;
    let mut ws = ws_connect(&app, &sid, "", Some("garbage")).await;
    let (code, reason) = expect_close(&mut ws).await;
    assert_eq!(code, 4001, "{reason}");
    let mut ws = ws_connect(&app, &sid, "", None).await;
    ws.send(Message::Text(json!({"type": "hello"}).to_string().into()))
        .await
        .unwrap();
    assert_eq!(expect_close(&mut ws).await.0, 4001);
    let mut ws = ws_connect(&app, &sid, "", Some(&bob)).await;
    assert_eq!(expect_close(&mut ws).await.0, 4004);
    let _ = CloseCode::Normal;
}

#[tokio::test]
async fn an_approval_can_be_decided_over_the_websocket() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let mut ws = ws_connect(&app, &sid, "", Some(&tok)).await;
    let script = json!([{"tool_calls": [{"name": "write_file", "arguments": {"path": "ws.txt", "content": "via ws"}}]}, {"content": "ok"}]);
    app.start_turn(&tok, &sid, json!({"input": "go", "script": script}))
        .await;
    let evs = ws_read_until(&mut ws, |e| e["type"] == "approval.requested").await;
    let id = evs.last().unwrap()["data"]["approval_id"]
        .as_str()
        .unwrap()
        .to_owned();
    ws.send(Message::Text(
        json!({"type": "approval", "approval_id": "nope", "decision": "allow_once"})
            .to_string()
            .into(),
    ))
    .await
    .unwrap();
    let err = ws_read_until(&mut ws, |e| e["type"] == "error").await;
    assert!(err.last().unwrap()["message"]
        .as_str()
        .unwrap()
        .contains("approval_id"));
    ws.send(Message::Text(
        json!({"type": "approval", "approval_id": id, "decision": "allow_once"})
            .to_string()
            .into(),
    ))
    .await
    .unwrap();
    let rest = ws_read_until(&mut ws, is_terminal).await;
    let ack = rest
        .iter()
        .find(|e| e["type"] == "approval.ack")
        .expect("an ack frame");
    assert_eq!(ack["state"], "allowed");
    let result = rest.iter().find(|e| e["type"] == "tool.result").unwrap();
    assert_eq!(result["data"]["status"], "succeeded");
    let written = app
        .home
        .join("tenants/default/workspaces/alice/default/ws.txt");
    assert_eq!(std::fs::read_to_string(written).unwrap(), "via ws");
}

#[tokio::test]
async fn events_fan_out_across_instances_sharing_postgres() {
    if !backends().contains(&Backend::Postgres) {
        return;
    }
    let a = spawn_app(Backend::Postgres).await;
    let b = a.spawn_peer().await;
    let tok = a.token("default", "alice");
    let sid = a.create_session(&tok).await;
    // Subscribe on B first, then run the turn on A.
    let (evs, _) = tokio::join!(b.sse_until(&tok, &sid, "", None, is_terminal), async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        a.start_turn(&tok, &sid, json!({"input": "across nodes"}))
            .await
    });
    assert_eq!(types(&evs), ["turn.started", "message", "turn.completed"]);
    assert_eq!(evs[1]["data"]["content"], "[fake] across nodes");
    // And the other way round, over WebSocket on A for a turn run by B.
    let mut ws = ws_connect(&a, &sid, "?after=3", Some(&tok)).await;
    b.start_turn(&tok, &sid, json!({"input": "back again"}))
        .await;
    let evs = ws_read_until(&mut ws, is_terminal).await;
    assert_eq!(
        evs.iter()
            .map(|e| e["seq"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [4, 5, 6]
    );
}

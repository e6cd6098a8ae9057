//! Schedules: `schedule_manage` through a turn creates one, the scheduler
//! runs its prompt as turns of the schedule's session, a deleted schedule
//! runs no more, another principal sees nothing, and with two instances on
//! one database each due time fires once.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::*;

fn fast() -> Opts {
    Opts::default().env("DEMIURGE_SCHEDULE_MIN_INTERVAL", "1s")
}

async fn manage(app: &TestApp, tok: &str, sid: &str, args: Value) -> Value {
    let evs = run_script(
        app,
        tok,
        sid,
        json!([{"tool_calls": [{"name": "schedule_manage", "arguments": args}]},
               {"content": "ok"}]),
        "allow_once",
    )
    .await;
    evs.iter()
        .rev()
        .find(|e| e["type"] == "tool.result")
        .map(|e| e["data"].clone())
        .unwrap_or_else(|| panic!("no tool.result: {evs:?}"))
}

async fn delete(app: &TestApp, tok: &str, path: &str) -> u16 {
    app.client
        .delete(app.url(path))
        .bearer_auth(tok)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Turns started in `sid` so far (waits for a running one to settle).
async fn turns_started(app: &TestApp, tok: &str, sid: &str) -> Vec<Value> {
    let (_, s) = app.get(tok, &format!("/v1/sessions/{sid}")).await;
    let last = s["last_seq"].as_i64().unwrap();
    if last == 0 {
        return vec![];
    }
    let evs = app
        .sse_until(tok, sid, "", None, |e| e["seq"].as_i64() >= Some(last))
        .await;
    evs.into_iter()
        .filter(|e| e["type"] == "turn.started")
        .collect()
}

#[tokio::test]
async fn a_schedule_fires_turns_until_it_is_deleted() {
    for backend in backends() {
        let app = spawn_with(backend, fast()).await;
        let tok = app.token("default", "alice");
        let sid = app.create_session(&tok).await;
        // Refusals first: a broken cron, too frequent, missing prompt.
        for (args, needle) in [
            (
                json!({"action": "create", "schedule": "61 * * * *", "prompt": "p"}),
                "cron",
            ),
            (
                json!({"action": "create", "schedule": "every 100ms", "prompt": "p"}),
                "--schedule-min-interval",
            ),
            (
                json!({"action": "create", "schedule": "0 0 9 * * *", "prompt": "p"}),
                "5",
            ),
        ] {
            let r = manage(&app, &tok, &sid, args.clone()).await;
            assert_eq!(r["status"], "invalid", "{args} {r}");
            assert!(
                r["content"].as_str().unwrap().contains(needle),
                "{args} {r}"
            );
        }
        let r = manage(
            &app,
            &tok,
            &sid,
            json!({"action": "create", "schedule_id": "tick", "schedule": "every 1s",
                   "prompt": "scheduled hello"}),
        )
        .await;
        assert_eq!(r["status"], "succeeded", "{backend:?} {r}");
        let s = &r["content"]["schedule"];
        assert_eq!(s["schedule_id"], "tick");
        assert_eq!(r["content"]["runtime_timezone"], "UTC");
        let run_sid = s["session_id"].as_str().unwrap().to_owned();
        // The prompt runs as a turn of the schedule's session.
        let evs = app
            .sse_until(&tok, &run_sid, "", None, |e| e["type"] == "turn.completed")
            .await;
        let done = evs.last().unwrap();
        assert_eq!(done["type"], "turn.completed", "{evs:?}\n{}", app.log());
        assert_eq!(done["data"]["output"], "[fake] scheduled hello");
        // Listed for the owner, invisible to anyone else.
        let (st, list) = app.get(&tok, "/v1/schedules").await;
        assert_eq!(st, 200, "{list}");
        assert_eq!(list["items"][0]["schedule_id"], "tick");
        assert!(list["items"][0]["run_count"].as_i64().unwrap() >= 1);
        let listed = manage(&app, &tok, &sid, json!({"action": "list"})).await;
        assert_eq!(listed["content"]["count"], 1, "{listed}");
        let bob = app.token("default", "bob");
        let (_, theirs) = app.get(&bob, "/v1/schedules").await;
        assert_eq!(theirs["items"], json!([]));
        let (st, _) = app.get(&bob, "/v1/schedules/tick").await;
        assert_eq!(st, 404);
        assert_eq!(delete(&app, &bob, "/v1/schedules/tick").await, 404);
        let (st, _) = app.get(&tok, "/v1/schedules/no_such").await;
        assert_eq!(st, 404);
        let (st, _) = app.get(&tok, "/v1/schedules/..%2Fx").await;
        assert_eq!(st, 400);
        // Pausing stops runs; deleting ends the schedule for good.
        let paused = manage(
            &app,
            &tok,
            &sid,
            json!({"action": "disable", "schedule_id": "tick"}),
        )
        .await;
        assert_eq!(paused["content"]["schedule"]["enabled"], false, "{paused}");
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = turns_started(&app, &tok, &run_sid).await.len();
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert_eq!(turns_started(&app, &tok, &run_sid).await.len(), before);
        let resumed = manage(
            &app,
            &tok,
            &sid,
            json!({"action": "enable", "schedule_id": "tick"}),
        )
        .await;
        assert_eq!(resumed["content"]["schedule"]["enabled"], true);
        assert_eq!(delete(&app, &tok, "/v1/schedules/tick").await, 200);
        assert_eq!(delete(&app, &tok, "/v1/schedules/tick").await, 404);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let after_delete = turns_started(&app, &tok, &run_sid).await.len();
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert_eq!(
            turns_started(&app, &tok, &run_sid).await.len(),
            after_delete,
            "a deleted schedule fired"
        );
    }
}

#[tokio::test]
async fn two_instances_fire_each_due_time_once() {
    if !backends().iter().any(|b| matches!(b, Backend::Postgres)) {
        return;
    }
    let app = spawn_with(Backend::Postgres, fast()).await;
    let peer = app.spawn_peer().await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let r = manage(
        &app,
        &tok,
        &sid,
        json!({"action": "create", "schedule_id": "both", "schedule": "every 1s",
               "prompt": "once please"}),
    )
    .await;
    assert_eq!(r["status"], "succeeded", "{r}");
    let run_sid = r["content"]["schedule"]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(delete(&peer, &tok, "/v1/schedules/both").await, 200);
    let elapsed = start.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = turns_started(&app, &tok, &run_sid).await.len() as f64;
    // One run per second at most (plus the edges); both instances firing
    // every due time would give about twice as many.
    assert!(
        started >= 2.0 && started <= elapsed + 2.0,
        "{started} runs in {elapsed:.1}s"
    );
}

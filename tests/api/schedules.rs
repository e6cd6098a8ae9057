//! Schedules are files of a core's `schedules/` folder: `schedule_manage`
//! through a turn writes one (a new core revision) and records its owner,
//! the scheduler runs its prompt as a turn of a fresh session of the owner
//! at each due time until it is paused or deleted, a file written or
//! changed another way is listed but runs as nobody, a broken file is
//! listed with its error and never runs, and with two instances on one database each due time
//! fires once.

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

async fn put(app: &TestApp, tok: &str, path: &str, body: &str) -> u16 {
    app.client
        .put(app.url(path))
        .bearer_auth(tok)
        .header("content-type", "text/plain")
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// The ids of the sessions runs of schedule `id` took their turns in.
async fn run_sessions(app: &TestApp, tok: &str, id: &str) -> Vec<String> {
    let (st, page) = app.get(tok, "/v1/sessions?limit=200").await;
    assert_eq!(st, 200, "{page}");
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["title"] == format!("schedule {id}"))
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

fn listed<'a>(list: &'a Value, id: &str) -> Option<&'a Value> {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["schedule_id"] == id)
}

#[tokio::test]
async fn a_schedule_fires_turns_in_fresh_sessions_until_it_is_deleted() {
    for backend in backends() {
        let app = spawn_with(backend, fast()).await;
        let tok = app.token("default", "alice");
        let sid = app.create_session(&tok).await;
        // Refusals first: a broken cron, too frequent, six fields.
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
        assert_eq!(s["owner"], "alice");
        assert_eq!(r["content"]["path"], "agent/schedules/tick.yaml");
        assert_eq!(r["content"]["runtime_timezone"], "UTC");
        // The file is the original format, in the core.
        let file = app
            .client
            .get(app.url("/v1/cores/assistant/files/agent/schedules/tick.yaml"))
            .bearer_auth(&tok)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            file.contains("schedule: every 1s") && file.contains("prompt: scheduled hello"),
            "{file}"
        );
        // The prompt runs as a turn of a fresh session of the owner.
        let first = loop {
            if let Some(s) = run_sessions(&app, &tok, "tick").await.pop() {
                break s;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert_ne!(first, sid);
        let evs = app
            .sse_until(&tok, &first, "", None, |e| e["type"] == "turn.completed")
            .await;
        let done = evs.last().unwrap();
        assert_eq!(done["type"], "turn.completed", "{evs:?}\n{}", app.log());
        assert_eq!(done["data"]["output"], "[fake] scheduled hello");
        // Listed over REST, with its owner; bob sees it but cannot end it.
        let (st, list) = app.get(&tok, "/v1/schedules").await;
        assert_eq!(st, 200, "{list}");
        let tick = listed(&list, "tick").unwrap();
        assert_eq!(tick["core_id"], "assistant");
        assert_eq!(tick["owner"], "alice");
        assert!(tick["run_count"].as_i64().unwrap() >= 1, "{tick}");
        // The latest run: claimed, then started (a new one may be claimed now).
        assert!(
            ["claimed", "started"].contains(&tick["last_status"].as_str().unwrap()),
            "{tick}"
        );
        assert!(tick["last_session_id"].is_string(), "{tick}");
        let listed_tool = manage(&app, &tok, &sid, json!({"action": "list"})).await;
        assert_eq!(listed_tool["content"]["count"], 1, "{listed_tool}");
        let bob = app.token("default", "bob");
        assert!(run_sessions(&app, &bob, "tick").await.is_empty());
        assert_eq!(delete(&app, &bob, "/v1/schedules/tick").await, 404);
        let (st, _) = app.get(&tok, "/v1/schedules/no_such").await;
        assert_eq!(st, 404);
        let (st, _) = app.get(&tok, "/v1/schedules/..%2Fx").await;
        assert_eq!(st, 400);
        let (st, _) = app.get(&tok, "/v1/schedules?core=no_such_core").await;
        assert_eq!(st, 404);
        let other = app.token("other", "alice");
        let (_, theirs) = app.get(&other, "/v1/schedules").await;
        assert!(listed(&theirs, "tick").is_none(), "{theirs}");
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
        let before = run_sessions(&app, &tok, "tick").await.len();
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert_eq!(run_sessions(&app, &tok, "tick").await.len(), before);
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
        let after_delete = run_sessions(&app, &tok, "tick").await.len();
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert_eq!(
            run_sessions(&app, &tok, "tick").await.len(),
            after_delete,
            "a deleted schedule fired"
        );
    }
}

#[tokio::test]
async fn files_written_elsewhere_are_listed_and_run_only_once_owned() {
    for backend in backends() {
        let app = spawn_with(backend, fast()).await;
        let op = app.token_with("default", "olga", "operator", "1h");
        let sid = app.create_session(&op).await;
        for (name, body) in [
            ("broken", "schedule: \"61 * * * *\"\nprompt: never\n"),
            ("plain", "schedule: every 1s\nprompt: ownerless\n"),
            ("hasty", "schedule: every 100ms\nprompt: too often\n"),
        ] {
            let path = format!("/v1/cores/assistant/files/agent/schedules/{name}.yaml");
            assert_eq!(put(&app, &op, &path, body).await, 200, "{}", app.log());
        }
        let (st, list) = app.get(&op, "/v1/schedules?core=assistant").await;
        assert_eq!(st, 200, "{list}");
        let broken = listed(&list, "broken").unwrap();
        assert!(
            broken["error"].as_str().unwrap().contains("cron"),
            "{broken}"
        );
        assert_eq!(broken["enabled"], Value::Null);
        let plain = listed(&list, "plain").unwrap();
        assert_eq!(plain["owner"], Value::Null, "{plain}");
        assert!(plain["owner_reason"].as_str().unwrap().contains("nobody"));
        assert_eq!(plain["next_run_at"], Value::Null);
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert!(run_sessions(&app, &op, "plain").await.is_empty());
        assert!(run_sessions(&app, &op, "broken").await.is_empty());
        // A broken file cannot be updated, only deleted.
        let r = manage(
            &app,
            &op,
            &sid,
            json!({"action": "update", "schedule_id": "broken", "prompt": "q"}),
        )
        .await;
        assert_eq!(r["status"], "invalid", "{r}");
        // Owning one that runs more often than this host allows is refused.
        let r = manage(
            &app,
            &op,
            &sid,
            json!({"action": "enable", "schedule_id": "hasty"}),
        )
        .await;
        assert_eq!(r["status"], "invalid", "{r}");
        assert!(
            r["content"]
                .as_str()
                .unwrap()
                .contains("--schedule-min-interval"),
            "{r}"
        );
        // Enabling through the tool makes the caller its owner: it runs.
        let r = manage(
            &app,
            &op,
            &sid,
            json!({"action": "enable", "schedule_id": "plain"}),
        )
        .await;
        assert_eq!(r["content"]["schedule"]["owner"], "olga", "{r}");
        let run = loop {
            if let Some(s) = run_sessions(&app, &op, "plain").await.pop() {
                break s;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let evs = app
            .sse_until(&op, &run, "", None, |e| e["type"] == "turn.completed")
            .await;
        assert_eq!(evs.last().unwrap()["data"]["output"], "[fake] ownerless");
        // Changed through the core API afterwards: it runs as nobody again.
        let path = "/v1/cores/assistant/files/agent/schedules/plain.yaml";
        let body = "schedule: every 1s\nprompt: swapped\n";
        assert_eq!(put(&app, &op, path, body).await, 200);
        let (_, list) = app.get(&op, "/v1/schedules").await;
        let plain = listed(&list, "plain").unwrap();
        assert_eq!(plain["owner"], Value::Null, "{plain}");
        assert!(
            plain["owner_reason"].as_str().unwrap().contains("changed"),
            "{plain}"
        );
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let before = run_sessions(&app, &op, "plain").await.len();
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert_eq!(run_sessions(&app, &op, "plain").await.len(), before);
        let r = manage(
            &app,
            &op,
            &sid,
            json!({"action": "delete", "schedule_id": "broken"}),
        )
        .await;
        assert_eq!(r["status"], "succeeded", "{r}");
        let (_, list) = app.get(&op, "/v1/schedules").await;
        assert!(listed(&list, "broken").is_none(), "{list}");
        assert_eq!(delete(&app, &op, "/v1/schedules/plain").await, 200);
    }
}

#[tokio::test]
async fn two_instances_fire_each_due_time_once() {
    if !backends().iter().any(|b| matches!(b, Backend::Postgres)) {
        return;
    }
    let app = spawn_with(Backend::Postgres, fast()).await;
    // Both read the schedule file from the shared agents trees.
    let peer = app.spawn_peer_sharing_home().await;
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
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(delete(&peer, &tok, "/v1/schedules/both").await, 200);
    let elapsed = start.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = run_sessions(&app, &tok, "both").await.len() as f64;
    // One run per second at most (plus the edges); both instances firing
    // every due time would give about twice as many.
    assert!(
        started >= 2.0 && started <= elapsed + 2.0,
        "{started} runs in {elapsed:.1}s"
    );
}

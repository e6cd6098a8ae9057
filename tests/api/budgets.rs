//! Budgets end to end, on SQLite and PostgreSQL: a tenant that spends its
//! limit has its next turn stop with `budget_exceeded` before any model
//! call, while another tenant keeps working; raising the budget lets turns
//! run again; members cannot change budgets; the operator's ceiling bounds
//! the admin's; a principal's own budget stops only that principal; two
//! instances on one PostgreSQL enforce one budget.

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::*;

async fn put_budget(app: &TestApp, tok: &str, body: Value) -> (u16, Value) {
    let r = app
        .client
        .put(app.url("/v1/budgets"))
        .bearer_auth(tok)
        .json(&body)
        .send()
        .await
        .unwrap();
    let st = r.status().as_u16();
    (st, r.json().await.unwrap_or(Value::Null))
}

/// Run one plain turn to its end: (status, the turn.failed reason if any).
async fn turn(app: &TestApp, tok: &str, sid: &str, input: &str) -> (String, Option<String>) {
    let tid = app.start_turn(tok, sid, json!({"input": input})).await;
    let t = app.wait_turn(tok, sid, &tid).await;
    let status = t["status"].as_str().unwrap().to_owned();
    let evs = app
        .sse_until(tok, sid, "", None, |e| {
            is_terminal(e) && e["turn_id"] == tid.as_str()
        })
        .await;
    let failed = evs
        .iter()
        .rev()
        .find(|e| e["type"] == "turn.failed" && e["turn_id"] == tid.as_str())
        .map(|e| {
            let msg = e["data"]["error"].as_str().unwrap_or_default();
            assert!(
                e["data"]["reason"] != "budget_exceeded" || msg.contains("budget"),
                "{e}"
            );
            e["data"]["reason"].as_str().unwrap().to_owned()
        });
    (status, failed)
}

/// Wait until the tenant's recorded tokens today reach `at_least`.
async fn spent_tokens(app: &TestApp, admin: &str, at_least: u64) -> u64 {
    for _ in 0..200 {
        let (st, b) = app.get(admin, "/v1/budgets").await;
        assert_eq!(st, 200, "{b}");
        let n = b["spent"]["tokens_today"].as_u64().unwrap();
        if n >= at_least {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("spend never reached {at_least} tokens");
}

/// The tenant's admin stream as one JSON page.
async fn tenant_events(app: &TestApp, tok: &str) -> Vec<Value> {
    let (st, b) = app.get(tok, "/v1/tenant/events").await;
    assert_eq!(st, 200, "{b}");
    b["events"].as_array().unwrap().clone()
}

/// Wait until the admin stream holds a warning, then a moment more (for any
/// duplicate to show), and return the stream.
async fn settled_warnings(app: &TestApp, tok: &str) -> Vec<Value> {
    for _ in 0..100 {
        if !tenant_events(app, tok).await.is_empty() {
            tokio::time::sleep(Duration::from_millis(500)).await;
            return tenant_events(app, tok).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no warning reached the tenant's admin stream");
}

#[tokio::test]
async fn a_spent_budget_stops_the_next_turn_and_only_that_tenant() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let admin = app.token_with("acme", "boss", "admin", "1h");
        let alice = app.token("acme", "alice");
        let bob = app.token("other", "bob");

        // Nothing set: nothing limited.
        let (st, b) = app.get(&admin, "/v1/budgets").await;
        assert_eq!(st, 200, "{b}");
        assert_eq!(b["tenant"], "acme");
        assert_eq!(b["lines"], json!([]));
        assert!(b["warning"].is_null());

        // One token a day: the first turn runs (nothing spent yet), the next stops.
        let (st, b) = put_budget(&app, &admin, json!({"limits": {"tokens_per_day": 1}})).await;
        assert_eq!(st, 200, "{b}");
        assert_eq!(b["effective"]["tokens_per_day"], 1);
        // An admin follows the tenant's admin stream live.
        let live = tokio::spawn(read_sse(
            app.client.clone(),
            app.url("/v1/tenant/events"),
            admin.clone(),
            None,
            |e| e["type"] == "budget.warning",
        ));
        let sid = app.create_session(&alice).await;
        assert_eq!(
            turn(&app, &alice, &sid, "first").await,
            ("completed".into(), None)
        );
        spent_tokens(&app, &admin, 1).await;
        let (status, reason) = turn(&app, &alice, &sid, "second").await;
        assert_eq!(status, "failed");
        assert_eq!(reason.as_deref(), Some("budget_exceeded"));

        // The warning reached the stream live, once, and stays readable.
        let seen = live.await.unwrap();
        let warning = seen.last().expect("a live warning");
        assert_eq!(warning["type"], "budget.warning", "{seen:?}");
        assert_eq!(warning["data"]["name"], "tokens_per_day");
        assert_eq!(warning["data"]["level"], 100);
        assert_eq!(warning["data"]["limit"], 1.0);
        assert!(warning["data"]["principal"].is_null());
        let stored = settled_warnings(&app, &admin).await;
        assert_eq!(stored.len(), 1, "{stored:?}");
        assert_eq!(stored[0], *warning);
        // Resuming after it gives nothing more.
        let (_, after) = app
            .get(
                &admin,
                &format!("/v1/tenant/events?after={}", warning["seq"]),
            )
            .await;
        assert_eq!(after["events"], json!([]), "{after}");
        // Members are refused; another tenant's admin sees none of it.
        let (st, e) = app.get(&alice, "/v1/tenant/events").await;
        assert_eq!(st, 403, "{e}");
        let other_admin = app.token_with("other", "root", "admin", "1h");
        assert!(tenant_events(&app, &other_admin).await.is_empty());
        // No model call was made for it: the spend did not move.
        let (_, b) = app.get(&admin, "/v1/budgets").await;
        let (_, usage) = app.get(&admin, "/v1/usage").await;
        let calls: u64 = usage["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["model_calls"].as_u64().unwrap())
            .sum();
        assert_eq!(calls, 1, "{usage}");
        assert_eq!(b["warning"], 100, "{b}");
        assert_eq!(b["lines"][0]["name"], "tokens_per_day");
        assert_eq!(b["lines"][0]["remaining"], 0.0);

        // /metrics says so.
        let metrics = app.metrics_text().await;
        assert!(
            metrics.contains("demiurge_budget_warning_level{tenant=\"acme\"} 100"),
            "{metrics}"
        );
        assert!(
            metrics.contains("demiurge_budget_refusals_total{tenant=\"acme\"} 1"),
            "{metrics}"
        );
        assert!(app.log().contains("budget warning"));

        // Another tenant keeps working.
        let bsid = app.create_session(&bob).await;
        assert_eq!(
            turn(&app, &bob, &bsid, "hi").await,
            ("completed".into(), None)
        );

        // Members can neither read nor change budgets.
        let (st, _) = app.get(&alice, "/v1/budgets").await;
        assert_eq!(st, 403);
        let (st, e) =
            put_budget(&app, &alice, json!({"limits": {"tokens_per_day": 1000000}})).await;
        assert_eq!(st, 403, "{e}");

        // Raised: turns run again.
        let (st, _) =
            put_budget(&app, &admin, json!({"limits": {"tokens_per_day": 1000000}})).await;
        assert_eq!(st, 200);
        assert_eq!(
            turn(&app, &alice, &sid, "third").await,
            ("completed".into(), None)
        );

        // A principal's own budget stops that principal only.
        let (st, b) = put_budget(
            &app,
            &admin,
            json!({"principal": "alice", "limits": {"tool_calls_per_day": 0}}),
        )
        .await;
        assert_eq!(st, 200, "{b}");
        assert_eq!(b["principals"][0]["principal"], "alice");
        let (status, reason) = turn(&app, &alice, &sid, "fourth").await;
        assert_eq!(
            (status.as_str(), reason.as_deref()),
            ("failed", Some("budget_exceeded"))
        );
        let carol = app.token("acme", "carol");
        let csid = app.create_session(&carol).await;
        assert_eq!(
            turn(&app, &carol, &csid, "hello").await,
            ("completed".into(), None)
        );
        // Removed (no limit at all): alice works again.
        let (st, b) = put_budget(&app, &admin, json!({"principal": "alice", "limits": {}})).await;
        assert_eq!(st, 200, "{b}");
        assert_eq!(b["principals"], json!([]));
        assert_eq!(
            turn(&app, &alice, &sid, "fifth").await,
            ("completed".into(), None)
        );

        // The operator's ceiling bounds the admin's budget.
        let out = app.cli(&[
            "budget",
            "ceiling",
            "--tenant",
            "acme",
            "--tokens-per-day",
            "5000",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (st, e) = put_budget(&app, &admin, json!({"limits": {"tokens_per_day": 6000}})).await;
        assert_eq!(st, 400, "{e}");
        assert!(
            e["error"]["message"].as_str().unwrap().contains("ceiling"),
            "{e}"
        );
        let (st, e) =
            put_budget(&app, &admin, json!({"limits": {"cpu_seconds_per_day": 10}})).await;
        assert_eq!(st, 400, "{e}");
        let (st, b) = put_budget(&app, &admin, json!({"limits": {"tokens_per_day": 4000}})).await;
        assert_eq!(st, 200, "{b}");
        assert_eq!(b["ceiling"]["tokens_per_day"], 5000);
        // The operator reads what the admin sees.
        let out = app.cli(&["budget", "show", "--tenant", "acme"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(shown["ceiling"]["tokens_per_day"], 5000);
        assert_eq!(shown["budget"]["tokens_per_day"], 4000);

        // Bad input is a 400 that says what.
        for body in [
            json!({"limits": {"tokens_per_day": -1}}),
            json!({"limits": {"cost_per_day": "lots"}}),
            json!({"limits": {"weekly": 3}}),
            json!({"principal": "no such/name", "limits": {"tokens_per_day": 1}}),
        ] {
            let (st, e) = put_budget(&app, &admin, body.clone()).await;
            assert_eq!(st, 400, "{body}: {e}");
        }
    }
}

#[tokio::test]
async fn two_instances_on_one_postgresql_enforce_one_budget() {
    if !backends().contains(&Backend::Postgres) {
        return;
    }
    let a = spawn_app(Backend::Postgres).await;
    let b = a.spawn_peer().await;
    let admin = a.token_with("acme", "boss", "admin", "1h");
    let alice = a.token("acme", "alice");
    let (st, _) = put_budget(&a, &admin, json!({"limits": {"tokens_per_day": 1}})).await;
    assert_eq!(st, 200);
    // Spent on A ...
    let sid = a.create_session(&alice).await;
    assert_eq!(
        turn(&a, &alice, &sid, "on a").await,
        ("completed".into(), None)
    );
    spent_tokens(&a, &admin, 1).await;
    // ... refused on B, once B's view is current (within seconds).
    let sid_b = b.create_session(&alice).await;
    let mut stopped = false;
    for _ in 0..20 {
        let (status, reason) = turn(&b, &alice, &sid_b, "on b").await;
        if reason.as_deref() == Some("budget_exceeded") {
            assert_eq!(status, "failed");
            stopped = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(stopped, "instance B never enforced the budget spent on A");
    // Both instances saw the limit spent; the warning was put on the
    // stream once, and either instance serves it.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let on_a = settled_warnings(&a, &admin).await;
    assert_eq!(on_a.len(), 1, "{on_a:?}");
    assert_eq!(on_a, settled_warnings(&b, &admin).await);
}

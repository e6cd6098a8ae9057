//! History search: full text over message text (not JSON), ranked, in
//! message order within a session; browse and one-session modes; owner
//! isolation between principals and tenants; the operator's audited
//! tenant-wide search; the model's `session_search`.

use serde_json::{json, Value};

use crate::helpers::*;

async fn say(app: &TestApp, tok: &str, sid: &str, text: &str) {
    let tid = app.start_turn(tok, sid, json!({"input": text})).await;
    app.wait_turn(tok, sid, &tid).await;
}

fn hits(r: &Value) -> Vec<(String, String)> {
    r["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results: {r}"))
        .iter()
        .map(|h| {
            (
                h["session_id"].as_str().unwrap().to_owned(),
                h["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn full_text_is_ranked_over_text_and_stays_with_its_owner() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let alice = app.token("default", "alice");
        let bob = app.token("default", "bob");
        let other = app.token("acme", "alice");
        let s1 = app.create_session(&alice).await;
        let s2 = app.create_session(&alice).await;
        let sb = app.create_session(&bob).await;
        say(&app, &alice, &s1, "we deploy the api to staging on fridays").await;
        say(&app, &alice, &s2, "deploy deploy deploy").await;
        say(&app, &alice, &s2, "unrelated words here").await;
        say(&app, &bob, &sb, "bob will deploy too").await;
        let so = app.create_session(&other).await;
        say(&app, &other, &so, "deploy in another tenant").await;

        let (st, r) = app.get(&alice, "/v1/search?q=DEPLOY").await;
        assert_eq!(st, 200, "{r}");
        let h = hits(&r);
        // The fake provider answers "[fake] <input>": two matching messages
        // per matching turn. The denser session ranks first; inside each
        // session the messages keep their order.
        assert_eq!(
            h,
            vec![
                (s2.clone(), "deploy deploy deploy".to_owned()),
                (s2.clone(), "[fake] deploy deploy deploy".to_owned()),
                (
                    s1.clone(),
                    "we deploy the api to staging on fridays".to_owned()
                ),
                (
                    s1.clone(),
                    "[fake] we deploy the api to staging on fridays".to_owned()
                ),
            ],
            "{backend:?}"
        );
        assert!(r.get("next_cursor").is_none(), "{r}");
        // Every word must be there; JSON keys and roles are not text.
        let (_, r) = app.get(&alice, "/v1/search?q=deploy%20fridays").await;
        assert_eq!(hits(&r).len(), 2, "{backend:?}: {r}");
        for q in ["role", "content", "user", "assistant", "%22role%22"] {
            let (st, r) = app.get(&alice, &format!("/v1/search?q={q}")).await;
            assert_eq!((st, hits(&r).len()), (200, 0), "{backend:?} {q}: {r}");
        }
        // Another principal of the tenant, and the same principal name in
        // another tenant, see only their own.
        let (_, r) = app.get(&bob, "/v1/search?q=deploy").await;
        assert_eq!(
            hits(&r).iter().map(|h| h.0.as_str()).collect::<Vec<_>>(),
            [sb.as_str(), sb.as_str()]
        );
        let (_, r) = app.get(&other, "/v1/search?q=deploy").await;
        assert_eq!(
            hits(&r).iter().map(|h| h.0.as_str()).collect::<Vec<_>>(),
            [so.as_str(), so.as_str()]
        );
        // A foreign session answers exactly like a missing one.
        let (st_foreign, foreign) = app.get(&bob, &format!("/v1/search?session={s1}")).await;
        let missing = "00000000-0000-4000-8000-000000000000";
        let (st_missing, gone) = app
            .get(&bob, &format!("/v1/search?session={missing}&q=deploy"))
            .await;
        assert_eq!((st_foreign, st_missing), (404, 404));
        assert_eq!(foreign, gone);

        // Pages: one hit at a time, same order.
        let mut seen = Vec::new();
        let mut cursor = String::new();
        loop {
            let (st, r) = app
                .get(
                    &alice,
                    &format!("/v1/search?q=deploy&limit=1&cursor={cursor}"),
                )
                .await;
            assert_eq!(st, 200, "{r}");
            seen.extend(hits(&r));
            match r["next_cursor"].as_str() {
                Some(c) => cursor = c.to_owned(),
                None => break,
            }
        }
        assert_eq!(seen.len(), 4, "{backend:?}: {seen:?}");
        assert_eq!(seen[0].0, s2);
        assert_eq!(
            app.get(&alice, "/v1/search?q=deploy&cursor=abc").await.0,
            400
        );
    }
}

#[tokio::test]
async fn browse_and_one_session_modes() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let alice = app.token("default", "alice");
        let s1 = app.create_session(&alice).await;
        let s2 = app.create_session(&alice).await;
        say(&app, &alice, &s1, "first\nline").await;
        say(&app, &alice, &s1, "second").await;
        say(&app, &alice, &s2, "other").await;
        // Browse: most recently updated first, with counts and previews.
        let (st, r) = app.get(&alice, "/v1/search").await;
        assert_eq!(st, 200, "{r}\n{}", app.log());
        let sessions = r["sessions"].as_array().unwrap();
        assert_eq!(sessions.len(), 2, "{r}");
        assert_eq!(sessions[0]["session_id"], s2.as_str());
        assert_eq!(sessions[0]["message_count"], 2);
        assert_eq!(sessions[0]["preview"], "[fake] other");
        assert_eq!(sessions[1]["session_id"], s1.as_str());
        assert_eq!(sessions[1]["message_count"], 4);
        let (_, r) = app.get(&alice, "/v1/search?limit=1").await;
        assert_eq!(r["sessions"].as_array().unwrap().len(), 1);
        assert_eq!(r["next_cursor"], "1");
        // One session without a query: its newest messages, in order.
        let (_, r) = app
            .get(&alice, &format!("/v1/search?session={s1}&limit=3"))
            .await;
        let texts: Vec<String> = hits(&r).into_iter().map(|h| h.1).collect();
        assert_eq!(
            texts,
            ["[fake] first\nline", "second", "[fake] second"],
            "{backend:?}"
        );
        assert_eq!(r["results"][1]["role"], "user");
        assert_eq!(r["next_cursor"], "3");
        let (_, r) = app
            .get(&alice, &format!("/v1/search?session={s1}&limit=3&cursor=3"))
            .await;
        assert_eq!(
            hits(&r).into_iter().map(|h| h.1).collect::<Vec<_>>(),
            ["first\nline"]
        );
        // One session with a query: its matches in message order.
        let (_, r) = app
            .get(&alice, &format!("/v1/search?session={s1}&q=second"))
            .await;
        assert_eq!(
            hits(&r).into_iter().map(|h| h.1).collect::<Vec<_>>(),
            ["second", "[fake] second"]
        );
    }
}

#[tokio::test]
async fn an_operator_searches_the_tenant_only_with_an_audited_reason() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let alice = app.token("default", "alice");
        let bob = app.token("default", "bob");
        let op = app.token_with("default", "olga", "operator", "1h");
        let admin = app.token_with("default", "root", "admin", "1h");
        let other_admin = app.token_with("acme", "root", "admin", "1h");
        let sa = app.create_session(&alice).await;
        let sb = app.create_session(&bob).await;
        say(&app, &alice, &sa, "invoice 42 is late").await;
        say(&app, &bob, &sb, "invoice 43 is paid").await;
        let other = app.token("acme", "carol");
        let so = app.create_session(&other).await;
        say(&app, &other, &so, "invoice 44 elsewhere").await;

        let (st, _) = app
            .get(&alice, "/v1/search?q=invoice&scope=tenant&reason=curious")
            .await;
        assert_eq!(st, 403, "a member never reaches the tenant");
        let (st, r) = app.get(&op, "/v1/search?q=invoice&scope=tenant").await;
        assert_eq!(st, 400, "no reason: {r}");
        let (st, _) = app
            .get(&op, "/v1/search?q=invoice&scope=tenant&reason=%20%20")
            .await;
        assert_eq!(st, 400, "a blank reason is no reason");
        // Without scope=tenant an operator sees its own sessions only.
        let (_, r) = app.get(&op, "/v1/search?q=invoice").await;
        assert_eq!(hits(&r).len(), 0);
        let (st, _) = app.get(&admin, "/v1/audit").await;
        assert_eq!(st, 200);

        let (st, r) = app
            .get(
                &op,
                "/v1/search?q=invoice&scope=tenant&reason=ticket%20OPS-7%3A%20billing%20dispute",
            )
            .await;
        assert_eq!(st, 200, "{r}");
        let mut sessions: Vec<String> = hits(&r).into_iter().map(|h| h.0).collect();
        sessions.dedup();
        sessions.sort();
        let mut want = vec![sa.clone(), sb.clone()];
        want.sort();
        assert_eq!(
            sessions, want,
            "{backend:?}: the tenant, not the other tenant"
        );
        let (st, r) = app
            .get(
                &op,
                &format!("/v1/search?session={sb}&scope=tenant&reason=follow%20up"),
            )
            .await;
        assert_eq!((st, hits(&r).len()), (200, 2), "{r}");

        // Admins read the audit; operators and members do not.
        assert_eq!(app.get(&op, "/v1/audit").await.0, 403);
        assert_eq!(app.get(&alice, "/v1/audit").await.0, 403);
        let (st, log) = app.get(&admin, "/v1/audit?action=history.search").await;
        assert_eq!(st, 200, "{log}");
        let records = log["records"].as_array().unwrap();
        assert_eq!(records.len(), 2, "refused searches read nothing: {log}");
        assert_eq!(records[0]["reason"], "follow up");
        assert_eq!(records[1]["reason"], "ticket OPS-7: billing dispute");
        assert_eq!(records[1]["principal"], "olga");
        assert_eq!(records[1]["role"], "operator");
        assert_eq!(records[1]["action"], "history.search");
        assert_eq!(records[1]["surface"], "rest");
        assert_eq!(
            records[1]["detail"],
            json!({"mode": "full_text", "query_chars": 7, "limit": 20, "offset": 0,
                "reason": "ticket OPS-7: billing dispute"})
        );
        assert!(
            !log.to_string().contains("invoice"),
            "never the searched text"
        );
        let (_, page) = app
            .get(&admin, "/v1/audit?limit=1&action=history.search")
            .await;
        let cursor = page["next_cursor"].as_str().unwrap().to_owned();
        let (_, page2) = app
            .get(
                &admin,
                &format!("/v1/audit?limit=1&action=history.search&cursor={cursor}"),
            )
            .await;
        assert_eq!(
            page2["records"][0]["reason"],
            "ticket OPS-7: billing dispute"
        );
        let (_, elsewhere) = app
            .get(&other_admin, "/v1/audit?action=history.search")
            .await;
        assert_eq!(elsewhere["records"], json!([]), "another tenant's audit");
    }
}

fn call(name: &str, args: Value) -> Value {
    json!([{"tool_calls": [{"name": name, "arguments": args}]}, {"content": "done"}])
}

fn results(evs: &[Value]) -> Vec<Value> {
    evs.iter()
        .filter(|e| e["type"] == "tool.result")
        .map(|e| e["data"].clone())
        .collect()
}

#[tokio::test]
async fn the_model_searches_its_principals_sessions_after_approval() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let alice = app.token("default", "alice");
        let bob = app.token("default", "bob");
        let s1 = app.create_session(&alice).await;
        let s2 = app.create_session(&alice).await;
        let sb = app.create_session(&bob).await;
        say(&app, &alice, &s2, "the zebra crossing").await;
        say(&app, &bob, &sb, "a zebra of bob").await;
        let evs = run_script(
            &app,
            &alice,
            &s1,
            call("session_search", json!({"query": "zebra"})),
            "allow_once",
        )
        .await;
        assert!(types(&evs).contains(&"approval.requested"));
        let res = &results(&evs)[0];
        assert_eq!(res["status"], "succeeded", "{res}");
        let found = &res["content"]["results"];
        assert_eq!(res["content"]["count"], 2, "{backend:?}: {res}");
        assert!(
            found
                .as_array()
                .unwrap()
                .iter()
                .all(|h| h["session_id"] == s2.as_str()),
            "{res}"
        );
        // Browse, and a denied approval reads nothing.
        let evs = run_script(
            &app,
            &alice,
            &s1,
            call("session_search", json!({})),
            "allow_once",
        )
        .await;
        let res = &results(&evs)[0];
        let listed: Vec<&str> = res["content"]["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["session_id"].as_str().unwrap())
            .collect();
        assert!(
            listed.contains(&s2.as_str()) && !listed.contains(&sb.as_str()),
            "{res}"
        );
        let evs = run_script(
            &app,
            &alice,
            &s1,
            call("session_search", json!({"query": "zebra"})),
            "deny",
        )
        .await;
        assert_eq!(results(&evs)[0]["status"], "denied");
        // Bob's session is not found, like a missing one.
        let evs = run_script(
            &app,
            &alice,
            &s1,
            call("session_search", json!({"session_id": sb})),
            "allow_once",
        )
        .await;
        let res = &results(&evs)[0];
        assert_eq!(res["status"], "not_found", "{res}");
        let evs = run_script(
            &app,
            &alice,
            &s1,
            call(
                "session_search",
                json!({"session_id": "00000000-0000-4000-8000-000000000000"}),
            ),
            "allow_once",
        )
        .await;
        let missing = &results(&evs)[0];
        assert_eq!(
            res["content"].to_string().replace(sb.as_str(), "ID"),
            missing["content"]
                .to_string()
                .replace("00000000-0000-4000-8000-000000000000", "ID")
        );
    }
}

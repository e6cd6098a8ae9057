//! Sessions: creation, owner-scoped reads, pagination, and the rule that
//! another tenant's or principal's resource looks exactly like a missing one.

use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn sessions_are_created_listed_and_paginated_on_every_backend() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        let mut ids = Vec::new();
        for _ in 0..5 {
            ids.push(app.create_session(&tok).await);
        }
        let (st, page) = app.get(&tok, "/v1/sessions?limit=2").await;
        assert_eq!(st, 200);
        let first: Vec<String> = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            first,
            vec![ids[4].clone(), ids[3].clone()],
            "{backend:?}: newest first"
        );
        let mut seen = first;
        let mut cursor = page["next_cursor"].as_str().map(str::to_owned);
        while let Some(c) = cursor {
            let (_, page) = app
                .get(&tok, &format!("/v1/sessions?limit=2&cursor={c}"))
                .await;
            for s in page["items"].as_array().unwrap() {
                seen.push(s["id"].as_str().unwrap().to_owned());
            }
            cursor = page["next_cursor"].as_str().map(str::to_owned);
        }
        let mut expected = ids.clone();
        expected.reverse();
        assert_eq!(seen, expected, "{backend:?}: every session exactly once");
        // The workspace is a private folder of the caller.
        let ws = app.home.join("tenants/default/workspaces/alice/default");
        assert!(ws.is_dir());
        assert_eq!(mode(&ws), 0o700);
    }
}

#[tokio::test]
async fn bad_session_input_is_a_400_naming_the_problem() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    for (body, needle) in [
        (json!({"workspace": "../other"}), "workspace"),
        (json!({"core": "a/b"}), "core"),
        (json!({"title": "x".repeat(201)}), "title"),
        (json!({"titel": "typo"}), "titel"),
    ] {
        let (st, b) = app.post(&tok, "/v1/sessions", body).await;
        assert_eq!(st, 400, "{b}");
        assert!(
            b["error"]["message"].as_str().unwrap().contains(needle),
            "{b}"
        );
    }
    let r = app
        .client
        .post(app.url("/v1/sessions"))
        .bearer_auth(&tok)
        .header("content-type", "application/json")
        .body("{nope")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let b: serde_json::Value = r.json().await.unwrap();
    assert_eq!(b["error"]["code"], "invalid_request");
    for q in ["limit=0", "limit=500", "cursor=bogus"] {
        let (st, _) = app.get(&tok, &format!("/v1/sessions?{q}")).await;
        assert_eq!(st, 400, "{q}");
    }
}

#[tokio::test]
async fn another_principals_or_tenants_session_looks_missing() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let alice = app.token("default", "alice");
        let bob = app.token("default", "bob");
        let eve = app.token("other", "alice"); // same principal name, other tenant
        let sid = app.create_session(&alice).await;
        let tid = app.start_turn(&alice, &sid, json!({"input": "hi"})).await;
        app.wait_turn(&alice, &sid, &tid).await;
        let missing = uuid::Uuid::now_v7().to_string();
        let (_, not_found) = app.get(&alice, &format!("/v1/sessions/{missing}")).await;
        for tok in [&bob, &eve] {
            for path in [
                format!("/v1/sessions/{sid}"),
                format!("/v1/sessions/{sid}/turns/{tid}"),
                format!("/v1/sessions/{sid}/tools"),
            ] {
                let (st, body) = app.get(tok, &path).await;
                assert_eq!((st, &body), (404, &not_found), "{backend:?} {path}");
            }
            let (st, body) = app
                .post(
                    tok,
                    &format!("/v1/sessions/{sid}/turns"),
                    json!({"input": "x"}),
                )
                .await;
            assert_eq!((st, &body), (404, &not_found));
            let (st, body) = app
                .post(
                    tok,
                    &format!("/v1/sessions/{sid}/turns/{tid}/cancel"),
                    json!({}),
                )
                .await;
            assert_eq!((st, &body), (404, &not_found));
            let r = app
                .client
                .get(app.url(&format!("/v1/sessions/{sid}/events")))
                .bearer_auth(tok)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 404);
            let (_, list) = app.get(tok, "/v1/sessions").await;
            assert_eq!(list["items"].as_array().unwrap().len(), 0);
        }
    }
}

//! Core versions through real turns: `rollback_core` makes a new commit of
//! the previous tree (history kept), the next turn sees the old tool set,
//! and moving live (a rollback or a core write) kills the core's
//! `allow_session` grants, so none revives with an old revision.

use serde_json::{json, Value};

use crate::helpers::*;

fn results(evs: &[Value]) -> Vec<String> {
    evs.iter()
        .filter(|e| e["type"] == "tool.result")
        .map(|e| e["data"]["status"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn asked(evs: &[Value]) -> usize {
    evs.iter()
        .filter(|e| e["type"] == "approval.requested")
        .count()
}

fn call(name: &str, args: Value) -> Value {
    json!([{"tool_calls": [{"name": name, "arguments": args}]}, {"content": "done"}])
}

async fn tool_names(app: &TestApp, tok: &str, sid: &str) -> Vec<String> {
    let (st, listing) = app.get(tok, &format!("/v1/sessions/{sid}/tools")).await;
    assert_eq!(st, 200, "{listing}");
    listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn put(app: &TestApp, tok: &str, path: &str, body: String) -> (u16, Value) {
    let r = app
        .client
        .put(app.url(path))
        .bearer_auth(tok)
        .header("content-type", "text/plain")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn rollback_restores_the_previous_tool_set_in_a_new_commit_on_every_backend() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let op = app.token_with("default", "olga", "operator", "1h");
        let alice = app.token("default", "alice");
        let sid = app.create_session(&alice).await;
        assert!(tool_names(&app, &alice, &sid)
            .await
            .contains(&"todo".to_owned()));
        let write = call("write_file", json!({"path": "a.txt", "content": "x"}));

        // An operator turns `todo` off: a new live revision.
        let r = app
            .client
            .get(app.url("/v1/cores/assistant/files/agent.yaml"))
            .bearer_auth(&op)
            .send()
            .await
            .unwrap();
        let manifest = r.text().await.unwrap();
        assert!(manifest.contains("  metadata: {}\n"), "{manifest}");
        let changed = manifest.replace(
            "  metadata: {}\n",
            "  metadata:\n    todo:\n      enabled: false\n",
        );
        let (st, put_change) = put(
            &app,
            &op,
            "/v1/cores/assistant/files/agent.yaml?message=no%20todo",
            changed,
        )
        .await;
        assert_eq!(st, 200, "{put_change}");
        let seed = put_change["previous"].as_str().unwrap().to_owned();
        let edited = put_change["revision"].as_str().unwrap().to_owned();
        assert!(!tool_names(&app, &alice, &sid)
            .await
            .contains(&"todo".to_owned()));

        // A session grant on this revision.
        let evs = run_script(&app, &alice, &sid, write.clone(), "allow_session").await;
        assert_eq!(
            (results(&evs), asked(&evs)),
            (vec!["succeeded".to_owned()], 1)
        );
        let evs = run_script(&app, &alice, &sid, write.clone(), "deny").await;
        assert_eq!(
            (results(&evs), asked(&evs)),
            (vec!["succeeded".to_owned()], 0)
        );

        // Refused approval: nothing moves.
        let evs = run_script(&app, &alice, &sid, call("rollback_core", json!({})), "deny").await;
        assert_eq!(results(&evs), ["denied"], "{backend:?}");
        let (_, core) = app.get(&alice, "/v1/cores/assistant").await;
        assert_eq!(core["revision"], edited.as_str());

        // The rollback: a new commit with the seed's tree.
        let evs = run_script(
            &app,
            &alice,
            &sid,
            call("rollback_core", json!({"reason": "todo is needed"})),
            "allow_once",
        )
        .await;
        assert_eq!(results(&evs), ["succeeded"], "{evs:#?}");
        let req = evs
            .iter()
            .find(|e| e["type"] == "approval.requested")
            .unwrap();
        assert_eq!(req["data"]["tool"], "rollback_core");
        assert_eq!(req["data"]["risk"], "high");
        let result = &evs.iter().find(|e| e["type"] == "tool.result").unwrap()["data"]["data"];
        assert_eq!(result["restored"], seed.as_str(), "{result}");
        assert_eq!(result["previous"], edited.as_str());
        let rolled = result["revision"].as_str().unwrap().to_owned();
        assert!(rolled != seed && rolled != edited);
        assert!(tool_names(&app, &alice, &sid)
            .await
            .contains(&"todo".to_owned()));
        let (_, core) = app.get(&alice, "/v1/cores/assistant").await;
        assert_eq!(
            (core["revision"].as_str(), core["previous"].as_str()),
            (Some(rolled.as_str()), Some(edited.as_str()))
        );
        let (_, v) = app.get(&alice, "/v1/cores/assistant/versions").await;
        let v = v["versions"].as_array().unwrap();
        assert_eq!(v[0]["revision"], rolled.as_str());
        assert!(v[0]["message"]
            .as_str()
            .unwrap()
            .ends_with(": todo is needed"));
        assert_eq!(v[0]["author"], "alice");
        assert_eq!(v[1]["revision"], edited.as_str(), "history is kept");
        assert_eq!(v[2]["revision"], seed.as_str());
        let (_, diff) = app
            .get(
                &alice,
                &format!("/v1/cores/assistant/diff?from={seed}&to=live"),
            )
            .await;
        assert_eq!(diff["files"], json!([]), "{diff}");

        // Rolling back again brings the edited tree back (forward, again)…
        let evs = run_script(
            &app,
            &alice,
            &sid,
            call("rollback_core", json!({})),
            "allow_once",
        )
        .await;
        assert_eq!(results(&evs), ["succeeded"]);
        assert!(!tool_names(&app, &alice, &sid)
            .await
            .contains(&"todo".to_owned()));
        // …but not the grant made on it: the rollbacks killed it.
        let evs = run_script(&app, &alice, &sid, write.clone(), "deny").await;
        assert_eq!(
            (results(&evs), asked(&evs)),
            (vec!["denied".to_owned()], 1),
            "{backend:?}"
        );

        // A core write kills grants too.
        let evs = run_script(&app, &alice, &sid, write.clone(), "allow_session").await;
        assert_eq!(results(&evs), ["succeeded"]);
        let (st, _) = put(
            &app,
            &op,
            "/v1/cores/assistant/files/agent/notes.md",
            "n".into(),
        )
        .await;
        assert_eq!(st, 200);
        let (st, _) = app
            .client
            .delete(app.url("/v1/cores/assistant/files/agent/notes.md"))
            .bearer_auth(&op)
            .send()
            .await
            .map(|r| (r.status().as_u16(), ()))
            .unwrap();
        assert_eq!(st, 200);
        // Same tree as when the grant was made, so the same fingerprint.
        let evs = run_script(&app, &alice, &sid, write, "deny").await;
        assert_eq!((results(&evs), asked(&evs)), (vec!["denied".to_owned()], 1));
    }
}

#[tokio::test]
async fn a_rollback_without_history_or_to_a_stray_revision_is_refused() {
    let app = spawn_app(Backend::Sqlite).await;
    let alice = app.token("default", "alice");
    let sid = app.create_session(&alice).await;
    // The seeded tree has one commit: no previous.
    let evs = run_script(
        &app,
        &alice,
        &sid,
        call("rollback_core", json!({})),
        "allow_once",
    )
    .await;
    assert_eq!(results(&evs), ["invalid"]);
    let evs = run_script(
        &app,
        &alice,
        &sid,
        call("rollback_core", json!({"target": "HEAD~1"})),
        "allow_once",
    )
    .await;
    assert_eq!(
        (results(&evs), asked(&evs)),
        (vec!["invalid".to_owned()], 0)
    );
    let evs = run_script(
        &app,
        &alice,
        &sid,
        call("rollback_core", json!({"target": "deadbeef"})),
        "allow_once",
    )
    .await;
    assert_eq!(results(&evs), ["not_found"]);
    let (_, v) = app.get(&alice, "/v1/cores/assistant/versions").await;
    assert_eq!(v["versions"].as_array().unwrap().len(), 1);
}

//! The core API: list, read and write a tenant's cores, each write a new
//! revision that the next turn sees (the running one does not), refused
//! with the loader's error when the core would break; versions and diffs;
//! roles, tenants and path escapes.

use serde_json::{json, Value};

use crate::helpers::*;

async fn put(app: &TestApp, tok: &str, path: &str, body: &str) -> (u16, Value) {
    put_as(app, tok, path, body.as_bytes().to_vec(), "text/plain").await
}

async fn put_as(
    app: &TestApp,
    tok: &str,
    path: &str,
    body: Vec<u8>,
    content_type: &str,
) -> (u16, Value) {
    let r = app
        .client
        .put(app.url(path))
        .bearer_auth(tok)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn delete(app: &TestApp, tok: &str, path: &str) -> (u16, Value) {
    let r = app
        .client
        .delete(app.url(path))
        .bearer_auth(tok)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn text(app: &TestApp, tok: &str, path: &str) -> (u16, String, String) {
    let r = app
        .client
        .get(app.url(path))
        .bearer_auth(tok)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, ct, r.text().await.unwrap())
}

fn tool_names(listing: &Value) -> Vec<String> {
    listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

const SMALL_CORE: &str = "schema_version: 1\nagent:\n  id: small\n  summary: a small core\ntools:\n  toolsets: [coding]\n";

#[tokio::test]
async fn cores_are_listed_read_written_deleted_and_versioned_on_every_backend() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let op = app.token_with("default", "olga", "operator", "1h");

        let (st, list) = app.get(&op, "/v1/cores").await;
        assert_eq!(st, 200, "{list}");
        assert_eq!(list["cores"][0]["id"], "assistant");
        assert_eq!(list["cores"][0]["loads"], true);
        // The host seeds its evolver core beside the assistant.
        assert_eq!(list["cores"][1]["id"], "evolver");
        assert_eq!(list["cores"][1]["loads"], true);

        let (st, core) = app.get(&op, "/v1/cores/assistant").await;
        assert_eq!(st, 200, "{core}");
        let seed_rev = core["revision"].as_str().unwrap().to_owned();
        assert_eq!(seed_rev.len(), 40);
        assert!(core["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == "agent/SOUL.md"));
        assert!(core["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("read_file")));

        let (st, ct, soul) = text(&app, &op, "/v1/cores/assistant/files/agent/SOUL.md").await;
        assert_eq!(st, 200);
        assert!(ct.starts_with("text/plain"), "{ct}");
        assert!(soul.starts_with("# assistant"), "{soul}");

        // A new file, with a message; then a new core.
        let (st, w) = put(
            &app,
            &op,
            "/v1/cores/assistant/files/agent/skills/deploy/SKILL.md?message=add%20the%20deploy%20skill",
            "# deploy\nShip it.\n",
        )
        .await;
        assert_eq!(st, 200, "{w}");
        assert_eq!(w["previous"], seed_rev.as_str());
        let rev1 = w["revision"].as_str().unwrap().to_owned();
        let (st, _, skill) = text(
            &app,
            &op,
            "/v1/cores/assistant/files/agent/skills/deploy/SKILL.md",
        )
        .await;
        assert_eq!((st, skill.as_str()), (200, "# deploy\nShip it.\n"));
        let (st, w) = put(&app, &op, "/v1/cores/small/files/agent.yaml", SMALL_CORE).await;
        assert_eq!(st, 200, "{w}");
        // Refs are the tenant tree's: `previous` is the live before any change.
        assert_eq!(w["previous"], rev1.as_str());
        let small_rev = w["revision"].as_str().unwrap().to_owned();
        let (_, list) = app.get(&op, "/v1/cores").await;
        let ids: Vec<_> = list["cores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, vec!["assistant", "evolver", "small"]);

        // Versions of one core: its own commits only, newest first, with author and message.
        let (st, v) = app.get(&op, "/v1/cores/assistant/versions").await;
        assert_eq!(st, 200, "{v}");
        let versions = v["versions"].as_array().unwrap();
        assert_eq!(versions.len(), 2, "{v}");
        assert_eq!(versions[0]["revision"], rev1.as_str());
        assert_eq!(versions[0]["author"], "olga");
        assert_eq!(versions[0]["message"], "add the deploy skill");
        assert_eq!(versions[1]["revision"], seed_rev.as_str());
        assert_eq!(versions[1]["author"], "demiurge");

        // The diff between the seed and that revision.
        let (st, d) = app
            .get(
                &op,
                &format!(
                    "/v1/cores/assistant/diff?from={}&to={}",
                    &seed_rev[..12],
                    rev1
                ),
            )
            .await;
        assert_eq!(st, 200, "{d}");
        assert_eq!(
            d["files"],
            json!([{"path": "agent/skills/deploy/SKILL.md", "status": "added"}])
        );
        assert!(d["diff"].as_str().unwrap().contains("+Ship it."), "{d}");
        let (st, _) = app
            .get(&op, "/v1/cores/assistant/diff?from=0000000000")
            .await;
        assert_eq!(st, 404);

        // Delete: a new revision; the file is gone.
        let (st, w) = delete(
            &app,
            &op,
            "/v1/cores/assistant/files/agent/skills/deploy/SKILL.md?message=drop%20it",
        )
        .await;
        assert_eq!(st, 200, "{w}");
        assert_eq!(w["previous"], small_rev.as_str());
        let (st, b) = app
            .get(
                &op,
                "/v1/cores/assistant/files/agent/skills/deploy/SKILL.md",
            )
            .await;
        assert_eq!(st, 404, "{b}");
        let (st, _) = delete(&app, &op, "/v1/cores/assistant/files/agent/nope.md").await;
        assert_eq!(st, 404);
        let (_, d) = app
            .get(&op, "/v1/cores/assistant/diff?from=previous&to=live")
            .await;
        assert_eq!(d["files"][0]["status"], "deleted", "{d}");
        let (_, v) = app.get(&op, "/v1/cores/assistant/versions?limit=1").await;
        assert_eq!(v["versions"].as_array().unwrap().len(), 1);
        assert_eq!(v["versions"][0]["message"], "drop it");

        // History is git's, in the tenant's tree, with the refs the host keeps.
        let agents = app.home.join("tenants/default/agents");
        let out = std::process::Command::new("git")
            .args([
                "-c",
                "safe.directory=*",
                "rev-parse",
                "refs/demiurge/live",
                "HEAD",
            ])
            .current_dir(&agents)
            .output()
            .unwrap();
        let refs = String::from_utf8_lossy(&out.stdout);
        let refs: Vec<_> = refs.lines().collect();
        assert_eq!(refs.len(), 2, "{out:?}");
        assert_eq!(refs[0], refs[1], "the checked-out tree is live");
    }
}

#[tokio::test]
async fn a_write_that_breaks_the_core_is_refused_with_the_loaders_message() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let admin = app.token_with("default", "ada", "admin", "1h");
        let (_, before) = app.get(&admin, "/v1/cores/assistant").await;
        let (_, _, yaml) = text(&app, &admin, "/v1/cores/assistant/files/agent.yaml").await;
        let broken = yaml.replace("    - schedule\n", "    - schedule\n    - codng\n");
        assert_ne!(broken, yaml);
        let (st, b) = put(
            &app,
            &admin,
            "/v1/cores/assistant/files/agent.yaml",
            &broken,
        )
        .await;
        assert_eq!(st, 422, "{b}");
        assert_eq!(b["error"]["code"], "core_invalid");
        let msg = b["error"]["message"].as_str().unwrap();
        for needle in ["agent.yaml", "tools.toolsets[3]", "codng"] {
            assert!(msg.contains(needle), "{needle:?} not in {msg:?}");
        }
        // Deleting the manifest, or a slot a pipeline names, breaks it too.
        let (st, b) = delete(&app, &admin, "/v1/cores/assistant/files/agent.yaml").await;
        assert_eq!(st, 422, "{b}");
        let (st, b) = delete(
            &app,
            &admin,
            "/v1/cores/assistant/files/agent/input/base_input/slot.yaml",
        )
        .await;
        assert_eq!(st, 422, "{b}");
        assert!(
            b["error"]["message"]
                .as_str()
                .unwrap()
                .contains("base_input"),
            "{b}"
        );
        // A new core whose manifest does not load is not created.
        let (st, b) = put(
            &app,
            &admin,
            "/v1/cores/other/files/agent.yaml",
            "schema_version: 1\nagent:\n  id: wrong\n",
        )
        .await;
        assert_eq!(st, 422, "{b}");
        assert!(!app.home.join("tenants/default/agents/other").exists());
        // Nothing changed: same revision, same file, still loads.
        let (_, after) = app.get(&admin, "/v1/cores/assistant").await;
        assert_eq!(after["revision"], before["revision"]);
        assert_eq!(after["loads"], true);
        let (_, _, again) = text(&app, &admin, "/v1/cores/assistant/files/agent.yaml").await;
        assert_eq!(again, yaml);
    }
}

#[tokio::test]
async fn members_read_cores_but_only_operators_and_admins_write_them() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let member = app.token("default", "mia");
        let (st, _) = app.get(&member, "/v1/cores/assistant").await;
        assert_eq!(st, 200);
        let (st, _, _) = text(&app, &member, "/v1/cores/assistant/files/agent/SOUL.md").await;
        assert_eq!(st, 200);
        let (st, b) = put(
            &app,
            &member,
            "/v1/cores/assistant/files/agent/SOUL.md",
            "# mine",
        )
        .await;
        assert_eq!(st, 403, "{b}");
        assert_eq!(b["error"]["code"], "forbidden");
        let (st, _) = delete(&app, &member, "/v1/cores/assistant/files/agent/SOUL.md").await;
        assert_eq!(st, 403);
        let (_, v) = app.get(&member, "/v1/cores/assistant/versions").await;
        assert_eq!(v["versions"].as_array().unwrap().len(), 1);
        for role in ["operator", "admin"] {
            let tok = app.token_with("default", role, role, "1h");
            let (st, b) = put(
                &app,
                &tok,
                "/v1/cores/assistant/files/agent/SOUL.md",
                &format!("# by {role}"),
            )
            .await;
            assert_eq!(st, 200, "{role}: {b}");
        }
    }
}

#[tokio::test]
async fn another_tenants_core_answers_exactly_like_a_missing_one() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let a = app.token_with("acme", "root", "admin", "1h");
        let b = app.token_with("globex", "root", "admin", "1h");
        let (st, w) = put(&app, &a, "/v1/cores/small/files/agent.yaml", SMALL_CORE).await;
        assert_eq!(st, 200, "{w}");
        let rev = w["revision"].as_str().unwrap().to_owned();
        let (_, missing) = app.get(&b, "/v1/cores/nosuch").await;
        for path in [
            "/v1/cores/small".to_owned(),
            "/v1/cores/small/files/agent.yaml".to_owned(),
            "/v1/cores/small/versions".to_owned(),
            format!("/v1/cores/assistant/diff?from={rev}"),
        ] {
            let (st, body) = app.get(&b, &path).await;
            assert_eq!((st, &body), (404, &missing), "{path}");
        }
        let (st, body) = delete(&app, &b, "/v1/cores/small/files/agent.yaml").await;
        assert_eq!((st, &body), (404, &missing));
        let (st, body) = put(&app, &b, "/v1/cores/small/files/agent/SOUL.md", "x").await;
        assert_eq!((st, &body), (404, &missing));
        let (_, list) = app.get(&b, "/v1/cores").await;
        assert!(!list.to_string().contains("small"), "{list}");
        // The owner still has it, unchanged.
        let (st, core) = app.get(&a, "/v1/cores/small").await;
        assert_eq!(st, 200);
        assert_eq!(core["revision"], rev.as_str());
    }
}

#[tokio::test]
async fn paths_that_escape_the_core_and_bad_bodies_are_refused() {
    let app = spawn_app(Backend::Sqlite).await;
    let admin = app.token_with("default", "ada", "admin", "1h");
    // Make sure the tree exists, and plant a file outside the core to aim at.
    let (st, _) = app.get(&admin, "/v1/cores").await;
    assert_eq!(st, 200);
    for path in [
        "..%2F..%2F..%2Fkeys%2Fsigning.key",
        "agent%2F..%2F..%2Fother%2Fagent.yaml",
        "%2Fetc%2Fpasswd",
        ".git%2Fconfig",
        ".git/HEAD",
        "agent/.hidden",
        "agent%5C..%5Cx",
        "agent//x",
        "agent/%00x",
    ] {
        let url = format!("/v1/cores/assistant/files/{path}");
        let (st, ct, body) = text(&app, &admin, &url).await;
        assert_eq!(st, 400, "GET {path}: {body}");
        assert!(ct.starts_with("application/json"), "{path}: {ct}");
        let (st, b) = put(&app, &admin, &url, "x").await;
        assert_eq!(st, 400, "PUT {path}: {b}");
        assert_eq!(b["error"]["code"], "invalid_request");
        let (st, _) = delete(&app, &admin, &url).await;
        assert_eq!(st, 400, "DELETE {path}");
    }
    // A link inside the core is not followed.
    let core = app.home.join("tenants/default/agents/assistant");
    std::os::unix::fs::symlink(app.home.join("keys"), core.join("agent/keys")).unwrap();
    let (st, b) = app
        .get(&admin, "/v1/cores/assistant/files/agent/keys/signing.key")
        .await;
    assert_eq!(st, 409, "{b}");
    let (st, _) = put(&app, &admin, "/v1/cores/assistant/files/agent/keys/x", "x").await;
    assert_eq!(st, 409);
    std::fs::remove_file(core.join("agent/keys")).unwrap();
    // A folder is not a file.
    let (st, _) = put(&app, &admin, "/v1/cores/assistant/files/agent", "x").await;
    assert_eq!(st, 409);
    // Bodies: not text/plain, not UTF-8, too large for the server.
    let url = "/v1/cores/assistant/files/agent/notes.md";
    let (st, b) = put_as(&app, &admin, url, b"{}".to_vec(), "application/json").await;
    assert_eq!(
        (st, b["error"]["code"].as_str()),
        (415, Some("unsupported_media_type"))
    );
    let (st, b) = put_as(&app, &admin, url, vec![0xff, 0xfe, b'x'], "text/plain").await;
    assert_eq!(
        (st, b["error"]["code"].as_str()),
        (400, Some("invalid_request")),
        "{b}"
    );
    // (A fresh client: the server closes a connection whose body it refused.)
    let fresh = demiurge::net::client_builder().build().unwrap();
    let r = fresh
        .put(app.url(url))
        .bearer_auth(&admin)
        .header("content-type", "text/plain; charset=utf-8")
        .body(vec![b'x'; 3 << 20])
        .send()
        .await
        .unwrap();
    let st = r.status().as_u16();
    let b: Value = r.json().await.unwrap_or(Value::Null);
    assert_eq!(
        (st, b["error"]["code"].as_str()),
        (413, Some("payload_too_large")),
        "{b}"
    );
    // Bad revisions and messages.
    for q in [
        "from=HEAD~1",
        "from=--output%3D%2Ftmp%2Fx",
        "from=live&to=main",
        "to=live",
    ] {
        let (st, b) = app
            .get(&admin, &format!("/v1/cores/assistant/diff?{q}"))
            .await;
        assert_eq!(st, 400, "{q}: {b}");
    }
    let long = "x".repeat(600);
    let (st, _) = put(&app, &admin, &format!("{url}?message={long}"), "x").await;
    assert_eq!(st, 400);
    let (st, _) = app.get(&admin, "/v1/cores/not.a.core").await;
    assert_eq!(st, 400);
    let (st, _) = app
        .get(&admin, "/v1/cores/assistant/versions?limit=0")
        .await;
    assert_eq!(st, 400);
    // Nothing was written anywhere.
    let (_, v) = app.get(&admin, "/v1/cores/assistant/versions").await;
    assert_eq!(v["versions"].as_array().unwrap().len(), 1, "{v}");
}

#[tokio::test]
async fn the_next_turn_sees_a_core_change_and_the_running_turn_does_not() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let op = app.token_with("default", "olga", "operator", "1h");
        let sid = app.create_session(&op).await;
        let (_, tools) = app.get(&op, &format!("/v1/sessions/{sid}/tools")).await;
        assert!(tool_names(&tools).contains(&"read_file".to_owned()));

        // A turn that waits on a question, then lists its tools.
        let script = json!([
            {"tool_calls": [{"name": "clarify", "arguments": {"question": "go on?"}}]},
            {"tool_calls": [{"name": "tools_list", "arguments": {}}]},
            {"content": "done"}
        ]);
        let tid = app
            .start_turn(&op, &sid, json!({"input": "go", "script": script}))
            .await;
        let evs = app
            .sse_until(&op, &sid, "", None, |e| e["type"] == "clarify.requested")
            .await;
        let question = evs.last().unwrap()["data"]["clarification_id"]
            .as_str()
            .unwrap()
            .to_owned();

        // While it waits, read_file is switched off in the core.
        let (_, _, yaml) = text(&app, &op, "/v1/cores/assistant/files/agent.yaml").await;
        let changed = yaml.replace(
            "  metadata: {}\n",
            "  metadata:\n    read_file:\n      enabled: false\n",
        );
        assert_ne!(changed, yaml);
        let (st, b) = put(&app, &op, "/v1/cores/assistant/files/agent.yaml", &changed).await;
        assert_eq!(st, 200, "{b}");

        let r = app
            .client
            .post(app.url(&format!("/v1/clarifications/{question}")))
            .bearer_auth(&op)
            .json(&json!({"answer": "yes"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 204);
        let turn = app.wait_turn(&op, &sid, &tid).await;
        assert_eq!(turn["status"], "completed", "{turn}");
        let evs = app.sse_until(&op, &sid, "", None, is_terminal).await;
        let listed = evs.iter().rfind(|e| e["type"] == "tool.result").unwrap()["data"]["content"]
            .to_string();
        assert!(
            listed.contains("read_file"),
            "the running turn keeps the tools it started with: {listed}"
        );

        // The next turn (and the session's catalog) has the new tool set.
        let (_, tools) = app.get(&op, &format!("/v1/sessions/{sid}/tools")).await;
        assert!(
            !tool_names(&tools).contains(&"read_file".to_owned()),
            "{tools}"
        );
        let after = evs.last().unwrap()["seq"].as_i64().unwrap();
        let tid = app
            .start_turn(
                &op,
                &sid,
                json!({"input": "again", "script": [{"tool_calls": [{"name": "tools_list", "arguments": {}}]}, {"content": "ok"}]}),
            )
            .await;
        app.wait_turn(&op, &sid, &tid).await;
        let evs = app
            .sse_until(&op, &sid, &format!("?after={after}"), None, is_terminal)
            .await;
        let listed = evs.iter().rfind(|e| e["type"] == "tool.result").unwrap()["data"]["content"]
            .to_string();
        assert!(!listed.contains("\\\"read_file\\\""), "{listed}");
        assert!(listed.contains("write_file"), "{listed}");
    }
}

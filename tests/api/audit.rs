//! The audit log end to end, on SQLite and PostgreSQL: each change leaves
//! exactly one record naming its actor and surface (REST, the console, the
//! WebSocket, a chat, the command line), written with the change; another
//! tenant's admin sees none of them and a member is refused; the log
//! exports as JSON lines; `demiurge audit verify` passes, and fails naming
//! the record after one is changed in the database by hand.

use futures_util::SinkExt;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use crate::channels::{channel_app, create_account, operator, post_raw, write_file_then, Platform};
use crate::helpers::*;

/// A request as the console sends it.
fn console(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    tok: &str,
) -> reqwest::RequestBuilder {
    app.client
        .request(method, app.url(path))
        .bearer_auth(tok)
        .header("X-Demiurge-Client", "console")
}

async fn send(req: reqwest::RequestBuilder) -> (u16, Value) {
    let r = req.send().await.unwrap();
    let st = r.status().as_u16();
    (st, r.json().await.unwrap_or(Value::Null))
}

/// The records of one action, newest first.
async fn of(app: &TestApp, admin: &str, action: &str) -> Vec<Value> {
    let (st, b) = app
        .get(admin, &format!("/v1/audit?limit=1000&action={action}"))
        .await;
    assert_eq!(st, 200, "{b}");
    b["records"].as_array().unwrap().clone()
}

/// Exactly one record of `action` about `target`, by `actor` from `surface`.
async fn one(
    app: &TestApp,
    admin: &str,
    action: &str,
    actor: &str,
    surface: &str,
    target: &str,
) -> Value {
    let rs: Vec<Value> = of(app, admin, action)
        .await
        .into_iter()
        .filter(|r| r["target"] == target)
        .collect();
    assert_eq!(rs.len(), 1, "{action} {target}: {rs:?}");
    let r = rs[0].clone();
    assert_eq!(
        (
            r["principal"].as_str(),
            r["surface"].as_str(),
            r["target"].as_str()
        ),
        (Some(actor), Some(surface), Some(target)),
        "{r}"
    );
    r
}

/// Start a turn that asks for approval (or a clarification): (turn, request id).
async fn pending(
    app: &TestApp,
    tok: &str,
    sid: &str,
    script: Value,
    kind: &str,
) -> (String, String) {
    let tid = app
        .start_turn(tok, sid, json!({"input": "go", "script": script}))
        .await;
    let evs = app
        .sse_until(tok, sid, "", None, |e| e["type"] == kind)
        .await;
    let e = evs.last().expect("the request");
    assert_eq!(e["type"], kind, "{evs:?}");
    let key = if kind == "approval.requested" {
        "approval_id"
    } else {
        "clarification_id"
    };
    (tid, e["data"][key].as_str().unwrap().to_owned())
}

fn write_file() -> Value {
    json!([
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]},
        {"content": "done"}
    ])
}

#[tokio::test]
async fn each_change_leaves_one_record_with_its_actor_and_surface() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        // Issued by the server operator at the command line: recorded too.
        let admin = app.token_with("acme", "boss", "admin", "1h");
        let alice = app.token("acme", "alice");
        let other_admin = app.token_with("other", "root", "admin", "1h");
        let issued = one(&app, &admin, "token.issued", "operator", "cli", "boss").await;
        assert_eq!(issued["role"], "server");

        // Tokens and principals, from the console.
        let (st, t) = send(
            console(&app, reqwest::Method::POST, "/v1/tokens", &admin)
                .json(&json!({"principal": "bob", "role": "member", "ttl": "10m"})),
        )
        .await;
        assert_eq!(st, 201, "{t}");
        let r = one(&app, &admin, "token.issued", "boss", "console", "bob").await;
        assert_eq!(r["detail"]["jti"], t["jti"]);
        assert!(
            !r.to_string().contains(t["token"].as_str().unwrap()),
            "never the token"
        );
        let (st, _) = app
            .post(&admin, "/v1/tokens/revoke", json!({"principal": "bob"}))
            .await;
        assert_eq!(st, 200);
        one(&app, &admin, "tokens.revoked", "boss", "rest", "bob").await;
        for verb in ["disable", "enable"] {
            let (st, b) = app
                .post(&admin, &format!("/v1/principals/carol/{verb}"), json!({}))
                .await;
            assert_eq!(st, 200, "{b}");
        }
        one(&app, &admin, "principal.disabled", "boss", "rest", "carol").await;
        one(&app, &admin, "principal.enabled", "boss", "rest", "carol").await;

        // Tenant policy, budgets (the admin's and the operator's ceiling),
        // provider keys (never the key).
        let (st, b) = send(
            app.client
                .put(app.url("/v1/tenant/policy"))
                .bearer_auth(&admin)
                .json(&json!({"member_max_risk": "high"})),
        )
        .await;
        assert_eq!(st, 200, "{b}");
        let r = one(
            &app,
            &admin,
            "tenant_policy.changed",
            "boss",
            "rest",
            "acme",
        )
        .await;
        assert_eq!(r["detail"]["member_max_risk"], "high");
        let (st, b) = send(
            app.client
                .put(app.url("/v1/budgets"))
                .bearer_auth(&admin)
                .json(&json!({"limits": {"tokens_per_day": 1000000}})),
        )
        .await;
        assert_eq!(st, 200, "{b}");
        let r = one(&app, &admin, "budget.set", "boss", "rest", "acme").await;
        assert_eq!(r["detail"]["limits"]["tokens_per_day"], 1000000);
        let out = app.cli(&[
            "budget",
            "ceiling",
            "--tenant",
            "acme",
            "--tokens-per-day",
            "5000000",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        one(
            &app,
            &admin,
            "budget.ceiling_set",
            "operator",
            "cli",
            "acme",
        )
        .await;
        let secret = "sk-audit-7d1f0c2b9a";
        let (st, b) = send(
            app.client
                .put(app.url("/v1/tenant/providers/openai"))
                .bearer_auth(&admin)
                .json(&json!({"api_key": secret})),
        )
        .await;
        assert_eq!(st, 200, "{b}");
        let r = app
            .client
            .delete(app.url("/v1/tenant/providers/openai"))
            .bearer_auth(&admin)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 204);
        one(&app, &admin, "provider_key.set", "boss", "rest", "openai").await;
        one(
            &app,
            &admin,
            "provider_key.removed",
            "boss",
            "rest",
            "openai",
        )
        .await;

        // A core file edited from the console: the revisions it moved between.
        let file = "/v1/cores/assistant/files/agent.yaml";
        let r = app
            .client
            .get(app.url(file))
            .bearer_auth(&admin)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        let yaml = r.text().await.unwrap();
        let (st, edit) = send(
            console(&app, reqwest::Method::PUT, file, &admin)
                .header("content-type", "text/plain")
                .body(format!("{yaml}# audited\n")),
        )
        .await;
        assert_eq!(st, 200, "{edit}");
        let r = one(&app, &admin, "core.edited", "boss", "console", "assistant").await;
        assert_eq!(r["detail"]["path"], "agent.yaml");
        assert_eq!(r["detail"]["revision"], edit["revision"]);

        // An approval decided from the console, one over the WebSocket, a
        // clarification answered, and an operator's tenant-wide search.
        let sid = app.create_session(&alice).await;
        let (tid, approval) = pending(&app, &alice, &sid, write_file(), "approval.requested").await;
        let (st, b) = send(
            console(
                &app,
                reqwest::Method::POST,
                &format!("/v1/approvals/{approval}"),
                &alice,
            )
            .json(&json!({"decision": "allow_once"})),
        )
        .await;
        assert_eq!(st, 200, "{b}");
        app.wait_turn(&alice, &sid, &tid).await;
        let r = one(
            &app,
            &admin,
            "approval.decided",
            "alice",
            "console",
            &approval,
        )
        .await;
        assert_eq!(r["detail"]["decision"], "allow_once");
        assert_eq!(r["detail"]["tool"], "write_file");
        assert_eq!(r["detail"]["fingerprint"].as_str().unwrap().len(), 64);
        let (tid, asked) = pending(
            &app,
            &alice,
            &sid,
            json!([{"tool_calls": [{"name": "clarify", "arguments": {"question": "which?"}}]},
                {"content": "ok"}]),
            "clarify.requested",
        )
        .await;
        let (st, _) = app
            .post(
                &alice,
                &format!("/v1/clarifications/{asked}"),
                json!({"answer": "the blue one"}),
            )
            .await;
        assert_eq!(st, 204);
        app.wait_turn(&alice, &sid, &tid).await;
        let r = one(
            &app,
            &admin,
            "clarification.answered",
            "alice",
            "rest",
            &asked,
        )
        .await;
        assert!(
            !r.to_string().contains("the blue one"),
            "the answer stays in the session"
        );
        let (st, b) = app
            .get(
                &admin,
                "/v1/search?q=anything&scope=tenant&reason=audit%20check",
            )
            .await;
        assert_eq!(st, 200, "{b}");
        let r = one(&app, &admin, "history.search", "boss", "rest", "").await;
        assert_eq!(r["reason"], "audit check");

        // Every record is chained: ids 1.. with each prev_hash the hash before.
        let (_, all) = app.get(&admin, "/v1/audit?limit=1000").await;
        let rs = all["records"].as_array().unwrap();
        for w in rs.windows(2) {
            assert_eq!(
                w[0]["id"].as_i64().unwrap(),
                w[1]["id"].as_i64().unwrap() + 1
            );
            assert_eq!(w[0]["prev_hash"], w[1]["hash"], "{}", w[0]);
        }
        assert!(!all.to_string().contains(secret), "never a provider key");

        // Filters: by actor, and a family of actions; a cursor pages.
        let (_, by_op) = app.get(&admin, "/v1/audit?actor=operator").await;
        assert!(by_op["records"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["principal"] == "operator"));
        let (_, fam) = app.get(&admin, "/v1/audit?action=principal.").await;
        assert_eq!(fam["records"].as_array().unwrap().len(), 2, "{fam}");
        let (_, p1) = app.get(&admin, "/v1/audit?limit=2").await;
        let cursor = p1["next_cursor"].as_str().unwrap();
        let (_, p2) = app
            .get(&admin, &format!("/v1/audit?limit=2&cursor={cursor}"))
            .await;
        assert_eq!(p2["records"][0]["id"], rs[2]["id"]);
        let long = "x".repeat(257);
        for bad in [
            "from=yesterday",
            "to=",
            "limit=0",
            "cursor=x",
            &format!("target={long}"),
        ] {
            let (st, e) = app.get(&admin, &format!("/v1/audit?{bad}")).await;
            assert_eq!(st, 400, "{bad}: {e}");
        }

        // JSON lines for export: the same records.
        let r = app
            .client
            .get(app.url("/v1/audit?limit=1000"))
            .bearer_auth(&admin)
            .header("Accept", "application/x-ndjson")
            .send()
            .await
            .unwrap();
        assert_eq!(r.headers()["content-type"], "application/x-ndjson");
        let text = r.text().await.unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(&lines, rs);

        // Members are refused; another tenant sees only its own.
        assert_eq!(app.get(&alice, "/v1/audit").await.0, 403);
        let (_, theirs) = app.get(&other_admin, "/v1/audit?limit=1000").await;
        let theirs = theirs["records"].as_array().unwrap();
        assert_eq!(theirs.len(), 1, "{theirs:?}");
        assert_eq!(theirs[0]["target"], "root");

        // The operator verifies every chain, and exports one.
        let out = app.cli(&["audit", "verify"]);
        let said = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains("tenant acme: ok"), "{said}");
        let out = app.cli(&[
            "audit",
            "export",
            "--tenant",
            "acme",
            "--action",
            "approval.",
        ]);
        assert!(out.status.success());
        let exported: Vec<Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(exported.len(), 1);
        assert_eq!(exported[0]["target"], approval.as_str());

        // A record changed by hand in the database: verify names it.
        let seq = r_seq(rs, "tenant_policy.changed");
        let mut db = app.db().await;
        sqlx::query(
            "UPDATE audit_events SET detail = '{\"member_max_risk\":\"critical\"}' \
             WHERE tenant_id = 'acme' AND seq = $1",
        )
        .bind(seq)
        .execute(&mut db)
        .await
        .unwrap();
        let out = app.cli(&["audit", "verify", "--tenant", "acme"]);
        let said = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(!out.status.success(), "{said}");
        assert!(said.contains(&format!("breaks at seq {seq}")), "{said}");
        // A deleted record is found too (the other tenant's chain).
        sqlx::query("DELETE FROM audit_events WHERE tenant_id = 'other'")
            .execute(&mut db)
            .await
            .unwrap();
        let out = app.cli(&["audit", "verify", "--tenant", "other"]);
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).contains("breaks at seq 1"));
    }
}

fn r_seq(rs: &[Value], action: &str) -> i64 {
    rs.iter().find(|r| r["action"] == action).unwrap()["id"]
        .as_i64()
        .unwrap()
}

#[tokio::test]
async fn approvals_decided_over_the_websocket_and_in_a_chat_are_recorded_with_their_surface() {
    for backend in backends() {
        let hook = Platform::start().await;
        let app = channel_app(backend).await;
        let op = operator(&app);
        let admin = app.token_with("default", "boss", "admin", "1h");
        let secret = "whsec-audit";
        let acct = create_account(
            &app,
            &op,
            json!({"platform": "webhook", "name": "crm",
                "credentials": {"secret": secret, "callback_url": format!("{}/hook", hook.base_url)},
                "allowed_users": ["u1"]}),
        )
        .await;
        let path = acct["webhook_path"].as_str().unwrap().to_owned();
        let account = acct["id"].as_str().unwrap().to_owned();
        let rs = of(&app, &admin, "channel_account.added").await;
        assert_eq!(rs.len(), 1, "{rs:?}");
        assert_eq!(
            (rs[0]["principal"].as_str(), rs[0]["target"].as_str()),
            (Some("operator"), Some(account.as_str()))
        );
        assert!(!rs[0].to_string().contains(secret), "never the credentials");
        let say = |id: &str, text: &str| {
            serde_json::to_vec(&json!({"user": "u1", "conversation": "c1", "text": text, "id": id}))
                .unwrap()
        };
        let body = say("m1", &write_file_then("written"));
        let sig = demiurge_channels::verify::webhook_signature(secret, &body).unwrap();
        let (st, _) = post_raw(&app, &path, &[("x-demiurge-signature", sig)], body).await;
        assert_eq!(st, 202);
        let card = hook
            .wait(1, "the approval card", |r| {
                r.body["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("/approve "))
            })
            .await
            .remove(0);
        let text = card.body["text"].as_str().unwrap().to_owned();
        let id = text
            .split("/approve ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .unwrap()
            .to_owned();
        let body = say("m2", &format!("/approve {id}"));
        let sig = demiurge_channels::verify::webhook_signature(secret, &body).unwrap();
        let (st, _) = post_raw(&app, &path, &[("x-demiurge-signature", sig)], body).await;
        assert_eq!(st, 202);
        hook.wait(1, "the reply", |r| r.body["text"] == "written")
            .await;
        let rs = of(&app, &admin, "approval.decided").await;
        assert_eq!(rs.len(), 1, "{rs:?}");
        assert_eq!(
            (rs[0]["surface"].as_str(), rs[0]["target"].as_str()),
            (Some("chat:webhook"), Some(id.as_str()))
        );
        assert_eq!(rs[0]["detail"]["decision"], "allow_once");
        assert!(!rs[0]["principal"].as_str().unwrap().is_empty());

        // Over the WebSocket.
        let alice = app.token("default", "alice");
        let sid = app.create_session(&alice).await;
        let (tid, approval) = pending(&app, &alice, &sid, write_file(), "approval.requested").await;
        let mut ws = crate::streams::ws_connect(&app, &sid, "", Some(&alice)).await;
        ws.send(Message::Text(
            json!({"type": "approval", "approval_id": approval, "decision": "deny"})
                .to_string()
                .into(),
        ))
        .await
        .unwrap();
        crate::streams::ws_read_until(&mut ws, |e| e["type"] == "approval.ack").await;
        app.wait_turn(&alice, &sid, &tid).await;
        let rs = of(&app, &admin, "approval.decided").await;
        let r = rs
            .iter()
            .find(|r| r["target"] == approval.as_str())
            .expect("recorded");
        assert_eq!(
            (r["principal"].as_str(), r["surface"].as_str()),
            (Some("alice"), Some("websocket"))
        );
        assert_eq!(r["detail"]["decision"], "deny");

        // The account removed.
        let r = app
            .client
            .delete(app.url(&format!("/v1/channels/accounts/{account}")))
            .bearer_auth(&op)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 204);
        let rs = of(&app, &admin, "channel_account.removed").await;
        assert_eq!(rs.len(), 1, "{rs:?}");
        assert_eq!(rs[0]["target"], account.as_str());
    }
}

/// Two instances on one PostgreSQL append to one tenant's chain at once:
/// every change gets its own seq, each record follows the one before, and
/// the chain verifies.
#[tokio::test]
async fn two_instances_appending_at_once_keep_one_chain() {
    if !backends().contains(&Backend::Postgres) {
        return;
    }
    let a = spawn_app(Backend::Postgres).await;
    let b = a.spawn_peer().await;
    let admin = a.token_with("acme", "boss", "admin", "1h");
    let mut calls = Vec::new();
    for i in 0..24 {
        let app = if i % 2 == 0 { &a } else { &b };
        let (client, url, tok) = (app.client.clone(), app.url("/v1/tokens"), admin.clone());
        calls.push(tokio::spawn(async move {
            client
                .post(url)
                .bearer_auth(tok)
                .json(&json!({"principal": format!("p{i}"), "ttl": "5m"}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }));
    }
    for c in calls {
        assert_eq!(c.await.unwrap(), 201);
    }
    let (_, all) = b.get(&admin, "/v1/audit?limit=1000").await;
    let rs = all["records"].as_array().unwrap();
    // The operator's issue of the admin's token, then the 24.
    assert_eq!(rs.len(), 25, "{all}");
    for (w, expect) in rs.windows(2).zip((1..=25).rev()) {
        assert_eq!(w[0]["id"], expect);
        assert_eq!(w[0]["prev_hash"], w[1]["hash"]);
    }
    let out = a.cli(&["audit", "verify", "--tenant", "acme"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

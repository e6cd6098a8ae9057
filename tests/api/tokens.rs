//! Token safety: revocation (API and CLI, across instances), disabled
//! principals, short leeway, future and over-long tokens, and tenant admins
//! issuing tokens for their own tenant only.

use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

use crate::helpers::*;

fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).unwrap();
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap()
}

fn jti(token: &str) -> String {
    claims(token)["jti"].as_str().unwrap().to_owned()
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn home_key(app: &TestApp) -> Vec<u8> {
    let text = std::fs::read_to_string(app.home.join("keys/signing.key")).unwrap();
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .unwrap()
}

fn sign(claims: &Value, key: &[u8]) -> String {
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        claims,
        &jsonwebtoken::EncodingKey::from_secret(key).unwrap(),
    )
    .unwrap()
}

/// Status of an authenticated read.
async fn status(app: &TestApp, tok: &str) -> u16 {
    app.get(tok, "/v1/sessions").await.0
}

/// Poll (up to 2 s) until the token gets `want`; returns the last status and message.
async fn eventually(app: &TestApp, tok: &str, want: u16) -> (u16, String) {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let (st, body) = app.get(tok, "/v1/sessions").await;
        let msg = body["error"]["message"].as_str().unwrap_or("").to_owned();
        if st == want || Instant::now() > deadline {
            return (st, msg);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn cli_ok(app: &TestApp, args: &[&str]) -> String {
    let out = app.cli(args);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn revoking_by_jti_through_the_api_and_the_cli_makes_the_token_401() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let admin = app.token_with("acme", "boss", "admin", "1h");
        let first = app.token("acme", "alice");
        let second = app.token("acme", "alice");
        assert_eq!(status(&app, &first).await, 200);
        let (st, body) = app
            .post(&admin, "/v1/tokens/revoke", json!({"jti": jti(&first)}))
            .await;
        assert_eq!(st, 200, "{backend:?}: {body}");
        assert_eq!(body["kind"], "jti");
        assert_eq!(body["tenant"], "acme");
        assert_eq!(body["jti"], jti(&first));
        // The instance that revoked applies it at once.
        let (st, body) = app.get(&first, "/v1/sessions").await;
        assert_eq!(st, 401, "{backend:?}");
        assert_eq!(body["error"]["message"], "token has been revoked");
        // The principal's other token is untouched.
        assert_eq!(status(&app, &second).await, 200);
        // The CLI writes to the database; the server sees it by polling.
        let out = cli_ok(&app, &["token", "revoke", "--jti", &jti(&second)]);
        assert!(out.contains(&jti(&second)), "{out}");
        let (st, msg) = eventually(&app, &second, 401).await;
        assert_eq!(
            (st, msg.as_str()),
            (401, "token has been revoked"),
            "{backend:?}"
        );
        // The revocations survive a restart (loaded at start).
        let app = app.restart_after_crash().await;
        assert_eq!(status(&app, &first).await, 401, "{backend:?}");
        assert_eq!(status(&app, &second).await, 401, "{backend:?}");
        assert_eq!(status(&app, &admin).await, 200, "{backend:?}");
    }
}

#[tokio::test]
async fn revoking_a_principal_ends_its_earlier_tokens_but_not_new_ones() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let admin = app.token_with("acme", "boss", "admin", "1h");
        let a1 = app.token("acme", "alice");
        let a2 = app.token_with("acme", "alice", "operator", "10m");
        let bob = app.token("acme", "bob");
        let (st, body) = app
            .post(&admin, "/v1/tokens/revoke", json!({"principal": "alice"}))
            .await;
        assert_eq!(st, 200, "{body}");
        assert_eq!(body["kind"], "principal");
        assert_eq!(body["principal"], "alice");
        for t in [&a1, &a2] {
            let (st, body) = app.get(t, "/v1/sessions").await;
            assert_eq!(st, 401, "{backend:?}");
            assert_eq!(body["error"]["message"], "token has been revoked");
        }
        assert_eq!(status(&app, &bob).await, 200);
        // A token issued right after the revocation (same second) works.
        let (st, body) = app
            .post(&admin, "/v1/tokens", json!({"principal": "alice"}))
            .await;
        assert_eq!(st, 201, "{body}");
        let fresh = body["token"].as_str().unwrap();
        assert_eq!(status(&app, fresh).await, 200, "{backend:?}");
        // The CLI revokes bob's tokens; a CLI token issued afterwards works.
        let out = cli_ok(
            &app,
            &["token", "revoke", "--tenant", "acme", "--principal", "bob"],
        );
        assert!(out.contains("bob"), "{out}");
        let (st, _) = eventually(&app, &bob, 401).await;
        assert_eq!(st, 401, "{backend:?}");
        let bob2 = app.token("acme", "bob");
        assert_eq!(status(&app, &bob2).await, 200, "{backend:?}");
        // The CLI insists on a tenant for a principal and on one target.
        for args in [
            vec!["token", "revoke", "--principal", "bob"],
            vec!["token", "revoke"],
            vec![
                "token",
                "revoke",
                "--jti",
                "x",
                "--tenant",
                "acme",
                "--principal",
                "bob",
            ],
        ] {
            assert!(!app.cli(&args).status.success(), "{args:?}");
        }
    }
}

#[tokio::test]
async fn a_disabled_principal_is_refused_until_enabled() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let admin = app.token_with("acme", "boss", "admin", "1h");
        let alice = app.token("acme", "alice");
        let (st, body) = app
            .post(&admin, "/v1/principals/alice/disable", json!({}))
            .await;
        assert_eq!(st, 200, "{body}");
        assert_eq!(
            body,
            json!({"tenant": "acme", "principal": "alice", "disabled": true})
        );
        let (st, body) = app.get(&alice, "/v1/sessions").await;
        assert_eq!(st, 401, "{backend:?}");
        assert_eq!(body["error"]["message"], "principal is disabled");
        // No new token for a disabled principal, from the API or the CLI.
        let (st, body) = app
            .post(&admin, "/v1/tokens", json!({"principal": "alice"}))
            .await;
        assert_eq!(st, 409, "{body}");
        let out = app.cli(&["token", "issue", "--tenant", "acme", "--principal", "alice"]);
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("disabled"));
        let (st, body) = app
            .post(&admin, "/v1/principals/alice/enable", json!({}))
            .await;
        assert_eq!(st, 200, "{body}");
        assert_eq!(body["disabled"], false);
        assert_eq!(status(&app, &alice).await, 200, "{backend:?}");
        // An admin cannot disable itself; members and operators cannot disable anyone.
        let (st, _) = app
            .post(&admin, "/v1/principals/boss/disable", json!({}))
            .await;
        assert_eq!(st, 409);
        let ops = app.token_with("acme", "ops", "operator", "1h");
        for t in [&alice, &ops] {
            let (st, body) = app.post(t, "/v1/principals/bob/disable", json!({})).await;
            assert_eq!(st, 403, "{body}");
            let (st, _) = app
                .post(t, "/v1/tokens/revoke", json!({"principal": "bob"}))
                .await;
            assert_eq!(st, 403);
        }
        // The CLI disables and enables; running servers follow within a poll.
        cli_ok(
            &app,
            &[
                "principal",
                "disable",
                "--tenant",
                "acme",
                "--principal",
                "alice",
            ],
        );
        let (st, msg) = eventually(&app, &alice, 401).await;
        assert_eq!(
            (st, msg.as_str()),
            (401, "principal is disabled"),
            "{backend:?}"
        );
        let app = app.restart_after_crash().await;
        assert_eq!(
            status(&app, &alice).await,
            401,
            "still disabled after a restart"
        );
        cli_ok(
            &app,
            &[
                "principal",
                "enable",
                "--tenant",
                "acme",
                "--principal",
                "alice",
            ],
        );
        let (st, _) = eventually(&app, &alice, 200).await;
        assert_eq!(st, 200, "{backend:?}");
    }
}

#[tokio::test]
async fn a_one_second_token_is_refused_after_a_few_seconds() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token_with("acme", "alice", "member", "1s");
    let c = claims(&tok);
    assert_eq!(c["exp"].as_u64().unwrap() - c["iat"].as_u64().unwrap(), 1);
    assert_eq!(status(&app, &tok).await, 200);
    // Leeway is 5 s: by 7 s after issue it must be gone (it was ~30-60 s).
    tokio::time::sleep(Duration::from_secs(7)).await;
    let (st, body) = app.get(&tok, "/v1/sessions").await;
    assert_eq!(st, 401);
    assert_eq!(body["error"]["message"], "token expired");
}

#[tokio::test]
async fn tokens_from_the_future_or_living_too_long_are_refused() {
    let app = spawn_app(Backend::Sqlite).await;
    let key = home_key(&app);
    let base = json!({"iss":"demiurge","aud":"demiurge","sub":"alice","tenant":"acme","role":"member",
        "iat": now(), "exp": now() + 600, "jti": "j-future"});
    let with = |k: &str, v: Value| {
        let mut c = base.clone();
        c[k] = v;
        sign(&c, &key)
    };
    let cases = [
        (
            with("iat", json!(now() + 3600)),
            401,
            "issued in the future",
        ),
        (with("iat", json!(now() + 60)), 401, "issued in the future"),
        (with("nbf", json!(now() + 600)), 401, "not valid yet"),
        (with("exp", json!(now() + 31 * 24 * 3600)), 401, "maximum"),
        (with("iat", json!(now() + 2)), 200, ""),
        (with("nbf", json!(now() - 10)), 200, ""),
        (sign(&base, &key), 200, ""),
    ];
    for (tok, want, needle) in cases {
        let (st, body) = app.get(&tok, "/v1/sessions").await;
        assert_eq!(st, want, "{needle}: {body}");
        if want == 401 {
            let msg = body["error"]["message"].as_str().unwrap();
            assert!(msg.contains(needle), "{needle} not in {msg:?}");
        }
    }
    // `token issue` refuses a lifetime above the maximum, with the reason.
    let out = app.cli(&[
        "token",
        "issue",
        "--tenant",
        "acme",
        "--principal",
        "a",
        "--ttl",
        "31d",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("maximum token lifetime") && err.contains("--token-max-ttl"),
        "{err}"
    );
    let out = app.cli(&[
        "token",
        "issue",
        "--tenant",
        "acme",
        "--principal",
        "a",
        "--ttl",
        "0s",
    ]);
    assert!(!out.status.success());
    let out = app.cli(&[
        "token",
        "issue",
        "--tenant",
        "acme",
        "--principal",
        "a",
        "--ttl",
        "2h",
        "--token-max-ttl",
        "1h",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("3600"));
    let tok = app.token_with("acme", "a", "member", "30d");
    assert_eq!(status(&app, &tok).await, 200);
}

#[tokio::test]
async fn the_server_enforces_its_configured_maximum_lifetime() {
    let app = spawn_with(
        Backend::Sqlite,
        Opts::default().env("DEMIURGE_TOKEN_MAX_TTL", "1h"),
    )
    .await;
    // The first-start operator token respects the maximum too.
    let line = app
        .stdout_lines
        .iter()
        .find(|l| l.starts_with("operator token"))
        .unwrap();
    let op = line.rsplit(' ').next().unwrap();
    let c = claims(op);
    assert_eq!(
        c["exp"].as_u64().unwrap() - c["iat"].as_u64().unwrap(),
        3600
    );
    assert_eq!(status(&app, op).await, 200);
    // A two-hour token (signed by a CLI under the default maximum) is refused here.
    let long = app.token_with("acme", "a", "member", "2h");
    let (st, body) = app.get(&long, "/v1/sessions").await;
    assert_eq!(st, 401, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("maximum of 3600 s"));
    // The API refuses to issue past it.
    let admin = sign(
        &json!({"iss":"demiurge","aud":"demiurge","sub":"boss","tenant":"acme","role":"admin",
            "iat": now(), "exp": now() + 600, "jti": "j-admin"}),
        &home_key(&app),
    );
    let (st, body) = app
        .post(&admin, "/v1/tokens", json!({"principal": "x", "ttl": "2h"}))
        .await;
    assert_eq!(st, 400, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("maximum"));
}

#[tokio::test]
async fn tenant_admins_issue_tokens_for_their_own_tenant_only() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let admin = app.token_with("acme", "boss", "admin", "1h");
        let (st, body) = app
            .post(
                &admin,
                "/v1/tokens",
                json!({"principal": "newbie", "role": "operator", "ttl": "10m"}),
            )
            .await;
        assert_eq!(st, 201, "{backend:?}: {body}");
        let tok = body["token"].as_str().unwrap();
        assert_eq!(body["tenant"], "acme");
        assert_eq!(body["principal"], "newbie");
        assert_eq!(body["role"], "operator");
        assert_eq!(body["jti"], jti(tok));
        assert!(
            body["expires_at"].as_str().unwrap().ends_with('Z'),
            "{body}"
        );
        let c = claims(tok);
        assert_eq!(
            (c["tenant"].as_str(), c["sub"].as_str()),
            (Some("acme"), Some("newbie"))
        );
        assert_eq!(c["exp"].as_u64().unwrap() - c["iat"].as_u64().unwrap(), 600);
        assert_eq!(status(&app, tok).await, 200);
        // Naming its own tenant is fine; any other tenant is 403.
        let (st, body) = app
            .post(
                &admin,
                "/v1/tokens",
                json!({"principal": "x", "tenant": "acme"}),
            )
            .await;
        assert_eq!(st, 201, "{body}");
        assert_eq!(claims(body["token"].as_str().unwrap())["role"], "member");
        for other in ["evil", "default"] {
            let (st, body) = app
                .post(
                    &admin,
                    "/v1/tokens",
                    json!({"principal": "x", "tenant": other}),
                )
                .await;
            assert_eq!(st, 403, "{other}: {body}");
        }
        // Bad input is a 400; unknown fields are refused.
        for bad in [
            json!({"principal": "x", "role": "root"}),
            json!({"principal": "x", "role": "superadmin"}),
            json!({"principal": "../x"}),
            json!({"principal": "x", "ttl": "soon"}),
            json!({"principal": "x", "ttl": "0s"}),
            json!({"principal": "x", "ttl": "31d"}),
            json!({"principal": "x", "sub": "y"}),
            json!({}),
        ] {
            let (st, body) = app.post(&admin, "/v1/tokens", bad.clone()).await;
            assert_eq!(st, 400, "{bad}: {body}");
        }
        // Members and operators cannot issue at all.
        let member = app.token("acme", "alice");
        let ops = app.token_with("acme", "ops", "operator", "1h");
        for t in [&member, &ops] {
            let (st, body) = app
                .post(
                    t,
                    "/v1/tokens",
                    json!({"principal": "alice", "role": "member"}),
                )
                .await;
            assert_eq!(st, 403, "{body}");
        }
        // Another tenant's admin cannot revoke acme's tokens, by jti or principal.
        let evil = app.token_with("evil", "mallory", "admin", "1h");
        let (st, _) = app
            .post(&evil, "/v1/tokens/revoke", json!({"jti": jti(&member)}))
            .await;
        assert_eq!(st, 200, "a revocation in evil's own tenant");
        let (st, _) = app
            .post(&evil, "/v1/tokens/revoke", json!({"principal": "alice"}))
            .await;
        assert_eq!(st, 200);
        let (st, _) = app
            .post(&evil, "/v1/principals/alice/disable", json!({}))
            .await;
        assert_eq!(st, 200);
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert_eq!(
            status(&app, &member).await,
            200,
            "{backend:?}: acme's alice is untouched"
        );
        // Revoke requests need exactly one target.
        for bad in [
            json!({}),
            json!({"jti": "a", "principal": "b"}),
            json!({"jti": ""}),
        ] {
            let (st, body) = app.post(&admin, "/v1/tokens/revoke", bad.clone()).await;
            assert_eq!(st, 400, "{bad}: {body}");
        }
    }
}

#[tokio::test]
async fn revocation_reaches_every_instance_sharing_postgres() {
    if !backends().contains(&Backend::Postgres) {
        return;
    }
    let a = spawn_app(Backend::Postgres).await;
    let b = a.spawn_peer().await;
    let admin = a.token_with("acme", "boss", "admin", "1h");
    let alice = a.token("acme", "alice");
    let bob = a.token("acme", "bob");
    let carol = a.token("acme", "carol");
    for t in [&alice, &bob, &carol] {
        assert_eq!(status(&b, t).await, 200);
    }
    // Revoke on A: B refuses within about a second (the test allows 2 s).
    let (st, _) = a
        .post(&admin, "/v1/tokens/revoke", json!({"jti": jti(&alice)}))
        .await;
    assert_eq!(st, 200);
    assert_eq!(status(&a, &alice).await, 401);
    let (st, msg) = eventually(&b, &alice, 401).await;
    assert_eq!((st, msg.as_str()), (401, "token has been revoked"));
    // Disable on B: A refuses.
    let (st, _) = b
        .post(&admin, "/v1/principals/bob/disable", json!({}))
        .await;
    assert_eq!(st, 200);
    let (st, msg) = eventually(&a, &bob, 401).await;
    assert_eq!((st, msg.as_str()), (401, "principal is disabled"));
    // A principal revocation from the CLI reaches both.
    cli_ok(
        &a,
        &[
            "token",
            "revoke",
            "--tenant",
            "acme",
            "--principal",
            "carol",
        ],
    );
    assert_eq!(eventually(&a, &carol, 401).await.0, 401);
    assert_eq!(eventually(&b, &carol, 401).await.0, 401);
    // Enabling on A lets bob back in on B.
    let (st, _) = a.post(&admin, "/v1/principals/bob/enable", json!({})).await;
    assert_eq!(st, 200);
    assert_eq!(eventually(&b, &bob, 200).await.0, 200);
}

#[tokio::test]
async fn admins_list_their_own_tenants_principals_only() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let admin = app.token_with("acme", "ada", "admin", "1h");
        let member = app.token_with("acme", "bob", "member", "1h");
        let other = app.token_with("globex", "gus", "admin", "1h");
        // Tokens issued by the CLI record their principals.
        let (st, body) = app.get(&admin, "/v1/principals").await;
        assert_eq!(st, 200, "{body}");
        let names: Vec<&str> = body["principals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["principal"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["ada", "bob"], "{body}");
        let bob = &body["principals"][1];
        assert_eq!(bob["role"], "member");
        assert_eq!(bob["disabled"], false);
        assert!(bob["created_at"].as_str().unwrap().ends_with('Z'));

        // Disabling shows in the list.
        let (st, _) = app
            .post(&admin, "/v1/principals/bob/disable", json!({}))
            .await;
        assert_eq!(st, 200);
        let (_, body) = app.get(&admin, "/v1/principals").await;
        assert_eq!(body["principals"][1]["disabled"], true, "{body}");

        // Another tenant's admin sees only its own.
        let (st, body) = app.get(&other, "/v1/principals").await;
        assert_eq!(st, 200);
        let names: Vec<&str> = body["principals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["principal"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["gus"], "{body}");

        // Members and operators are refused with the envelope.
        let (st, body) = app.get(&member, "/v1/principals").await;
        assert!(st == 401 || st == 403, "{st} {body}");
        let op = app.token_with("acme", "olga", "operator", "1h");
        let (st, body) = app.get(&op, "/v1/principals").await;
        assert_eq!(st, 403, "{body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("admin"));
    }
}

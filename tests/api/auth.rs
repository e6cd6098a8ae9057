//! Bootstrap, token issue and every way a token can be refused.

use base64::Engine;
use serde_json::{json, Value};

use crate::helpers::*;

fn b64(v: &Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn sign(claims: &Value, key: &[u8]) -> String {
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        claims,
        &jsonwebtoken::EncodingKey::from_secret(key).unwrap(),
    )
    .unwrap()
}

fn home_key(app: &TestApp) -> Vec<u8> {
    let text = std::fs::read_to_string(app.home.join("keys/signing.key")).unwrap();
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .unwrap()
}

#[tokio::test]
async fn first_start_bootstraps_an_operator_token_and_a_private_key() {
    let app = spawn_app(Backend::Sqlite).await;
    let line = app
        .stdout_lines
        .iter()
        .find(|l| l.starts_with("operator token"))
        .expect("operator token printed");
    let token = line.rsplit(' ').next().unwrap();
    assert!(app
        .stdout_lines
        .iter()
        .any(|l| l.starts_with("console: http://") && l.ends_with("/console")));
    let (st, body) = app.get(token, "/v1/sessions").await;
    assert_eq!(st, 200, "{body}");
    assert_eq!(mode(&app.home.join("keys/signing.key")), 0o600);
    assert_eq!(mode(&app.home.join("keys")), 0o700);
    // Private: nobody else can list or write it. On a root server the tenants'
    // confined uids may pass through it (`0711`, traverse only), since the
    // default tenant's seed commit already runs as its uid.
    assert!(
        [0o700, 0o711].contains(&mode(&app.home)),
        "{:o}",
        mode(&app.home)
    );
    // A second start on the same home does not print another token.
    let app = app.restart_after_crash().await;
    assert!(
        !app.stdout_lines
            .iter()
            .any(|l| l.starts_with("operator token")),
        "{:?}",
        app.stdout_lines
    );
}

#[tokio::test]
async fn a_missing_token_is_401_with_a_clear_message() {
    let app = spawn_app(Backend::Sqlite).await;
    let r = app
        .client
        .get(app.url("/v1/sessions"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(r.headers()["www-authenticate"], "Bearer");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unauthorized");
    assert_eq!(body["error"]["message"], "missing bearer token");
}

#[tokio::test]
async fn bad_tokens_are_each_refused_with_their_reason() {
    let app = spawn_app(Backend::Sqlite).await;
    let key = home_key(&app);
    let good = json!({"iss":"demiurge","aud":"demiurge","sub":"alice","tenant":"default","role":"admin",
        "iat": now(), "exp": now() + 600, "jti": "j"});
    let mut expired = good.clone();
    expired["iat"] = json!(now() - 7200);
    expired["exp"] = json!(now() - 3600);
    let mut wrong_aud = good.clone();
    wrong_aud["aud"] = json!("someone-else");
    let mut wrong_iss = good.clone();
    wrong_iss["iss"] = json!("evil");
    let valid = sign(&good, &key);
    let parts: Vec<&str> = valid.split('.').collect();
    let mut forged = good.clone();
    forged["sub"] = json!("mallory");
    let cases = [
        (sign(&expired, &key), "token expired"),
        (sign(&wrong_aud, &key), "audience"),
        (sign(&wrong_iss, &key), "issuer"),
        (
            sign(&good, b"another key entirely, 32+ bytes long!!"),
            "signature",
        ),
        (
            format!(
                "{}.{}.",
                b64(&json!({"alg":"none","typ":"JWT"})),
                b64(&good)
            ),
            "alg none",
        ),
        (
            format!("{}.{}.{}", parts[0], b64(&forged), parts[2]),
            "signature",
        ),
        ("not-a-jwt".to_owned(), "malformed"),
    ];
    for (tok, needle) in cases {
        let (st, body) = app.get(&tok, "/v1/sessions").await;
        assert_eq!(st, 401, "{needle}: {body}");
        let msg = body["error"]["message"].as_str().unwrap();
        assert!(msg.contains(needle), "{needle} not in {msg:?}");
    }
    // The untampered token works, so the failures above are the tampering.
    assert_eq!(app.get(&valid, "/v1/sessions").await.0, 200);
}

#[tokio::test]
async fn token_issue_validates_its_input() {
    let app = spawn_app(Backend::Sqlite).await;
    for (args, needle) in [
        (
            vec![
                "token",
                "issue",
                "--tenant",
                "Bad Tenant",
                "--principal",
                "a",
            ],
            "Bad Tenant",
        ),
        (
            vec!["token", "issue", "--tenant", "t", "--principal", "../x"],
            "../x",
        ),
        (
            vec![
                "token",
                "issue",
                "--tenant",
                "t",
                "--principal",
                "a",
                "--ttl",
                "soon",
            ],
            "soon",
        ),
        (
            vec![
                "token",
                "issue",
                "--tenant",
                "t",
                "--principal",
                "a",
                "--role",
                "root",
            ],
            "root",
        ),
    ] {
        let out = app.cli(&args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{needle} not in {err}");
    }
}

#[tokio::test]
async fn an_operator_role_token_carries_its_role() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token_with("acme", "ops", "operator", "10m");
    let payload = tok.split('.').nth(1).unwrap();
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["role"], "operator");
    assert_eq!(claims["tenant"], "acme");
    assert_eq!(claims["sub"], "ops");
    let ttl = claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap();
    assert_eq!(ttl, 600);
}

#[tokio::test]
async fn tokens_of_an_external_identity_provider_are_accepted_with_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let private = dir.path().join("idp.pem");
    let public = dir.path().join("idp.pub.pem");
    let ok = std::process::Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(&private)
        .status()
        .unwrap();
    assert!(ok.success());
    let ok = std::process::Command::new("openssl")
        .args(["pkey", "-pubout", "-in"])
        .arg(&private)
        .arg("-out")
        .arg(&public)
        .status()
        .unwrap();
    assert!(ok.success());
    let app = spawn_with(
        Backend::Sqlite,
        Opts::default()
            .env("DEMIURGE_JWT_PUBLIC_KEY_FILE", public.to_str().unwrap())
            .env("DEMIURGE_JWT_PUBLIC_KEY_ALG", "EdDSA")
            .env("DEMIURGE_JWT_ISSUER", "https://idp.example"),
    )
    .await;
    let key = jsonwebtoken::EncodingKey::from_ed_pem(&std::fs::read(&private).unwrap()).unwrap();
    let sign_ed = |claims: &Value| {
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA),
            claims,
            &key,
        )
        .unwrap()
    };
    let claims = json!({"iss":"https://idp.example","aud":"demiurge","sub":"carol","tenant":"acme","role":"member",
        "iat": now(), "exp": now() + 600, "jti": "j"});
    let (st, body) = app.get(&sign_ed(&claims), "/v1/sessions").await;
    assert_eq!(st, 200, "{body}");
    let mut wrong_iss = claims.clone();
    wrong_iss["iss"] = json!("https://evil.example");
    let (st, body) = app.get(&sign_ed(&wrong_iss), "/v1/sessions").await;
    assert_eq!(st, 401);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("issuer"));
    // A token signed with another Ed25519 key is refused.
    let other = dir.path().join("other.pem");
    std::process::Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(&other)
        .status()
        .unwrap();
    let other_key =
        jsonwebtoken::EncodingKey::from_ed_pem(&std::fs::read(&other).unwrap()).unwrap();
    let forged = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA),
        &claims,
        &other_key,
    )
    .unwrap();
    assert_eq!(app.get(&forged, "/v1/sessions").await.0, 401);
}

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use super::*;
use crate::redactor::test_support::*;
use serde_json::json;

// URLs

#[test]
fn url_userinfo_password_redacted() {
    assert_eq!(
        model_str("fetch https://demo:URL_PW_123@example.test/data"),
        "fetch https://demo:<redacted>@example.test/data"
    );
}

#[test]
fn database_url_password_redacted() {
    let v = views_of(json!({"DATABASE_URL": "postgres://app:pg-Pass-99@db:5432/app"}));
    assert_eq!(
        v.model["DATABASE_URL"],
        json!("postgres://app:<redacted>@db:5432/app")
    );
    assert_eq!(
        v.sources,
        json!([{"name": "URL_USERINFO", "source": "url:DATABASE_URL.userinfo"}])
    );
}

#[test]
fn token_as_url_username_redacted() {
    let out =
        model_str("git clone https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/o/r");
    assert_eq!(out, "git clone https://<redacted>@github.com/o/r");
}

#[test]
fn plain_url_username_kept() {
    let s = "ssh://git@github.com/org/repo.git and https://alice@example.com/";
    assert_eq!(model_str(s), s);
}

#[test]
fn url_query_secret_redacted_public_kept() {
    let out = model_str("https://example.test/cb?access_token=QUERY_TOK_1&mode=summary");
    assert_eq!(
        out,
        "https://example.test/cb?access_token=<redacted>&mode=summary"
    );
}

#[test]
fn url_query_operator_name_is_param() {
    let out =
        SecretRedactor::new().redact_str_for("https://h/x?api_key=QK-1234567", View::Operator);
    assert_eq!(out, "https://h/x?api_key=<redacted:API_KEY>");
}

#[test]
fn percent_encoded_query_value_both_forms_removed() {
    let raw = json!({
        "url": "https://example.test/callback?access_token=SYN%5FENC%5FSECRET&mode=summary",
        "echo": "decoded SYN_ENC_SECRET here"
    });
    let v = views_of(raw);
    assert_no_secret(&v, &["SYN%5FENC%5FSECRET", "SYN_ENC_SECRET"]);
    assert!(text(&v.model).contains("mode=summary"));
}

#[test]
fn url_fragment_token_redacted() {
    assert_eq!(
        model_str("https://app.test/#access_token=FRAG_TOK_9&state=ok"),
        "https://app.test/#access_token=<redacted>&state=ok"
    );
}

#[test]
fn percent_encoded_userinfo_decoded_form_scrubbed() {
    let v = views_of(json!({
        "url": "https://bob:p%40ss-word9@host.test/",
        "log": "auth with p@ss-word9"
    }));
    assert_eq!(v.model["url"], json!("https://bob:<redacted>@host.test/"));
    assert_eq!(v.model["log"], json!("auth with <redacted>"));
}

#[test]
fn url_with_trailing_punctuation() {
    assert_eq!(
        model_str("(see https://u:TrailPw-1@h.example/path)."),
        "(see https://u:<redacted>@h.example/path)."
    );
}

#[test]
fn url_without_secrets_unchanged() {
    let s = "https://example.com/search?q=rust+lang&page=2#section-3 http://localhost:8080/";
    assert_eq!(model_str(s), s);
}

#[test]
fn aws_presigned_signature_redacted() {
    let out =
        model_str("https://b.s3.amazonaws.com/k?X-Amz-Signature=abcdef0123456789&X-Amz-Expires=60");
    assert_eq!(
        out,
        "https://b.s3.amazonaws.com/k?X-Amz-Signature=<redacted>&X-Amz-Expires=60"
    );
}

// authorization and secret headers

#[test]
fn authorization_bearer_header_text() {
    assert_eq!(
        model_str("Authorization: Bearer HDR_TOKEN_123"),
        "Authorization: Bearer <redacted>"
    );
}

#[test]
fn authorization_equals_form() {
    assert_eq!(
        model_str("authorization=AbC123xyz789&next=1"),
        "authorization=<redacted>&next=1"
    );
}

#[test]
fn proxy_authorization_basic_decoded_too() {
    // base64("u:proxy-pass-7") = dTpwcm94eS1wYXNzLTc=
    let r = SecretRedactor::new();
    let raw =
        json!({"log": "Proxy-Authorization: Basic dTpwcm94eS1wYXNzLTc=", "echo": "proxy-pass-7"});
    let v = r.views(&raw);
    assert_eq!(
        v.model["log"],
        json!("Proxy-Authorization: Basic <redacted>")
    );
    assert_eq!(v.model["echo"], json!("<redacted>"));
}

#[test]
fn json_text_authorization_header() {
    let s = r#"{"Authorization": "Bearer JSON_HDR_TOK_1", "X-Trace": "t-1"}"#;
    assert_eq!(
        model_str(s),
        r#"{"Authorization": "Bearer <redacted>", "X-Trace": "t-1"}"#
    );
}

#[test]
fn standalone_bearer_jwt() {
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig_abc-123";
    let out = model_str(&format!("sent bearer {jwt} ok"));
    assert_eq!(out, "sent bearer <redacted> ok");
}

#[test]
fn authorization_prose_unchanged() {
    for s in [
        "Authorization failed: invalid credentials",
        "authorization: required",
        "the bearer of bad news",
        "Bearer authentication is supported",
    ] {
        assert_eq!(model_str(s), s);
    }
}

#[test]
fn secret_header_in_curl_command() {
    let out = model_str("curl -H 'X-Api-Key: hdr-key-123' https://api.test");
    assert_eq!(out, "curl -H 'X-Api-Key: <redacted>' https://api.test");
}

#[test]
fn cookie_header_line() {
    let out = model_str("Cookie: session=abc123; theme=dark\nnext line");
    assert_eq!(out, "Cookie: <redacted>\nnext line");
}

#[test]
fn authorization_header_source_metadata() {
    let mut r = SecretRedactor::new();
    r.discover_text("Authorization: Bearer SRC_TOKEN_77");
    let d = &r.discovered()[0];
    assert_eq!(d.source, SecretSource::AuthorizationHeader);
    assert_eq!(d.source_label(), "header:text.authorization");
    assert_eq!(d.name(), "AUTHORIZATION");
}

// command options

#[test]
fn command_password_equals() {
    assert_eq!(
        model_str("pg_dump --password=CmdPw-123 db"),
        "pg_dump --password=<redacted> db"
    );
}

#[test]
fn command_password_space() {
    assert_eq!(
        model_str("tool --password CmdPw-456 --verbose"),
        "tool --password <redacted> --verbose"
    );
}

#[test]
fn command_token_equals() {
    assert_eq!(
        model_str("gh --token=gh-tok-999 api"),
        "gh --token=<redacted> api"
    );
}

#[test]
fn command_api_key_space() {
    assert_eq!(
        model_str("client --api-key ak-7777777 run"),
        "client --api-key <redacted> run"
    );
}

#[test]
fn command_option_operator_name() {
    let out = SecretRedactor::new().redact_str_for("x --api-key ak-7777777", View::Operator);
    assert_eq!(out, "x --api-key <redacted:API_KEY>");
    let mut r = SecretRedactor::new();
    r.discover_text("x --api-key ak-7777777");
    assert_eq!(
        r.discovered()[0].source,
        SecretSource::CommandOption("--api-key".into())
    );
}

#[test]
fn mysql_attached_p_password() {
    assert_eq!(
        model_str("mysql -u root -pMySqlSecret9 app"),
        "mysql -u root -p<redacted> app"
    );
}

#[test]
fn mysql_attached_quoted_password() {
    assert_eq!(
        model_str("mysqldump -u root -p'quoted pw 1' db"),
        "mysqldump -u root -p'<redacted>' db"
    );
}

#[test]
fn dash_p_outside_mysql_unchanged() {
    for s in [
        "mkdir -p /tmp/a/b",
        "ssh -p 2222 host",
        "cp -pr src dst",
        "docker run -p 8080:80 img",
    ] {
        assert_eq!(model_str(s), s);
    }
}

#[test]
fn sshpass_space_password() {
    assert_eq!(
        model_str("sshpass -p 'ssh pw 42' ssh host"),
        "sshpass -p '<redacted>' ssh host"
    );
}

#[test]
fn curl_user_password() {
    assert_eq!(
        model_str("curl -u alice:CurlPw-11 https://h"),
        "curl -u alice:<redacted> https://h"
    );
}

#[test]
fn openssl_pass_argument() {
    assert_eq!(
        model_str("openssl enc -pass pass:OsslPw-5 -in f"),
        "openssl enc -pass pass:<redacted> -in f"
    );
    let s = "openssl enc -pass env:MYVAR -in f";
    assert_eq!(model_str(s), s);
}

#[test]
fn option_followed_by_flag_is_not_a_value() {
    let s = "psql --password --host db";
    assert_eq!(model_str(s), s);
}

#[test]
fn negated_and_related_flags_unchanged() {
    for s in [
        "psql --no-password -h db",
        "docker login --password-stdin",
        "tool --token-file /run/tok",
    ] {
        assert_eq!(model_str(s), s);
    }
}

#[test]
fn quoted_option_value_with_spaces() {
    assert_eq!(
        model_str(r#"app --secret "two words 9" go"#),
        r#"app --secret "<redacted>" go"#
    );
}

#[test]
fn short_option_value_positional_only() {
    let raw = json!({"cmd": "app --password=ab", "note": "ab is a word"});
    let v = views_of(raw);
    assert_eq!(v.model["cmd"], json!("app --password=<redacted>"));
    assert_eq!(v.model["note"], json!("ab is a word"));
}

#[test]
fn env_style_assignment_in_command() {
    assert_eq!(
        model_str("GITHUB_TOKEN=gh-env-tok-1 ./deploy.sh"),
        "GITHUB_TOKEN=<redacted> ./deploy.sh"
    );
    assert_eq!(
        model_str("docker run -e DB_PASSWORD=dockerPw1 img"),
        "docker run -e DB_PASSWORD=<redacted> img"
    );
}

// ---------------------------------------------------------------------------
// key=value / key: value in text
// ---------------------------------------------------------------------------

#[test]
fn assignment_password_equals() {
    assert_eq!(
        model_str("connect failed password=AssignPw1 user=bob"),
        "connect failed password=<redacted> user=bob"
    );
}

#[test]
fn assignment_source_label() {
    let mut r = SecretRedactor::new();
    r.discover_text("password=AssignPw1");
    assert_eq!(r.discovered()[0].source_label(), "text:text.password");
}

#[test]
fn json_text_secret_field() {
    assert_eq!(
        model_str(r#"payload {"api_key": "JsonTextKey1", "n": 1}"#),
        r#"payload {"api_key": "<redacted>", "n": 1}"#
    );
}

#[test]
fn escaped_json_text_secret_field() {
    assert_eq!(
        model_str(r#"body: {\"password\": \"EscPw-1\"}"#),
        r#"body: {\"password\": \"<redacted>\"}"#
    );
}

#[test]
fn yaml_style_password() {
    assert_eq!(
        model_str("db:\n  password: hunter2yaml\n  host: x"),
        "db:\n  password: <redacted>\n  host: x"
    );
}

#[test]
fn colon_prose_is_not_a_secret() {
    let s = "error: token: expired, please log in";
    assert_eq!(model_str(s), s);
}

#[test]
fn colon_valued_token_redacted() {
    assert_eq!(model_str("token: abc123def"), "token: <redacted>");
}

#[test]
fn comparison_operators_not_assignments() {
    let s = "if password == other and token != nil";
    assert_eq!(model_str(s), s);
}

// ---------------------------------------------------------------------------
// token shapes
// ---------------------------------------------------------------------------

#[test]
fn openai_style_key() {
    assert_eq!(
        model_str("key sk-proj-Ab12Cd34Ef56Gh78Ij90Kl in text"),
        "key <redacted> in text"
    );
}

#[test]
fn sk_prefix_without_digits_unchanged() {
    let s = "use sk-learn-compatible-estimator-wrapper here; also task-abcdefghijklmnopqrstuvwxyz1";
    assert_eq!(model_str(s), s);
}

#[test]
fn github_tokens() {
    let classic = "ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let fine = "github_pat_11ABCDEFG0123456789_abcdefghijklmnop";
    let out = model_str(&format!("{classic} and {fine}"));
    assert_eq!(out, "<redacted> and <redacted>");
}

#[test]
fn slack_tokens() {
    let out = model_str("xoxb-1234567890-abcdefghij and xoxp-9876543210-zyxw");
    assert_eq!(out, "<redacted> and <redacted>");
}

#[test]
fn aws_access_key_id() {
    assert_eq!(
        model_str("id=AKIAIOSFODNN7EXAMPLE region"),
        "id=<redacted> region"
    );
    // wrong length is not a key id
    let s = "AKIAIOSFODNN7EXAMPLEXX";
    assert_eq!(model_str(s), s);
}

#[test]
fn google_api_key() {
    let out = model_str("AIzaSyA1234567890abcdefghijklmnopqrstu used");
    assert_eq!(out, "<redacted> used");
}

#[test]
fn gitlab_token() {
    assert_eq!(model_str("glpat-abcdefghij0123456789"), "<redacted>");
}

#[test]
fn jwt_in_text() {
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl";
    assert_eq!(model_str(&format!("jwt={jwt}.")), "jwt=<redacted>.");
    assert_eq!(model_str(&format!("({jwt})")), "(<redacted>)");
}

#[test]
fn pem_private_key_block() {
    let pem =
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx\nabc\n-----END RSA PRIVATE KEY-----";
    let out = model_str(&format!("key:\n{pem}\ndone"));
    assert_eq!(out, "key:\n<redacted>\ndone");
    let public = "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----";
    assert_eq!(model_str(public), public);
}

#[test]
fn token_shape_source() {
    let mut r = SecretRedactor::new();
    r.discover_text("ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
    assert_eq!(
        r.discovered()[0].source,
        SecretSource::TokenShape("github_token".into())
    );
    assert_eq!(r.discovered()[0].name(), "GITHUB_TOKEN");
}

// ---------------------------------------------------------------------------
// exception text
// ---------------------------------------------------------------------------

#[test]
fn exception_with_url_credentials() {
    let r = SecretRedactor::new();
    let out = r.redact_exception(
        "ConnectionError: could not reach postgres://svc:ExcPw-77@db.internal:5432/app",
        View::Operator,
    );
    assert_eq!(
        out,
        "ConnectionError: could not reach postgres://svc:<redacted:URL_USERINFO>@db.internal:5432/app"
    );
}

#[test]
fn exception_auth_and_query_parity() {
    let r = SecretRedactor::new();
    let out = r.redact_exception(
        "provider failed\nAuthorization: Bearer SYN_EXC_AUTH_1 https://example.test/cb?token=SYN_EXC_Q_1",
        View::Operator,
    );
    assert!(out.starts_with("provider failed\n"));
    assert!(out.contains("<redacted:AUTHORIZATION>"));
    assert!(out.contains("<redacted:TOKEN>"));
    assert!(!out.contains("SYN_EXC_AUTH_1") && !out.contains("SYN_EXC_Q_1"));
}

#[test]
fn exception_quoted_token_under_error_key() {
    let v = views_of(json!({"error": "invalid token 'qtok-4455' for user", "out": "qtok-4455"}));
    assert_eq!(
        v.model["error"],
        json!("invalid token '<redacted>' for user")
    );
    assert_eq!(v.model["out"], json!("<redacted>"));
    assert_eq!(
        v.operator["error"],
        json!("invalid token '<redacted:EXCEPTION_SECRET>' for user")
    );
}

#[test]
fn exception_api_key_provided() {
    let mut r = SecretRedactor::new();
    r.discover_exception("Incorrect API key provided: my-key-0042. See docs.");
    assert!(r.discovered().iter().any(|d| d.value == "my-key-0042"));
    let out = r.redact_exception(
        "Incorrect API key provided: my-key-0042. See docs.",
        View::Model,
    );
    assert_eq!(out, "Incorrect API key provided: <redacted>. See docs.");
}

#[test]
fn exception_heuristics_only_in_error_context() {
    let raw = json!({"content": "map key 'username' and token 'name' in code"});
    let v = views_of(raw.clone());
    assert_eq!(v.model, raw);
    let v = views_of(json!({"stderr": "password 'hunter22x' rejected"}));
    assert_eq!(v.model["stderr"], json!("password '<redacted>' rejected"));
}

#[test]
fn exception_source_kind() {
    let mut r = SecretRedactor::new();
    r.discover_exception("bad password \"quoted-pw-1\"");
    let d = r
        .discovered()
        .iter()
        .find(|d| d.source == SecretSource::ExceptionText)
        .unwrap();
    assert_eq!(d.source_label(), "exception:exception");
}

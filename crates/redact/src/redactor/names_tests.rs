#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use super::*;

// fingerprint / names

#[test]
fn normalize_name_handles_case_styles() {
    assert_eq!(normalize_name("X-Api-Key"), "x_api_key");
    assert_eq!(normalize_name("accessToken"), "access_token");
    assert_eq!(normalize_name("APIKey"), "api_key");
    assert_eq!(normalize_name("OPENAI_API_KEY"), "openai_api_key");
    assert_eq!(normalize_name("  client.secret "), "client_secret");
    assert_eq!(normalize_name("oauth2Token"), "oauth2_token");
}

#[test]
fn sensitive_names_positive() {
    for name in [
        "password",
        "Password",
        "passwd",
        "token",
        "secret",
        "api_key",
        "apiKey",
        "API-KEY",
        "authorization",
        "Proxy-Authorization",
        "X-Api-Key",
        "client_secret",
        "refresh_token",
        "GITHUB_TOKEN",
        "DB_PASSWORD",
        "PGPASSWORD",
        "aws_secret_access_key",
        "private_key",
        "cookie",
        "credentials",
        "webhookSecret",
    ] {
        assert!(is_sensitive_name(name), "{name} should be sensitive");
    }
}

#[test]
fn sensitive_names_negative() {
    for name in [
        "token_count",
        "max_tokens",
        "tokens",
        "author",
        "password_file",
        "token_type",
        "secret_bindings",
        "key",
        "primary_key",
        "no_password",
        "signature",
        "description",
        "",
    ] {
        assert!(!is_sensitive_name(name), "{name} should not be sensitive");
    }
}

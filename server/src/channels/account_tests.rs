use super::*;
use serde_json::json;

#[test]
fn credentials_by_platform() {
    let ok = [
        (
            ChannelKind::Telegram,
            json!({"bot_token": "123456:ABC-def_ghi", "secret_token": "s3cret_-x"}),
        ),
        (
            ChannelKind::Slack,
            json!({"bot_token": "xoxb-1-2-abc", "signing_secret": "8f742231b10e8888abcd99yyyzzz85a5"}),
        ),
        (
            ChannelKind::Discord,
            json!({"application_id": "123456789012345678", "public_key": "a".repeat(64), "bot_token": "MTk4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs"}),
        ),
        (
            ChannelKind::Webhook,
            json!({"secret": "any secret at all", "callback_url": "https://hooks.example.com/demiurge"}),
        ),
    ];
    for (p, v) in ok {
        let c = Credentials::parse(p, &v).unwrap_or_else(|e| panic!("{p}: {e}"));
        assert!(!c.secrets().is_empty());
        assert_eq!(format!("{c:?}"), "Credentials(<redacted>)");
    }
}

#[test]
fn bad_credentials_are_refused_without_echoing_them() {
    let bad = [
        (
            ChannelKind::Telegram,
            json!({"bot_token": "123/../x", "secret_token": "s"}),
        ),
        (
            ChannelKind::Telegram,
            json!({"bot_token": "1:a", "secret_token": "has space"}),
        ),
        (ChannelKind::Telegram, json!({"bot_token": "1:a"})),
        (
            ChannelKind::Telegram,
            json!({"bot_token": "1:a", "secret_token": "s", "extra": "x"}),
        ),
        (
            ChannelKind::Slack,
            json!({"bot_token": "", "signing_secret": "x"}),
        ),
        (
            ChannelKind::Discord,
            json!({"application_id": "12a", "public_key": "a".repeat(64), "bot_token": "t"}),
        ),
        (
            ChannelKind::Discord,
            json!({"application_id": "12", "public_key": "zz", "bot_token": "t"}),
        ),
        (
            ChannelKind::Webhook,
            json!({"secret": "x", "callback_url": "ftp://h/x"}),
        ),
        (
            ChannelKind::Webhook,
            json!({"secret": "x", "callback_url": "https://u:p@h/x"}),
        ),
        (
            ChannelKind::Webhook,
            json!({"secret": "", "callback_url": "https://h/x"}),
        ),
        (ChannelKind::Slack, json!("xoxb-1")),
    ];
    for (p, v) in bad {
        let e = Credentials::parse(p, &v).unwrap_err();
        for secret in ["123/../x", "has space", "xoxb-1", "u:p"] {
            assert!(!e.contains(secret), "{e}");
        }
    }
}

#[test]
fn base_urls() {
    assert_eq!(
        check_base_url("http://127.0.0.1:9/api/").unwrap(),
        "http://127.0.0.1:9/api"
    );
    assert_eq!(
        check_base_url("https://slack.com/api").unwrap(),
        "https://slack.com/api"
    );
    for bad in [
        "",
        "slack.com",
        "file:///etc",
        "https://a@b/x",
        "https://h/x?q=1",
        "https://h/#f",
    ] {
        assert!(check_base_url(bad).is_err(), "{bad}");
    }
}

#[test]
fn principals_are_per_account_and_valid() {
    let a = "0191e3c0-08f4-7299-91e4-607295542110";
    let b = "0191e3c0-08f4-7299-91e4-607295542111";
    let p = principal_for(ChannelKind::Telegram, a, "123456789");
    assert_eq!(p, "telegram-0191e3c008f4729991e4607295542110-123456789");
    assert_ne!(p, principal_for(ChannelKind::Telegram, b, "123456789"));
    for user in ["U024BE7LH", "a b", "../x", "名前", "", &"x".repeat(200)] {
        let p = principal_for(ChannelKind::Webhook, a, user);
        assert!(crate::ids::PrincipalId::parse(&p).is_ok(), "{p}");
    }
    assert_ne!(
        principal_for(ChannelKind::Webhook, a, "a b"),
        principal_for(ChannelKind::Webhook, a, "a c")
    );
}

#[test]
fn pairing_codes_are_eight_unambiguous_characters() {
    let mut n = 0u8;
    let code = pairing_code(|| {
        n = n.wrapping_add(37);
        n
    });
    assert_eq!(code.len(), PAIRING_LEN);
    assert!(code.bytes().all(|b| PAIRING_ALPHABET.contains(&b)));
    for c in ["0", "O", "1", "I", "L"] {
        assert!(!code.contains(c));
    }
    assert_eq!(normalize_code("abcd-efgh"), Some("ABCDEFGH".into()));
    assert_eq!(normalize_code(&code.to_lowercase()), Some(code));
    for bad in ["", "ABCDEFG", "ABCDEFGHJ", "ABCDEFG0", "ABCD EFGI"] {
        assert_eq!(normalize_code(bad), None, "{bad}");
    }
}

#[test]
fn names_and_users() {
    assert!(check_name("support bot").is_ok());
    assert!(check_name("").is_err());
    assert!(check_name(&"n".repeat(101)).is_err());
    assert!(check_allowed_users(&["1".into(), "U1".into()]).is_ok());
    assert!(check_allowed_users(&["".into()]).is_err());
    assert!(check_allowed_users(&["a\nb".into()]).is_err());
}

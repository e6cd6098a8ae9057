use super::*;

// Slack's documented signing example (api.slack.com, "Verifying requests
// from Slack"): this secret, timestamp and slash-command body give this
// signature.
const SLACK_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const SLACK_TS: &str = "1531420618";
const SLACK_BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
const SLACK_SIG: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
const SLACK_NOW: i64 = 1531420618 + 30;

#[test]
fn slack_accepts_the_documented_example() {
    assert_eq!(
        slack(
            SLACK_SECRET,
            Some(SLACK_TS),
            Some(SLACK_SIG),
            SLACK_BODY.as_bytes(),
            SLACK_NOW
        ),
        Ok(())
    );
}

/// (timestamp, signature, body, now, secret, expected refusal)
type SlackCase<'a> = (
    Option<&'a str>,
    Option<&'a str>,
    &'a [u8],
    i64,
    &'a str,
    VerifyError,
);

#[test]
fn slack_refusals() {
    let body = SLACK_BODY.as_bytes();
    let cases: Vec<SlackCase> = vec![
        (
            None,
            Some(SLACK_SIG),
            body,
            SLACK_NOW,
            SLACK_SECRET,
            VerifyError::Missing("X-Slack-Request-Timestamp"),
        ),
        (
            Some(SLACK_TS),
            None,
            body,
            SLACK_NOW,
            SLACK_SECRET,
            VerifyError::Missing("X-Slack-Signature"),
        ),
        (
            Some("yesterday"),
            Some(SLACK_SIG),
            body,
            SLACK_NOW,
            SLACK_SECRET,
            VerifyError::Malformed("X-Slack-Request-Timestamp"),
        ),
        (
            Some(SLACK_TS),
            Some(SLACK_SIG),
            body,
            1531420618 + 301,
            SLACK_SECRET,
            VerifyError::Stale(300),
        ),
        (
            Some(SLACK_TS),
            Some(SLACK_SIG),
            body,
            1531420618 - 301,
            SLACK_SECRET,
            VerifyError::Stale(300),
        ),
        (
            Some(SLACK_TS),
            Some("a2114d57b48e"),
            body,
            SLACK_NOW,
            SLACK_SECRET,
            VerifyError::Malformed("X-Slack-Signature"),
        ),
        (
            Some(SLACK_TS),
            Some("v0=zz"),
            body,
            SLACK_NOW,
            SLACK_SECRET,
            VerifyError::Malformed("X-Slack-Signature"),
        ),
        (
            Some(SLACK_TS),
            Some("v1=a2114d57"),
            body,
            SLACK_NOW,
            SLACK_SECRET,
            VerifyError::Malformed("X-Slack-Signature"),
        ),
        (
            Some(SLACK_TS),
            Some(SLACK_SIG),
            b"token=tampered",
            SLACK_NOW,
            SLACK_SECRET,
            VerifyError::Mismatch,
        ),
        (
            Some(SLACK_TS),
            Some(SLACK_SIG),
            body,
            SLACK_NOW,
            "another-secret",
            VerifyError::Mismatch,
        ),
        (
            Some("1531420619"),
            Some(SLACK_SIG),
            body,
            SLACK_NOW,
            SLACK_SECRET,
            VerifyError::Mismatch,
        ),
        (
            Some(SLACK_TS),
            Some("v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b5"),
            body,
            SLACK_NOW,
            SLACK_SECRET,
            VerifyError::Mismatch,
        ),
        (
            Some(SLACK_TS),
            Some("v0="),
            body,
            SLACK_NOW,
            SLACK_SECRET,
            VerifyError::Mismatch,
        ),
    ];
    for (ts, sig, body, now, secret, want) in cases {
        assert_eq!(
            slack(secret, ts, sig, body, now),
            Err(want.clone()),
            "{ts:?} {sig:?} {now}"
        );
    }
}

#[test]
fn slack_window_edges_are_inclusive() {
    let body = SLACK_BODY.as_bytes();
    for now in [1531420618 - 300, 1531420618, 1531420618 + 300] {
        assert_eq!(
            slack(SLACK_SECRET, Some(SLACK_TS), Some(SLACK_SIG), body, now),
            Ok(())
        );
    }
}

#[test]
fn telegram_compares_the_secret_token() {
    assert_eq!(telegram("s3cr3t-token", Some("s3cr3t-token")), Ok(()));
    for (secret, header, want) in [
        (
            "s3cr3t-token",
            None,
            VerifyError::Missing("X-Telegram-Bot-Api-Secret-Token"),
        ),
        ("s3cr3t-token", Some("s3cr3t-toke"), VerifyError::Mismatch),
        ("s3cr3t-token", Some("s3cr3t-token "), VerifyError::Mismatch),
        ("s3cr3t-token", Some(""), VerifyError::Mismatch),
        ("s3cr3t-token", Some("S3CR3T-TOKEN"), VerifyError::Mismatch),
        ("", Some(""), VerifyError::Mismatch),
    ] {
        assert_eq!(telegram(secret, header), Err(want), "{header:?}");
    }
}

// RFC 8032, section 7.1, tests 1 and 2: Discord signs timestamp ‖ body, so
// an empty timestamp and body is test 1's empty message and "r" is test 2's 0x72.
const RFC1_PUBLIC: &str = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
const RFC1_SIG: &str = "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b";
const RFC2_PUBLIC: &str = "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c";
const RFC2_SIG: &str = "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00";

#[test]
fn discord_verifies_rfc8032_vectors() {
    assert_eq!(discord(RFC1_PUBLIC, Some(RFC1_SIG), Some(""), b""), Ok(()));
    assert_eq!(discord(RFC2_PUBLIC, Some(RFC2_SIG), Some("r"), b""), Ok(()));
    assert_eq!(discord(RFC2_PUBLIC, Some(RFC2_SIG), Some(""), b"r"), Ok(()));
}

#[test]
fn discord_refusals() {
    let cases = [
        (
            RFC1_PUBLIC,
            None,
            Some(""),
            &b""[..],
            VerifyError::Missing("X-Signature-Ed25519"),
        ),
        (
            RFC1_PUBLIC,
            Some(RFC1_SIG),
            None,
            &b""[..],
            VerifyError::Missing("X-Signature-Timestamp"),
        ),
        (
            "not-hex",
            Some(RFC1_SIG),
            Some(""),
            &b""[..],
            VerifyError::Malformed("public key"),
        ),
        (
            "d75a98",
            Some(RFC1_SIG),
            Some(""),
            &b""[..],
            VerifyError::Malformed("public key"),
        ),
        (
            RFC1_PUBLIC,
            Some("e556"),
            Some(""),
            &b""[..],
            VerifyError::Malformed("X-Signature-Ed25519"),
        ),
        (
            RFC1_PUBLIC,
            Some(RFC1_SIG),
            Some("1700000000"),
            &b""[..],
            VerifyError::Mismatch,
        ),
        (
            RFC1_PUBLIC,
            Some(RFC1_SIG),
            Some(""),
            &b"{\"type\":1}"[..],
            VerifyError::Mismatch,
        ),
        (
            RFC2_PUBLIC,
            Some(RFC1_SIG),
            Some(""),
            &b""[..],
            VerifyError::Mismatch,
        ),
    ];
    for (key, sig, ts, body, want) in cases {
        assert_eq!(
            discord(key, sig, ts, body),
            Err(want.clone()),
            "{sig:?} {ts:?}"
        );
    }
}

#[test]
fn webhook_signatures_round_trip_and_refuse_changes() {
    let body = br#"{"user":"u1","conversation":"c1","text":"hello"}"#;
    let sig = webhook_signature("hook-secret", body).unwrap();
    assert!(sig.starts_with("sha256=") && sig.len() == 7 + 64, "{sig}");
    assert_eq!(webhook("hook-secret", Some(&sig), body), Ok(()));
    // Python: hmac.new(b"key", b"The quick brown fox jumps over the lazy dog", sha256)
    assert_eq!(
        webhook_signature("key", b"The quick brown fox jumps over the lazy dog").unwrap(),
        "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
    );
    let cases = [
        (
            "hook-secret",
            None,
            &body[..],
            VerifyError::Missing("X-Demiurge-Signature"),
        ),
        (
            "hook-secret",
            Some("md5=abc"),
            &body[..],
            VerifyError::Malformed("X-Demiurge-Signature"),
        ),
        (
            "hook-secret",
            Some("sha256=xyz"),
            &body[..],
            VerifyError::Malformed("X-Demiurge-Signature"),
        ),
        (
            "other",
            Some(sig.as_str()),
            &body[..],
            VerifyError::Mismatch,
        ),
        (
            "hook-secret",
            Some(sig.as_str()),
            &b"{}"[..],
            VerifyError::Mismatch,
        ),
        ("", Some(sig.as_str()), &body[..], VerifyError::Mismatch),
    ];
    for (secret, header, body, want) in cases {
        assert_eq!(
            webhook(secret, header, body),
            Err(want.clone()),
            "{header:?}"
        );
    }
}

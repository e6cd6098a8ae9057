use std::os::unix::fs::PermissionsExt;

use chacha20poly1305::aead::{Aead, KeyInit, Payload};

use super::*;
use crate::config::DatabaseConfig;
use crate::ids::PrincipalId;

fn t(s: &str) -> TenantId {
    TenantId::parse(s).unwrap()
}

fn provider<'a>(tenant: &'a TenantId, provider: &'a str) -> Binding<'a> {
    Binding::ProviderKey { tenant, provider }
}

#[test]
fn a_sealed_value_opens_only_for_its_binding_and_key() {
    let s = Sealer::from_bytes(&[7u8; 32]).unwrap();
    let acme = t("acme");
    let globex = t("globex");
    let sealed = s.seal(provider(&acme, "anthropic"), b"sk-ant-123").unwrap();
    assert!(!sealed.contains("sk-ant"));
    assert_eq!(
        s.open_text(provider(&acme, "anthropic"), &sealed).unwrap(),
        "sk-ant-123"
    );
    for wrong in [
        provider(&globex, "anthropic"),
        provider(&acme, "openai"),
        Binding::ChannelAccount("acme"),
        Binding::ChannelAccount("anthropic"),
    ] {
        assert!(matches!(s.open(wrong, &sealed), Err(SealError::Rejected)));
    }
    let other = Sealer::from_bytes(&[8u8; 32]).unwrap();
    assert!(matches!(
        other.open(provider(&acme, "anthropic"), &sealed),
        Err(SealError::Rejected)
    ));
    // A fresh nonce each time.
    assert_ne!(
        sealed,
        s.seal(provider(&acme, "anthropic"), b"sk-ant-123").unwrap()
    );
}

#[test]
fn account_credentials_open_only_for_their_account() {
    let s = Sealer::from_bytes(&[7u8; 32]).unwrap();
    let sealed = s
        .seal(
            Binding::ChannelAccount("acct-1"),
            b"{\"bot_token\":\"123:abc\"}",
        )
        .unwrap();
    assert!(!sealed.contains("abc"));
    assert_eq!(
        s.open(Binding::ChannelAccount("acct-1"), &sealed).unwrap(),
        b"{\"bot_token\":\"123:abc\"}"
    );
    assert!(s.open(Binding::ChannelAccount("acct-2"), &sealed).is_err());
}

#[test]
fn malformed_values_are_told_apart_from_rejected_ones() {
    let s = Sealer::from_bytes(&[7u8; 32]).unwrap();
    let b = Binding::ChannelAccount("a");
    for bad in ["", "!!", "not base64!", "AAAA", &"A".repeat(32)] {
        assert!(matches!(s.open(b, bad), Err(SealError::Malformed)), "{bad}");
    }
    // Long enough to split, but not a sealed value.
    assert!(matches!(
        s.open(b, &"A".repeat(64)),
        Err(SealError::Rejected)
    ));
    let sealed = s.seal(b, &[0xff, 0xfe]).unwrap();
    assert!(matches!(s.open_text(b, &sealed), Err(SealError::Malformed)));
    assert!(Sealer::from_bytes(&[1u8; 31]).is_err());
    assert!(format!("{s:?}").contains("redacted"));
}

#[test]
fn the_key_file_is_private_and_reused() {
    let dir = tempfile::tempdir().unwrap();
    let a = Sealer::load_or_create(dir.path()).unwrap();
    let sealed = a.seal(Binding::ChannelAccount("x"), b"secret").unwrap();
    let b = Sealer::load_or_create(dir.path()).unwrap();
    assert_eq!(
        b.open(Binding::ChannelAccount("x"), &sealed).unwrap(),
        b"secret"
    );
    let mode = std::fs::metadata(dir.path().join("keys/sealing.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn an_older_homes_channel_key_is_adopted() {
    let dir = tempfile::tempdir().unwrap();
    // What the first homes made: keys/channels.key with the same cipher.
    let old = crate::auth::load_or_create_key(dir.path(), "channels.key", 32).unwrap();
    let sealed = Sealer::from_bytes(&old)
        .unwrap()
        .seal(Binding::ChannelAccount("acct"), b"creds")
        .unwrap();
    let s = Sealer::load_or_create(dir.path()).unwrap();
    assert_eq!(
        s.open(Binding::ChannelAccount("acct"), &sealed).unwrap(),
        b"creds"
    );
    assert!(!dir.path().join("keys/channels.key").exists());
    assert!(dir.path().join("keys/sealing.key").exists());
}

#[tokio::test]
async fn provider_keys_sealed_under_the_old_key_are_resealed_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&DatabaseConfig::resolve(dir.path(), None).unwrap())
        .await
        .unwrap();
    let acme = t("acme");
    let by = PrincipalId::parse("admin").unwrap();
    // Seal the way the first homes did: ChaCha20-Poly1305, 12-byte nonce.
    let old = crate::auth::load_or_create_key(dir.path(), "credentials.key", 32).unwrap();
    let old = chacha20poly1305::ChaCha20Poly1305::new_from_slice(&old).unwrap();
    let aad = provider(&acme, "openai").aad();
    let nonce = [3u8; 12];
    let ct = old
        .encrypt(
            chacha20poly1305::Nonce::from_slice(&nonce),
            Payload {
                msg: b"sk-old",
                aad: &aad,
            },
        )
        .unwrap();
    let legacy = base64::engine::general_purpose::STANDARD.encode([&nonce[..], &ct].concat());
    store
        .put_provider_key(&acme, "openai", &legacy, &by, None)
        .await
        .unwrap();
    // A row that opens under no key stays as it is.
    store
        .put_provider_key(
            &acme,
            "anthropic",
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            &by,
            None,
        )
        .await
        .unwrap();

    let s = Sealer::load_or_create(dir.path()).unwrap();
    assert_eq!(
        reseal_legacy_provider_keys(dir.path(), &store, &s)
            .await
            .unwrap(),
        1
    );
    let row = store.provider_key(&acme, "openai").await.unwrap().unwrap();
    assert_ne!(row.sealed, legacy);
    assert_eq!(
        s.open_text(provider(&acme, "openai"), &row.sealed).unwrap(),
        "sk-old"
    );
    assert!(!dir.path().join("keys/credentials.key").exists());
    assert!(dir.path().join("keys/credentials.key.retired").exists());
    // Once retired, nothing runs again.
    assert_eq!(
        reseal_legacy_provider_keys(dir.path(), &store, &s)
            .await
            .unwrap(),
        0
    );
}

//! Credentials at rest: sealed with XChaCha20-Poly1305 (the maintained
//! `chacha20poly1305` crate) under a 32-byte key at `<home>/keys/channels.key`,
//! created 0600 at the first start. The account id is the associated data,
//! so a sealed blob moved to another account does not open. Instances that
//! share a database must share this file (like `signing.key`).

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use anyhow::{bail, Context};
use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

const KEY_BYTES: usize = 32;
const NONCE_BYTES: usize = 24;

/// The sealing key; never printed.
#[derive(Clone)]
pub struct SealKey(XChaCha20Poly1305);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(<redacted>)")
    }
}

#[derive(Debug, thiserror::Error)]
#[error("stored credentials cannot be opened (wrong key or damaged record)")]
pub struct OpenError;

impl SealKey {
    /// Load the key, creating it (0600, in a 0700 folder) on the first start.
    pub fn load_or_create(home: &Path) -> anyhow::Result<Self> {
        let dir = crate::home::HomeLayout::new(home).keys_dir();
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("create {}", dir.display()))?;
        let path = dir.join("channels.key");
        let bytes = match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(mut f) => {
                let mut key = vec![0u8; KEY_BYTES];
                getrandom::getrandom(&mut key).map_err(|e| anyhow::anyhow!("random key: {e}"))?;
                f.write_all(
                    base64::engine::general_purpose::STANDARD
                        .encode(&key)
                        .as_bytes(),
                )?;
                f.sync_all()?;
                key
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_key(&path)?,
            Err(e) => return Err(e).with_context(|| format!("create {}", path.display())),
        };
        Self::from_bytes(&bytes)
    }

    pub fn from_bytes(bytes: &[u8]) -> anyhow::Result<Self> {
        if bytes.len() != KEY_BYTES {
            bail!("the channel key must be {KEY_BYTES} bytes");
        }
        let cipher = XChaCha20Poly1305::new_from_slice(bytes)
            .map_err(|_| anyhow::anyhow!("the channel key must be {KEY_BYTES} bytes"))?;
        Ok(Self(cipher))
    }

    /// base64(nonce || ciphertext) of `plain`, bound to `account_id`.
    pub fn seal(&self, account_id: &str, plain: &[u8]) -> anyhow::Result<String> {
        let mut nonce = [0u8; NONCE_BYTES];
        getrandom::getrandom(&mut nonce).map_err(|e| anyhow::anyhow!("random nonce: {e}"))?;
        let ct = self
            .0
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plain,
                    aad: account_id.as_bytes(),
                },
            )
            .map_err(|_| anyhow::anyhow!("seal credentials"))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&ct);
        Ok(base64::engine::general_purpose::STANDARD.encode(out))
    }

    pub fn open(&self, account_id: &str, sealed: &str) -> Result<Vec<u8>, OpenError> {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(sealed)
            .map_err(|_| OpenError)?;
        if raw.len() <= NONCE_BYTES {
            return Err(OpenError);
        }
        let (nonce, ct) = raw.split_at(NONCE_BYTES);
        self.0
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ct,
                    aad: account_id.as_bytes(),
                },
            )
            .map_err(|_| OpenError)
    }
}

fn read_key(path: &Path) -> anyhow::Result<Vec<u8>> {
    // A concurrent creator may not have written yet; wait briefly for it.
    for _ in 0..50 {
        let text = fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
        if !text.trim().is_empty() {
            let mode = fs::metadata(path)?.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                bail!(
                    "{} has mode {mode:o}; it must be private (0600)",
                    path.display()
                );
            }
            return base64::engine::general_purpose::STANDARD
                .decode(text.trim())
                .with_context(|| format!("decode {}", path.display()));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    bail!("{} is empty", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_credentials_open_only_for_their_account() {
        let key = SealKey::from_bytes(&[7u8; 32]).unwrap();
        let sealed = key.seal("acct-1", b"{\"bot_token\":\"123:abc\"}").unwrap();
        assert!(!sealed.contains("abc"));
        assert_eq!(
            key.open("acct-1", &sealed).unwrap(),
            b"{\"bot_token\":\"123:abc\"}"
        );
        assert!(key.open("acct-2", &sealed).is_err());
        let other = SealKey::from_bytes(&[8u8; 32]).unwrap();
        assert!(other.open("acct-1", &sealed).is_err());
        assert!(key.open("acct-1", "not base64!").is_err());
        assert!(key.open("acct-1", "AAAA").is_err());
        // Two seals of the same text differ (fresh nonces).
        assert_ne!(
            sealed,
            key.seal("acct-1", b"{\"bot_token\":\"123:abc\"}").unwrap()
        );
    }

    #[test]
    fn the_key_file_is_created_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let a = SealKey::load_or_create(dir.path()).unwrap();
        let path = dir.path().join("keys/channels.key");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let b = SealKey::load_or_create(dir.path()).unwrap();
        let sealed = a.seal("x", b"secret").unwrap();
        assert_eq!(b.open("x", &sealed).unwrap(), b"secret");
        assert!(format!("{a:?}").contains("redacted"));
    }
}

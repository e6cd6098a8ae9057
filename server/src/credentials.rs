//! Model provider keys a tenant's admin configures for the tenant's turns,
//! sealed at rest: ChaCha20-Poly1305 under the server's
//! `keys/credentials.key` (32 random bytes, 0600), a fresh nonce per seal,
//! and the (tenant, provider) pair as associated data, so a sealed key
//! moved to another tenant or provider does not open. Keys are opened only
//! to build a provider client; they are never returned, logged or shown.

use std::path::Path;

use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};

use crate::config::ApiKey;
use crate::ids::TenantId;

const NONCE_BYTES: usize = 12;

/// Why a sealed key could not be opened (or sealed).
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("sealed key is malformed")]
    Malformed,
    #[error("sealed key does not open (another server key, tenant or provider)")]
    Rejected,
    #[error("no randomness for a nonce: {0}")]
    Random(String),
}

/// Seals and opens tenant provider keys.
pub struct Sealer {
    cipher: ChaCha20Poly1305,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(<key>)")
    }
}

fn aad(tenant: &TenantId, provider: &str) -> Vec<u8> {
    format!("demiurge provider key\0{tenant}\0{provider}").into_bytes()
}

impl Sealer {
    pub fn new(key: &[u8; 32]) -> Self {
        Self {
            cipher: ChaCha20Poly1305::new(Key::from_slice(key)),
        }
    }

    /// The server's sealer, creating `keys/credentials.key` on first start.
    pub fn load_or_create(home: &Path) -> anyhow::Result<Self> {
        let key = crate::auth::load_or_create_key(home, "credentials.key", 32)?;
        let key: [u8; 32] = key
            .get(..32)
            .and_then(|k| k.try_into().ok())
            .ok_or_else(|| anyhow::anyhow!("credentials.key is shorter than 32 bytes"))?;
        Ok(Self::new(&key))
    }

    pub fn seal(&self, tenant: &TenantId, provider: &str, key: &str) -> Result<String, SealError> {
        let mut nonce = [0u8; NONCE_BYTES];
        getrandom::getrandom(&mut nonce).map_err(|e| SealError::Random(e.to_string()))?;
        let aad = aad(tenant, provider);
        let ct = self
            .cipher
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: key.as_bytes(),
                    aad: &aad,
                },
            )
            .map_err(|_| SealError::Rejected)?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&ct);
        Ok(base64::engine::general_purpose::STANDARD.encode(out))
    }

    pub fn open(
        &self,
        tenant: &TenantId,
        provider: &str,
        sealed: &str,
    ) -> Result<ApiKey, SealError> {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(sealed.trim())
            .map_err(|_| SealError::Malformed)?;
        if raw.len() <= NONCE_BYTES {
            return Err(SealError::Malformed);
        }
        let (nonce, ct) = raw.split_at(NONCE_BYTES);
        let aad = aad(tenant, provider);
        let pt = self
            .cipher
            .decrypt(Nonce::from_slice(nonce), Payload { msg: ct, aad: &aad })
            .map_err(|_| SealError::Rejected)?;
        String::from_utf8(pt)
            .map(ApiKey::new)
            .map_err(|_| SealError::Malformed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> TenantId {
        TenantId::parse(s).unwrap()
    }

    #[test]
    fn a_sealed_key_opens_only_for_its_tenant_and_provider() {
        let s = Sealer::new(&[7u8; 32]);
        let sealed = s.seal(&t("acme"), "anthropic", "sk-ant-123").unwrap();
        assert!(!sealed.contains("sk-ant"));
        assert_eq!(
            s.open(&t("acme"), "anthropic", &sealed).unwrap().expose(),
            "sk-ant-123"
        );
        assert!(matches!(
            s.open(&t("globex"), "anthropic", &sealed),
            Err(SealError::Rejected)
        ));
        assert!(matches!(
            s.open(&t("acme"), "openai", &sealed),
            Err(SealError::Rejected)
        ));
        let other = Sealer::new(&[8u8; 32]);
        assert!(matches!(
            other.open(&t("acme"), "anthropic", &sealed),
            Err(SealError::Rejected)
        ));
        assert!(matches!(
            s.open(&t("acme"), "anthropic", "!!"),
            Err(SealError::Malformed)
        ));
        assert!(matches!(
            s.open(&t("acme"), "anthropic", "AAAA"),
            Err(SealError::Malformed)
        ));
        // A fresh nonce each time.
        assert_ne!(
            sealed,
            s.seal(&t("acme"), "anthropic", "sk-ant-123").unwrap()
        );
    }

    #[test]
    fn the_key_file_is_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let a = Sealer::load_or_create(dir.path()).unwrap();
        let sealed = a.seal(&t("x"), "openai", "k").unwrap();
        let b = Sealer::load_or_create(dir.path()).unwrap();
        assert_eq!(b.open(&t("x"), "openai", &sealed).unwrap().expose(), "k");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("keys/credentials.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

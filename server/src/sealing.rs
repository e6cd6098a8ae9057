//! Secrets at rest: every credential the server stores for a tenant (chat
//! account credentials, model provider keys) is sealed here and nowhere
//! else, with XChaCha20-Poly1305 (the maintained `chacha20poly1305` crate;
//! 24-byte random nonces, so random nonces never need a counter) under one
//! 32-byte server key at `<home>/keys/sealing.key` (0600, created at the
//! first start like `signing.key`). Instances that share a database must
//! share this file, and it belongs with the database backup: without it the
//! sealed values cannot be opened.
//!
//! Each sealed value is bound to what it belongs to ([`Binding`], the AEAD's
//! associated data), so a value copied to another account, tenant or
//! provider does not open.
//!
//! Homes made before the key was shared had `channels.key` (the same cipher
//! and binding, adopted by renaming it) and `credentials.key` (provider keys
//! under ChaCha20-Poly1305, re-sealed once at start by
//! [`reseal_legacy_provider_keys`]).

use std::path::Path;

use anyhow::Context;
use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

use crate::ids::TenantId;
use crate::store::Store;

const KEY_FILE: &str = "sealing.key";
const KEY_BYTES: usize = 32;
const NONCE_BYTES: usize = 24;

/// What a sealed value belongs to; it opens only for the same binding.
#[derive(Debug, Clone, Copy)]
pub enum Binding<'a> {
    /// A chat account's credentials, by account id.
    ChannelAccount(&'a str),
    /// A tenant's key for a model provider.
    ProviderKey {
        tenant: &'a TenantId,
        provider: &'a str,
    },
    /// A tenant's credential for its packages' tools, by name.
    TenantCredential { tenant: &'a TenantId, name: &'a str },
}

impl Binding<'_> {
    /// The associated data. An account's is its bare id (as the first homes
    /// sealed it); a provider key's starts with a label and separates its
    /// parts with NUL, which no account id contains, so the two never meet.
    fn aad(&self) -> Vec<u8> {
        match self {
            Binding::ChannelAccount(id) => id.as_bytes().to_vec(),
            Binding::ProviderKey { tenant, provider } => {
                format!("demiurge provider key\0{tenant}\0{provider}").into_bytes()
            }
            Binding::TenantCredential { tenant, name } => {
                format!("demiurge tenant credential\0{tenant}\0{name}").into_bytes()
            }
        }
    }
}

/// Why a value could not be sealed or opened.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("sealed value is malformed")]
    Malformed,
    #[error("sealed value does not open (another server key, or it belongs elsewhere)")]
    Rejected,
    #[error("no randomness for a nonce: {0}")]
    Random(String),
}

/// The server's sealing key; never printed.
#[derive(Clone)]
pub struct Sealer(XChaCha20Poly1305);

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(<redacted>)")
    }
}

impl Sealer {
    pub fn from_bytes(key: &[u8]) -> anyhow::Result<Self> {
        XChaCha20Poly1305::new_from_slice(key)
            .map(Self)
            .map_err(|_| anyhow::anyhow!("the sealing key must be {KEY_BYTES} bytes"))
    }

    /// The server's sealer, creating `keys/sealing.key` on the first start
    /// (or adopting an older home's `keys/channels.key`).
    pub fn load_or_create(home: &Path) -> anyhow::Result<Self> {
        let keys = crate::home::HomeLayout::new(home).keys_dir();
        let legacy = keys.join("channels.key");
        let current = keys.join(KEY_FILE);
        if !current.exists() && legacy.exists() {
            // Same cipher and binding: the accounts it sealed keep opening.
            std::fs::rename(&legacy, &current)
                .with_context(|| format!("adopt {} as {KEY_FILE}", legacy.display()))?;
        }
        Self::from_bytes(&crate::auth::load_or_create_key(home, KEY_FILE, KEY_BYTES)?)
    }

    /// base64(nonce || ciphertext) of `plain`, bound to `binding`.
    pub fn seal(&self, binding: Binding<'_>, plain: &[u8]) -> Result<String, SealError> {
        let mut nonce = [0u8; NONCE_BYTES];
        getrandom::getrandom(&mut nonce).map_err(|e| SealError::Random(e.to_string()))?;
        let aad = binding.aad();
        let ct = self
            .0
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plain,
                    aad: &aad,
                },
            )
            .map_err(|_| SealError::Rejected)?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&ct);
        Ok(base64::engine::general_purpose::STANDARD.encode(out))
    }

    pub fn open(&self, binding: Binding<'_>, sealed: &str) -> Result<Vec<u8>, SealError> {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(sealed.trim())
            .map_err(|_| SealError::Malformed)?;
        if raw.len() <= NONCE_BYTES {
            return Err(SealError::Malformed);
        }
        let (nonce, ct) = raw.split_at(NONCE_BYTES);
        let aad = binding.aad();
        self.0
            .decrypt(XNonce::from_slice(nonce), Payload { msg: ct, aad: &aad })
            .map_err(|_| SealError::Rejected)
    }

    /// [`Self::open`] for text (provider keys).
    pub fn open_text(&self, binding: Binding<'_>, sealed: &str) -> Result<String, SealError> {
        String::from_utf8(self.open(binding, sealed)?).map_err(|_| SealError::Malformed)
    }
}

/// Re-seal provider keys an older home sealed under `keys/credentials.key`
/// (ChaCha20-Poly1305, 12-byte nonces) with the shared sealer, then retire
/// that file (renamed `credentials.key.retired`), so this runs once. A row
/// that does not open under the old key is left as it is and logged: it
/// did not open before either.
pub async fn reseal_legacy_provider_keys(
    home: &Path,
    store: &Store,
    sealer: &Sealer,
) -> anyhow::Result<usize> {
    use chacha20poly1305::{ChaCha20Poly1305, Nonce};
    let keys = crate::home::HomeLayout::new(home).keys_dir();
    let path = keys.join("credentials.key");
    if !path.exists() {
        return Ok(0);
    }
    let old = crate::auth::load_or_create_key(home, "credentials.key", KEY_BYTES)?;
    let old = ChaCha20Poly1305::new_from_slice(&old)
        .map_err(|_| anyhow::anyhow!("credentials.key must be {KEY_BYTES} bytes"))?;
    let mut moved = 0;
    for (tenant, row) in store.all_provider_keys().await? {
        let binding = Binding::ProviderKey {
            tenant: &tenant,
            provider: &row.provider,
        };
        if sealer.open(binding, &row.sealed).is_ok() {
            continue;
        }
        let plain = base64::engine::general_purpose::STANDARD
            .decode(row.sealed.trim())
            .ok()
            .filter(|raw| raw.len() > 12)
            .and_then(|raw| {
                let (nonce, ct) = raw.split_at(12);
                let aad = binding.aad();
                old.decrypt(Nonce::from_slice(nonce), Payload { msg: ct, aad: &aad })
                    .ok()
            });
        let Some(plain) = plain else {
            tracing::warn!(%tenant, provider = %row.provider, "a stored provider key opens under no key");
            continue;
        };
        let sealed = sealer.seal(binding, &plain)?;
        store
            .reseal_provider_key(&tenant, &row.provider, &row.sealed, &sealed)
            .await?;
        moved += 1;
    }
    std::fs::rename(&path, keys.join("credentials.key.retired"))
        .with_context(|| format!("retire {}", path.display()))?;
    tracing::info!(moved, "provider keys re-sealed under keys/sealing.key");
    Ok(moved)
}

#[cfg(test)]
#[path = "sealing_tests.rs"]
mod tests;

/// How a core names a tenant credential where a package's config needs
/// it: `demiurge-credential:<name>` (the value is put in its place only in
/// the outgoing request).
pub const CREDENTIAL_PLACEHOLDER: &str = "demiurge-credential:";

/// Longest credential value accepted.
pub const MAX_CREDENTIAL_BYTES: usize = 8 * 1024;

/// What an admin sees of a stored credential: never its value.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct CredentialView {
    pub name: String,
    /// RFC 3339.
    pub updated_at: String,
    pub updated_by: String,
}

/// A tenant's credentials for its packages' tools (`<package>.<option>`,
/// a provider's API key, say): sealed at rest, set and listed by tenant
/// admins, opened only for the outgoing request that names one
/// ([`crate::authored::http`]). Cheap to clone.
#[derive(Clone)]
pub struct Credentials {
    store: Store,
    sealer: std::sync::Arc<Sealer>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials")
    }
}

/// Whether `name` may name a credential.
pub fn valid_credential_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

impl Credentials {
    pub fn new(store: Store, sealer: std::sync::Arc<Sealer>) -> Self {
        Self { store, sealer }
    }

    /// The value of `name`, for an outgoing request; `None` when unset or
    /// when it does not open (logged).
    pub async fn open(&self, tenant: &TenantId, name: &str) -> Option<String> {
        let row = match self.store.credential(tenant, name).await {
            Ok(row) => row?,
            Err(e) => {
                tracing::error!(error = %e, "reading a tenant credential");
                return None;
            }
        };
        match self
            .sealer
            .open_text(Binding::TenantCredential { tenant, name }, &row.sealed)
        {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::error!(error = %e, credential = name, "a tenant credential does not open");
                None
            }
        }
    }

    /// The tenant's credentials (tenant admins): names, never values.
    pub async fn list(
        &self,
        scope: &crate::auth::PrincipalScope,
    ) -> crate::error::Result<Vec<CredentialView>> {
        scope.require_admin("see the tenant's credentials")?;
        Ok(self
            .store
            .credentials(scope.tenant())
            .await?
            .into_iter()
            .map(view)
            .collect())
    }

    /// Seal and store `value` as `name` (tenant admins); audited, never the value.
    pub async fn set(
        &self,
        scope: &crate::auth::PrincipalScope,
        via: &crate::store::Surface,
        name: &str,
        value: &str,
    ) -> crate::error::Result<CredentialView> {
        use crate::error::Error;
        scope.require_admin("set the tenant's credentials")?;
        if !valid_credential_name(name) {
            return Err(Error::Invalid(format!(
                "{name:?} is not a credential name (letters, digits, `_`, `-`, `.`)"
            )));
        }
        if value.trim().is_empty() || value.len() > MAX_CREDENTIAL_BYTES {
            return Err(Error::Invalid(format!(
                "a credential's value must be 1 to {MAX_CREDENTIAL_BYTES} bytes"
            )));
        }
        let tenant = scope.tenant();
        let sealed = self
            .sealer
            .seal(Binding::TenantCredential { tenant, name }, value.as_bytes())
            .map_err(|e| Error::Internal(anyhow::anyhow!("seal a credential: {e}")))?;
        let audit = scope.audit(via, "credential.set", name, serde_json::json!({}));
        let row = self
            .store
            .put_credential(tenant, name, &sealed, scope.principal(), &audit)
            .await?;
        Ok(view(row))
    }

    /// Remove `name` (tenant admins); `false` when it was not set.
    pub async fn remove(
        &self,
        scope: &crate::auth::PrincipalScope,
        via: &crate::store::Surface,
        name: &str,
    ) -> crate::error::Result<bool> {
        scope.require_admin("remove the tenant's credentials")?;
        let audit = scope.audit(via, "credential.removed", name, serde_json::json!({}));
        Ok(self
            .store
            .delete_credential(scope.tenant(), name, &audit)
            .await?)
    }
}

fn view(row: crate::store::CredentialRow) -> CredentialView {
    CredentialView {
        name: row.name,
        updated_at: crate::time::rfc3339(row.updated_at),
        updated_by: row.updated_by,
    }
}

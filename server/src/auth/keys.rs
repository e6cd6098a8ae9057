//! The local HS256 signing key: 64 random bytes under `<home>/keys/`,
//! created once with private modes (0700 folder, 0600 file).

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use anyhow::{bail, Context};
use base64::Engine;

const KEY_BYTES: usize = 64;

/// Read the key, creating it if this is the first start. Safe when `serve`
/// and `token issue` race on a fresh home: exactly one creates it.
pub fn load_or_create_signing_key(home: &Path) -> anyhow::Result<Vec<u8>> {
    load_or_create_key(home, "signing.key", KEY_BYTES)
}

/// A random key of `bytes` bytes in `<home>/keys/<file>` (base64, 0600),
/// created on first use; safe when several processes race to create it.
pub fn load_or_create_key(home: &Path, file: &str, bytes: usize) -> anyhow::Result<Vec<u8>> {
    let dir = crate::home::HomeLayout::new(home).keys_dir();
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .with_context(|| format!("create {}", dir.display()))?;
    let path = dir.join(file);
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
    {
        Ok(mut f) => {
            let mut key = vec![0u8; bytes];
            getrandom::getrandom(&mut key).map_err(|e| anyhow::anyhow!("random key: {e}"))?;
            let text = base64::engine::general_purpose::STANDARD.encode(&key);
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            Ok(key)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_key(&path),
        Err(e) => Err(e).with_context(|| format!("create {}", path.display())),
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
            let key = base64::engine::general_purpose::STANDARD
                .decode(text.trim())
                .with_context(|| format!("{} is not base64", path.display()))?;
            if key.len() < 32 {
                bail!("{} holds a key shorter than 32 bytes", path.display());
            }
            return Ok(key);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    bail!("{} is empty", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_once_with_private_mode() {
        let home = tempfile::tempdir().unwrap();
        let a = load_or_create_signing_key(home.path()).unwrap();
        let b = load_or_create_signing_key(home.path()).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), KEY_BYTES);
        let path = home.path().join("keys/signing.key");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            fs::metadata(home.path().join("keys"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o700
        );
    }

    #[test]
    fn refuses_a_world_readable_key() {
        let home = tempfile::tempdir().unwrap();
        load_or_create_signing_key(home.path()).unwrap();
        let path = home.path().join("keys/signing.key");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let e = load_or_create_signing_key(home.path()).unwrap_err();
        assert!(e.to_string().contains("private"), "{e}");
    }
}

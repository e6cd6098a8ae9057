//! First start: the home's private folders, the node id, tenant `default`
//! with an operator principal, and the one operator token printed to stdout.

use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use anyhow::Context;

use crate::auth::Role;
use crate::ids::{PrincipalId, TenantId};
use crate::store::Store;

pub const DEFAULT_TENANT: &str = "default";
pub const OPERATOR_PRINCIPAL: &str = "operator";

/// Like [`private_dir`] for the server home, but keeps a traverse bit
/// (`0711`) that the sandbox gave it: a command run next to a live server
/// (`demiurge token issue`, …) must not cut its confined children off
/// from their folders under the home. Read and write for others go.
pub fn private_home(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    private_dir_create(path)?;
    let mode = fs::metadata(path)
        .with_context(|| format!("stat {}", path.display()))?
        .permissions()
        .mode();
    if mode & 0o066 != 0 {
        fs::set_permissions(path, fs::Permissions::from_mode(0o700 | (mode & 0o011)))
            .with_context(|| format!("make {} private", path.display()))?;
    }
    Ok(())
}

fn private_dir_create(path: &Path) -> anyhow::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .with_context(|| format!("create {}", path.display()))
}

/// Create a folder (and parents) with mode 0700, tightening it if it exists.
pub fn private_dir(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .with_context(|| format!("create {}", path.display()))?;
    let meta = fs::metadata(path).with_context(|| format!("stat {}", path.display()))?;
    if meta.permissions().mode() & 0o077 != 0 {
        fs::set_permissions(path, fs::Permissions::from_mode(0o700))
            .with_context(|| format!("make {} private", path.display()))?;
    }
    Ok(())
}

/// This instance's id, stable across restarts of the same home. Turns record
/// it so a restarted node fails only the turns it left running.
pub fn node_id(home: &Path) -> anyhow::Result<String> {
    let path = crate::home::HomeLayout::new(home).node_id_file();
    if let Ok(s) = fs::read_to_string(&path) {
        if !s.trim().is_empty() {
            return Ok(s.trim().to_owned());
        }
    }
    // Written whole, then linked into place: of processes racing on a
    // fresh home, one id wins and every one of them reads it.
    let id = uuid::Uuid::new_v4().to_string();
    let staging = path.with_extension(format!("{}.partial", uuid::Uuid::new_v4().simple()));
    fs::write(&staging, &id).with_context(|| format!("write {}", staging.display()))?;
    let linked = fs::hard_link(&staging, &path);
    let _ = fs::remove_file(&staging);
    match linked {
        Ok(()) => Ok(id),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let s =
                fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
            if s.trim().is_empty() {
                // An empty file an older build left: this process's id.
                fs::write(&path, &id).with_context(|| format!("write {}", path.display()))?;
                return Ok(id);
            }
            Ok(s.trim().to_owned())
        }
        Err(e) => Err(e).with_context(|| format!("write {}", path.display())),
    }
}

/// Ensure the default tenant and its operator. True if this was the first start.
pub async fn default_tenant(store: &Store) -> anyhow::Result<bool> {
    let tenant = TenantId::parse(DEFAULT_TENANT)?;
    let first = !store.tenant_exists(&tenant).await?;
    let operator = PrincipalId::parse(OPERATOR_PRINCIPAL)?;
    store
        .ensure_principal(&tenant, &operator, Role::Operator)
        .await?;
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::{private_dir, private_home};

    #[test]
    fn a_home_that_cannot_be_created_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "not a folder").unwrap();
        let home = file.join("home");
        for err in [
            private_home(&home).unwrap_err(),
            private_dir(&home).unwrap_err(),
        ] {
            let shown = format!("{err:#}");
            assert!(shown.contains(&home.display().to_string()), "{shown}");
            assert!(shown.starts_with("create "), "{shown}");
        }
    }

    #[test]
    fn a_new_home_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("nested/home");
        private_home(&home).unwrap();
        let mode = std::fs::metadata(&home).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}

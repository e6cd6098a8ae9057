//! Where package repositories come from: the server operator's trusted
//! list (`--package-repository <alias>=<source>`), each a folder or a git
//! repository, pinned, and syncing a git one into the home.
//!
//! - A folder: `<alias>=/path/to/repo`, optionally pinned by the SHA-256 of
//!   its tree (`…#sha256:<hex>`): a folder whose content no longer matches
//!   is refused until the operator updates the pin.
//! - A git repository: `<alias>=<url>@<commit>` (the full 40-hex commit):
//!   synced on request into `<home>/package-repositories/<alias>/` and
//!   checked out at exactly that commit. An `https://` URL goes through the
//!   URL policy first and git then reaches only the addresses the policy
//!   accepted (`http.curloptResolve`), with redirects off; a local path
//!   (the operator's own disk) is cloned as it is.
//!
//! Trust is the operator's: a package cannot make itself trusted, and a
//! tenant cannot add a repository.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One configured repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub alias: String,
    pub origin: Origin,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Folder {
        path: PathBuf,
        /// Expected SHA-256 of the tree ([`tree_hash`]), when pinned.
        sha256: Option<String>,
    },
    Git {
        url: String,
        commit: String,
    },
}

impl Source {
    /// Parse `<alias>=<folder>[#sha256:<hex>]` or `<alias>=<git-url>@<commit>`.
    pub fn parse(raw: &str) -> Result<Source, String> {
        let (alias, rest) = raw
            .split_once('=')
            .ok_or_else(|| format!("{raw:?}: expected <alias>=<folder or git-url@commit>"))?;
        let alias = alias.trim();
        if !super::recipe::valid_id(alias) {
            return Err(format!(
                "repository alias {alias:?} must be letters, digits, `_`, `-` or `.`"
            ));
        }
        let rest = rest.trim();
        let origin = match rest.rsplit_once('@') {
            Some((url, commit))
                if commit.len() == 40 && commit.chars().all(|c| c.is_ascii_hexdigit()) =>
            {
                if !(url.starts_with("https://") || url.starts_with('/')) {
                    return Err(format!(
                        "{alias}: a git repository is an https:// URL or a local path"
                    ));
                }
                Origin::Git {
                    url: url.to_owned(),
                    commit: commit.to_ascii_lowercase(),
                }
            }
            _ => {
                let (path, pin) = match rest.split_once("#sha256:") {
                    Some((p, h)) => {
                        if h.len() != 64 || !h.chars().all(|c| c.is_ascii_hexdigit()) {
                            return Err(format!("{alias}: the sha256 pin must be 64 hex digits"));
                        }
                        (p, Some(h.to_ascii_lowercase()))
                    }
                    None => (rest, None),
                };
                if rest.starts_with("http://") || rest.starts_with("https://") {
                    return Err(format!(
                        "{alias}: a git repository must be pinned to a full commit: <url>@<40-hex commit>"
                    ));
                }
                if !Path::new(path).is_absolute() {
                    return Err(format!(
                        "{alias}: a folder repository needs an absolute path"
                    ));
                }
                Origin::Folder {
                    path: PathBuf::from(path),
                    sha256: pin,
                }
            }
        };
        Ok(Source {
            alias: alias.to_owned(),
            origin,
        })
    }

    /// `path` or `git`, as the registry records it.
    pub fn kind(&self) -> &'static str {
        match self.origin {
            Origin::Folder { .. } => "path",
            Origin::Git { .. } => "git",
        }
    }

    /// The git commit, when pinned to one.
    pub fn commit(&self) -> Option<&str> {
        match &self.origin {
            Origin::Git { commit, .. } => Some(commit),
            Origin::Folder { .. } => None,
        }
    }

    /// What the source is, for listings (never a credential: git URLs
    /// with userinfo are refused by the URL policy anyway).
    pub fn reference(&self) -> String {
        match &self.origin {
            Origin::Folder { path, .. } => path.display().to_string(),
            Origin::Git { url, .. } => url.clone(),
        }
    }

    /// Where the repository is read from (a git one once synced).
    pub fn root(&self, home: &Path) -> PathBuf {
        match &self.origin {
            Origin::Folder { path, .. } => path.clone(),
            Origin::Git { .. } => synced_dir(home, &self.alias),
        }
    }

    /// Check the source is ready to read: a folder matches its pin; a git
    /// checkout is at its commit.
    pub fn verify(&self, home: &Path) -> Result<(), String> {
        match &self.origin {
            Origin::Folder { path, sha256 } => {
                if !path.is_dir() {
                    return Err(format!("folder {} does not exist", path.display()));
                }
                if let Some(want) = sha256 {
                    let got = tree_hash(path)?;
                    if &got != want {
                        return Err(format!(
                            "folder {} changed: its sha256 is {got}, the pin says {want}",
                            path.display()
                        ));
                    }
                }
                Ok(())
            }
            Origin::Git { commit, .. } => {
                let dir = synced_dir(home, &self.alias);
                if !dir.join(".git").exists() {
                    return Err("not synced yet: sync the repository".into());
                }
                let head = git(&dir, &["rev-parse", "HEAD"], &[])?;
                if head.trim() != commit {
                    return Err(format!(
                        "checked out at {}, pinned to {commit}: sync again",
                        head.trim()
                    ));
                }
                Ok(())
            }
        }
    }
}

/// Parse the operator's list; an alias given twice is refused.
pub fn parse_all(items: &[String]) -> Result<Vec<Source>, String> {
    let mut out: Vec<Source> = Vec::new();
    for raw in items {
        let source = Source::parse(raw)?;
        if out.iter().any(|s| s.alias == source.alias) {
            return Err(format!("alias {:?} is given twice", source.alias));
        }
        out.push(source);
    }
    Ok(out)
}

/// Where a git repository is synced.
pub fn synced_dir(home: &Path, alias: &str) -> PathBuf {
    home.join("package-repositories").join(alias)
}

/// Fetch a git source at its pinned commit into the home. `resolve` is the
/// addresses the URL policy accepted for an `https://` URL (`host`, `port`,
/// addresses); `None` for a local path.
pub fn sync_git(
    home: &Path,
    alias: &str,
    url: &str,
    commit: &str,
    resolve: Option<(&str, u16, &[String])>,
) -> Result<(), String> {
    let dir = synced_dir(home, alias);
    let parent = dir.parent().ok_or("no parent folder")?;
    std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    let staging = parent.join(format!(".{alias}.sync-{}", uuid::Uuid::new_v4().simple()));
    let mut config: Vec<String> = vec![
        "http.followRedirects=false".into(),
        "protocol.allow=never".into(),
        "protocol.https.allow=always".into(),
        "protocol.file.allow=always".into(),
        "core.hooksPath=/dev/null".into(),
    ];
    if let Some((host, port, addrs)) = resolve {
        let list = addrs.join(",");
        config.push(format!("http.curloptResolve={host}:{port}:{list}"));
    }
    let cfg: Vec<&str> = config.iter().map(String::as_str).collect();
    let out = (|| {
        std::fs::create_dir_all(&staging).map_err(|e| e.to_string())?;
        git(&staging, &["init", "-q"], &cfg)?;
        git(
            &staging,
            &["fetch", "-q", "--depth", "1", url, commit],
            &cfg,
        )
        .or_else(|_| git(&staging, &["fetch", "-q", url], &cfg))?;
        git(
            &staging,
            &["-c", "advice.detachedHead=false", "checkout", "-q", commit],
            &cfg,
        )?;
        let head = git(&staging, &["rev-parse", "HEAD"], &cfg)?;
        if head.trim() != commit {
            return Err(format!("fetched {} instead of {commit}", head.trim()));
        }
        Ok(())
    })();
    if let Err(e) = out {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&staging, &dir).map_err(|e| e.to_string())
}

/// Run git in `dir` without any user or system configuration.
fn git(dir: &Path, args: &[&str], config: &[&str]) -> Result<String, String> {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("HOME", dir);
    for c in config {
        cmd.args(["-c", c]);
    }
    let out = cmd.args(args).output().map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "git {}: {}",
            args.first().copied().unwrap_or_default(),
            err.trim().chars().take(500).collect::<String>()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// SHA-256 over a folder's files: the pin of a folder repository (the
/// same identity the core repository gives a core's files).
pub fn tree_hash(root: &Path) -> Result<String, String> {
    if !root.is_dir() {
        return Err(format!("{} is not a folder", root.display()));
    }
    Ok(crate::core::repository::tree_hash(root))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_parse_folders_pins_and_git_commits() {
        let s = Source::parse("local=/srv/packages").unwrap();
        assert_eq!(s.kind(), "path");
        let pin = "a".repeat(64);
        let s = Source::parse(&format!("local=/srv/packages#sha256:{pin}")).unwrap();
        assert_eq!(
            s.origin,
            Origin::Folder {
                path: "/srv/packages".into(),
                sha256: Some(pin)
            }
        );
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let s = Source::parse(&format!(
            "community=https://git.example.com/pkgs.git@{commit}"
        ))
        .unwrap();
        assert_eq!(s.kind(), "git");
        assert_eq!(s.commit(), Some(commit));
        for bad in [
            "no-equals",
            "../x=/srv",
            "x=relative/path",
            "x=https://git.example.com/pkgs.git",
            "x=https://git.example.com/pkgs.git@main",
            "x=ssh://git.example.com/p@0123456789abcdef0123456789abcdef01234567",
            "x=/srv#sha256:short",
        ] {
            assert!(Source::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_tree_hash_changes_with_any_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/c.txt"), "one").unwrap();
        let first = tree_hash(dir.path()).unwrap();
        assert_eq!(first, tree_hash(dir.path()).unwrap());
        std::fs::write(dir.path().join("a/b/c.txt"), "two").unwrap();
        assert_ne!(first, tree_hash(dir.path()).unwrap());
    }
}

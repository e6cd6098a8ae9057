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
//! Trust is the operator's: a package cannot make itself trusted. A tenant's
//! admin may add a git repository only where the operator allows it
//! (`--tenant-package-source <prefix>`): pinned to a full commit, its URL
//! under one of the operator's prefixes (an `https://` one, or a folder of
//! git repositories on the server's disk), synced into the tenant's own
//! folder and seen by that tenant only ([`Source::tenant`]).

use std::path::{Path, PathBuf};

/// One configured repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub alias: String,
    pub origin: Origin,
    /// The tenant that added it; `None`: the operator's (every tenant's).
    pub tenant: Option<crate::ids::TenantId>,
}

/// Longest URL a tenant may give.
const MAX_URL: usize = 512;

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
            tenant: None,
        })
    }

    /// A repository `tenant`'s admin adds: a git repository at a full
    /// `commit`, whose `url` one of the operator's `prefixes` admits
    /// ([`check_prefixes`]). Pure: a local path is checked lexically here
    /// and against the disk when it is synced.
    pub fn tenant(
        tenant: &crate::ids::TenantId,
        alias: &str,
        url: &str,
        commit: &str,
        prefixes: &[String],
    ) -> Result<Source, String> {
        if prefixes.is_empty() {
            return Err(
                "this server does not let tenants add package repositories (the operator's --tenant-package-source)"
                    .into(),
            );
        }
        if !super::recipe::valid_id(alias) {
            return Err(format!(
                "repository alias {:?} must be letters, digits, `_`, `-` or `.`",
                alias.chars().take(64).collect::<String>()
            ));
        }
        if commit.len() != 40 || !commit.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err("commit must be a full 40-hex git commit".into());
        }
        admitted(url, prefixes)?;
        Ok(Source {
            alias: alias.to_owned(),
            origin: Origin::Git {
                url: url.to_owned(),
                commit: commit.to_ascii_lowercase(),
            },
            tenant: Some(tenant.clone()),
        })
    }

    /// Whether the operator still admits this repository (a tenant's one
    /// whose prefix was since withdrawn is listed, not used).
    pub fn still_admitted(&self, prefixes: &[String]) -> Result<(), String> {
        match (&self.tenant, &self.origin) {
            (Some(_), Origin::Git { url, .. }) => admitted(url, prefixes),
            _ => Ok(()),
        }
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
            Origin::Git { .. } => self.synced_dir(home),
        }
    }

    /// Where a git repository is synced: the operator's under the home,
    /// a tenant's in that tenant's folder.
    pub fn synced_dir(&self, home: &Path) -> PathBuf {
        let parent = match &self.tenant {
            None => home.to_path_buf(),
            Some(t) => crate::home::HomeLayout::new(home).tenant_dir(t),
        };
        parent.join("package-repositories").join(&self.alias)
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
                let dir = self.synced_dir(home);
                // The commit the server checked and recorded after the sync
                // (the checkout is the tenant's uid's; the server does not
                // run git in it).
                match std::fs::read_to_string(dir.join(SYNCED_MARKER)) {
                    Err(_) => Err("not synced yet: sync the repository".into()),
                    Ok(at) if at.trim() == commit => Ok(()),
                    Ok(at) => Err(format!(
                        "checked out at {}, pinned to {commit}: sync again",
                        at.trim()
                    )),
                }
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

/// Check the operator's `--tenant-package-source` prefixes: each an
/// `https://` URL with a host, or an absolute folder.
pub fn check_prefixes(prefixes: &[String]) -> Result<(), String> {
    for p in prefixes {
        let ok = if let Some(rest) = p.strip_prefix("https://") {
            !rest.is_empty() && !rest.starts_with('/') && !rest.contains('@')
        } else {
            p.starts_with('/')
        };
        if !ok || p.contains("..") || p.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "{p:?}: a tenant package source is an https://host/… prefix or an absolute folder"
            ));
        }
    }
    Ok(())
}

/// Whether one of `prefixes` admits `url`, on a path boundary (a prefix
/// `https://git.example.com/team` admits `…/team/x.git`, not `…/teamevil`).
fn admitted(url: &str, prefixes: &[String]) -> Result<(), String> {
    let shown: String = url.chars().take(80).collect();
    if url.len() > MAX_URL || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{shown:?} is not a repository URL"));
    }
    let https = url.starts_with("https://");
    if !(https || url.starts_with('/')) {
        return Err(format!(
            "{shown:?}: a repository is an https:// URL or a folder the operator allows"
        ));
    }
    if url.split('/').any(|part| part == ".." || part == ".") {
        return Err(format!("{shown:?}: no `.` or `..` in a repository URL"));
    }
    if https {
        let parsed = url::Url::parse(url).map_err(|e| format!("{shown:?}: {e}"))?;
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(format!("{shown:?}: no credentials in a repository URL"));
        }
    }
    let fits = |p: &String| {
        url.strip_prefix(p.as_str())
            .is_some_and(|rest| rest.is_empty() || p.ends_with('/') || rest.starts_with('/'))
    };
    if prefixes.iter().any(fits) {
        Ok(())
    } else {
        Err(format!(
            "{shown:?} is not under a source this server lets tenants use: {}",
            prefixes.join(", ")
        ))
    }
}

/// The file beside a synced checkout that names the commit it holds.
const SYNCED_MARKER: &str = ".demiurge-synced-commit";

/// Fetch a git source at its pinned commit into the home, with `git` run by
/// `runner` (made for the staging folder `staging`, read-write, by
/// [`staging_dir`]): confined like the tenant's own commands. `resolve` is
/// the addresses the URL policy accepted for an `https://` URL (`host`,
/// `port`, addresses); `None` for a local path.
pub fn sync_git(
    runner: &crate::core::git::GitRunner,
    dir: &Path,
    staging: &Path,
    url: &str,
    commit: &str,
    resolve: Option<(&str, u16, &[String])>,
) -> Result<(), String> {
    let mut config: Vec<String> = vec![
        "http.followRedirects=false".into(),
        "protocol.allow=never".into(),
        "protocol.https.allow=always".into(),
        "protocol.file.allow=always".into(),
    ];
    if let Some((host, port, addrs)) = resolve {
        config.push(format!(
            "http.curloptResolve={host}:{port}:{}",
            addrs.join(",")
        ));
    }
    let git = |args: &[&str]| -> Result<String, String> {
        let mut all: Vec<&str> = Vec::new();
        for c in &config {
            all.extend(["-c", c.as_str()]);
        }
        all.extend(args);
        runner.run(staging, &all).map_err(|e| e.to_string())
    };
    let out = (|| {
        git(&["init", "-q"])?;
        // A local source belongs to the operator, not to the confined uid
        // fetching it: its upload-pack must accept that owner.
        let mut fetch: Vec<&str> = vec!["fetch", "-q"];
        if url.starts_with('/') {
            fetch.extend(["--upload-pack", "git -c safe.directory=* upload-pack"]);
        }
        let shallow: Vec<&str> = fetch
            .iter()
            .copied()
            .chain(["--depth", "1", url, commit])
            .collect();
        let full: Vec<&str> = fetch.iter().copied().chain([url]).collect();
        git(&shallow).or_else(|_| git(&full))?;
        git(&["-c", "advice.detachedHead=false", "checkout", "-q", commit])?;
        let head = git(&["rev-parse", "HEAD"])?;
        if head.trim() != commit {
            return Err(format!("fetched {} instead of {commit}", head.trim()));
        }
        Ok(())
    })();
    if let Err(e) = out {
        let _ = std::fs::remove_dir_all(staging);
        return Err(e);
    }
    std::fs::write(staging.join(SYNCED_MARKER), commit).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(dir);
    std::fs::rename(staging, dir).map_err(|e| e.to_string())
}

/// A fresh folder beside `dir` (a synced checkout) to sync into, owned by
/// `owner` (the confined git's uid) when the sandbox drops privileges.
pub fn staging_dir(dir: &Path, owner: Option<(u32, u32)>) -> Result<PathBuf, String> {
    let parent = dir.parent().ok_or("a synced checkout has a parent")?;
    let alias = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    let staging = parent.join(format!(".{alias}.sync-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir(&staging).map_err(|e| e.to_string())?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(&staging, Some(uid), Some(gid)).map_err(|e| e.to_string())?;
    }
    Ok(staging)
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
    fn tenants_add_only_pinned_git_repositories_under_the_operators_prefixes() {
        let t = crate::ids::TenantId::parse("acme").unwrap();
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let prefixes = vec![
            "https://git.example.com/team".to_owned(),
            "/srv/git/".to_owned(),
        ];
        for url in [
            "https://git.example.com/team/pkgs.git",
            "https://git.example.com/team",
            "/srv/git/pkgs",
        ] {
            let s = Source::tenant(&t, "mine", url, commit, &prefixes).unwrap();
            assert_eq!(s.tenant, Some(t.clone()));
            assert_eq!(
                s.synced_dir(Path::new("/h")),
                Path::new("/h/tenants/acme/package-repositories/mine")
            );
        }
        for (url, why) in [
            ("https://git.example.com/teamevil/x.git", "not under"),
            ("https://git.example.com/team/../other/x.git", "`..`"),
            ("https://user:pw@git.example.com/team/x.git", "credentials"),
            ("http://git.example.com/team/x.git", "https://"),
            ("/srv/gitx/pkgs", "not under"),
            ("/srv/git/../../etc", "`..`"),
            ("relative/x", "https://"),
            ("https://git.example.com/team/x y", "not a repository URL"),
        ] {
            let e = Source::tenant(&t, "mine", url, commit, &prefixes).unwrap_err();
            assert!(e.contains(why), "{url}: {e}");
        }
        assert!(Source::tenant(&t, "mine", "/srv/git/x", "main", &prefixes).is_err());
        assert!(Source::tenant(&t, "../x", "/srv/git/x", commit, &prefixes).is_err());
        let none = Source::tenant(&t, "mine", "/srv/git/x", commit, &[]).unwrap_err();
        assert!(none.contains("does not let tenants"), "{none}");
        assert!(check_prefixes(&prefixes).is_ok());
        for bad in [
            "http://x/",
            "https://",
            "https:///x",
            "relative",
            "/srv/../etc",
        ] {
            assert!(check_prefixes(&[bad.to_owned()]).is_err(), "{bad}");
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

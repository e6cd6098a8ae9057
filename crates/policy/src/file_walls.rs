//! The walls around the file tools: which resolved paths a tenant's
//! `read_file`, `search_files`, `write_file` and `patch` may touch at all,
//! before any approval is asked.
//!
//! * The session's own workspace: yes (sensitive names still ask, see
//!   [`super::workspace`]).
//! * The server's own files: never, whatever the approval. That is the whole
//!   home except the caller's workspace (signing key, database, cores, other
//!   principals and tenants, artifacts, process records), plus the database
//!   files wherever they live: a second handle the server opened and closed
//!   on its own SQLite file would drop SQLite's POSIX locks.
//! * Folders the server operator listed with `--read-root`: read after
//!   approval.
//! * Anything else: no.
//!
//! Pure: it compares canonical paths the caller resolved
//! (`demiurge::paths::resolve`); no I/O.

use std::path::{Path, PathBuf};

/// What a read may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadVerdict {
    /// Inside the session's workspace.
    Workspace,
    /// Under an operator read root: ask first.
    NeedsApproval,
    /// Refused; the rule names why (never the other side's contents).
    Denied(Refusal),
}

/// Why a path is out of reach, as a rule name and a message for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub rule: &'static str,
    pub message: String,
}

/// The walls of one server, built once at start from canonical paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileWalls {
    server_home: PathBuf,
    read_roots: Vec<PathBuf>,
    protected: Vec<PathBuf>,
}

/// Suffixes SQLite adds beside a database file.
const SQLITE_SIDE_FILES: &[&str] = &["-wal", "-shm", "-journal"];

impl FileWalls {
    /// `server_home` and `read_roots` must be canonical; `databases` are the
    /// SQLite files (none on PostgreSQL), canonical too when they exist.
    pub fn new(server_home: PathBuf, read_roots: Vec<PathBuf>, databases: Vec<PathBuf>) -> Self {
        let mut protected = Vec::new();
        for db in databases {
            for suffix in std::iter::once("").chain(SQLITE_SIDE_FILES.iter().copied()) {
                let mut name = db.clone().into_os_string();
                name.push(suffix);
                protected.push(PathBuf::from(name));
            }
        }
        Self {
            server_home,
            read_roots,
            protected,
        }
    }

    pub fn server_home(&self) -> &Path {
        &self.server_home
    }

    /// The verdict for reading `abs` (canonical) from a session whose
    /// canonical workspace is `workspace`.
    pub fn read(&self, workspace: &Path, abs: &Path) -> ReadVerdict {
        self.read_resolved(abs.starts_with(workspace), abs)
    }

    /// The same, when the caller already knows whether `abs` (canonical) is
    /// inside the session's workspace ([`super::workspace::Resolved::inside`]).
    pub fn read_resolved(&self, inside_workspace: bool, abs: &Path) -> ReadVerdict {
        if let Some(refusal) = self.protected_file(abs) {
            return ReadVerdict::Denied(refusal);
        }
        if inside_workspace {
            return ReadVerdict::Workspace;
        }
        if !self.server_home.as_os_str().is_empty() && abs.starts_with(&self.server_home) {
            return ReadVerdict::Denied(Refusal {
                rule: "server_home",
                message: "path is in the server's private home, outside this session's \
                          workspace; no approval can grant it"
                    .to_owned(),
            });
        }
        if self.read_roots.iter().any(|root| abs.starts_with(root)) {
            return ReadVerdict::NeedsApproval;
        }
        ReadVerdict::Denied(Refusal {
            rule: "no_read_root",
            message: "path is outside the workspace and outside every read root the server \
                      operator allowed (--read-root)"
                .to_owned(),
        })
    }

    /// The operator read root that holds `abs` (canonical), if any: the
    /// anchor a read outside the workspace is opened beneath.
    pub fn read_root_for(&self, abs: &Path) -> Option<&Path> {
        self.read_roots
            .iter()
            .filter(|root| abs.starts_with(root))
            .max_by_key(|root| root.as_os_str().len())
            .map(PathBuf::as_path)
    }

    /// Whether a recursive search standing at `dir` (canonical) may go on
    /// into it: never into the server's home, except the workspace itself.
    pub fn may_enter(&self, workspace: &Path, dir: &Path) -> bool {
        matches!(
            self.read(workspace, dir),
            ReadVerdict::Workspace | ReadVerdict::NeedsApproval
        )
    }

    fn protected_file(&self, abs: &Path) -> Option<Refusal> {
        self.protected.iter().any(|p| p == abs).then(|| Refusal {
            rule: "server_database",
            message: "path is the server's database; no approval can grant it".to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walls() -> FileWalls {
        FileWalls::new(
            PathBuf::from("/srv/demiurge"),
            vec![PathBuf::from("/data/shared"), PathBuf::from("/opt/docs")],
            vec![
                PathBuf::from("/var/db/demiurge.db"),
                PathBuf::from("/var/db/demiurge-usage.db"),
            ],
        )
    }

    const WS: &str = "/srv/demiurge/tenants/acme/workspaces/alice/default";

    fn verdict(path: &str) -> &'static str {
        match walls().read(Path::new(WS), Path::new(path)) {
            ReadVerdict::Workspace => "workspace",
            ReadVerdict::NeedsApproval => "approval",
            ReadVerdict::Denied(r) => r.rule,
        }
    }

    #[test]
    fn read_table() {
        let cases = [
            (WS, "workspace"),
            (
                "/srv/demiurge/tenants/acme/workspaces/alice/default/src/main.rs",
                "workspace",
            ),
            (
                "/srv/demiurge/tenants/acme/workspaces/alice/default/.env",
                "workspace",
            ),
            (
                "/srv/demiurge/tenants/acme/workspaces/alice/default2",
                "server_home",
            ),
            (
                "/srv/demiurge/tenants/acme/workspaces/alice/other",
                "server_home",
            ),
            (
                "/srv/demiurge/tenants/acme/workspaces/bob/default/x",
                "server_home",
            ),
            (
                "/srv/demiurge/tenants/evil/workspaces/mallory/default",
                "server_home",
            ),
            ("/srv/demiurge/keys/signing.key", "server_home"),
            ("/srv/demiurge/demiurge.db", "server_home"),
            ("/srv/demiurge/demiurge.db-wal", "server_home"),
            (
                "/srv/demiurge/runtime/artifacts/abc/proc_1.stdout.log",
                "server_home",
            ),
            ("/srv/demiurge/runtime/processes/p.json", "server_home"),
            (
                "/srv/demiurge/tenants/acme/agents/assistant/agent.yaml",
                "server_home",
            ),
            ("/srv/demiurge", "server_home"),
            ("/srv/demiurge-other/file", "no_read_root"),
            ("/srv", "no_read_root"),
            ("/etc/passwd", "no_read_root"),
            ("/proc/1/environ", "no_read_root"),
            ("/", "no_read_root"),
            ("/data/shared", "approval"),
            ("/data/shared/report.csv", "approval"),
            ("/data/sharedx/report.csv", "no_read_root"),
            ("/opt/docs/a/b/c.md", "approval"),
            ("/var/db/demiurge.db", "server_database"),
            ("/var/db/demiurge.db-wal", "server_database"),
            ("/var/db/demiurge.db-shm", "server_database"),
            ("/var/db/demiurge.db-journal", "server_database"),
            ("/var/db/demiurge-usage.db", "server_database"),
            ("/var/db/demiurge-usage.db-wal", "server_database"),
            ("/var/db/demiurge.dbx", "no_read_root"),
        ];
        for (path, want) in cases {
            assert_eq!(verdict(path), want, "{path}");
        }
    }

    #[test]
    fn a_read_root_above_the_home_never_opens_the_home() {
        let wide = FileWalls::new(
            PathBuf::from("/srv/demiurge"),
            vec![PathBuf::from("/")],
            vec![],
        );
        let ws = Path::new(WS);
        assert_eq!(
            wide.read(ws, Path::new("/etc/hosts")),
            ReadVerdict::NeedsApproval
        );
        assert!(matches!(
            wide.read(ws, Path::new("/srv/demiurge/keys/signing.key")),
            ReadVerdict::Denied(Refusal {
                rule: "server_home",
                ..
            })
        ));
        assert!(wide.may_enter(ws, Path::new("/srv")));
        assert!(!wide.may_enter(ws, Path::new("/srv/demiurge")));
        assert!(!wide.may_enter(ws, Path::new("/srv/demiurge/tenants")));
        assert!(wide.may_enter(ws, Path::new(WS)));
        assert!(wide.may_enter(ws, &Path::new(WS).join("sub")));
    }

    #[test]
    fn a_database_inside_a_read_root_stays_closed() {
        let w = FileWalls::new(
            PathBuf::from("/srv/demiurge"),
            vec![PathBuf::from("/var")],
            vec![PathBuf::from("/var/db/demiurge.db")],
        );
        let ws = Path::new(WS);
        assert_eq!(
            w.read(ws, Path::new("/var/log/syslog")),
            ReadVerdict::NeedsApproval
        );
        assert!(matches!(
            w.read(ws, Path::new("/var/db/demiurge.db-shm")),
            ReadVerdict::Denied(Refusal {
                rule: "server_database",
                ..
            })
        ));
    }

    #[test]
    fn refusals_never_name_the_path() {
        for path in [
            "/srv/demiurge/keys/signing.key",
            "/etc/shadow",
            "/var/db/demiurge.db",
        ] {
            if let ReadVerdict::Denied(r) = walls().read(Path::new(WS), Path::new(path)) {
                assert!(!r.message.contains(path), "{}", r.message);
            } else {
                panic!("{path} should be denied");
            }
        }
    }
}

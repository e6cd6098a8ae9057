//! The pure half of confinement: from settings, machine facts and one
//! request to the exact walls a child gets. No I/O here, so every rule is
//! tested as a table (`sandbox_plan_tests.rs`); the server's
//! `exec::sandbox::Sandbox` turns a [`Plan`] into a Landlock ruleset, a uid
//! and resource limits.

use std::path::{Path, PathBuf};

/// System folders a shell and common tools need, readable (never writable)
/// by every confined child. Missing ones are skipped when the ruleset is built.
pub const SYSTEM_READ_ROOTS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// Devices a child may open read-write (`> /dev/null`, `head -c … /dev/urandom`).
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// `PATH` for a child whose host `PATH` has no usable entry.
pub const FALLBACK_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Oldest Landlock ABI that scopes signals and abstract sockets (Linux 6.12).
pub const ABI_SCOPES: i32 = 6;
/// Oldest Landlock ABI that can refuse TCP `bind`/`connect` (Linux 6.7).
pub const ABI_NET: i32 = 4;

/// Per-command resource limits (`setrlimit`, soft = hard).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `RLIMIT_CPU`, seconds of CPU time per process.
    pub cpu_seconds: u64,
    /// `RLIMIT_NPROC`: processes (threads) of the child's uid. With a
    /// per-tenant uid this caps the whole tenant; it does not bind uid 0.
    pub processes: u64,
    /// `RLIMIT_FSIZE`, bytes: the largest file a command can write.
    pub file_size: u64,
    /// `RLIMIT_NOFILE`: open files per process.
    pub open_files: u64,
    /// `RLIMIT_DATA`, bytes: private writable memory per process (heap and
    /// anonymous mappings; address space merely reserved, as V8 and Go do,
    /// does not count).
    pub memory: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            cpu_seconds: 3600,
            processes: 512,
            file_size: 1024 * 1024 * 1024,
            open_files: 1024,
            memory: 4 * 1024 * 1024 * 1024,
        }
    }
}

/// The operator's choices (`--sandbox`, `--sandbox-read-root`, limits, uids).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `--sandbox on|off`.
    pub enabled: bool,
    /// Extra read-only folders beside [`SYSTEM_READ_ROOTS`].
    pub extra_read_roots: Vec<PathBuf>,
    pub limits: Limits,
    /// When the server runs as root, tenant `t` runs as uid/gid
    /// `uid_base + hash(t) % uid_span`.
    pub uid_base: u32,
    pub uid_span: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            enabled: true,
            extra_read_roots: Vec::new(),
            limits: Limits::default(),
            uid_base: 200_000,
            uid_span: 100_000,
        }
    }
}

/// What the machine offers, read once at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// The server's effective uid.
    pub euid: u32,
    /// `landlock_create_ruleset(…, VERSION)`: ≤ 0 when Landlock is missing.
    pub landlock_abi: i32,
}

/// Whether children can run, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    /// Every wall holds.
    Confined {
        /// Root server: children switch to their tenant's uid.
        drop_privileges: bool,
        /// Landlock scopes signals and abstract sockets (ABI ≥ 6).
        scoped: bool,
        /// Landlock can refuse TCP (ABI ≥ 4).
        tcp_rules: bool,
    },
    /// `--sandbox off`: children run with the server's rights (announced).
    Off,
    /// Confinement is on but impossible here: child-process tools are unavailable.
    Unavailable(String),
}

impl Availability {
    pub fn unavailable_reason(&self) -> Option<&str> {
        match self {
            Availability::Unavailable(why) => Some(why),
            _ => None,
        }
    }
}

/// Decides whether the walls can hold on this machine.
///
/// Landlock is required (files, `/proc`, ptrace). Signals to processes
/// outside the child's tree are stopped by Landlock's scopes (ABI 6) or, on
/// older kernels, by the child running under its own uid (root server only);
/// with neither, the child could signal the server, so nothing runs.
pub fn availability(settings: &Settings, facts: Facts) -> Availability {
    if !settings.enabled {
        return Availability::Off;
    }
    if facts.landlock_abi < 1 {
        return Availability::Unavailable(
            "Landlock is not available in this kernel (Linux 5.13 or later with `landlock` \
             in the active LSMs is needed); child-process tools are disabled"
                .to_owned(),
        );
    }
    let root = facts.euid == 0;
    let scoped = facts.landlock_abi >= ABI_SCOPES;
    if !scoped && !root {
        return Availability::Unavailable(format!(
            "Landlock ABI {} cannot scope signals (ABI 6, Linux 6.12, is needed) and the \
             server is not root, so children cannot run under their own uid; \
             child-process tools are disabled",
            facts.landlock_abi
        ));
    }
    if root && settings.uid_span == 0 {
        return Availability::Unavailable("sandbox uid span is 0".to_owned());
    }
    Availability::Confined {
        drop_privileges: root,
        scoped,
        tcp_rules: facts.landlock_abi >= ABI_NET,
    }
}

/// The uid (and gid) a tenant's children run as on a root server: stable
/// across restarts and instances (FNV-1a of the tenant id). Two tenants may
/// share a uid; the Landlock walls, not the uid, separate them.
pub fn tenant_uid(settings: &Settings, tenant: &str) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in tenant.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    settings
        .uid_base
        .saturating_add(hash % settings.uid_span.max(1))
}

/// Every folder a confined child may read: the system folders and the
/// operator's extras (absolute ones only).
pub fn read_roots(settings: &Settings) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = SYSTEM_READ_ROOTS.iter().map(PathBuf::from).collect();
    for extra in &settings.extra_read_roots {
        if extra.is_absolute() && !roots.contains(extra) {
            roots.push(extra.clone());
        }
    }
    roots
}

/// The first read root that would expose one of the server's private paths
/// (its home, its database) to every child: `(root, private path)`. Paths
/// must be canonical for the comparison to mean anything.
pub fn exposed_by(read_roots: &[PathBuf], private: &[PathBuf]) -> Option<(PathBuf, PathBuf)> {
    read_roots.iter().find_map(|root| {
        private
            .iter()
            .find(|p| p.starts_with(root))
            .map(|p| (root.clone(), p.clone()))
    })
}

/// One child's request: its private folders and network choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    pub tenant: &'a str,
    /// The session's workspace (read-write, the working directory).
    pub workspace: &'a Path,
    /// The principal's terminal HOME (read-write).
    pub home: &'a Path,
    /// The principal's private temp folder (read-write, `TMPDIR`).
    pub tmp: &'a Path,
    /// `false` cuts the network (`terminal.network: none`).
    pub network: bool,
    /// Extra folders the child may read (and execute), e.g. the read-only
    /// copy of a core's authored tools and the runner's SDK.
    pub read_only: &'a [PathBuf],
    /// A folder the child may also write in whose present entries stay the
    /// server's (an authored runner's core root: the core's code copied by
    /// the host beside the state its packages keep, as the Python project
    /// lays a core out).
    pub state: Option<&'a Path>,
}

/// The walls of one child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Read and execute, recursively.
    pub read_only: Vec<PathBuf>,
    /// Everything, recursively.
    pub read_write: Vec<PathBuf>,
    /// Read, write and truncate (device files).
    pub devices: Vec<PathBuf>,
    /// List directory names from `/` down. Only with a per-tenant uid, whose
    /// missing read bit on the server's private folders hides their names.
    pub list_from_root: bool,
    /// `(uid, gid)` to switch to before exec.
    pub ids: Option<(u32, u32)>,
    /// Refuse TCP through Landlock.
    pub deny_tcp: bool,
    /// A fresh, empty network namespace (root only): refuses UDP too.
    pub new_netns: bool,
    pub limits: Limits,
    /// The child's `PATH`: host entries that lie under a read root.
    pub path_env: String,
}

/// The walls for `request` (only meaningful when `availability` is
/// [`Availability::Confined`]; otherwise the plan is unconfined-equivalent and
/// never applied).
pub fn plan(
    settings: &Settings,
    availability: &Availability,
    request: &Request<'_>,
    host_path: Option<&str>,
) -> Plan {
    let (drop_privileges, tcp_rules) = match availability {
        Availability::Confined {
            drop_privileges,
            tcp_rules,
            ..
        } => (*drop_privileges, *tcp_rules),
        _ => (false, false),
    };
    let mut read_only = read_roots(settings);
    let path_env = child_path(host_path, &read_only);
    read_only.extend(request.read_only.iter().cloned());
    let mut read_write = vec![
        request.workspace.to_path_buf(),
        request.home.to_path_buf(),
        request.tmp.to_path_buf(),
    ];
    read_write.extend(request.state.map(Path::to_path_buf));
    let ids = drop_privileges.then(|| {
        let uid = tenant_uid(settings, request.tenant);
        (uid, uid)
    });
    Plan {
        path_env,
        read_only,
        read_write,
        devices: DEVICES.iter().map(PathBuf::from).collect(),
        list_from_root: drop_privileges,
        ids,
        deny_tcp: !request.network && tcp_rules,
        new_netns: !request.network && drop_privileges,
        limits: settings.limits,
    }
}

/// Keeps the `PATH` entries a confined child can use: absolute, no `..`,
/// under a read root. Falls back to [`FALLBACK_PATH`] when none is left.
pub fn child_path(host_path: Option<&str>, read_roots: &[PathBuf]) -> String {
    let kept: Vec<&str> = host_path
        .unwrap_or_default()
        .split(':')
        .filter(|entry| {
            let path = Path::new(entry);
            path.is_absolute()
                && !path
                    .components()
                    .any(|c| matches!(c, std::path::Component::ParentDir))
                && read_roots.iter().any(|root| path.starts_with(root))
        })
        .fold(Vec::new(), |mut acc, entry| {
            if !acc.contains(&entry) {
                acc.push(entry);
            }
            acc
        });
    if kept.is_empty() {
        FALLBACK_PATH.to_owned()
    } else {
        kept.join(":")
    }
}

#[cfg(test)]
#[path = "sandbox_plan_tests.rs"]
mod tests;

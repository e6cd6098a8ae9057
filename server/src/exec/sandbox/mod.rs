//! Confinement of every process the host starts for a tenant: the one `exec`
//! facility the terminal (and later MCP stdio servers and authored-tool
//! runners) share.
//!
//! # The walls
//!
//! A confined child can read and write its session's workspace, its
//! principal's terminal HOME and a private temp folder; read and execute the
//! system folders ([`plan::SYSTEM_READ_ROOTS`] plus `--sandbox-read-root`);
//! open a few devices. Nothing else: not the server's home (keys, database,
//! cores, artifacts, process records, other principals and tenants), not
//! `/proc` or `/sys`, not `/tmp`. It cannot signal or ptrace anything outside
//! its own tree, nor connect to abstract UNIX sockets made outside it.
//!
//! How, with what the kernel offers (no daemon, no setuid helper):
//! * **Landlock** (the `landlock` crate) for files: an allowlist ruleset
//!   handling every filesystem right the kernel knows. Landlock also denies
//!   ptrace (and so `/proc/<pid>/environ`, `mem`, `root`) of processes
//!   outside the child's domain, and with ABI 6 scopes signals and abstract
//!   sockets. `/proc` is simply not on the allowlist.
//! * **A per-tenant uid** when the server runs as root (containers often
//!   do): the child switches to it before exec, so `RLIMIT_NPROC` caps the
//!   tenant, root's files stay closed by plain permissions too, and capabilities
//!   are gone. The child's folders are handed to that uid; the folders above
//!   them under the home get the traverse bit only (`0711`), never read.
//! * **Resource limits** per command (`setrlimit`: CPU time, processes, file
//!   size, open files), so a fork bomb or a disk filler stops at the limit.
//! * **No UNIX sockets**: a seccomp filter makes `socket(AF_UNIX, …)` fail,
//!   since Landlock does not govern connecting to a socket by path (a local
//!   database's socket would otherwise be one `connect` away).
//! * **No network** on request (`terminal.network: none`): Landlock refuses
//!   TCP, and on a root server the child also gets an empty network namespace.
//!
//! Namespaces (bubblewrap, PID namespaces) were measured here at 2–9 ms per
//! command, several times a whole tool call; Landlock costs microseconds, so
//! it is the primary wall (`BENCHMARKS.md`, "Confinement").
//!
//! # Failing closed
//!
//! [`Sandbox::detect`] reads the kernel's Landlock ABI and the server's uid
//! once and decides ([`plan::availability`]). When the walls cannot hold,
//! child-process tools are `unavailable` and `/readyz` says why; `--sandbox
//! off` is the only way to run unconfined and is announced at start.
//!
//! The work in the forked child ([`Confinement::enter`]) is raw,
//! async-signal-safe syscalls only: the ruleset is built in the parent.

/// The pure half lives with the other pure decisions.
pub use crate::policy::sandbox_plan as plan;

use std::collections::HashSet;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use landlock::{
    Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};

pub use plan::{Availability, Facts, Limits, Plan, Request, Settings};

/// Why a child could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("child processes are unavailable: {0}")]
    Unavailable(String),
    #[error("cannot prepare the sandbox: {0}")]
    Prepare(String),
}

/// The host's confinement facility, built once at start.
pub struct Sandbox {
    settings: Settings,
    facts: Facts,
    availability: Availability,
    /// The server home, canonical: the folders above a child's private
    /// folders up to here get the traverse bit.
    server_home: PathBuf,
    /// Folders already handed to their tenant's uid (skip the syscalls).
    prepared: Mutex<HashSet<PathBuf>>,
    /// The seccomp program every child gets ([`syscall_filter`]).
    syscalls: Arc<seccompiler::BpfProgram>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("availability", &self.availability)
            .finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Reads the machine's facts and decides whether children can run.
    /// On a root server, also checks that the home's ancestors let an
    /// unprivileged uid pass (`o+x`): otherwise HOME and TMPDIR would be
    /// unreachable and every command would fail in confusing ways.
    pub fn detect(settings: Settings, server_home: &Path, databases: &[PathBuf]) -> Self {
        let facts = Facts {
            // SAFETY: geteuid(2) cannot fail and touches no memory.
            euid: unsafe { libc::geteuid() },
            landlock_abi: landlock_abi(),
        };
        let server_home = server_home
            .canonicalize()
            .unwrap_or_else(|_| server_home.to_path_buf());
        let mut availability = plan::availability(&settings, facts);
        if matches!(availability, Availability::Confined { .. }) {
            // A read root holding the home or the database would hand every
            // child the keys: refuse to run children at all.
            let roots: Vec<PathBuf> = plan::read_roots(&settings)
                .iter()
                .filter_map(|r| r.canonicalize().ok())
                .collect();
            let mut private = vec![server_home.clone()];
            private.extend(
                databases
                    .iter()
                    .map(|d| d.canonicalize().unwrap_or_else(|_| d.clone())),
            );
            if let Some((root, exposed)) = plan::exposed_by(&roots, &private) {
                availability = Availability::Unavailable(format!(
                    "the read-only folder {} given to every child contains the server's {} \
                     ({}); move the home/database out of it or drop that read root",
                    root.display(),
                    if exposed == server_home {
                        "home"
                    } else {
                        "database"
                    },
                    exposed.display()
                ));
            }
        }
        if matches!(
            availability,
            Availability::Confined {
                drop_privileges: true,
                ..
            }
        ) {
            if let Some(blocked) = untraversable_ancestor(&server_home) {
                availability = Availability::Unavailable(format!(
                    "the server runs as root and children run as their tenant's uid, but {} \
                     (above the home) is not traversable by other users (needs o+x); move \
                     the home or `chmod o+x` that folder",
                    blocked.display()
                ));
            }
        }
        let syscalls = match syscall_filter() {
            Ok(program) => program,
            Err(why) => {
                if matches!(availability, Availability::Confined { .. }) {
                    availability = Availability::Unavailable(format!(
                        "cannot build the syscall filter: {why}"
                    ));
                }
                Vec::new()
            }
        };
        Self {
            settings,
            facts,
            availability,
            server_home,
            prepared: Mutex::new(HashSet::new()),
            syscalls: Arc::new(syscalls),
        }
    }

    pub fn availability(&self) -> &Availability {
        &self.availability
    }

    pub fn facts(&self) -> Facts {
        self.facts
    }

    /// `Some(reason)` when child-process tools must be unavailable.
    pub fn unavailable_reason(&self) -> Option<&str> {
        self.availability.unavailable_reason()
    }

    /// A one-line description for the start-up log and `/readyz`.
    pub fn describe(&self) -> String {
        match &self.availability {
            Availability::Confined {
                drop_privileges,
                scoped,
                tcp_rules,
            } => format!(
                "on (Landlock ABI {}{}{}{})",
                self.facts.landlock_abi,
                if *scoped { ", scoped signals" } else { "" },
                if *tcp_rules { ", TCP rules" } else { "" },
                if *drop_privileges {
                    ", per-tenant uid"
                } else {
                    ""
                },
            ),
            Availability::Off => "off".to_owned(),
            Availability::Unavailable(why) => format!("unavailable: {why}"),
        }
    }

    /// Prepares one child: creates and hands over its private folders and
    /// builds its ruleset. `Ok(None)` means `--sandbox off`.
    pub fn prepare(&self, request: &Request<'_>) -> Result<Option<Confinement>, SandboxError> {
        match &self.availability {
            Availability::Off => return Ok(None),
            Availability::Unavailable(why) => return Err(SandboxError::Unavailable(why.clone())),
            Availability::Confined { .. } => {}
        }
        let host_path = std::env::var("PATH").ok();
        let plan = plan::plan(
            &self.settings,
            &self.availability,
            request,
            host_path.as_deref(),
        );
        for dir in [request.home, request.tmp] {
            private_dir(dir).map_err(|e| {
                SandboxError::Prepare(format!("cannot create {}: {e}", dir.display()))
            })?;
        }
        if let Some((uid, gid)) = plan.ids {
            for dir in [request.workspace, request.home, request.tmp] {
                self.hand_over(dir, uid, gid)
                    .map_err(|e| SandboxError::Prepare(format!("{}: {e}", dir.display())))?;
            }
            // Read-only extras stay the server's; the uid only needs to pass
            // the folders above them (their own modes give it read).
            for dir in request.read_only {
                self.allow_traverse_to(dir)
                    .map_err(|e| SandboxError::Prepare(format!("{}: {e}", dir.display())))?;
            }
            if let Some(dir) = request.state {
                self.share_state(dir, gid)
                    .map_err(|e| SandboxError::Prepare(format!("{}: {e}", dir.display())))?;
            }
        } else if let Some(dir) = request.state {
            private_dir(dir).map_err(|e| {
                SandboxError::Prepare(format!("cannot create {}: {e}", dir.display()))
            })?;
        }
        let ruleset = build_ruleset(&plan, self.facts.landlock_abi)?;
        Ok(Some(Confinement {
            syscalls: self.syscalls.clone(),
            ruleset,
            ids: plan.ids,
            limits: plan.limits,
            new_netns: plan.new_netns,
            path_env: plan.path_env,
        }))
    }

    /// Runs `prepare` for `dir` once per server run (the folders a child
    /// gets are prepared at its first start; later starts skip the syscalls).
    fn once(&self, dir: &Path, prepare: impl FnOnce() -> io::Result<()>) -> io::Result<()> {
        let key = dir.to_path_buf();
        if self
            .prepared
            .lock()
            .map(|set| set.contains(&key))
            .unwrap_or(false)
        {
            return Ok(());
        }
        prepare()?;
        if let Ok(mut set) = self.prepared.lock() {
            set.insert(key);
        }
        Ok(())
    }

    /// Makes `dir` owned by `uid` (recursively the first time: files the
    /// server wrote before become the child's) and lets the uid traverse the
    /// folders above it up to the server home.
    fn hand_over(&self, dir: &Path, uid: u32, gid: u32) -> io::Result<()> {
        self.once(dir, || {
            let meta = std::fs::symlink_metadata(dir)?;
            if meta.uid() != uid || meta.gid() != gid {
                chown_tree(dir, uid, gid)?;
            }
            self.allow_traverse_to(dir)
        })
    }

    /// A state folder the tenant's `gid` may add to while what the server
    /// put there stays the server's: owned by the server, group-writable
    /// for the tenant, sticky (`01770`), so the child can make its own
    /// files and folders but cannot rename, replace or remove the server's.
    fn share_state(&self, dir: &Path, gid: u32) -> io::Result<()> {
        self.once(dir, || {
            private_dir(dir)?;
            std::os::unix::fs::lchown(dir, Some(self.facts.euid), Some(gid))?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1770))?;
            self.allow_traverse_to(dir)
        })
    }

    /// Lets other uids pass every folder from the server home down to `dir`'s
    /// parent (traverse bit only).
    fn allow_traverse_to(&self, dir: &Path) -> io::Result<()> {
        let canonical = dir.canonicalize()?;
        if let Ok(rel) = canonical.strip_prefix(&self.server_home) {
            let mut current = self.server_home.clone();
            allow_traverse(&current)?;
            let parts: Vec<_> = rel.components().collect();
            for part in parts.iter().take(parts.len().saturating_sub(1)) {
                current.push(part);
                allow_traverse(&current)?;
            }
        }
        Ok(())
    }

    /// The owner a file the server writes into `workspace` should get, so a
    /// confined child can change it later (root server only).
    pub fn workspace_owner(&self, tenant: &str) -> Option<(u32, u32)> {
        match self.availability {
            Availability::Confined {
                drop_privileges: true,
                ..
            } => {
                let uid = plan::tenant_uid(&self.settings, tenant);
                Some((uid, uid))
            }
            _ => None,
        }
    }
}

impl Confinement {
    /// Installs these walls on a blocking `std::process::Command` the host
    /// runs for a tenant outside the terminal (e.g. `git` in its agents
    /// tree). The command keeps the confinement (and its ruleset fd) alive.
    pub fn install(self: Arc<Self>, command: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let entry = self.entry();
        // SAFETY: `Entry::enter` makes only async-signal-safe syscalls on
        // data prepared here; `self` (captured) keeps the ruleset fd open.
        unsafe {
            command.pre_exec(move || {
                let _keep = &self;
                entry.enter()
            });
        }
    }
}

/// What the forked child applies to itself before exec.
#[derive(Debug)]
pub struct Confinement {
    ruleset: OwnedFd,
    /// The seccomp program (shared by every child; built once).
    syscalls: Arc<seccompiler::BpfProgram>,
    ids: Option<(u32, u32)>,
    limits: Limits,
    new_netns: bool,
    path_env: String,
}

impl Confinement {
    /// The `PATH` the child should get (entries it can actually use).
    pub fn path_env(&self) -> &str {
        &self.path_env
    }

    /// The values [`enter`](Self::enter) needs, copied so the pre-exec
    /// closure owns plain data (and keeps the ruleset fd open).
    pub(crate) fn entry(&self) -> Entry {
        Entry {
            syscalls: self.syscalls.clone(),
            ruleset_fd: self.ruleset.as_raw_fd(),
            ids: self.ids,
            limits: self.limits,
            new_netns: self.new_netns,
        }
    }
}

/// Plain data for the forked child.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// Shared and read-only in the child: no allocation, no refcount change.
    syscalls: Arc<seccompiler::BpfProgram>,
    ruleset_fd: i32,
    ids: Option<(u32, u32)>,
    limits: Limits,
    new_netns: bool,
}

impl Entry {
    /// Runs in the forked child before exec: async-signal-safe syscalls
    /// only, no allocation. Order matters: limits and the network namespace
    /// need the privileges the uid switch drops; Landlock comes last.
    pub(crate) fn enter(&self) -> io::Result<()> {
        let limits = [
            (libc::RLIMIT_CPU, self.limits.cpu_seconds),
            (libc::RLIMIT_NPROC, self.limits.processes),
            (libc::RLIMIT_FSIZE, self.limits.file_size),
            (libc::RLIMIT_NOFILE, self.limits.open_files),
            (libc::RLIMIT_DATA, self.limits.memory),
        ];
        for (resource, value) in limits {
            let limit = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            // SAFETY: plain syscall with a valid pointer to a stack value.
            if unsafe { libc::setrlimit(resource, &limit) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if self.new_netns {
            // SAFETY: plain syscall.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some((uid, gid)) = self.ids {
            // SAFETY: plain syscalls; a null list with size 0 clears the groups.
            unsafe {
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setresgid(gid, gid, gid) != 0
                    || libc::setresuid(uid, uid, uid) != 0
                {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        // SAFETY: plain syscalls; the ruleset fd is owned by the parent's
        // `Confinement`, which outlives the spawn.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, self.ruleset_fd, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        // Builds a `sock_fprog` on the stack and calls seccomp(2): no allocation.
        if seccompiler::apply_filter(&self.syscalls).is_err() {
            // No allocation after fork: a fixed error, not the library's.
            return Err(io::Error::from_raw_os_error(libc::EPERM));
        }
        Ok(())
    }
}

/// The seccomp program of every child: `socket(AF_UNIX, …)` fails with
/// `EPERM`. Landlock does not cover connecting to a UNIX socket by path
/// (a local PostgreSQL, Redis or Docker socket would be reachable), and a
/// child has no business opening one; `socketpair` (no path) still works.
/// Everything else is allowed. Built once per server.
fn syscall_filter() -> Result<seccompiler::BpfProgram, String> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        libc::AF_UNIX as u64,
    )
    .map_err(|e| e.to_string())?;
    let rules = std::collections::BTreeMap::from([(
        libc::SYS_socket,
        vec![SeccompRule::new(vec![unix]).map_err(|e| e.to_string())?],
    )]);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    seccompiler::BpfProgram::try_from(filter).map_err(|e| e.to_string())
}

/// The kernel's Landlock ABI version (≤ 0 when unsupported).
fn landlock_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the documented version query: null attributes, size 0.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(version).unwrap_or(0)
}

fn build_ruleset(plan: &Plan, abi: i32) -> Result<OwnedFd, SandboxError> {
    let err = |e: landlock::RulesetError| SandboxError::Prepare(format!("Landlock: {e}"));
    let all = AccessFs::from_all(ABI::V6);
    let read = AccessFs::from_read(ABI::V6);
    let device = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .map_err(err)?;
    if abi >= plan::ABI_SCOPES {
        ruleset = ruleset.scope(Scope::from_all(ABI::V6)).map_err(err)?;
    }
    if plan.deny_tcp {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI::V4))
            .map_err(err)?;
    }
    let mut created = ruleset.create().map_err(err)?;
    let mut add = |path: &Path, access| -> Result<(), SandboxError> {
        match PathFd::new(path) {
            Ok(fd) => {
                (&mut created)
                    .add_rule(PathBeneath::new(fd, access))
                    .map_err(err)?;
                Ok(())
            }
            // A system folder this machine lacks is simply not granted.
            Err(_) if !path.exists() => Ok(()),
            Err(e) => Err(SandboxError::Prepare(format!("{}: {e}", path.display()))),
        }
    };
    if plan.list_from_root {
        add(Path::new("/"), AccessFs::ReadDir.into())?;
    }
    for path in &plan.read_only {
        add(path, read)?;
    }
    for path in &plan.devices {
        add(path, device)?;
    }
    for path in &plan.read_write {
        add(path, all)?;
    }
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| SandboxError::Unavailable("Landlock is not enforced by this kernel".into()))
}

fn private_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "exists and is not a directory",
        ));
    }
    Ok(())
}

/// `chown -R` without following symlinks.
fn chown_tree(root: &Path, uid: u32, gid: u32) -> io::Result<()> {
    let mut stack = vec![root.to_path_buf()];
    while let Some(path) = stack.pop() {
        std::os::unix::fs::lchown(&path, Some(uid), Some(gid))?;
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                stack.push(entry?.path());
            }
        }
    }
    Ok(())
}

/// Adds `o+x` (and `g+x`) to a private folder: others may pass, never list.
fn allow_traverse(dir: &Path) -> io::Result<()> {
    let meta = std::fs::metadata(dir)?;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o011 != 0o011 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o011))?;
    }
    Ok(())
}

/// The first ancestor of `home` (exclusive) an unprivileged user cannot pass.
fn untraversable_ancestor(home: &Path) -> Option<PathBuf> {
    home.ancestors().skip(1).find_map(|dir| {
        let meta = std::fs::metadata(dir).ok()?;
        (meta.permissions().mode() & 0o001 == 0).then(|| dir.to_path_buf())
    })
}

#[cfg(test)]
#[path = "sandbox_tests.rs"]
mod tests;

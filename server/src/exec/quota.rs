//! Storage quotas for command output: terminal artifacts and background task
//! logs. Two limits apply to every byte written: one per command (both
//! artifacts and the task log of one command each count against it) and one
//! per tenant (everything the tenant's commands have written and that is still
//! stored).
//!
//! Per-tenant usage lives in memory: one atomic counter per tenant, seeded
//! once at start-up from what is on disk (artifacts under
//! `<home>/runtime/artifacts/<tenant>/`) and in the database (task logs), then
//! kept current as bytes are written (and released if stored output is ever
//! deleted). Nothing scans the disk on the write path. With several instances
//! on one PostgreSQL database each instance counts its own local artifacts and
//! the task logs it writes.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The defaults are settings, so they live with the others.
pub use crate::config::{DEFAULT_ARTIFACT_MAX_BYTES, DEFAULT_TENANT_STORAGE_MAX_BYTES};

/// Which limit stopped the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaLimit {
    /// The per-command cap (`--artifact-max-bytes`).
    Command(u64),
    /// The per-tenant cap (`--tenant-storage-max-bytes`).
    Tenant(u64),
}

impl fmt::Display for QuotaLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Command(limit) => write!(
                f,
                "output quota exceeded: the per-command output limit of {limit} bytes \
                 (--artifact-max-bytes) was reached"
            ),
            Self::Tenant(limit) => write!(
                f,
                "output quota exceeded: the tenant's stored output limit of {limit} bytes \
                 (--tenant-storage-max-bytes) was reached"
            ),
        }
    }
}

/// Per-tenant usage and the two caps; shared by every command.
#[derive(Debug)]
pub struct StorageQuota {
    per_command: u64,
    per_tenant: u64,
    usage: Mutex<HashMap<String, Arc<AtomicU64>>>,
}

impl StorageQuota {
    pub fn new(per_command: u64, per_tenant: u64) -> Arc<Self> {
        Arc::new(Self {
            per_command,
            per_tenant,
            usage: Mutex::default(),
        })
    }

    pub fn per_command(&self) -> u64 {
        self.per_command
    }

    pub fn per_tenant(&self) -> u64 {
        self.per_tenant
    }

    fn counter(&self, tenant: &str) -> Arc<AtomicU64> {
        let mut usage = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        usage.entry(tenant.to_owned()).or_default().clone()
    }

    /// Bytes the tenant has stored.
    pub fn used(&self, tenant: &str) -> u64 {
        self.counter(tenant).load(Ordering::Relaxed)
    }

    /// Whether the tenant has no room left at all.
    pub fn exhausted(&self, tenant: &str) -> Option<QuotaLimit> {
        (self.used(tenant) >= self.per_tenant).then_some(QuotaLimit::Tenant(self.per_tenant))
    }

    /// Counts bytes already stored (start-up seeding).
    pub fn add_existing(&self, tenant: &str, bytes: u64) {
        self.counter(tenant).fetch_add(bytes, Ordering::Relaxed);
    }

    /// Stored output of the tenant was deleted.
    pub fn release(&self, tenant: &str, bytes: u64) {
        let counter = self.counter(tenant);
        let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
            Some(used.saturating_sub(bytes))
        });
    }

    /// The budget of one command of `tenant`.
    pub fn budget(&self, tenant: &str) -> OutputBudget {
        OutputBudget {
            per_command: self.per_command,
            per_tenant: self.per_tenant,
            command_used: Arc::default(),
            tenant_used: self.counter(tenant),
        }
    }

    /// Seeds usage from the artifact tree: `<root>/<tenant>/<session root>/<file>`.
    /// A missing root is empty. Returns the bytes counted.
    pub fn seed_from_artifacts(&self, root: &Path) -> std::io::Result<u64> {
        let tenants = match std::fs::read_dir(root) {
            Ok(dir) => dir,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(err) => return Err(err),
        };
        let mut total = 0;
        for tenant in tenants {
            let tenant = tenant?;
            if !tenant.file_type()?.is_dir() {
                continue;
            }
            let name = tenant.file_name().to_string_lossy().into_owned();
            let bytes = tree_bytes(&tenant.path())?;
            self.add_existing(&name, bytes);
            total += bytes;
        }
        Ok(total)
    }
}

/// Bytes of the regular files under `dir` (symlinks are not followed).
fn tree_bytes(dir: &Path) -> std::io::Result<u64> {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next)? {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                total += entry.metadata()?.len();
            }
        }
    }
    Ok(total)
}

/// One command's share: its own counter plus its tenant's. Clones share both.
#[derive(Debug, Clone)]
pub struct OutputBudget {
    per_command: u64,
    per_tenant: u64,
    command_used: Arc<AtomicU64>,
    tenant_used: Arc<AtomicU64>,
}

impl OutputBudget {
    /// No limits (tests and callers outside a tenant).
    pub fn unlimited() -> Self {
        Self {
            per_command: u64::MAX,
            per_tenant: u64::MAX,
            command_used: Arc::default(),
            tenant_used: Arc::default(),
        }
    }

    /// Bytes this command has stored.
    pub fn command_used(&self) -> u64 {
        self.command_used.load(Ordering::Relaxed)
    }

    /// Reserves up to `wanted` bytes against both limits; returns the bytes
    /// granted and, when fewer than `wanted`, the limit that stopped it.
    pub fn take(&self, wanted: u64) -> (u64, Option<QuotaLimit>) {
        let command = reserve(&self.command_used, self.per_command, wanted);
        let granted = reserve(&self.tenant_used, self.per_tenant, command);
        if granted < command {
            give_back(&self.command_used, command - granted);
        }
        // The limit named is the one that cut deepest.
        let limit = if granted == wanted {
            None
        } else if granted < command {
            Some(QuotaLimit::Tenant(self.per_tenant))
        } else {
            Some(QuotaLimit::Command(self.per_command))
        };
        (granted, limit)
    }

    /// Returns bytes reserved but not written.
    pub fn refund(&self, bytes: u64) {
        give_back(&self.command_used, bytes);
        give_back(&self.tenant_used, bytes);
    }

    /// Reserves room for `text` and returns the prefix that fits (cut on a
    /// character boundary) and the limit that cut it, if any.
    pub fn fit<'a>(&self, text: &'a str) -> (&'a str, Option<QuotaLimit>) {
        let (granted, limit) = self.take(text.len() as u64);
        if limit.is_none() {
            return (text, None);
        }
        let mut cut = usize::try_from(granted)
            .unwrap_or(usize::MAX)
            .min(text.len());
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        self.refund(granted - cut as u64);
        (text.get(..cut).unwrap_or_default(), limit)
    }
}

fn reserve(counter: &AtomicU64, cap: u64, wanted: u64) -> u64 {
    let mut granted = 0;
    let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
        granted = cap.saturating_sub(used).min(wanted);
        Some(used + granted)
    });
    granted
}

fn give_back(counter: &AtomicU64, bytes: u64) {
    let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
        Some(used.saturating_sub(bytes))
    });
}

#[cfg(test)]
#[path = "quota_tests.rs"]
mod tests;

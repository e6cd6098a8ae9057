//! The turn's catalog with its MCP tools, cached.
//!
//! Extending a core's catalog with every connected server's tools (naming
//! 500 tools, resolving their policy, building provider definitions) costs
//! milliseconds; a turn of an unchanged core with unchanged connections
//! would get the same catalog. So the extended catalog is built once per
//! [`Stamp`] and shared by `Arc` until the stamp changes: another base
//! catalog (a new core revision or grants), another server state or error,
//! another connection, or a relist of one (its tool generation).
//!
//! One entry per (tenant, principal, core): a new stamp replaces it, so the
//! cache holds at most one catalog per owner.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::ResolvedCatalog;
use crate::mcp::ServerStatus;

/// What an extended catalog was built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// The base catalog's identity (its fingerprint: core revision, grants,
    /// policies).
    pub base: String,
    /// Each declared server's state before its tools are counted (a changed
    /// error or declaration fingerprint is a changed stamp).
    pub statuses: Vec<ServerStatus>,
    /// Per declared server: (connection id, tool generation) when connected.
    pub connections: Vec<Option<(u64, u64)>>,
}

struct Cached {
    stamp: Stamp,
    catalog: Arc<ResolvedCatalog>,
}

/// Extended catalogs, per (tenant, principal, core).
#[derive(Default)]
pub struct CatalogCache {
    entries: Mutex<HashMap<(String, String, String), Cached>>,
}

impl CatalogCache {
    /// The catalog for `stamp`: the cached one when the owner's last stamp
    /// is equal, else `build()`'s, which then replaces it.
    pub fn get_or_build(
        &self,
        owner: (&str, &str, &str),
        stamp: Stamp,
        build: impl FnOnce() -> ResolvedCatalog,
    ) -> Arc<ResolvedCatalog> {
        let key = (owner.0.to_owned(), owner.1.to_owned(), owner.2.to_owned());
        if let Ok(entries) = self.entries.lock() {
            if let Some(hit) = entries.get(&key).filter(|c| c.stamp == stamp) {
                return hit.catalog.clone();
            }
        }
        // Built outside the lock: other owners' turns go on meanwhile.
        let catalog = Arc::new(build());
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(
                key,
                Cached {
                    stamp,
                    catalog: catalog.clone(),
                },
            );
        }
        catalog
    }

    /// Drop the owner's catalog (its last declaration is gone).
    pub fn forget(&self, owner: (&str, &str, &str)) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|(t, p, c), _| (t.as_str(), p.as_str(), c.as_str()) != owner);
        }
    }

    /// How many owners have a cached catalog.
    pub fn len(&self) -> usize {
        self.entries.lock().map(|e| e.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
#[path = "mcp_cache_tests.rs"]
mod tests;

//! The audit chain's arithmetic: how a row's hash is made from the row and
//! the hash before it, and how a run of rows is checked. Pure: rows in,
//! verdicts out; reading and writing them is the store's.
//!
//! A tenant's rows form one chain by `seq` (1, 2, …). Each row's hash is
//! SHA-256 over the previous row's hash and the row's own fields, in a
//! fixed order, as a JSON array (so no field can bleed into another). The
//! first row's previous hash is [`GENESIS`]; after pruning, the chain
//! starts from a checkpoint: the last pruned row's `seq` and hash.

use sha2::{Digest, Sha256};

/// The previous hash of a tenant's first row.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// One audit row as hashed: everything but its own hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link<'a> {
    pub tenant: &'a str,
    pub seq: i64,
    /// Unix ms.
    pub at: i64,
    pub actor: &'a str,
    pub role: &'a str,
    pub surface: &'a str,
    pub action: &'a str,
    pub target: &'a str,
    /// The detail exactly as stored (JSON text).
    pub detail: &'a str,
    pub prev_hash: &'a str,
}

impl Link<'_> {
    /// This row's hash (lower-case hex).
    pub fn hash(&self) -> String {
        let fields = serde_json::json!([
            self.tenant,
            self.seq,
            self.at,
            self.actor,
            self.role,
            self.surface,
            self.action,
            self.target,
            self.detail
        ]);
        let mut h = Sha256::new();
        h.update(self.prev_hash.as_bytes());
        h.update(b"\n");
        h.update(fields.to_string().as_bytes());
        format!("{:x}", h.finalize())
    }
}

/// Where a chain was found broken: the first row (by `seq`) that does not
/// follow from the one before, or the head that does not match the last row.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the audit chain of tenant {tenant} breaks at seq {seq}: {why}")]
pub struct Broken {
    pub tenant: String,
    pub seq: i64,
    pub why: String,
}

/// Checks rows of one tenant in `seq` order, one at a time, from a start
/// (the genesis or a checkpoint).
#[derive(Debug, Clone)]
pub struct Verifier {
    tenant: String,
    seq: i64,
    hash: String,
}

impl Verifier {
    /// From the start of the chain.
    pub fn new(tenant: &str) -> Self {
        Self::from_checkpoint(tenant, 0, GENESIS)
    }

    /// From a checkpoint: rows up to `seq` were pruned, the last had `hash`.
    pub fn from_checkpoint(tenant: &str, seq: i64, hash: &str) -> Self {
        Self {
            tenant: tenant.to_owned(),
            seq,
            hash: hash.to_owned(),
        }
    }

    fn broken(&self, seq: i64, why: impl Into<String>) -> Broken {
        Broken {
            tenant: self.tenant.clone(),
            seq,
            why: why.into(),
        }
    }

    /// The next row, with the hash it carries.
    pub fn next(&mut self, link: &Link<'_>, stored_hash: &str) -> Result<(), Broken> {
        if link.tenant != self.tenant {
            return Err(self.broken(link.seq, format!("row of tenant {}", link.tenant)));
        }
        if link.seq != self.seq + 1 {
            return Err(self.broken(
                self.seq + 1,
                format!(
                    "row {} is missing (the next row is {})",
                    self.seq + 1,
                    link.seq
                ),
            ));
        }
        if link.prev_hash != self.hash {
            return Err(self.broken(
                link.seq,
                "its previous hash is not the hash of the row before",
            ));
        }
        let hash = link.hash();
        if hash != stored_hash {
            return Err(self.broken(link.seq, "its fields do not give its hash (changed)"));
        }
        self.seq = link.seq;
        self.hash = hash;
        Ok(())
    }

    /// The end: the recorded head must be the last row checked.
    pub fn finish(self, head: Option<(i64, &str)>) -> Result<i64, Broken> {
        let (seq, hash) = head.unwrap_or((0, GENESIS));
        if seq != self.seq || hash != self.hash {
            return Err(self.broken(
                self.seq.max(seq),
                format!(
                    "the recorded head (seq {seq}) is not the last row (seq {})",
                    self.seq
                ),
            ));
        }
        Ok(self.seq)
    }
}

#[cfg(test)]
#[path = "audit_chain_tests.rs"]
mod tests;

//! Capability grants: the pure decision whether an Agent Core granted a
//! capability key.
//!
//! This module owns:
//! * the grant snapshot of one core ([`CapabilityGrants`]): the keys of
//!   `agent.yaml` `capabilities.defaults` (core-wide) and of
//!   `capabilities.slots.<slot path>` (path-scoped). Only keys matter; the
//!   values (`scope: workspace`, limits, …) are informational and never
//!   reach this module;
//! * key matching ([`matches()`]): an exact key, or a prefix grant formed by
//!   dropping trailing `:`-segments and appending `:*` (`a:b:c` is granted by
//!   `a:b:*` and by `a:*`). A key without `:` only matches exactly, a bare `*`
//!   grants nothing, and `secret.bind:*` (or any other wildcard) never grants a
//!   `secret.bind:` capability;
//! * the check order of [`CapabilityGrants::allows`]: path-scoped slot grants,
//!   then (only when asked) the component's own `capabilities:` list, then the
//!   core defaults. Built-in tools pass no slot path and are therefore checked
//!   against the defaults only. The authored-tool dispatcher gate passes
//!   `include_component = false`, so a tool cannot grant its own singular
//!   `capability` through its plural `capabilities` list;
//! * the exact check used for `secret.bind:<NAME>`
//!   ([`CapabilityGrants::allows_exact_default`]);
//! * the denial texts ([`denial_message`], [`exact_denial_message`]) and an
//!   order-independent [`CapabilityGrants::fingerprint`] that approval cache
//!   keys bind to.
//!
//! It performs no I/O and keeps no audit trail: callers record the verdicts.

use std::collections::{BTreeMap, BTreeSet};

/// Prefix of the per-secret capability checked with
/// [`CapabilityGrants::allows_exact_default`].
pub const SECRET_BIND_PREFIX: &str = "secret.bind:";

/// The capability grants of one loaded Agent Core.
///
/// Built from the keys of `capabilities.defaults` and
/// `capabilities.slots.<slot path>`. Immutable once built; clone it into a
/// turn to pin the grants that turn was admitted with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapabilityGrants {
    defaults: BTreeSet<String>,
    slots: BTreeMap<String, BTreeSet<String>>,
    /// A child agent's bound: the default grants of every delegating core
    /// above it. A capability is granted only when each of these grants it
    /// too (the intersection), whatever this core grants itself.
    ceilings: Vec<BTreeSet<String>>,
}

impl CapabilityGrants {
    /// Grants from core-wide default keys and `(slot path, keys)` pairs.
    ///
    /// Duplicate keys collapse; a slot path given twice gets the union of its
    /// keys. Slot paths are taken verbatim (no normalisation), exactly as the
    /// dispatcher will later pass them.
    pub fn new(
        defaults: impl IntoIterator<Item = String>,
        slots: impl IntoIterator<Item = (String, Vec<String>)>,
    ) -> Self {
        let mut by_path: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (path, keys) in slots {
            by_path.entry(path).or_default().extend(keys);
        }
        Self {
            defaults: defaults.into_iter().collect(),
            slots: by_path,
            ceilings: Vec::new(),
        }
    }

    /// These grants as a child agent of a core with `parent` grants gets
    /// them: the intersection. Only the parent's core-wide grants (and its
    /// own ceilings) bound the child; the parent's path-scoped grants belong
    /// to its own authored tools and never reach another core's.
    pub fn within(&self, parent: &CapabilityGrants) -> Self {
        let mut out = self.clone();
        out.ceilings.push(parent.defaults.clone());
        out.ceilings.extend(parent.ceilings.iter().cloned());
        out
    }

    fn under_ceilings(&self, cap: &str) -> bool {
        self.ceilings.iter().all(|c| any_matches(c.iter(), cap))
    }

    /// The core-wide default keys, sorted.
    pub fn defaults(&self) -> impl Iterator<Item = &str> {
        self.defaults.iter().map(String::as_str)
    }

    /// The path-scoped keys of one slot path, sorted (empty when none).
    pub fn slot(&self, slot_path: &str) -> impl Iterator<Item = &str> {
        self.slots
            .get(slot_path)
            .into_iter()
            .flat_map(|keys| keys.iter().map(String::as_str))
    }

    /// Whether `cap` is granted.
    ///
    /// Order: when `slot_path` is a non-empty path, the path-scoped grants of
    /// that path, then — only if `include_component` — the component's own
    /// `capabilities` list (`component`); finally the core defaults. With no
    /// slot path (built-in tools, host operations) only the defaults are
    /// consulted and `component` is ignored. The authored-tool dispatcher
    /// gate for the singular `capability` always passes
    /// `include_component = false`.
    pub fn allows(
        &self,
        cap: &str,
        slot_path: Option<&str>,
        component: &[String],
        include_component: bool,
    ) -> bool {
        self.under_ceilings(cap) && self.allows_here(cap, slot_path, component, include_component)
    }

    fn allows_here(
        &self,
        cap: &str,
        slot_path: Option<&str>,
        component: &[String],
        include_component: bool,
    ) -> bool {
        if let Some(path) = slot_path.filter(|p| !p.is_empty()) {
            if let Some(keys) = self.slots.get(path) {
                if any_matches(keys.iter(), cap) {
                    return true;
                }
            }
            if include_component && any_matches(component.iter(), cap) {
                return true;
            }
        }
        any_matches(self.defaults.iter(), cap)
    }

    /// Exact check against the core defaults only, used for
    /// `secret.bind:<NAME>`: no prefix grant, no slot grant and no component
    /// list can satisfy it, and a capability containing `*` is never granted
    /// (so `secret.bind:*` in the defaults grants nothing).
    pub fn allows_exact_default(&self, cap: &str) -> bool {
        !cap.is_empty()
            && !cap.contains('*')
            && self.defaults.contains(cap)
            && self.ceilings.iter().all(|c| c.contains(cap))
    }

    /// A stable, order-independent canonical text of the grants, for approval
    /// cache keys (hash it if a fixed length is needed).
    ///
    /// Keys and slot paths are sorted and de-duplicated; every string is
    /// length-prefixed so no choice of key text can make two different grant
    /// sets collide. Slot paths with no keys are omitted: they grant nothing,
    /// so they must not change the fingerprint either.
    pub fn fingerprint(&self) -> String {
        let mut out = String::from("caps/v1;defaults=");
        push_set(&mut out, &self.defaults);
        out.push_str(";slots=");
        for (path, keys) in self.slots.iter().filter(|(_, keys)| !keys.is_empty()) {
            push_str_lp(&mut out, path);
            out.push('[');
            push_set(&mut out, keys);
            out.push(']');
        }
        if !self.ceilings.is_empty() {
            out.push_str(";within=");
            for c in &self.ceilings {
                push_set(&mut out, c);
            }
        }
        out
    }
}

fn push_str_lp(out: &mut String, s: &str) {
    out.push_str(&s.len().to_string());
    out.push(':');
    out.push_str(s);
}

fn push_set(out: &mut String, set: &BTreeSet<String>) {
    out.push('{');
    for key in set {
        push_str_lp(out, key);
        out.push(',');
    }
    out.push('}');
}

fn any_matches<'a>(grants: impl Iterator<Item = &'a String>, cap: &str) -> bool {
    grants.into_iter().any(|grant| matches(grant, cap))
}

/// Whether one granted key covers the requested capability `cap`.
///
/// * exact equality grants, except that a bare `*` grants nothing and a grant
///   starting with `secret.bind:` that contains `*` grants nothing;
/// * a wildcard grant `p:*` grants every `cap` whose leading `:`-segments
///   equal `p` and that has at least one further segment: `a:*` and `a:b:*`
///   both grant `a:b:c`; `a:*` does not grant `a` (no `:`) nor `ab:c`;
/// * a capability starting with `secret.bind:` is only ever granted exactly
///   (no wildcard can cover it).
pub fn matches(grant: &str, cap: &str) -> bool {
    if grant == "*" {
        return false;
    }
    if grant.starts_with(SECRET_BIND_PREFIX) && grant.contains('*') {
        return false;
    }
    if grant == cap {
        return true;
    }
    if cap.starts_with(SECRET_BIND_PREFIX) {
        return false;
    }
    let Some(prefix) = grant.strip_suffix(":*") else {
        return false;
    };
    // `cap` must continue as `<prefix>:<more>` where `<prefix>` ends on a
    // segment boundary of `cap`. Every such `<prefix>` is one of the
    // prefixes formed by dropping trailing segments.
    cap.strip_prefix(prefix)
        .is_some_and(|rest| rest.starts_with(':'))
}

/// `capability denied: <cap> for <slot_path|host>` (an empty slot path reads
/// as `host`).
pub fn denial_message(cap: &str, slot_path: Option<&str>) -> String {
    let target = slot_path.filter(|p| !p.is_empty()).unwrap_or("host");
    format!("capability denied: {cap} for {target}")
}

/// `exact capability denied: <cap> for host`, the denial of
/// [`CapabilityGrants::allows_exact_default`].
pub fn exact_denial_message(cap: &str) -> String {
    format!("exact capability denied: {cap} for host")
}

#[cfg(test)]
#[path = "capabilities_tests.rs"]
mod tests;

use std::sync::Arc;

use super::*;
use crate::catalog::CatalogInput;
use crate::mcp::ServerState;

fn base(fingerprint: &str) -> ResolvedCatalog {
    ResolvedCatalog::build(&CatalogInput {
        core_id: "c".into(),
        builtin_tools: vec!["read_file".into()],
        fingerprint: fingerprint.into(),
        ..CatalogInput::default()
    })
}

fn status(error: Option<&str>) -> ServerStatus {
    ServerStatus {
        server: "time".into(),
        manifest: "agent/mcp/time.yaml".into(),
        transport: Some("stdio"),
        state: ServerState::Unavailable,
        last_error: error.map(str::to_owned),
        connect_capability: "mcp.connect:time".into(),
        call_capability: Some("mcp.call:time".into()),
        fingerprint: "fp".into(),
        tools: None,
    }
}

fn stamp(base: &str, error: Option<&str>, conn: Option<(u64, u64)>) -> Stamp {
    Stamp {
        base: base.into(),
        statuses: vec![status(error)],
        connections: vec![conn],
    }
}

const ALICE: (&str, &str, &str) = ("t", "alice", "c");

#[test]
fn an_equal_stamp_shares_the_built_catalog() {
    let cache = CatalogCache::default();
    let mut builds = 0;
    let mut get = |s: Stamp| {
        cache.get_or_build(ALICE, s, || {
            builds += 1;
            base("r1")
        })
    };
    let a = get(stamp("r1", None, Some((1, 0))));
    let b = get(stamp("r1", None, Some((1, 0))));
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(builds, 1);
}

#[test]
fn a_relist_a_new_connection_a_new_base_or_a_new_error_rebuilds() {
    let cache = CatalogCache::default();
    let first = cache.get_or_build(ALICE, stamp("r1", None, Some((1, 0))), || base("r1"));
    for changed in [
        stamp("r1", None, Some((1, 1))),
        stamp("r1", None, Some((2, 0))),
        stamp("r2", None, Some((2, 0))),
        stamp("r2", Some("denied"), None),
    ] {
        let mut built = false;
        let next = cache.get_or_build(ALICE, changed, || {
            built = true;
            base("r1")
        });
        assert!(built);
        assert!(!Arc::ptr_eq(&first, &next));
    }
    // One entry per owner: the newest stamp replaced the others.
    assert_eq!(cache.len(), 1);
}

#[test]
fn owners_do_not_share_and_forget_drops_one() {
    let cache = CatalogCache::default();
    let s = || stamp("r1", None, Some((1, 0)));
    let a = cache.get_or_build(ALICE, s(), || base("r1"));
    let b = cache.get_or_build(("t", "bob", "c"), s(), || base("r1"));
    assert!(!Arc::ptr_eq(&a, &b));
    assert_eq!(cache.len(), 2);
    cache.forget(ALICE);
    assert_eq!(cache.len(), 1);
    let mut built = false;
    cache.get_or_build(ALICE, s(), || {
        built = true;
        base("r1")
    });
    assert!(built);
}

use serde_json::json;

use super::*;
use crate::auth::{PrincipalScope, Role};
use crate::ids::{PrincipalId, TenantId};
use crate::store::search_index::owner_token;

fn scope(tenant: &str, principal: &str, role: Role) -> PrincipalScope {
    PrincipalScope::new(
        TenantId::parse(tenant).expect("tenant"),
        PrincipalId::parse(principal).expect("principal"),
        role,
    )
}

fn hit(session: &str, id: i64) -> Hit {
    Hit {
        session_id: session.into(),
        message_id: id,
        turn_id: "t".into(),
        role: "user".into(),
        content: String::new(),
        created_at: 0,
    }
}

#[test]
fn modes_follow_the_fields_given() {
    let r = Request::new(None, None, 10, 0).unwrap();
    assert_eq!(r.mode, Mode::Browse);
    let r = Request::new(Some("  "), Some(" "), 10, 0).unwrap();
    assert_eq!(r.mode, Mode::Browse, "blank fields are absent");
    let r = Request::new(Some(" deploy "), None, 10, 0).unwrap();
    assert_eq!(
        r.mode,
        Mode::FullText {
            query: "deploy".into()
        }
    );
    let r = Request::new(None, Some("s1"), 10, 5).unwrap();
    assert_eq!(
        r.mode,
        Mode::Session {
            session: "s1".into(),
            query: String::new()
        }
    );
    assert_eq!(r.offset, 5);
    let r = Request::new(Some("x"), Some("s1"), 10, 0).unwrap();
    assert_eq!(
        r.mode,
        Mode::Session {
            session: "s1".into(),
            query: "x".into()
        }
    );
}

#[test]
fn bad_limits_and_long_queries_are_refused() {
    assert_eq!(Request::new(None, None, 0, 0), Err(RefuseSearch::Limit(0)));
    assert_eq!(
        Request::new(None, None, MAX_LIMIT + 1, 0),
        Err(RefuseSearch::Limit(MAX_LIMIT + 1))
    );
    let long = "é".repeat(MAX_QUERY_CHARS + 1);
    assert_eq!(
        Request::new(Some(&long), None, 10, 0),
        Err(RefuseSearch::QueryTooLong)
    );
    let ok = "é".repeat(MAX_QUERY_CHARS);
    assert!(Request::new(Some(&ok), None, 10, 0).is_ok());
}

#[test]
fn only_operators_with_a_reason_reach_the_tenant() {
    let member = scope("acme", "alice", Role::Member);
    assert_eq!(
        Reach::tenant(&member, Some("audit")),
        Err(RefuseSearch::NotOperator)
    );
    let op = scope("acme", "olga", Role::Operator);
    assert_eq!(Reach::tenant(&op, None), Err(RefuseSearch::NoReason));
    assert_eq!(Reach::tenant(&op, Some("   ")), Err(RefuseSearch::NoReason));
    let long = "r".repeat(MAX_REASON_CHARS + 1);
    assert_eq!(Reach::tenant(&op, Some(&long)), Err(RefuseSearch::NoReason));
    let reach = Reach::tenant(&op, Some("incident 42")).unwrap();
    assert_eq!(
        reach,
        Reach::Tenant {
            tenant: TenantId::parse("acme").unwrap()
        }
    );
    let admin = scope("acme", "root", Role::Admin);
    assert!(Reach::tenant(&admin, Some("why")).is_ok());
}

#[test]
fn reach_admits_only_its_sessions() {
    let alice = scope("acme", "alice", Role::Member);
    let owned = Reach::owned(&alice);
    assert!(owned.admits("acme", "alice", "s1"));
    assert!(!owned.admits("acme", "bob", "s1"), "another principal");
    assert!(!owned.admits("other", "alice", "s1"), "another tenant");
    let bound = Reach::bound(&alice, "s1");
    assert!(bound.admits("acme", "alice", "s1"));
    assert!(
        !bound.admits("acme", "alice", "s2"),
        "only the bound session"
    );
    assert!(!bound.admits("acme", "bob", "s1"));
    let op = scope("acme", "olga", Role::Operator);
    let tenant = Reach::tenant(&op, Some("why")).unwrap();
    assert!(tenant.admits("acme", "bob", "s9"));
    assert!(!tenant.admits("other", "bob", "s9"));
}

#[test]
fn reach_tokens_match_the_migrations() {
    // `hex()` in SQLite and `encode(…, 'hex')` in PostgreSQL, case-folded.
    let alice = scope("ac", "al", Role::Member);
    assert_eq!(Reach::owned(&alice).token(), "o61632f616c");
    assert_eq!(Reach::bound(&alice, "s-1").token(), "s732d31");
    let op = scope("ac", "olga", Role::Operator);
    assert_eq!(Reach::tenant(&op, Some("r")).unwrap().token(), "t6163");
    // Different owners never share a token ("a/bc" vs "ab/c" cannot both be
    // ids: a tenant has no `/`).
    let a = owner_token(
        &TenantId::parse("a").unwrap(),
        &PrincipalId::parse("bc").unwrap(),
    );
    let b = owner_token(
        &TenantId::parse("ab").unwrap(),
        &PrincipalId::parse("c").unwrap(),
    );
    assert_ne!(a, b);
}

#[test]
fn ranked_hits_are_shown_session_by_session_in_message_order() {
    let ranked = vec![
        hit("b", 9),
        hit("a", 4),
        hit("b", 2),
        hit("a", 1),
        hit("c", 5),
    ];
    let shown: Vec<(String, i64)> = in_session_order(ranked)
        .into_iter()
        .map(|h| (h.session_id, h.message_id))
        .collect();
    assert_eq!(
        shown,
        vec![
            ("b".into(), 2),
            ("b".into(), 9),
            ("a".into(), 1),
            ("a".into(), 4),
            ("c".into(), 5)
        ]
    );
}

#[test]
fn pages_say_where_the_next_one_starts() {
    assert_eq!(paginate(vec![1, 2, 3], 2, 10), (vec![1, 2], Some(12)));
    assert_eq!(paginate(vec![1, 2], 2, 10), (vec![1, 2], None));
    assert_eq!(paginate(Vec::<u8>::new(), 2, 0), (vec![], None));
    assert_eq!(paginate(vec![1, 2], 1, u32::MAX), (vec![1], Some(u32::MAX)));
}

#[test]
fn audits_record_the_shape_never_the_text() {
    let r = Request::new(Some("secret words"), None, 20, 40).unwrap();
    assert_eq!(
        audit_detail(&r),
        json!({"mode": "full_text", "query_chars": 12, "limit": 20, "offset": 40})
    );
    let r = Request::new(None, Some("s1"), 5, 0).unwrap();
    assert_eq!(
        audit_detail(&r),
        json!({"mode": "session", "session_id": "s1", "query_chars": 0, "limit": 5, "offset": 0})
    );
}

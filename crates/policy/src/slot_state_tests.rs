use serde_json::json;

use super::*;

fn req(scope: &str, action: &str, target: &str, value: Value) -> Request {
    parse_request(scope, action, target, value).expect("valid request")
}

fn refused(scope: &str, action: &str, target: &str, value: Value) -> String {
    match parse_request(scope, action, target, value) {
        Err(StateError::Invalid(m)) => m,
        other => panic!("expected invalid, got {other:?}"),
    }
}

#[test]
fn targets_are_dotted_non_empty_and_bounded() {
    assert_eq!(parse_target("a").unwrap(), vec!["a"]);
    assert_eq!(parse_target("a.b.c").unwrap(), vec!["a", "b", "c"]);
    assert_eq!(parse_target("draft_count").unwrap(), vec!["draft_count"]);
    assert_eq!(parse_target("ünï.cödé").unwrap(), vec!["ünï", "cödé"]);
    for bad in ["", ".", "a.", ".a", "a..b", " . ", "a. .b"] {
        assert!(
            matches!(parse_target(bad), Err(StateError::Invalid(_))),
            "{bad:?}"
        );
    }
    assert!(parse_target("a\nb").is_err());
    assert!(parse_target("a\u{0}b").is_err());
    assert!(parse_target(&"x".repeat(MAX_TARGET_BYTES)).is_ok());
    assert!(parse_target(&"x".repeat(MAX_TARGET_BYTES + 1)).is_err());
    let deep = vec!["s"; MAX_SEGMENTS].join(".");
    assert!(parse_target(&deep).is_ok());
    let deeper = vec!["s"; MAX_SEGMENTS + 1].join(".");
    assert!(parse_target(&deeper).is_err());
}

#[test]
fn requests_parse_scope_action_and_value() {
    let r = req("session", "get", "n", json!(0));
    assert_eq!((r.scope, r.action), (Scope::Session, Action::Get));
    assert_eq!(r.value, json!(0));
    let r = req("core", "snapshot", "ignored", json!("ignored"));
    assert_eq!((r.scope, r.action), (Scope::Core, Action::Snapshot));
    assert_eq!((r.target.as_str(), &r.value), ("", &Value::Null));
    assert!(refused("tenant", "get", "a", Value::Null).contains("scope"));
    assert!(refused("core", "delete", "a", Value::Null).contains("operation"));
    assert!(refused("core", "set", "", json!(1)).contains("required"));
    assert!(refused("core", "merge", "a", json!([1])).contains("object"));
    assert!(refused("core", "merge", "a", json!("x")).contains("object"));
    assert!(parse_request("core", "merge", "a", json!({})).is_ok());
    assert!(parse_request("core", "append", "a", json!(null)).is_ok());
}

#[test]
fn documents_are_the_cores_or_the_sessions() {
    assert_eq!(
        req("core", "get", "a", Value::Null).document_key("s1"),
        "core"
    );
    assert_eq!(
        req("session", "set", "a", json!(1)).document_key("s1"),
        "session:s1"
    );
}

#[test]
fn capabilities_name_the_target_first_then_the_scope() {
    let caps = |s, a, t| capabilities(&req(s, a, t, json!({})));
    assert_eq!(
        caps("session", "get", "draft_count"),
        vec!["state.session.read:draft_count", "state.session.read"]
    );
    assert_eq!(
        caps("session", "set", "draft_count"),
        vec!["state.session.write:draft_count", "state.session.write"]
    );
    assert_eq!(
        caps("core", "merge", "preferences"),
        vec!["state.core.write:preferences", "state.core.write"]
    );
    assert_eq!(
        caps("core", "append", "log.items"),
        vec!["state.core.write:log.items", "state.core.write"]
    );
    assert_eq!(caps("core", "snapshot", ""), vec!["state.core.read"]);
    assert_eq!(caps("session", "snapshot", ""), vec!["state.session.read"]);
}

#[test]
fn set_creates_the_path_and_replaces_the_leaf() {
    let mut doc = empty_document();
    let now = apply(&mut doc, &req("core", "set", "a.b.c", json!(1))).unwrap();
    assert_eq!(now, json!(1));
    assert_eq!(doc, json!({"schema_version": 1, "a": {"b": {"c": 1}}}));
    apply(&mut doc, &req("core", "set", "a.b", json!("flat"))).unwrap();
    assert_eq!(doc, json!({"schema_version": 1, "a": {"b": "flat"}}));
    apply(&mut doc, &req("core", "set", "n", Value::Null)).unwrap();
    assert_eq!(doc["n"], Value::Null);
}

#[test]
fn merge_updates_objects_only() {
    let mut doc = empty_document();
    apply(
        &mut doc,
        &req("core", "merge", "prefs", json!({"tone": "short"})),
    )
    .unwrap();
    let now = apply(
        &mut doc,
        &req("core", "merge", "prefs", json!({"lang": "en"})),
    )
    .unwrap();
    assert_eq!(now, json!({"tone": "short", "lang": "en"}));
    apply(
        &mut doc,
        &req("core", "merge", "prefs", json!({"tone": "long"})),
    )
    .unwrap();
    assert_eq!(doc["prefs"], json!({"tone": "long", "lang": "en"}));
    apply(&mut doc, &req("core", "set", "n", json!(3))).unwrap();
    let before = doc.clone();
    let err = apply(&mut doc, &req("core", "merge", "n", json!({"x": 1}))).unwrap_err();
    assert!(err.to_string().contains("object"), "{err}");
    assert_eq!(doc, before, "a refused write leaves the document as it was");
}

#[test]
fn append_adds_to_arrays_only() {
    let mut doc = empty_document();
    apply(&mut doc, &req("session", "append", "seen", json!("a"))).unwrap();
    let now = apply(&mut doc, &req("session", "append", "seen", json!({"b": 2}))).unwrap();
    assert_eq!(now, json!(["a", {"b": 2}]));
    apply(&mut doc, &req("session", "set", "s", json!("text"))).unwrap();
    let before = doc.clone();
    let err = apply(&mut doc, &req("session", "append", "s", json!(1))).unwrap_err();
    assert!(err.to_string().contains("array"), "{err}");
    assert_eq!(doc, before);
}

#[test]
fn a_path_through_a_non_object_is_refused_unchanged() {
    let mut doc = empty_document();
    apply(&mut doc, &req("core", "set", "a", json!(5))).unwrap();
    let before = doc.clone();
    let err = apply(&mut doc, &req("core", "set", "a.b", json!(1))).unwrap_err();
    assert_eq!(
        err,
        StateError::Invalid("state target is not an object: a".into())
    );
    assert_eq!(doc, before);
    let err = apply(&mut doc, &req("core", "append", "a.b.c", json!(1))).unwrap_err();
    assert!(err.to_string().contains("not an object"));
}

#[test]
fn reads_do_not_write() {
    let mut doc = empty_document();
    for r in [
        req("core", "get", "a", json!(1)),
        req("core", "snapshot", "", Value::Null),
    ] {
        assert!(apply(&mut doc, &r).is_err());
    }
    assert_eq!(doc, empty_document());
}

#[test]
fn the_document_is_bounded() {
    let mut doc = empty_document();
    let big = "x".repeat(MAX_DOCUMENT_BYTES / 2);
    apply(&mut doc, &req("core", "set", "one", json!(big))).unwrap();
    let before = doc.clone();
    let err = apply(&mut doc, &req("core", "set", "two", json!(big))).unwrap_err();
    assert!(err.to_string().contains("limit"), "{err}");
    assert_eq!(doc, before);
    // Replacing the big value with a small one is always possible.
    apply(&mut doc, &req("core", "set", "one", json!("small"))).unwrap();
}

#[test]
fn get_returns_the_value_or_its_default() {
    let mut doc = empty_document();
    apply(&mut doc, &req("session", "set", "a.b", json!([1, 2]))).unwrap();
    assert_eq!(
        read(&doc, &req("session", "get", "a.b", json!(0))),
        json!([1, 2])
    );
    assert_eq!(
        read(&doc, &req("session", "get", "a", Value::Null)),
        json!({"b": [1, 2]})
    );
    assert_eq!(
        read(&doc, &req("session", "get", "a.c", json!(7))),
        json!(7)
    );
    assert_eq!(
        read(&doc, &req("session", "get", "a.b.c", json!("d"))),
        json!("d")
    );
    assert_eq!(
        read(&doc, &req("session", "get", "missing", Value::Null)),
        Value::Null
    );
    assert_eq!(
        read(&doc, &req("session", "snapshot", "", Value::Null)),
        doc
    );
}

#[test]
fn read_target_walks_objects_only() {
    let doc = json!({"a": {"b": {"c": true}}, "l": [1, 2]});
    assert_eq!(read_target(&doc, "a.b.c"), Some(&json!(true)));
    assert_eq!(read_target(&doc, "a.b"), Some(&json!({"c": true})));
    assert_eq!(read_target(&doc, "l.0"), None, "arrays are not indexed");
    assert_eq!(read_target(&doc, "a.x"), None);
    assert_eq!(read_target(&json!(3), "a"), None);
}

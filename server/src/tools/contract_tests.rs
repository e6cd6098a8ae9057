use serde::Deserialize;
use serde_json::json;

use super::{lenient_int, parse_args, ToolStatus};

#[derive(Debug, Deserialize)]
struct Args {
    #[serde(default)]
    name: Option<String>,
    #[serde(default, deserialize_with = "lenient_int")]
    n: Option<i64>,
    #[serde(default)]
    items: Vec<Item>,
}

#[derive(Debug, Deserialize)]
struct Item {
    #[serde(default)]
    flag: bool,
}

#[test]
fn integers_are_lenient() {
    for (v, want) in [
        (json!({}), None),
        (json!({"n": null}), None),
        (json!({"n": 5}), Some(5)),
        (json!({"n": -2}), Some(-2)),
        (json!({"n": 7.9}), Some(7)),
        (json!({"n": " 12 "}), Some(12)),
    ] {
        let a: Args = parse_args("t", &v).unwrap();
        assert_eq!(a.n, want, "{v}");
    }
}

#[test]
fn failures_are_invalid_and_name_the_field() {
    for (v, field) in [
        (json!({"name": 1}), "name"),
        (json!({"n": "twelve"}), "n"),
        (json!({"n": [1]}), "n"),
        (
            json!({"items": [{"flag": true}, {"flag": "yes"}]}),
            "items[1].flag",
        ),
    ] {
        let o = parse_args::<Args>("tool_x", &v).unwrap_err();
        assert_eq!(o.status, ToolStatus::Invalid);
        let msg = o.content.as_str().unwrap();
        assert!(
            msg.starts_with(&format!("invalid arguments for tool_x: {field}: ")),
            "{msg}"
        );
    }
    let o = parse_args::<Args>("tool_x", &json!("text")).unwrap_err();
    assert!(o
        .content
        .as_str()
        .unwrap()
        .starts_with("invalid arguments for tool_x: "));
    let a: Args = parse_args("t", &json!({"name": "x", "items": [{"flag": true}]})).unwrap();
    assert_eq!(a.name.as_deref(), Some("x"));
    assert!(a.items[0].flag);
}

use serde_json::{json, Map, Value};

use super::*;

const BRAVE: &str = r#"
schema_version: 1
id: web_search_brave
name: Brave Web Search
summary: Search the web with Brave Search.
tags: [web, search, provider:brave]
options:
- id: api_key
  type: secret
  prompt: Brave Search API key
  required: false
  default: null
capabilities: [network.fetch]
components:
- id: web_search_tool
  kind: tool
  source: web_search_brave
  target: agent/tools/web_search
- id: web_search_lib
  kind: lib
  source: web_search_brave
  target: agent/lib/web_search_brave
  config:
    api_key: ${options.api_key}
"#;

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

#[test]
fn the_originals_web_search_recipe_parses_with_libraries_first() {
    let r = parse_recipe(BRAVE, "web_search_brave").unwrap();
    assert_eq!(r.id, "web_search_brave");
    assert_eq!(r.tags, ["web", "search", "provider:brave"]);
    assert_eq!(r.capabilities, ["network.fetch"]);
    assert_eq!(
        r.components.iter().map(|c| c.kind).collect::<Vec<_>>(),
        [Kind::Lib, Kind::Tool]
    );
    assert!(r.options[0].is_secret());
    assert_eq!(
        r.components[1].target.as_deref(),
        Some("agent/tools/web_search")
    );
}

#[test]
fn repository_yaml_needs_schema_1_and_an_id() {
    let info = parse_repository("schema_version: 1\nid: builtin\nname: Built-in\n").unwrap();
    assert_eq!(
        (info.id.as_str(), info.name.as_str()),
        ("builtin", "Built-in")
    );
    assert!(parse_repository("schema_version: 2\nid: x\n").is_err());
    assert!(parse_repository("schema_version: 1\n").is_err());
    assert!(parse_repository("- a list\n").is_err());
}

#[test]
fn malformed_recipes_say_why() {
    let cases = [
        ("schema_version: 2\nid: a\ncomponents: []\n", "schema_version"),
        ("schema_version: 1\nid: a\nslots: []\ncomponents: []\n", "removed v1"),
        ("schema_version: 1\ncomponents: []\n", "`id` is required"),
        ("schema_version: 1\nid: a\n", "components must be"),
        (
            "schema_version: 1\nid: a\ncomponents:\n- {id: x, kind: widget, source: s}\n",
            "invalid kind",
        ),
        (
            "schema_version: 1\nid: a\ncomponents:\n- {id: x, kind: input, source: s}\n",
            "pipeline is required",
        ),
        (
            "schema_version: 1\nid: a\ncomponents:\n- {id: x, kind: tool, source: s, pipeline: {group: serial, append: true}}\n",
            "only valid for",
        ),
        (
            "schema_version: 1\nid: a\ncomponents:\n- {id: x, kind: bootstrap, source: s, pipeline: {group: parallel, append: true}}\n",
            "pipeline.group",
        ),
        (
            "schema_version: 1\nid: a\ncomponents:\n- {id: x, kind: input, source: s, pipeline: {group: serial, append: true, before: y}}\n",
            "exactly one",
        ),
        (
            "schema_version: 1\nid: a\ncomponents:\n- {id: x, kind: tool, source: ../up}\n",
            "inside the repository",
        ),
        (
            "schema_version: 1\nid: a\ncomponents:\n- {id: x, kind: tool, source: s}\n- {id: x, kind: lib, source: s}\n",
            "duplicate component",
        ),
        (
            "schema_version: 1\nid: a\ncomponents:\n- {id: x, kind: tool, source: s, when: {nope: true}}\n",
            "unknown option",
        ),
        (
            "schema_version: 1\nid: a\noptions:\n- {id: c, type: choice}\ncomponents: []\n",
            "require choices",
        ),
        (
            "schema_version: 1\nid: a\noptions:\n- {id: c, type: colour}\ncomponents: []\n",
            "invalid type",
        ),
        (
            "schema_version: 1\nid: a\ncomponents:\n- {id: x, kind: core, source: s, config: {a: 1}}\n",
            "not valid for core",
        ),
        ("schema_version: 1\nid: ../evil\ncomponents: []\n", "package id"),
        ("{not yaml", "a"),
    ];
    for (text, want) in cases {
        let e = parse_recipe(text, "a").unwrap_err();
        assert!(e.contains(want), "{text:?}: {e}");
    }
}

#[test]
fn options_resolve_with_defaults_types_and_required() {
    let r = parse_recipe(
        "schema_version: 1\nid: a\noptions:\n- {id: style, type: choice, choices: [brief, {value: long}], default: brief}\n- {id: on, type: bool, default: false}\n- {id: name, required: true}\n- {id: key, type: secret}\ncomponents: []\n",
        "a",
    )
    .unwrap();
    let got = resolve_options(&r, &obj(json!({"name": "x", "on": "yes"}))).unwrap();
    assert_eq!(
        Value::Object(got),
        json!({"style": "brief", "on": true, "name": "x", "key": null})
    );
    let e = resolve_options(&r, &obj(json!({}))).unwrap_err();
    assert!(e.contains("requires option \"name\""), "{e}");
    let e = resolve_options(&r, &obj(json!({"name": "x", "style": "huge"}))).unwrap_err();
    assert!(e.contains("one of: brief, long"), "{e}");
    let e = resolve_options(&r, &obj(json!({"name": "x", "bogus": 1}))).unwrap_err();
    assert!(e.contains("unknown option"), "{e}");
    let e = resolve_options(&r, &obj(json!({"name": "x", "key": "sk-123"}))).unwrap_err();
    assert!(e.contains("secret"), "{e}");
}

#[test]
fn config_is_rendered_from_options_and_conditional_overlays() {
    let r = parse_recipe(
        "schema_version: 1\nid: a\noptions:\n- {id: mode, type: choice, choices: [x, y], default: x}\n- {id: n, default: '3'}\ncomponents:\n- id: c\n  kind: lib\n  source: s\n  config: {mode: '${options.mode}', label: 'n=${options.n}!', nested: {keep: 1}}\n  config_when:\n  - when: {mode: y}\n    config: {nested: {extra: 2}}\n",
        "a",
    )
    .unwrap();
    let c = &r.components[0];
    let x = resolve_options(&r, &Map::new()).unwrap();
    assert_eq!(
        Value::Object(render_config(c, &x).unwrap()),
        json!({"mode": "x", "label": "n=3!", "nested": {"keep": 1}})
    );
    let y = resolve_options(&r, &obj(json!({"mode": "y"}))).unwrap();
    assert_eq!(
        Value::Object(render_config(c, &y).unwrap()),
        json!({"mode": "y", "label": "n=3!", "nested": {"keep": 1, "extra": 2}})
    );
    assert!(condition_matches(&obj(json!({"mode": "y"})), &y));
    assert!(!condition_matches(&obj(json!({"mode": "y"})), &x));
}

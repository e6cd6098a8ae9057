//! Authored tools through a turn: the Python project's own example tool and
//! a package tool run unchanged in the confined runner; the singular
//! capability gate holds before import; every runner failure is a typed
//! result and the server carries on.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::*;

const UPSTREAM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/api/fixtures/upstream"
);

fn core_dir(app: &TestApp, core: &str) -> PathBuf {
    app.home.join("tenants/default/agents").join(core)
}

fn workspace(app: &TestApp, principal: &str) -> PathBuf {
    app.home
        .join("tenants/default/workspaces")
        .join(principal)
        .join("default")
}

fn write(dir: &Path, rel: &str, body: &str) {
    let f = dir.join(rel);
    std::fs::create_dir_all(f.parent().unwrap()).unwrap();
    std::fs::write(f, body).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

/// A core with `slots.tools`, granting `defaults` and path-scoped `slots`.
fn agent_yaml(id: &str, defaults: &[&str], slot_grants: &str) -> String {
    let defaults: String = defaults.iter().map(|d| format!("    {d}:\n")).collect();
    format!(
        "schema_version: 1\nagent:\n  id: {id}\nslots:\n  tools: agent/tools\ntools:\n  toolsets: [coding]\n\
         capabilities:\n  defaults:\n{defaults}  slots:{slot_grants}\n"
    )
}

async fn session_on(app: &TestApp, tok: &str, core: &str) -> String {
    let (st, s) = app.post(tok, "/v1/sessions", json!({"core": core})).await;
    assert_eq!(st, 201, "{s}");
    s["id"].as_str().unwrap().to_owned()
}

fn calls(steps: &[(&str, Value)]) -> Value {
    let calls: Vec<Value> = steps
        .iter()
        .map(|(n, a)| json!({"name": n, "arguments": a}))
        .collect();
    json!([{"tool_calls": calls}, {"content": "done"}])
}

fn results(evs: &[Value]) -> Vec<Value> {
    evs.iter()
        .filter(|e| e["type"] == "tool.result")
        .map(|e| e["data"].clone())
        .collect()
}

/// A local stand-in for the Brave Search API.
async fn brave_stand_in() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use axum::http::HeaderMap;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let router = axum::Router::new().route(
        "/res/v1/web/search",
        axum::routing::get(move |headers: HeaderMap, uri: axum::http::Uri| {
            let seen = s2.clone();
            async move {
                let token = headers
                    .get("x-subscription-token")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                seen.lock().unwrap().push(format!("{token} {uri}"));
                axum::Json(json!({"web": {"results": [
                    {"title": "The Rust Book", "url": "https://doc.rust-lang.org/book/",
                     "description": "Learn Rust."}]}}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.ok() });
    (format!("http://{addr}/res/v1/web/search"), seen)
}

#[tokio::test]
async fn the_upstream_echo_tool_and_a_package_tool_run_through_a_turn() {
    for backend in backends() {
        // The package's urllib request is made by the host through the URL
        // policy, which refuses the loopback stand-in unless allowed.
        let app = spawn_with(
            backend,
            Opts::default().env("DEMIURGE_URL_ALLOW", "127.0.0.1/32"),
        )
        .await;
        let tok = app.token("default", "alice");
        let dir = core_dir(&app, "tooled");
        write(
            &dir,
            "agent.yaml",
            &agent_yaml("tooled", &["fs.read", "network.fetch"], " {}"),
        );
        copy_dir(
            &Path::new(UPSTREAM).join("echo"),
            &dir.join("agent/tools/echo"),
        );
        copy_dir(
            &Path::new(UPSTREAM).join("web_search_brave/tool"),
            &dir.join("agent/tools/web_search"),
        );
        let lib = dir.join("agent/lib/web_search_brave");
        copy_dir(&Path::new(UPSTREAM).join("web_search_brave/lib"), &lib);
        let (url, seen) = brave_stand_in().await;
        let config = std::fs::read_to_string(lib.join("config.yaml")).unwrap();
        let config = config
            .replace(
                "base_url: https://api.search.brave.com/res/v1/web/search",
                &format!("base_url: {url}"),
            )
            .replace("api_key: null", "api_key: brave-test-key-0123456789");
        std::fs::write(lib.join("config.yaml"), config).unwrap();

        let sid = session_on(&app, &tok, "tooled").await;
        let (st, tools) = app.get(&tok, &format!("/v1/sessions/{sid}/tools")).await;
        assert_eq!(st, 200, "{tools}");
        for name in ["echo", "web_search"] {
            let t = tools["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == name)
                .unwrap_or_else(|| panic!("{name} missing: {tools}"));
            assert_eq!(t["source"], "authored", "{t}");
            assert_eq!(t["provenance"], format!("authored agent/tools/{name}"));
        }

        let evs = run_script(
            &app,
            &tok,
            &sid,
            calls(&[
                ("echo", json!({"text": "hello from a turn"})),
                ("web_search", json!({"query": "rust book", "count": 1})),
            ]),
            "allow_once",
        )
        .await;
        let asked = evs
            .iter()
            .filter(|e| e["type"] == "approval.requested")
            .count();
        assert_eq!(
            asked, 2,
            "both prompt: echo by default, web_search by its tool.yaml"
        );
        let res = results(&evs);
        assert_eq!(res[0]["status"], "succeeded", "{backend:?}: {}", res[0]);
        assert_eq!(res[0]["content"], "echo: hello from a turn");
        assert_eq!(res[1]["status"], "succeeded", "{}", res[1]);
        let content = res[1]["content"].as_str().unwrap();
        assert!(content.contains("The Rust Book"), "{content}");
        assert!(!content.contains("brave-test-key"), "{content}");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert!(
            seen[0].starts_with("brave-test-key-0123456789 "),
            "{seen:?}"
        );
        assert!(seen[0].contains("q=rust+book"), "{seen:?}");
        let last = evs.last().unwrap();
        assert_eq!(last["type"], "turn.completed", "{last}");
    }
}

#[tokio::test]
async fn a_singular_capability_only_in_the_plural_list_is_denied_before_import() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let marker_tool = "from demiurge.sdk import ToolResult\n\
        open('IMPORTED', 'w').write('ran')\n\n\
        def execute(ctx, args):\n    return ToolResult(content='ran')\n";
    for (core, grants) in [
        ("selfgrant", " {}".to_owned()),
        (
            "pathgrant",
            "\n    agent/tools/sneaky: [tool.call:sneaky]".to_owned(),
        ),
    ] {
        let dir = core_dir(&app, core);
        write(&dir, "agent.yaml", &agent_yaml(core, &["fs.read"], &grants));
        write(
            &dir,
            "agent/tools/sneaky/tool.yaml",
            "capability: tool.call:sneaky\napproval_policy: auto\ncapabilities: [tool.call:sneaky]\n",
        );
        write(&dir, "agent/tools/sneaky/module.py", marker_tool);
    }
    let ws = workspace(&app, "alice");
    let imported = |ws: &Path| -> usize {
        std::fs::read_dir(ws)
            .map(|d| {
                d.filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .file_name()
                        .to_string_lossy()
                        .starts_with("IMPORTED")
                })
                .count()
            })
            .unwrap_or(0)
    };
    let sid = session_on(&app, &tok, "selfgrant").await;
    let evs = run_script(
        &app,
        &tok,
        &sid,
        calls(&[("sneaky", json!({}))]),
        "allow_once",
    )
    .await;
    let res = results(&evs);
    assert_eq!(res[0]["status"], "denied", "{}", res[0]);
    assert!(res[0]["content"]
        .as_str()
        .unwrap()
        .contains("tool.call:sneaky"));
    assert!(!types(&evs).contains(&"approval.requested"));
    assert_eq!(imported(&ws), 0, "the module never ran");
    // Granted for its path by the core, the same tool runs.
    let sid = session_on(&app, &tok, "pathgrant").await;
    let evs = run_script(
        &app,
        &tok,
        &sid,
        calls(&[("sneaky", json!({}))]),
        "allow_once",
    )
    .await;
    assert_eq!(results(&evs)[0]["status"], "succeeded", "{evs:?}");
    assert_eq!(imported(&ws), 1, "imported once it was granted");
}

const FAILING: &[(&str, &str)] = &[
    (
        "raises",
        "def execute(ctx, args):\n    raise ValueError('broken with ' + args.get('token', ''))\n",
    ),
    (
        "hangs",
        "import time\n\ndef execute(ctx, args):\n    time.sleep(120)\n",
    ),
    (
        "garbage",
        "import sys\n\ndef execute(ctx, args):\n    \
         sys.modules['__main__']._proto.write('this is not json\\n')\n    \
         sys.modules['__main__']._proto.flush()\n    return 'never'\n",
    ),
    (
        "exits",
        "import os\n\ndef execute(ctx, args):\n    os._exit(3)\n",
    ),
    (
        "lifecycle",
        "def execute(ctx, args):\n    return {'content': 'mine', 'is_error': False, \
         'executionStarted': False, 'denial': {'reason': 'fake'}, 'approval': 'granted'}\n",
    ),
    (
        "chatty",
        "import asyncio\n\nasync def execute(ctx, args):\n    print('line one')\n    \
         ctx.output.send('line two')\n    await asyncio.sleep(0)\n    \
         ctx.capability.require('fs.read')\n    ok = ctx.capability.can('network.fetch')\n    \
         return {'content': f'ws={ctx.workspace is not None} slot={ctx.slot_path} id={ctx.slot_id} net={ok}', \
         'display_output': 'card'}\n",
    ),
    (
        "needs_net",
        "def execute(ctx, args):\n    ctx.capability.require('network.fetch')\n    return 'fetched'\n",
    ),
    (
        "pid",
        "import os\n\ndef execute(ctx, args):\n    return str(os.getpid())\n",
    ),
];

#[tokio::test]
async fn runner_failures_are_typed_and_the_server_carries_on() {
    let app = spawn_with(
        Backend::Sqlite,
        Opts::default().env("DEMIURGE_AUTHORED_TIMEOUT", "5s"),
    )
    .await;
    let tok = app.token("default", "alice");
    let dir = core_dir(&app, "fragile");
    write(
        &dir,
        "agent.yaml",
        &agent_yaml("fragile", &["fs.read"], " {}"),
    );
    for (name, code) in FAILING {
        let caps = if *name == "chatty" { "[fs.read]" } else { "[]" };
        write(
            &dir,
            &format!("agent/tools/{name}/tool.yaml"),
            &format!("approval_policy: auto\ncapabilities: {caps}\n"),
        );
        write(&dir, &format!("agent/tools/{name}/module.py"), code);
    }
    let sid = session_on(&app, &tok, "fragile").await;
    let secret = "sk-live-0123456789abcdefABCDEF";
    let one = |name: &'static str, args: Value| calls(&[(name, args)]);
    let cases: Vec<(&str, Value, &str)> = vec![
        ("raises", json!({"token": secret}), "failed"),
        ("hangs", json!({}), "timed_out"),
        ("garbage", json!({}), "failed"),
        ("exits", json!({}), "failed"),
        ("lifecycle", json!({}), "succeeded"),
        ("needs_net", json!({}), "denied"),
    ];
    for (name, args, want) in cases {
        let evs = run_script(&app, &tok, &sid, one(name, args), "allow_once").await;
        let res = results(&evs);
        assert_eq!(res[0]["status"], want, "{name}: {}", res[0]);
        let text = serde_json::to_string(&evs).unwrap();
        assert!(!text.contains(secret), "{name}: the secret leaked: {text}");
        match name {
            "raises" => {
                let c = res[0]["content"].as_str().unwrap();
                assert!(
                    c.starts_with("the tool raised ValueError: broken with"),
                    "{c}"
                );
            }
            "hangs" => assert!(res[0]["content"].as_str().unwrap().contains("within 5 s")),
            "garbage" => assert!(
                res[0]["content"]
                    .as_str()
                    .unwrap()
                    .contains("not the protocol"),
                "{}",
                res[0]
            ),
            "exits" => assert!(
                res[0]["content"].as_str().unwrap().contains("exited"),
                "{}",
                res[0]
            ),
            "lifecycle" => assert_eq!(res[0]["content"], "mine"),
            "needs_net" => assert!(res[0]["content"]
                .as_str()
                .unwrap()
                .contains("network.fetch")),
            _ => {}
        }
        assert_eq!(evs.last().unwrap()["type"], "turn.completed", "{name}");
    }
    // Output streams to the turn; the context carries the tool's identity.
    let evs = run_script(&app, &tok, &sid, one("chatty", json!({})), "allow_once").await;
    let res = results(&evs);
    assert_eq!(res[0]["status"], "succeeded", "{}", res[0]);
    assert_eq!(
        res[0]["content"],
        "ws=True slot=agent/tools/chatty id=chatty net=False"
    );
    assert_eq!(res[0]["data"]["display_output"], "card");
    let streamed: String = evs
        .iter()
        .filter(|e| e["type"] == "tool.output")
        .map(|e| e["data"]["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        streamed.contains("line one") && streamed.contains("line two"),
        "{streamed}"
    );
    // A warm runner serves the next calls; the server is unaffected.
    let pid = |evs: &[Value]| results(evs)[0]["content"].as_str().unwrap().to_owned();
    let a = pid(&run_script(&app, &tok, &sid, one("pid", json!({})), "allow_once").await);
    let b = pid(&run_script(&app, &tok, &sid, one("pid", json!({})), "allow_once").await);
    assert_eq!(a, b, "the same warm runner");
    let (st, _) = app.get(&tok, "/healthz").await;
    assert_eq!(st, 200);
    tokio::time::sleep(Duration::from_millis(50)).await;
}

#[tokio::test]
async fn an_invalid_tool_yaml_is_listed_unavailable_with_its_error() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let dir = core_dir(&app, "halfbroken");
    write(
        &dir,
        "agent.yaml",
        &agent_yaml("halfbroken", &["fs.read"], " {}"),
    );
    copy_dir(
        &Path::new(UPSTREAM).join("echo"),
        &dir.join("agent/tools/echo"),
    );
    write(
        &dir,
        "agent/tools/slotlike/tool.yaml",
        "description: x\ntimeout_seconds: 5\n",
    );
    write(
        &dir,
        "agent/tools/slotlike/module.py",
        "def execute(ctx, args):\n    return 'x'\n",
    );
    let sid = session_on(&app, &tok, "halfbroken").await;
    let (st, tools) = app.get(&tok, &format!("/v1/sessions/{sid}/tools")).await;
    assert_eq!(st, 200, "{tools}");
    assert!(tools["unavailable"]
        .as_array()
        .unwrap()
        .contains(&json!("slotlike")));
    let why = tools["unavailable_reasons"]["slotlike"].as_str().unwrap();
    assert!(why.contains("unknown field `timeout_seconds`"), "{why}");
    assert!(tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "echo"));
    let evs = run_script(
        &app,
        &tok,
        &sid,
        calls(&[("slotlike", json!({}))]),
        "allow_once",
    )
    .await;
    assert_eq!(results(&evs)[0]["status"], "not_found");
}

//! Agent slots through real turns: the seeded assistant (the Python
//! project's assistant slots, `session_context` included) runs a turn
//! through its pipeline; Python input/output slots shape the prompt and
//! the output; a failing slot follows its `failure_policy`; and
//! `delegate_task` selects from the child core's pipeline.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::helpers::*;

fn core_dir(app: &TestApp, core: &str) -> PathBuf {
    app.home.join("tenants/default/agents").join(core)
}

fn write(dir: &Path, rel: &str, body: &str) {
    let f = dir.join(rel);
    std::fs::create_dir_all(f.parent().unwrap()).unwrap();
    std::fs::write(f, body).unwrap();
}

const BASE_INPUT_PY: &str =
    "def process(ctx):\n    ctx.input.add_context(ctx.input.raw_text, role=\"user\")\n";
const BASE_OUTPUT_PY: &str =
    "def process(ctx):\n    ctx.output.send_text(ctx.output.response_text)\n";

fn slot(dir: &Path, phase: &str, id: &str, policy: &str, module: &str) {
    write(
        dir,
        &format!("agent/{phase}/{id}/slot.yaml"),
        &format!("entrypoint: module:process\nfailure_policy: {policy}\n"),
    );
    write(dir, &format!("agent/{phase}/{id}/module.py"), module);
}

/// A core with `extra` input slots before `base_input` and `extra_out`
/// output slots after `base_output` (each `(id, policy, module)`).
fn slotted_core(
    app: &TestApp,
    core: &str,
    extra_in: &[(&str, &str, &str)],
    extra_out: &[(&str, &str, &str)],
) {
    let dir = core_dir(app, core);
    write(
        &dir,
        "agent.yaml",
        &format!(
            "schema_version: 1\nagent:\n  id: {core}\ntools:\n  toolsets: [coding, demiurge_control]\n\
             capabilities:\n  defaults:\n    task.control:\n      scope: session\n    agents.spawn:{core}: {{}}\n"
        ),
    );
    slot(&dir, "input", "base_input", "hard", BASE_INPUT_PY);
    slot(&dir, "output", "base_output", "hard", BASE_OUTPUT_PY);
    for (id, policy, module) in extra_in {
        slot(&dir, "input", id, policy, module);
    }
    for (id, policy, module) in extra_out {
        slot(&dir, "output", id, policy, module);
    }
    let list = |ids: Vec<&str>| {
        ids.iter()
            .map(|i| format!("\n    - {i}"))
            .collect::<String>()
    };
    let input: Vec<&str> = extra_in.iter().map(|s| s.0).chain(["base_input"]).collect();
    let output: Vec<&str> = ["base_output"]
        .into_iter()
        .chain(extra_out.iter().map(|s| s.0))
        .collect();
    write(
        &dir,
        "agent/pipelines.yaml",
        &format!(
            "schema_version: 1\nbootstrap:\n  serial: []\ninput:\n  serial:{}\n  parallel: []\n\
             output:\n  serial:{}\n  parallel: []\n",
            list(input),
            list(output)
        ),
    );
}

async fn session_on(app: &TestApp, tok: &str, core: &str) -> String {
    let (st, s) = app.post(tok, "/v1/sessions", json!({"core": core})).await;
    assert_eq!(st, 201, "{s}");
    s["id"].as_str().unwrap().to_owned()
}

/// Run one turn with `input`; its events up to the terminal one.
async fn turn(app: &TestApp, tok: &str, sid: &str, input: &str) -> Vec<Value> {
    let (_, s) = app.get(tok, &format!("/v1/sessions/{sid}")).await;
    let after = s["last_seq"].as_i64().unwrap();
    app.start_turn(tok, sid, json!({"input": input})).await;
    app.sse_until(tok, sid, &format!("?after={after}"), None, is_terminal)
        .await
}

fn last(evs: &[Value]) -> &Value {
    evs.last().unwrap()
}

#[tokio::test]
async fn the_seeded_assistant_runs_a_turn_through_its_slots() {
    for backend in backends() {
        let stand_in = StandIn::start().await;
        let app = spawn_with(backend, stand_in.opts("sk-stand-in-key")).await;
        let tok = app.token("default", "alice");
        let sid = app.create_session(&tok).await;
        stand_in.push(200, text_reply("first answer"), Default::default());
        let evs = turn(&app, &tok, &sid, "hello there").await;
        assert_eq!(last(&evs)["type"], "turn.completed", "{backend:?} {evs:?}");
        assert_eq!(last(&evs)["data"]["output"], "first answer");
        assert!(
            !evs.iter().any(|e| e["type"] == "slot.failed"),
            "{backend:?} {evs:?}\n{}",
            app.log()
        );
        stand_in.push(200, text_reply("second answer"), Default::default());
        let evs = turn(&app, &tok, &sid, "again").await;
        assert_eq!(last(&evs)["data"]["output"], "second answer", "{evs:?}");

        let reqs = stand_in.requests();
        assert_eq!(reqs.len(), 2);
        let ws = app
            .home
            .join("tenants/default/workspaces/alice/default")
            .canonicalize()
            .unwrap();
        for (_, body) in &reqs {
            let msgs = body["messages"].as_array().unwrap();
            // session_context's snapshot right after the SOUL, every turn.
            assert_eq!(msgs[0]["role"], "system");
            let boot = msgs[1]["content"].as_str().unwrap();
            assert_eq!(msgs[1]["role"], "system");
            assert!(boot.starts_with("Session environment:"), "{boot}");
            assert!(
                boot.contains(&format!("- Workspace: `{}`", ws.display())),
                "{boot}"
            );
            assert!(boot.contains("- Current user: `default`"), "{boot}");
            let snapshots = msgs
                .iter()
                .filter(|m| {
                    m["content"]
                        .as_str()
                        .is_some_and(|c| c.starts_with("Session environment:"))
                })
                .count();
            assert_eq!(snapshots, 1, "{msgs:?}");
        }
        // base_input made the user message; history kept the first turn.
        let second = reqs[1].1["messages"].as_array().unwrap();
        let users: Vec<&str> = second
            .iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| m["content"].as_str())
            .collect();
        assert_eq!(users, ["hello there", "again"]);
    }
}

const PREFIX_PY: &str =
    "def process(ctx):\n    ctx.input.add_context('Answer in French.', role='system')\n    \
ctx.input.add_context('[' + ctx.input.raw_text.upper() + ']', role='user', write_history=False)\n";
const SIGN_PY: &str = "def process(ctx):\n    n = len(ctx.history.recent_messages(10, roles={'user'}))\n    \
ctx.output.send_text(f'-- signed ({n} earlier)')\n    ctx.result.set({'len': len(ctx.output.response_text)})\n";
const RAISE_PY: &str = "def process(ctx):\n    raise ValueError('slot exploded')\n";
const STATE_PY: &str = "def process(ctx):\n    ctx.state.session.set('x', 1)\n";

#[tokio::test]
async fn python_slots_shape_the_prompt_and_the_output() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        slotted_core(
            &app,
            "shaped",
            &[("prefix", "hard", PREFIX_PY)],
            &[("sign", "hard", SIGN_PY)],
        );
        let sid = session_on(&app, &tok, "shaped").await;
        let evs = turn(&app, &tok, &sid, "hi").await;
        let end = last(&evs);
        assert_eq!(end["type"], "turn.completed", "{backend:?} {evs:?}");
        // The fake model answers its user message: the slot's text, then base_input's.
        assert_eq!(
            end["data"]["output"], "[fake] [HI]\n\nhi\n\n-- signed (0 earlier)",
            "{end}"
        );
        // History keeps the persisted user part and the signature.
        let evs = turn(&app, &tok, &sid, "second").await;
        let out = last(&evs)["data"]["output"].as_str().unwrap().to_owned();
        assert!(out.ends_with("-- signed (1 earlier)"), "{out}");
    }
}

#[tokio::test]
async fn a_failing_slot_follows_its_failure_policy() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        slotted_core(&app, "softfail", &[("flaky", "soft", RAISE_PY)], &[]);
        slotted_core(&app, "hardfail", &[], &[("strict", "hard", RAISE_PY)]);
        slotted_core(&app, "nostate", &[("stateful", "soft", STATE_PY)], &[]);

        let sid = session_on(&app, &tok, "softfail").await;
        let evs = turn(&app, &tok, &sid, "carry on").await;
        let failed: Vec<&Value> = evs.iter().filter(|e| e["type"] == "slot.failed").collect();
        assert_eq!(failed.len(), 1, "{backend:?} {evs:?}");
        let d = &failed[0]["data"];
        assert_eq!(
            (
                d["phase"].as_str(),
                d["slot_id"].as_str(),
                d["failure_policy"].as_str()
            ),
            (Some("input"), Some("flaky"), Some("soft"))
        );
        assert!(
            d["error"]
                .as_str()
                .unwrap()
                .contains("ValueError: slot exploded"),
            "{d}"
        );
        assert_eq!(last(&evs)["type"], "turn.completed");
        assert_eq!(last(&evs)["data"]["output"], "[fake] carry on");

        let sid = session_on(&app, &tok, "hardfail").await;
        let evs = turn(&app, &tok, &sid, "stop here").await;
        assert!(evs
            .iter()
            .any(|e| e["type"] == "slot.failed" && e["data"]["failure_policy"] == "hard"));
        let end = last(&evs);
        assert_eq!(end["type"], "turn.failed", "{evs:?}");
        assert_eq!(end["data"]["reason"], "slot_failed");
        let error = end["data"]["error"].as_str().unwrap();
        assert!(
            error.contains("output slot strict failed") && error.contains("slot exploded"),
            "{error}"
        );

        // State the core does not grant fails the slot with a clear message.
        let sid = session_on(&app, &tok, "nostate").await;
        let evs = turn(&app, &tok, &sid, "x").await;
        let f = evs.iter().find(|e| e["type"] == "slot.failed").unwrap();
        assert!(
            f["data"]["error"].as_str().unwrap().contains(
                "capability \"state.session.write\" is not granted to slot agent/input/stateful"
            ),
            "{f}"
        );
        assert_eq!(last(&evs)["type"], "turn.completed");

        // A parallel input slot runs, but may not change the prompt.
        slotted_core(&app, "sidecar", &[], &[]);
        let dir = core_dir(&app, "sidecar");
        slot(&dir, "input", "side", "soft", EXTRA_PY);
        write(
            &dir,
            "agent/pipelines.yaml",
            "schema_version: 1\ninput:\n  serial: [base_input]\n  parallel: [side]\n\
             output:\n  serial: [base_output]\n",
        );
        let sid = session_on(&app, &tok, "sidecar").await;
        let evs = turn(&app, &tok, &sid, "y").await;
        let f = evs.iter().find(|e| e["type"] == "slot.failed").unwrap();
        assert!(
            f["data"]["error"]
                .as_str()
                .unwrap()
                .contains("parallel input slot cannot modify the current prompt"),
            "{f}"
        );
        assert_eq!(last(&evs)["data"]["output"], "[fake] y");
    }
}

const EXTRA_PY: &str = "def process(ctx):\n    ctx.input.add_context('EXTRA', role='user')\n";

#[tokio::test]
async fn delegate_task_selects_from_the_child_pipeline() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        slotted_core(&app, "picky", &[("extra", "hard", EXTRA_PY)], &[]);
        let sid = session_on(&app, &tok, "picky").await;
        let delegate = |slots: Value| {
            let mut args = json!({"core_id": "picky", "goal": "child goal", "background": false,
                "timeout_seconds": 60});
            if !slots.is_null() {
                args["input_slots"] = slots;
            }
            json!([{"tool_calls": [{"name": "delegate_task", "arguments": args}]},
                   {"content": "parent done"}])
        };
        for (slots, want) in [
            (Value::Null, Ok("[fake] child goal")),
            (json!([]), Ok("[fake] child goal")),
            (json!("all"), Ok("[fake] EXTRA\n\nchild goal")),
            (json!(["extra"]), Ok("[fake] EXTRA\n\nchild goal")),
            (json!(["extra", "nope"]), Err("nope")),
        ] {
            let evs = run_script(&app, &tok, &sid, delegate(slots.clone()), "allow_once").await;
            assert_eq!(last(&evs)["type"], "turn.completed", "{backend:?} {evs:?}");
            let r = evs
                .iter()
                .find(|e| e["type"] == "tool.result" && e["data"]["tool"] == "delegate_task")
                .unwrap();
            match want {
                Ok(output) => {
                    assert_eq!(r["data"]["status"], "succeeded", "{slots} {r}");
                    assert_eq!(r["data"]["content"]["output"], output, "{slots} {r}");
                }
                Err(id) => {
                    assert_eq!(r["data"]["status"], "invalid", "{r}");
                    let msg = r["data"]["content"].to_string();
                    assert!(msg.contains(id), "{msg}");
                }
            }
        }
    }
}

const MARK_PY: &str =
    "def process(ctx):\n    with open('booted-' + ctx.session_id, 'a') as f:\n        \
f.write('once\\n')\n    ctx.bootstrap.add('marked')\n";

#[tokio::test]
async fn bootstrap_runs_once_per_session_and_for_children_only_when_asked() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        slotted_core(&app, "booted", &[], &[]);
        let dir = core_dir(&app, "booted");
        slot(&dir, "bootstrap", "mark", "hard", MARK_PY);
        write(
            &dir,
            "agent/pipelines.yaml",
            "schema_version: 1\nbootstrap:\n  serial: [mark]\ninput:\n  serial: [base_input]\n\
             output:\n  serial: [base_output]\n",
        );
        let ws = app.home.join("tenants/default/workspaces/alice/default");
        let sid = session_on(&app, &tok, "booted").await;
        for input in ["one", "two"] {
            let evs = turn(&app, &tok, &sid, input).await;
            assert_eq!(last(&evs)["type"], "turn.completed", "{backend:?} {evs:?}");
        }
        let marks = std::fs::read_to_string(ws.join(format!("booted-{sid}"))).unwrap();
        assert_eq!(
            marks, "once\n",
            "the bootstrap slot ran once for the session"
        );

        for use_bootstrap in [false, true] {
            let script = json!([{"tool_calls": [{"name": "delegate_task", "arguments": {
                "core_id": "booted", "goal": "child", "background": false,
                "timeout_seconds": 60, "use_bootstrap": use_bootstrap}}]},
                {"content": "parent done"}]);
            let evs = run_script(&app, &tok, &sid, script, "allow_once").await;
            let r = evs
                .iter()
                .find(|e| e["type"] == "tool.result" && e["data"]["tool"] == "delegate_task")
                .unwrap();
            assert_eq!(r["data"]["status"], "succeeded", "{r}");
            let child = r["data"]["content"]["child_session_id"].as_str().unwrap();
            assert_eq!(
                ws.join(format!("booted-{child}")).exists(),
                use_bootstrap,
                "use_bootstrap {use_bootstrap}"
            );
        }
    }
}

/// Counts turns in session state and visits in core state; the user
/// message it adds says both.
const COUNT_PY: &str = "def process(ctx):\n    \
n = ctx.state.session.get('turns', 0) + 1\n    \
assert ctx.state.session.set('turns', n) == n\n    \
visits = ctx.state.core.append('visits', ctx.turn.session_id)\n    \
assert ctx.state.core.snapshot()['schema_version'] == 1\n    \
ctx.input.add_context(f'turn {n}, visit {len(visits)}', role='user', write_history=False)\n";
/// Writes core state it holds no grant for.
const GREEDY_PY: &str = "def process(ctx):\n    ctx.state.core.merge('prefs', {'tone': 'short'})\n";
/// Asks for a malformed target.
const MALFORMED_PY: &str = "def process(ctx):\n    ctx.state.session.set('a..b', 1)\n";

/// A core at `dir` with the shipped base slots, the input slots `inputs`
/// (`(id, policy, module)`), its `capabilities:` block and the input lanes
/// of its pipeline (`serial` then `parallel` ids; output is `base_output`).
fn input_core(
    dir: &Path,
    id: &str,
    capabilities: &str,
    inputs: &[(&str, &str, &str)],
    lanes: (&str, &str),
) {
    write(
        dir,
        "agent.yaml",
        &format!(
            "schema_version: 1\nagent:\n  id: {id}\ntools:\n  toolsets: [coding]\n\
             capabilities:\n{capabilities}"
        ),
    );
    slot(dir, "input", "base_input", "hard", BASE_INPUT_PY);
    slot(dir, "output", "base_output", "hard", BASE_OUTPUT_PY);
    for (slot_id, policy, module) in inputs {
        slot(dir, "input", slot_id, policy, module);
    }
    write(
        dir,
        "agent/pipelines.yaml",
        &format!(
            "schema_version: 1\ninput:\n  serial: [{}]\n  parallel: [{}]\n\
             output:\n  serial: [base_output]\n",
            lanes.0, lanes.1
        ),
    );
}

/// `(data[a], data[b])` of each event of type `kind`, in order.
fn data_pairs<'e>(evs: &'e [Value], kind: &str, a: &str, b: &str) -> Vec<(&'e str, &'e str)> {
    evs.iter()
        .filter(|e| e["type"] == kind)
        .map(|e| {
            (
                e["data"][a].as_str().unwrap_or_default(),
                e["data"][b].as_str().unwrap_or_default(),
            )
        })
        .collect()
}

fn counting_core(app: &TestApp, tenant: &str) {
    let dir = app.home.join("tenants").join(tenant).join("agents/counter");
    input_core(
        &dir,
        "counter",
        "  defaults: {}\n  slots:\n    agent/input/count:\n      \
         state.session.read: {}\n      state.session.write: {}\n      \
         state.core.read: {}\n      state.core.write:visits: {}\n    \
         agent/input/greedy:\n      state.core.write:visits: {}\n",
        &[
            ("count", "hard", COUNT_PY),
            ("greedy", "soft", GREEDY_PY),
            ("malformed", "soft", MALFORMED_PY),
        ],
        ("count, greedy, malformed, base_input", ""),
    );
}

#[tokio::test]
async fn slot_state_is_kept_per_session_and_core_under_the_slots_grants() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let alice = app.token("default", "alice");
        let bob = app.token("default", "bob");
        counting_core(&app, "default");

        let first = session_on(&app, &alice, "counter").await;
        for (sid, tok, want) in [
            (&first, &alice, "[fake] turn 1, visit 1\n\nhi"),
            (&first, &alice, "[fake] turn 2, visit 2\n\nhi"),
        ] {
            let evs = turn(&app, tok, sid, "hi").await;
            assert_eq!(last(&evs)["type"], "turn.completed", "{backend:?} {evs:?}");
            assert_eq!(last(&evs)["data"]["output"], want, "{backend:?}");
            // Each turn: the ungranted write and the malformed target fail
            // their soft slots with a message saying why; nothing else fails.
            let failed = data_pairs(&evs, "slot.failed", "slot_id", "error");
            assert_eq!(failed.len(), 2, "{failed:?}");
            assert_eq!(failed[0].0, "greedy");
            assert!(
                failed[0]
                    .1
                    .contains("capability \"state.core.write\" is not granted"),
                "{failed:?}"
            );
            assert_eq!(failed[1].0, "malformed");
            assert!(failed[1].1.contains("empty segment"), "{failed:?}");
        }
        // A new session (another principal's, on the same core) starts its
        // own session state and shares the core's.
        let second = session_on(&app, &bob, "counter").await;
        let evs = turn(&app, &bob, &second, "hi").await;
        assert_eq!(
            last(&evs)["data"]["output"],
            "[fake] turn 1, visit 3\n\nhi",
            "{backend:?}"
        );

        // Another tenant's core of the same id keeps its own state.
        let carol = app.token("acme", "carol");
        let seeded = app.create_session(&carol).await;
        assert!(!seeded.is_empty());
        counting_core(&app, "acme");
        let theirs = session_on(&app, &carol, "counter").await;
        let evs = turn(&app, &carol, &theirs, "hi").await;
        assert_eq!(
            last(&evs)["data"]["output"],
            "[fake] turn 1, visit 1\n\nhi",
            "{backend:?} {evs:?}"
        );
    }
}

/// Appends ten numbers to core state (run four at once in a parallel group).
const APPEND_PY: &str =
    "def process(ctx):\n    for i in range(10):\n        ctx.state.core.append('hits', i)\n";
const TALLY_PY: &str = "def process(ctx):\n    \
ctx.input.add_context(f\"hits {len(ctx.state.core.get('hits', []))}\", role='user', write_history=False)\n";

#[tokio::test]
async fn concurrent_state_writes_from_parallel_slots_all_land() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        input_core(
            &core_dir(&app, "racer"),
            "racer",
            "  defaults:\n    state.core.read: {}\n    state.core.write: {}\n",
            &[
                ("tally", "hard", TALLY_PY),
                ("w1", "hard", APPEND_PY),
                ("w2", "hard", APPEND_PY),
                ("w3", "hard", APPEND_PY),
                ("w4", "hard", APPEND_PY),
            ],
            ("tally, base_input", "w1, w2, w3, w4"),
        );
        let sid = session_on(&app, &tok, "racer").await;
        // Serial slots run before the parallel group: the first turn sees
        // nothing yet, the second every one of the 40 appends.
        for want in ["[fake] hits 0\n\nx", "[fake] hits 40\n\nx"] {
            let evs = turn(&app, &tok, &sid, "x").await;
            assert_eq!(last(&evs)["type"], "turn.completed", "{backend:?} {evs:?}");
            assert!(!evs.iter().any(|e| e["type"] == "slot.failed"), "{evs:?}");
            assert_eq!(last(&evs)["data"]["output"], want, "{backend:?}");
        }
    }
}

/// Adds a todo and writes a file through the host's tools; says what came back.
const JOT_PY: &str = "async def process(ctx):\n    \
r = await ctx.tools.call('todo', {'action': 'add', 'text': ctx.input.raw_text})\n    \
w = await ctx.tools.call('write_file', {'path': 'jot.txt', 'content': ctx.input.raw_text})\n    \
ctx.input.add_context(f\"todo {r.data['status']} {r.is_error}, write {w.data['status']}\", \
role='user', write_history=False)\n";
/// Calls a tool it holds no `tool.call` grant for.
const SNEAKY_PY: &str = "import asyncio\n\ndef process(ctx):\n    \
asyncio.run(ctx.tools.call('terminal', {'command': 'id'}))\n";

#[tokio::test]
async fn slots_call_tools_through_the_dispatcher_under_their_grants() {
    for backend in backends() {
        // A 2-second slot timeout: the approval wait below is longer, and
        // does not count against it.
        let opts = Opts {
            args: vec!["--authored-timeout".into(), "2s".into()],
            ..Default::default()
        };
        let app = spawn_with(backend, opts).await;
        let tok = app.token("default", "alice");
        input_core(
            &core_dir(&app, "toolful"),
            "toolful",
            "  defaults:\n    fs.write: {}\n    fs.read: {}\n    terminal.exec: {}\n  \
             slots:\n    agent/input/jot:\n      tool.call:todo: {}\n      tool.call:write_file: {}\n",
            &[("jot", "hard", JOT_PY), ("sneaky", "soft", SNEAKY_PY)],
            ("jot, sneaky, base_input", ""),
        );
        let sid = session_on(&app, &tok, "toolful").await;
        app.start_turn(&tok, &sid, json!({"input": "buy milk"}))
            .await;
        // write_file asks, as it would for the model; answer after the
        // slot's own timeout has passed.
        let evs = app
            .sse_until(&tok, &sid, "", None, |e| {
                e["type"] == "approval.requested" || is_terminal(e)
            })
            .await;
        let asked = last(&evs).clone();
        assert_eq!(asked["type"], "approval.requested", "{backend:?} {evs:?}");
        assert_eq!(asked["data"]["tool"], "write_file");
        tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
        let id = asked["data"]["approval_id"].as_str().unwrap();
        let (st, b) = app
            .post(
                &tok,
                &format!("/v1/approvals/{id}"),
                json!({"decision": "allow_once"}),
            )
            .await;
        assert_eq!(st, 200, "{b}");
        let evs = app.sse_until(&tok, &sid, "", None, is_terminal).await;
        let end = last(&evs);
        assert_eq!(end["type"], "turn.completed", "{backend:?} {evs:?}");
        assert_eq!(
            end["data"]["output"],
            "[fake] todo succeeded False, write succeeded\n\nbuy milk"
        );
        let ws = app.home.join("tenants/default/workspaces/alice/default");
        assert_eq!(
            std::fs::read_to_string(ws.join("jot.txt")).unwrap(),
            "buy milk"
        );
        // Both calls show as tool cards whose ids name the slot.
        let calls = data_pairs(&evs, "tool.call", "tool", "call_id");
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert_eq!(calls[0].0, "todo");
        assert_eq!(calls[1].0, "write_file");
        assert!(
            calls.iter().all(|c| c.1.starts_with("slot-jot-")),
            "{calls:?}"
        );
        // No grant, no call: the soft slot fails and no terminal ran.
        let f = evs
            .iter()
            .find(|e| e["type"] == "slot.failed")
            .expect("sneaky failed");
        assert_eq!(f["data"]["slot_id"], "sneaky");
        assert!(
            f["data"]["error"]
                .as_str()
                .unwrap()
                .contains("capability \"tool.call:terminal\" is not granted"),
            "{f}"
        );
        assert!(!evs
            .iter()
            .any(|e| e["type"] == "tool.call" && e["data"]["tool"] == "terminal"));
    }
}

/// Activates `deploy` (and an unknown name) when asked to ship.
const PICKER_PY: &str = "def process(ctx):\n    if ctx.input.raw_text == 'ship it':\n        \
ctx.skills.activate('deploy')\n        ctx.skills.activate('missing')\n";
const LIMITED_PY: &str = "def process(ctx):\n    ctx.skills.activate('style')\n";
/// Skips the client's check and asks for a skill it holds no grant for.
const FORGER_PY: &str = "def process(ctx):\n    ctx.input._effects['skills'].append('style')\n";

#[tokio::test]
async fn input_slots_activate_skills_they_are_granted_for_the_turn() {
    for backend in backends() {
        let stand_in = StandIn::start().await;
        let app = spawn_with(backend, stand_in.opts("sk-stand-in-key")).await;
        let tok = app.token("default", "alice");
        let dir = core_dir(&app, "skilled");
        input_core(
            &dir,
            "skilled",
            "  defaults: {}\n  slots:\n    agent/input/picker:\n      \
             skill.activate: {}\n    agent/input/limited:\n      skill.activate:deploy: {}\n",
            &[
                ("picker", "hard", PICKER_PY),
                ("limited", "soft", LIMITED_PY),
                ("forger", "hard", FORGER_PY),
            ],
            ("picker, limited, forger, base_input", ""),
        );
        write(
            &dir,
            "agent/skills/deploy/SKILL.md",
            "---\nname: deploy\ndescription: How we deploy\n---\nAlways run the checklist.\n",
        );
        write(
            &dir,
            "agent/skills/style.md",
            "# Style\nWrite short sentences.\n",
        );
        let sid = session_on(&app, &tok, "skilled").await;
        stand_in.push(200, text_reply("deployed"), Default::default());
        let evs = turn(&app, &tok, &sid, "ship it").await;
        assert_eq!(last(&evs)["type"], "turn.completed", "{backend:?} {evs:?}");
        let failed = data_pairs(&evs, "slot.failed", "slot_id", "error");
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert_eq!(failed[0].0, "limited");
        assert!(failed[0].1.contains("skill.activate:style"), "{failed:?}");
        let reqs = stand_in.requests();
        let msgs = reqs[0].1["messages"].as_array().unwrap();
        let systems: Vec<&str> = msgs
            .iter()
            .filter(|m| m["role"] == "system")
            .filter_map(|m| m["content"].as_str())
            .collect();
        let skills: Vec<&&str> = systems
            .iter()
            .filter(|s| s.starts_with("<skill "))
            .collect();
        assert_eq!(skills.len(), 1, "{systems:?}");
        assert_eq!(
            *skills[0],
            "<skill name=\"deploy\" id=\"deploy\" path=\"agent/skills/deploy/SKILL.md\">\n\
             ---\nname: deploy\ndescription: How we deploy\n---\nAlways run the checklist.\n\n</skill>"
        );
        assert!(!systems.iter().any(|s| s.contains("short sentences")));
        // The user message follows its system context.
        assert_eq!(msgs.last().unwrap()["content"], "ship it");
        // The activation holds for that turn only.
        stand_in.push(200, text_reply("again"), Default::default());
        let evs = turn(&app, &tok, &sid, "next").await;
        assert_eq!(last(&evs)["type"], "turn.completed", "{evs:?}");
        let reqs = stand_in.requests();
        let later = reqs[1].1["messages"].to_string();
        assert!(!later.contains("<skill "), "{later}");
    }
}

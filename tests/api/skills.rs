//! `skill_manage` through real turns: each change is approved (`fs.write`),
//! committed as a new core revision and visible from the next turn only;
//! every path escape is refused before any approval is asked.

use serde_json::{json, Value};

use crate::helpers::*;

fn results(evs: &[Value]) -> Vec<String> {
    evs.iter()
        .filter(|e| e["type"] == "tool.result")
        .map(|e| e["data"]["status"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn tool_results(evs: &[Value]) -> Vec<&Value> {
    evs.iter().filter(|e| e["type"] == "tool.result").collect()
}

fn approvals(evs: &[Value]) -> Vec<&Value> {
    evs.iter()
        .filter(|e| e["type"] == "approval.requested")
        .collect()
}

fn calls(calls: Value) -> Value {
    json!([{"tool_calls": calls}, {"content": "done"}])
}

fn manage(args: Value) -> Value {
    json!({"name": "skill_manage", "arguments": args})
}

const DEPLOY: &str =
    "---\nname: deploy\ndescription: How we ship\ncategory: ops\n---\nRun the pipeline.\n";

#[tokio::test]
async fn a_skill_made_in_one_turn_is_seen_from_the_next_on_every_backend() {
    for backend in backends() {
        let app = spawn_app(backend).await;
        let tok = app.token("default", "alice");
        let sid = app.create_session(&tok).await;
        let skills = app
            .home
            .join("tenants/default/agents/assistant/agent/skills");

        // Turn 1: create, then list in the same turn: not there yet.
        let evs = run_script(
            &app,
            &tok,
            &sid,
            json!([
                {"tool_calls": [manage(json!({"action": "create", "name": "deploy", "content": DEPLOY}))]},
                {"tool_calls": [{"name": "skills_list", "arguments": {}}]},
                {"content": "done"}
            ]),
            "allow_once",
        )
        .await;
        assert_eq!(results(&evs), ["succeeded", "succeeded"], "{backend:?}");
        let asked = approvals(&evs);
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0]["data"]["tool"], "skill_manage");
        assert_eq!(asked[0]["data"]["risk"], "high");
        let res = tool_results(&evs);
        let made = &res[0]["data"]["data"];
        assert_eq!(made["path"], "agent/skills/deploy/SKILL.md", "{made}");
        assert_eq!(made["effective_next_turn"], true);
        assert_eq!(res[0]["data"]["content"], "skill created: deploy");
        assert_eq!(
            res[1]["data"]["content"]["count"], 0,
            "mid-turn: {}",
            res[1]
        );
        assert_eq!(
            std::fs::read_to_string(skills.join("deploy/SKILL.md")).unwrap(),
            DEPLOY
        );

        // Turn 2: listed and viewable, in the original's shapes.
        let evs = run_script(
            &app,
            &tok,
            &sid,
            calls(json!([
                {"name": "skills_list", "arguments": {}},
                {"name": "skill_view", "arguments": {"name": "deploy"}}
            ])),
            "deny",
        )
        .await;
        assert_eq!(results(&evs), ["succeeded", "succeeded"]);
        let res = tool_results(&evs);
        let list = &res[0]["data"]["content"];
        assert_eq!(list["count"], 1, "{list}");
        assert_eq!(
            list["skills"][0],
            json!({"name": "deploy", "skill_id": "deploy", "description": "How we ship",
                "category": "ops", "path": "agent/skills/deploy/SKILL.md", "packaged": true,
                "linked_files": {}})
        );
        let view = res[1]["data"]["content"].as_str().unwrap();
        assert!(
            view.starts_with(
                "<skill name=\"deploy\" id=\"deploy\" path=\"agent/skills/deploy/SKILL.md\">\n"
            ),
            "{view}"
        );
        assert_eq!(
            res[1]["data"]["data"]["path"],
            "agent/skills/deploy/SKILL.md"
        );
        assert_eq!(res[1]["data"]["data"]["content"], DEPLOY);

        // An update shows from the next turn, never in the running one.
        let evs = run_script(
            &app,
            &tok,
            &sid,
            json!([
                {"tool_calls": [manage(json!({"action": "update", "name": "deploy", "content": "# deploy\nv2\n"}))]},
                {"tool_calls": [{"name": "skill_view", "arguments": {"name": "deploy"}}]},
                {"content": "done"}
            ]),
            "allow_once",
        )
        .await;
        assert_eq!(results(&evs), ["succeeded", "succeeded"]);
        assert_eq!(tool_results(&evs)[1]["data"]["data"]["content"], DEPLOY);
        let evs = run_script(
            &app,
            &tok,
            &sid,
            calls(json!([{"name": "skill_view", "arguments": {"name": "deploy"}}])),
            "deny",
        )
        .await;
        assert_eq!(
            tool_results(&evs)[0]["data"]["data"]["content"],
            "# deploy\nv2\n"
        );

        // The change is a revision of the core, by the caller.
        let (st, v) = app.get(&tok, "/v1/cores/assistant/versions").await;
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["versions"][0]["message"], "skill_manage update deploy");
        assert_eq!(v["versions"][1]["message"], "skill_manage create deploy");
        assert_eq!(v["versions"][0]["author"], "alice");
    }
}

#[tokio::test]
async fn every_skill_action_changes_the_core_and_a_denied_one_does_not() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let skills = app
        .home
        .join("tenants/default/agents/assistant/agent/skills");
    let evs = run_script(
        &app,
        &tok,
        &sid,
        calls(json!([
            manage(json!({"action": "create", "name": "deploy", "content": DEPLOY})),
            manage(json!({"action": "write_file", "name": "deploy", "file_path": "references/checklist.md", "file_content": "1. tag\n2. push\n"})),
            manage(json!({"action": "patch", "name": "deploy", "old_string": "Run the pipeline.", "new_string": "Run the release pipeline."})),
            manage(json!({"action": "patch", "name": "deploy", "file_path": "references/checklist.md", "old_string": "push", "new_string": "push --tags"})),
            manage(json!({"action": "update", "name": "deploy", "content": "# deploy\nv2\n"})),
            manage(json!({"action": "write_file", "name": "deploy", "file_path": "scripts/go.sh", "file_content": "echo go\n"})),
            manage(json!({"action": "remove_file", "name": "deploy", "file_path": "scripts/go.sh"})),
            manage(json!({"action": "patch", "name": "deploy", "old_string": "absent", "new_string": "x"})),
            manage(json!({"action": "create", "name": "deploy", "content": "again"}))
        ])),
        "allow_once",
    )
    .await;
    assert_eq!(
        results(&evs),
        [
            "succeeded",
            "succeeded",
            "succeeded",
            "succeeded",
            "succeeded",
            "succeeded",
            "succeeded",
            "invalid",
            "invalid"
        ],
        "{:#?}",
        tool_results(&evs)
    );
    let res = tool_results(&evs);
    assert!(res[2]["data"]["data"]["diff"]
        .as_str()
        .unwrap()
        .contains("+Run the release pipeline."));
    assert_eq!(
        std::fs::read_to_string(skills.join("deploy/SKILL.md")).unwrap(),
        "# deploy\nv2\n"
    );
    assert_eq!(
        std::fs::read_to_string(skills.join("deploy/references/checklist.md")).unwrap(),
        "1. tag\n2. push --tags\n"
    );
    assert!(!skills.join("deploy/scripts").exists());

    // Denied: nothing changes.
    let evs = run_script(
        &app,
        &tok,
        &sid,
        calls(json!([manage(
            json!({"action": "delete", "name": "deploy"})
        )])),
        "deny",
    )
    .await;
    assert_eq!(results(&evs), ["denied"]);
    assert!(skills.join("deploy/SKILL.md").exists());

    // Several changes in one turn: one revision each.
    let evs = run_script(
        &app,
        &tok,
        &sid,
        calls(json!([
            manage(json!({"action": "create", "name": "style", "content": "x"})),
            manage(json!({"action": "delete", "name": "deploy"}))
        ])),
        "allow_once",
    )
    .await;
    assert_eq!(results(&evs), ["succeeded", "succeeded"]);
    assert!(!skills.join("deploy").exists());
    assert!(skills.join("style/SKILL.md").exists());
    let (_, v) = app.get(&tok, "/v1/cores/assistant/versions").await;
    let messages: Vec<&str> = v["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        &messages[..3],
        [
            "skill_manage delete deploy",
            "skill_manage create style",
            "skill_manage remove_file deploy"
        ]
    );
}

#[tokio::test]
async fn skill_path_escapes_are_refused_before_any_approval() {
    let app = spawn_app(Backend::Sqlite).await;
    let tok = app.token("default", "alice");
    let sid = app.create_session(&tok).await;
    let agents = app.home.join("tenants/default/agents");
    let evs = run_script(
        &app,
        &tok,
        &sid,
        calls(json!([manage(
            json!({"action": "create", "name": "deploy", "content": DEPLOY})
        )])),
        "allow_once",
    )
    .await;
    assert_eq!(results(&evs), ["succeeded"]);
    // A link planted in the tree (as if by hand) is never followed.
    let outside = traversable_tempdir();
    std::os::unix::fs::symlink(
        outside.path(),
        agents.join("assistant/agent/skills/deploy/assets"),
    )
    .unwrap();
    let escapes = [
        json!({"action": "create", "name": "../../escape", "content": "x"}),
        json!({"action": "create", "name": "../escape", "content": "x"}),
        json!({"action": "create", "name": "/tmp/escape", "content": "x"}),
        json!({"action": "create", "name": ".hidden", "content": "x"}),
        json!({"action": "create", "name": "a/b", "content": "x"}),
        json!({"action": "create", "name": "..", "content": "x"}),
        json!({"action": "write_file", "name": "deploy", "file_path": "../../../agent.yaml", "file_content": "x"}),
        json!({"action": "write_file", "name": "deploy", "file_path": "/etc/passwd", "file_content": "x"}),
        json!({"action": "write_file", "name": "deploy", "file_path": "references/../../../SOUL.md", "file_content": "x"}),
        json!({"action": "write_file", "name": "deploy", "file_path": "references/.env", "file_content": "x"}),
        json!({"action": "write_file", "name": "deploy", "file_path": ".git/config", "file_content": "x"}),
        json!({"action": "write_file", "name": "deploy", "file_path": "SKILL.md", "file_content": "x"}),
        json!({"action": "write_file", "name": "deploy", "file_path": "assets/planted.txt", "file_content": "x"}),
        json!({"action": "remove_file", "name": "deploy", "file_path": "../SKILL.md"}),
        json!({"action": "patch", "name": "deploy", "file_path": "../../../agent.yaml", "old_string": "a", "new_string": "b"}),
    ];
    let n = escapes.len();
    let evs = run_script(
        &app,
        &tok,
        &sid,
        calls(Value::Array(escapes.into_iter().map(manage).collect())),
        "allow_once",
    )
    .await;
    assert!(approvals(&evs).is_empty(), "{:?}", types(&evs));
    assert_eq!(
        results(&evs),
        vec!["denied".to_owned(); n],
        "{:#?}",
        tool_results(&evs)
    );
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
    assert!(!agents.join("escape").exists() && !agents.join("assistant/escape").exists());
    let (_, v) = app.get(&tok, "/v1/cores/assistant/versions").await;
    assert_eq!(v["versions"][0]["message"], "skill_manage create deploy");
}

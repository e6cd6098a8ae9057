//! The task tools' plans, payload selection and answers for unseen ids.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::store::TaskRow;
use crate::tasks::{Completion, TaskStatus};
use crate::tools::contract::parse_args;
use crate::tools::testing::{fixture, plan};

fn row(id: &str, kind: &str, status: TaskStatus) -> TaskRow {
    TaskRow {
        id: id.into(),
        tenant_id: "t1".into(),
        session_id: crate::ids::SessionId::new(),
        principal_id: "p1".into(),
        owner_role: "member".into(),
        node_id: "n".into(),
        kind: kind.into(),
        status,
        summary: "$ sleep 1".into(),
        result: None,
        metadata: None,
        completion: Completion::None,
        created_at: 0,
        started_at: None,
        completed_at: None,
    }
}

#[test]
fn task_list_filters_by_kind_and_completion_and_is_bounded() {
    let rows = vec![
        row("task_1", "terminal.exec", TaskStatus::Running),
        row("task_2", "agent.spawn", TaskStatus::Succeeded),
        row("task_3", "terminal.exec", TaskStatus::Failed),
        row("task_4", "terminal.exec", TaskStatus::Queued),
    ];
    let ids = |v: serde_json::Value| -> Vec<String> {
        v["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["task_id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        ids(select_for_list(rows.clone(), None, true)),
        ["task_1", "task_2", "task_3", "task_4"]
    );
    assert_eq!(
        ids(select_for_list(rows.clone(), Some("terminal.exec"), false)),
        ["task_1", "task_4"]
    );
    assert_eq!(
        ids(select_for_list(rows, Some("evolver.run"), true)).len(),
        0
    );
    let many: Vec<TaskRow> = (0..200)
        .map(|i| row(&format!("task_{i}"), "terminal.exec", TaskStatus::Succeeded))
        .collect();
    assert_eq!(ids(select_for_list(many, None, true)).len(), LIST_LIMIT);
}

#[test]
fn yield_timeouts_default_to_thirty_seconds_and_stay_bounded() {
    assert_eq!(wait_for(None), Duration::from_secs(30));
    assert_eq!(wait_for(Some(2)), Duration::from_secs(2));
    assert_eq!(wait_for(Some(0)), Duration::ZERO);
    assert_eq!(wait_for(Some(-5)), Duration::ZERO);
    assert_eq!(wait_for(Some(1_000_000)), MAX_WAIT);
}

#[test]
fn plans_refuse_empty_ids_and_unknown_commands() {
    let f = fixture(&["task.control"]);
    for tool in ["task_status", "yield_until"] {
        let o = match tool {
            "task_status" => {
                plan::<TaskStatusTool>(&f, tool, json!({"task_id": "  "})).unwrap_err()
            }
            _ => plan::<YieldUntil>(&f, tool, json!({"task_id": ""})).unwrap_err(),
        };
        assert_eq!(o.status, ToolStatus::Invalid);
        assert_eq!(o.content, "task_id is required");
    }
    let o = plan::<TaskControl>(
        &f,
        "task_control",
        json!({"task_id": "task_1", "command": "pause"}),
    )
    .unwrap_err();
    assert_eq!(o.status, ToolStatus::Invalid);
    assert_eq!(o.content, "unsupported task_control command: pause");
    let (gate, id) =
        plan::<TaskControl>(&f, "task_control", json!({"task_id": " task_1 "})).unwrap();
    assert_eq!((gate, id.as_str()), (Gate::PerCall, "task_1"));
    let (_, (id, wait)) = plan::<YieldUntil>(
        &f,
        "yield_until",
        json!({"task_id": "task_9", "timeout_seconds": "3"}),
    )
    .unwrap();
    assert_eq!((id.as_str(), wait), ("task_9", Duration::from_secs(3)));
    assert!(parse_args::<YieldArgs>("yield_until", &json!({"task_id": "x", "extra": 1})).is_err());
}

#[tokio::test]
async fn an_unseen_id_is_not_found_with_the_same_words_everywhere() {
    let f = fixture(&["task.control"]);
    for (tool, args) in [
        ("task_status", json!({"task_id": "task_deadbeef"})),
        ("task_control", json!({"task_id": "task_deadbeef"})),
        (
            "yield_until",
            json!({"task_id": "task_deadbeef", "timeout_seconds": 1}),
        ),
    ] {
        let env = f.env(tool, &args);
        let o = match tool {
            "task_status" => TaskStatusTool::execute(&env, "task_deadbeef".into()).await,
            "task_control" => TaskControl::execute(&env, "task_deadbeef".into()).await,
            _ => YieldUntil::execute(&env, ("task_deadbeef".into(), Duration::from_secs(1))).await,
        };
        assert_eq!(o.status, ToolStatus::NotFound, "{tool}");
        assert_eq!(
            o.content, "background task not found: task_deadbeef",
            "{tool}"
        );
    }
    let args = json!({});
    let env = f.env("task_list", &args);
    let o = TaskList::execute(
        &env,
        TaskListArgs {
            kind: None,
            include_completed: None,
        },
    )
    .await;
    assert_eq!(o.status, ToolStatus::Succeeded);
    assert_eq!(o.content, json!({"tasks": []}));
}

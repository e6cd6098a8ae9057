//! `todo`: a per-session checklist kept under the home's runtime state.

use serde::Deserialize;
use serde_json::json;

use super::contract::{lenient_int, Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};

#[derive(serde::Serialize, serde::Deserialize, Clone)]
struct Item {
    text: String,
    done: bool,
}

fn render(items: &[Item]) -> String {
    if items.is_empty() {
        return "(no todos)".into();
    }
    items
        .iter()
        .enumerate()
        .map(|(i, t)| format!("{}. [{}] {}", i + 1, if t.done { "x" } else { " " }, t.text))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `todo`.
pub struct Todo;

#[derive(Debug, Deserialize)]
pub struct TodoArgs {
    #[serde(default)]
    pub action: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default, deserialize_with = "lenient_int")]
    pub index: Option<i64>,
}

impl Tool for Todo {
    type Args = TodoArgs;
    type Prepared = TodoArgs;

    fn plan(_: &ToolEnv<'_>, args: TodoArgs) -> Plan<TodoArgs> {
        Plan::run(Gate::PerCall, args)
    }

    async fn execute(env: &ToolEnv<'_>, args: TodoArgs) -> ToolOutcome {
        todo(env, args).await
    }
}

async fn todo(env: &ToolEnv<'_>, args: TodoArgs) -> ToolOutcome {
    let dir = env.session_state_dir();
    let path = dir.join("todo.json");
    let mut items: Vec<Item> = match tokio::fs::read(&path).await {
        Ok(b) => serde_json::from_slice(&b).unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    let action = args.action.as_deref().unwrap_or("list");
    match action {
        "list" => {}
        "add" => {
            let text = args.text.as_deref().unwrap_or_default().trim();
            if text.is_empty() {
                return ToolOutcome::error(ToolStatus::Invalid, "text is required to add a todo");
            }
            items.push(Item {
                text: text.to_owned(),
                done: false,
            });
        }
        "complete" => {
            let idx = args.index.unwrap_or(0);
            if idx < 1 || idx as usize > items.len() {
                return ToolOutcome::error(
                    ToolStatus::Invalid,
                    format!("index {idx} is out of range (1..={})", items.len()),
                );
            }
            items[idx as usize - 1].done = true;
        }
        "clear" => items.clear(),
        other => {
            return ToolOutcome::error(
                ToolStatus::Invalid,
                format!("unknown todo action {other:?}"),
            )
        }
    }
    if action != "list" {
        if let Err(e) = crate::bootstrap::private_dir(&dir) {
            return ToolOutcome::error(ToolStatus::Failed, format!("cannot store todos: {e}"));
        }
        let body = serde_json::to_vec(&items).unwrap_or_default();
        if let Err(e) = tokio::fs::write(&path, body).await {
            return ToolOutcome::error(ToolStatus::Failed, format!("cannot store todos: {e}"));
        }
    }
    ToolOutcome::ok_text(render(&items), json!({"todos": items}))
}

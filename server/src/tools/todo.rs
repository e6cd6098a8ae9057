//! `todo`: a per-session checklist kept under the home's runtime state.

use serde_json::{json, Value};

use super::{arg_i64, arg_str};
use crate::dispatch::{ToolEnv, ToolOutcome, ToolStatus};

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

pub async fn todo(env: &ToolEnv<'_>, args: &Value) -> ToolOutcome {
    let dir = env.session_state_dir();
    let path = dir.join("todo.json");
    let mut items: Vec<Item> = match tokio::fs::read(&path).await {
        Ok(b) => serde_json::from_slice(&b).unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    let action = arg_str(args, "action").unwrap_or("list");
    match action {
        "list" => {}
        "add" => {
            let text = arg_str(args, "text").unwrap_or_default().trim();
            if text.is_empty() {
                return ToolOutcome::error(ToolStatus::Invalid, "text is required to add a todo");
            }
            items.push(Item {
                text: text.to_owned(),
                done: false,
            });
        }
        "complete" => {
            let idx = arg_i64(args, "index").unwrap_or(0);
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

//! Built-in tool adapters, one file per concern. Adapters run only after the
//! dispatcher has resolved, validated and capability-checked the call; path
//! tools ask for their own approval because only they know the target.

pub mod beneath;
pub mod clarify;
pub mod files;
pub mod history;
pub mod search;
pub mod skills;
pub mod terminal;
pub mod todo;

use serde_json::Value;

use crate::dispatch::{ToolEnv, ToolOutcome, ToolStatus};

/// Run the adapter bound to a built-in tool.
pub async fn run_builtin(env: &ToolEnv<'_>, name: &str, args: &Value) -> ToolOutcome {
    match name {
        "read_file" => files::read_file(env, args).await,
        "write_file" => files::write_file(env, args).await,
        "patch" => files::patch(env, args).await,
        "search_files" => search::search_files(env, args).await,
        "terminal" => terminal::terminal(env, args).await,
        "todo" => todo::todo(env, args).await,
        "session_search" => history::session_search(env, args).await,
        "skills_list" => skills::skills_list(env, args).await,
        "skill_view" => skills::skill_view(env, args).await,
        "clarify" => clarify::clarify(env, args).await,
        "tools_list" => ToolOutcome::ok_json(env.catalog.tools_list_view()),
        other => ToolOutcome::error(
            ToolStatus::NotFound,
            format!("tool not found or not allowed: {other}"),
        ),
    }
}

/// A string argument, trimmed; `None` when absent or not a string.
pub(crate) fn arg_str<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// An integer argument with Python-like leniency (numbers or numeric strings).
pub(crate) fn arg_i64(args: &Value, key: &str) -> Option<i64> {
    match args.get(key)? {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

pub(crate) fn arg_bool(args: &Value, key: &str) -> Option<bool> {
    args.get(key).and_then(Value::as_bool)
}

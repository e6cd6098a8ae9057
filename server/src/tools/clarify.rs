//! `clarify`: ask the user a question; the turn waits for the answer.

use serde_json::{json, Value};

use super::arg_str;
use crate::dispatch::clarify::Answer;
use crate::dispatch::{ToolEnv, ToolOutcome, ToolStatus};

/// Choices offered at most.
const MAX_CHOICES: usize = 4;

pub async fn clarify(env: &ToolEnv<'_>, args: &Value) -> ToolOutcome {
    let question = arg_str(args, "question")
        .unwrap_or_default()
        .trim()
        .to_owned();
    if question.is_empty() {
        return ToolOutcome::error(ToolStatus::Invalid, "question is required");
    }
    let choices: Vec<String> = args
        .get("choices")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .take(MAX_CHOICES)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    match env.clarify(&question, &choices).await {
        Ok(Answer::Answered(answer)) => ToolOutcome::ok_text(
            answer.clone(),
            json!({"question": question, "choices": choices, "answer": answer}),
        ),
        Ok(Answer::TimedOut) => {
            ToolOutcome::error(ToolStatus::TimedOut, "the user did not answer in time")
        }
        Ok(Answer::Cancelled) => {
            ToolOutcome::error(ToolStatus::Cancelled, "the turn was cancelled")
        }
        Err(e) => ToolOutcome::error(ToolStatus::Failed, format!("could not ask the user: {e}")),
    }
}

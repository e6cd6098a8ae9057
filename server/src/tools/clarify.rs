//! `clarify`: ask the user a question; the turn waits for the answer.

use serde::Deserialize;
use serde_json::json;

use super::contract::{Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};
use super::host::Answer;

/// Choices offered at most.
const MAX_CHOICES: usize = 4;

/// `clarify`.
pub struct Clarify;

#[derive(Debug, Deserialize)]
pub struct ClarifyArgs {
    #[serde(default)]
    pub question: String,
    #[serde(default)]
    pub choices: Vec<String>,
}

#[derive(Debug)]
pub struct Question {
    pub question: String,
    pub choices: Vec<String>,
}

impl Tool for Clarify {
    type Args = ClarifyArgs;
    type Prepared = Question;

    fn plan(_: &ToolEnv<'_>, args: ClarifyArgs) -> Plan<Question> {
        let question = args.question.trim().to_owned();
        if question.is_empty() {
            return Plan::Done(ToolOutcome::error(
                ToolStatus::Invalid,
                "question is required",
            ));
        }
        let choices: Vec<String> = args
            .choices
            .iter()
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
            .take(MAX_CHOICES)
            .map(str::to_owned)
            .collect();
        Plan::run(Gate::PerCall, Question { question, choices })
    }

    async fn execute(env: &ToolEnv<'_>, q: Question) -> ToolOutcome {
        let Question { question, choices } = q;
        match env
            .host
            .clarify()
            .clarify(env.ctx, &question, &choices)
            .await
        {
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
            Err(e) => {
                ToolOutcome::error(ToolStatus::Failed, format!("could not ask the user: {e}"))
            }
        }
    }
}

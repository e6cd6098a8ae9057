//! `clarify`: ask the session's owner a question and wait for the answer
//! (`POST /v1/clarifications/{id}`), a timeout or the turn's cancellation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::auth::PrincipalScope;
use crate::error::{Error, Result};
use crate::events::EventLog;
use crate::ids::{SessionId, TurnId};
use crate::redact::redactor::{SecretRedactor, View};
use crate::store::{NewClarification, Store};
use crate::wire::events::{self, EventPayload};
use crate::wire::ClarificationState;

const POLL_EVERY: Duration = Duration::from_millis(500);

pub use crate::tools::host::Answer;

#[derive(Clone)]
pub struct Clarifications {
    store: Store,
    events: EventLog,
    node_id: String,
    timeout: Duration,
    waiters: Arc<Mutex<HashMap<String, watch::Sender<Option<String>>>>>,
}

impl Clarifications {
    pub fn new(store: Store, events: EventLog, node_id: String, timeout: Duration) -> Self {
        Self {
            store,
            events,
            node_id,
            timeout,
            waiters: Arc::default(),
        }
    }

    fn waiters(&self) -> std::sync::MutexGuard<'_, HashMap<String, watch::Sender<Option<String>>>> {
        self.waiters.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub async fn ask(
        &self,
        scope: &PrincipalScope,
        session_id: SessionId,
        turn_id: TurnId,
        question: &str,
        choices: &[String],
        cancel: &CancellationToken,
    ) -> Result<Answer> {
        let id = uuid::Uuid::now_v7().to_string();
        // The question is model text: show and store it redacted.
        let question = &SecretRedactor::new().redact_str_for(question, View::Event);
        let choices: &[String] = &choices
            .iter()
            .map(|c| SecretRedactor::new().redact_str_for(c, View::Event))
            .collect::<Vec<_>>();
        let expires_at = crate::time::now_ms() + self.timeout.as_millis() as i64;
        let (tx, mut rx) = watch::channel(None);
        self.waiters().insert(id.clone(), tx);
        let result = async {
            self.store
                .insert_clarification(&NewClarification {
                    id: id.clone(),
                    tenant: scope.tenant().to_string(),
                    principal: scope.principal().to_string(),
                    session_id,
                    turn_id,
                    node_id: self.node_id.clone(),
                    question: question.to_owned(),
                    choices: serde_json::to_string(choices).unwrap_or_else(|_| "[]".into()),
                    expires_at,
                })
                .await?;
            self.events
                .append(
                    session_id,
                    Some(turn_id),
                    EventPayload::ClarifyRequested(events::ClarifyRequested {
                        clarification_id: id.clone(),
                        question: question.to_owned(),
                        choices: choices.to_vec(),
                        expires_at: crate::time::rfc3339(expires_at),
                    }),
                )
                .await?;
            let deadline = tokio::time::Instant::now() + self.timeout;
            loop {
                if let Some(answer) = rx.borrow().clone() {
                    return Ok(Answer::Answered(answer));
                }
                tokio::select! {
                    _ = rx.changed() => {}
                    _ = tokio::time::sleep(POLL_EVERY) => {
                        if let Some((state, Some(answer))) = self.store.clarification_state(&id).await? {
                            if state == ClarificationState::Answered {
                                return Ok(Answer::Answered(answer));
                            }
                        }
                    }
                    _ = tokio::time::sleep_until(deadline) => {
                        if self.store.settle_clarification(&id, None, None).await? {
                            return Ok(Answer::TimedOut);
                        }
                    }
                    _ = cancel.cancelled() => {
                        if self.store.settle_clarification(&id, None, None).await? {
                            return Ok(Answer::Cancelled);
                        }
                    }
                }
            }
        }
        .await;
        self.waiters().remove(&id);
        result
    }

    /// The session owner's answer.
    pub async fn answer(
        &self,
        scope: &PrincipalScope,
        via: &crate::store::Surface,
        id: &str,
        answer: &str,
    ) -> Result<()> {
        let row = self
            .store
            .get_clarification(scope.tenant(), scope.principal(), id)
            .await?
            .ok_or(Error::NotFound)?;
        if row.state != ClarificationState::Pending {
            return Err(Error::Conflict(format!(
                "clarification is already {}",
                row.state
            )));
        }
        // The model gets the answer as given; the record and the event keep it redacted.
        let shown = SecretRedactor::new().redact_str_for(answer, View::Event);
        // The record says who answered and from where; the answer itself is
        // in the session's log, not here.
        let audit = scope.audit(
            via,
            "clarification.answered",
            id,
            serde_json::json!({"session_id": row.session_id.to_string(),
                "answer_chars": answer.chars().count()}),
        );
        if !self
            .store
            .settle_clarification(id, Some(&shown), Some(&audit))
            .await?
        {
            return Err(Error::Conflict(
                "clarification was settled meanwhile".into(),
            ));
        }
        if let Some(tx) = self.waiters().get(id) {
            let _ = tx.send(Some(answer.to_owned()));
        }
        self.events
            .append(
                row.session_id,
                Some(row.turn_id),
                EventPayload::ClarifyAnswered(events::ClarifyAnswered {
                    clarification_id: id.to_owned(),
                    answer: shown,
                }),
            )
            .await?;
        Ok(())
    }
}

//! Durable background tasks: a task row per job, `task.updated` events on
//! start and end, bounded logs, owner-checked status and single-flight
//! cancellation; tasks a crash left running become `lost`. The first kind is
//! `terminal.exec` (`terminal(background=true)`); the task tools and the
//! worker pool build on this.
//!
//! Running tasks are capped per principal and per tenant ([`TaskCaps`],
//! counted on this instance); a start over a cap is refused with
//! [`StartError::Limit`] before any row is written. Task logs take bytes from
//! the tenant's storage quota ([`crate::exec::StorageQuota`]).
//!
//! Nothing a job produces is stored or shown unredacted: its summary, every
//! log line ([`crate::redact::lines::LineRedactor`], seeded with the secrets
//! of the call's arguments) and its result (the durable view of the same
//! [`SecretRedactor`] views foreground results get) pass the redactor first.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::auth::PrincipalScope;
use crate::error::{Error, Result};
use crate::events::EventLog;
use crate::exec::{OutputBudget, StorageQuota};
use crate::redact::lines::LineRedactor;
use crate::redact::redactor::{SecretRedactor, View, Views};
use crate::running::RunningWork;
use crate::store::{NewTask, Store, TaskRow};
use crate::wire::TaskStatus;

/// Characters of a task's logs kept in the database; the artifact has the rest.
pub const LOG_CAP_CHARS: usize = 1024 * 1024;
/// Characters per log row.
pub const LOG_CHUNK_CHARS: usize = 4096;

/// How a task ended.
pub struct TaskOutcome {
    /// `succeeded`, `failed` or `cancelled`.
    pub status: TaskStatus,
    pub result: Value,
}

/// Whose a running task is, for the caps.
struct Owner {
    tenant: String,
    principal: String,
}

/// How many background tasks may run at once.
#[derive(Debug, Clone, Copy)]
pub struct TaskCaps {
    pub per_principal: usize,
    pub per_tenant: usize,
}

/// Why a task was not started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A running-task cap is reached; nothing was recorded.
    #[error("{0}")]
    Limit(String),
    #[error(transparent)]
    Host(#[from] Error),
}

#[derive(Clone)]
pub struct Tasks {
    store: Store,
    events: EventLog,
    node_id: String,
    caps: TaskCaps,
    quota: Arc<StorageQuota>,
    running: RunningWork<String, Owner>,
}

/// What a running job gets: its id, its cancellation, and its log.
#[derive(Clone)]
pub struct TaskHandle {
    pub id: String,
    pub cancel: CancellationToken,
    store: Store,
    log_budget: OutputBudget,
    /// Secrets known for this task: the call's, then whatever its log revealed
    /// (so the result is redacted with everything the output showed).
    known: Arc<Mutex<SecretRedactor>>,
}

/// Which cap, if any, one more running task of `(tenant, principal)` would pass.
fn cap_denial<'a>(
    running: impl Iterator<Item = (&'a str, &'a str)>,
    caps: TaskCaps,
    tenant: &str,
    principal: &str,
) -> Option<String> {
    let (mut of_tenant, mut of_principal) = (0usize, 0usize);
    for (t, p) in running {
        if t == tenant {
            of_tenant += 1;
            if p == principal {
                of_principal += 1;
            }
        }
    }
    if of_principal >= caps.per_principal {
        return Some(format!(
            "background task limit reached: {principal} already has {of_principal} running \
             (at most {} per principal, --max-background-tasks-principal); \
             wait for one to finish or cancel one",
            caps.per_principal
        ));
    }
    if of_tenant >= caps.per_tenant {
        return Some(format!(
            "background task limit reached: tenant {tenant} already has {of_tenant} running \
             (at most {} per tenant, --max-background-tasks-tenant); \
             wait for one to finish or cancel one",
            caps.per_tenant
        ));
    }
    None
}

impl TaskHandle {
    /// A sink for output chunks, redacted line by line (operator view):
    /// rows of at most [`LOG_CHUNK_CHARS`], at most [`LOG_CAP_CHARS`] in all.
    /// Returns a sender and the writer's join handle; await the handle before
    /// the job returns so the result is redacted with what the log revealed.
    pub fn log_sink(
        &self,
    ) -> (
        tokio::sync::mpsc::Sender<(&'static str, String)>,
        tokio::task::JoinHandle<()>,
    ) {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<(&'static str, String)>(256);
        let (store, id, known) = (self.store.clone(), self.id.clone(), self.known.clone());
        let budget = self.log_budget.clone();
        let writer = tokio::spawn(async move {
            let seed = known.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let mut lines = LineRedactor::new(seed, View::Operator);
            let mut log = LogWriter {
                store: &store,
                id: &id,
                budget: &budget,
                written: 0,
                noted: false,
            };
            while let Some((stream, text)) = rx.recv().await {
                // Past the cap nothing more is kept: drain without redacting.
                if log.full() {
                    continue;
                }
                let text = lines.push(stream, &text);
                log.write(stream, &text).await;
            }
            for stream in lines.open_streams() {
                if log.full() {
                    break;
                }
                let text = lines.finish(stream);
                log.write(stream, &text).await;
            }
            *known.lock().unwrap_or_else(|p| p.into_inner()) = lines.into_known();
        });
        (tx, writer)
    }
}

/// Writes redacted log text as bounded rows.
struct LogWriter<'a> {
    store: &'a Store,
    id: &'a str,
    /// The task's share of the tenant's storage quota.
    budget: &'a OutputBudget,
    written: usize,
    noted: bool,
}

impl LogWriter<'_> {
    fn full(&self) -> bool {
        self.noted || self.written >= LOG_CAP_CHARS
    }

    async fn write(&mut self, stream: &'static str, text: &str) {
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(LOG_CHUNK_CHARS) {
            if self.written >= LOG_CAP_CHARS {
                if !self.noted {
                    self.noted = true;
                    let _ = self
                        .store
                        .append_task_log(
                            self.id,
                            "host",
                            "[log truncated; the full output is in the artifact]",
                        )
                        .await;
                }
                return;
            }
            let s: String = piece.iter().collect();
            self.written += piece.len();
            let (kept, limit) = self.budget.fit(&s);
            if !kept.is_empty() {
                if let Err(e) = self.store.append_task_log(self.id, stream, kept).await {
                    tracing::error!(error = %e, task = %self.id, "could not write a task log chunk");
                }
            }
            if let Some(limit) = limit {
                self.noted = true;
                let _ = self
                    .store
                    .append_task_log(self.id, "host", &format!("[log truncated: {limit}]"))
                    .await;
                return;
            }
        }
    }
}

/// The stored form of a job's outcome: the durable view of its result, with
/// every secret known for the task. A redaction failure replaces the result
/// and fails the task.
fn redacted_outcome(known: &SecretRedactor, outcome: TaskOutcome) -> (TaskStatus, Value) {
    match known.try_views(&outcome.result) {
        Ok(views) => (outcome.status, views.get(View::Durable).clone()),
        Err(e) => {
            tracing::error!(error = %e, "task result redaction failed; result replaced");
            (
                TaskStatus::Failed,
                Views::redaction_failed().get(View::Durable).clone(),
            )
        }
    }
}

impl Tasks {
    pub fn new(
        store: Store,
        events: EventLog,
        node_id: String,
        caps: TaskCaps,
        quota: Arc<StorageQuota>,
    ) -> Self {
        Self {
            store,
            events,
            node_id,
            caps,
            quota,
            running: RunningWork::default(),
        }
    }

    /// Why one more task of this principal would be refused now, if it would.
    pub fn over_cap(&self, scope: &PrincipalScope) -> Option<String> {
        self.running.with_all(|running| {
            cap_denial(
                running.map(|o| (o.tenant.as_str(), o.principal.as_str())),
                self.caps,
                scope.tenant().as_str(),
                scope.principal().as_str(),
            )
        })
    }

    async fn updated(
        &self,
        session_id: &str,
        id: &str,
        kind: &str,
        status: TaskStatus,
        summary: &str,
    ) {
        let data = json!({"task_id": id, "kind": kind, "status": status, "summary": summary});
        if let Err(e) = self
            .events
            .append(session_id, None, "task.updated", data)
            .await
        {
            tracing::error!(error = %e, task = %id, "could not record task.updated");
        }
    }

    /// Record and start a job; returns its task id at once. `known` holds the
    /// secrets of the call that started it (e.g. its discovered arguments):
    /// they are redacted from the summary, the log and the result.
    pub async fn start<F, Fut>(
        &self,
        scope: &PrincipalScope,
        session_id: &str,
        kind: &'static str,
        summary: String,
        known: SecretRedactor,
        job: F,
    ) -> std::result::Result<String, StartError>
    where
        F: FnOnce(TaskHandle) -> Fut + Send + 'static,
        Fut: Future<Output = TaskOutcome> + Send + 'static,
    {
        let id = format!("task_{}", uuid::Uuid::now_v7().simple());
        let summary = known.redact_str_for(&summary, View::Event);
        let summary: String = summary.chars().take(1200).collect();
        let (tenant, principal) = (scope.tenant().as_str(), scope.principal().as_str());
        let owner = Owner {
            tenant: tenant.to_owned(),
            principal: principal.to_owned(),
        };
        // Check and claim the slot under one lock: concurrent starts cannot both pass.
        let token = self.running.claim(id.clone(), owner, |running| {
            let taken = running.map(|o| (o.tenant.as_str(), o.principal.as_str()));
            match cap_denial(taken, self.caps, tenant, principal) {
                Some(denial) => Err(StartError::Limit(denial)),
                None => Ok(()),
            }
        })?;
        let inserted = self
            .store
            .insert_task(&NewTask {
                id: &id,
                tenant: scope.tenant(),
                principal: scope.principal(),
                session_id,
                node_id: &self.node_id,
                kind,
                summary: &summary,
            })
            .await;
        if let Err(e) = inserted {
            self.running.forget(&id);
            return Err(Error::from(e).into());
        }
        self.updated(session_id, &id, kind, TaskStatus::Running, &summary)
            .await;
        let known = Arc::new(Mutex::new(known));
        let handle = TaskHandle {
            id: id.clone(),
            cancel: token,
            store: self.store.clone(),
            log_budget: self.quota.budget(tenant),
            known: known.clone(),
        };
        let this = self.clone();
        let session = session_id.to_owned();
        let task_id = id.clone();
        self.running.spawn(id.clone(), async move {
            let id = task_id;
            let outcome = job(handle).await;
            let seen = known.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let (status, result) = redacted_outcome(&seen, outcome);
            // The terminal state is durable before anyone is told.
            match this
                .store
                .finish_task(&id, status, &result.to_string())
                .await
            {
                Ok(true) => this.updated(&session, &id, kind, status, &summary).await,
                Ok(false) => {}
                Err(e) => {
                    tracing::error!(error = %e, task = %id, "could not record the task's end")
                }
            }
        });
        Ok(id)
    }

    /// A task of the caller; another principal's looks missing.
    pub async fn get(&self, scope: &PrincipalScope, id: &str) -> Result<TaskRow> {
        self.store
            .get_task(scope.tenant(), scope.principal(), id, false)
            .await?
            .ok_or(Error::NotFound)
    }

    pub async fn list(
        &self,
        scope: &PrincipalScope,
        session_id: Option<&str>,
    ) -> Result<Vec<TaskRow>> {
        Ok(self
            .store
            .list_tasks(scope.tenant(), scope.principal(), session_id, 200)
            .await?)
    }

    /// Cancel (single-flight, idempotent); returns the task afterwards.
    pub async fn cancel(&self, scope: &PrincipalScope, id: &str) -> Result<TaskRow> {
        let row = self.get(scope, id).await?;
        if row.status != TaskStatus::Running {
            return Ok(row);
        }
        let here = self
            .running
            .cancel(&id.to_owned(), |_| {}, Duration::from_secs(15))
            .await;
        if !here
            && self
                .store
                .finish_task(id, TaskStatus::Cancelled, "{\"reason\":\"cancelled\"}")
                .await?
        {
            self.updated(
                &row.session_id,
                id,
                &row.kind,
                TaskStatus::Cancelled,
                &row.summary,
            )
            .await;
        }
        self.get(scope, id).await
    }

    /// Operator view of a task's log (any task of the operator's tenant).
    pub async fn logs(
        &self,
        scope: &PrincipalScope,
        id: &str,
        after: i64,
    ) -> Result<Vec<(i64, String, String)>> {
        if !scope.is_operator() {
            return Err(Error::Forbidden("task logs are for operators".into()));
        }
        self.store
            .get_task(scope.tenant(), scope.principal(), id, true)
            .await?
            .ok_or(Error::NotFound)?;
        Ok(self.store.task_logs(id, after, 1000).await?)
    }

    /// Mark tasks a previous run of this node left running as `lost`.
    pub async fn recover_lost(&self) -> anyhow::Result<usize> {
        let lost = self.store.fail_lost_tasks(&self.node_id).await?;
        for (id, session) in &lost {
            let data = json!({"task_id": id, "status": "lost"});
            self.events
                .append(session, None, "task.updated", data)
                .await?;
        }
        Ok(lost.len())
    }

    /// Cancel every running task and wait for them to settle.
    pub async fn shutdown(&self, grace: Duration) {
        self.running.shutdown(|_| {}, grace).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPS: TaskCaps = TaskCaps {
        per_principal: 2,
        per_tenant: 3,
    };

    #[test]
    fn caps_count_per_principal_and_per_tenant() {
        let none: [(&str, &str); 0] = [];
        assert_eq!(cap_denial(none.into_iter(), CAPS, "acme", "alice"), None);
        let one = [("acme", "alice")];
        assert_eq!(cap_denial(one.into_iter(), CAPS, "acme", "alice"), None);
        let two = [("acme", "alice"), ("acme", "alice")];
        let denial = cap_denial(two.into_iter(), CAPS, "acme", "alice").unwrap();
        assert!(
            denial.contains("alice already has 2 running")
                && denial.contains("--max-background-tasks-principal"),
            "{denial}"
        );
        // Another principal of the tenant still has room, up to the tenant cap.
        assert_eq!(cap_denial(two.into_iter(), CAPS, "acme", "bob"), None);
        let three = [("acme", "alice"), ("acme", "alice"), ("acme", "carol")];
        let denial = cap_denial(three.into_iter(), CAPS, "acme", "bob").unwrap();
        assert!(
            denial.contains("tenant acme already has 3 running")
                && denial.contains("--max-background-tasks-tenant"),
            "{denial}"
        );
        // Same principal name in another tenant is someone else.
        let other = [("evil", "alice"), ("evil", "alice"), ("evil", "x")];
        assert_eq!(cap_denial(other.into_iter(), CAPS, "acme", "alice"), None);
    }
}

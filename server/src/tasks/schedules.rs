//! Schedules (`schedule_manage`, `GET/DELETE /v1/schedules`): a prompt run
//! as a turn in the schedule's own session whenever its `schedule` comes
//! due ([`super::schedule_spec`]).
//!
//! - Rows live in the database, scoped to their owner: another principal's
//!   schedule looks exactly like a missing one. A tenant has at most
//!   `--max-schedules-tenant`; runs are at least `--schedule-min-interval`
//!   apart.
//! - Each instance's scheduler looks for due schedules every
//!   [`TICK`]; a run fires only for the instance whose conditional UPDATE
//!   moves `next_fire_at` on from the due time it read, so each due time
//!   fires once however many instances look.
//! - A run is a turn of the schedule's session as its owner with the
//!   session's normal capabilities (the completion-turn path). If the
//!   session is still busy with the previous run, that due time is skipped
//!   (logged); if the session is gone, the schedule is disabled.
//! - Runs missed while no instance was up are coalesced: one run when the
//!   scheduler next looks, then the next due time after that.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::schedule_spec::{self, SpecError};
use super::{CompletionError, CompletionSink};
use crate::auth::{PrincipalScope, Role};
use crate::ids::{PrincipalId, SessionId, TenantId};
use crate::store::{NewSchedule, NewSession, ScheduleRow, Store};
use crate::time::now_ms;

/// How often each instance looks for due schedules.
pub const TICK: Duration = Duration::from_millis(500);
/// Due schedules one tick fires at most.
const DUE_PER_TICK: u32 = 50;
/// Characters of a prompt.
pub const MAX_PROMPT_CHARS: usize = 20_000;
/// Characters of the prompt shown in payloads.
pub const PROMPT_PREVIEW_CHARS: usize = 120;

/// The limits of schedules.
#[derive(Debug, Clone, Copy)]
pub struct ScheduleSettings {
    pub min_interval: Duration,
    pub max_per_tenant: usize,
}

/// Why a schedule operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("{0}")]
    Invalid(String),
    #[error("schedule not found: {0}")]
    NotFound(String),
    #[error("{0}")]
    Limit(String),
    #[error("database: {0}")]
    Store(#[from] sqlx::Error),
}

impl From<SpecError> for ScheduleError {
    fn from(e: SpecError) -> Self {
        ScheduleError::Invalid(e.to_string())
    }
}

impl From<ScheduleError> for crate::error::Error {
    fn from(e: ScheduleError) -> Self {
        match e {
            ScheduleError::Invalid(m) => crate::error::Error::Invalid(m),
            ScheduleError::NotFound(_) => crate::error::Error::NotFound,
            ScheduleError::Limit(m) => crate::error::Error::Conflict(m),
            ScheduleError::Store(e) => crate::error::Error::Internal(e.into()),
        }
    }
}

/// Whether `name` is a valid `schedule_id`.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A `schedule_id` made from a prompt: lower-case words joined by `-`, at
/// most 48 characters; `schedule` when nothing is left.
pub fn slug(prompt: &str) -> String {
    let mut out = String::new();
    for c in prompt.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
        if out.len() >= 48 {
            break;
        }
    }
    let out = out.trim_end_matches('-').to_owned();
    if out.is_empty() {
        "schedule".into()
    } else {
        out
    }
}

/// The first of `base`, `base-2`, `base-3`, … that `taken` does not hold.
pub fn unique_name(base: &str, taken: &[String]) -> String {
    if !taken.iter().any(|t| t == base) {
        return base.to_owned();
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|c| !taken.iter().any(|t| t == c))
        .unwrap_or_else(|| base.to_owned())
}

fn preview(prompt: &str) -> String {
    if prompt.chars().count() <= PROMPT_PREVIEW_CHARS {
        return prompt.to_owned();
    }
    let mut s: String = prompt.chars().take(PROMPT_PREVIEW_CHARS).collect();
    s.push_str("...");
    s
}

/// The model's and the API's view of a schedule: no owner ids.
pub fn view(row: &ScheduleRow) -> Value {
    json!({
        "schedule_id": row.name,
        "enabled": row.enabled,
        "schedule": row.spec,
        "prompt_preview": preview(&row.prompt),
        "core_id": row.core,
        "session_id": row.session_id.to_string(),
        "next_run_at": row.next_fire_at.map(crate::time::rfc3339),
        "last_run_at": row.last_fired_at.map(crate::time::rfc3339),
        "run_count": row.fire_count,
    })
}

fn prompt_ok(prompt: &str) -> Result<String, ScheduleError> {
    let p = prompt.trim();
    if p.is_empty() {
        return Err(ScheduleError::Invalid("prompt must not be empty".into()));
    }
    if p.chars().count() > MAX_PROMPT_CHARS {
        return Err(ScheduleError::Invalid(format!(
            "prompt is longer than {MAX_PROMPT_CHARS} characters"
        )));
    }
    Ok(p.to_owned())
}

/// Owner-scoped schedule operations and the scheduler; cheap to clone.
#[derive(Clone)]
pub struct Schedules {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    settings: ScheduleSettings,
    sink: OnceLock<Arc<dyn CompletionSink>>,
}

impl Schedules {
    pub fn new(store: Store, settings: ScheduleSettings) -> Self {
        Self {
            inner: Arc::new(Inner {
                store,
                settings,
                sink: OnceLock::new(),
            }),
        }
    }

    /// Where runs start (the turn service); set once at start-up.
    pub fn set_sink(&self, sink: Arc<dyn CompletionSink>) {
        let _ = self.inner.sink.set(sink);
    }

    pub async fn list(&self, scope: &PrincipalScope) -> Result<Vec<ScheduleRow>, ScheduleError> {
        Ok(self
            .inner
            .store
            .list_schedules(scope.tenant(), scope.principal())
            .await?)
    }

    /// One of the caller's schedules by `schedule_id` (or row id).
    pub async fn get(
        &self,
        scope: &PrincipalScope,
        key: &str,
    ) -> Result<ScheduleRow, ScheduleError> {
        let shown: String = key.chars().take(80).collect();
        self.inner
            .store
            .get_schedule(scope.tenant(), scope.principal(), key.trim())
            .await?
            .ok_or(ScheduleError::NotFound(shown))
    }

    /// Create a schedule running in a new session of the caller on `core`,
    /// in the workspace of `from_session` (the caller's).
    pub async fn create(
        &self,
        scope: &PrincipalScope,
        from_session: SessionId,
        core: &str,
        name: Option<&str>,
        spec: &str,
        prompt: &str,
    ) -> Result<ScheduleRow, ScheduleError> {
        let inner = &self.inner;
        let prompt = prompt_ok(prompt)?;
        let spec = spec.trim();
        let (_, first) = schedule_spec::check(spec, inner.settings.min_interval, now_ms())?;
        let taken: Vec<String> = self
            .list(scope)
            .await?
            .into_iter()
            .map(|r| r.name)
            .collect();
        let name = match name.map(str::trim).filter(|n| !n.is_empty()) {
            Some(n) if !valid_name(n) => {
                return Err(ScheduleError::Invalid(format!(
                    "schedule_id {:?} must match ^[A-Za-z0-9][A-Za-z0-9_-]{{0,63}}$",
                    n.chars().take(80).collect::<String>()
                )))
            }
            Some(n) if taken.iter().any(|t| t == n) => {
                return Err(ScheduleError::Invalid(format!(
                    "schedule_id {n:?} already exists; use action=update"
                )))
            }
            Some(n) => n.to_owned(),
            None => unique_name(&slug(&prompt), &taken),
        };
        let from = inner
            .store
            .get_session(scope.tenant(), scope.principal(), from_session)
            .await?
            .ok_or_else(|| ScheduleError::NotFound("the calling session".into()))?;
        let session = inner
            .store
            .create_session(&NewSession {
                id: SessionId::new(),
                tenant: scope.tenant().clone(),
                principal: scope.principal().clone(),
                title: format!("schedule {name}"),
                core: core.to_owned(),
                workspace: from.workspace.clone(),
                provider: from.provider.clone(),
            })
            .await?;
        let id = format!("sched_{}", uuid::Uuid::now_v7().simple());
        let inserted = inner
            .store
            .insert_schedule(
                &NewSchedule {
                    id: &id,
                    tenant: scope.tenant(),
                    principal: scope.principal(),
                    owner_role: scope.role().as_str(),
                    name: &name,
                    core,
                    session_id: session.id,
                    spec,
                    prompt: &prompt,
                    next_fire_at: first,
                },
                i64::try_from(inner.settings.max_per_tenant).unwrap_or(i64::MAX),
            )
            .await;
        match inserted {
            Ok(true) => {}
            Ok(false) => {
                return Err(ScheduleError::Limit(format!(
                    "schedule limit reached: tenant {} has {} schedules (--max-schedules-tenant)",
                    scope.tenant().as_str(),
                    inner.settings.max_per_tenant
                )))
            }
            // A concurrent create of the same name lost the unique key.
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                return Err(ScheduleError::Invalid(format!(
                    "schedule_id {name:?} already exists; use action=update"
                )))
            }
            Err(e) => return Err(e.into()),
        }
        self.get(scope, &id).await
    }

    /// Change the cron text and/or the prompt; a new text starts counting now.
    pub async fn update(
        &self,
        scope: &PrincipalScope,
        key: &str,
        spec: Option<&str>,
        prompt: Option<&str>,
    ) -> Result<ScheduleRow, ScheduleError> {
        if spec.is_none() && prompt.is_none() {
            return Err(ScheduleError::Invalid(
                "update needs schedule or prompt".into(),
            ));
        }
        let row = self.get(scope, key).await?;
        let prompt = match prompt {
            Some(p) => prompt_ok(p)?,
            None => row.prompt.clone(),
        };
        let (spec, next) = match spec.map(str::trim) {
            Some(s) if s != row.spec => {
                let (_, first) =
                    schedule_spec::check(s, self.inner.settings.min_interval, now_ms())?;
                (s.to_owned(), Some(first))
            }
            _ => (row.spec.clone(), row.next_fire_at),
        };
        self.save(scope, &row, &spec, &prompt, row.enabled, next)
            .await
    }

    /// Enable (due times count from now) or disable a schedule.
    pub async fn set_enabled(
        &self,
        scope: &PrincipalScope,
        key: &str,
        enabled: bool,
    ) -> Result<ScheduleRow, ScheduleError> {
        let row = self.get(scope, key).await?;
        let next = if enabled {
            let (_, first) =
                schedule_spec::check(&row.spec, self.inner.settings.min_interval, now_ms())?;
            Some(first)
        } else {
            row.next_fire_at
        };
        self.save(scope, &row, &row.spec, &row.prompt, enabled, next)
            .await
    }

    async fn save(
        &self,
        scope: &PrincipalScope,
        row: &ScheduleRow,
        spec: &str,
        prompt: &str,
        enabled: bool,
        next: Option<i64>,
    ) -> Result<ScheduleRow, ScheduleError> {
        let ok = self
            .inner
            .store
            .update_schedule(
                scope.tenant(),
                scope.principal(),
                &row.id,
                spec,
                prompt,
                enabled,
                next,
            )
            .await?;
        if !ok {
            return Err(ScheduleError::NotFound(row.name.clone()));
        }
        self.get(scope, &row.id).await
    }

    /// Delete a schedule; no run of it starts afterwards. Its session and
    /// the turns it ran stay.
    pub async fn delete(
        &self,
        scope: &PrincipalScope,
        key: &str,
    ) -> Result<ScheduleRow, ScheduleError> {
        let row = self.get(scope, key).await?;
        if !self
            .inner
            .store
            .delete_schedule(scope.tenant(), scope.principal(), &row.id)
            .await?
        {
            return Err(ScheduleError::NotFound(row.name));
        }
        Ok(row)
    }

    /// Look for due schedules every [`TICK`] until `stop`.
    pub fn start(&self, stop: CancellationToken) {
        let this = self.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(TICK);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = every.tick() => this.fire_due().await,
                    _ = stop.cancelled() => return,
                }
            }
        });
    }

    /// Fire every schedule due now that this instance wins.
    pub async fn fire_due(&self) {
        let inner = &self.inner;
        let Some(sink) = inner.sink.get() else {
            return;
        };
        let now = now_ms();
        let due = match inner.store.due_schedules(now, DUE_PER_TICK).await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(error = %e, "could not read due schedules");
                return;
            }
        };
        for row in due {
            let Some(due_at) = row.next_fire_at else {
                continue;
            };
            let next = match schedule_spec::parse(&row.spec) {
                Ok(spec) => schedule_spec::next_after_run(&spec, due_at, now),
                Err(e) => {
                    tracing::warn!(schedule = %row.id, error = %e, "schedule unreadable; disabled");
                    None
                }
            };
            match inner.store.claim_schedule_run(&row.id, due_at, next).await {
                Ok(true) => {}
                Ok(false) => continue, // Another instance fired it, or it changed.
                Err(e) => {
                    tracing::warn!(schedule = %row.id, error = %e, "could not claim a schedule run");
                    continue;
                }
            }
            let scope = match (
                TenantId::parse(&row.tenant_id),
                PrincipalId::parse(&row.principal_id),
            ) {
                (Ok(t), Ok(p)) => {
                    PrincipalScope::new(t, p, Role::parse(&row.owner_role).unwrap_or(Role::Member))
                }
                _ => continue,
            };
            match sink
                .start_completion(scope, row.session_id, row.prompt.clone())
                .await
            {
                Ok(()) => tracing::info!(schedule = %row.id, "schedule run started"),
                Err(CompletionError::Busy) => tracing::warn!(
                    schedule = %row.id,
                    "schedule run skipped: the previous run of its session is still going"
                ),
                Err(CompletionError::Gone(why)) => {
                    tracing::warn!(schedule = %row.id, reason = %why, "schedule session gone; disabled");
                    let _ = inner.store.disable_schedule(&row.id).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_ids_follow_the_registry_pattern() {
        for ok in ["daily", "a", "Daily-report_2", &"x".repeat(64)] {
            assert!(valid_name(ok), "{ok}");
        }
        for bad in ["", "-a", "_a", "a b", "a/b", "ä", &"x".repeat(65), "a.b"] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn ids_from_prompts_are_slugs_made_unique() {
        assert_eq!(slug("Summarize the news!"), "summarize-the-news");
        assert_eq!(slug("  --  "), "schedule");
        assert_eq!(slug("Ünïcode only ✓"), "n-code-only");
        let long = slug(&"word ".repeat(40));
        assert!(long.len() <= 48 && valid_name(&long), "{long}");
        let taken = vec!["a".to_owned(), "a-2".to_owned()];
        assert_eq!(unique_name("a", &taken), "a-3");
        assert_eq!(unique_name("b", &taken), "b");
    }

    #[test]
    fn the_view_is_bounded_and_has_no_owner() {
        let row = ScheduleRow {
            id: "sched_1".into(),
            tenant_id: "acme".into(),
            principal_id: "alice".into(),
            owner_role: "member".into(),
            name: "daily".into(),
            core: "assistant".into(),
            session_id: SessionId::new(),
            spec: "0 9 * * *".into(),
            prompt: "p".repeat(500),
            enabled: true,
            next_fire_at: Some(0),
            last_fired_at: None,
            last_turn_id: None,
            fire_count: 3,
            created_at: 0,
            updated_at: 0,
        };
        let v = view(&row);
        assert_eq!(
            v["prompt_preview"].as_str().unwrap().chars().count(),
            PROMPT_PREVIEW_CHARS + 3
        );
        assert_eq!(v["run_count"], 3);
        let text = v.to_string();
        assert!(!text.contains("alice") && !text.contains("acme"), "{text}");
    }
}

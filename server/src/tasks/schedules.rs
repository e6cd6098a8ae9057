//! Schedules (`schedule_manage`, `GET/DELETE /v1/schedules`): files of a
//! core's `schedules/` folder in the original format
//! ([`crate::core::schedule_file`]), each a prompt run as a turn in a fresh
//! session of its owner whenever it comes due.
//!
//! - The file says what and when; the database says who
//!   (`schedule_owners`, written when `schedule_manage` writes the file,
//!   with the digest of what it wrote) and which due times have run
//!   (`schedule_runs`). A file written any other way (the core API, an
//!   evolve promote, a rollback), or an owned file changed any other way
//!   since, runs as nobody: it is listed with `owner: null` and the reason,
//!   until an owner takes it over with `schedule_manage` (update, enable).
//!   It never runs as an admin by default (fail closed).
//! - Each instance's scheduler looks every [`TICK`] at the owned schedules,
//!   reading their files from the cached live revision of their core (no
//!   disk scan per tick). A due run fires only for the instance whose
//!   insert of (tenant, core, schedule id, due time) into `schedule_runs`
//!   lands, so each due time runs once however many instances look.
//! - Runs missed while no instance was up are coalesced
//!   ([`schedule_file::due_run`]): one run, of the latest missed due time,
//!   when the scheduler next looks. Due times while a schedule was disabled
//!   never run (enabling counts from then).
//! - A run is a turn of a new session of the owner on the schedule's core,
//!   in the workspace and with the provider of the session that created it.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::{CompletionError, CompletionSink};
use crate::auth::{PrincipalScope, Role};
use crate::core::repository::{CoreRepository, CoreView};
use crate::core::schedule_file::{self, ScheduleFile, ScheduleFileError};
use crate::core::schedule_spec::{self, SpecError};
use crate::ids::{CoreId, PrincipalId, SessionId, TenantId};
use crate::store::{NewScheduleOwner, NewSession, ScheduleOwner, Store};
use crate::time::now_ms;

/// How often each instance looks for due schedules.
pub const TICK: Duration = Duration::from_millis(500);
/// Characters of the prompt shown in payloads.
pub const PROMPT_PREVIEW_CHARS: usize = 120;
/// Why a schedule without an owner row does not run.
pub const NO_OWNER: &str = "no owner recorded: the file was not written by schedule_manage, \
     so it runs as nobody; update or enable it with schedule_manage to own it";
/// Why an owned schedule whose file changed does not run.
pub const CHANGED: &str = "the file changed after schedule_manage wrote it, so it runs as \
     nobody; its owner updates or enables it with schedule_manage to run it again";

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
    #[error("core: {0}")]
    Core(String),
    #[error("database: {0}")]
    Store(#[from] sqlx::Error),
}

impl From<SpecError> for ScheduleError {
    fn from(e: SpecError) -> Self {
        ScheduleError::Invalid(e.to_string())
    }
}

impl From<ScheduleFileError> for ScheduleError {
    fn from(e: ScheduleFileError) -> Self {
        ScheduleError::Invalid(e.to_string())
    }
}

impl From<ScheduleError> for crate::error::Error {
    fn from(e: ScheduleError) -> Self {
        match e {
            ScheduleError::Invalid(m) => crate::error::Error::Invalid(m),
            ScheduleError::NotFound(_) => crate::error::Error::NotFound,
            ScheduleError::Limit(m) => crate::error::Error::Conflict(m),
            // A core that does not load is the tenant's state, not ours.
            ScheduleError::Core(m) => crate::error::Error::Conflict(m),
            ScheduleError::Store(e) => crate::error::Error::Internal(e.into()),
        }
    }
}

/// Whether `name` is a valid `schedule_id`.
pub fn valid_name(name: &str) -> bool {
    schedule_file::valid_id(name)
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

/// One schedule as listed: its file (or why the file is refused) and its
/// owner row (or why it has none).
#[derive(Debug, Clone)]
pub struct Listed {
    pub schedule_id: String,
    pub core: String,
    pub file: Result<ScheduleFile, String>,
    pub owner: Option<ScheduleOwner>,
}

impl Listed {
    /// The next due time after `now` (owned, enabled, readable only).
    pub fn next_run_at(&self, now: i64) -> Option<i64> {
        let f = self.file.as_ref().ok().filter(|f| f.enabled)?;
        runs_as(f, self.owner.as_ref()).ok()?;
        schedule_file::next_due(&f.spec().ok()?, now)
    }
}

/// The model's and the API's view of a schedule.
pub fn view(l: &Listed) -> Value {
    let (enabled, schedule, prompt_preview, error) = match &l.file {
        Ok(f) => (
            Some(f.enabled),
            Some(f.schedule.clone()),
            Some(preview(&f.prompt)),
            None,
        ),
        Err(e) => (None, None, None, Some(e.clone())),
    };
    let o = l.owner.as_ref();
    // Who it runs as; a broken file runs as nobody for its `error`.
    let runs = match &l.file {
        Ok(f) => runs_as(f, o).map(|o| o.principal_id.clone()),
        Err(_) => o.map(|o| o.principal_id.clone()).ok_or(NO_OWNER),
    };
    json!({
        "schedule_id": l.schedule_id,
        "core_id": l.core,
        "enabled": enabled,
        "schedule": schedule,
        "prompt_preview": prompt_preview,
        "error": error,
        "owner": runs.as_ref().ok(),
        "owner_reason": runs.err(),
        "next_run_at": l.next_run_at(now_ms()).map(crate::time::rfc3339),
        "last_run_at": o.and_then(|o| o.last_started).map(crate::time::rfc3339),
        "last_session_id": o.and_then(|o| o.last_session.clone()),
        "last_status": o.and_then(|o| o.last_status.clone()),
        "run_count": o.map_or(0, |o| o.run_count),
    })
}

/// Schedule bookkeeping and the scheduler; cheap to clone.
#[derive(Clone)]
pub struct Schedules {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    settings: ScheduleSettings,
    sink: OnceLock<Arc<dyn CompletionSink>>,
    cores: OnceLock<CoreRepository>,
}

impl Schedules {
    pub fn new(store: Store, settings: ScheduleSettings) -> Self {
        Self {
            inner: Arc::new(Inner {
                store,
                settings,
                sink: OnceLock::new(),
                cores: OnceLock::new(),
            }),
        }
    }

    /// Where runs start (the turn service); set once at start-up.
    pub fn set_sink(&self, sink: Arc<dyn CompletionSink>) {
        let _ = self.inner.sink.set(sink);
    }

    /// Where schedule files are read (the cached live cores); set once at
    /// start-up.
    pub fn set_cores(&self, cores: CoreRepository) {
        let _ = self.inner.cores.set(cores);
    }

    pub fn settings(&self) -> ScheduleSettings {
        self.inner.settings
    }

    /// The live revision of a core of the tenant.
    pub async fn live(
        &self,
        tenant: &TenantId,
        core: &str,
    ) -> Result<Arc<CoreView>, ScheduleError> {
        let cores = self
            .inner
            .cores
            .get()
            .ok_or_else(|| ScheduleError::Core("cores are not available".into()))?;
        let shown: String = core.chars().take(80).collect();
        let id = CoreId::parse(core).map_err(|_| ScheduleError::NotFound(shown.clone()))?;
        if !cores.exists(tenant, &id) {
            return Err(ScheduleError::NotFound(shown));
        }
        cores
            .load(tenant, &id)
            .await
            .map_err(|e| ScheduleError::Core(format!("core {shown} does not load: {e}")))
    }

    /// The schedules of one core of the tenant (its live files, with owners).
    pub async fn list_core(
        &self,
        tenant: &TenantId,
        core: &str,
    ) -> Result<Vec<Listed>, ScheduleError> {
        let view = self.live(tenant, core).await?;
        let owners = self.inner.store.tenant_schedule_owners(tenant).await?;
        Ok(listed(core, &view, &owners))
    }

    /// The schedules of every core of the tenant that loads.
    pub async fn list_tenant(&self, tenant: &TenantId) -> Result<Vec<Listed>, ScheduleError> {
        let cores = self
            .inner
            .cores
            .get()
            .ok_or_else(|| ScheduleError::Core("cores are not available".into()))?;
        let summaries = cores
            .list_cores(tenant)
            .await
            .map_err(|e| ScheduleError::Core(e.to_string()))?;
        let owners = self.inner.store.tenant_schedule_owners(tenant).await?;
        let mut out = Vec::new();
        for s in summaries.into_iter().filter(|s| s.loads) {
            if let Ok(view) = self.live(tenant, &s.id).await {
                out.extend(listed(&s.id, &view, &owners));
            }
        }
        Ok(out)
    }

    /// How many schedules the tenant owns.
    pub async fn owned_count(&self, tenant: &TenantId) -> Result<usize, ScheduleError> {
        Ok(self.inner.store.tenant_schedule_owners(tenant).await?.len())
    }

    /// Make the caller the owner of the schedule file it wrote (`file`);
    /// with `settle`, due times up to now never run. The fresh sessions of
    /// its runs use the workspace and provider of `from_session`.
    pub async fn own(
        &self,
        scope: &PrincipalScope,
        from_session: SessionId,
        core: &str,
        schedule_id: &str,
        file: &ScheduleFile,
        settle: bool,
    ) -> Result<(), ScheduleError> {
        let from = self
            .inner
            .store
            .get_session(scope.tenant(), scope.principal(), from_session)
            .await?
            .ok_or_else(|| ScheduleError::NotFound("the calling session".into()))?;
        self.inner
            .store
            .put_schedule_owner(&NewScheduleOwner {
                tenant: scope.tenant(),
                core,
                schedule_id,
                principal: scope.principal(),
                owner_role: scope.role().as_str(),
                workspace: &from.workspace,
                provider: &from.provider,
                file_digest: &digest(file),
                settle,
            })
            .await?;
        Ok(())
    }

    /// Forget a deleted schedule's owner and runs.
    pub async fn forget(
        &self,
        tenant: &TenantId,
        core: &str,
        schedule_id: &str,
    ) -> Result<(), ScheduleError> {
        Ok(self
            .inner
            .store
            .delete_schedule_owner(tenant, core, schedule_id)
            .await?)
    }

    /// Check a schedule text against the minimum interval.
    pub fn check_spec(&self, spec: &str) -> Result<(), ScheduleError> {
        schedule_spec::check(spec.trim(), self.inner.settings.min_interval, now_ms())?;
        Ok(())
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

    /// Fire every owned schedule due now that this instance wins.
    pub async fn fire_due(&self) {
        let inner = &self.inner;
        let Some(sink) = inner.sink.get() else {
            return;
        };
        let owners = match inner.store.all_schedule_owners().await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(error = %e, "could not read schedule owners");
                return;
            }
        };
        let now = now_ms();
        let mut views: HashMap<(String, String), Option<Arc<CoreView>>> = HashMap::new();
        for o in owners {
            let Ok(tenant) = TenantId::parse(&o.tenant_id) else {
                continue;
            };
            let key = (o.tenant_id.clone(), o.core.clone());
            if !views.contains_key(&key) {
                let v = self.live(&tenant, &o.core).await.ok();
                views.insert(key.clone(), v);
            }
            let Some(Some(view)) = views.get(&key) else {
                continue;
            };
            let Some(Ok(file)) = view.schedules.get(&o.schedule_id) else {
                continue;
            };
            let Some(due) = due_now(file, &o, now) else {
                continue;
            };
            self.run(sink, tenant, &o, file, due).await;
        }
    }

    async fn run(
        &self,
        sink: &Arc<dyn CompletionSink>,
        tenant: TenantId,
        o: &ScheduleOwner,
        file: &ScheduleFile,
        due: i64,
    ) {
        let store = &self.inner.store;
        let session = SessionId::new();
        match store
            .claim_schedule_run(&o.tenant_id, &o.core, &o.schedule_id, due, session)
            .await
        {
            Ok(true) => {}
            Ok(false) => return, // Another instance runs it.
            Err(e) => {
                tracing::warn!(schedule = %o.schedule_id, error = %e, "could not claim a schedule run");
                return;
            }
        }
        let Ok(principal) = PrincipalId::parse(&o.principal_id) else {
            return;
        };
        let status = match store
            .create_session(&NewSession {
                id: session,
                tenant: tenant.clone(),
                principal: principal.clone(),
                title: format!("schedule {}", o.schedule_id),
                core: o.core.clone(),
                workspace: o.workspace.clone(),
                provider: o.provider.clone(),
            })
            .await
        {
            Err(e) => format!("failed: session: {e}"),
            Ok(_) => {
                let role = Role::parse(&o.owner_role).unwrap_or(Role::Member);
                let scope = PrincipalScope::new(tenant, principal, role);
                match sink
                    .start_completion(scope, session, file.prompt.clone())
                    .await
                {
                    Ok(()) => "started".to_owned(),
                    Err(CompletionError::Busy) => "failed: busy".to_owned(),
                    Err(CompletionError::Gone(why)) => format!("failed: {why}"),
                }
            }
        };
        tracing::info!(schedule = %o.schedule_id, core = %o.core, due, %status, "schedule run");
        if let Err(e) = store
            .set_schedule_run_status(&o.tenant_id, &o.core, &o.schedule_id, due, &status)
            .await
        {
            tracing::warn!(error = %e, "could not record a schedule run's status");
        }
    }
}

/// The file of schedule `id` relative to the core folder `core_dir`: the
/// existing `<id>.yml` when there is one and no `<id>.yaml`, else
/// `<id>.yaml` (what a new schedule is written as).
pub fn file_rel(
    core_dir: &std::path::Path,
    root: &str,
    id: &str,
) -> Result<String, ScheduleFileError> {
    let yaml = schedule_file::file_path(root, id)?;
    let yml = format!("{}/{id}.yml", root.trim_end_matches('/'));
    if !core_dir.join(&yaml).is_file() && core_dir.join(&yml).is_file() {
        return Ok(yml);
    }
    Ok(yaml)
}

/// The SHA-256 of a schedule as `schedule_manage` writes it (rendered from
/// its parsed form, so only what it says counts, not its layout).
pub fn digest(f: &ScheduleFile) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(schedule_file::render(f).as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Who a readable schedule file runs as, or why nobody (pure): the owner
/// `schedule_manage` recorded, while the file is still what it wrote.
pub fn runs_as<'a>(
    file: &ScheduleFile,
    owner: Option<&'a ScheduleOwner>,
) -> Result<&'a ScheduleOwner, &'static str> {
    match owner {
        None => Err(NO_OWNER),
        Some(o) if o.file_digest != digest(file) => Err(CHANGED),
        Some(o) => Ok(o),
    }
}

/// The due time to run now for an owned schedule file, if any (pure).
pub fn due_now(file: &ScheduleFile, o: &ScheduleOwner, now: i64) -> Option<i64> {
    if !file.enabled || runs_as(file, Some(o)).is_err() {
        return None;
    }
    let spec = file.spec().ok()?;
    let since = o.last_due.map_or(o.since_ms, |d| d.max(o.since_ms));
    schedule_file::due_run(&spec, since, now)
}

/// A core's schedule files joined with the tenant's owner rows (pure).
pub fn listed(core: &str, view: &CoreView, owners: &[ScheduleOwner]) -> Vec<Listed> {
    view.schedules
        .iter()
        .map(|(id, file)| Listed {
            schedule_id: id.clone(),
            core: core.to_owned(),
            file: file.clone().map_err(|e| e.to_string()),
            owner: owners
                .iter()
                .find(|o| o.core == core && &o.schedule_id == id)
                .cloned(),
        })
        .collect()
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

    fn owner(since: i64, last_due: Option<i64>) -> ScheduleOwner {
        ScheduleOwner {
            tenant_id: "acme".into(),
            core: "assistant".into(),
            schedule_id: "tick".into(),
            principal_id: "alice".into(),
            owner_role: "member".into(),
            workspace: "w".into(),
            provider: "fake".into(),
            since_ms: since,
            file_digest: digest(&ScheduleFile::new("every 10s", "p").unwrap()),
            last_due,
            last_started: None,
            last_session: None,
            last_status: None,
            run_count: 0,
        }
    }

    #[test]
    fn a_due_time_runs_once_after_since_and_the_last_run() {
        let f = ScheduleFile::new("every 10s", "p").unwrap();
        // Created at 5s: nothing due before the grid point 10s.
        assert_eq!(due_now(&f, &owner(5_000, None), 9_999), None);
        assert_eq!(due_now(&f, &owner(5_000, None), 10_000), Some(10_000));
        // The 10s run happened: not again, next at 20s.
        assert_eq!(due_now(&f, &owner(5_000, Some(10_000)), 19_999), None);
        // Down from 12s to 55s: one catch-up run, the latest missed.
        assert_eq!(
            due_now(&f, &owner(5_000, Some(10_000)), 55_000),
            Some(50_000)
        );
        // Re-enabled at 30s: due times while paused never run.
        assert_eq!(due_now(&f, &owner(30_000, Some(10_000)), 35_000), None);
        let mut off = f.clone();
        off.enabled = false;
        assert_eq!(due_now(&off, &owner(0, None), 100_000), None);
        // Changed outside schedule_manage: runs as nobody.
        let mut edited = f.clone();
        edited.prompt = "something else".into();
        assert_eq!(due_now(&edited, &owner(0, None), 100_000), None);
        assert_eq!(runs_as(&edited, Some(&owner(0, None))).err(), Some(CHANGED));
        assert!(runs_as(&f, Some(&owner(0, None))).is_ok());
    }

    #[test]
    fn the_view_is_bounded_and_says_why_an_unowned_schedule_does_not_run() {
        let l = Listed {
            schedule_id: "daily".into(),
            core: "assistant".into(),
            file: Ok(ScheduleFile::new("0 9 * * *", &"p".repeat(500)).unwrap()),
            owner: None,
        };
        let v = view(&l);
        assert_eq!(
            v["prompt_preview"].as_str().unwrap().chars().count(),
            PROMPT_PREVIEW_CHARS + 3
        );
        assert_eq!(v["owner"], Value::Null);
        assert_eq!(v["owner_reason"], NO_OWNER);
        assert_eq!(
            v["next_run_at"],
            Value::Null,
            "an unowned schedule never runs"
        );
        let broken = Listed {
            file: Err("invalid schedule: bad cron".into()),
            owner: Some(owner(0, None)),
            ..l
        };
        let v = view(&broken);
        assert_eq!(v["error"], "invalid schedule: bad cron");
        assert_eq!(v["owner"], "alice");
        assert_eq!(v["next_run_at"], Value::Null);
    }
}

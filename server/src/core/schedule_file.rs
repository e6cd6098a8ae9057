//! One schedule file of a core's `schedules/` folder
//! (`<slots.schedules>/<schedule_id>.yaml`, default root
//! `<surface_root>/schedules`), in the Python project's format, and the pure
//! due-time decisions the scheduler makes about it.
//!
//! ```yaml
//! enabled: true
//! schedule: "0 9 * * *"
//! prompt: "Summarize the current project state and list one next action."
//! modules:
//!   input: [base_input]
//!   output: [base_output]
//! delivery:
//!   mode: local
//! ```
//!
//! Unknown keys are refused (as upstream); `enabled` defaults to `true`,
//! `modules` to the base slots, `delivery` to `local`. `schedule` is what
//! [`crate::core::schedule_spec`] reads: a five-field cron expression in UTC
//! (upstream's only form), or this host's `every <duration>` and
//! `at <RFC 3339 time>`. The file name is the schedule id
//! (`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`, `.yaml` or `.yml`). Rendering writes
//! the keys in upstream's order, so a file the tool wrote reads like one
//! upstream's `schedule_manage` wrote.
//!
//! Due times ([`due_run`], [`next_due`]): cron and `at` as their text says;
//! `every <d>` on a grid of UTC multiples of `d` since the Unix epoch (so
//! every instance and every restart agrees on the due times without any
//! stored start). Runs missed while the server was down are coalesced: only
//! the latest due time not yet run fires, once.
//!
//! No I/O here.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::schedule_spec::{self, Spec, SpecError};

/// Characters of a prompt.
pub const MAX_PROMPT_CHARS: usize = 20_000;
/// Bytes of a schedule file.
pub const MAX_FILE_BYTES: usize = 64 * 1024;
/// Cron occurrences [`due_run`] steps through at most (a minutely schedule
/// over more than a year of downtime); past that the latest occurrence
/// reached is the catch-up run.
const MAX_CRON_STEPS: usize = 600_000;

/// The slots a schedule runs when the file names none.
pub fn default_input() -> Vec<String> {
    vec!["base_input".into()]
}

pub fn default_output() -> Vec<String> {
    vec!["base_output".into()]
}

fn default_true() -> bool {
    true
}

fn default_mode() -> String {
    "local".into()
}

/// `modules:` of a schedule file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Modules {
    #[serde(default = "default_input")]
    pub input: Vec<String>,
    #[serde(default = "default_output")]
    pub output: Vec<String>,
}

impl Default for Modules {
    fn default() -> Self {
        Self {
            input: default_input(),
            output: default_output(),
        }
    }
}

/// `delivery:` of a schedule file (`local`: the run stays in its session).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delivery {
    #[serde(default = "default_mode")]
    pub mode: String,
    /// Telegram's target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<serde_yaml_ng::Value>,
    /// Other channels' target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl Default for Delivery {
    fn default() -> Self {
        Self {
            mode: default_mode(),
            chat_id: None,
            target: None,
        }
    }
}

/// A schedule file's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleFile {
    #[serde(default = "default_true")]
    pub enabled: bool,
    pub schedule: String,
    pub prompt: String,
    #[serde(default)]
    pub modules: Modules,
    #[serde(default)]
    pub delivery: Delivery,
}

/// Why a schedule file or id is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleFileError {
    #[error("invalid schedule yaml: {0}")]
    Yaml(String),
    #[error("invalid schedule: {0}")]
    Spec(#[from] SpecError),
    #[error("invalid schedule: prompt must not be empty")]
    EmptyPrompt,
    #[error("invalid schedule: prompt is longer than {MAX_PROMPT_CHARS} characters")]
    LongPrompt,
    #[error("invalid schedule: {0} module id {1:?} is not a slot id")]
    Module(&'static str, String),
    #[error("invalid schedule: a schedule file holds at most {MAX_FILE_BYTES} bytes")]
    TooLarge,
    #[error(
        "schedule_id must start with a letter or digit and contain only letters, digits, \
         underscores, or hyphens (at most 64)"
    )]
    Id,
}

/// Whether `id` is a valid schedule id.
pub fn valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && id.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The schedule id of a file name in the schedules folder (`<id>.yaml` or
/// `<id>.yml`); `None` for anything else (other files are ignored).
pub fn id_of(file_name: &str) -> Option<&str> {
    let stem = file_name
        .strip_suffix(".yaml")
        .or_else(|| file_name.strip_suffix(".yml"))?;
    valid_id(stem).then_some(stem)
}

/// The file a new schedule is written to, relative to the core: under the
/// schedules root (`slots.schedules`, or `<surface_root>/schedules`).
pub fn file_path(root: &str, id: &str) -> Result<String, ScheduleFileError> {
    if !valid_id(id) {
        return Err(ScheduleFileError::Id);
    }
    Ok(format!("{}/{id}.yaml", root.trim_end_matches('/')))
}

impl ScheduleFile {
    /// A new schedule as `schedule_manage` creates it.
    pub fn new(schedule: &str, prompt: &str) -> Result<Self, ScheduleFileError> {
        let f = Self {
            enabled: true,
            schedule: schedule.trim().to_owned(),
            prompt: prompt.trim().to_owned(),
            modules: Modules::default(),
            delivery: Delivery::default(),
        };
        f.validated()
    }

    /// Trimmed and checked (the schedule text parses, the prompt is usable,
    /// module ids are slot ids).
    pub fn validated(mut self) -> Result<Self, ScheduleFileError> {
        self.schedule = self.schedule.trim().to_owned();
        self.prompt = self.prompt.trim().to_owned();
        schedule_spec::parse(&self.schedule)?;
        if self.prompt.is_empty() {
            return Err(ScheduleFileError::EmptyPrompt);
        }
        if self.prompt.chars().count() > MAX_PROMPT_CHARS {
            return Err(ScheduleFileError::LongPrompt);
        }
        for (phase, ids) in [
            ("input", &self.modules.input),
            ("output", &self.modules.output),
        ] {
            if let Some(bad) = ids.iter().find(|m| !valid_id(m)) {
                return Err(ScheduleFileError::Module(
                    phase,
                    bad.chars().take(80).collect(),
                ));
            }
        }
        Ok(self)
    }

    /// The parsed `schedule`.
    pub fn spec(&self) -> Result<Spec, SpecError> {
        schedule_spec::parse(&self.schedule)
    }
}

/// Read a schedule file.
pub fn parse(text: &str) -> Result<ScheduleFile, ScheduleFileError> {
    if text.len() > MAX_FILE_BYTES {
        return Err(ScheduleFileError::TooLarge);
    }
    let f: ScheduleFile =
        serde_yaml_ng::from_str(text).map_err(|e| ScheduleFileError::Yaml(e.to_string()))?;
    f.validated()
}

/// Write a schedule file (upstream's key order; `delivery` targets only
/// when set).
pub fn render(f: &ScheduleFile) -> String {
    // Field order of the struct is upstream's order; serde keeps it.
    serde_yaml_ng::to_string(f).unwrap_or_default()
}

/// The run after `after_ms`, strictly: cron and `at` as parsed, `every` on
/// its UTC grid.
pub fn next_due(spec: &Spec, after_ms: i64) -> Option<i64> {
    match spec {
        Spec::Every(d) => {
            let step = i64::try_from(d.as_millis()).ok().filter(|s| *s > 0)?;
            after_ms.div_euclid(step).checked_add(1)?.checked_mul(step)
        }
        other => schedule_spec::next_after(other, after_ms),
    }
}

/// The run to start at `now_ms` for a schedule whose runs up to `since_ms`
/// are settled (run, or before the schedule existed): the latest due time
/// in `(since_ms, now_ms]`, or `None` when nothing is due. Several missed
/// due times give one run, the latest (the documented catch-up policy).
pub fn due_run(spec: &Spec, since_ms: i64, now_ms: i64) -> Option<i64> {
    if now_ms <= since_ms {
        return None;
    }
    match spec {
        Spec::Every(d) => {
            let step = i64::try_from(d.as_millis()).ok().filter(|s| *s > 0)?;
            let grid = now_ms.div_euclid(step).checked_mul(step)?;
            (grid > since_ms).then_some(grid)
        }
        Spec::At(at) => (*at > since_ms && *at <= now_ms).then_some(*at),
        Spec::Cron(_) => {
            let mut latest = None;
            let mut cursor = since_ms;
            for _ in 0..MAX_CRON_STEPS {
                match next_due(spec, cursor) {
                    Some(t) if t <= now_ms => {
                        latest = Some(t);
                        cursor = t;
                    }
                    _ => break,
                }
            }
            latest
        }
    }
}

/// The schedules of one core revision, by id: each file parsed, or why it
/// was refused (listed, never run).
pub type Parsed = BTreeMap<String, Result<ScheduleFile, ScheduleFileError>>;

/// Parse the files of a schedules folder (`(file name, text)`); names that
/// are not schedule files are skipped, and an id given twice (`a.yaml` and
/// `a.yml`) is refused for both.
pub fn parse_folder<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> Parsed {
    let mut out: Parsed = BTreeMap::new();
    for (name, text) in files {
        let Some(id) = id_of(name) else {
            continue;
        };
        if out.contains_key(id) {
            out.insert(
                id.to_owned(),
                Err(ScheduleFileError::Yaml(format!(
                    "duplicate schedule id: {id}"
                ))),
            );
            continue;
        }
        out.insert(id.to_owned(), parse(text));
    }
    out
}

#[cfg(test)]
#[path = "schedule_file_tests.rs"]
mod tests;

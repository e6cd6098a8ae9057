//! Pure planning of a slot phase: from a core's loaded pipeline and a
//! selection (`delegate_task`'s `input_slots` / `output_slots` /
//! `use_bootstrap`, or the whole pipeline for a top-level session), the
//! ordered groups to run. `base_input` / `base_output` are always selected
//! when the pipeline lists them; a list names ids of the pipeline and runs
//! them in pipeline order; an id the pipeline does not list is an error
//! naming it. Planning does no I/O; [`native_of`], which tells the shipped
//! base modules by their bytes, reads a slot's `module.py` once per revision
//! when the pipeline is built. The pipeline is part of what a core declares,
//! so it lives with the core; `slots` runs it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::core::loader::{LoadedCore, Phase};
use crate::core::manifest::{FailurePolicy, HistoryPolicy};

/// The shipped `base_input` module (the Python project's, unchanged).
pub const BASE_INPUT_PY: &str =
    "def process(ctx):\n    ctx.input.add_context(ctx.input.raw_text, role=\"user\")\n";
/// The shipped `base_output` module.
pub const BASE_OUTPUT_PY: &str =
    "def process(ctx):\n    ctx.output.send_text(ctx.output.response_text)\n";

/// Which shipped base slot the folder `dir` holds, if its module is byte
/// for byte the shipped one: the host then does what it would do without
/// starting Python (an edited module runs in the runner like any other).
///
/// A `base_input` / `base_output` folder with no `module.py` at all (cores
/// seeded by earlier versions of this host, whose base slots were built in)
/// keeps that built-in behaviour.
pub fn native_of(dir: &Path, entrypoint: &str) -> Option<Native> {
    if entrypoint.trim() != "module:process" {
        return None;
    }
    let module = dir.join("module.py");
    if !module.exists() {
        return match dir.file_name().and_then(|n| n.to_str()) {
            Some("base_input") => Some(Native::BaseInput),
            Some("base_output") => Some(Native::BaseOutput),
            _ => None,
        };
    }
    let text = std::fs::read_to_string(module).ok()?;
    let text = text.replace("\r\n", "\n");
    match text.trim_end() {
        t if t == BASE_INPUT_PY.trim_end() => Some(Native::BaseInput),
        t if t == BASE_OUTPUT_PY.trim_end() => Some(Native::BaseOutput),
        _ => None,
    }
}

/// How a group of slots runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// One after another; may change the prompt / output.
    Serial,
    /// Side effects only, concurrently; may not change the prompt / output.
    Parallel,
}

impl Lane {
    pub fn as_str(self) -> &'static str {
        match self {
            Lane::Serial => "serial",
            Lane::Parallel => "parallel",
        }
    }
}

/// One slot as the runner needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotSpec {
    pub id: String,
    pub phase: Phase,
    /// Slot folder relative to the core (`agent/input/base_input`): its
    /// `ctx.slot_path` and the path its grants are scoped to.
    pub slot_path: String,
    /// The slot folder on disk.
    pub dir: PathBuf,
    /// `module:function`, split; `Err` says why the entrypoint cannot run
    /// (the slot then fails under its own failure policy).
    pub entry: Result<(String, String), String>,
    pub capabilities: Vec<String>,
    pub failure_policy: FailurePolicy,
    pub history_policy: HistoryPolicy,
    /// The host runs this slot itself: its module is byte for byte the
    /// shipped `base_input` / `base_output` (see [`super::run::native_of`]).
    pub native: Option<Native>,
}

/// A shipped base slot the host runs without the runner (same effect).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Native {
    BaseInput,
    BaseOutput,
}

/// A core's pipeline, resolved once per core revision.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pipeline {
    pub bootstrap: Vec<Arc<SlotSpec>>,
    pub input_serial: Vec<Arc<SlotSpec>>,
    pub input_parallel: Vec<Arc<SlotSpec>>,
    pub output_serial: Vec<Arc<SlotSpec>>,
    pub output_parallel: Vec<Arc<SlotSpec>>,
}

/// What to run of a phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// The base slot only (`None`, omitted, `[]`).
    Base,
    /// The whole pipeline (`"all"`; what a top-level session runs).
    All,
    /// These ids (plus the base slot), in pipeline order.
    Only(Vec<String>),
}

/// Why a selection cannot be planned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("{field} must be 'all' or a list of slot ids")]
    Shape { field: String },
    #[error("{field} items must be non-empty strings")]
    Item { field: String },
    #[error("{phase} slot {id:?} is not in the core's {phase} pipeline")]
    Unknown { phase: &'static str, id: String },
}

/// Entrypoints a slot may use: `module:function` relative to its folder.
fn entry(entrypoint: &str) -> Result<(String, String), String> {
    let (module, _) = entrypoint
        .trim()
        .split_once(':')
        .unwrap_or((entrypoint, ""));
    if module.ends_with(".py") || module.contains('/') {
        return Err(format!(
            "entrypoint {entrypoint:?}: a core-root file path is not supported on this host; \
             use `module:function` relative to the slot folder"
        ));
    }
    crate::catalog::parse_entrypoint(entrypoint)
}

impl Pipeline {
    /// The pipeline of a loaded core (the loader has checked every id)
    /// whose folder is `root`; `native` says which slots the host runs itself.
    pub fn from_core(
        core: &LoadedCore,
        root: &Path,
        native: &dyn Fn(&Path, &str) -> Option<Native>,
    ) -> Self {
        let spec = |phase: Phase, id: &String| {
            let slot = core.slot(phase, id)?;
            Some(Arc::new(SlotSpec {
                id: id.clone(),
                phase,
                slot_path: slot.dir_rel.clone(),
                dir: join(root, &slot.dir_rel),
                native: native(&join(root, &slot.dir_rel), &slot.manifest.entrypoint),
                entry: entry(&slot.manifest.entrypoint),
                capabilities: slot.manifest.capabilities.clone(),
                failure_policy: slot.manifest.failure_policy,
                history_policy: slot.manifest.history_policy,
            }))
        };
        let lane = |phase: Phase, ids: &[String]| -> Vec<Arc<SlotSpec>> {
            ids.iter().filter_map(|id| spec(phase, id)).collect()
        };
        let p = &core.pipelines;
        Self {
            bootstrap: lane(Phase::Bootstrap, &p.bootstrap.serial),
            input_serial: lane(Phase::Input, &p.input.serial),
            input_parallel: lane(Phase::Input, &p.input.parallel),
            output_serial: lane(Phase::Output, &p.output.serial),
            output_parallel: lane(Phase::Output, &p.output.parallel),
        }
    }

    /// No slot in any phase: turns skip the runner entirely.
    pub fn is_empty(&self) -> bool {
        self.bootstrap.is_empty()
            && self.input_serial.is_empty()
            && self.input_parallel.is_empty()
            && self.output_serial.is_empty()
            && self.output_parallel.is_empty()
    }

    fn lanes(&self, phase: Phase) -> [(Lane, &[Arc<SlotSpec>]); 2] {
        match phase {
            Phase::Bootstrap => [(Lane::Serial, &self.bootstrap), (Lane::Parallel, &[])],
            Phase::Input => [
                (Lane::Serial, &self.input_serial),
                (Lane::Parallel, &self.input_parallel),
            ],
            Phase::Output => [
                (Lane::Serial, &self.output_serial),
                (Lane::Parallel, &self.output_parallel),
            ],
        }
    }

    /// Ids of a phase in pipeline order (serial, then parallel).
    pub fn ids(&self, phase: Phase) -> Vec<String> {
        self.lanes(phase)
            .iter()
            .flat_map(|(_, s)| s.iter().map(|s| s.id.clone()))
            .collect()
    }
}

fn join(root: &Path, rel: &str) -> PathBuf {
    rel.split('/')
        .filter(|p| !p.is_empty())
        .fold(root.to_path_buf(), |d, p| d.join(p))
}

impl Selection {
    /// `input_slots` / `output_slots` as `delegate_task` takes them.
    pub fn parse(field: &str, raw: Option<&Value>) -> Result<Self, PlanError> {
        match raw {
            None | Some(Value::Null) => Ok(Selection::Base),
            Some(Value::String(s)) if s == "all" => Ok(Selection::All),
            Some(Value::Array(items)) if items.is_empty() => Ok(Selection::Base),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| match i.as_str().map(str::trim) {
                    Some(s) if !s.is_empty() => Ok(s.to_owned()),
                    _ => Err(PlanError::Item {
                        field: field.to_owned(),
                    }),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Selection::Only),
            Some(_) => Err(PlanError::Shape {
                field: field.to_owned(),
            }),
        }
    }

    /// As stored with a child session: `None` is the whole pipeline (a
    /// session no `delegate_task` made), a list is exactly those ids.
    pub fn from_stored(ids: Option<Vec<String>>) -> Self {
        match ids {
            None => Selection::All,
            Some(ids) if ids.is_empty() => Selection::Base,
            Some(ids) => Selection::Only(ids),
        }
    }
}

/// A run of slots in one lane.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub lane: Lane,
    pub slots: Vec<Arc<SlotSpec>>,
}

/// The base slot id of a phase (`base_input`, `base_output`); bootstrap has none.
pub fn base_id(phase: Phase) -> Option<&'static str> {
    match phase {
        Phase::Bootstrap => None,
        Phase::Input => Some("base_input"),
        Phase::Output => Some("base_output"),
    }
}

/// The groups of `phase` to run for `selection`, in pipeline order: the
/// serial lane first (as one group), then the parallel lane. Empty lanes
/// are left out.
pub fn plan(
    pipeline: &Pipeline,
    phase: Phase,
    selection: &Selection,
) -> Result<Vec<Group>, PlanError> {
    let lanes = pipeline.lanes(phase);
    if let Selection::Only(ids) = selection {
        if let Some(missing) = ids
            .iter()
            .find(|id| !lanes.iter().any(|(_, s)| s.iter().any(|s| &s.id == *id)))
        {
            return Err(PlanError::Unknown {
                phase: phase.as_str(),
                id: missing.clone(),
            });
        }
    }
    let base = base_id(phase);
    let chosen = |s: &SlotSpec| match selection {
        Selection::All => true,
        Selection::Base => Some(s.id.as_str()) == base,
        Selection::Only(ids) => Some(s.id.as_str()) == base || ids.contains(&s.id),
    };
    Ok(lanes
        .iter()
        .filter_map(|(lane, slots)| {
            let slots: Vec<_> = slots.iter().filter(|s| chosen(s)).cloned().collect();
            (!slots.is_empty()).then_some(Group { lane: *lane, slots })
        })
        .collect())
}

/// The bootstrap groups: the whole bootstrap pipeline when asked, else none.
pub fn plan_bootstrap(pipeline: &Pipeline, use_bootstrap: bool) -> Vec<Group> {
    if !use_bootstrap || pipeline.bootstrap.is_empty() {
        return Vec::new();
    }
    vec![Group {
        lane: Lane::Serial,
        slots: pipeline.bootstrap.clone(),
    }]
}

#[cfg(test)]
#[path = "pipeline_tests.rs"]
mod tests;

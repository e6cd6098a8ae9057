//! Running a planned slot phase on the warm Python runner and folding what
//! the slots asked for into one [`Effects`] the turn applies. Serial groups
//! run one slot after another; a parallel group runs its slots at once (each
//! on its own warm runner) and may not change the prompt or the output (the
//! runner refuses). A failing slot is reported in [`PhaseRun::failures`];
//! a `hard` one stops the phase.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::authored::runner::Invocation;
use crate::authored::{HostAnswer, HostAsk, Runners, SlotRun};
use crate::catalog::AuthoredSpec;
use crate::core::manifest::{FailurePolicy, HistoryPolicy};
use crate::core::pipeline::{Group, Lane, Native, SlotSpec};
use crate::exec::sandbox::Sandbox;

/// Text a slot adds to the current prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextAdd {
    /// `system` (a system message of this turn) or `user` (part of the user message).
    pub system: bool,
    pub content: String,
    /// Written to session history (`persist`); otherwise this turn only.
    pub persist: bool,
}

/// Text a slot delivers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// `text`, `progress` or `notice`.
    pub kind: String,
    pub text: String,
    /// What history keeps instead of `text`, when set.
    pub history_text: Option<String>,
    pub persist: bool,
    pub visible: bool,
}

/// What the slots of a phase asked for, in pipeline order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Effects {
    pub bootstrap: Vec<String>,
    pub context: Vec<ContextAdd>,
    pub deliveries: Vec<Delivery>,
    pub result: Option<Value>,
    /// Skills input slots activated for this turn (`ctx.skills.activate`).
    pub skills: Vec<String>,
}

/// A slot that failed.
#[derive(Debug, Clone)]
pub struct Failure {
    pub slot: Arc<SlotSpec>,
    pub error: String,
}

impl Failure {
    pub fn is_hard(&self) -> bool {
        self.slot.failure_policy == FailurePolicy::Hard
    }
}

/// One phase's outcome: effects of the slots that succeeded, failures in order.
#[derive(Debug, Clone, Default)]
pub struct PhaseRun {
    pub effects: Effects,
    pub failures: Vec<Failure>,
    /// Slots that ran in the runner (not natively).
    pub in_runner: usize,
}

impl PhaseRun {
    /// The first hard failure (the phase stopped there).
    pub fn hard_failure(&self) -> Option<&Failure> {
        self.failures.iter().find(|f| f.is_hard())
    }
}

pub fn policy_str(p: HistoryPolicy) -> &'static str {
    match p {
        HistoryPolicy::Persist => "persist",
        HistoryPolicy::ModelHidden => "model_hidden",
        HistoryPolicy::Transient => "transient",
    }
}

pub fn failure_str(p: FailurePolicy) -> &'static str {
    match p {
        FailurePolicy::Soft => "soft",
        FailurePolicy::Hard => "hard",
    }
}

/// Add what one slot returned (`demiurge.slots` effects) to `effects`;
/// malformed parts are ignored (the runner is not trusted to be well formed).
pub fn absorb(effects: &mut Effects, value: &Value) {
    let texts = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for t in texts("bootstrap") {
        if let Some(t) = t.as_str().map(str::trim).filter(|t| !t.is_empty()) {
            effects.bootstrap.push(t.to_owned());
        }
    }
    for c in texts("context") {
        let Some(content) = c.get("content").and_then(Value::as_str) else {
            continue;
        };
        effects.context.push(ContextAdd {
            system: c.get("section").and_then(Value::as_str) != Some("user"),
            content: content.to_owned(),
            persist: c.get("history_policy").and_then(Value::as_str) == Some("persist"),
        });
    }
    for d in texts("deliveries") {
        let Some(text) = d.get("text").and_then(Value::as_str) else {
            continue;
        };
        effects.deliveries.push(Delivery {
            kind: d
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("text")
                .to_owned(),
            text: text.to_owned(),
            history_text: d
                .get("history_text")
                .and_then(Value::as_str)
                .map(str::to_owned),
            persist: d.get("history_policy").and_then(Value::as_str) == Some("persist"),
            visible: d.get("visible").and_then(Value::as_bool).unwrap_or(true),
        });
    }
    for name in texts("skills") {
        if let Some(name) = name.as_str().filter(|n| !n.is_empty()) {
            if !effects.skills.iter().any(|s| s == name) {
                effects.skills.push(name.to_owned());
            }
        }
    }
    if let Some(r) = value.get("result").filter(|r| !r.is_null()) {
        match (&mut effects.result, r) {
            (Some(Value::Object(cur)), Value::Object(new)) => {
                cur.extend(new.iter().map(|(k, v)| (k.clone(), v.clone())))
            }
            (cur, r) => *cur = Some(r.clone()),
        }
    }
}

/// What the shipped base slots would have returned.
fn native_value(native: Native, slot: &SlotSpec, lane: Lane, context: &Value) -> Value {
    match native {
        Native::BaseInput => json!({"context": [{
            "section": "user",
            "content": context["input"]["raw_text"].as_str().unwrap_or_default(),
            "history_policy": "persist",
        }]}),
        Native::BaseOutput => json!({"deliveries": [{
            "kind": "text",
            "text": context["output"]["response_text"].as_str().unwrap_or_default(),
            "history_policy": if lane == Lane::Parallel { "transient" } else { policy_str(slot.history_policy) },
            "visible": true,
        }]}),
    }
}

/// Where and as whom slots run (the same walls as authored tools).
pub struct SlotEnv<'a> {
    pub runners: &'a Runners,
    pub sandbox: &'a Sandbox,
    pub tenant: &'a str,
    /// Folder name of the core revision.
    pub revision: &'a str,
    pub runtime_dir: PathBuf,
    /// The core's runtime root (its code and its packages' state).
    pub core_root: PathBuf,
    pub workspace: &'a Path,
    pub home: PathBuf,
    pub tmp: PathBuf,
    pub network: bool,
    pub timeout: Duration,
    /// `ctx.capability.can(name)` of a slot.
    pub allow: &'a (dyn Fn(&SlotSpec, &str) -> bool + Sync),
    /// `ctx.state` and `ctx.tools` of a slot (`None`: the
    /// phase offers none, as bootstrap).
    pub host: Option<&'a HostHandler<'a>>,
    /// `session_id`, `turn_id`, `core_id`, `core_revision`, `user_input`.
    pub turn: Value,
    pub cancel: &'a CancellationToken,
}

/// Answers one slot's request to the host.
pub type HostHandler<'a> =
    dyn Fn(&SlotSpec, HostAsk) -> futures_util::future::BoxFuture<'a, HostAnswer> + Sync + 'a;

/// Whether the slot ran in the runner, and what it returned.
type SlotResult = (bool, Result<Value, String>);

async fn run_slot(
    env: &SlotEnv<'_>,
    slot: &Arc<SlotSpec>,
    lane: Lane,
    context: &Value,
) -> SlotResult {
    if let Some(native) = slot.native {
        return (false, Ok(native_value(native, slot, lane, context)));
    }
    let (module, function) = match &slot.entry {
        Ok(e) => e.clone(),
        Err(e) => return (false, Err(e.clone())),
    };
    let spec = AuthoredSpec {
        slot_path: slot.slot_path.clone(),
        dir: slot.dir.clone(),
        module,
        function,
        capabilities: slot.capabilities.clone(),
    };
    let inv = Invocation {
        sandbox: env.sandbox,
        tenant: env.tenant,
        revision: env.revision,
        runtime_dir: env.runtime_dir.clone(),
        core_root: env.core_root.clone(),
        workspace: env.workspace,
        home: env.home.clone(),
        tmp: env.tmp.clone(),
        network: env.network,
        name: &slot.id,
        spec: &spec,
        turn: env.turn.clone(),
        args: context,
        timeout: env.timeout,
    };
    let allow = |cap: &str| (env.allow)(slot, cap);
    let run = SlotRun {
        phase: slot.phase.as_str(),
        lane: lane.as_str(),
        history_policy: policy_str(slot.history_policy),
    };
    let host = env.host.map(|answer| move |ask: HostAsk| answer(slot, ask));
    let host = host
        .as_ref()
        .map(|f| f as &crate::authored::runner::HostFn<'_>);
    let mut value = env.runners.slot(inv, run, &allow, host, env.cancel).await;
    // The runner's check of `skill.activate` is the slot's own code: ask again.
    if let Ok(Value::Object(v)) = &mut value {
        if let Some(Value::Array(names)) = v.get_mut("skills") {
            names.retain(|n| {
                n.as_str().is_some_and(|n| {
                    allow(&format!("skill.activate:{n}")) || allow("skill.activate")
                })
            });
        }
    }
    (true, value)
}

/// Run the `groups` of one phase with the phase's `context` (`input`, `output`,
/// `history` as the runner passes them to `ctx`).
pub async fn run_phase(env: &SlotEnv<'_>, groups: &[Group], context: &Value) -> PhaseRun {
    let mut out = PhaseRun::default();
    for group in groups {
        let results: Vec<(Arc<SlotSpec>, SlotResult)> = match group.lane {
            Lane::Serial => {
                let mut v = Vec::with_capacity(group.slots.len());
                for slot in &group.slots {
                    let r = run_slot(env, slot, Lane::Serial, context).await;
                    let stop = r.1.is_err() && slot.failure_policy == FailurePolicy::Hard;
                    v.push((slot.clone(), r));
                    if stop {
                        break;
                    }
                }
                v
            }
            Lane::Parallel => {
                let runs = group
                    .slots
                    .iter()
                    .map(|slot| run_slot(env, slot, Lane::Parallel, context));
                let done = futures_util::future::join_all(runs).await;
                group.slots.iter().cloned().zip(done).collect()
            }
        };
        for (slot, (in_runner, r)) in results {
            out.in_runner += usize::from(in_runner);
            match r {
                Ok(v) => absorb(&mut out.effects, &v),
                Err(error) => out.failures.push(Failure { slot, error }),
            }
        }
        if out.hard_failure().is_some() {
            break;
        }
    }
    out
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;

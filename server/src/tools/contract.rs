//! The tool contract the dispatcher drives. A tool never asks for approval
//! and never sees the dispatcher: it has typed arguments ([`Tool::Args`],
//! deserialized after the schema check), a pure [`Tool::plan`] that says
//! what must be approved (or answers early), an optional read-only
//! [`Tool::review`] for what can only be known after looking (a second
//! approval), and [`Tool::execute`], the effect. The dispatcher asks, in
//! order, for every [`Approval`] a [`Gate`] names, then executes, types the
//! status, redacts and emits.
//!
//! What a call may rely on is its [`CallContext`](super::context::CallContext), built by
//! the host. The host services an effect may need (background tasks, live
//! output, history, clarification, core changes, authored runners) reach the
//! tool through [`Host`], one trait per concern ([`super::host`]), which the
//! dispatcher implements; the types here depend on nothing in `dispatch`.

use std::future::Future;
use std::path::{Path, PathBuf};

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::context::CallContext;
use super::host::Host;
use crate::catalog::{ResolvedCatalog, ResolvedEntry};
use crate::policy::approval_policy::{ApprovalPolicy, Risk};
use crate::walls::Walls;

pub use crate::wire::ToolStatus;

/// What an adapter returns; the wire vocabulary, so runners below the
/// tools (authored, slots) return it too.
pub use crate::wire::ToolOutcome;

/// One approval a call needs before its effect. The dispatcher turns it
/// into a request: policy = the stricter of `baseline` and the entry's
/// effective policy, risk never below the entry's, rule
/// `<tool>:<capability>:<action>:<target>`.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    /// The tool's own policy for this target (e.g. `auto` for an ordinary
    /// read inside the workspace, `prompt` for any write).
    pub baseline: ApprovalPolicy,
    pub risk: Risk,
    pub action: String,
    pub target: String,
    /// Shown to the approver; empty means `<tool> <action>`.
    pub reason: String,
    /// What the approver sees of the call (never a secret value).
    pub preview: Value,
    /// Whether an "allow for the session" answer may cover later calls.
    pub session_cacheable: bool,
}

/// What stands between a planned call and its effect.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// The generic per-call approval: asked (risk of the entry, preview of
    /// the arguments) unless the entry's effective policy is `auto`.
    PerCall,
    /// These approvals, asked in order; the first refusal ends the call.
    /// Empty: nothing to ask.
    Ask(Vec<Approval>),
    /// Nothing to ask (e.g. a literal read-only command); only an entry
    /// policy of `deny` refuses.
    UnlessDenied,
}

impl Gate {
    pub fn one(approval: Approval) -> Self {
        Gate::Ask(vec![approval])
    }

    pub fn none() -> Self {
        Gate::Ask(Vec::new())
    }
}

/// The result of a plan (or review) step.
#[derive(Debug)]
pub enum Plan<P> {
    /// The call ends here, with no effect (denied, invalid, failed …).
    Done(ToolOutcome),
    /// Pass the gate, then continue with `prepared`.
    Run { gate: Gate, prepared: P },
}

impl<P> Plan<P> {
    pub fn run(gate: Gate, prepared: P) -> Self {
        Plan::Run { gate, prepared }
    }
}

/// A built-in tool, as the dispatcher drives it.
pub trait Tool {
    /// The arguments, deserialized after the schema check.
    type Args: DeserializeOwned;
    /// What plan hands on to review and execute.
    type Prepared: Send;

    /// Pure: no I/O except resolving paths and checking the walls. Says
    /// what must be approved, or ends the call early.
    fn plan(env: &ToolEnv<'_>, args: Self::Args) -> Plan<Self::Prepared>;

    /// After the plan's approvals: read-only inspection that may find a
    /// further approval (or end the call). Most tools have none.
    fn review(
        env: &ToolEnv<'_>,
        prepared: Self::Prepared,
    ) -> impl Future<Output = Plan<Self::Prepared>> + Send {
        let _ = env;
        async move { Plan::run(Gate::none(), prepared) }
    }

    /// The effect, once every approval is granted.
    fn execute(
        env: &ToolEnv<'_>,
        prepared: Self::Prepared,
    ) -> impl Future<Output = ToolOutcome> + Send;
}

/// Deserialize a call's arguments; a failure is an `invalid` outcome naming
/// the field.
pub fn parse_args<A: DeserializeOwned>(tool: &str, args: &Value) -> Result<A, ToolOutcome> {
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let message = if path == "." {
            format!("invalid arguments for {tool}: {}", e.inner())
        } else {
            format!("invalid arguments for {tool}: {path}: {}", e.inner())
        };
        ToolOutcome::error(ToolStatus::Invalid, message)
    })
}

/// An optional integer with Python-like leniency: integral or fractional
/// numbers (truncated) and numeric strings; `null` is absent.
pub fn lenient_int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_i64().or_else(|| n.as_f64().map(|f| f as i64))),
        Some(Value::String(s)) => s
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| D::Error::custom(format!("expected an integer, not {s:?}"))),
        Some(other) => Err(D::Error::custom(format!(
            "expected an integer, not {other}"
        ))),
    }
}

/// What a tool sees: its call context, its catalog entry, the walls and the
/// host's services.
pub struct ToolEnv<'a> {
    pub ctx: &'a CallContext,
    pub call_id: &'a str,
    pub entry: &'a ResolvedEntry,
    pub catalog: &'a ResolvedCatalog,
    /// The call's raw arguments: their secrets seed every redaction of work
    /// the call leaves behind (background tasks, live output).
    pub args: &'a Value,
    pub walls: &'a Walls,
    /// The host's home folder (runtime state, artifacts).
    pub home: &'a Path,
    pub host: &'a dyn Host,
}

impl ToolEnv<'_> {
    pub fn workspace(&self) -> &Path {
        &self.ctx.workspace
    }

    pub fn session_state_dir(&self) -> PathBuf {
        self.ctx.state_dir.clone()
    }

    /// The host's storage quota (artifacts and task logs).
    pub fn storage_quota(&self) -> &crate::exec::StorageQuota {
        &self.walls.quota
    }

    /// Who owns what the server writes into this call's workspace: the
    /// tenant's sandbox uid on a root server, so its confined commands can
    /// change it too; `None` keeps the server's user.
    pub fn sandbox_owner(&self) -> Option<(u32, u32)> {
        self.walls
            .sandbox
            .workspace_owner(self.ctx.scope.tenant().as_str())
    }
}

#[cfg(test)]
#[path = "contract_tests.rs"]
mod tests;

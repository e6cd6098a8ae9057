//! The tool contract the dispatcher drives. A tool never asks for approval
//! and never sees the dispatcher: it has typed arguments ([`Tool::Args`],
//! deserialized after the schema check), a pure [`Tool::plan`] that says
//! what must be approved (or answers early), an optional read-only
//! [`Tool::review`] for what can only be known after looking (a second
//! approval), and [`Tool::execute`], the effect. The dispatcher asks, in
//! order, for every [`Approval`] a [`Gate`] names, then executes, types the
//! status, redacts and emits.
//!
//! The host services an effect may need (background tasks, live output,
//! history, clarification) reach the tool through [`Host`], which the
//! dispatcher implements; the types here depend on nothing in `dispatch`.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::auth::PrincipalScope;
use crate::catalog::{ResolvedCatalog, ResolvedEntry};
use crate::ids::{SessionId, TurnId};
use crate::policy::approval_policy::{ApprovalPolicy, Risk};
pub use crate::walls::Walls;

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

/// Everything a call may rely on, built by the host for one turn.
#[derive(Clone)]
pub struct CallContext {
    pub scope: PrincipalScope,
    pub session_id: SessionId,
    pub turn_id: TurnId,
    /// The session's workspace folder (canonical).
    pub workspace: PathBuf,
    /// Private per-session runtime state (todo list, …).
    pub state_dir: PathBuf,
    /// Identity of the core's effective configuration; approvals cached for
    /// the session die when it changes.
    pub core_fingerprint: String,
    /// The core's skills as the turn's revision holds them (read when the
    /// revision was loaded, so a change shows from the next turn only).
    pub skills: Arc<Vec<SkillDoc>>,
    /// The session's core, as the turn loaded it.
    pub core: Arc<CoreRef>,
    pub cancel: CancellationToken,
    /// A chat channel's turn: its principal reads only this session's
    /// history ([`crate::history::Reach::bound`]).
    pub bound_session: bool,
    /// Where this session sits in a delegation chain (`delegate_task`).
    pub delegation: crate::tasks::children::Delegation,
}

/// A core's skills and which core a turn runs are the core's: they live
/// there and are re-exported for the tools that read them.
pub use crate::core::skill_doc::{CoreRef, SkillDoc, MAX_SKILL_BYTES};

/// A user's answer to a clarifying question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Answered(String),
    TimedOut,
    Cancelled,
}

/// The work of a background task.
pub type TaskJob = Box<
    dyn FnOnce(crate::tasks::TaskHandle) -> BoxFuture<'static, crate::tasks::TaskOutcome> + Send,
>;

/// Host services an effect may use; the dispatcher implements them.
pub trait Host: Send + Sync {
    /// Start a durable background task of this call's principal and
    /// session; its summary, log and result are redacted knowing the
    /// secrets of the call's arguments.
    fn start_task<'a>(
        &'a self,
        call: &'a ToolEnv<'a>,
        kind: &'static str,
        summary: String,
        options: crate::tasks::StartOptions,
        job: TaskJob,
    ) -> BoxFuture<'a, Result<String, crate::tasks::StartError>>;

    /// Where child agents run; `None` when this host cannot run them.
    fn children(&self) -> Option<Arc<dyn crate::tasks::children::ChildRunner>>;

    /// The schedules service; `None` when this host has none.
    fn schedules(&self) -> Option<crate::tasks::schedules::Schedules>;

    /// Why a background task of this principal would be refused now.
    fn background_over_cap(&self, scope: &PrincipalScope) -> Option<String>;

    /// The caller's tasks of this call's session, newest first.
    fn session_tasks<'a>(
        &'a self,
        ctx: &'a CallContext,
    ) -> BoxFuture<'a, crate::error::Result<Vec<crate::store::TaskRow>>>;

    /// One of the caller's tasks; anyone else's is `NotFound`, like a random id.
    fn task<'a>(
        &'a self,
        scope: &'a PrincipalScope,
        id: &'a str,
    ) -> BoxFuture<'a, crate::error::Result<crate::store::TaskRow>>;

    /// Cancel one of the caller's tasks wherever it runs; the task afterwards.
    fn cancel_task<'a>(
        &'a self,
        scope: &'a PrincipalScope,
        id: &'a str,
    ) -> BoxFuture<'a, crate::error::Result<crate::store::TaskRow>>;

    /// Wait for one of the caller's tasks to settle: `(task, timed_out)`.
    fn wait_task<'a>(
        &'a self,
        scope: &'a PrincipalScope,
        id: &'a str,
        timeout: std::time::Duration,
    ) -> BoxFuture<'a, crate::error::Result<(crate::store::TaskRow, bool)>>;

    /// Best-effort live output of this call as `tool.output` events,
    /// redacted line by line.
    fn output_sink(&self, call: &ToolEnv<'_>) -> tokio::sync::mpsc::Sender<(&'static str, String)>;

    /// History search inside a reach the tool built from the call's scope.
    fn search_history<'a>(
        &'a self,
        reach: &'a crate::history::Reach,
        request: &'a crate::history::Request,
    ) -> BoxFuture<'a, Result<crate::history::Page, crate::history::SearchError>>;

    /// Ask the user; the turn waits.
    fn clarify<'a>(
        &'a self,
        ctx: &'a CallContext,
        question: &'a str,
        choices: &'a [String],
    ) -> BoxFuture<'a, crate::error::Result<Answer>>;

    /// Make `edits` to the call's core as one new live revision, checked on
    /// a staged copy (refused when the core would no longer load). The
    /// running turn keeps the core it loaded; the next turn sees the change.
    /// Only for a call whose approvals the dispatcher has already passed.
    fn change_core<'a>(
        &'a self,
        ctx: &'a CallContext,
        edits: Vec<(crate::core::path::CoreFilePath, crate::core::edit::Edit)>,
        message: String,
    ) -> BoxFuture<'a, Result<crate::core::edit::CoreChange, crate::core::edit::CoreEditError>>;

    /// Roll the call's tenant's agents tree back to `target` (a new commit),
    /// holding the call's core; `allow_session` grants of every changed
    /// core die. Only for a call whose approvals have been passed.
    fn rollback_core<'a>(
        &'a self,
        ctx: &'a CallContext,
        target: crate::core::path::RevisionSpec,
        reason: Option<String>,
    ) -> BoxFuture<'a, Result<crate::core::rollback::CoreRollback, crate::core::edit::CoreEditError>>;

    /// One evolve run action in the call's tenant's agents tree; a promote
    /// drops the `allow_session` grants of every changed core and of the
    /// call's core. Only for a call whose approvals have been passed.
    fn evolve_run<'a>(
        &'a self,
        ctx: &'a CallContext,
        op: crate::core::runs::RunOp,
    ) -> BoxFuture<'a, Result<crate::core::runs::RunDone, crate::core::edit::CoreEditError>>;
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
    /// The warm authored-tool runners (and their per-call timeout).
    pub runners: &'a crate::authored::Runners,
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
pub(crate) mod testing {
    //! A fixture for plan tests: a call context in a temporary workspace,
    //! a catalog of the built-ins and a host whose services are refused.

    use super::*;
    use crate::catalog::CatalogInput;
    use crate::policy::capabilities::CapabilityGrants;

    pub struct Fixture {
        /// The server's home; the workspace is `ws` under it.
        pub dir: tempfile::TempDir,
        /// An operator read root (`--read-root`), outside the home.
        pub read_root: tempfile::TempDir,
        pub ctx: CallContext,
        pub catalog: ResolvedCatalog,
        pub walls: Walls,
        pub runners: crate::authored::Runners,
        pub host: RefusingHost,
    }

    /// A host that starts nothing; `over_cap` is what the task cap says.
    pub struct RefusingHost {
        pub over_cap: Option<String>,
    }

    impl Host for RefusingHost {
        fn start_task<'a>(
            &'a self,
            _: &'a ToolEnv<'a>,
            _: &'static str,
            _: String,
            _: crate::tasks::StartOptions,
            _: TaskJob,
        ) -> BoxFuture<'a, Result<String, crate::tasks::StartError>> {
            Box::pin(async { Err(crate::tasks::StartError::Limit("test host".into())) })
        }
        fn children(&self) -> Option<Arc<dyn crate::tasks::children::ChildRunner>> {
            None
        }
        fn schedules(&self) -> Option<crate::tasks::schedules::Schedules> {
            None
        }
        fn background_over_cap(&self, _: &PrincipalScope) -> Option<String> {
            self.over_cap.clone()
        }
        fn session_tasks<'a>(
            &'a self,
            _: &'a CallContext,
        ) -> BoxFuture<'a, crate::error::Result<Vec<crate::store::TaskRow>>> {
            Box::pin(async { Ok(Vec::new()) })
        }
        fn task<'a>(
            &'a self,
            _: &'a PrincipalScope,
            _: &'a str,
        ) -> BoxFuture<'a, crate::error::Result<crate::store::TaskRow>> {
            Box::pin(async { Err(crate::error::Error::NotFound) })
        }
        fn cancel_task<'a>(
            &'a self,
            _: &'a PrincipalScope,
            _: &'a str,
        ) -> BoxFuture<'a, crate::error::Result<crate::store::TaskRow>> {
            Box::pin(async { Err(crate::error::Error::NotFound) })
        }
        fn wait_task<'a>(
            &'a self,
            _: &'a PrincipalScope,
            _: &'a str,
            _: std::time::Duration,
        ) -> BoxFuture<'a, crate::error::Result<(crate::store::TaskRow, bool)>> {
            Box::pin(async { Err(crate::error::Error::NotFound) })
        }
        fn output_sink(
            &self,
            _: &ToolEnv<'_>,
        ) -> tokio::sync::mpsc::Sender<(&'static str, String)> {
            tokio::sync::mpsc::channel(1).0
        }
        fn search_history<'a>(
            &'a self,
            _: &'a crate::history::Reach,
            _: &'a crate::history::Request,
        ) -> BoxFuture<'a, Result<crate::history::Page, crate::history::SearchError>> {
            Box::pin(async {
                Ok(crate::history::Page::Hits {
                    hits: Vec::new(),
                    next_offset: None,
                })
            })
        }
        fn clarify<'a>(
            &'a self,
            _: &'a CallContext,
            _: &'a str,
            _: &'a [String],
        ) -> BoxFuture<'a, crate::error::Result<Answer>> {
            Box::pin(async { Ok(Answer::TimedOut) })
        }
        fn change_core<'a>(
            &'a self,
            _: &'a CallContext,
            _: Vec<(crate::core::path::CoreFilePath, crate::core::edit::Edit)>,
            _: String,
        ) -> BoxFuture<'a, Result<crate::core::edit::CoreChange, crate::core::edit::CoreEditError>>
        {
            Box::pin(async { Err(crate::core::edit::CoreEditError::NotFound) })
        }
        fn rollback_core<'a>(
            &'a self,
            _: &'a CallContext,
            _: crate::core::path::RevisionSpec,
            _: Option<String>,
        ) -> BoxFuture<
            'a,
            Result<crate::core::rollback::CoreRollback, crate::core::edit::CoreEditError>,
        > {
            Box::pin(async { Err(crate::core::edit::CoreEditError::NotFound) })
        }
        fn evolve_run<'a>(
            &'a self,
            _: &'a CallContext,
            _: crate::core::runs::RunOp,
        ) -> BoxFuture<'a, Result<crate::core::runs::RunDone, crate::core::edit::CoreEditError>>
        {
            Box::pin(async { Err(crate::core::edit::CoreEditError::NotFound) })
        }
    }

    /// A fixture whose core grants `grants` and has every built-in.
    pub fn fixture(grants: &[&str]) -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let read_root = tempfile::tempdir().expect("tempdir");
        let home = dir.path().canonicalize().expect("canonical");
        let workspace = home.join("ws");
        std::fs::create_dir_all(&workspace).expect("workspace");
        let scope = PrincipalScope::new(
            crate::ids::TenantId::parse("t1").expect("tenant"),
            crate::ids::PrincipalId::parse("p1").expect("principal"),
            crate::auth::Role::Member,
        );
        let ctx = CallContext {
            scope,
            session_id: SessionId::new(),
            turn_id: TurnId::new(),
            workspace,
            state_dir: home.join("state"),
            core_fingerprint: "fp".into(),
            skills: Arc::new(Vec::new()),
            core: Arc::new(CoreRef {
                id: crate::ids::CoreId::parse("core").expect("core id"),
                dir: home.join("core"),
                skills_root: "agent/skills".into(),
            }),
            cancel: CancellationToken::new(),
            bound_session: false,
            delegation: Default::default(),
        };
        let input = CatalogInput {
            core_id: "core".into(),
            builtin_tools: crate::catalog::IMPLEMENTED
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            grants: CapabilityGrants::new(grants.iter().map(|g| (*g).to_owned()), []),
            ..CatalogInput::default()
        };
        let catalog = ResolvedCatalog::build(&input);
        let walls = Walls {
            sandbox: crate::exec::sandbox::Sandbox::detect(
                crate::exec::sandbox::Settings {
                    enabled: false,
                    ..Default::default()
                },
                &home,
                None,
            ),
            files: crate::policy::file_walls::FileWalls::new(
                home.clone(),
                vec![read_root.path().canonicalize().expect("canonical")],
                None,
            ),
            terminal_network: true,
            quota: crate::exec::StorageQuota::new(1 << 20, 1 << 30),
            mcp_idle_timeout: crate::mcp::runtime::DEFAULT_IDLE_TIMEOUT,
            outbound: crate::net::Outbound::new(crate::net::OutboundSettings {
                dns: crate::net::DnsSettings::Servers(vec![std::net::SocketAddr::from((
                    [127, 0, 0, 1],
                    9,
                ))]),
                ..Default::default()
            }),
        };
        Fixture {
            dir,
            read_root,
            ctx,
            catalog,
            walls,
            runners: crate::authored::Runners::new(std::time::Duration::from_secs(5)),
            host: RefusingHost { over_cap: None },
        }
    }

    impl Fixture {
        /// The environment of one call of `tool` with `args`.
        pub fn env<'a>(&'a self, tool: &str, args: &'a Value) -> ToolEnv<'a> {
            ToolEnv {
                ctx: &self.ctx,
                call_id: "c1",
                entry: self.catalog.resolve(tool).expect("tool in the catalog"),
                catalog: &self.catalog,
                args,
                walls: &self.walls,
                runners: &self.runners,
                home: self.dir.path(),
                host: &self.host,
            }
        }

        pub fn workspace(&self) -> &Path {
            &self.ctx.workspace
        }
    }

    /// Plan `T` with `args`; `Err` carries an early outcome.
    pub fn plan<T: Tool>(
        f: &Fixture,
        tool: &str,
        args: Value,
    ) -> Result<(Gate, T::Prepared), ToolOutcome> {
        let env = f.env(tool, &args);
        let typed = parse_args::<T::Args>(tool, &args)?;
        match T::plan(&env, typed) {
            Plan::Done(o) => Err(o),
            Plan::Run { gate, prepared } => Ok((gate, prepared)),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::{lenient_int, parse_args, ToolStatus};

    #[derive(Debug, Deserialize)]
    struct Args {
        #[serde(default)]
        name: Option<String>,
        #[serde(default, deserialize_with = "lenient_int")]
        n: Option<i64>,
        #[serde(default)]
        items: Vec<Item>,
    }

    #[derive(Debug, Deserialize)]
    struct Item {
        #[serde(default)]
        flag: bool,
    }

    #[test]
    fn integers_are_lenient() {
        for (v, want) in [
            (json!({}), None),
            (json!({"n": null}), None),
            (json!({"n": 5}), Some(5)),
            (json!({"n": -2}), Some(-2)),
            (json!({"n": 7.9}), Some(7)),
            (json!({"n": " 12 "}), Some(12)),
        ] {
            let a: Args = parse_args("t", &v).unwrap();
            assert_eq!(a.n, want, "{v}");
        }
    }

    #[test]
    fn failures_are_invalid_and_name_the_field() {
        for (v, field) in [
            (json!({"name": 1}), "name"),
            (json!({"n": "twelve"}), "n"),
            (json!({"n": [1]}), "n"),
            (
                json!({"items": [{"flag": true}, {"flag": "yes"}]}),
                "items[1].flag",
            ),
        ] {
            let o = parse_args::<Args>("tool_x", &v).unwrap_err();
            assert_eq!(o.status, ToolStatus::Invalid);
            let msg = o.content.as_str().unwrap();
            assert!(
                msg.starts_with(&format!("invalid arguments for tool_x: {field}: ")),
                "{msg}"
            );
        }
        let o = parse_args::<Args>("tool_x", &json!("text")).unwrap_err();
        assert!(o
            .content
            .as_str()
            .unwrap()
            .starts_with("invalid arguments for tool_x: "));
        let a: Args = parse_args("t", &json!({"name": "x", "items": [{"flag": true}]})).unwrap();
        assert_eq!(a.name.as_deref(), Some("x"));
        assert!(a.items[0].flag);
    }
}

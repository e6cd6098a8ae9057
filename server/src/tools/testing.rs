//! A fixture for plan tests: a call context in a temporary workspace,
//! a catalog of the built-ins and a host whose services are refused.

use std::path::Path;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::context::CallContext;
use super::contract::{parse_args, Gate, Plan, Tool, ToolEnv, ToolOutcome};
use super::host::{
    Answer, ClarifyHost, CoreHost, HistoryHost, OutputHost, RunnerHost, TaskHost, TaskJob,
};
use crate::auth::PrincipalScope;
use crate::catalog::{CatalogInput, ResolvedCatalog};
use crate::core::skill_doc::CoreRef;
use crate::ids::{SessionId, TurnId};
use crate::policy::capabilities::CapabilityGrants;
use crate::walls::Walls;

pub struct Fixture {
    /// The server's home; the workspace is `ws` under it.
    pub dir: tempfile::TempDir,
    /// An operator read root (`--read-root`), outside the home.
    pub read_root: tempfile::TempDir,
    pub ctx: CallContext,
    pub catalog: ResolvedCatalog,
    pub walls: Walls,
    pub host: RefusingHost,
}

/// A host that starts nothing; `over_cap` is what the task cap says.
pub struct RefusingHost {
    pub over_cap: Option<String>,
    pub runners: crate::authored::Runners,
}

impl TaskHost for RefusingHost {
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
}

impl OutputHost for RefusingHost {
    fn output_sink(&self, _: &ToolEnv<'_>) -> tokio::sync::mpsc::Sender<(&'static str, String)> {
        tokio::sync::mpsc::channel(1).0
    }
}

impl HistoryHost for RefusingHost {
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
}

impl ClarifyHost for RefusingHost {
    fn clarify<'a>(
        &'a self,
        _: &'a CallContext,
        _: &'a str,
        _: &'a [String],
    ) -> BoxFuture<'a, crate::error::Result<Answer>> {
        Box::pin(async { Ok(Answer::TimedOut) })
    }
}

impl CoreHost for RefusingHost {
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
    ) -> BoxFuture<'a, Result<crate::core::rollback::CoreRollback, crate::core::edit::CoreEditError>>
    {
        Box::pin(async { Err(crate::core::edit::CoreEditError::NotFound) })
    }
    fn evolve_run<'a>(
        &'a self,
        _: &'a CallContext,
        _: crate::core::runs::RunOp,
    ) -> BoxFuture<'a, Result<crate::core::runs::RunDone, crate::core::edit::CoreEditError>> {
        Box::pin(async { Err(crate::core::edit::CoreEditError::NotFound) })
    }
}

impl RunnerHost for RefusingHost {
    fn pool(&self) -> &crate::authored::Runners {
        &self.runners
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
        channel: String::new(),
        delegation: Default::default(),
    };
    let input = CatalogInput {
        core_id: "core".into(),
        builtin_tools: crate::catalog::builtins()
            .iter()
            .map(|s| s.name.clone())
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
            &[],
        ),
        files: crate::policy::file_walls::FileWalls::new(
            home.clone(),
            vec![read_root.path().canonicalize().expect("canonical")],
            vec![],
        ),
        terminal_network: true,
        credentials: None,
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
        host: RefusingHost {
            over_cap: None,
            runners: crate::authored::Runners::new(std::time::Duration::from_secs(5)),
        },
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

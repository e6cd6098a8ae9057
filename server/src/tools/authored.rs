//! The `Tool` adapter of authored tools: plans the generic per-call
//! approval, then runs the module in the tenant's warm confined runner
//! ([`crate::authored`]).

use serde_json::{json, Value};

use super::contract::{Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};
use crate::authored::runner::{HostAnswer, HostAsk};
use crate::home::HomeLayout;

/// One call of an authored tool.
pub struct AuthoredCall;

impl Tool for AuthoredCall {
    type Args = Value;
    type Prepared = Value;

    fn plan(_env: &ToolEnv<'_>, args: Value) -> Plan<Value> {
        // The generic per-call approval: the entry's effective risk and
        // policy, the arguments shown as a bounded, redacted preview.
        Plan::run(Gate::PerCall, args)
    }

    async fn execute(env: &ToolEnv<'_>, args: Value) -> ToolOutcome {
        let Some(spec) = env.entry.authored.clone() else {
            return ToolOutcome::error(ToolStatus::NotFound, "not an authored tool");
        };
        let ctx = env.ctx;
        let layout = HomeLayout::new(env.home);
        let tenant = ctx.scope.tenant();
        // A folder name for this core revision (the fingerprint is opaque text).
        let revision = crate::redact::redactor::fingerprint(&ctx.core_fingerprint)
            .trim_start_matches("sha256:")
            .to_owned();
        let revision: String = revision
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(32)
            .collect();
        let grants = env.catalog.grants();
        let allow = |capability: &str| {
            grants.allows(capability, Some(&spec.slot_path), &spec.capabilities, true)
        };
        let invocation = crate::authored::runner::Invocation {
            sandbox: &env.walls.sandbox,
            tenant: tenant.as_str(),
            revision: &revision,
            runtime_dir: layout.authored_runtime(tenant, &revision),
            core_root: layout.core_runtime_root(tenant, &ctx.core.id),
            workspace: env.workspace(),
            home: layout.terminal_home(tenant, ctx.scope.principal()),
            tmp: layout.terminal_tmp(tenant, ctx.scope.principal()),
            network: env.walls.terminal_network && !env.catalog.terminal_network_off(),
            name: &env.entry.name,
            spec: &spec,
            turn: json!({"session_id": ctx.session_id, "turn_id": ctx.turn_id,
                "core_revision": ctx.core_fingerprint}),
            args: &args,
            timeout: env.host.runners().pool().timeout(),
        };
        let output = env.host.output().output_sink(env);
        // A tool's runner may ask the host for HTTP (urllib) only; the
        // slot clients (`ctx.state`, `ctx.tools`) are not a tool's.
        let outbound = env.walls.outbound.clone();
        let credentials = env.walls.credentials.clone();
        let (tenant_id, core_dir, slot_path) =
            (tenant.clone(), ctx.core.dir.clone(), spec.slot_path.clone());
        let host = move |ask: HostAsk| -> futures_util::future::BoxFuture<'_, HostAnswer> {
            let outbound = outbound.clone();
            let (credentials, tenant_id, core_dir, slot_path) = (
                credentials.clone(),
                tenant_id.clone(),
                core_dir.clone(),
                slot_path.clone(),
            );
            Box::pin(async move {
                match ask {
                    HostAsk::Http(ask) => {
                        let opened = open_credentials(
                            credentials.as_ref(),
                            &tenant_id,
                            &core_dir,
                            &slot_path,
                            &ask,
                        )
                        .await;
                        crate::authored::http::fetch(&outbound, ask, &opened).await
                    }
                    HostAsk::State { .. } | HostAsk::Tool { .. } => Err((
                        "unavailable",
                        "this client is offered to input and output slots only".to_owned(),
                    )),
                }
            })
        };
        let mut outcome = env
            .host
            .runners()
            .pool()
            .call(invocation, &allow, &host, output, &ctx.cancel)
            .await;
        if outcome.data.is_null() {
            outcome.data = json!({"tool": env.entry.name, "slot_path": spec.slot_path});
        }
        outcome
    }
}

/// The tenant credentials `ask` names that this tool may use: those the
/// package that installed the tool's folder declares (`packages.yaml`);
/// any other name stays closed, and the bridge refuses the request.
async fn open_credentials(
    credentials: Option<&crate::sealing::Credentials>,
    tenant: &crate::ids::TenantId,
    core_dir: &std::path::Path,
    slot_path: &str,
    ask: &crate::authored::http::HttpAsk,
) -> std::collections::BTreeMap<String, String> {
    let mut opened = std::collections::BTreeMap::new();
    let wanted = crate::authored::http::credential_names(ask);
    let Some(credentials) = credentials.filter(|_| !wanted.is_empty()) else {
        return opened;
    };
    let files = crate::packages::plan::CoreFiles { dir: core_dir };
    let allowed = match files.registry() {
        Ok(registry) => crate::packages::plan::credentials_of(&registry, slot_path),
        Err(_) => return opened,
    };
    for name in wanted.into_iter().filter(|n| allowed.contains(n)) {
        if let Some(value) = credentials.open(tenant, &name).await {
            opened.insert(name, value);
        }
    }
    opened
}

//! The `Tool` adapter of authored tools: plans the generic per-call
//! approval, then runs the module in the tenant's warm confined runner
//! ([`crate::authored`]).

use serde_json::{json, Value};

use super::contract::{Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};
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
        let mut outcome = env
            .host
            .runners()
            .pool()
            .call(invocation, &allow, output, &ctx.cancel)
            .await;
        if outcome.data.is_null() {
            outcome.data = json!({"tool": env.entry.name, "slot_path": spec.slot_path});
        }
        outcome
    }
}

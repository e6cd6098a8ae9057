//! Authored tools: `tool.yaml` + Python module folders of a core, called
//! through the one dispatcher like every other tool. The dispatcher has
//! already required the singular `capability` (granted by the core for the
//! tool's path, never by the tool's own `capabilities` list) before
//! [`AuthoredCall`] plans; the call then passes the entry's approval (risk
//! and policy after core metadata and the core/global approval blocks; a
//! bounded, redacted argument preview), and only then is the module
//! imported — in a confined runner ([`runner`]), speaking [`protocol`].

pub mod protocol;
pub mod runner;

use serde_json::{json, Value};

pub use runner::{HostAnswer, HostAsk, Runners, SlotRun};

use crate::home::HomeLayout;
use crate::tools::contract::{Gate, Plan, Tool, ToolEnv, ToolOutcome, ToolStatus};

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
        let invocation = runner::Invocation {
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
            timeout: env.walls.authored_timeout,
        };
        let output = env.host.output_sink(env);
        let mut outcome = env
            .walls
            .authored
            .call(invocation, &allow, output, &ctx.cancel)
            .await;
        if outcome.data.is_null() {
            outcome.data = json!({"tool": env.entry.name, "slot_path": spec.slot_path});
        }
        outcome
    }
}

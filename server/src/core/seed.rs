//! The host's own default `assistant` core, written to disk on first start.
//!
//! It uses the same on-disk format as any other core (see the module docs of
//! [`crate::core`]): `agent.yaml`, `agent/SOUL.md`, `agent/pipelines.yaml`
//! and the Python assistant's slots: `base_input`, `base_output` and the
//! `session_context` bootstrap slot (`slot.yaml` + `module.py` each, run by
//! [`crate::slots`]). No `slots.tools` root is configured, so the core has
//! no authored tools.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

/// Core-relative path and contents of every file the seed writes.
const FILES: &[(&str, &str)] = &[
    ("agent.yaml", AGENT_YAML),
    ("agent/SOUL.md", SOUL_MD),
    ("agent/pipelines.yaml", PIPELINES_YAML),
    ("agent/input/base_input/slot.yaml", BASE_INPUT_SLOT),
    (
        "agent/input/base_input/module.py",
        crate::slots::run::BASE_INPUT_PY,
    ),
    ("agent/output/base_output/slot.yaml", BASE_OUTPUT_SLOT),
    (
        "agent/output/base_output/module.py",
        crate::slots::run::BASE_OUTPUT_PY,
    ),
    (
        "agent/bootstrap/session_context/slot.yaml",
        SESSION_CONTEXT_SLOT,
    ),
    (
        "agent/bootstrap/session_context/module.py",
        SESSION_CONTEXT_PY,
    ),
];

const AGENT_YAML: &str = r#"# Default core seeded by the demiurge host. Edit freely; the host reloads it.
schema_version: 1
agent:
  id: assistant
  summary: "Default assistant core seeded by the demiurge host."
runtime:
  surface_root: agent
  max_model_steps: 90
  workspace: null
model:
  provider: auto
  model_name: null
  model_options: {}
ui:
  tool_display: null
channels: {}
slots:
  soul: agent/SOUL.md
  skills: agent/skills
  schedules: agent/schedules
  mcp: agent/mcp
tools:
  toolsets:
    - coding
    - demiurge_control
    - schedule
  metadata: {}
approval:
  default: null
  tools: {}
  capabilities: {}
  risks: {}
capabilities:
  defaults:
    fs.read:
      scope: workspace
    fs.write:
      scope: workspace
    terminal.exec:
      scope: workspace
    task.control:
      scope: session
    session.read:
      scope: session
    agents.spawn:evolver: {}
    tool.call:evolve_core: {}
    tool.call:rollback_core: {}
    network.fetch: {}
    schedule.manage:
      scope: core
  slots: {}
dependencies:
  mode: host_shared
  allow_additional_dependencies: false
"#;

const SOUL_MD: &str = r#"# assistant

You are the default assistant of a demiurge host. The host runs your turns,
keeps the conversation, calls the model and executes tools on your behalf;
every file, command or network effect goes through a host tool and may need
the user's approval.

Answer the user plainly and briefly. Reach for a tool only when it gets the
job done better than an answer from memory, and say what you did.

If the user asks you to change how you behave, call `evolve_core` with a
clear goal describing the new behaviour. If the user says your latest change
broke something, call `rollback_core`.
"#;

const PIPELINES_YAML: &str = r#"schema_version: 1
bootstrap:
  serial:
    - session_context
input:
  serial:
    - base_input
  parallel: []
output:
  serial:
    - base_output
  parallel: []
"#;

const BASE_INPUT_SLOT: &str = r#"entrypoint: module:process
description: Adds the user's message to the current turn.
failure_policy: hard
capabilities: []
"#;

const BASE_OUTPUT_SLOT: &str = r#"entrypoint: module:process
description: Hands the model's reply to the host for delivery.
failure_policy: hard
capabilities: []
"#;

const SESSION_CONTEXT_SLOT: &str = r#"entrypoint: module:process
failure_policy: soft
description: Adds default session environment context.
capabilities: []
"#;

const SESSION_CONTEXT_PY: &str = r#"import getpass


def process(ctx):
    ctx.bootstrap.add(
        "\n".join(
            [
                "Session environment:",
                f"- Workspace: `{ctx.bootstrap.workspace}`",
                f"- Current user: `{getpass.getuser()}`",
            ]
        )
    )
"#;

/// Write the default `assistant` core into `dir` (created if needed).
/// Folders are made `0700` and files `0600` (on Unix). Existing files are
/// never overwritten: a seed file that is already there fails with
/// `AlreadyExists`.
pub fn seed_assistant(dir: &Path) -> io::Result<()> {
    make_private_dir(dir)?;
    for (rel, text) in FILES {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            make_private_dir_chain(dir, parent)?;
        }
        write_private_new(&path, text)?;
    }
    Ok(())
}

/// Create `dir` (and missing ancestors) and make it private.
fn make_private_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    set_mode(dir, 0o700)
}

/// Create every folder between `base` (exclusive) and `leaf` as private.
fn make_private_dir_chain(base: &Path, leaf: &Path) -> io::Result<()> {
    let Ok(rel) = leaf.strip_prefix(base) else {
        return make_private_dir(leaf);
    };
    let mut current = base.to_path_buf();
    for part in rel.components() {
        current.push(part);
        if !current.is_dir() {
            fs::create_dir(&current)?;
            set_mode(&current, 0o700)?;
        }
    }
    Ok(())
}

fn write_private_new(path: &Path, text: &str) -> io::Result<()> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    set_mode(path, 0o600)
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_path: &Path, _mode: u32) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
#[path = "seed_tests.rs"]
mod tests;

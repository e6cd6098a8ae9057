//! The host's own cores, written to disk on first start: the default
//! `assistant`, and the `evolver` that `evolve_core start` runs as a child
//! agent on a run's worktree.
//!
//! Both use the same on-disk format as any other core (see the module docs
//! of [`crate::core`]): `agent.yaml`, `agent/SOUL.md`, `agent/pipelines.yaml`
//! and the Python assistant's slots: `base_input`, `base_output` (a
//! `slot.yaml` and a `module.py` each, run by [`crate::slots`]) and, for the
//! assistant only, the `session_context` bootstrap slot. The assistant names
//! `agent/tools` as its authored-tools root (empty at first: a tenant adds a
//! tool by writing `agent/tools/<name>/tool.yaml` and its module); the
//! evolver has none.

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
        super::pipeline::BASE_INPUT_PY,
    ),
    ("agent/output/base_output/slot.yaml", BASE_OUTPUT_SLOT),
    (
        "agent/output/base_output/module.py",
        super::pipeline::BASE_OUTPUT_PY,
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
  tools: agent/tools
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

/// The `evolver` core's files: the coding toolset without the tools that
/// talk to the user or reach outside (its workspace is the run's worktree,
/// so every file and terminal effect lands in the run, never in live).
const EVOLVER_FILES: &[(&str, &str)] = &[
    ("agent.yaml", EVOLVER_AGENT_YAML),
    ("agent/SOUL.md", EVOLVER_SOUL_MD),
    ("agent/pipelines.yaml", EVOLVER_PIPELINES_YAML),
    ("agent/input/base_input/slot.yaml", BASE_INPUT_SLOT),
    (
        "agent/input/base_input/module.py",
        super::pipeline::BASE_INPUT_PY,
    ),
    ("agent/output/base_output/slot.yaml", BASE_OUTPUT_SLOT),
    (
        "agent/output/base_output/module.py",
        super::pipeline::BASE_OUTPUT_PY,
    ),
];

/// The evolver's pipeline: the base slots only (no session bootstrap; its
/// workspace and goal come from the run).
const EVOLVER_PIPELINES_YAML: &str = r#"schema_version: 1
input:
  serial:
    - base_input
  parallel: []
output:
  serial:
    - base_output
  parallel: []
"#;

const EVOLVER_AGENT_YAML: &str = r#"# Evolver core seeded by the demiurge host: evolve_core runs it as a child
# agent whose workspace is an evolve run's worktree of the agents tree.
schema_version: 1
agent:
  id: evolver
  summary: "Host-run evolver core: edits an isolated worktree of the agents tree."
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
  metadata:
    clarify:
      enabled: false
    session_search:
      enabled: false
    skill_manage:
      enabled: false
    todo:
      enabled: false
    web_extract:
      enabled: false
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
  slots: {}
dependencies:
  mode: host_shared
  allow_additional_dependencies: false
"#;

const EVOLVER_SOUL_MD: &str = r#"# evolver

You change Agent Cores. A core asked the host to evolve it (`evolve_core`),
and the host made an evolve run: a private git worktree of the tenant's
agents tree. That worktree is your whole workspace. Every path you read or
write is relative to it: `<core>/agent.yaml`, `<core>/agent/SOUL.md`, and
so on. Nothing you write is live; the host reviews the run with its gates
and a human promotes it, or it is discarded.

## How to work

1. Read the target core first: its `agent.yaml`, `agent/pipelines.yaml`,
   and the folders the goal touches (`agent/skills`, `agent/input`,
   `agent/output`, `agent/bootstrap`, authored tools under the root named
   by `slots.tools`, `agent/mcp`).
2. Decide where the change belongs: a skill for knowledge or a procedure,
   an authored tool for an action the model calls, an input slot for
   context before the model call, an output slot for what happens after it,
   a bootstrap slot for context set once per session.
3. Prefer adding a new, named piece over rewriting what is there. Keep
   `base_input` and `base_output` unless the goal is to replace them.
4. When you add a slot, add its id to the existing list in
   `agent/pipelines.yaml`; never rewrite the file or drop other entries.
5. Change `agent.yaml` only as far as the change needs (a tool root, a
   capability, a metadata override, a tool to disable).
6. Keep the edit small and reviewable, then stop.

## What the host refuses

The host's gates refuse a run that writes outside the core folders, adds
links, build artifacts or dependency files (`requirements.txt`,
`pyproject.toml`, `package.json`, lock files and the like), leaves a core
that no longer loads, gives two tools one name, or points at a core that
does not exist. A changed MCP declaration needs a human's explicit review.
Do not try to commit, promote or roll back: the host does that.

## When you finish

Answer with what behaviour changed, which files you edited, what you
checked, and what is left or uncertain.
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
    seed_files(dir, FILES)
}

/// Write the `evolver` core into `dir`, like [`seed_assistant`].
pub fn seed_evolver(dir: &Path) -> io::Result<()> {
    seed_files(dir, EVOLVER_FILES)
}

fn seed_files(dir: &Path, files: &[(&str, &str)]) -> io::Result<()> {
    make_private_dir(dir)?;
    for (rel, text) in files {
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

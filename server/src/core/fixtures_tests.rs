//! Test fixtures: cores written into temp folders in the same on-disk format
//! as the Python project's example cores (`agents/assistant`,
//! `agents/evolver`, `package-repository/core/tts_summarizer`).

use std::fs;
use std::path::Path;

use super::loader::{load_core, CoreError, LoadedCore};

pub(crate) const CODING: &[&str] = &[
    "read_file",
    "write_file",
    "patch",
    "search_files",
    "terminal",
    "web_extract",
    "skills_list",
    "skill_view",
    "skill_manage",
    "todo",
    "clarify",
    "session_search",
];
pub(crate) const DEMIURGE_CONTROL: &[&str] = &[
    "tools_list",
    "task_list",
    "delegate_task",
    "task_status",
    "task_control",
    "yield_until",
    "evolve_core",
    "rollback_core",
];
pub(crate) const SCHEDULE: &[&str] = &["schedule_manage"];

/// The host's toolset registry as the loader sees it.
pub(crate) fn toolsets(name: &str) -> Option<Vec<String>> {
    let names = match name {
        "coding" => CODING,
        "demiurge_control" => DEMIURGE_CONTROL,
        "schedule" => SCHEDULE,
        _ => return None,
    };
    Some(names.iter().map(|s| (*s).to_owned()).collect())
}

pub(crate) fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(path, text).unwrap();
}

pub(crate) fn load(dir: &Path, id: &str) -> Result<LoadedCore, CoreError> {
    load_core(dir, id, &toolsets)
}

/// Load, expect failure, and check the message is a single line.
pub(crate) fn load_err(dir: &Path, id: &str) -> CoreError {
    match load(dir, id) {
        Ok(core) => panic!("core {id} loaded but should not have: {core:?}"),
        Err(e) => {
            let text = e.to_string();
            assert!(!text.contains('\n'), "multi-line error: {text}");
            assert!(
                text.starts_with(&e.file),
                "error must start with the file: {text}"
            );
            e
        }
    }
}

pub(crate) const ASSISTANT_AGENT_YAML: &str = r#"schema_version: 1
agent:
  id: assistant
  summary: "Assistant core used by the loader tests."
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
channels:
  telegram:
    enabled: false
    bot_token_env: "TEST_TELEGRAM_TOKEN"
    bot_token: null
    bot_username: null
    allowed_users: []
    allowed_chats: []
    unauthorized_response: brief
    poll_timeout: 30
    message_format: markdown_v2
    register_commands: true
    send_typing: true
    rich_messages: true
    reply_to_mode: "off"
  webhook:
    enabled: false
    host: 127.0.0.1
    port: 8765
    path: /demiurge
    token_env: "TEST_WEBHOOK_TOKEN"
    token: null
    allow_unauthenticated: false
    callback_url_env: null
    callback_url: null
    allow_private_callback_urls: false
    allowed_sources: []
    delivery_targets: {}
  slack:
    enabled: false
    bot_token_env: "TEST_SLACK_BOT_TOKEN"
    bot_token: null
    signing_secret_env: "TEST_SLACK_SIGNING_SECRET"
    signing_secret: null
    host: 127.0.0.1
    port: 8766
    path: /slack/events
    bot_user_id: null
    app_mentions_only: true
    allowed_teams: []
    allowed_channels: []
    allowed_users: []
  mattermost:
    enabled: false
    base_url: null
    token_env: "TEST_MATTERMOST_TOKEN"
    token: null
    incoming_webhook_url_env: null
    incoming_webhook_url: null
    webhook_token_env: "TEST_MATTERMOST_WEBHOOK_TOKEN"
    webhook_token: null
    host: 127.0.0.1
    port: 8767
    path: /mattermost
    allowed_channels: []
    allowed_users: []
  matrix:
    enabled: false
    homeserver_url: null
    access_token_env: "TEST_MATRIX_TOKEN"
    access_token: null
    user_id: null
    allowed_rooms: []
    poll_timeout: 30
  email:
    enabled: false
    smtp_host: null
    smtp_port: 587
    smtp_starttls: true
    smtp_username_env: "TEST_SMTP_USER"
    smtp_password_env: "TEST_SMTP_PASSWORD"
    smtp_username: null
    smtp_password: null
    imap_host: null
    imap_port: 993
    imap_username_env: "TEST_IMAP_USER"
    imap_password_env: "TEST_IMAP_PASSWORD"
    imap_username: null
    imap_password: null
    mailbox: INBOX
    from_address: null
    allowed_senders: []
    allowed_recipients: []
    trust_from_headers: false
    poll_interval: 30
slots:
  soul: agent/SOUL.md
  input: agent/input
  output: agent/output
  tools: agent/tools
  skills: agent/skills
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
      max_chars_per_call: 20000
    fs.write:
      scope: workspace
    terminal.exec:
      scope: workspace
    task.control:
      scope: session
    session.read:
      scope: session
    agents.spawn:evolver:
      max_children_per_turn: 4
    tool.call:evolve_core:
      max_calls_per_turn: 1
    tool.call:rollback_core:
      max_calls_per_turn: 1
    network.fetch:
      requires_approval: true
    schedule.manage:
      scope: core
dependencies:
  mode: host_shared
  allow_additional_dependencies: false
"#;

pub(crate) const ASSISTANT_PIPELINES: &str = r#"schema_version: 1
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

pub(crate) const ECHO_TOOL_YAML: &str = r#"entrypoint: module:execute
description: "Repeats its text argument back."
input_schema:
  type: object
  properties:
    text:
      type: string
  additionalProperties: false
capabilities: []
"#;

pub(crate) fn slot_yaml(failure_policy: &str, description: &str) -> String {
    format!(
        "entrypoint: module:process\nfailure_policy: {failure_policy}\ndescription: {description}\ncapabilities: []\n"
    )
}

/// Like `agents/assistant`: big `channels:` block, `approval:` nulls, a
/// bootstrap slot, base input/output slots and the authored `echo` tool.
pub(crate) fn assistant_core(dir: &Path) {
    write(dir, "agent.yaml", ASSISTANT_AGENT_YAML);
    write(
        dir,
        "agent/SOUL.md",
        "# test assistant\n\nYou help with tests.\n",
    );
    write(dir, "agent/pipelines.yaml", ASSISTANT_PIPELINES);
    write(
        dir,
        "agent/bootstrap/session_context/slot.yaml",
        &slot_yaml("soft", "Adds session context."),
    );
    write(
        dir,
        "agent/bootstrap/session_context/module.py",
        "def process(ctx):\n    pass\n",
    );
    write(
        dir,
        "agent/input/base_input/slot.yaml",
        &slot_yaml("hard", "Appends the user's text."),
    );
    write(
        dir,
        "agent/input/base_input/module.py",
        "def process(ctx):\n    pass\n",
    );
    write(
        dir,
        "agent/output/base_output/slot.yaml",
        &slot_yaml("hard", "Delivers the reply."),
    );
    write(
        dir,
        "agent/output/base_output/module.py",
        "def process(ctx):\n    pass\n",
    );
    write(dir, "agent/tools/echo/tool.yaml", ECHO_TOOL_YAML);
    write(
        dir,
        "agent/tools/echo/module.py",
        "def execute(ctx, args):\n    return args\n",
    );
}

pub(crate) const EVOLVER_AGENT_YAML: &str = r#"schema_version: 1
agent:
  id: evolver
  summary: "Evolver-like core for loader tests."
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
  input: agent/input
  output: agent/output
  tools: agent/tools
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
    fs.read: {}
    fs.write: {}
    terminal.exec: {}
    task.control: {}
dependencies:
  mode: host_shared
  allow_additional_dependencies: false
"#;

pub(crate) const NO_BOOTSTRAP_PIPELINES: &str = r#"schema_version: 1
bootstrap:
  serial: []
input:
  serial:
  - base_input
  parallel: []
output:
  serial:
  - base_output
  parallel: []
"#;

/// Like `agents/evolver`: coding only, `tools.metadata` disabling five tools,
/// no bootstrap slot, `slots.tools` set but no tools folder.
pub(crate) fn evolver_core(dir: &Path) {
    write(dir, "agent.yaml", EVOLVER_AGENT_YAML);
    write(
        dir,
        "agent/SOUL.md",
        "# test evolver\n\nYou edit worktrees.\n",
    );
    write(dir, "agent/pipelines.yaml", NO_BOOTSTRAP_PIPELINES);
    write(
        dir,
        "agent/input/base_input/slot.yaml",
        &slot_yaml("hard", "Appends the user's text."),
    );
    write(
        dir,
        "agent/output/base_output/slot.yaml",
        &slot_yaml("hard", "Delivers the reply."),
    );
}

pub(crate) const TTS_AGENT_YAML: &str = r#"schema_version: 1
agent:
  id: tts_summarizer
  summary: "Speech summary core for loader tests."
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
  input: agent/input
  output: agent/output
  mcp: agent/mcp
  tools: agent/tools
  skills: agent/skills
tools:
  toolsets: []
  metadata: {}
approval:
  default: null
  tools: {}
  capabilities: {}
  risks: {}
capabilities:
  defaults: {}
dependencies:
  mode: host_shared
  allow_additional_dependencies: false
"#;

/// Like `package-repository/core/tts_summarizer`: `toolsets: []` and a
/// custom output slot.
pub(crate) fn tts_core(dir: &Path) {
    write(dir, "agent.yaml", TTS_AGENT_YAML);
    write(dir, "agent/SOUL.md", "Summarise replies for speech.\n");
    write(
        dir,
        "agent/pipelines.yaml",
        "schema_version: 1\nbootstrap:\n  serial: []\ninput:\n  serial:\n  - base_input\n  parallel: []\noutput:\n  serial:\n  - result_output\n  parallel: []\n",
    );
    write(
        dir,
        "agent/input/base_input/slot.yaml",
        &slot_yaml("hard", "Appends the user's text."),
    );
    write(
        dir,
        "agent/output/result_output/slot.yaml",
        &slot_yaml("hard", "Returns the spoken summary."),
    );
}

/// Replace `from` with `to` in a fixture file (the text must occur).
pub(crate) fn edit(dir: &Path, rel: &str, from: &str, to: &str) {
    let path = dir.join(rel);
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{rel} does not contain {from:?}");
    fs::write(path, text.replacen(from, to, 1)).unwrap();
}

//! demiurge: a multi-tenant host for Demiurge-style Agent Cores.
//!
//! # Layout
//!
//! Serving:
//! - [`config`]: settings from flags and `DEMIURGE_*` variables, parsed once;
//!   [`cli`] is the command line that `main.rs` runs; [`cli_reference`]
//!   renders its flags into `docs/configuration.md`.
//! - [`startup`]: builds the [`app::App`], binds the listener, serves and drains;
//!   [`bootstrap`] prepares a fresh home; [`telemetry`] sets up logging.
//! - [`home`]: [`home::HomeLayout`], the one place that names every path under the home.
//! - [`api`]: HTTP/SSE/WebSocket routes; thin: parse, call the host, map errors
//!   (`api::error`: every rejection is the JSON envelope; `api::doc`: the OpenAPI document;
//!   `api::mcp`: the session's catalog served to MCP clients at `/v1/mcp`).
//! - [`auth`]: JWT issue/verify, the immutable [`auth::PrincipalScope`], rate limits.
//! - [`sealing`]: credentials at rest (chat accounts, tenant provider keys),
//!   sealed with one server key (AEAD bound to what each belongs to).
//! - [`store`]: every SQL statement, on SQLite or PostgreSQL through one pool.
//! - [`events`]: the durable event log (persist, then fan out).
//!
//! Running agents:
//! - [`turn`]: turn execution, model providers and the model/tool loop.
//! - [`core`]: Agent Cores: manifests, loading, the per-tenant agents tree,
//!   and the slot pipeline a core declares ([`core::pipeline`], planned purely).
//! - [`catalog`]: the per-turn resolved tool catalog.
//! - [`packages`]: the Python project's package repositories (recipes,
//!   trusted sources and their pins, git sync) and installing a package
//!   into a core as one revision.
//! - [`mcp`]: MCP server declarations (`agent/mcp/<server>.yaml`): validation,
//!   tool filter and names, fingerprints, and each server's state.
//! - [`dispatch`]: the one path from a tool call to a result: checks, every
//!   approval, the adapter, typed status, redaction. The only caller of approvals
//!   ([`dispatch::approvals`], with the approver's argument preview from
//!   [`redact::preview`]).
//! - [`tools`]: built-in tool adapters, and [`tools::contract`], what every tool is
//!   to the dispatcher: typed arguments, a pure plan naming its approvals, an
//!   execute step; [`tools::host`], the host services a tool may use, one
//!   trait per concern (no adapter imports `dispatch`).
//! - [`authored`]: authored tools (`tool.yaml` + Python): the call adapter, the
//!   warm confined `python3` runners and their JSON-lines protocol, and the
//!   embedded `demiurge.sdk`.
//! - [`slots`]: agent slots (`agent/pipelines.yaml`): running the planned
//!   bootstrap, input and output lanes in the same warm runner, their
//!   `ctx.state` documents and host requests (`ctx.tools`, `ctx.skills`).
//! - [`exec`]: owned processes: groups, kills, drains, artifacts, environment, sandbox.
//! - [`walls`]: the walls every effect of a tenant stays inside (sandbox,
//!   file walls, terminal network, storage quota, the outbound client).
//! - [`channels`]: chat channels (Telegram, Slack, Discord, signed webhooks):
//!   accounts with sealed credentials, verified webhooks with a durable
//!   inbox, conversations bound to sessions, approvals in the chat, and the
//!   relay and outbox that carry replies back (platform wire rules live in
//!   the `demiurge-channels` crate).
//! - [`tasks`]: the background runtime: a durable task queue, the worker
//!   pool and leases, cross-instance signals (cancel, task ended),
//!   `yield_until` waits, completion turns, and task logs.
//! - [`history`]: session history search: reach (own sessions, a channel's
//!   bound session, an operator's audited tenant-wide search), the three modes,
//!   full-text query words; its SQL (FTS5 / tsvector) is in `store`.
//! - [`running`]: the registry of work running on this node (turns, tasks) and its shutdown.
//! - [`instances`]: the instances serving one database: each one's id and
//!   heartbeat, refusing a duplicate at start, and a survivor claiming one
//!   that went silent.
//! - [`audit`]: each tenant's audit log of who changed what, from where, as
//!   a hash chain ([`audit_chain`] its arithmetic): reading it, verifying
//!   it, pruning it behind checkpoints.
//!
//! Deciding and hiding (the pure floor: [`policy`] and [`redact`] are crates
//! of their own under `crates/`, re-exported here under these names; they
//! reach nothing of the server, a runtime, a database or the network):
//! - [`policy`] (`demiurge-policy`): pure decisions, no I/O: the command
//!   guard (`policy::shell` lexes and parses, [`policy::command_guard`]
//!   judges, one file per command family), URL policy, capabilities,
//!   approval policy and authority, workspace path rules, file walls,
//!   argument schemas, and the vocabulary they decide on ([`policy::Risk`],
//!   [`policy::ApprovalPolicy`], [`policy::Role`], [`policy::UnknownValue`]).
//! - [`redact`] (`demiurge-redact`): secret discovery and the five result
//!   views ([`redact::redactor`]: names, known secrets, text detection, argv,
//!   views), line-by-line redaction of live output, the approval argument
//!   preview.
//! - [`paths`]: the filesystem edge of the workspace rules (`..` and symlinks
//!   resolved for real); [`net`]: the network edge of the URL policy, DNS
//!   and [`net::Outbound`], the one HTTP client for tenant-driven requests.
//!
//! Small shared parts:
//! - [`wire`]: the typed vocabulary: every event kind and its payload
//!   ([`wire::events`], with how to add a kind), lifecycle states of turns,
//!   approvals and tasks, the one [`wire::Risk`] and [`wire::ApprovalPolicy`].
//! - [`ids`]: parsed identifiers; handlers never see raw id strings.
//! - [`metrics`]: Prometheus counters, gauges and histograms.
//! - [`usage`]: the usage meter: model and tool calls, process CPU and fetched
//!   bytes recorded per tenant off the turn's path, rolled up hourly;
//!   [`usage::report`] shapes reports (JSON, CSV, cost).
//! - [`error`]: the host error type, mapped to HTTP in one place (`api::error`).
//! - [`time`]: wall-clock helpers.
//!
//! # Floors
//!
//! The modules above, bottom first. A module may use those on its own floor
//! or below; `scripts/layering` (run by `scripts/test`) reads this list and
//! fails on an arrow that climbs, or on modules that import each other,
//! unless `server/layering.allow` names the arrow (today's tangles, a list
//! that may only shrink).
//!
//! 1. `ids`, `time`, `error`, `home`, `running`, `wire`, `policy`, `redact`, `audit_chain`: values, vocabulary and pure decisions
//! 2. `cli`, `cli_reference`, `telemetry`, `config`: the command line and settings
//! 3. `store`: the database, its rows and the history index's vocabulary
//! 4. `events`, `history`, `auth`, `sealing`, `bootstrap`, `metrics`, `usage`, `audit`, `instances`: the event log, history search, who may touch state and who did, the instances serving one database
//! 5. `exec`, `net`, `paths`, `walls`: effects on processes, the network and files, and the walls around them
//! 6. `mcp`, `catalog`, `core`, `packages`: what a core declares, the catalog built from it, and packages installed into it
//! 7. `authored`, `slots`, `tools`, `tasks`: what runs for a turn: runners, tools, background work
//! 8. `dispatch`: the one path from a tool call to its result
//! 9. `turn`: the model/tool loop
//! 10. `channels`: chat platforms, driving turns
//! 11. `app`, `api`: the services held together and their HTTP surface
//! 12. `startup`: building and serving it all

pub mod api;
pub mod app;
pub mod audit;
pub mod audit_chain;
pub mod auth;
pub mod authored;
pub mod bootstrap;
pub mod catalog;
pub mod channels;
pub mod cli;
pub mod cli_reference;
pub mod config;
pub mod core;
pub mod dispatch;
pub mod error;
pub mod events;
pub mod exec;
pub mod history;
pub mod home;
pub mod ids;
pub mod instances;
pub mod mcp;
pub mod metrics;
pub mod net;
pub mod packages;
pub mod paths;
pub use demiurge_policy as policy;
pub use demiurge_redact as redact;
pub mod running;
pub mod sealing;
pub mod slots;
pub mod startup;
pub mod store;
pub mod tasks;
pub mod telemetry;
pub mod time;
pub mod tools;
pub mod turn;
pub mod usage;
pub mod walls;
pub mod wire;

//! demiurge: a multi-tenant host for Demiurge-style Agent Cores.
//!
//! # Layout
//!
//! - [`config`]: settings from flags and `DEMIURGE_*` variables, parsed once.
//! - [`startup`]: builds the [`app::App`], binds the listener, serves and drains.
//! - [`api`]: HTTP/SSE/WebSocket routes; thin: parse, call the host, map errors.
//! - [`auth`]: JWT issue/verify, the immutable [`auth::PrincipalScope`], rate limits.
//! - [`store`]: every SQL statement, on SQLite or PostgreSQL through one pool.
//! - [`events`]: the durable event log (persist, then fan out).
//! - [`turn`]: turn execution, model providers and the model/tool loop.
//! - [`core`]: Agent Cores: manifests, loading, the per-tenant agents tree.
//! - [`catalog`]: the per-turn resolved tool catalog.
//! - [`dispatch`]: the one path from a tool call to a result: checks, approvals, redaction.
//! - [`tools`]: built-in tool adapters.
//! - [`exec`]: owned processes: groups, kills, drains, artifacts, environment.
//! - [`tasks`]: durable background tasks and their logs.
//! - [`running`]: the registry of work running on this node (turns, tasks) and its shutdown.
//! - [`policy`]: pure decisions: guard, URL policy, capabilities, approval policy, paths.
//! - [`redact`]: secret discovery and the five result views.
//! - [`ids`]: parsed identifiers; handlers never see raw id strings.
//! - [`metrics`]: Prometheus counters, gauges and histograms.
//! - [`error`]: the host error type, mapped to HTTP in one place (`api::error`).

pub mod api;
pub mod app;
pub mod auth;
pub mod bootstrap;
pub mod catalog;
pub mod cli;
pub mod config;
pub mod core;
pub mod dispatch;
pub mod error;
pub mod events;
pub mod exec;
pub mod ids;
pub mod metrics;
pub mod policy;
pub mod redact;
pub mod running;
pub mod startup;
pub mod store;
pub mod tasks;
pub mod telemetry;
pub mod time;
pub mod tools;
pub mod turn;

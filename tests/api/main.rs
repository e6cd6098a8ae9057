//! Black-box tests: each starts the real `demiurge` binary on a free port
//! with a temporary home (and, for PostgreSQL, a fresh database), then talks
//! to it over HTTP, SSE and WebSocket like any client would.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod apidoc;
mod audit;
mod auth;
mod authored;
mod authority;
mod budgets;
mod channels;
mod cores;
mod delegation;
mod docs;
mod effects;
mod evolve;
mod helpers;
mod history;
mod instances;
mod isolation;
mod mcp;
mod mcp_serve;
mod models;
mod openai;
mod operations;
mod packages;
mod protection;
mod readme;
mod runs;
mod runtime;
mod schedules;
mod sessions;
mod skills;
mod slots;
mod streams;
mod tasks;
mod terminal;
mod tokens;
mod turns;
mod usage;
mod versions;
mod web;

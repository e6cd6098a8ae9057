//! Pure decision code: values in, verdicts out, no I/O. The command guard
//! (the shell lexer and parser, one file per command family), the URL
//! policy, capabilities, approval policy and authority, workspace path
//! rules, file walls, argument schemas, the sandbox plan (from settings
//! and machine facts to the walls a child gets), what a slot's `ctx.state` request
//! means and needs ([`slot_state`]), and the small vocabulary they decide
//! on ([`Risk`], [`ApprovalPolicy`], [`Role`], [`UnknownValue`]).
//!
//! A crate of its own so that the boundary is the compiler's: nothing here
//! may reach the server, a runtime, a database or the network. The effectful
//! edges live in the server: filesystem resolution of tool paths in
//! `demiurge::paths`, DNS for the URL policy in `demiurge::net`. The fuzz
//! targets build on this crate alone.

pub mod approval_authority;
pub mod approval_policy;
pub mod capabilities;
pub mod command_guard;
pub mod file_walls;
pub mod json_schema;
pub mod risk;
mod role;
pub mod sandbox_plan;
pub(crate) mod shell;
pub mod slot_state;
mod unknown;

/// Entry points for the fuzz targets in `fuzz/` (the lexer and parser are
/// crate-internal); not an API.
#[doc(hidden)]
pub mod fuzzing {
    /// Lex and parse a command line as the guard does; it must never panic.
    pub fn lex_and_parse(text: &str) {
        let mut lx = super::shell::Lexer::new(text);
        if let Ok(toks) = lx.lex_list(false) {
            let _ = super::shell::parse(toks);
        }
    }
}
pub mod url_policy;
pub mod workspace;

pub use risk::{ApprovalPolicy, Risk};
pub use role::Role;
pub use unknown::UnknownValue;

//! Pure decision code: values in, verdicts out, no I/O. The effectful edges
//! live outside: filesystem resolution of tool paths in [`crate::paths`], DNS
//! for the URL policy in [`crate::net`].

pub mod approval_authority;
pub mod approval_policy;
pub mod capabilities;
pub mod command_guard;
pub mod file_walls;
pub mod json_schema;
pub(crate) mod shell;

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

//! A shell lexer and parser for review, never for execution: enough of bash
//! to find every simple command, redirection and expansion in a command line.

pub(crate) mod lexer;
pub(crate) mod parser;

pub(crate) use lexer::{FindingKind, HereDoc, LexError, Lexer, Op, Redir, RedirKind, Tok, Word};
pub(crate) use parser::{is_assignment, parse, Script};

//! The shell lexer, parser and command guard on arbitrary text: never a
//! panic, and a line containing `$(`, a backtick or `<(` is never allowed.
#![no_main]

use demiurge_policy::command_guard::{classify, Decision};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    demiurge_policy::fuzzing::lex_and_parse(text);
    let verdict = classify(text);
    if text.contains("$(") || text.contains('`') || text.contains("<(") {
        assert_ne!(verdict.decision, Decision::Allow, "{text:?} was allowed");
    }
});

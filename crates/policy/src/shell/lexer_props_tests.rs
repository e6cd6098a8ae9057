//! Property tests: the lexer, the parser and the guard never panic on any
//! input, and a command line containing `$(`, a backtick or `<(` is never
//! allowed unasked (whatever its quoting). The `fuzz/` targets drive the
//! same entry points with coverage guidance.

use proptest::prelude::*;

use super::*;
use crate::command_guard::{classify, Decision};
use crate::shell::parse;

/// Pieces of shell syntax, so generated lines reach deep into the lexer
/// (quotes, escapes, here-documents, nesting) far more often than random text.
const PIECES: &[&str] = &[
    " ", "  ", "\t", "\n", ";", "&", "&&", "|", "||", "|&", "(", ")", "{", "}", "[[", "]]", "<",
    ">", ">>", "<<", "<<-", "<<<", "2>&1", "<(", ">(", "$(", "$((", "))", "`", "'", "\"", "\\",
    "$'", "$\"", "$", "${", "#", "~", "*", "?", "[a]", "=", "a=b", "!", "EOF", "EOF\n", "ls",
    "cat", "echo", "grep", "git", "rm", "-rf", "/", "..", "-n", "--", "x", "é", "\u{0}", "\r",
];

fn shellish() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..48).prop_map(|p| p.concat())
}

/// Lex and parse as the guard does; the result is irrelevant, only that it returns.
fn lex_and_parse(text: &str) {
    let mut lx = Lexer::new(text);
    if let Ok(toks) = lx.lex_list(false) {
        let _ = parse(toks);
    }
}

fn never_allowed(text: &str) -> bool {
    classify(text).decision != Decision::Allow
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_text_lexes_parses_and_classifies_without_panicking(text in any::<String>()) {
        lex_and_parse(&text);
        let _ = classify(&text);
    }

    #[test]
    fn shell_syntax_soup_never_panics(text in shellish()) {
        lex_and_parse(&text);
        let _ = classify(&text);
    }

    #[test]
    fn substitutions_anywhere_are_never_allowed(
        before in shellish(),
        opener in prop::sample::select(&["$(", "`", "<("][..]),
        after in shellish(),
    ) {
        let text = format!("{before}{opener}{after}");
        prop_assert!(never_allowed(&text), "{text:?} -> {:?}", classify(&text));
    }

    #[test]
    fn a_read_only_command_with_a_substitution_is_never_allowed(
        command in prop::sample::select(&["ls", "cat f", "echo hi", "grep -n x f", "wc -l f", "head f"][..]),
        form in prop::sample::select(&["$(id)", "`id`", "<(id)", "\"$(id)\"", "'$(id)'", "x$(id)y", "$(", "`"][..]),
        front in any::<bool>(),
    ) {
        let text = if front { format!("{form} {command}") } else { format!("{command} {form}") };
        prop_assert!(never_allowed(&text), "{text:?} -> {:?}", classify(&text));
    }
}

#[test]
fn the_plain_read_only_commands_above_are_allowed() {
    // Otherwise the property above would hold for a trivial reason.
    for command in ["ls", "cat f", "echo hi", "grep -n x f", "wc -l f", "head f"] {
        assert_eq!(classify(command).decision, Decision::Allow, "{command}");
    }
}

use super::*;
use crate::shell::parse;

fn words(text: &str) -> Vec<Word> {
    let mut lx = Lexer::new(text);
    let toks = lx.lex_list(false).unwrap_or_default();
    toks.into_iter()
        .filter_map(|t| match t {
            Tok::Word(w) => Some(w),
            _ => None,
        })
        .collect()
}

#[test]
fn lexer_removes_quotes_and_escapes() {
    let w = words(r#"a'b c'"d\"e" f\ g $'\x41\n' "$""#);
    let values: Vec<&str> = w.iter().map(|w| w.value.as_str()).collect();
    assert_eq!(values, vec!["ab cd\"e", "f g", "A\n", "$"]);
    assert!(w[0].quoted && w[1].quoted && w[2].quoted);
    assert!(!w.iter().any(|w| w.expansion));
}

#[test]
fn lexer_marks_expansions_globs_and_tildes() {
    let w = words("$HOME ~/x a=~/y *.rs [ab] x{a,b} '*' HEAD~1 {}");
    let flags: Vec<(bool, bool, bool)> = w.iter().map(|w| (w.expansion, w.glob, w.tilde)).collect();
    assert_eq!(
        flags,
        vec![
            (true, false, false),
            (false, false, true),
            (false, false, true),
            (false, true, false),
            (false, true, false),
            (false, true, false),
            (false, false, false),
            (false, false, false),
            (false, false, false),
        ]
    );
}

#[test]
fn lexer_reads_heredoc_bodies_as_data() {
    let mut lx = Lexer::new("cat <<EOF && ls\nrm -rf /\nEOF\necho done");
    let toks = lx.lex_list(false).unwrap_or_default();
    let script = parse(toks);
    let names: Vec<&str> = script
        .cmds
        .iter()
        .map(|c| c.words[0].value.as_str())
        .collect();
    assert_eq!(names, vec!["cat", "ls", "echo"]);
    assert_eq!(lx.heredocs[0].body, "rm -rf /\n");
}

#[test]
fn lexer_keeps_nested_payloads_for_direct_children_only() {
    let mut lx = Lexer::new("echo $(a $(b)) `c` <(d)");
    assert!(lx.lex_list(false).is_ok());
    let payloads: Vec<Option<&str>> = lx.findings.iter().map(|f| f.payload.as_deref()).collect();
    assert_eq!(payloads, vec![Some("a $(b)"), None, Some("c"), Some("d")]);
}

// ---------------------------------------------------------------------------
// Property tests (seeded, deterministic: no property-test crate is in the tree)

/// xorshift64: reproducible random inputs without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        (x % n as u64) as usize
    }
}

/// Shell-significant characters, look-alikes, controls and plain letters.
const ALPHABET: &str =
    " \t\n;&|<>()$`'\"\\{}[]*?~#=!-+%^:,./@abcrmsh019＄（）＼＇\u{1b}\u{200b}\u{0}é€";

fn soup(rng: &mut Rng, alphabet: &[char], max_len: usize) -> String {
    let len = rng.below(max_len + 1);
    (0..len)
        .map(|_| alphabet[rng.below(alphabet.len())])
        .collect()
}

fn lex(text: &str) -> (Result<(), LexError>, Lexer, Vec<Tok>) {
    let mut lx = Lexer::new(text);
    let mut toks = Vec::new();
    let result = lx.lex_into(false, &mut toks);
    (result, lx, toks)
}

#[test]
fn property_lexer_and_parser_never_panic_on_random_input() {
    let alphabet: Vec<char> = ALPHABET.chars().collect();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for _ in 0..20_000 {
        let text = soup(&mut rng, &alphabet, 96);
        let (result, lx, toks) = lex(&text);
        let again = lex(&text);
        assert_eq!(result, again.0, "{text:?}");
        assert_eq!(lx.findings.len(), again.1.findings.len(), "{text:?}");
        let script = parse(toks);
        for cmd in &script.cmds {
            assert!(
                !(cmd.words.is_empty() && cmd.redirs.is_empty()),
                "{text:?}: empty command in {script:?}"
            );
        }
    }
}

#[test]
fn property_unquoted_substitutions_are_always_found() {
    let plain: Vec<char> = "abcxyz019 -_./".chars().collect();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..5_000 {
        let (open, close, kind) = match rng.below(4) {
            0 => ("$(", ")", FindingKind::Command),
            1 => ("`", "`", FindingKind::Command),
            2 => ("<(", ")", FindingKind::Process),
            _ => (">(", ")", FindingKind::Process),
        };
        let text = format!(
            "{} {open}{}{close} {}",
            soup(&mut rng, &plain, 12),
            soup(&mut rng, &plain, 12),
            soup(&mut rng, &plain, 12)
        );
        let (result, lx, _) = lex(&text);
        assert!(
            result.is_err() || lx.findings.iter().any(|f| f.kind == kind),
            "{text:?}: {result:?} {:?}",
            lx.findings
        );
    }
}

#[test]
fn property_commands_with_substitution_syntax_are_never_allowed() {
    use crate::command_guard::{classify, Decision};
    let alphabet: Vec<char> = ALPHABET.chars().filter(|c| *c != '\0').collect();
    let mut rng = Rng(7);
    for _ in 0..10_000 {
        let active = ["$(", "`", "<("][rng.below(3)];
        let prefix = match rng.below(3) {
            0 => ["ls ", "cat a ", "echo ", "git log ", "grep -n x "][rng.below(5)].to_string(),
            _ => soup(&mut rng, &alphabet, 24),
        };
        let text = format!("{prefix}{active}{}", soup(&mut rng, &alphabet, 24));
        let v = classify(&text);
        assert_ne!(v.decision, Decision::Allow, "{text:?} -> {v:?}");
    }
}

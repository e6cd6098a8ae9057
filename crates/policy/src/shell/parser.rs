//! The shell parser: a token stream flattened into simple commands, with
//! compound syntax, background jobs and line breaks noted on the [`Script`].

use super::lexer::{Op, Redir, Tok, Word};

#[derive(Debug, Default)]
pub(crate) struct Cmd {
    pub(crate) words: Vec<Word>,
    pub(crate) redirs: Vec<Redir>,
    /// The separator after this command (`Pipe` means the next one reads it).
    pub(crate) sep: Option<Op>,
}

impl Cmd {
    fn is_empty(&self) -> bool {
        self.words.is_empty() && self.redirs.is_empty()
    }
}

#[derive(Debug, Default)]
pub(crate) struct Script {
    pub(crate) cmds: Vec<Cmd>,
    pub(crate) compound: bool,
    pub(crate) syntax_error: bool,
    pub(crate) background: bool,
    pub(crate) multiline: bool,
}

pub(crate) const RESERVED: &[&str] = &[
    "{", "}", "!", "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while",
    "until", "do", "done", "function", "[[", "]]", "coproc",
];

/// Flattens the token stream. Compound syntax (subshells, groups, keywords,
/// functions) is only noted; the simple commands inside it are still
/// collected so destructive payloads in `(rm -rf /)` or `if …; then …` are
/// found.
pub(crate) fn parse(toks: Vec<Tok>) -> Script {
    let mut s = Script::default();
    let mut cur = Cmd::default();
    let mut last_sep: Option<Op> = None;
    let mut after_group = false;
    for tok in toks {
        match tok {
            Tok::Word(w) => {
                if cur.is_empty()
                    && !w.quoted
                    && !w.expansion
                    && RESERVED.contains(&w.value.as_str())
                {
                    s.compound = true;
                    after_group = true;
                    continue;
                }
                if cur.is_empty() && last_sep == Some(Op::Newline) && !s.cmds.is_empty() {
                    s.multiline = true;
                }
                cur.words.push(w);
            }
            Tok::Redir(r) => {
                if cur.is_empty() && last_sep == Some(Op::Newline) && !s.cmds.is_empty() {
                    s.multiline = true;
                }
                cur.redirs.push(r);
            }
            Tok::Op(Op::LParen | Op::RParen | Op::CaseSep) => {
                s.compound = true;
                if !cur.is_empty() {
                    s.cmds.push(std::mem::take(&mut cur));
                }
                after_group = true;
            }
            Tok::Op(op) => {
                if cur.is_empty() {
                    let dangling = match op {
                        Op::Newline => false,
                        Op::Semi | Op::Amp => s.cmds.is_empty() && !after_group,
                        _ => !after_group,
                    };
                    if dangling {
                        s.syntax_error = true;
                    }
                } else {
                    cur.sep = Some(op);
                    s.cmds.push(std::mem::take(&mut cur));
                }
                if op == Op::Amp {
                    s.background = true;
                }
                last_sep = Some(op);
                after_group = false;
            }
        }
    }
    if !cur.is_empty() {
        s.cmds.push(cur);
    } else if matches!(
        last_sep,
        Some(Op::Pipe | Op::PipeAmp | Op::AndIf | Op::OrIf)
    ) {
        s.syntax_error = true;
    }
    s
}

pub(crate) fn is_assignment(w: &Word) -> bool {
    // Judged on the raw text: a quoted name (`"A"=1`) is a command, not an
    // assignment.
    let mut chars = w.raw.chars().peekable();
    match chars.next() {
        Some(c) if c == '_' || c.is_ascii_alphabetic() => {}
        _ => return false,
    }
    while let Some(&c) = chars.peek() {
        if c == '_' || c.is_ascii_alphanumeric() {
            chars.next();
        } else {
            break;
        }
    }
    if chars.peek() == Some(&'[') {
        for c in chars.by_ref() {
            if c == ']' {
                break;
            }
        }
    }
    if chars.peek() == Some(&'+') {
        chars.next();
    }
    chars.next() == Some('=')
}

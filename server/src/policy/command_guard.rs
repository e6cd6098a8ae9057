//! Terminal command guard: the pure lexical review every terminal command
//! passes before approval.
//!
//! This module owns:
//! * the verdict vocabulary ([`Decision`], [`Risk`], [`Verdict`] with a stable
//!   rule key such as `read_only:ls`, `substitution:command` or
//!   `destructive:rm_root`);
//! * a hand-written shell lexer and parser (quotes, escapes, ANSI-C strings,
//!   line continuations, heredocs, the operators `; && || | |& &`, redirections,
//!   `$(…)`, backticks, `<(…)`/`>(…)`, `${…}`, `$((…))`, `$[…]`, `$VAR`,
//!   globs, brace expansion, tildes, comments and assignments), because
//!   regexes alone cannot tell a literal metacharacter from an active one;
//! * the classification of the parsed simple commands: only literal, known
//!   read-only shapes are `allow/low`; anything unparsable, any substitution
//!   or expansion, unknown or path-qualified commands, wrappers, cwd changes,
//!   command files, embedded write/exec modes, inline environment assignments
//!   and tools that run project code are `prompt/high`; known destructive
//!   payloads are `block/critical`, also when nested inside substitutions,
//!   `sh -c`, `eval`, heredocs fed to a shell or wrappers such as `sudo`,
//!   `env` and `nohup`;
//! * the detection candidates: the raw command is reviewed together with an
//!   ANSI-stripped, an NFKC-normalised and an `$IFS`-expanded spelling.
//!   Candidates only add checks; the most severe verdict wins.
//!
//! It is containment, not a sandbox: it never touches the filesystem, the
//! environment or the clock, and a `cwd` passed to [`classify_in`] is only
//! compared lexically.

use std::path::{Component, Path};

use serde::Serialize;
use unicode_normalization::UnicodeNormalization;

#[cfg(test)]
#[path = "command_guard_tests.rs"]
mod tests;

// ---------------------------------------------------------------------------
// Public API

/// What the host does with a command before running it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Run without asking: only literal, known read-only commands.
    Allow,
    /// Ask the approval provider.
    Prompt,
    /// Refuse before any approval provider is consulted.
    Block,
}

/// How much damage the command could do if it is not what it looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    /// Literal read-only command.
    Low,
    /// Read-only, but reaches outside the working tree (absolute, `~`, `..`).
    Medium,
    /// Runs, writes, deletes, expands or cannot be proven literal.
    High,
    /// Destructive payloads and credential paths combined with other risks.
    Critical,
}

/// The guard's answer for one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Allow, prompt or block.
    pub decision: Decision,
    /// Risk level shown to the approver.
    pub risk: Risk,
    /// Stable rule key, `family:detail`.
    pub rule: String,
    /// Short human explanation; not stable, never contains secrets beyond the
    /// command text itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Verdict {
    /// True only for `allow/low`, the single shape that may run unasked.
    pub fn is_auto_approvable(&self) -> bool {
        self.decision == Decision::Allow && self.risk == Risk::Low
    }

    /// Ordering key: decision first (block > prompt > allow), then risk.
    pub fn severity(&self) -> (Decision, Risk) {
        (self.decision, self.risk)
    }

    /// Strictly more severe than `other`.
    pub fn outranks(&self, other: &Verdict) -> bool {
        self.severity() > other.severity()
    }
}

/// The more severe of two verdicts (the first one on a tie). Callers that
/// combine the guard with a global auto-approval policy use this so the policy
/// can never lower a guard result.
pub fn most_severe(first: Verdict, second: Verdict) -> Verdict {
    if second.outranks(&first) {
        second
    } else {
        first
    }
}

/// Classifies a command without any working-directory context.
pub fn classify(command: &str) -> Verdict {
    classify_in(command, None)
}

/// Classifies a command; `cwd` may only raise the risk (a cwd under a
/// credential directory, `rm -rf .` in `/`). Pure: the path is never touched.
pub fn classify_in(command: &str, cwd: Option<&Path>) -> Verdict {
    if command.contains('\0') {
        return high("parse:nul", "NUL bytes cannot be passed to a shell");
    }
    if command.trim().is_empty() {
        return high("parse:empty", "empty command");
    }
    if command.len() > MAX_INPUT_BYTES {
        return high("parse:too_long", "command is too long to review");
    }
    let ctx = Ctx { cwd, depth: 0 };
    let mut acc = Acc::default();
    for candidate in detection_candidates(command) {
        acc.add(classify_text(&candidate, ctx));
    }
    let mut verdict = acc.finish();
    if let Some(kind) = cwd.and_then(sensitive_in_path) {
        verdict = raise_for_sensitive(verdict, kind, "the working directory is a credential path");
    }
    verdict
}

// ---------------------------------------------------------------------------
// Limits and small helpers

/// Longer inputs are not reviewed (and nobody types them by hand).
const MAX_INPUT_BYTES: usize = 64 * 1024;
/// Nested reviews (`sh -c`, `eval`, substitutions) beyond this are refused.
const MAX_DEPTH: usize = 16;
/// Structural nesting inside one lexer run; bounds recursion on the stack.
const MAX_LEX_NEST: usize = 128;
/// Wrapper chains (`nice nice … cmd`) beyond this are refused.
const MAX_ARGV_DEPTH: usize = 32;

fn verdict(
    decision: Decision,
    risk: Risk,
    rule: impl Into<String>,
    reason: impl Into<String>,
) -> Verdict {
    Verdict {
        decision,
        risk,
        rule: rule.into(),
        reason: Some(reason.into()),
    }
}

fn allow(rule: impl Into<String>, reason: impl Into<String>) -> Verdict {
    verdict(Decision::Allow, Risk::Low, rule, reason)
}

fn medium(rule: impl Into<String>, reason: impl Into<String>) -> Verdict {
    verdict(Decision::Prompt, Risk::Medium, rule, reason)
}

fn high(rule: impl Into<String>, reason: impl Into<String>) -> Verdict {
    verdict(Decision::Prompt, Risk::High, rule, reason)
}

fn block(rule: impl Into<String>, reason: impl Into<String>) -> Verdict {
    verdict(Decision::Block, Risk::Critical, rule, reason)
}

#[derive(Clone, Copy)]
struct Ctx<'a> {
    cwd: Option<&'a Path>,
    depth: usize,
}

impl Ctx<'_> {
    fn deeper(self) -> Self {
        Ctx {
            depth: self.depth + 1,
            ..self
        }
    }
}

/// Keeps the most severe verdict seen; the first one wins ties, so callers
/// add the most specific explanation first.
#[derive(Default)]
struct Acc {
    best: Option<Verdict>,
}

impl Acc {
    fn add(&mut self, v: Verdict) {
        match &self.best {
            Some(best) if !v.outranks(best) => {}
            _ => self.best = Some(v),
        }
    }

    /// Nested reviews only contribute what is worse than the outer prompt.
    fn propagate(&mut self, inner: Verdict) {
        if inner.decision == Decision::Block || inner.risk == Risk::Critical {
            self.add(inner);
        }
    }

    fn take(self) -> Option<Verdict> {
        self.best
    }

    fn finish(self) -> Verdict {
        self.best
            .unwrap_or_else(|| high("parse:empty", "no command to run"))
    }
}

fn basename(v: &str) -> &str {
    v.rsplit_once('/').map_or(v, |(_, b)| b)
}

fn join_values(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| w.value.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

// ---------------------------------------------------------------------------
// Detection candidates

fn detection_candidates(raw: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    push_unique(&mut out, raw.to_string());
    let stripped = strip_ansi(raw);
    push_unique(&mut out, stripped.clone());
    // NFKC folds full-width and compatibility look-alikes (＄, （, ＼) onto the
    // ASCII a shell would need; invisible format characters are dropped so
    // `r\u{200b}m` is reviewed as `rm` too.
    let folded: String = stripped.nfkc().filter(|c| !is_invisible(*c)).collect();
    push_unique(&mut out, folded.clone());
    for base in [raw, folded.as_str()] {
        if base.contains("IFS") {
            push_unique(&mut out, replace_ifs(base));
        }
    }
    out
}

fn push_unique(out: &mut Vec<String>, s: String) {
    if !s.trim().is_empty() && !out.contains(&s) {
        out.push(s);
    }
}

/// Removes CSI, OSC and two-character escape sequences.
fn strip_ansi(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let len = chars.len();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < len {
        let c = chars[i];
        if c != '\u{1b}' && c != '\u{9b}' {
            out.push(c);
            i += 1;
            continue;
        }
        let next = chars.get(i + 1).copied();
        if c == '\u{9b}' || next == Some('[') {
            i += if c == '\u{9b}' { 1 } else { 2 };
            while i < len && ('\u{30}'..='\u{3f}').contains(&chars[i]) {
                i += 1;
            }
            while i < len && ('\u{20}'..='\u{2f}').contains(&chars[i]) {
                i += 1;
            }
            if i < len && ('\u{40}'..='\u{7e}').contains(&chars[i]) {
                i += 1;
            }
        } else if next == Some(']') {
            i += 2;
            while i < len {
                if chars[i] == '\u{7}' {
                    i += 1;
                    break;
                }
                if chars[i] == '\u{1b}' && chars.get(i + 1) == Some(&'\\') {
                    i += 2;
                    break;
                }
                i += 1;
            }
        } else {
            i += 1;
            if i < len && ('\u{40}'..='\u{5f}').contains(&chars[i]) {
                i += 1;
            }
        }
    }
    out
}

/// `$IFS` / `${IFS}` word splitting is a classic way to hide spaces.
fn replace_ifs(text: &str) -> String {
    let mut out = text.replace("${IFS}", " ");
    let mut i = 0;
    while let Some(off) = out[i..].find("$IFS") {
        let at = i + off;
        let after = out[at + 4..].chars().next();
        if after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            i = at + 4;
            continue;
        }
        out.replace_range(at..at + 4, " ");
        i = at + 1;
    }
    out
}

fn is_control(c: char) -> bool {
    (c < ' ' && c != '\t' && c != '\n') || c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c)
}

/// Zero-width, bidi-override and other format characters that make the
/// approval view show something other than what runs.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{34f}'
            | '\u{61c}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{feff}'
    )
}

// ---------------------------------------------------------------------------
// Lexer

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LexError {
    Unterminated,
    TooDeep,
    Syntax,
}

impl LexError {
    fn verdict(self) -> Verdict {
        match self {
            LexError::Unterminated => high(
                "parse:unterminated",
                "unterminated quote, substitution or expansion",
            ),
            LexError::TooDeep => high("parse:too_deep", "nesting is too deep to review"),
            LexError::Syntax => high("parse:syntax", "shell syntax the guard cannot parse"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FindingKind {
    /// `$(…)` or backticks.
    Command,
    /// `<(…)` or `>(…)`.
    Process,
    /// `$NAME`, `$1`, `${…}`.
    Parameter,
    /// `$((…))` or `$[…]`.
    Arithmetic,
}

#[derive(Debug, Clone)]
struct Finding {
    kind: FindingKind,
    /// The command text to review recursively; only kept for direct children,
    /// deeper ones are found again when the payload itself is reviewed.
    payload: Option<String>,
}

/// One shell word: `value` is the text after quote removal, with expansions
/// kept verbatim (so `"$HOME"` has the value `$HOME`).
#[derive(Debug, Clone, Default)]
struct Word {
    raw: String,
    value: String,
    /// Any part was quoted or escaped.
    quoted: bool,
    /// Contains a parameter/command/arithmetic/process expansion.
    expansion: bool,
    /// Contains an unquoted glob or brace expansion.
    glob: bool,
    /// Starts with (or has after `=`/`:`) an unquoted `~`.
    tilde: bool,
}

impl Word {
    fn literal(value: &str) -> Word {
        Word {
            raw: value.to_string(),
            value: value.to_string(),
            ..Word::default()
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Semi,
    Amp,
    AndIf,
    OrIf,
    Pipe,
    PipeAmp,
    LParen,
    RParen,
    Newline,
    CaseSep,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RedirKind {
    Read,
    Write,
    Dup,
    HereDoc,
    HereString,
}

#[derive(Debug, Clone)]
struct Redir {
    kind: RedirKind,
    target: Word,
    heredoc: Option<usize>,
}

#[derive(Debug, Clone)]
enum Tok {
    Word(Word),
    Op(Op),
    Redir(Redir),
}

#[derive(Debug, Clone, Default)]
struct HereDoc {
    delim: String,
    strip_tabs: bool,
    quoted: bool,
    body: String,
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
    nest: usize,
    /// > 0 while inside a `$(…)`, backtick or process substitution body.
    subst_nest: usize,
    findings: Vec<Finding>,
    heredocs: Vec<HereDoc>,
    pending: Vec<usize>,
    comment_expansion: bool,
}

impl Lexer {
    fn new(text: &str) -> Self {
        Lexer {
            chars: text.chars().collect(),
            pos: 0,
            nest: 0,
            subst_nest: 0,
            findings: Vec::new(),
            heredocs: Vec::new(),
            pending: Vec::new(),
            comment_expansion: false,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, k: usize) -> Option<char> {
        self.chars.get(self.pos + k).copied()
    }

    fn slice(&self, from: usize, to: usize) -> String {
        let to = to.min(self.chars.len());
        let from = from.min(to);
        self.chars[from..to].iter().collect()
    }

    /// The character at or after `i`, skipping `\<newline>` continuations
    /// (bash removes them before it recognises `$(`, `${` …).
    fn next_sig(&self, mut i: usize) -> (Option<char>, usize) {
        while self.chars.get(i) == Some(&'\\') && self.chars.get(i + 1) == Some(&'\n') {
            i += 2;
        }
        (self.chars.get(i).copied(), i)
    }

    fn enter(&mut self, subst: bool) -> Result<(), LexError> {
        self.nest += 1;
        if subst {
            self.subst_nest += 1;
        }
        if self.nest > MAX_LEX_NEST {
            Err(LexError::TooDeep)
        } else {
            Ok(())
        }
    }

    fn leave(&mut self, subst: bool) {
        self.nest = self.nest.saturating_sub(1);
        if subst {
            self.subst_nest = self.subst_nest.saturating_sub(1);
        }
    }

    fn record(&mut self, kind: FindingKind) -> (usize, bool) {
        self.findings.push(Finding {
            kind,
            payload: None,
        });
        (self.findings.len() - 1, self.subst_nest == 0)
    }

    fn set_payload(&mut self, idx: usize, payload: String) {
        if let Some(f) = self.findings.get_mut(idx) {
            f.payload = Some(payload);
        }
    }

    fn skip_blanks(&mut self) {
        loop {
            match self.peek() {
                Some(' ' | '\t') => self.pos += 1,
                Some('\\') if self.peek_at(1) == Some('\n') => self.pos += 2,
                _ => break,
            }
        }
    }

    fn skip_comment(&mut self) {
        while let Some(c) = self.peek() {
            if c == '\n' {
                break;
            }
            if c == '$' || c == '`' {
                self.comment_expansion = true;
            }
            self.pos += 1;
        }
    }

    /// Tokens up to the end of input, or (nested) up to the `)` that closes
    /// the substitution the caller is in.
    fn lex_list(&mut self, nested: bool) -> Result<Vec<Tok>, LexError> {
        let mut toks = Vec::new();
        self.lex_into(nested, &mut toks)?;
        Ok(toks)
    }

    /// Like [`Lexer::lex_list`], but the tokens read before an error stay in
    /// `toks`.
    fn lex_into(&mut self, nested: bool, toks: &mut Vec<Tok>) -> Result<(), LexError> {
        let mut depth = 0usize;
        let mark = self.pending.len();
        loop {
            self.skip_blanks();
            let Some(c) = self.peek() else {
                if nested {
                    return Err(LexError::Unterminated);
                }
                break;
            };
            match c {
                '\n' => {
                    self.pos += 1;
                    toks.push(Tok::Op(Op::Newline));
                    self.read_heredoc_bodies()?;
                }
                '#' => self.skip_comment(),
                ';' => {
                    if matches!(self.peek_at(1), Some(';' | '&')) {
                        self.pos += 2;
                        if self.peek() == Some('&') {
                            self.pos += 1;
                        }
                        toks.push(Tok::Op(Op::CaseSep));
                    } else {
                        self.pos += 1;
                        toks.push(Tok::Op(Op::Semi));
                    }
                }
                '&' => match self.peek_at(1) {
                    Some('&') => {
                        self.pos += 2;
                        toks.push(Tok::Op(Op::AndIf));
                    }
                    Some('>') => toks.push(Tok::Redir(self.lex_redirect()?)),
                    _ => {
                        self.pos += 1;
                        toks.push(Tok::Op(Op::Amp));
                    }
                },
                '|' => match self.peek_at(1) {
                    Some('|') => {
                        self.pos += 2;
                        toks.push(Tok::Op(Op::OrIf));
                    }
                    Some('&') => {
                        self.pos += 2;
                        toks.push(Tok::Op(Op::PipeAmp));
                    }
                    _ => {
                        self.pos += 1;
                        toks.push(Tok::Op(Op::Pipe));
                    }
                },
                '(' => {
                    self.pos += 1;
                    depth += 1;
                    toks.push(Tok::Op(Op::LParen));
                }
                ')' => {
                    self.pos += 1;
                    if nested && depth == 0 {
                        // Heredocs opened inside a substitution end with it.
                        self.pending.truncate(mark);
                        return Ok(());
                    }
                    depth = depth.saturating_sub(1);
                    toks.push(Tok::Op(Op::RParen));
                }
                '<' | '>' if self.peek_at(1) != Some('(') => {
                    toks.push(Tok::Redir(self.lex_redirect()?));
                }
                _ => {
                    let word = self.lex_word()?;
                    let fd = !word.quoted
                        && !word.expansion
                        && !word.value.is_empty()
                        && word.value.chars().all(|c| c.is_ascii_digit());
                    if fd && matches!(self.peek(), Some('<' | '>')) && self.peek_at(1) != Some('(')
                    {
                        toks.push(Tok::Redir(self.lex_redirect()?));
                    } else {
                        toks.push(Tok::Word(word));
                    }
                }
            }
        }
        Ok(())
    }

    fn lex_redirect(&mut self) -> Result<Redir, LexError> {
        let ahead = self.slice(self.pos, self.pos + 3);
        let (len, kind, strip) = if ahead.starts_with("<<<") {
            (3, RedirKind::HereString, false)
        } else if ahead.starts_with("<<-") {
            (3, RedirKind::HereDoc, true)
        } else if ahead.starts_with("<<") {
            (2, RedirKind::HereDoc, false)
        } else if ahead.starts_with("<>") {
            (2, RedirKind::Write, false)
        } else if ahead.starts_with("<&") || ahead.starts_with(">&") {
            (2, RedirKind::Dup, false)
        } else if ahead.starts_with('<') {
            (1, RedirKind::Read, false)
        } else if ahead.starts_with(">>") || ahead.starts_with(">|") || ahead.starts_with("&>") {
            let len = if ahead.starts_with("&>>") { 3 } else { 2 };
            (len, RedirKind::Write, false)
        } else {
            (1, RedirKind::Write, false)
        };
        self.pos += len;
        self.skip_blanks();
        match self.peek() {
            None | Some('\n' | ';' | '&' | '|' | '(' | ')') => return Err(LexError::Syntax),
            Some('<' | '>') if self.peek_at(1) != Some('(') => return Err(LexError::Syntax),
            _ => {}
        }
        let target = self.lex_word()?;
        let heredoc = if kind == RedirKind::HereDoc {
            let idx = self.heredocs.len();
            self.heredocs.push(HereDoc {
                delim: target.value.clone(),
                strip_tabs: strip,
                quoted: target.quoted,
                body: String::new(),
            });
            self.pending.push(idx);
            Some(idx)
        } else {
            None
        };
        Ok(Redir {
            kind,
            target,
            heredoc,
        })
    }

    fn read_heredoc_bodies(&mut self) -> Result<(), LexError> {
        let pending = std::mem::take(&mut self.pending);
        for idx in pending {
            let Some(doc) = self.heredocs.get(idx) else {
                continue;
            };
            let (delim, strip, quoted) = (doc.delim.clone(), doc.strip_tabs, doc.quoted);
            let mut body = String::new();
            while self.pos < self.chars.len() {
                let start = self.pos;
                let mut end = start;
                while end < self.chars.len() && self.chars[end] != '\n' {
                    end += 1;
                }
                let line = self.slice(start, end);
                self.pos = if end < self.chars.len() { end + 1 } else { end };
                let cmp = if strip {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if cmp == delim {
                    break;
                }
                // Inside `$(…)`/`<(…)` bash also ends the body at `EOF)`,
                // leaving the `)` to close the substitution.
                let closes = self.subst_nest > 0
                    && cmp
                        .strip_prefix(delim.as_str())
                        .is_some_and(|rest| rest.trim_start().starts_with(')'));
                if closes {
                    let tabs = line.chars().count() - cmp.chars().count();
                    self.pos = start + tabs + delim.chars().count();
                    break;
                }
                body.push_str(&line);
                body.push('\n');
            }
            if !quoted {
                // Unquoted delimiters leave `$(…)`, backticks and `$VAR` live
                // in the body.
                self.scan_expansions_in(&body)?;
            }
            if let Some(doc) = self.heredocs.get_mut(idx) {
                doc.body = body;
            }
        }
        Ok(())
    }

    fn scan_expansions_in(&mut self, text: &str) -> Result<(), LexError> {
        let mut sub = Lexer::new(text);
        sub.nest = self.nest;
        sub.subst_nest = self.subst_nest;
        let result = sub.scan_dq_like();
        self.findings.append(&mut sub.findings);
        result
    }

    /// Double-quote rules without a closing quote (heredoc bodies).
    fn scan_dq_like(&mut self) -> Result<(), LexError> {
        let mut scratch = Word::default();
        while let Some(c) = self.peek() {
            match c {
                '\\' => self.pos += 2,
                '$' => self.lex_dollar(&mut scratch, true)?,
                '`' => self.lex_backtick(&mut scratch)?,
                _ => self.pos += 1,
            }
        }
        Ok(())
    }

    fn lex_word(&mut self) -> Result<Word, LexError> {
        let start = self.pos;
        let mut w = Word::default();
        let mut prev_plain: Option<char> = None;
        let mut bracket_open = false;
        let mut brace_depth = 0usize;
        let mut brace_sep = false;
        while let Some(c) = self.peek() {
            let mut plain = None;
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' => break,
                '<' | '>' => {
                    if self.peek_at(1) == Some('(') {
                        self.lex_process_subst(&mut w)?;
                    } else {
                        break;
                    }
                }
                '\\' => match self.peek_at(1) {
                    Some('\n') => self.pos += 2,
                    Some(n) => {
                        w.value.push(n);
                        w.quoted = true;
                        self.pos += 2;
                    }
                    None => {
                        w.value.push('\\');
                        self.pos += 1;
                    }
                },
                '\'' => {
                    self.pos += 1;
                    w.quoted = true;
                    self.lex_single(&mut w)?;
                }
                '"' => {
                    self.pos += 1;
                    w.quoted = true;
                    self.lex_dq(&mut w)?;
                }
                '$' => self.lex_dollar(&mut w, false)?,
                '`' => self.lex_backtick(&mut w)?,
                _ => {
                    match c {
                        '*' | '?' => w.glob = true,
                        '[' => bracket_open = true,
                        ']' if bracket_open => w.glob = true,
                        '{' => brace_depth += 1,
                        ',' if brace_depth > 0 => brace_sep = true,
                        '.' if brace_depth > 0 && prev_plain == Some('.') => brace_sep = true,
                        '}' if brace_depth > 0 => {
                            brace_depth -= 1;
                            if brace_sep {
                                w.glob = true;
                            }
                        }
                        '~' if self.pos == start || matches!(prev_plain, Some('=' | ':')) => {
                            w.tilde = true;
                        }
                        _ => {}
                    }
                    w.value.push(c);
                    self.pos += 1;
                    plain = Some(c);
                }
            }
            prev_plain = plain;
        }
        if self.pos == start {
            return Err(LexError::Syntax);
        }
        w.raw = self.slice(start, self.pos);
        Ok(w)
    }

    fn lex_single(&mut self, w: &mut Word) -> Result<(), LexError> {
        loop {
            match self.peek() {
                None => return Err(LexError::Unterminated),
                Some('\'') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(c) => {
                    w.value.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn lex_dq(&mut self, w: &mut Word) -> Result<(), LexError> {
        loop {
            match self.peek() {
                None => return Err(LexError::Unterminated),
                Some('"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some('\\') => match self.peek_at(1) {
                    Some('\n') => self.pos += 2,
                    Some(n @ ('$' | '`' | '"' | '\\')) => {
                        w.value.push(n);
                        self.pos += 2;
                    }
                    Some(n) => {
                        w.value.push('\\');
                        w.value.push(n);
                        self.pos += 2;
                    }
                    None => return Err(LexError::Unterminated),
                },
                Some('$') => self.lex_dollar(w, true)?,
                Some('`') => self.lex_backtick(w)?,
                Some(c) => {
                    w.value.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    fn lex_dollar(&mut self, w: &mut Word, in_dq: bool) -> Result<(), LexError> {
        let start = self.pos;
        let (next, ni) = self.next_sig(self.pos + 1);
        match next {
            Some('(') => {
                let (after, _) = self.next_sig(ni + 1);
                let arith = after == Some('(');
                let kind = if arith {
                    FindingKind::Arithmetic
                } else {
                    FindingKind::Command
                };
                let (idx, keep) = self.record(kind);
                self.pos = ni + 1;
                let body_start = self.pos;
                self.enter(true)?;
                self.lex_list(true)?;
                self.leave(true);
                let payload = self.slice(body_start, self.pos.saturating_sub(1));
                if arith {
                    // `$((a) (b))` is not arithmetic: bash re-reads it as a
                    // command substitution around a subshell.
                    let t = payload.trim();
                    if !(t.starts_with('(') && t.ends_with(')')) {
                        if let Some(f) = self.findings.get_mut(idx) {
                            f.kind = FindingKind::Command;
                        }
                    }
                }
                if keep {
                    self.set_payload(idx, payload);
                }
            }
            Some('{') => {
                self.record(FindingKind::Parameter);
                self.pos = ni + 1;
                self.scan_balanced('{', '}', in_dq)?;
            }
            Some('[') => {
                self.record(FindingKind::Arithmetic);
                self.pos = ni + 1;
                self.scan_balanced('[', ']', in_dq)?;
            }
            Some('\'') if !in_dq => {
                self.pos = ni + 1;
                w.quoted = true;
                return self.lex_ansi_c(w);
            }
            Some('"') if !in_dq => {
                self.pos = ni + 1;
                w.quoted = true;
                return self.lex_dq(w);
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                self.record(FindingKind::Parameter);
                self.pos = ni;
                while self
                    .peek()
                    .is_some_and(|c| c == '_' || c.is_ascii_alphanumeric())
                {
                    self.pos += 1;
                }
            }
            Some(c) if c.is_ascii_digit() || "@*#?-$!".contains(c) => {
                self.record(FindingKind::Parameter);
                self.pos = ni + 1;
            }
            _ => {
                w.value.push('$');
                self.pos += 1;
                return Ok(());
            }
        }
        w.expansion = true;
        let raw = self.slice(start, self.pos);
        w.value.push_str(&raw);
        Ok(())
    }

    fn lex_backtick(&mut self, w: &mut Word) -> Result<(), LexError> {
        let start = self.pos;
        let (idx, keep) = self.record(FindingKind::Command);
        self.pos += 1;
        let mut payload = String::new();
        loop {
            match self.peek() {
                None => return Err(LexError::Unterminated),
                Some('`') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') => match self.peek_at(1) {
                    Some(n @ ('`' | '\\' | '$')) => {
                        payload.push(n);
                        self.pos += 2;
                    }
                    Some('\n') => self.pos += 2,
                    Some(n) => {
                        payload.push('\\');
                        payload.push(n);
                        self.pos += 2;
                    }
                    None => return Err(LexError::Unterminated),
                },
                Some(c) => {
                    payload.push(c);
                    self.pos += 1;
                }
            }
        }
        if keep {
            self.set_payload(idx, payload);
        }
        w.expansion = true;
        let raw = self.slice(start, self.pos);
        w.value.push_str(&raw);
        Ok(())
    }

    fn lex_process_subst(&mut self, w: &mut Word) -> Result<(), LexError> {
        let start = self.pos;
        let (idx, keep) = self.record(FindingKind::Process);
        self.pos += 2;
        let body_start = self.pos;
        self.enter(true)?;
        self.lex_list(true)?;
        self.leave(true);
        if keep {
            let payload = self.slice(body_start, self.pos.saturating_sub(1));
            self.set_payload(idx, payload);
        }
        w.expansion = true;
        let raw = self.slice(start, self.pos);
        w.value.push_str(&raw);
        Ok(())
    }

    /// Skips a `${…}` or `$[…]` body, recording nested expansions.
    fn scan_balanced(&mut self, open: char, close: char, in_dq: bool) -> Result<(), LexError> {
        self.enter(false)?;
        let mut depth = 1usize;
        let mut scratch = Word::default();
        loop {
            match self.peek() {
                None => return Err(LexError::Unterminated),
                Some('\\') => {
                    if self.peek_at(1).is_none() {
                        return Err(LexError::Unterminated);
                    }
                    self.pos += 2;
                }
                Some('\'') if !in_dq => {
                    self.pos += 1;
                    self.lex_single(&mut scratch)?;
                }
                Some('"') => {
                    self.pos += 1;
                    self.lex_dq(&mut scratch)?;
                }
                Some('$') => self.lex_dollar(&mut scratch, in_dq)?,
                Some('`') => self.lex_backtick(&mut scratch)?,
                Some(c) if c == open => {
                    depth += 1;
                    self.pos += 1;
                }
                Some(c) if c == close => {
                    depth -= 1;
                    self.pos += 1;
                    if depth == 0 {
                        break;
                    }
                }
                Some(_) => self.pos += 1,
            }
        }
        self.leave(false);
        Ok(())
    }

    /// `$'…'` with C escapes decoded, so `$'\x72\x6d'` is seen as `rm`.
    fn lex_ansi_c(&mut self, w: &mut Word) -> Result<(), LexError> {
        loop {
            let Some(c) = self.peek() else {
                return Err(LexError::Unterminated);
            };
            self.pos += 1;
            match c {
                '\'' => return Ok(()),
                '\\' => {
                    let Some(e) = self.peek() else {
                        return Err(LexError::Unterminated);
                    };
                    self.pos += 1;
                    match e {
                        'a' => w.value.push('\u{7}'),
                        'b' => w.value.push('\u{8}'),
                        'e' | 'E' => w.value.push('\u{1b}'),
                        'f' => w.value.push('\u{c}'),
                        'n' => w.value.push('\n'),
                        'r' => w.value.push('\r'),
                        't' => w.value.push('\t'),
                        'v' => w.value.push('\u{b}'),
                        '\\' | '\'' | '"' | '?' => w.value.push(e),
                        '0'..='7' => {
                            let mut n = e.to_digit(8).unwrap_or(0);
                            for _ in 0..2 {
                                match self.peek().and_then(|d| d.to_digit(8)) {
                                    Some(d) => {
                                        n = n * 8 + d;
                                        self.pos += 1;
                                    }
                                    None => break,
                                }
                            }
                            w.value.push(char::from_u32(n & 0xff).unwrap_or('\u{fffd}'));
                        }
                        'x' | 'u' | 'U' => {
                            let max = match e {
                                'x' => 2,
                                'u' => 4,
                                _ => 8,
                            };
                            let mut n = 0u32;
                            let mut digits = 0;
                            while digits < max {
                                match self.peek().and_then(|d| d.to_digit(16)) {
                                    Some(d) => {
                                        n = n.wrapping_mul(16).wrapping_add(d);
                                        self.pos += 1;
                                        digits += 1;
                                    }
                                    None => break,
                                }
                            }
                            if digits == 0 {
                                w.value.push('\\');
                                w.value.push(e);
                            } else {
                                w.value.push(char::from_u32(n).unwrap_or('\u{fffd}'));
                            }
                        }
                        'c' => {
                            if let Some(x) = self.peek() {
                                self.pos += 1;
                                w.value
                                    .push(char::from_u32((x as u32) & 0x1f).unwrap_or('\u{fffd}'));
                            }
                        }
                        other => {
                            w.value.push('\\');
                            w.value.push(other);
                        }
                    }
                }
                other => w.value.push(other),
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Parser: tokens to a flat list of simple commands

#[derive(Debug, Default)]
struct Cmd {
    words: Vec<Word>,
    redirs: Vec<Redir>,
    /// The separator after this command (`Pipe` means the next one reads it).
    sep: Option<Op>,
}

impl Cmd {
    fn is_empty(&self) -> bool {
        self.words.is_empty() && self.redirs.is_empty()
    }
}

#[derive(Debug, Default)]
struct Script {
    cmds: Vec<Cmd>,
    compound: bool,
    syntax_error: bool,
    background: bool,
    multiline: bool,
}

const RESERVED: &[&str] = &[
    "{", "}", "!", "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while",
    "until", "do", "done", "function", "[[", "]]", "coproc",
];

/// Flattens the token stream. Compound syntax (subshells, groups, keywords,
/// functions) is only noted; the simple commands inside it are still
/// collected so destructive payloads in `(rm -rf /)` or `if …; then …` are
/// found.
fn parse(toks: Vec<Tok>) -> Script {
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

fn is_assignment(w: &Word) -> bool {
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

// ---------------------------------------------------------------------------
// Review of one text (a candidate or a nested payload)

fn classify_text(text: &str, ctx: Ctx) -> Verdict {
    if ctx.depth > MAX_DEPTH {
        return high("parse:too_deep", "nesting is too deep to review");
    }
    if text.trim().is_empty() {
        return high("parse:empty", "empty command");
    }
    if is_fork_bomb(text) {
        return block("destructive:fork_bomb", "fork bomb");
    }
    let mut acc = Acc::default();
    let mut lx = Lexer::new(text);
    let mut toks = Vec::new();
    let lexed = lx.lex_into(false, &mut toks);

    for f in &lx.findings {
        if let Some(payload) = &f.payload {
            acc.propagate(classify_text(payload, ctx.deeper()));
        }
    }
    let has = |kind: FindingKind| lx.findings.iter().any(|f| f.kind == kind);
    if has(FindingKind::Command) {
        acc.add(high(
            "substitution:command",
            "command substitution is never auto-approved",
        ));
    }
    if has(FindingKind::Process) {
        acc.add(high(
            "substitution:process",
            "process substitution is never auto-approved",
        ));
    }
    if has(FindingKind::Parameter) {
        acc.add(high(
            "expansion:parameter",
            "parameter expansion is not a literal",
        ));
    }
    if has(FindingKind::Arithmetic) {
        acc.add(high(
            "expansion:arithmetic",
            "arithmetic expansion is not a literal",
        ));
    }
    if text.chars().any(is_control) {
        acc.add(high(
            "parse:control_char",
            "control characters can hide what runs",
        ));
    }
    if text.chars().any(is_invisible) {
        acc.add(high(
            "parse:deceptive_char",
            "invisible or bidi characters can hide what runs",
        ));
    }
    let complete = match lexed {
        Ok(()) => true,
        Err(e) => {
            acc.add(e.verdict());
            // Bash still runs the complete lines before the one it cannot
            // parse: review those commands too.
            let keep = toks
                .iter()
                .rposition(|t| matches!(t, Tok::Op(Op::Newline)))
                .unwrap_or(0);
            toks.truncate(keep);
            false
        }
    };
    let script = parse(toks);
    if script.syntax_error {
        acc.add(LexError::Syntax.verdict());
    }
    if script.compound {
        acc.add(high(
            "shell:compound",
            "subshells, groups, functions and shell keywords are not auto-approved",
        ));
    }
    if script.background {
        acc.add(high(
            "shell:background",
            "background jobs are not auto-approved",
        ));
    }
    if script.multiline {
        acc.add(high(
            "shell:multiline",
            "multi-line commands are not auto-approved",
        ));
    }
    if complete && script.cmds.is_empty() {
        acc.add(high("parse:empty", "no command to run"));
    }
    for i in 0..script.cmds.len() {
        classify_command(&script, i, &lx.heredocs, ctx, &mut acc);
    }
    // Conservative on purpose: even a quoted or escaped spelling of these
    // forms is never auto-approved, so an approval never rests on the guard
    // and the shell agreeing about quoting.
    if ["$(", "`", "<(", ">("].iter().any(|p| text.contains(p)) {
        acc.add(high(
            "substitution:quoted_literal",
            "text resembling a substitution is not auto-approved",
        ));
    }
    if lx.comment_expansion {
        acc.add(high(
            "shell:comment_expansion",
            "expansion syntax in a comment is ambiguous",
        ));
    }
    acc.finish()
}

fn classify_command(script: &Script, i: usize, heredocs: &[HereDoc], ctx: Ctx, acc: &mut Acc) {
    let Some(cmd) = script.cmds.get(i) else {
        return;
    };
    let mut local = Acc::default();
    for r in &cmd.redirs {
        classify_redirect(r, &mut local);
    }
    let n_assign = cmd.words.iter().take_while(|w| is_assignment(w)).count();
    if n_assign > 0 {
        local.add(high(
            "env:assignment",
            "inline environment assignments require approval",
        ));
    }
    let argv = &cmd.words[n_assign..];
    if argv.is_empty() {
        if n_assign == 0 {
            local.add(high(
                "shell:redirect_only",
                "a redirection without a command",
            ));
        }
    } else {
        classify_argv(argv, ctx, 0, &mut local);
        if stdin_shell(argv) {
            // What a shell reads on stdin is a script: review it.
            for r in &cmd.redirs {
                match r.kind {
                    RedirKind::HereDoc => {
                        if let Some(doc) = r.heredoc.and_then(|idx| heredocs.get(idx)) {
                            local.propagate(classify_text(&doc.body, ctx.deeper()));
                        }
                    }
                    RedirKind::HereString => {
                        local.propagate(classify_text(&r.target.value, ctx.deeper()));
                    }
                    _ => {}
                }
            }
            if let Some(payload) = piped_text(script, i) {
                local.propagate(classify_text(&payload, ctx.deeper()));
            }
        }
        if let Some(line) = xargs_command_line(script, i, argv) {
            let mut tmp = Acc::default();
            classify_argv(&line, ctx.deeper(), 0, &mut tmp);
            if let Some(v) = tmp.take() {
                local.propagate(v);
            }
        }
    }
    let globbed = cmd.words.iter().any(|w| w.glob)
        || cmd
            .redirs
            .iter()
            .any(|r| r.kind != RedirKind::HereDoc && r.target.glob);
    if globbed {
        local.add(high(
            "expansion:glob",
            "unquoted filename expansion is not a literal",
        ));
    }
    let sensitive = cmd
        .words
        .iter()
        .map(|w| w.value.as_str())
        .chain(
            cmd.redirs
                .iter()
                .filter(|r| r.kind != RedirKind::HereDoc)
                .map(|r| r.target.value.as_str()),
        )
        .find_map(sensitive_kind);
    let mut v = local.finish();
    if let Some(kind) = sensitive {
        v = raise_for_sensitive(v, kind, "touches a credential path");
    }
    acc.add(v);
}

fn classify_redirect(r: &Redir, acc: &mut Acc) {
    let t = &r.target;
    match r.kind {
        RedirKind::HereDoc | RedirKind::HereString => {
            acc.add(high(
                "shell:heredoc",
                "here-documents and here-strings are not auto-approved",
            ));
        }
        RedirKind::Read => {
            if path_is_outside(t) {
                acc.add(medium(
                    "path:outside_workspace",
                    "reads a path outside the working tree",
                ));
            }
        }
        RedirKind::Dup if !t.expansion && is_fd_target(&t.value) => {}
        RedirKind::Write | RedirKind::Dup => {
            if !t.expansion && is_block_device(&t.value) {
                acc.add(block(
                    "destructive:device_write",
                    "writes to a raw block or memory device",
                ));
            } else if !t.expansion && collapse_slashes(&t.value) == "/proc/sysrq-trigger" {
                acc.add(block(
                    "destructive:shutdown",
                    "sysrq trigger can reboot or crash the host",
                ));
            } else if t.expansion || t.glob || !is_null_sink(&t.value) {
                acc.add(high("redirect:write", "shell redirection writes a file"));
            }
        }
    }
}

fn is_fd_target(v: &str) -> bool {
    let digits = v.strip_suffix('-').unwrap_or(v);
    v == "-" || (!digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
}

fn is_null_sink(v: &str) -> bool {
    matches!(
        collapse_slashes(v).as_str(),
        "/dev/null" | "/dev/stdout" | "/dev/stderr"
    )
}

fn collapse_slashes(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        if c == '/' && out.ends_with('/') {
            continue;
        }
        out.push(c);
    }
    out
}

fn is_block_device(v: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "rdisk", "dm-", "md", "mapper/", "nbd",
        "mem", "kmem", "port",
    ];
    let v = collapse_slashes(v);
    v.strip_prefix("/dev/")
        .is_some_and(|dev| PREFIXES.iter().any(|p| dev.starts_with(p)))
}

// ---------------------------------------------------------------------------
// Simple-command classification

const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish", "csh", "tcsh",
];

/// Read-only commands without options that write, execute or read paths
/// named inside options.
#[rustfmt::skip]
const PLAIN_READ_ONLY: &[&str] = &[
    "ls", "cat", "tac", "nl", "head", "tail", "cut", "tr", "rev", "fold", "fmt", "column", "paste",
    "join", "expand", "unexpand", "strings", "od", "cmp", "comm", "diff", "md5sum", "sha1sum",
    "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "stat", "df", "basename",
    "dirname", "realpath", "readlink", "seq", "sleep", "true", "false", "pwd", "echo", "printf",
    "whoami", "id", "groups", "uname", "nproc", "uptime", "free", "which", "type", "test", "[",
    "tty", "arch", "locale",
];

/// Read-only commands whose arguments are not file paths.
const NON_FILE: &[&str] = &[
    "echo", "printf", "true", "false", "sleep", "seq", "whoami", "id", "groups", "uname", "pwd",
    "date", "basename", "dirname", "hostname", "nproc", "uptime", "free", "which", "type",
    "command", "test", "[", "tty", "arch", "locale",
];

#[rustfmt::skip]
const NETWORK: &[&str] = &[
    "curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "socat", "telnet",
    "ftp", "tftp", "ping", "dig", "nslookup", "host", "whois", "gh", "aws", "gcloud", "az", "http",
    "https", "xh", "aria2c", "ssh-keyscan",
];

const FILE_WRITE: &[&str] = &[
    "cp", "mv", "mkdir", "touch", "chmod", "chown", "chgrp", "ln", "install", "tee", "truncate",
    "dd", "tar", "zip", "unzip", "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "7z",
    "patch", "split", "csplit", "mktemp", "mkfifo", "mknod", "setfacl", "chattr", "sponge",
];

const FILE_DELETE: &[&str] = &["rm", "rmdir", "unlink", "shred"];

#[rustfmt::skip]
const SHELL_STATE: &[&str] = &[
    "export", "unset", "set", "alias", "unalias", "trap", "shopt", "declare", "local", "readonly",
    "typeset", "umask", "ulimit", "hash", "enable", "exit", "return", "shift", "wait", "jobs",
    "fg", "bg", "disown", "read", "mapfile", "readarray", "let", "getopts", "history", "fc",
    "bind", "complete",
];

#[rustfmt::skip]
const SYSTEM_ADMIN: &[&str] = &[
    "mount", "umount", "fdisk", "sfdisk", "parted", "gdisk", "losetup", "swapon", "swapoff",
    "sysctl", "modprobe", "insmod", "rmmod", "useradd", "userdel", "usermod", "groupadd",
    "groupdel", "passwd", "chpasswd", "visudo", "iptables", "ip6tables", "nft", "ufw",
    "firewall-cmd", "ip", "ifconfig", "route", "setenforce", "update-alternatives", "ldconfig",
    "dmsetup", "cryptsetup", "lvremove", "vgremove", "pvremove", "zpool", "zfs", "diskutil",
    "hdiutil", "nvram", "csrutil",
];

const SYSTEM_PKG: &[&str] = &[
    "apt", "apt-get", "aptitude", "dpkg", "dnf", "yum", "rpm", "zypper", "pacman", "apk", "brew",
    "port", "snap", "flatpak", "nix-env", "emerge",
];

#[rustfmt::skip]
const PROJECT_TOOLS: &[&str] = &[
    "pytest", "py.test", "tox", "nox", "make", "gmake", "cmake", "ninja", "meson", "just", "rake",
    "gradle", "gradlew", "mvn", "mvnw", "ant", "cargo", "rustc", "rustup", "go", "npm", "pnpm",
    "yarn", "npx", "bunx", "uv", "uvx", "poetry", "pipenv", "pip", "pip3", "pipx", "pdm", "hatch",
    "bundle", "composer", "dotnet", "swift", "swiftc", "mix", "pre-commit", "tsc", "jest",
    "vitest", "mocha", "eslint", "prettier", "ruff", "mypy", "pyright", "black", "isort", "flake8",
    "pylint", "javac", "gcc", "g++", "clang", "clang++", "cc", "c++", "bazel", "sbt", "lein",
    "stack", "cabal", "ghc", "zig", "conda", "mamba", "terraform", "ansible", "ansible-playbook",
];

#[rustfmt::skip]
const INTERPRETERS: &[&str] = &[
    "node", "nodejs", "deno", "bun", "perl", "ruby", "php", "lua", "luajit", "rscript", "julia",
    "tclsh", "wish", "osascript", "pwsh", "powershell", "irb", "java",
];

fn is_python(base: &str) -> bool {
    ["python", "pypy"].iter().any(|p| {
        base.strip_prefix(p)
            .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit() || c == '.'))
    })
}

fn classify_argv(argv: &[Word], ctx: Ctx, depth: usize, acc: &mut Acc) {
    let Some(w0) = argv.first() else { return };
    if depth > MAX_ARGV_DEPTH {
        acc.add(high(
            "parse:too_deep",
            "wrapper chain is too deep to review",
        ));
        return;
    }
    let args = &argv[1..];
    let name = w0.value.as_str();
    let base_orig = basename(name);
    // Destructive checks ignore case: case-insensitive filesystems run `RM`.
    let base = base_orig.to_lowercase();

    if let Some(expanded) = brace_expand(argv) {
        let mut tmp = Acc::default();
        classify_argv(&expanded, ctx, depth + 1, &mut tmp);
        if let Some(v) = tmp.take() {
            acc.propagate(v);
        }
    }
    if let Some(v) = destructive(&base, args, ctx) {
        acc.add(v);
    }
    if w0.expansion {
        acc.add(high(
            "command:dynamic_name",
            "the command name is computed at run time",
        ));
    } else if name.contains('/') {
        acc.add(high(
            "command:path_qualified",
            "auto-approved commands must be bare names, not paths that can run workspace code",
        ));
    } else if w0.quoted {
        acc.add(high(
            "command:quoted_name",
            "quoted or escaped command names are not auto-approved",
        ));
    }
    if base != base_orig || base.is_empty() {
        acc.add(high(
            "command:unknown",
            format!("unrecognised command `{base_orig}`"),
        ));
    }
    dispatch(&base, args, ctx, depth, acc);
}

fn dispatch(base: &str, args: &[Word], ctx: Ctx, depth: usize, acc: &mut Acc) {
    if let Some(spec) = wrapper_spec(base) {
        classify_wrapper(base, &spec, args, ctx, depth, acc);
        return;
    }
    if SHELLS.contains(&base) {
        classify_shell(args, ctx, acc);
        return;
    }
    if classify_read_only(base, args, ctx, depth, acc) {
        return;
    }
    let v = match base {
        "eval" => {
            acc.add(high(
                "shell:eval",
                "eval runs its arguments as a new command",
            ));
            acc.propagate(classify_text(&join_values(args), ctx.deeper()));
            return;
        }
        "git" => {
            classify_git(args, acc);
            return;
        }
        "source" | "." => high(
            "exec:source",
            "runs a shell script file in the current shell",
        ),
        "cd" | "pushd" | "popd" => high(
            "cwd_change:cd",
            "working-directory changes require approval",
        ),
        "awk" | "gawk" | "mawk" | "nawk" => {
            if args
                .iter()
                .any(|w| w.value.starts_with("-f") || w.value.starts_with("--file"))
            {
                high("exec:command_file", "runs a program loaded from a file")
            } else {
                high("exec:awk", "awk programs can run commands and write files")
            }
        }
        "timedatectl" | "hwclock" | "ntpdate" => high(
            format!("system_time:{base}"),
            "system-time tools can change the clock",
        ),
        "kill" | "pkill" | "killall" | "renice" | "skill" => {
            high("process:signal", "signals processes")
        }
        "systemctl" | "service" | "launchctl" | "loginctl" | "initctl" | "rc-service" => {
            high("service:control", "controls system services")
        }
        "docker" | "podman" | "kubectl" | "helm" | "nerdctl" | "docker-compose" | "minikube" => {
            high(
                format!("container:{base}"),
                "controls containers or clusters",
            )
        }
        "crontab" | "at" | "batch" => high("system:schedule", "schedules commands"),
        b if NETWORK.contains(&b) => high(format!("network:{b}"), "reaches the network"),
        b if FILE_DELETE.contains(&b) => high(format!("file_delete:{b}"), "deletes files"),
        b if FILE_WRITE.contains(&b) => high(format!("file_write:{b}"), "writes or changes files"),
        b if SHELL_STATE.contains(&b) => high("shell:state", "changes shell state"),
        b if SYSTEM_ADMIN.contains(&b) => high("system:admin", "system administration command"),
        b if SYSTEM_PKG.contains(&b) => {
            high("dependency:system", "installs or changes system packages")
        }
        b if is_python(b) || INTERPRETERS.contains(&b) => interpreter_verdict(b, args),
        b if PROJECT_TOOLS.contains(&b) => project_verdict(b, args),
        _ => high("command:unknown", format!("unrecognised command `{base}`")),
    };
    acc.add(v);
}

// ---------------------------------------------------------------------------
// Option parsing shared by the read-only checkers and the wrappers

struct OptSpec {
    /// Short options that take a value (attached or as the next word).
    short_val: &'static str,
    /// Long options that take a value when written without `=`.
    long_val: &'static [&'static str],
}

#[derive(Debug)]
enum Arg<'a> {
    Short(char, Option<String>),
    Long(String, Option<String>),
    Pos(&'a Word),
}

/// GNU-style parsing with permutation; `stop_at_pos` stops at the first
/// positional (wrappers: the rest is the wrapped command). Returns the index
/// of the first word not consumed.
fn parse_args<'a>(args: &'a [Word], spec: &OptSpec, stop_at_pos: bool) -> (Vec<Arg<'a>>, usize) {
    let mut out = Vec::new();
    let mut i = 0;
    let mut only_pos = false;
    while let Some(w) = args.get(i) {
        let v = w.value.as_str();
        if only_pos {
            out.push(Arg::Pos(w));
            i += 1;
            continue;
        }
        if v == "--" {
            i += 1;
            if stop_at_pos {
                break;
            }
            only_pos = true;
            continue;
        }
        if let Some(long) = v.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, val)) => (n, Some(val.to_string())),
                None => (long, None),
            };
            let takes = value.is_none()
                && !name.is_empty()
                && spec.long_val.iter().any(|o| o.starts_with(name));
            let value = if takes {
                i += 1;
                args.get(i).map(|w| w.value.clone())
            } else {
                value
            };
            out.push(Arg::Long(name.to_string(), value));
            i += 1;
            continue;
        }
        if v.len() > 1 && v.starts_with('-') {
            let chars: Vec<char> = v.chars().skip(1).collect();
            for (k, c) in chars.iter().enumerate() {
                if spec.short_val.contains(*c) {
                    let rest: String = chars[k + 1..].iter().collect();
                    let value = if rest.is_empty() {
                        i += 1;
                        args.get(i).map(|w| w.value.clone())
                    } else {
                        Some(rest)
                    };
                    out.push(Arg::Short(*c, value));
                    break;
                }
                out.push(Arg::Short(*c, None));
            }
            i += 1;
            continue;
        }
        if stop_at_pos {
            break;
        }
        out.push(Arg::Pos(w));
        i += 1;
    }
    (out, i.min(args.len()))
}

/// A long option matches `full` exactly or as a GNU abbreviation; `exact`
/// lists real options that share the prefix (`--exclude` vs
/// `--exclude-from`) so they are not mistaken for it.
fn long_opt<'b>(parsed: &'b [Arg], full: &str, exact: &[&str]) -> Option<&'b Option<String>> {
    parsed.iter().find_map(|a| match a {
        Arg::Long(n, v)
            if !n.is_empty()
                && (n == full
                    || (full.starts_with(n.as_str()) && !exact.contains(&n.as_str()))) =>
        {
            Some(v)
        }
        _ => None,
    })
}

fn has_long(parsed: &[Arg], full: &str, exact: &[&str]) -> bool {
    long_opt(parsed, full, exact).is_some()
}

fn has_short(parsed: &[Arg], c: char) -> bool {
    parsed
        .iter()
        .any(|a| matches!(a, Arg::Short(s, _) if *s == c))
}

fn short_values(parsed: &[Arg], c: char) -> Vec<String> {
    parsed
        .iter()
        .filter_map(|a| match a {
            Arg::Short(s, Some(v)) if *s == c => Some(v.clone()),
            _ => None,
        })
        .collect()
}

fn long_values(parsed: &[Arg], full: &str) -> Vec<String> {
    parsed
        .iter()
        .filter_map(|a| match a {
            Arg::Long(n, Some(v)) if !n.is_empty() && full.starts_with(n.as_str()) => {
                Some(v.clone())
            }
            _ => None,
        })
        .collect()
}

fn positionals<'a>(parsed: &[Arg<'a>]) -> Vec<&'a Word> {
    parsed
        .iter()
        .filter_map(|a| match a {
            Arg::Pos(w) => Some(*w),
            _ => None,
        })
        .collect()
}

fn is_long(a: &str, full: &str, exact: &[&str]) -> bool {
    a.strip_prefix("--")
        .map(|n| n.split_once('=').map_or(n, |(name, _)| name))
        .is_some_and(|n| {
            !n.is_empty() && (n == full || (full.starts_with(n) && !exact.contains(&n)))
        })
}

fn short_cluster_has(a: &str, c: char) -> bool {
    a.len() > 1 && a.starts_with('-') && !a.starts_with("--") && a[1..].contains(c)
}

// ---------------------------------------------------------------------------
// Read-only commands

fn read_path(base: &str) -> Verdict {
    high(
        format!("read_path:{base}"),
        "an option names a file the command reads",
    )
}

fn classify_read_only(base: &str, args: &[Word], ctx: Ctx, depth: usize, acc: &mut Acc) -> bool {
    let ok = || allow(format!("read_only:{base}"), "literal read-only command");
    let v = match base {
        b if PLAIN_READ_ONLY.contains(&b) => ok(),
        "wc" => {
            let (p, _) = parse_args(
                args,
                &OptSpec {
                    short_val: "",
                    long_val: &["files0-from"],
                },
                false,
            );
            if has_long(&p, "files0-from", &[]) {
                read_path(base)
            } else {
                ok()
            }
        }
        "sort" => {
            let spec = OptSpec {
                short_val: "kotST",
                long_val: &[
                    "key",
                    "output",
                    "field-separator",
                    "temporary-directory",
                    "buffer-size",
                    "compress-program",
                    "random-source",
                    "files0-from",
                    "parallel",
                    "batch-size",
                ],
            };
            let (p, _) = parse_args(args, &spec, false);
            if has_long(&p, "compress-program", &[]) {
                high("exec:sort_compress", "sort runs a compression program")
            } else if has_short(&p, 'o')
                || has_long(&p, "output", &[])
                || has_short(&p, 'T')
                || has_long(&p, "temporary-directory", &[])
            {
                high("file_write:sort", "sort writes an output or temporary file")
            } else if has_long(&p, "random-source", &[]) || has_long(&p, "files0-from", &[]) {
                read_path(base)
            } else {
                ok()
            }
        }
        "uniq" => {
            let spec = OptSpec {
                short_val: "fsw",
                long_val: &["skip-fields", "skip-chars", "check-chars"],
            };
            let (p, _) = parse_args(args, &spec, false);
            let pos = positionals(&p);
            if pos.len() >= 2 && pos[1].value != "-" {
                high("file_write:uniq", "uniq writes its second operand")
            } else {
                ok()
            }
        }
        "grep" | "egrep" | "fgrep" => {
            let (p, _) = parse_args(args, &GREP_SPEC, false);
            if has_short(&p, 'f')
                || has_long(&p, "file", &[])
                || has_long(&p, "exclude-from", &["exclude"])
            {
                read_path("grep")
            } else {
                ok()
            }
        }
        "rg" => {
            let (p, _) = parse_args(args, &RG_SPEC, false);
            if has_long(&p, "pre", &[]) || has_long(&p, "pre-glob", &[]) {
                high("exec:rg_pre", "ripgrep --pre runs a preprocessor command")
            } else if has_short(&p, 'z') || has_long(&p, "search-zip", &[]) {
                high(
                    "exec:rg_search_zip",
                    "ripgrep --search-zip runs decompression programs",
                )
            } else if has_long(&p, "hostname-bin", &[]) {
                high(
                    "exec:rg_hostname_bin",
                    "ripgrep --hostname-bin runs a program",
                )
            } else if has_short(&p, 'f')
                || has_long(&p, "file", &[])
                || has_long(&p, "ignore-file", &[])
            {
                read_path("rg")
            } else {
                ok()
            }
        }
        "find" => classify_find(args, ctx, depth, acc).unwrap_or_else(ok),
        "sed" => classify_sed(args).unwrap_or_else(ok),
        "file" => {
            let spec = OptSpec {
                short_val: "mfFeP",
                long_val: &[
                    "magic-file",
                    "files-from",
                    "separator",
                    "exclude",
                    "exclude-quiet",
                    "parameter",
                ],
            };
            let (p, _) = parse_args(args, &spec, false);
            if has_short(&p, 'C') || has_long(&p, "compile", &[]) {
                high("file_write:file", "file --compile writes a magic database")
            } else if has_short(&p, 'm')
                || has_short(&p, 'f')
                || has_long(&p, "magic-file", &[])
                || has_long(&p, "files-from", &[])
            {
                read_path(base)
            } else {
                ok()
            }
        }
        "date" => {
            let spec = OptSpec {
                short_val: "dfrs",
                long_val: &["date", "file", "reference", "set"],
            };
            let (p, _) = parse_args(args, &spec, false);
            let sets_time = has_short(&p, 's')
                || has_long(&p, "set", &[])
                || positionals(&p).iter().any(|w| !w.value.starts_with('+'));
            if sets_time {
                high("system_time:date", "date can set the system clock")
            } else if has_short(&p, 'f')
                || has_short(&p, 'r')
                || has_long(&p, "file", &[])
                || has_long(&p, "reference", &[])
            {
                read_path(base)
            } else {
                ok()
            }
        }
        "du" => {
            let spec = OptSpec {
                short_val: "BdtX",
                long_val: &[
                    "block-size",
                    "max-depth",
                    "threshold",
                    "exclude-from",
                    "exclude",
                    "files0-from",
                    "time-style",
                ],
            };
            let (p, _) = parse_args(args, &spec, false);
            if has_short(&p, 'X')
                || has_long(&p, "exclude-from", &["exclude"])
                || has_long(&p, "files0-from", &[])
            {
                read_path(base)
            } else {
                ok()
            }
        }
        "tree" => {
            let spec = OptSpec {
                short_val: "LPIoHT",
                long_val: &["charset", "filelimit", "timefmt", "sort"],
            };
            let (p, _) = parse_args(args, &spec, false);
            if has_short(&p, 'o') || has_short(&p, 'R') {
                high("file_write:tree", "tree -o/-R writes output files")
            } else {
                ok()
            }
        }
        "hexdump" => {
            let spec = OptSpec {
                short_val: "efns",
                long_val: &["format", "format-file", "length", "skip"],
            };
            let (p, _) = parse_args(args, &spec, false);
            if has_short(&p, 'f') || has_long(&p, "format-file", &[]) {
                read_path(base)
            } else {
                ok()
            }
        }
        "xxd" => {
            let spec = OptSpec {
                short_val: "cglnos",
                long_val: &[],
            };
            let (p, _) = parse_args(args, &spec, false);
            if positionals(&p).len() > 1 {
                high("file_write:xxd", "xxd writes its second operand")
            } else {
                ok()
            }
        }
        "jq" => {
            let (p, _) = parse_args(args, &JQ_SPEC, false);
            if has_short(&p, 'f') || has_long(&p, "from-file", &[]) {
                high("exec:command_file", "runs a program loaded from a file")
            } else if has_short(&p, 'L')
                || has_long(&p, "rawfile", &[])
                || has_long(&p, "slurpfile", &["slurp"])
            {
                read_path(base)
            } else {
                ok()
            }
        }
        "base64" | "base32" => {
            // BSD base64 writes a file with -o.
            if args
                .iter()
                .any(|w| w.value.starts_with("-o") || is_long(&w.value, "output", &[]))
            {
                high(format!("file_write:{base}"), "writes its output to a file")
            } else {
                ok()
            }
        }
        "hostname" => {
            let spec = OptSpec {
                short_val: "F",
                long_val: &["file"],
            };
            let (p, _) = parse_args(args, &spec, false);
            if has_short(&p, 'F') || has_long(&p, "file", &[]) || !positionals(&p).is_empty() {
                high(
                    "system:hostname",
                    "hostname with an operand changes the host name",
                )
            } else {
                ok()
            }
        }
        _ => return false,
    };
    acc.add(v);
    if !NON_FILE.contains(&base) && path_operands(base, args).into_iter().any(path_is_outside) {
        acc.add(medium(
            "path:outside_workspace",
            "reads a path outside the working tree",
        ));
    }
    true
}

const SED_SPEC: OptSpec = OptSpec {
    short_val: "efl",
    long_val: &["expression", "file", "line-length"],
};

const GREP_SPEC: OptSpec = OptSpec {
    short_val: "efmABCdD",
    long_val: &[
        "regexp",
        "file",
        "max-count",
        "after-context",
        "before-context",
        "context",
        "directories",
        "devices",
        "label",
        "include",
        "exclude",
        "exclude-from",
        "exclude-dir",
        "binary-files",
        "group-separator",
    ],
};

const RG_SPEC: OptSpec = OptSpec {
    short_val: "ABCEMTdefgjmrt",
    long_val: &[
        "after-context",
        "before-context",
        "context",
        "color",
        "colors",
        "context-separator",
        "dfa-size-limit",
        "encoding",
        "engine",
        "field-context-separator",
        "field-match-separator",
        "file",
        "glob",
        "hostname-bin",
        "hyperlink-format",
        "iglob",
        "ignore-file",
        "max-columns",
        "max-count",
        "max-depth",
        "max-filesize",
        "path-separator",
        "pre",
        "pre-glob",
        "regex-size-limit",
        "regexp",
        "replace",
        "sort",
        "sortr",
        "threads",
        "type",
        "type-add",
        "type-clear",
        "type-not",
    ],
};

const JQ_SPEC: OptSpec = OptSpec {
    short_val: "fL",
    long_val: &[
        "from-file",
        "arg",
        "argjson",
        "slurpfile",
        "rawfile",
        "indent",
    ],
};

/// The words a read-only command treats as paths: a sed script, a grep/rg
/// pattern or a jq filter is not one (`sed '/a/,/b/p'` reads nothing at `/`).
fn path_operands<'a>(base: &str, args: &'a [Word]) -> Vec<&'a Word> {
    let (spec, pattern_opts): (&OptSpec, &[char]) = match base {
        "sed" => (&SED_SPEC, &['e', 'f']),
        "grep" | "egrep" | "fgrep" => (&GREP_SPEC, &['e', 'f']),
        "rg" => (&RG_SPEC, &['e', 'f']),
        "jq" => (&JQ_SPEC, &['f']),
        _ => return args.iter().collect(),
    };
    let (p, _) = parse_args(args, spec, false);
    let mut pos = positionals(&p);
    let has_pattern_opt = pattern_opts.iter().any(|c| has_short(&p, *c))
        || has_long(&p, "expression", &[])
        || has_long(&p, "regexp", &[])
        || has_long(&p, "file", &[])
        || has_long(&p, "from-file", &[]);
    if !has_pattern_opt && !pos.is_empty() {
        pos.remove(0);
    }
    pos
}

/// `None` when no executable/writing primary is present.
fn classify_find(args: &[Word], ctx: Ctx, depth: usize, acc: &mut Acc) -> Option<Verdict> {
    let mut found: Option<Verdict> = None;
    let mut note = |v: Verdict| {
        if found.as_ref().is_none_or(|f| v.outranks(f)) {
            found = Some(v);
        }
    };
    let mut i = 0;
    while let Some(w) = args.get(i) {
        match w.value.as_str() {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                note(high(
                    "exec:find_exec",
                    "find -exec runs a command for each match",
                ));
                let start = i + 1;
                let mut end = start;
                while args
                    .get(end)
                    .is_some_and(|a| !matches!(a.value.as_str(), ";" | "+"))
                {
                    end += 1;
                }
                if start < end {
                    let mut tmp = Acc::default();
                    classify_argv(&args[start..end.min(args.len())], ctx, depth + 1, &mut tmp);
                    if let Some(v) = tmp.take() {
                        acc.propagate(v);
                    }
                }
                i = end + 1;
                continue;
            }
            "-delete" => note(high("file_delete:find", "find -delete removes files")),
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                note(high("file_write:find", "find writes its output to a file"))
            }
            "-files0-from" => note(read_path("find")),
            _ => {}
        }
        i += 1;
    }
    found
}

/// `None` when the invocation is a plain read.
fn classify_sed(args: &[Word]) -> Option<Verdict> {
    let (p, _) = parse_args(args, &SED_SPEC, false);
    if has_short(&p, 'i') || has_long(&p, "in-place", &[]) {
        return Some(high("file_write:sed", "sed -i edits files in place"));
    }
    if has_short(&p, 'f') || has_long(&p, "file", &[]) {
        return Some(high(
            "exec:command_file",
            "sed runs a script loaded from a file",
        ));
    }
    let mut scripts = short_values(&p, 'e');
    scripts.extend(long_values(&p, "expression"));
    if scripts.is_empty() {
        if let Some(first) = positionals(&p).first() {
            scripts.push(first.value.clone());
        }
    }
    for script in &scripts {
        match sed_effects(script) {
            None => {
                return Some(high(
                    "sed:unparsed_script",
                    "sed script the guard cannot parse",
                ))
            }
            Some(fx) if fx.exec => {
                return Some(high("exec:sed_e", "GNU sed e runs shell commands"))
            }
            Some(fx) if fx.write => return Some(high("file_write:sed", "sed w writes files")),
            Some(fx) if fx.read => return Some(read_path("sed")),
            Some(_) => {}
        }
    }
    None
}

#[derive(Debug, Default)]
struct SedEffects {
    exec: bool,
    write: bool,
    read: bool,
}

/// A small GNU sed script parser: enough to find `e`, `w`, `W`, `r`, `R`
/// commands and the `e`/`w` flags of `s`, wherever addresses put them.
fn sed_effects(script: &str) -> Option<SedEffects> {
    let c: Vec<char> = script.chars().collect();
    let n = c.len();
    let mut i = 0;
    let mut fx = SedEffects::default();
    let skip_ws = |i: &mut usize| {
        while *i < n && (c[*i] == ' ' || c[*i] == '\t') {
            *i += 1;
        }
    };
    let to_eol = |i: &mut usize| {
        while *i < n && c[*i] != '\n' {
            *i += 1;
        }
    };
    loop {
        while i < n && (c[i].is_whitespace() || c[i] == ';') {
            i += 1;
        }
        if i >= n {
            return Some(fx);
        }
        if c[i] == '#' {
            to_eol(&mut i);
            continue;
        }
        i = sed_address(&c, i, false)?;
        skip_ws(&mut i);
        if i < n && c[i] == ',' {
            i += 1;
            skip_ws(&mut i);
            i = sed_address(&c, i, true)?;
            skip_ws(&mut i);
        }
        while i < n && (c[i] == '!' || c[i] == ' ' || c[i] == '\t') {
            i += 1;
        }
        let cmd = *c.get(i)?;
        i += 1;
        match cmd {
            '{' | '}' => continue,
            '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z' | 'F' => {}
            'l' | 'L' | 'q' | 'Q' => {
                skip_ws(&mut i);
                while i < n && c[i].is_ascii_digit() {
                    i += 1;
                }
            }
            ':' | 'b' | 't' | 'T' | 'v' => {
                while i < n && c[i] != ';' && c[i] != '\n' && c[i] != '}' {
                    i += 1;
                }
            }
            'a' | 'i' | 'c' => {
                while i < n {
                    if c[i] == '\\' && i + 1 < n {
                        i += 2;
                        continue;
                    }
                    if c[i] == '\n' {
                        break;
                    }
                    i += 1;
                }
            }
            'y' => {
                let d = *c.get(i)?;
                if d == '\\' || d == '\n' {
                    return None;
                }
                i = sed_delimited(&c, i + 1, d, false)?;
                i = sed_delimited(&c, i, d, false)?;
            }
            's' => {
                let d = *c.get(i)?;
                if d == '\\' || d == '\n' {
                    return None;
                }
                i = sed_delimited(&c, i + 1, d, true)?;
                i = sed_delimited(&c, i, d, false)?;
                loop {
                    match c.get(i) {
                        Some('g' | 'p' | 'i' | 'I' | 'm' | 'M') => i += 1,
                        Some(d) if d.is_ascii_digit() => i += 1,
                        Some('e') => {
                            fx.exec = true;
                            i += 1;
                        }
                        Some('w') => {
                            fx.write = true;
                            to_eol(&mut i);
                            break;
                        }
                        _ => break,
                    }
                }
            }
            'e' => {
                fx.exec = true;
                to_eol(&mut i);
            }
            'w' | 'W' => {
                fx.write = true;
                to_eol(&mut i);
            }
            'r' | 'R' => {
                fx.read = true;
                to_eol(&mut i);
            }
            _ => return None,
        }
        skip_ws(&mut i);
        if i < n && !matches!(c[i], ';' | '\n' | '}' | '#') {
            return None;
        }
    }
}

fn sed_address(c: &[char], mut i: usize, second: bool) -> Option<usize> {
    let n = c.len();
    let Some(&first) = c.get(i) else {
        return Some(i);
    };
    if first.is_ascii_digit() || (second && (first == '+' || first == '~')) {
        i += 1;
        while i < n && c[i].is_ascii_digit() {
            i += 1;
        }
        if i < n && c[i] == '~' {
            i += 1;
            while i < n && c[i].is_ascii_digit() {
                i += 1;
            }
        }
        return Some(i);
    }
    match first {
        '$' => Some(i + 1),
        '/' | '\\' => {
            let (d, start) = if first == '/' {
                ('/', i + 1)
            } else {
                (*c.get(i + 1)?, i + 2)
            };
            i = sed_delimited(c, start, d, true)?;
            while i < n && (c[i] == 'I' || c[i] == 'M') {
                i += 1;
            }
            Some(i)
        }
        _ => Some(i),
    }
}

/// Index after the closing delimiter `d`; `regex` honours bracket
/// expressions, in which the delimiter does not terminate.
fn sed_delimited(c: &[char], mut i: usize, d: char, regex: bool) -> Option<usize> {
    let n = c.len();
    while i < n {
        let ch = c[i];
        if ch == '\\' {
            i += 2;
            continue;
        }
        if regex && ch == '[' {
            i += 1;
            if i < n && c[i] == '^' {
                i += 1;
            }
            if i < n && c[i] == ']' {
                i += 1;
            }
            while i < n && c[i] != ']' {
                i += 1;
            }
            i += 1;
            continue;
        }
        if ch == d {
            return Some(i + 1);
        }
        i += 1;
    }
    None
}

// ---------------------------------------------------------------------------
// Git

#[rustfmt::skip]
const GIT_READ_SUBS: &[&str] = &[
    "status", "diff", "log", "show", "rev-parse", "ls-files", "ls-tree", "grep", "describe",
    "blame", "shortlog", "rev-list", "cat-file", "merge-base", "name-rev", "show-ref",
    "for-each-ref", "count-objects", "whatchanged", "version", "show-branch", "cherry",
    "check-ignore", "check-attr", "diff-tree", "diff-files", "diff-index", "annotate",
];

const GIT_NETWORK_SUBS: &[&str] = &["clone", "fetch", "pull", "ls-remote", "submodule"];

#[rustfmt::skip]
const GIT_MUTATION_SUBS: &[&str] = &[
    "add", "commit", "rm", "mv", "switch", "restore", "merge", "rebase", "cherry-pick", "revert",
    "init", "gc", "prune", "apply", "am", "notes", "replace", "update-ref", "update-index",
    "filter-branch", "bisect", "maintenance", "sparse-checkout", "format-patch", "archive",
    "bundle", "repack", "pack-refs", "fsck", "commit-tree", "write-tree", "read-tree",
    "symbolic-ref", "hash-object", "fast-import", "request-pull", "send-email", "lfs",
];

fn classify_git(args: &[Word], acc: &mut Acc) {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let v = w.value.as_str();
        if !v.starts_with('-') {
            break;
        }
        match v {
            "--no-pager"
            | "-P"
            | "--no-replace-objects"
            | "--no-optional-locks"
            | "--literal-pathspecs"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs"
            | "--no-advice"
            | "--version"
            | "-v" => {}
            "-p" | "--paginate" => acc.add(high(
                "git:pager",
                "git -p/--paginate runs the configured pager",
            )),
            "-c" => {
                acc.add(high(
                    "git:config_override",
                    "git -c can configure programs git runs",
                ));
                i += 1;
            }
            "-C" => {
                acc.add(high(
                    "cwd_change:git",
                    "git -C changes the working directory",
                ));
                i += 1;
            }
            _ if v.starts_with("-c") || v.starts_with("--config-env") => {
                acc.add(high(
                    "git:config_override",
                    "git -c can configure programs git runs",
                ));
            }
            _ if v.starts_with("-C") => acc.add(high(
                "cwd_change:git",
                "git -C changes the working directory",
            )),
            "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix" | "--attr-source" => {
                acc.add(high(
                    "git:global_option",
                    "git global options can change which repository and config are used",
                ));
                i += 1;
            }
            _ => acc.add(high(
                "git:global_option",
                "git global options can change which repository and config are used",
            )),
        }
        i += 1;
    }
    let Some(sub_word) = args.get(i) else {
        acc.add(allow(
            "read_only:git",
            "git without a subcommand prints help",
        ));
        return;
    };
    let sub = sub_word.value.as_str();
    let rest = &args[(i + 1).min(args.len())..];
    git_option_checks(sub, rest, acc);
    let shape = git_shape(sub, rest);
    let read = shape.decision == Decision::Allow;
    acc.add(shape);
    if read && rest.iter().any(path_is_outside) {
        acc.add(medium(
            "path:outside_workspace",
            "reads a path outside the working tree",
        ));
    }
}

fn git_option_checks(sub: &str, rest: &[Word], acc: &mut Acc) {
    for w in rest {
        let a = w.value.as_str();
        if a == "--" {
            break;
        }
        if is_long(a, "ext-diff", &[]) {
            acc.add(high(
                "git:external_diff",
                "--ext-diff runs an external diff program",
            ));
        }
        if is_long(a, "textconv", &["text"])
            || (sub == "cat-file" && is_long(a, "filters", &["filter"]))
        {
            acc.add(high(
                "git:textconv",
                "--textconv runs configured conversion programs",
            ));
        }
        if is_long(a, "output", &[]) {
            acc.add(high("file_write:git", "--output writes a file"));
        }
        if is_long(a, "open-files-in-pager", &[]) || (sub == "grep" && a.starts_with("-O")) {
            acc.add(high("git:pager", "opens matches in a pager program"));
        }
        if matches!(
            sub,
            "diff" | "log" | "show" | "whatchanged" | "diff-tree" | "diff-files" | "diff-index"
        ) && a.starts_with("-O")
        {
            acc.add(read_path("git"));
        }
        if is_long(a, "show-signature", &[]) {
            acc.add(high("git:external_program", "--show-signature runs gpg"));
        }
        if is_long(a, "upload-pack", &[])
            || is_long(a, "receive-pack", &[])
            || is_long(a, "exec", &[])
        {
            acc.add(high(
                "git:external_program",
                "the option names a program git runs",
            ));
        }
        if is_long(a, "pathspec-from-file", &[]) {
            acc.add(read_path("git"));
        }
        if sub == "grep" && (short_cluster_has(a, 'f') || is_long(a, "file", &[])) {
            acc.add(read_path("git"));
        }
        if sub == "ls-files" && (a.starts_with("-X") || is_long(a, "exclude-from", &["exclude"])) {
            acc.add(read_path("git"));
        }
        if sub == "blame" && is_long(a, "contents", &[]) {
            acc.add(read_path("git"));
        }
    }
}

fn git_mutation() -> Verdict {
    high("git:mutation", "git command changes repository state")
}

fn git_destructive() -> Verdict {
    high(
        "git:destructive",
        "git command can discard work or rewrite history",
    )
}

fn git_shape(sub: &str, rest: &[Word]) -> Verdict {
    let vals: Vec<&str> = rest.iter().map(|w| w.value.as_str()).collect();
    let read = || allow("read_only:git", "read-only git command");
    let first_pos = vals.iter().copied().find(|a| !a.starts_with('-'));
    match sub {
        s if GIT_READ_SUBS.contains(&s) => read(),
        "branch" => git_list_shape(
            &vals,
            "dmcfut",
            "DMC",
            &[
                "delete",
                "move",
                "copy",
                "force",
                "set-upstream-to",
                "unset-upstream",
                "edit-description",
                "track",
                "no-track",
                "create-reflog",
                "recurse-submodules",
            ],
            read,
        ),
        "tag" => git_list_shape(
            &vals,
            "asufdmFe",
            "",
            &[
                "annotate",
                "sign",
                "local-user",
                "force",
                "delete",
                "message",
                "file",
                "edit",
                "cleanup",
                "create-reflog",
            ],
            read,
        ),
        "remote" => {
            let args: Vec<&str> = vals
                .iter()
                .copied()
                .filter(|a| !matches!(*a, "-v" | "--verbose"))
                .collect();
            match args.first().copied() {
                None | Some("get-url") => read(),
                Some("show") if args.contains(&"-n") => read(),
                Some("show" | "update" | "prune") => {
                    high("git:network", "git command contacts a remote")
                }
                _ => git_mutation(),
            }
        }
        "worktree" => {
            if first_pos == Some("list") {
                read()
            } else {
                git_mutation()
            }
        }
        "stash" => match first_pos {
            Some("list" | "show") => read(),
            Some("drop" | "clear") => git_destructive(),
            _ => git_mutation(),
        },
        "reflog" => match first_pos {
            None | Some("show") => read(),
            _ => git_mutation(),
        },
        "config" => high(
            "git:config",
            "git config reads or changes configuration that can hold credentials or programs",
        ),
        "push" => {
            let force = vals.iter().any(|a| {
                is_long(a, "force", &[])
                    || a.starts_with("--force")
                    || short_cluster_has(a, 'f')
                    || a.starts_with('+')
            });
            if force {
                git_destructive()
            } else {
                high("git:network", "git command contacts a remote")
            }
        }
        s if GIT_NETWORK_SUBS.contains(&s) => high("git:network", "git command contacts a remote"),
        "reset" => {
            if vals
                .iter()
                .any(|a| matches!(*a, "--hard" | "--merge" | "--keep"))
            {
                git_destructive()
            } else {
                git_mutation()
            }
        }
        "clean" | "checkout" => {
            if vals
                .iter()
                .any(|a| is_long(a, "force", &[]) || short_cluster_has(a, 'f'))
            {
                git_destructive()
            } else {
                git_mutation()
            }
        }
        "difftool" | "mergetool" => high("git:external_program", "runs a configured external tool"),
        "help" => high("git:pager", "git help opens a pager or browser"),
        s if GIT_MUTATION_SUBS.contains(&s) => git_mutation(),
        _ => high(
            "git:unknown_subcommand",
            format!("unknown git subcommand or alias `{sub}`"),
        ),
    }
}

/// `git branch` / `git tag`: listing shapes are read-only, everything else
/// creates, moves or deletes refs.
fn git_list_shape(
    vals: &[&str],
    mutating_short: &str,
    destructive_short: &str,
    mutating_long: &[&str],
    read: impl Fn() -> Verdict,
) -> Verdict {
    #[rustfmt::skip]
    const VALUE_LONG: &[&str] = &[
        "contains", "no-contains", "merged", "no-merged", "points-at", "sort", "format",
    ];
    let mut list = false;
    let mut positional = false;
    let mut i = 0;
    while let Some(a) = vals.get(i).copied() {
        i += 1;
        if a == "--" {
            positional |= i < vals.len();
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, has_value) = long
                .split_once('=')
                .map_or((long, false), |(n, _)| (n, true));
            if name == "list" {
                list = true;
            } else if mutating_long.contains(&name) {
                return if name == "delete" && !destructive_short.is_empty() {
                    git_destructive()
                } else {
                    git_mutation()
                };
            } else if VALUE_LONG.contains(&name) && !has_value {
                i += 1;
            }
        } else if a.len() > 1 && a.starts_with('-') {
            let flags = &a[1..];
            if flags.chars().any(|c| destructive_short.contains(c)) {
                return git_destructive();
            }
            if flags.chars().any(|c| mutating_short.contains(c)) {
                return git_mutation();
            }
            if flags.contains('l') {
                list = true;
            }
        } else {
            positional = true;
        }
    }
    if positional && !list {
        git_mutation()
    } else {
        read()
    }
}

// ---------------------------------------------------------------------------
// Wrappers, shells, interpreters and project tools

struct WrapperSpec {
    opts: OptSpec,
    /// Positionals the wrapper consumes before the command (timeout's
    /// duration, chroot's new root, taskset's mask).
    skip_positionals: usize,
    /// `NAME=value` words may follow the options (env, sudo).
    assignments: bool,
}

fn wrapper_spec(base: &str) -> Option<WrapperSpec> {
    let spec = |short_val: &'static str,
                long_val: &'static [&'static str],
                skip: usize,
                assignments: bool| WrapperSpec {
        opts: OptSpec {
            short_val,
            long_val,
        },
        skip_positionals: skip,
        assignments,
    };
    Some(match base {
        "sudo" => spec(
            "CDghpRrTtUu",
            &[
                "chdir",
                "chroot",
                "close-from",
                "command-timeout",
                "group",
                "host",
                "other-user",
                "prompt",
                "role",
                "type",
                "user",
            ],
            0,
            true,
        ),
        "doas" => spec("Cu", &[], 0, false),
        "pkexec" => spec("", &["user"], 0, false),
        "env" => spec(
            "aCSu",
            &["argv0", "chdir", "split-string", "unset"],
            0,
            true,
        ),
        "nohup" | "builtin" | "busybox" | "setsid" => spec("", &[], 0, false),
        "nice" => spec("n", &["adjustment"], 0, false),
        "ionice" => spec("cn", &["class", "classdata"], 0, false),
        "stdbuf" => spec("ioe", &["input", "output", "error"], 0, false),
        "timeout" => spec("ks", &["kill-after", "signal"], 1, false),
        "command" => spec("", &[], 0, false),
        "exec" => spec("a", &[], 0, false),
        "time" => spec("fo", &["format", "output"], 0, false),
        "xargs" => spec(
            "aEdILnPs",
            &[
                "arg-file",
                "delimiter",
                "eof",
                "max-args",
                "max-chars",
                "max-lines",
                "max-procs",
                "process-slot-var",
                "replace",
            ],
            0,
            false,
        ),
        "chroot" => spec("", &["groups", "userspec"], 1, false),
        "taskset" => spec("", &[], 1, false),
        "watch" => spec("n", &["interval"], 0, false),
        "su" => spec(
            "cgGsw",
            &[
                "command",
                "group",
                "supp-group",
                "shell",
                "whitelist-environment",
            ],
            0,
            false,
        ),
        _ => return None,
    })
}

struct WrapperParse<'a> {
    opts: Vec<Arg<'a>>,
    assignments: bool,
    inner: Option<usize>,
}

fn parse_wrapper<'a>(spec: &WrapperSpec, args: &'a [Word]) -> WrapperParse<'a> {
    let mut start = 0;
    let mut opts = Vec::new();
    // `env -` and `su -` use a lone dash as an option.
    while args.get(start).is_some_and(|w| w.value == "-") {
        opts.push(Arg::Short('-', None));
        start += 1;
    }
    let (parsed, consumed) = parse_args(&args[start..], &spec.opts, true);
    opts.extend(parsed);
    let mut i = start + consumed;
    let mut assignments = false;
    if spec.assignments {
        while args.get(i).is_some_and(is_assignment) {
            assignments = true;
            i += 1;
        }
    }
    i = (i + spec.skip_positionals).min(args.len());
    WrapperParse {
        opts,
        assignments,
        inner: (i < args.len()).then_some(i),
    }
}

fn opt_present(p: &WrapperParse, short: char, long: &str) -> bool {
    has_short(&p.opts, short) || has_long(&p.opts, long, &[])
}

fn opt_value(p: &WrapperParse, short: char, long: &str) -> Option<String> {
    short_values(&p.opts, short)
        .into_iter()
        .chain(long_values(&p.opts, long))
        .next()
}

fn classify_wrapper(
    base: &str,
    spec: &WrapperSpec,
    args: &[Word],
    ctx: Ctx,
    depth: usize,
    acc: &mut Acc,
) {
    let p = parse_wrapper(spec, args);
    let inner = p.inner.map(|i| &args[i..]);
    match base {
        "sudo" | "doas" | "pkexec" | "chroot" | "su" => {
            if base == "sudo" && opt_present(&p, 'S', "stdin") {
                acc.add(block(
                    "privilege:sudo_stdin",
                    "sudo -S reads a password from standard input",
                ));
            }
            if base == "sudo" && opt_present(&p, 'D', "chdir") {
                acc.add(high(
                    "cwd_change:sudo",
                    "sudo -D changes the working directory",
                ));
            }
            if p.assignments {
                acc.add(high(
                    "env:assignment",
                    "inline environment assignments require approval",
                ));
            }
            acc.add(high(
                format!("privilege:{base}"),
                "runs a command with other privileges",
            ));
            if base == "su" {
                // su's positional is a user name; the command is `-c`.
                if let Some(cmd) = opt_value(&p, 'c', "command") {
                    acc.propagate(classify_text(&cmd, ctx.deeper()));
                }
                return;
            }
            if base == "sudo" && (opt_present(&p, 's', "shell") || opt_present(&p, 'i', "login")) {
                // The command runs through a shell: review it as text only,
                // once (reviewing it twice per layer would be exponential).
                if let Some(inner) = inner {
                    acc.propagate(classify_text(&join_values(inner), ctx.deeper()));
                }
                return;
            }
        }
        "env" => {
            if opt_present(&p, 'C', "chdir") {
                acc.add(high(
                    "cwd_change:env",
                    "env -C changes the working directory",
                ));
            }
            if let Some(split) = opt_value(&p, 'S', "split-string") {
                acc.add(high(
                    "shell:eval",
                    "env -S splits a string into a new command",
                ));
                let mut payload = split;
                if let Some(inner) = inner {
                    payload.push(' ');
                    payload.push_str(&join_values(inner));
                }
                acc.propagate(classify_text(&payload, ctx.deeper()));
                return;
            }
            if p.assignments {
                acc.add(high(
                    "env:assignment",
                    "inline environment assignments require approval",
                ));
            }
            acc.add(high(
                "wrapper:env",
                "env changes the environment of the command it runs",
            ));
        }
        "command" => {
            if opt_present(&p, 'v', "") || opt_present(&p, 'V', "") {
                acc.add(allow("read_only:command", "command lookup"));
                return;
            }
            acc.add(high(
                "wrapper:command",
                "wrapped commands are not auto-approved",
            ));
        }
        "xargs" => acc.add(high(
            "exec:xargs",
            "xargs runs a command built from its input",
        )),
        "watch" => {
            acc.add(high(
                "wrapper:watch",
                "watch runs its command repeatedly through a shell",
            ));
            if let Some(inner) = inner {
                acc.propagate(classify_text(&join_values(inner), ctx.deeper()));
            }
            return;
        }
        "exec" if inner.is_none() => {
            acc.add(high(
                "shell:state",
                "exec without a command changes the shell's descriptors",
            ));
            return;
        }
        _ => acc.add(high(
            format!("wrapper:{base}"),
            "wrapped commands are not auto-approved",
        )),
    }
    if let Some(inner) = inner {
        classify_argv(inner, ctx, depth + 1, acc);
    }
}

/// Strips assignments-free wrapper layers: `sudo env X=1 nice sh` → `sh`.
/// The command line `xargs` builds from literal piped text
/// (`echo / | xargs rm -rf` runs `rm -rf /`).
fn xargs_command_line(script: &Script, i: usize, argv: &[Word]) -> Option<Vec<Word>> {
    let mut cur = argv;
    for _ in 0..MAX_ARGV_DEPTH {
        let w0 = cur.first()?;
        let base = basename(&w0.value).to_lowercase();
        let spec = wrapper_spec(&base)?;
        let parsed = parse_wrapper(&spec, &cur[1..]);
        if base != "xargs" {
            cur = &cur[(1 + parsed.inner?).min(cur.len())..];
            continue;
        }
        let inner = &cur[(1 + parsed.inner?).min(cur.len())..];
        let text = piped_text(script, i)?;
        let whole = has_short(&parsed.opts, '0')
            || has_long(&parsed.opts, "null", &[])
            || opt_present(&parsed, 'd', "delimiter");
        let mut line: Vec<Word> = inner.to_vec();
        if whole {
            line.push(Word::literal(text.trim_end_matches('\n')));
        } else {
            line.extend(text.split_whitespace().map(Word::literal));
        }
        return Some(line);
    }
    None
}

fn effective_argv(argv: &[Word]) -> &[Word] {
    let mut cur = argv;
    for _ in 0..MAX_ARGV_DEPTH {
        let Some(w0) = cur.first() else { break };
        let base = basename(&w0.value).to_lowercase();
        let Some(spec) = wrapper_spec(&base) else {
            break;
        };
        match parse_wrapper(&spec, &cur[1..]).inner {
            Some(i) => cur = &cur[(1 + i).min(cur.len())..],
            None => break,
        }
    }
    cur
}

enum ShellMode {
    Eval(Option<String>),
    Script,
    Stdin,
}

fn shell_mode(args: &[Word]) -> ShellMode {
    let mut i = 0;
    let mut eval = false;
    let mut stdin = false;
    while let Some(w) = args.get(i) {
        let v = w.value.as_str();
        if v == "--" || v == "-" {
            i += 1;
            break;
        }
        if matches!(v, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
            i += 2;
            continue;
        }
        if let Some(long) = v.strip_prefix("--") {
            if long == "command" {
                eval = true;
            } else if let Some(cmd) = long.strip_prefix("command=") {
                return ShellMode::Eval(Some(cmd.to_string()));
            }
            i += 1;
            continue;
        }
        if v.len() > 1 && (v.starts_with('-') || v.starts_with('+')) {
            if v[1..].contains('c') {
                eval = true;
            }
            if v[1..].contains('s') {
                stdin = true;
            }
            i += 1;
            continue;
        }
        break;
    }
    if eval {
        ShellMode::Eval(args.get(i).map(|w| w.value.clone()))
    } else if stdin || i >= args.len() {
        ShellMode::Stdin
    } else {
        ShellMode::Script
    }
}

fn classify_shell(args: &[Word], ctx: Ctx, acc: &mut Acc) {
    match shell_mode(args) {
        ShellMode::Eval(payload) => {
            acc.add(high(
                "shell:eval",
                "the shell evaluates its argument as a new command",
            ));
            if let Some(payload) = payload {
                acc.propagate(classify_text(&payload, ctx.deeper()));
            }
        }
        ShellMode::Script => acc.add(high("exec:script", "runs a script file")),
        ShellMode::Stdin => acc.add(high(
            "shell:stdin",
            "a shell reading commands from standard input",
        )),
    }
}

fn stdin_shell(argv: &[Word]) -> bool {
    let eff = effective_argv(argv);
    let Some(w0) = eff.first() else { return false };
    SHELLS.contains(&basename(&w0.value).to_lowercase().as_str())
        && matches!(shell_mode(&eff[1..]), ShellMode::Stdin)
}

/// The literal text a pipeline feeds to command `i`: `echo …`/`printf …`,
/// optionally through `base64 -d` stages (`echo cm0g… | base64 -d | sh`).
fn piped_text(script: &Script, i: usize) -> Option<String> {
    let mut decodes = 0;
    let mut j = i;
    loop {
        j = j.checked_sub(1)?;
        let prev = script.cmds.get(j)?;
        if !matches!(prev.sep, Some(Op::Pipe | Op::PipeAmp)) {
            return None;
        }
        if is_base64_decode(&prev.words) {
            decodes += 1;
            if decodes > 4 {
                return None;
            }
            continue;
        }
        let mut text = echo_payload(&prev.words)?;
        for _ in 0..decodes {
            text = base64_decode(&text)?;
        }
        return Some(text);
    }
}

fn is_base64_decode(words: &[Word]) -> bool {
    let Some(w0) = words.first() else {
        return false;
    };
    basename(&w0.value) == "base64"
        && words[1..].iter().any(|w| {
            matches!(w.value.as_str(), "-d" | "-D" | "--decode") || short_cluster_has(&w.value, 'd')
        })
}

fn base64_decode(text: &str) -> Option<String> {
    let mut bits = 0u32;
    let mut nbits = 0;
    let mut out = Vec::new();
    for c in text.chars() {
        let v = match c {
            'A'..='Z' => c as u32 - 'A' as u32,
            'a'..='z' => c as u32 - 'a' as u32 + 26,
            '0'..='9' => c as u32 - '0' as u32 + 52,
            '+' | '-' => 62,
            '/' | '_' => 63,
            '=' => break,
            c if c.is_whitespace() => continue,
            _ => return None,
        };
        bits = (bits << 6) | v;
        nbits += 6;
        if nbits >= 8 {
            nbits -= 8;
            out.push(((bits >> nbits) & 0xff) as u8);
        }
    }
    String::from_utf8(out).ok()
}

/// The text `echo`/`printf` would feed to a shell on a pipe.
fn echo_payload(words: &[Word]) -> Option<String> {
    let n_assign = words.iter().take_while(|w| is_assignment(w)).count();
    let argv = effective_argv(&words[n_assign..]);
    let first = argv.first()?;
    let mut args = &argv[1..];
    match basename(&first.value) {
        "echo" => {
            while let Some(a) = args.first() {
                let v = a.value.as_str();
                if v.len() > 1
                    && v.starts_with('-')
                    && v[1..].chars().all(|c| matches!(c, 'n' | 'e' | 'E'))
                {
                    args = &args[1..];
                } else {
                    break;
                }
            }
        }
        "printf" => {}
        _ => return None,
    }
    Some(join_values(args).replace("\\n", "\n").replace("\\t", "\t"))
}

fn interpreter_verdict(base: &str, args: &[Word]) -> Verdict {
    let inline = || high("exec:inline_script", "runs inline interpreter code");
    let python = is_python(base);
    let node = matches!(base, "node" | "nodejs" | "deno" | "bun");
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let a = w.value.as_str();
        if a == "--" {
            i += 1;
            break;
        }
        if a == "-" || !a.starts_with('-') {
            break;
        }
        let short = !a.starts_with("--");
        if python {
            if let Some(m) = a.strip_prefix("-m") {
                let module = if m.is_empty() {
                    args.get(i + 1).map_or("", |w| w.value.as_str())
                } else {
                    m
                };
                return match module {
                    "pytest" | "unittest" | "nose2" => {
                        high("project_code:pytest", "runs the project's tests")
                    }
                    "pip" => high("dependency:pip", "installs or changes Python packages"),
                    _ => high(
                        "exec:python_module",
                        format!("runs the Python module `{module}`"),
                    ),
                };
            }
            if short && a[1..].contains('c') {
                return inline();
            }
            if matches!(a, "-W" | "-X" | "-Q") {
                i += 2;
                continue;
            }
        } else if node {
            let name = a.split_once('=').map_or(a, |(n, _)| n);
            if matches!(
                name,
                "-e" | "--eval" | "-p" | "--print" | "-r" | "--require" | "--import" | "--loader"
            ) {
                return inline();
            }
        } else if short {
            let flags = &a[1..];
            if flags.contains('e') || flags.contains('E') || (base == "php" && flags.contains('r'))
            {
                return inline();
            }
            if matches!(base, "perl" | "ruby") && flags.contains('i') {
                return high(format!("file_write:{base}"), "edits files in place");
            }
        }
        i += 1;
    }
    if args.get(i).is_some() {
        high("exec:script", "runs a script file")
    } else {
        high(
            "exec:interpreter",
            "an interpreter reading code from standard input",
        )
    }
}

fn project_verdict(base: &str, args: &[Word]) -> Verdict {
    let sub = args
        .iter()
        .map(|w| w.value.as_str())
        .find(|a| !a.starts_with('-') && !a.starts_with('+'));
    let dep = |tool: &str| {
        high(
            format!("dependency:{tool}"),
            "installs or changes dependencies",
        )
    };
    let code = |tool: &str| {
        high(
            format!("project_code:{tool}"),
            "runs project code, build scripts, tests or plugins",
        )
    };
    match base {
        "npx" | "bunx" | "uvx" | "pipx" => high("dependency:exec", "downloads and runs a package"),
        "pip" | "pip3" | "rustup" | "conda" | "mamba" => dep(base),
        "cargo" => match sub {
            Some("install" | "add" | "remove" | "rm" | "update" | "uninstall" | "fetch") => {
                dep(base)
            }
            _ => code(base),
        },
        "npm" | "pnpm" | "yarn" => match sub {
            Some(
                "install" | "i" | "ci" | "add" | "update" | "upgrade" | "up" | "remove" | "rm"
                | "uninstall" | "un" | "audit" | "link" | "dedupe" | "prune",
            ) => dep(base),
            Some("dlx" | "exec" | "x") => high("dependency:exec", "downloads and runs a package"),
            None if base == "yarn" => dep(base),
            _ => code(base),
        },
        "uv" => match sub {
            Some("add" | "remove" | "sync" | "lock" | "pip" | "tool" | "venv" | "python") => {
                dep(base)
            }
            _ => code(base),
        },
        "go" => match sub {
            Some("get" | "install" | "mod") => dep(base),
            _ => code(base),
        },
        "poetry" | "pipenv" | "bundle" | "composer" | "pdm" | "hatch" => match sub {
            Some(
                "install" | "add" | "remove" | "update" | "lock" | "sync" | "upgrade" | "require",
            ) => dep(base),
            _ => code(base),
        },
        "py.test" => code("pytest"),
        "gmake" => code("make"),
        _ => code(base),
    }
}

/// `{rm,-rf,/}` expands to `rm -rf /`; only used for destructive checks.
fn brace_expand(argv: &[Word]) -> Option<Vec<Word>> {
    let mut changed = false;
    let mut out = Vec::with_capacity(argv.len());
    for w in argv {
        if w.glob && !w.quoted && !w.expansion {
            let inner = w.value.strip_prefix('{').and_then(|s| s.strip_suffix('}'));
            if let Some(inner) = inner.filter(|s| s.contains(',') && !s.contains('{')) {
                out.extend(
                    inner
                        .split(',')
                        .filter(|p| !p.is_empty())
                        .map(Word::literal),
                );
                changed = true;
                continue;
            }
        }
        out.push(w.clone());
    }
    changed.then_some(out)
}

// ---------------------------------------------------------------------------
// Destructive payloads

fn destructive(base: &str, args: &[Word], ctx: Ctx) -> Option<Verdict> {
    let vals: Vec<&str> = args.iter().map(|w| w.value.as_str()).collect();
    let shutdown = || block("destructive:shutdown", "shuts down or reboots the host");
    match base {
        "rm" if rm_is_critical(args, ctx) => Some(block(
            "destructive:rm_root",
            "recursive delete of the filesystem root, a home directory or a system directory",
        )),
        b if b.starts_with("mkfs") || matches!(b, "mke2fs" | "mkswap") => {
            Some(block("destructive:mkfs", "formats a filesystem"))
        }
        // Without -a/-o wipefs only lists signatures.
        "wipefs"
            if args.iter().any(|w| {
                short_cluster_has(&w.value, 'a')
                    || short_cluster_has(&w.value, 'o')
                    || is_long(&w.value, "all", &[])
                    || is_long(&w.value, "offset", &[])
            }) =>
        {
            Some(block("destructive:mkfs", "wipes filesystem signatures"))
        }
        "dd" if vals
            .iter()
            .any(|a| a.strip_prefix("of=").is_some_and(is_block_device)) =>
        {
            Some(block(
                "destructive:dd_device",
                "dd writes to a raw block device",
            ))
        }
        "shred" | "tee" | "blkdiscard" if vals.iter().any(|a| is_block_device(a)) => {
            Some(device_write())
        }
        // cp only writes its last operand; badblocks only with -w.
        "cp" if vals
            .iter()
            .rfind(|a| !a.starts_with('-'))
            .is_some_and(|a| is_block_device(a)) =>
        {
            Some(device_write())
        }
        "badblocks"
            if vals.iter().any(|a| short_cluster_has(a, 'w'))
                && vals.iter().any(|a| is_block_device(a)) =>
        {
            Some(device_write())
        }
        "shutdown" | "reboot" | "halt" | "poweroff" => Some(shutdown()),
        "init" | "telinit" if vals.iter().any(|a| matches!(*a, "0" | "6")) => Some(shutdown()),
        "systemctl" | "loginctl"
            if vals.iter().any(|a| {
                matches!(*a, "poweroff" | "reboot" | "halt" | "kexec" | "soft-reboot")
            }) =>
        {
            Some(shutdown())
        }
        "kill" if kill_targets_all(&vals) => {
            Some(block("destructive:kill_all", "signals every process"))
        }
        "killall5" => Some(block("destructive:kill_all", "signals every process")),
        "pkill" if pkill_hits_everything(&vals) => Some(block(
            "destructive:kill_all",
            "pkill selects every process (of a user)",
        )),
        "killall" if killall_hits_everything(&vals) => Some(block(
            "destructive:kill_all",
            "killall selects every process (of a user)",
        )),
        "chmod" | "chown" | "chgrp" if perm_recursive_critical(args, ctx) => Some(block(
            "destructive:perm_root",
            "recursive permission change on the root, a home or a system directory",
        )),
        "mv" if mv_critical(args, ctx) => Some(block(
            "destructive:mv_root",
            "moves the root, a home directory or a system directory",
        )),
        "find" if find_deletes_critical(args, ctx) => Some(block(
            "destructive:find_delete_root",
            "find deletes under the root, a home directory or a system directory",
        )),
        _ => None,
    }
}

fn device_write() -> Verdict {
    block(
        "destructive:device_write",
        "writes to a raw block or memory device",
    )
}

fn rm_is_critical(args: &[Word], ctx: Ctx) -> bool {
    let mut recursive = false;
    let mut targets = Vec::new();
    let mut end = false;
    for w in args {
        let v = w.value.as_str();
        if !end && v == "--" {
            end = true;
            continue;
        }
        if !end && v.starts_with("--") {
            if is_long(v, "recursive", &[]) {
                recursive = true;
            }
            continue;
        }
        if !end && v.len() > 1 && v.starts_with('-') {
            if v[1..].contains(['r', 'R']) {
                recursive = true;
            }
            continue;
        }
        targets.push(v);
    }
    recursive && targets.iter().any(|t| critical_path(t, ctx.cwd))
}

fn perm_recursive_critical(args: &[Word], ctx: Ctx) -> bool {
    let recursive = args
        .iter()
        .any(|w| w.value == "--recursive" || (short_cluster_has(&w.value, 'R')));
    recursive
        && args
            .iter()
            .filter(|w| !w.value.starts_with('-'))
            .any(|w| critical_path(&w.value, ctx.cwd))
}

fn mv_critical(args: &[Word], ctx: Ctx) -> bool {
    let pos: Vec<&str> = args
        .iter()
        .map(|w| w.value.as_str())
        .filter(|v| !v.starts_with('-'))
        .collect();
    pos.len() >= 2
        && pos[..pos.len() - 1]
            .iter()
            .any(|v| critical_path(v, ctx.cwd))
}

fn find_deletes_critical(args: &[Word], ctx: Ctx) -> bool {
    let vals: Vec<&str> = args.iter().map(|w| w.value.as_str()).collect();
    let mut i = 0;
    while let Some(v) = vals.get(i) {
        match *v {
            "-H" | "-L" | "-P" => i += 1,
            "-D" => i += 2,
            _ if v.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    let starts: Vec<&str> = vals[i.min(vals.len())..]
        .iter()
        .copied()
        .take_while(|v| !v.starts_with('-') && !matches!(*v, "(" | "!" | ")"))
        .collect();
    if !starts.iter().any(|s| critical_path(s, ctx.cwd)) {
        return false;
    }
    vals.iter().enumerate().any(|(k, v)| {
        *v == "-delete"
            || (matches!(*v, "-exec" | "-execdir" | "-ok" | "-okdir")
                && vals.get(k + 1).is_some_and(|cmd| {
                    matches!(basename(cmd), "rm" | "shred" | "unlink" | "rmdir")
                }))
    })
}

/// `kill … -1` (every process the caller may signal). A lone `kill -1`
/// is read the same way: whether `-1` is the signal or the target depends on
/// the shell, so it is never let through.
fn kill_targets_all(vals: &[&str]) -> bool {
    let is_all = |a: &str| a.trim().parse::<i64>() == Ok(-1);
    let mut i = 0;
    let mut signal: Option<&str> = None;
    let mut pids: Vec<&str> = Vec::new();
    while let Some(a) = vals.get(i).copied() {
        if a == "--" {
            pids.extend(vals.get(i + 1..).unwrap_or_default().iter().copied());
            break;
        }
        if signal.is_none() && (a == "-s" || a == "-n") {
            signal = Some(vals.get(i + 1).copied().unwrap_or_default());
            i += 2;
            continue;
        }
        if signal.is_none() && a.len() > 1 && a.starts_with('-') {
            signal = Some(a);
            i += 1;
            continue;
        }
        pids.push(a);
        i += 1;
    }
    pids.iter().any(|p| is_all(p)) || (pids.is_empty() && signal.is_some_and(is_all))
}

/// Process names a "matches everything" pattern must all match.
const PROCESS_NAME_PROBES: &[&str] = &[
    "demiurge",
    "sh",
    "bash",
    "init",
    "systemd",
    "sleep",
    "python3",
    "postgres",
    "kworker/0:1",
    "a",
    "Z",
    "1",
    "x-y_z.9",
];

/// Whether `pattern` (an extended regular expression, as `pkill` and
/// `killall -r` take) matches every process name. A pattern that does not
/// parse is not called "everything" (it still needs approval as a signal).
fn pattern_matches_everything(pattern: &str, exact: bool, ignore_case: bool) -> bool {
    let source = if exact {
        format!("^(?:{pattern})$")
    } else {
        pattern.to_owned()
    };
    let Ok(re) = regex::RegexBuilder::new(&source)
        .case_insensitive(ignore_case)
        .size_limit(1 << 20)
        .build()
    else {
        return false;
    };
    PROCESS_NAME_PROBES.iter().all(|name| re.is_match(name))
}

/// `-9`, `-KILL`, `-SIGTERM` (single capitals such as `-U` are options).
fn is_signal_option(cluster: &str) -> bool {
    cluster.chars().all(|c| c.is_ascii_digit())
        || (cluster.len() > 1 && cluster.chars().all(|c| c.is_ascii_uppercase()))
}

/// `pkill` with a pattern that matches every name, with `-v` (inverse), or
/// with only a user/group selector (every process of that user).
fn pkill_hits_everything(vals: &[&str]) -> bool {
    const VALUE_SHORT: &str = "gGPstuUF";
    const VALUE_LONG: &[&str] = &[
        "signal",
        "pgroup",
        "group",
        "parent",
        "session",
        "terminal",
        "euid",
        "uid",
        "pidfile",
        "ns",
        "nslist",
        "cgroup",
        "runstates",
        "env",
    ];
    const USER_LONG: &[&str] = &["euid", "uid", "group"];
    let (mut exact, mut ignore_case, mut inverse, mut by_user) = (false, false, false, false);
    let mut patterns: Vec<&str> = Vec::new();
    let mut i = 0;
    while let Some(a) = vals.get(i).copied() {
        i += 1;
        if a == "--" {
            patterns.extend(vals.get(i..).unwrap_or_default().iter().copied());
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, inline) = long
                .split_once('=')
                .map_or((long, false), |(n, _)| (n, true));
            match name {
                "inverse" => inverse = true,
                "exact" => exact = true,
                "ignore-case" => ignore_case = true,
                _ => {}
            }
            if USER_LONG.contains(&name) {
                by_user = true;
            }
            if VALUE_LONG.contains(&name) && !inline {
                i += 1;
            }
            continue;
        }
        let Some(cluster) = a.strip_prefix('-').filter(|c| !c.is_empty()) else {
            patterns.push(a);
            continue;
        };
        if is_signal_option(cluster) {
            continue;
        }
        for (at, c) in cluster.char_indices() {
            match c {
                'v' => inverse = true,
                'x' => exact = true,
                'i' => ignore_case = true,
                _ => {}
            }
            if matches!(c, 'u' | 'U' | 'G') {
                by_user = true;
            }
            if VALUE_SHORT.contains(c) {
                if cluster.get(at + 1..).unwrap_or_default().is_empty() {
                    i += 1;
                }
                break;
            }
        }
    }
    inverse
        || (patterns.is_empty() && by_user)
        || patterns
            .iter()
            .any(|p| pattern_matches_everything(p, exact, ignore_case))
}

/// `killall -r` with a pattern that matches every name, or `killall -u USER`
/// with no name (every process of that user).
fn killall_hits_everything(vals: &[&str]) -> bool {
    const VALUE_SHORT: &str = "ouynsZ";
    const VALUE_LONG: &[&str] = &[
        "older-than",
        "younger-than",
        "user",
        "signal",
        "context",
        "ns",
    ];
    let (mut regexp, mut exact, mut ignore_case, mut by_user) = (false, false, false, false);
    let mut names: Vec<&str> = Vec::new();
    let mut i = 0;
    while let Some(a) = vals.get(i).copied() {
        i += 1;
        if a == "--" {
            names.extend(vals.get(i..).unwrap_or_default().iter().copied());
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, inline) = long
                .split_once('=')
                .map_or((long, false), |(n, _)| (n, true));
            match name {
                "regexp" => regexp = true,
                "exact" => exact = true,
                "ignore-case" => ignore_case = true,
                "user" => by_user = true,
                _ => {}
            }
            if VALUE_LONG.contains(&name) && !inline {
                i += 1;
            }
            continue;
        }
        let Some(cluster) = a.strip_prefix('-').filter(|c| !c.is_empty()) else {
            names.push(a);
            continue;
        };
        if is_signal_option(cluster) {
            continue;
        }
        for (at, c) in cluster.char_indices() {
            match c {
                'r' => regexp = true,
                'e' => exact = true,
                'I' => ignore_case = true,
                'u' => by_user = true,
                _ => {}
            }
            if VALUE_SHORT.contains(c) {
                if cluster.get(at + 1..).unwrap_or_default().is_empty() {
                    i += 1;
                }
                break;
            }
        }
    }
    (names.is_empty() && by_user)
        || (regexp
            && names
                .iter()
                .any(|n| pattern_matches_everything(n, exact, ignore_case)))
}

/// Root, a top-level system directory, a home directory, or their whole
/// content (`/*`), judged lexically (`$HOME`, `~user`, `..`, `//` included).
fn critical_path(value: &str, cwd: Option<&Path>) -> bool {
    let v = value.trim();
    if v.is_empty() {
        return false;
    }
    let abs = if let Some(rest) = home_rest(v) {
        format!("/home/~{rest}")
    } else if let Some(user_rest) = v.strip_prefix('~') {
        let (user, rest) = user_rest.split_once('/').unwrap_or((user_rest, ""));
        format!("/home/{user}/{rest}")
    } else if v.starts_with('/') {
        v.to_string()
    } else {
        match cwd {
            Some(c) if c.is_absolute() => format!("{}/{v}", c.to_string_lossy()),
            _ => return false,
        }
    };
    is_critical_components(&normalize_components(&abs))
}

fn home_rest(v: &str) -> Option<&str> {
    // `${HOME}`, `${HOME:?}`, `${HOME:-/x}` all name the home directory.
    let braced = v.strip_prefix("${HOME").and_then(|rest| {
        if rest.starts_with('}') || rest.starts_with(':') || rest.starts_with('-') {
            rest.find('}').map(|end| &rest[end + 1..])
        } else {
            None
        }
    });
    braced
        .or_else(|| v.strip_prefix("$HOME"))
        .or_else(|| v.strip_prefix('~'))
        .filter(|rest| rest.is_empty() || rest.starts_with('/'))
}

fn normalize_components(abs: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in abs.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            _ => out.push(c.to_string()),
        }
    }
    // A trailing glob-only component (`*`, `.*`, `?*`) is the directory's
    // whole content.
    while out.last().is_some_and(|l| {
        l.contains(['*', '?']) && l.chars().all(|ch| matches!(ch, '*' | '?' | '.'))
    }) {
        out.pop();
    }
    out
}

fn is_critical_components(c: &[String]) -> bool {
    #[rustfmt::skip]
    const TOP: &[&str] = &[
        "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "opt", "proc",
        "root", "run", "sbin", "srv", "sys", "usr", "var", "mnt", "media", "snap", "nix", "System",
        "Users", "Library", "Applications", "private", "Volumes",
    ];
    match c {
        [] => true,
        [top] => TOP.contains(&top.as_str()),
        [top, _] => matches!(top.as_str(), "home" | "Users" | "usr" | "System"),
        _ => false,
    }
}

/// `:(){ :|:& };:` and renamed variants: a function that pipes into itself.
fn is_fork_bomb(text: &str) -> bool {
    let s: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let mut from = 0;
    // Bounded so padded input cannot make this quadratic; a padded bomb is
    // still prompt/high through `shell:compound`.
    for _ in 0..64 {
        let Some(off) = s[from..].find("(){") else {
            break;
        };
        let at = from + off;
        let name_start = s[..at]
            .rfind([';', '&', '|', '(', ')', '{', '}'])
            .map_or(0, |i| i + 1);
        let mut name = &s[name_start..at];
        if let Some(stripped) = name.strip_prefix("function") {
            if !stripped.is_empty() {
                name = stripped;
            }
        }
        let body_start = at + 3;
        let mut body_end = (body_start + 4096).min(s.len());
        while !s.is_char_boundary(body_end) {
            body_end -= 1;
        }
        if !name.is_empty() && s[body_start..body_end].contains(&format!("{name}|{name}")) {
            return true;
        }
        from = at + 3;
    }
    false
}

// ---------------------------------------------------------------------------
// Paths

/// Absolute, home-relative or parent-relative operands (option values after
/// `=` included). `/dev/null` is not a read.
fn path_is_outside(w: &Word) -> bool {
    if w.tilde {
        return true;
    }
    let v = w.value.as_str();
    let candidate = if v.starts_with('-') {
        match v.split_once('=') {
            Some((_, value)) => value,
            None => return false,
        }
    } else {
        v
    };
    if candidate.starts_with('/') {
        return !is_null_sink(candidate) && collapse_slashes(candidate) != "/dev/stdin";
    }
    candidate.split('/').any(|c| c == "..")
}

/// Credential locations: `.env*`, `.ssh/`, `.aws/`, `.kube/`, `.gnupg/`,
/// `.npmrc`, `.pypirc`, `.netrc`, `.pgpass`, `.git-credentials`, SSH keys.
fn sensitive_component(part: &str) -> Option<&'static str> {
    let p = part.to_lowercase();
    if p.starts_with(".env") {
        return Some("env_file");
    }
    Some(match p.as_str() {
        ".ssh" | "id_rsa" | "id_ed25519" | "id_ecdsa" | "id_dsa" => "ssh",
        ".aws" => "aws",
        ".kube" => "kube",
        ".gnupg" => "gnupg",
        ".npmrc" => "npmrc",
        ".pypirc" => "pypirc",
        ".netrc" | "_netrc" => "netrc",
        ".pgpass" => "pgpass",
        ".git-credentials" => "git_credentials",
        _ => return None,
    })
}

/// Splits a word (or a nested command string) into path-like components;
/// attached short options (`-X.netrc`) are looked at without the option.
fn sensitive_kind(value: &str) -> Option<&'static str> {
    value
        .split(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    '/' | '\\'
                        | '='
                        | ':'
                        | ','
                        | '@'
                        | '\''
                        | '"'
                        | ';'
                        | '('
                        | ')'
                        | '<'
                        | '>'
                        | '|'
                        | '&'
                        | '`'
                )
        })
        .find_map(|part| {
            sensitive_component(part).or_else(|| {
                if part.starts_with('-') && !part.starts_with("--") {
                    part.get(2..).and_then(sensitive_component)
                } else {
                    None
                }
            })
        })
}

fn sensitive_in_path(path: &Path) -> Option<&'static str> {
    path.components().find_map(|c| match c {
        Component::Normal(s) => s.to_str().and_then(sensitive_component),
        _ => None,
    })
}

fn raise_for_sensitive(v: Verdict, kind: &str, why: &str) -> Verdict {
    let rule = format!("sensitive_path:{kind}");
    match v.decision {
        Decision::Block => v,
        Decision::Allow => high(rule, format!("{why} ({kind})")),
        Decision::Prompt => {
            let risk = if v.risk >= Risk::High {
                Risk::Critical
            } else {
                Risk::High
            };
            verdict(
                Decision::Prompt,
                risk,
                rule,
                format!("{why} ({kind}); also {}", v.rule),
            )
        }
    }
}

//! The shell lexer: quotes, escapes, ANSI-C strings, line continuations,
//! heredocs, operators, redirections and every expansion form, recorded as
//! findings so the guard can tell a literal metacharacter from an active one.

/// Structural nesting inside one lexer run; bounds recursion on the stack.
const MAX_LEX_NEST: usize = 128;

#[cfg(test)]
#[path = "lexer_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "lexer_props_tests.rs"]
mod props;

/// Why the lexer stopped; the guard turns each into a `parse:*` prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LexError {
    Unterminated,
    TooDeep,
    Syntax,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FindingKind {
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
pub(crate) struct Finding {
    pub(crate) kind: FindingKind,
    /// The command text to review recursively; only kept for direct children,
    /// deeper ones are found again when the payload itself is reviewed.
    pub(crate) payload: Option<String>,
}

/// One shell word: `value` is the text after quote removal, with expansions
/// kept verbatim (so `"$HOME"` has the value `$HOME`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Word {
    pub(crate) raw: String,
    pub(crate) value: String,
    /// Any part was quoted or escaped.
    pub(crate) quoted: bool,
    /// Contains a parameter/command/arithmetic/process expansion.
    pub(crate) expansion: bool,
    /// Contains an unquoted glob or brace expansion.
    pub(crate) glob: bool,
    /// Starts with (or has after `=`/`:`) an unquoted `~`.
    pub(crate) tilde: bool,
}

impl Word {
    pub(crate) fn literal(value: &str) -> Word {
        Word {
            raw: value.to_string(),
            value: value.to_string(),
            ..Word::default()
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
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
pub(crate) enum RedirKind {
    Read,
    Write,
    Dup,
    HereDoc,
    HereString,
}

#[derive(Debug, Clone)]
pub(crate) struct Redir {
    pub(crate) kind: RedirKind,
    pub(crate) target: Word,
    pub(crate) heredoc: Option<usize>,
}

#[derive(Debug, Clone)]
pub(crate) enum Tok {
    Word(Word),
    Op(Op),
    Redir(Redir),
}

#[derive(Debug, Clone, Default)]
pub(crate) struct HereDoc {
    pub(crate) delim: String,
    pub(crate) strip_tabs: bool,
    pub(crate) quoted: bool,
    pub(crate) body: String,
}

pub(crate) struct Lexer {
    pub(crate) chars: Vec<char>,
    pub(crate) pos: usize,
    pub(crate) nest: usize,
    /// > 0 while inside a `$(…)`, backtick or process substitution body.
    pub(crate) subst_nest: usize,
    pub(crate) findings: Vec<Finding>,
    pub(crate) heredocs: Vec<HereDoc>,
    pub(crate) pending: Vec<usize>,
    pub(crate) comment_expansion: bool,
}

impl Lexer {
    pub(crate) fn new(text: &str) -> Self {
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
    pub(crate) fn lex_list(&mut self, nested: bool) -> Result<Vec<Tok>, LexError> {
        let mut toks = Vec::new();
        self.lex_into(nested, &mut toks)?;
        Ok(toks)
    }

    /// Like [`Lexer::lex_list`], but the tokens read before an error stay in
    /// `toks`.
    pub(crate) fn lex_into(&mut self, nested: bool, toks: &mut Vec<Tok>) -> Result<(), LexError> {
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

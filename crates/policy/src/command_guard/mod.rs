//! Terminal command guard: the pure lexical review every terminal command
//! passes before approval.
//!
//! This module owns:
//! * the verdict vocabulary ([`Decision`], [`Risk`], [`Verdict`] with a stable
//!   rule key such as `read_only:ls`, `substitution:command` or
//!   `destructive:rm_root`);
//! * the review itself, one room per concern: `policy::shell`
//!   lexes and parses (regexes alone cannot tell a literal metacharacter from
//!   an active one); `review` judges one text and its simple commands;
//!   `simple_command` routes a command name to `read_only`, `git`, `wrappers`
//!   (wrappers, shells, interpreters, project tools) or the command tables;
//!   `destructive` finds the payloads that are blocked wherever they are
//!   nested; `paths` spots credential paths; `options` parses flags;
//! * the verdict shapes: only literal, known read-only shapes are
//!   `allow/low`; anything unparsable, any substitution or expansion, unknown
//!   or path-qualified commands, wrappers, cwd changes, command files,
//!   embedded write/exec modes, inline environment assignments and tools that
//!   run project code are `prompt/high`; known destructive payloads are
//!   `block/critical`, also when nested inside substitutions, `sh -c`, `eval`,
//!   heredocs fed to a shell or wrappers such as `sudo`, `env` and `nohup`;
//! * the detection candidates: the raw command is reviewed together with an
//!   ANSI-stripped, an NFKC-normalised and an `$IFS`-expanded spelling.
//!   Candidates only add checks; the most severe verdict wins.
//!
//! It is containment, not a sandbox: it never touches the filesystem, the
//! environment or the clock, and a `cwd` passed to [`classify_in`] is only
//! compared lexically.

mod candidates;
mod destructive;
mod git;
mod options;
mod paths;
mod read_only;
mod review;
mod simple_command;
mod wrappers;

#[cfg(test)]
mod test_table;

use std::path::Path;

use serde::Serialize;

use crate::shell::{
    is_assignment, parse, FindingKind, HereDoc, LexError, Lexer, Op, Redir, RedirKind, Script, Tok,
    Word,
};

use candidates::*;
use destructive::*;
use git::*;
use options::*;
use paths::*;
use read_only::*;
use review::*;
use simple_command::*;
use wrappers::*;

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

/// How much damage the command could do if it is not what it looks like
/// (the one [`crate::Risk`]): `low` a literal read-only command,
/// `medium` read-only but reaching outside the working tree (absolute, `~`,
/// `..`), `high` runs, writes, deletes, expands or cannot be proven literal,
/// `critical` destructive payloads and credential paths combined with other risks.
pub use crate::Risk;

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

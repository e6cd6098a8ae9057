//! Review of one text (a candidate or a nested payload): findings, script
//! shape, redirections and each simple command.

use super::*;

#[cfg(test)]
#[path = "review_tests.rs"]
pub(super) mod tests;

pub(super) fn classify_text(text: &str, ctx: Ctx) -> Verdict {
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
            acc.add(lex_verdict(e));
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
        acc.add(lex_verdict(LexError::Syntax));
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

pub(super) fn is_null_sink(v: &str) -> bool {
    matches!(
        collapse_slashes(v).as_str(),
        "/dev/null" | "/dev/stdout" | "/dev/stderr"
    )
}

pub(super) fn collapse_slashes(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        if c == '/' && out.ends_with('/') {
            continue;
        }
        out.push(c);
    }
    out
}

pub(super) fn is_block_device(v: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "rdisk", "dm-", "md", "mapper/", "nbd",
        "mem", "kmem", "port",
    ];
    let v = collapse_slashes(v);
    v.strip_prefix("/dev/")
        .is_some_and(|dev| PREFIXES.iter().any(|p| dev.starts_with(p)))
}

fn lex_verdict(e: LexError) -> Verdict {
    match e {
        LexError::Unterminated => high(
            "parse:unterminated",
            "unterminated quote, substitution or expansion",
        ),
        LexError::TooDeep => high("parse:too_deep", "nesting is too deep to review"),
        LexError::Syntax => high("parse:syntax", "shell syntax the guard cannot parse"),
    }
}

//! Wrappers, shells, interpreters and project tools: `sudo`, `env`, `nohup`,
//! `xargs`, `sh -c`, piped scripts and the tools that run project code.

use super::*;

#[cfg(test)]
#[path = "wrappers_tests.rs"]
pub(super) mod tests;

pub(super) struct WrapperSpec {
    opts: OptSpec,
    /// Positionals the wrapper consumes before the command (timeout's
    /// duration, chroot's new root, taskset's mask).
    skip_positionals: usize,
    /// `NAME=value` words may follow the options (env, sudo).
    assignments: bool,
}

pub(super) fn wrapper_spec(base: &str) -> Option<WrapperSpec> {
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

pub(super) fn classify_wrapper(
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
pub(super) fn xargs_command_line(script: &Script, i: usize, argv: &[Word]) -> Option<Vec<Word>> {
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

pub(super) fn classify_shell(args: &[Word], ctx: Ctx, acc: &mut Acc) {
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

pub(super) fn stdin_shell(argv: &[Word]) -> bool {
    let eff = effective_argv(argv);
    let Some(w0) = eff.first() else { return false };
    SHELLS.contains(&basename(&w0.value).to_lowercase().as_str())
        && matches!(shell_mode(&eff[1..]), ShellMode::Stdin)
}

/// The literal text a pipeline feeds to command `i`: `echo …`/`printf …`,
/// optionally through `base64 -d` stages (`echo cm0g… | base64 -d | sh`).
pub(super) fn piped_text(script: &Script, i: usize) -> Option<String> {
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

pub(super) fn interpreter_verdict(base: &str, args: &[Word]) -> Verdict {
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

pub(super) fn project_verdict(base: &str, args: &[Word]) -> Verdict {
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
pub(super) fn brace_expand(argv: &[Word]) -> Option<Vec<Word>> {
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

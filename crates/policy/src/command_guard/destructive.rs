//! Destructive payloads: recursive deletes of critical paths, device writes,
//! shutdowns, mass kills and fork bombs, blocked wherever they are nested.

use super::*;

#[cfg(test)]
#[path = "destructive_tests.rs"]
pub(super) mod tests;

pub(super) fn destructive(base: &str, args: &[Word], ctx: Ctx) -> Option<Verdict> {
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

pub(super) fn device_write() -> Verdict {
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
pub(super) fn is_fork_bomb(text: &str) -> bool {
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

//! Read-only commands: the literal shapes of `ls`, `grep`, `find`, `sed` … that
//! may run unasked, and the options that make them write or execute.

use super::*;

#[cfg(test)]
#[path = "read_only_tests.rs"]
pub(super) mod tests;

pub(super) fn read_path(base: &str) -> Verdict {
    high(
        format!("read_path:{base}"),
        "an option names a file the command reads",
    )
}

pub(super) fn classify_read_only(
    base: &str,
    args: &[Word],
    ctx: Ctx,
    depth: usize,
    acc: &mut Acc,
) -> bool {
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

//! Git: read-only subcommands, network and mutation subcommands, and the
//! options that turn a read into a write.

use super::*;

#[cfg(test)]
#[path = "git_tests.rs"]
pub(super) mod tests;

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

pub(super) fn classify_git(args: &[Word], acc: &mut Acc) {
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

//! Simple-command classification: the command tables and the dispatch from a
//! command name to its checker.

use super::*;

#[cfg(test)]
#[path = "simple_command_tests.rs"]
pub(super) mod tests;

pub(super) const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "fish", "csh", "tcsh",
];

/// Read-only commands without options that write, execute or read paths
/// named inside options.
#[rustfmt::skip]
pub(super) const PLAIN_READ_ONLY: &[&str] = &[
    "ls", "cat", "tac", "nl", "head", "tail", "cut", "tr", "rev", "fold", "fmt", "column", "paste",
    "join", "expand", "unexpand", "strings", "od", "cmp", "comm", "diff", "md5sum", "sha1sum",
    "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "stat", "df", "basename",
    "dirname", "realpath", "readlink", "seq", "sleep", "true", "false", "pwd", "echo", "printf",
    "whoami", "id", "groups", "uname", "nproc", "uptime", "free", "which", "type", "test", "[",
    "tty", "arch", "locale",
];

/// Read-only commands whose arguments are not file paths.
pub(super) const NON_FILE: &[&str] = &[
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

pub(super) fn is_python(base: &str) -> bool {
    ["python", "pypy"].iter().any(|p| {
        base.strip_prefix(p)
            .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit() || c == '.'))
    })
}

pub(super) fn classify_argv(argv: &[Word], ctx: Ctx, depth: usize, acc: &mut Acc) {
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

//! The child environment: an allowlist, never a copy of the server's.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

/// Host variables a child may inherit (exact, case-sensitive names).
const PASSTHROUGH: &[&str] = &[
    "PATH",
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "TZ",
    "TMPDIR",
    "TMP",
    "TEMP",
    // The POSIX/glibc locale categories. Listed, not matched as `LC_*`, so a
    // variable that merely starts with `LC_` (say `LC_API_TOKEN`) never passes.
    "LC_ALL",
    "LC_CTYPE",
    "LC_COLLATE",
    "LC_MESSAGES",
    "LC_MONETARY",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_ADDRESS",
    "LC_IDENTIFICATION",
    "LC_MEASUREMENT",
    "LC_NAME",
    "LC_PAPER",
    "LC_TELEPHONE",
];

/// Names a secret binding target or an overlay must not replace: the
/// passthrough variables, `HOME`, shell start-up hooks, loader injection and
/// language runtime search paths / option hooks.
const RESERVED: &[&str] = &[
    "HOME",
    "USERPROFILE",
    "SHELL",
    "BASH_ENV",
    "ENV",
    "PS4",
    "PROMPT_COMMAND",
    "IFS",
    "CDPATH",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "DYLD_INSERT_LIBRARIES",
    "DYLD_LIBRARY_PATH",
    "PYTHONHOME",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "NODE_OPTIONS",
    "NODE_PATH",
    "RUBYOPT",
    "RUBYLIB",
    "PERL5OPT",
    "PERL5LIB",
    "GIT_EXEC_PATH",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DIR",
    "GIT_CONFIG_GLOBAL",
    "GIT_SSH_COMMAND",
    "COMSPEC",
    "PATHEXT",
    "SYSTEMROOT",
];

/// Builds the complete environment of a child process.
///
/// Keeps only the allowlisted `host` variables with non-empty values
/// (`PATH`, `LANG`, `LANGUAGE`, the `LC_*` locale categories, `TERM`,
/// `COLORTERM`, `TZ`, `TMPDIR`, `TMP`, `TEMP`), sets `HOME` to
/// `runtime_home`, then applies `overlay` (later entries win). Nothing else
/// passes, so provider, channel, MCP, cloud and desktop credentials in the
/// server environment never reach a child. Overlay entries with a name that
/// is not a portable variable name (`[A-Za-z_][A-Za-z0-9_]*`) or a value
/// containing NUL are dropped; whether an overlay may set a reserved name is
/// the caller's policy (see [`is_reserved_env_target`]).
///
/// The result is sorted by name.
pub fn child_env(
    host: impl IntoIterator<Item = (String, String)>,
    runtime_home: &Path,
    overlay: &[(String, String)],
) -> Vec<(String, String)> {
    let mut env = BTreeMap::new();
    for (key, value) in host {
        if PASSTHROUGH.contains(&key.as_str()) && !value.is_empty() && !value.contains('\0') {
            env.entry(key).or_insert(value);
        }
    }
    env.insert(
        "HOME".to_owned(),
        runtime_home.to_string_lossy().into_owned(),
    );
    for (key, value) in overlay {
        if is_env_name(key) && !value.contains('\0') {
            env.insert(key.clone(), value.clone());
        }
    }
    env.into_iter().collect()
}

/// Whether `name` controls execution (PATH, HOME, loader and runtime hooks,
/// locale/temp passthrough): a secret binding target or overlay must not set it.
pub fn is_reserved_env_target(name: &str) -> bool {
    PASSTHROUGH.contains(&name) || RESERVED.contains(&name)
}

/// Creates the per-tenant runtime home (and missing parents) with mode 0700.
/// An existing directory is tightened to 0700; a non-directory is an error.
pub fn ensure_runtime_home(path: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)?;
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "runtime home exists and is not a directory",
        ));
    }
    if meta.permissions().mode() & 0o7777 != 0o700 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// The environment a confined child needs: a `PATH` of folders it can
/// read, `TMPDIR`/`TMP`/`TEMP` in its private temp folder, and (always) a
/// git ceiling at the workspace, so `git` never discovers a repository that
/// encloses the server's home.
pub fn confine_env(
    env: &mut Vec<(String, String)>,
    workspace: &std::path::Path,
    confined: Option<(&str, &std::path::Path)>,
) {
    let mut set = |key: &str, value: String| {
        env.retain(|(k, _)| k != key);
        env.push((key.to_owned(), value));
    };
    let ceiling = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    if let Some(parent) = ceiling.parent() {
        set(
            "GIT_CEILING_DIRECTORIES",
            parent.to_string_lossy().into_owned(),
        );
    }
    if let Some((path, tmp)) = confined {
        set("PATH", path.to_owned());
        for key in ["TMPDIR", "TMP", "TEMP"] {
            set(key, tmp.to_string_lossy().into_owned());
        }
    }
    env.sort();
}

fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b == b'_' || b.is_ascii_alphabetic())
        && bytes.all(|b| b == b'_' || b.is_ascii_alphanumeric())
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod tests;

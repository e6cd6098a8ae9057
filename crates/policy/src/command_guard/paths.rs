//! Paths: operands outside the working tree and credential locations.

use std::path::Component;

use super::*;

#[cfg(test)]
#[path = "paths_tests.rs"]
pub(super) mod tests;

/// Absolute, home-relative or parent-relative operands (option values after
/// `=` included). `/dev/null` is not a read.
pub(super) fn path_is_outside(w: &Word) -> bool {
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
pub(super) fn sensitive_kind(value: &str) -> Option<&'static str> {
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

pub(super) fn sensitive_in_path(path: &Path) -> Option<&'static str> {
    path.components().find_map(|c| match c {
        Component::Normal(s) => s.to_str().and_then(sensitive_component),
        _ => None,
    })
}

pub(super) fn raise_for_sensitive(v: Verdict, kind: &str, why: &str) -> Verdict {
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

//! Option parsing shared by the read-only checkers and the wrappers.

use super::*;

pub(super) struct OptSpec {
    /// Short options that take a value (attached or as the next word).
    pub(super) short_val: &'static str,
    /// Long options that take a value when written without `=`.
    pub(super) long_val: &'static [&'static str],
}

#[derive(Debug)]
pub(super) enum Arg<'a> {
    Short(char, Option<String>),
    Long(String, Option<String>),
    Pos(&'a Word),
}

/// GNU-style parsing with permutation; `stop_at_pos` stops at the first
/// positional (wrappers: the rest is the wrapped command). Returns the index
/// of the first word not consumed.
pub(super) fn parse_args<'a>(
    args: &'a [Word],
    spec: &OptSpec,
    stop_at_pos: bool,
) -> (Vec<Arg<'a>>, usize) {
    let mut out = Vec::new();
    let mut i = 0;
    let mut only_pos = false;
    while let Some(w) = args.get(i) {
        let v = w.value.as_str();
        if only_pos {
            out.push(Arg::Pos(w));
            i += 1;
            continue;
        }
        if v == "--" {
            i += 1;
            if stop_at_pos {
                break;
            }
            only_pos = true;
            continue;
        }
        if let Some(long) = v.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, val)) => (n, Some(val.to_string())),
                None => (long, None),
            };
            let takes = value.is_none()
                && !name.is_empty()
                && spec.long_val.iter().any(|o| o.starts_with(name));
            let value = if takes {
                i += 1;
                args.get(i).map(|w| w.value.clone())
            } else {
                value
            };
            out.push(Arg::Long(name.to_string(), value));
            i += 1;
            continue;
        }
        if v.len() > 1 && v.starts_with('-') {
            let chars: Vec<char> = v.chars().skip(1).collect();
            for (k, c) in chars.iter().enumerate() {
                if spec.short_val.contains(*c) {
                    let rest: String = chars[k + 1..].iter().collect();
                    let value = if rest.is_empty() {
                        i += 1;
                        args.get(i).map(|w| w.value.clone())
                    } else {
                        Some(rest)
                    };
                    out.push(Arg::Short(*c, value));
                    break;
                }
                out.push(Arg::Short(*c, None));
            }
            i += 1;
            continue;
        }
        if stop_at_pos {
            break;
        }
        out.push(Arg::Pos(w));
        i += 1;
    }
    (out, i.min(args.len()))
}

/// A long option matches `full` exactly or as a GNU abbreviation; `exact`
/// lists real options that share the prefix (`--exclude` vs
/// `--exclude-from`) so they are not mistaken for it.
fn long_opt<'b>(parsed: &'b [Arg], full: &str, exact: &[&str]) -> Option<&'b Option<String>> {
    parsed.iter().find_map(|a| match a {
        Arg::Long(n, v)
            if !n.is_empty()
                && (n == full
                    || (full.starts_with(n.as_str()) && !exact.contains(&n.as_str()))) =>
        {
            Some(v)
        }
        _ => None,
    })
}

pub(super) fn has_long(parsed: &[Arg], full: &str, exact: &[&str]) -> bool {
    long_opt(parsed, full, exact).is_some()
}

pub(super) fn has_short(parsed: &[Arg], c: char) -> bool {
    parsed
        .iter()
        .any(|a| matches!(a, Arg::Short(s, _) if *s == c))
}

pub(super) fn short_values(parsed: &[Arg], c: char) -> Vec<String> {
    parsed
        .iter()
        .filter_map(|a| match a {
            Arg::Short(s, Some(v)) if *s == c => Some(v.clone()),
            _ => None,
        })
        .collect()
}

pub(super) fn long_values(parsed: &[Arg], full: &str) -> Vec<String> {
    parsed
        .iter()
        .filter_map(|a| match a {
            Arg::Long(n, Some(v)) if !n.is_empty() && full.starts_with(n.as_str()) => {
                Some(v.clone())
            }
            _ => None,
        })
        .collect()
}

pub(super) fn positionals<'a>(parsed: &[Arg<'a>]) -> Vec<&'a Word> {
    parsed
        .iter()
        .filter_map(|a| match a {
            Arg::Pos(w) => Some(*w),
            _ => None,
        })
        .collect()
}

pub(super) fn is_long(a: &str, full: &str, exact: &[&str]) -> bool {
    a.strip_prefix("--")
        .map(|n| n.split_once('=').map_or(n, |(name, _)| name))
        .is_some_and(|n| {
            !n.is_empty() && (n == full || (full.starts_with(n) && !exact.contains(&n)))
        })
}

pub(super) fn short_cluster_has(a: &str, c: char) -> bool {
    a.len() > 1 && a.starts_with('-') && !a.starts_with("--") && a[1..].contains(c)
}

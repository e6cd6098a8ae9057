//! The flag reference of `demiurge serve` and of every other command,
//! rendered from the clap definitions in [`crate::cli`] (names, environment
//! variables, defaults and the doc comments), so `docs/configuration.md`
//! cannot drift from the binary: a test compares the document's generated
//! blocks with this rendering, and `DEMIURGE_UPDATE_DOCS=1` rewrites them.

use clap::CommandFactory;

use crate::cli::Cli;

/// The markers around the generated `serve` table in `docs/configuration.md`.
pub const BEGIN: &str = "<!-- BEGIN GENERATED: demiurge serve --help -->";
/// The markers around the generated reference of the other commands.
pub const BEGIN_COMMANDS: &str = "<!-- BEGIN GENERATED: demiurge <command> --help -->";
/// Closes either block.
pub const END: &str = "<!-- END GENERATED -->";

/// One row of a table: what `--help` shows of a flag or argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagDoc {
    /// The long name without dashes, or for a positional argument its value
    /// name in angle brackets (`<URL>`).
    pub long: String,
    pub env: Option<String>,
    pub default: Option<String>,
    pub help: String,
}

/// Every flag `demiurge serve` takes: the global ones first, then its own,
/// each in definition order.
pub fn serve_flags() -> Vec<FlagDoc> {
    let root = Cli::command();
    let globals = root.get_arguments().filter(|a| a.is_global_set()).cloned();
    let serve = root
        .get_subcommands()
        .find(|c| c.get_name() == "serve")
        .map(|c| c.get_arguments().cloned().collect::<Vec<_>>())
        .unwrap_or_default();
    globals.chain(serve).filter_map(|a| flag_doc(&a)).collect()
}

/// One command other than `serve`, as its `--help` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandDoc {
    /// The words after `demiurge`, e.g. `token issue`.
    pub path: String,
    pub about: String,
    /// Its own flags and arguments (the global ones are in the `serve` table).
    pub flags: Vec<FlagDoc>,
}

/// Every command that runs something (a leaf of the command tree) except
/// `serve`, in definition order.
pub fn other_commands() -> Vec<CommandDoc> {
    fn walk(cmd: &clap::Command, prefix: &str, out: &mut Vec<CommandDoc>) {
        for sub in cmd.get_subcommands() {
            let path = if prefix.is_empty() {
                sub.get_name().to_owned()
            } else {
                format!("{prefix} {}", sub.get_name())
            };
            if sub.has_subcommands() {
                walk(sub, &path, out);
            } else if path != "serve" && path != "help" {
                out.push(CommandDoc {
                    about: one_line(&sub.get_about().map(|a| a.to_string()).unwrap_or_default()),
                    flags: sub
                        .get_arguments()
                        .filter(|a| !a.is_global_set())
                        .filter_map(flag_doc)
                        .collect(),
                    path,
                });
            }
        }
    }
    let mut out = Vec::new();
    walk(&Cli::command(), "", &mut out);
    out
}

fn flag_doc(arg: &clap::Arg) -> Option<FlagDoc> {
    let long = match arg.get_long() {
        Some("help" | "version") => return None,
        Some(long) => long.to_owned(),
        None if arg.is_positional() => {
            let name = arg
                .get_value_names()
                .and_then(|n| n.first())
                .map(|n| n.to_string())
                .unwrap_or_else(|| arg.get_id().as_str().to_ascii_uppercase());
            format!("<{name}>")
        }
        None => return None,
    };
    let mut help = arg
        .get_long_help()
        .or_else(|| arg.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    // A closed set of values (a `ValueEnum`) is spelled out; a plain switch
    // (`true`/`false`) is not.
    let values: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| format!("`{}`", v.get_name()))
        .collect();
    if arg.get_action().takes_values() && !values.is_empty() && values != ["`true`", "`false`"] {
        help = format!(
            "{}; one of {}",
            help.trim_end_matches('.'),
            values.join(", ")
        );
    }
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    Some(FlagDoc {
        long,
        env: arg.get_env().map(|e| e.to_string_lossy().into_owned()),
        default: (!defaults.is_empty()).then(|| defaults.join(",")),
        help: one_line(&help),
    })
}

/// Doc comments as one table cell: lines joined, pipes escaped.
fn one_line(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// The Markdown table of `flags`.
pub fn render(flags: &[FlagDoc]) -> String {
    let mut out =
        String::from("| flag | environment | default | meaning |\n| --- | --- | --- | --- |\n");
    for f in flags {
        let env = f
            .env
            .as_deref()
            .map_or("—".to_owned(), |e| format!("`{e}`"));
        let default = f
            .default
            .as_deref()
            .map_or("—".to_owned(), |d| format!("`{d}`"));
        let name = if f.long.starts_with('<') {
            f.long.clone()
        } else {
            format!("--{}", f.long)
        };
        out.push_str(&format!("| `{name}` | {env} | {default} | {} |\n", f.help));
    }
    out
}

/// A heading, the command's purpose and its table, for each command.
pub fn render_commands(commands: &[CommandDoc]) -> String {
    let mut out = String::new();
    for (i, c) in commands.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("### `demiurge {}`\n\n{}\n", c.path, c.about));
        if !c.flags.is_empty() {
            out.push('\n');
            out.push_str(&render(&c.flags));
        }
    }
    out
}

/// `docs/configuration.md` as the binary would write it: both generated
/// blocks refreshed; `None` when a block's markers are missing.
pub fn refreshed(document: &str) -> Option<String> {
    let doc = splice(document, BEGIN, &render(&serve_flags()))?;
    splice(&doc, BEGIN_COMMANDS, &render_commands(&other_commands()))
}

/// `document` with the generated block opened by `begin` replaced by
/// `body`; `None` when the markers are missing or out of order.
pub fn splice(document: &str, begin: &str, body: &str) -> Option<String> {
    let start = document.find(begin)? + begin.len();
    let end = start + document[start..].find(END)?;
    Some(format!(
        "{}\n{}{}",
        &document[..start],
        body,
        &document[end..]
    ))
}

#[cfg(test)]
#[path = "cli_reference_tests.rs"]
mod tests;

//! The flag reference of `demiurge serve`, rendered from the clap
//! definitions in [`crate::cli`] (names, environment variables, defaults and
//! the doc comments), so `docs/configuration.md` cannot drift from the
//! binary: a test compares the document's generated block with this
//! rendering, and `DEMIURGE_UPDATE_DOCS=1` rewrites it.

use clap::CommandFactory;

use crate::cli::Cli;

/// The markers around the generated block in `docs/configuration.md`.
pub const BEGIN: &str = "<!-- BEGIN GENERATED: demiurge serve --help -->";
pub const END: &str = "<!-- END GENERATED -->";

/// One row of the table: what `serve --help` shows of a flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagDoc {
    pub long: String,
    pub env: Option<String>,
    pub default: Option<String>,
    pub help: String,
}

/// Every flag `demiurge serve` takes: the global ones first, then its own,
/// each in definition order.
pub fn serve_flags() -> Vec<FlagDoc> {
    let root = Cli::command();
    let globals = root.get_arguments().filter(|a| a.is_global_set());
    let serve = root
        .get_subcommands()
        .find(|c| c.get_name() == "serve")
        .map(|c| c.get_arguments().cloned().collect::<Vec<_>>())
        .unwrap_or_default();
    globals
        .cloned()
        .chain(serve)
        .filter_map(|arg| {
            let long = arg.get_long()?.to_owned();
            if long == "help" || long == "version" {
                return None;
            }
            let help = arg
                .get_long_help()
                .or_else(|| arg.get_help())
                .map(|h| h.to_string())
                .unwrap_or_default();
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
        })
        .collect()
}

/// Doc comments as one table cell: lines joined, pipes escaped.
fn one_line(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// The Markdown table between the markers.
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
        out.push_str(&format!(
            "| `--{}` | {env} | {default} | {} |\n",
            f.long, f.help
        ));
    }
    out
}

/// `document` with its generated block replaced by `table`; `None` when the
/// markers are missing or out of order.
pub fn splice(document: &str, table: &str) -> Option<String> {
    let begin = document.find(BEGIN)? + BEGIN.len();
    let end = begin + document[begin..].find(END)?;
    Some(format!(
        "{}\n{}{}",
        &document[..begin],
        table,
        &document[end..]
    ))
}

#[cfg(test)]
#[path = "cli_reference_tests.rs"]
mod tests;

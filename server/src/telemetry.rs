//! Structured logging with `tracing`: human text by default, JSON with
//! `--log-format json`; level from `RUST_LOG` (default `info`). Text is
//! coloured only when stderr is a terminal (and `NO_COLOR` is unset): a file,
//! a container log or journald gets plain lines with no escape bytes.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::cli::LogFormat;

pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=info"));
    let colour = use_colour(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
    );
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

/// Colour only for a person at a terminal who has not asked for none
/// (<https://no-color.org>).
fn use_colour(stderr_is_terminal: bool, no_color: bool) -> bool {
    stderr_is_terminal && !no_color
}

#[cfg(test)]
mod tests {
    use super::use_colour;

    #[test]
    fn colour_only_at_a_terminal_without_no_color() {
        assert!(use_colour(true, false));
        assert!(!use_colour(true, true));
        assert!(!use_colour(false, false));
        assert!(!use_colour(false, true));
    }
}

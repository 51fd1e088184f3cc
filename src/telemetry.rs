//! Logging set-up: text or JSON lines, filtered by `RUST_LOG` (default `info`).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::cli::LogFormat;

pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour_wanted(
            std::io::stdout().is_terminal(),
            std::env::var_os("NO_COLOR"),
        ));
    let result = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    // A second init (tests) keeps the first subscriber; that is fine.
    drop(result);
}

/// Colour only on a terminal, and never when `NO_COLOR` is set to anything but empty
/// (no-color.org): a log file or journal must not carry escape codes.
fn colour_wanted(terminal: bool, no_color: Option<std::ffi::OsString>) -> bool {
    terminal && no_color.is_none_or(|value| value.is_empty())
}

/// For tests: logs go to the test writer and only when `TEST_LOG` is set.
pub fn init_for_test() {
    if std::env::var_os("TEST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(EnvFilter::new("debug,sqlx=warn,hyper=info"))
            .with_test_writer()
            .try_init();
    }
}

#[cfg(test)]
mod tests {
    use super::colour_wanted;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(colour_wanted(true, None));
        assert!(!colour_wanted(false, None));
        assert!(!colour_wanted(true, Some("1".into())));
        assert!(colour_wanted(true, Some("".into())));
    }
}

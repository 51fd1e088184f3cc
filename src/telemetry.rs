//! Logging set-up: text or JSON lines, filtered by `RUST_LOG` (default `info`).

use tracing_subscriber::EnvFilter;

use crate::cli::LogFormat;

pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    let result = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    // A second init (tests) keeps the first subscriber; that is fine.
    drop(result);
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

//! How a database is named and reached: the options, the errors of connecting, and what
//! the pools report.

use std::time::Duration;

use super::error::StoreError;

/// One connection pool's use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolUse {
    /// `main`, or `read` / `write` for SQLite's two pools.
    pub pool: &'static str,
    pub open: u32,
    pub idle: u32,
    pub max: u32,
}

/// Which database sits behind a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    Sqlite,
    Postgres,
}

/// How to reach the database.
#[derive(Clone)]
pub struct ConnectOptions {
    pub url: String,
    pub max_connections: u32,
    pub acquire_timeout: Duration,
    pub schema: SchemaUse,
    /// Do the store's own upkeep in this process (SQLite: WAL checkpoints). Serving
    /// processes do; short-lived commands (`migrate`, `check`) do not, so they never take
    /// a running server's write lock.
    pub upkeep: bool,
    /// Record notification events in the outbox (`false`: none, for comparison benches).
    pub record_events: bool,
    /// How long a PostgreSQL store waits at start for a primary to answer.
    pub start_wait: StartWait,
}

/// What a connecting process does with the database's migrations (`db/schema.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaUse {
    /// Apply this version's pending migrations (`migrate`, `serve --migrate auto`).
    Migrate,
    /// Refuse a database that lacks one of them (every other command).
    Require,
    /// Only read which the database has (`migrate --check`).
    Inspect,
}

/// oslo.db's `[database] max_retries` and `retry_interval`: tries at start, the pause
/// after each that fails because no server answers (or only a standby does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartWait {
    /// `None`: for ever (oslo's -1).
    pub attempts: Option<u32>,
    pub interval: Duration,
}

impl StartWait {
    /// One try, no wait: for commands and tests that should fail at once.
    pub const ONCE: StartWait = StartWait {
        attempts: Some(1),
        interval: Duration::ZERO,
    };
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("url", &redact_password(&self.url))
            .field("max_connections", &self.max_connections)
            .field("acquire_timeout", &self.acquire_timeout)
            .field("schema", &self.schema)
            .field("upkeep", &self.upkeep)
            .field("record_events", &self.record_events)
            .field("start_wait", &self.start_wait)
            .finish()
    }
}

/// Hides the password of a `scheme://user:password@host` URL for logs.
pub fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((credentials, host)) = rest.split_once('@') else {
        return url.to_owned();
    };
    match credentials.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("unsupported database URL {0:?}: use sqlite://path or postgres://user@host/db")]
    UnsupportedScheme(String),
    #[error("cannot create the directory for the SQLite database {path}: {source}")]
    Directory {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("no database at {0}: `cinder-attach migrate` (or serve's --migrate auto) makes one")]
    Missing(String),
    #[error("cannot connect to {url}: {source}")]
    Connect {
        url: String,
        #[source]
        source: sqlx::Error,
    },
    #[error("cannot open {url}: {source}")]
    Open {
        url: String,
        #[source]
        source: StoreError,
    },
    #[error("cannot apply migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("cannot read which migrations {url} has: {source}")]
    ReadSchema {
        url: String,
        #[source]
        source: sqlx::Error,
    },
    #[error("{url}: {message}")]
    Schema { url: String, message: String },
}

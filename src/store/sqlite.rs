//! The embedded store: one SQLite file in WAL mode.
//!
//! Write transactions start with `BEGIN IMMEDIATE` so they take the write lock up front
//! and wait on `busy_timeout` instead of failing with SQLITE_BUSY half-way; that also
//! serialises writers, so no row locks are needed.

use std::str::FromStr;

use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    Sqlite, SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};

use super::{ConnectError, ConnectOptions};

static MIGRATOR: Migrator = sqlx::migrate!("migrations/sqlite");

pub struct SqliteStore {
    pool: SqlitePool,
    /// One connection for every write: writers queue here (fairly, without sleeping)
    /// instead of in SQLite's busy handler, whose back-off makes tail latency explode.
    writer: SqlitePool,
}

impl SqliteStore {
    const KIND: StoreKind = StoreKind::Sqlite;

    pub async fn connect(options: &ConnectOptions) -> Result<Self, ConnectError> {
        let connect_error = |source| ConnectError::Connect {
            url: options.url.clone(),
            source,
        };
        let sqlite = SqliteConnectOptions::from_str(&options.url)
            .map_err(connect_error)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(options.acquire_timeout);
        if let Some(dir) = sqlite.get_filename().parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir).map_err(|source| ConnectError::Directory {
                    path: dir.display().to_string(),
                    source,
                })?;
            }
        }
        let pool = SqlitePoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(options.acquire_timeout)
            .connect_with(sqlite.clone())
            .await
            .map_err(connect_error)?;
        if options.migrate {
            MIGRATOR.run(&pool).await?;
        }
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(options.acquire_timeout)
            .connect_with(sqlite)
            .await
            .map_err(connect_error)?;
        Ok(Self { pool, writer })
    }

    fn pools(&self) -> Vec<(&'static str, &SqlitePool)> {
        vec![("read", &self.pool), ("write", &self.writer)]
    }

    fn writer(&self) -> &SqlitePool {
        &self.writer
    }

    /// In WAL mode a read transaction sees one snapshot from its first read on.
    async fn begin_snapshot(&self) -> Result<sqlx::Transaction<'static, Sqlite>, StoreError> {
        Ok(self.pool.begin().await?)
    }

    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, Sqlite>, StoreError> {
        Ok(self.writer.begin_with("BEGIN IMMEDIATE").await?)
    }
}

super::sql::sql_store!(SqliteStore, Sqlite, for_update = "");

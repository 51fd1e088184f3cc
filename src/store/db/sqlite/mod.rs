//! The embedded database: one SQLite file in WAL mode, queried through rusqlite.
//!
//! Why not sqlx for SQLite: sqlx gives every SQLite connection its own worker thread and
//! hands each statement and each result over a channel, so an attach request (about ten
//! statements) costs dozens of thread wake-ups; under load those dominated the profile.
//! Here a statement runs on the calling task's thread and has finished when the future
//! is first polled. Statements on this schema take microseconds (indexed lookups, WAL,
//! `synchronous=NORMAL`), so running them in place blocks a runtime thread for far less
//! time than the hand-offs cost.
//!
//! Writers take turns on the one write connection (`writer`): every write transaction
//! starts with `BEGIN IMMEDIATE`, so it holds the database's write lock from its first
//! read and no row locks are needed. Readers take a connection from a small pool
//! (`pool`); a thread of its own keeps the WAL short (`checkpoint`). Only another process
//! holding the write lock makes `BEGIN IMMEDIATE` wait, and that wait is an async retry
//! loop, so it never blocks a runtime thread and can be cancelled. Migrations are applied
//! with sqlx's migrator, so the `_sqlx_migrations` bookkeeping stays what earlier versions
//! wrote.

mod checkpoint;
mod pool;
mod statement;
mod values;
mod writer;

use std::ops::{Deref, DerefMut};
use std::str::FromStr;
use std::sync::Arc;

use rusqlite::{Connection, ErrorCode};
use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::ConnectOptions as _;
use uuid::Uuid;

use self::checkpoint::Checkpointer;
use self::pool::{Opener, ReadPool};
pub use self::writer::Transaction;
use self::writer::Writer;
use super::connect::{ConnectError, ConnectOptions, PoolUse, SchemaUse, StoreKind};
use super::error::StoreError;
use super::row::FromRow;
use super::schema::{self, Applied, SchemaStatus};
use super::sql::Sql;
use super::{Database, Executor};

static MIGRATOR: Migrator = sqlx::migrate!("migrations/sqlite");

pub struct Sqlite {
    pool: ReadPool,
    writer: Writer,
    /// `None` for an in-memory database (no WAL) and without `upkeep`.
    _checkpointer: Option<Checkpointer>,
    schema: SchemaStatus,
}

impl Sqlite {
    pub async fn connect(options: &ConnectOptions) -> Result<Self, ConnectError> {
        let connect_error = |source| ConnectError::Connect {
            url: options.url.clone(),
            source,
        };
        let open_error = |source| ConnectError::Open {
            url: options.url.clone(),
            source,
        };
        let mut sqlite = SqliteConnectOptions::from_str(&options.url)
            .map_err(connect_error)?
            // Only a migrating process makes a new database; a command reading one
            // (`migrate --check`, `check`, `events`) must not leave an empty file behind.
            .create_if_missing(options.schema == SchemaUse::Migrate)
            .foreign_keys(true)
            .busy_timeout(options.acquire_timeout);
        // sqlx names `sqlite::memory:` `file:sqlx-in-memory-N`: the URL tells.
        let in_memory = options.url.contains(":memory:") || options.url.contains("mode=memory");
        let opener = if in_memory {
            // Every connection of this store must see the same database: SQLite's
            // `memdb` VFS shares one by name within the process.
            let name = format!("/cinder-attach-{}", Uuid::new_v4());
            sqlite = SqliteConnectOptions::new()
                .filename(&name)
                .vfs("memdb")
                .foreign_keys(true);
            Opener {
                path: name.into(),
                vfs: Some("memdb"),
                busy_timeout: options.acquire_timeout,
            }
        } else {
            let path = sqlite.get_filename();
            if options.schema != SchemaUse::Migrate && !path.exists() {
                return Err(ConnectError::Missing(path.display().to_string()));
            }
            if let Some(dir) = path.parent() {
                if !dir.as_os_str().is_empty() {
                    std::fs::create_dir_all(dir).map_err(|source| ConnectError::Directory {
                        path: dir.display().to_string(),
                        source,
                    })?;
                }
            }
            sqlite = sqlite
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal);
            Opener {
                path: sqlite.get_filename().to_owned(),
                vfs: None,
                busy_timeout: options.acquire_timeout,
            }
        };
        // The writer opens first: an in-memory database lives as long as a connection
        // to it does, and the migrator's connection closes when it is done.
        let writer = Writer::new(opener.open().map_err(open_error)?, options.acquire_timeout)
            .map_err(open_error)?;
        let migrations = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(options.acquire_timeout)
            .connect_with(sqlite.disable_statement_logging())
            .await
            .map_err(connect_error)?;
        let applied =
            applied_migrations(&migrations)
                .await
                .map_err(|source| ConnectError::ReadSchema {
                    url: options.url.clone(),
                    source,
                })?;
        let schema = schema::judge(&MIGRATOR, &applied);
        if schema::settle(&schema, options.schema, &options.url)? {
            MIGRATOR.run(&migrations).await?;
        }
        migrations.close().await;
        let checkpointer = match options.upkeep && !in_memory {
            true => Some(Checkpointer::start(&opener, &writer).map_err(open_error)?),
            false => None,
        };
        let pool = ReadPool::new(opener, options.max_connections.max(1) as usize);
        // Fail at start-up, not on the first request, if the file cannot be read.
        drop(pool.acquire().await.map_err(open_error)?);
        Ok(Self {
            pool,
            writer,
            _checkpointer: checkpointer,
            schema,
        })
    }

    /// The migrations the database had when this store connected (before migrating).
    pub fn schema(&self) -> &SchemaStatus {
        &self.schema
    }

    /// A database not made yet lacks every migration.
    pub fn schema_of_missing() -> SchemaStatus {
        schema::judge(&MIGRATOR, &[])
    }
}

/// sqlx's bookkeeping rows; none before the first migration.
async fn applied_migrations(pool: &SqlitePool) -> Result<Vec<Applied>, sqlx::Error> {
    let (exists,): (bool,) = sqlx::query_as(
        "select count(*) > 0 from sqlite_master where type = 'table' and name = '_sqlx_migrations'",
    )
    .fetch_one(pool)
    .await?;
    if !exists {
        return Ok(Vec::new());
    }
    let rows: Vec<(i64, String, Vec<u8>, bool)> = sqlx::query_as(schema::SELECT_APPLIED)
        .fetch_all(pool)
        .await?;
    Ok(rows.into_iter().map(Applied::from).collect())
}

impl Executor for Transaction {
    async fn fetch_all<T: FromRow + Send>(&mut self, sql: Sql) -> Result<Vec<T>, StoreError> {
        statement::fetch(self, &sql, usize::MAX)
    }

    async fn fetch_optional<T: FromRow + Send>(
        &mut self,
        sql: Sql,
    ) -> Result<Option<T>, StoreError> {
        Ok(statement::fetch(self, &sql, 1)?.pop())
    }

    async fn execute(&mut self, sql: Sql) -> Result<u64, StoreError> {
        statement::execute(self, &sql)
    }
}

impl super::Transaction for Transaction {
    async fn commit(self) -> Result<(), StoreError> {
        Transaction::commit(self).await
    }
}

impl Database for Sqlite {
    type Read = Transaction;
    type Tx = Transaction;

    const KIND: StoreKind = StoreKind::Sqlite;
    const FOR_UPDATE: &'static str = "";
    const PROJECT_LOCK: Option<&'static str> = None;
    const FOR_UPDATE_OF_VOLUME: &'static str = "";
    // One process holds the whole database during a write: two statements cost no round
    // trip.
    const LOCK_FUNCTION: bool = false;

    /// A group of reads in one read transaction: SQLite pays for locking and for checking
    /// its page cache once per transaction, not once per statement.
    async fn begin_read(&self) -> Result<Transaction, StoreError> {
        self.pool.begin().await
    }

    async fn begin_write(&self) -> Result<Transaction, StoreError> {
        self.writer.begin().await
    }

    async fn begin_snapshot(&self) -> Result<Transaction, StoreError> {
        self.pool.begin().await
    }

    async fn fetch_all<T: FromRow + Send>(&self, sql: Sql) -> Result<Vec<T>, StoreError> {
        statement::fetch(&*self.pool.acquire().await?, &sql, usize::MAX)
    }

    async fn fetch_optional<T: FromRow + Send>(&self, sql: Sql) -> Result<Option<T>, StoreError> {
        Ok(statement::fetch(&*self.pool.acquire().await?, &sql, 1)?.pop())
    }

    /// A statement on its own is a write transaction of its own.
    async fn execute(&self, sql: Sql) -> Result<u64, StoreError> {
        let tx = self.writer.begin().await?;
        let changed = statement::execute(&tx, &sql)?;
        tx.commit().await?;
        Ok(changed)
    }

    fn pool_use(&self) -> Vec<PoolUse> {
        vec![
            PoolUse {
                pool: "read",
                open: self.pool.open(),
                idle: u32::try_from(self.pool.num_idle()).unwrap_or(u32::MAX),
                max: self.pool.max(),
            },
            PoolUse {
                pool: "write",
                open: 1,
                idle: u32::from(!self.writer.busy()),
                max: 1,
            },
        ]
    }

    async fn close(&self) {
        self.pool.close().await;
        self.writer.close().await;
    }
}

/// Where a checked-out connection goes back to.
pub trait Home {
    fn give_back(&self, conn: Connection);
}

/// A connection taken from `home` (the read pool or the writer's slot), given back when
/// dropped.
pub struct CheckedOut<H: Home> {
    conn: Option<Connection>,
    home: Arc<H>,
}

impl<H: Home> CheckedOut<H> {
    fn new(conn: Connection, home: Arc<H>) -> Self {
        CheckedOut {
            conn: Some(conn),
            home,
        }
    }
}

impl<H: Home> CheckedOut<H> {
    fn home(&self) -> &Arc<H> {
        &self.home
    }
}

impl<H: Home> Deref for CheckedOut<H> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("present until dropped")
    }
}

impl<H: Home> DerefMut for CheckedOut<H> {
    fn deref_mut(&mut self) -> &mut Connection {
        self.conn.as_mut().expect("present until dropped")
    }
}

impl<H: Home> Drop for CheckedOut<H> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.home.give_back(conn);
        }
    }
}

fn closed() -> StoreError {
    StoreError::Unavailable("the SQLite store has been closed".into())
}

fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

impl From<rusqlite::Error> for StoreError {
    fn from(err: rusqlite::Error) -> Self {
        match err.sqlite_error_code() {
            Some(ErrorCode::ConstraintViolation)
                if matches!(
                    &err,
                    rusqlite::Error::SqliteFailure(e, _)
                        if e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                            || e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                ) =>
            {
                StoreError::Conflict(err.to_string())
            }
            Some(
                ErrorCode::DatabaseBusy
                | ErrorCode::DatabaseLocked
                | ErrorCode::SystemIoFailure
                | ErrorCode::DiskFull
                | ErrorCode::CannotOpen
                | ErrorCode::OutOfMemory,
            ) => StoreError::Unavailable(err.into()),
            _ => StoreError::Other(err.into()),
        }
    }
}

#[cfg(test)]
mod tests;

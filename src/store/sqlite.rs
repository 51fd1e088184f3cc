//! The embedded store: one SQLite file in WAL mode, queried through `lite` (rusqlite).
//!
//! Write transactions start with `BEGIN IMMEDIATE` on the one write connection, so they
//! hold the write lock from their first read and no row locks are needed; in-process
//! writers queue on that connection's async mutex instead of in SQLite's busy handler.
//! Migrations are applied with sqlx's migrator, so the `_sqlx_migrations` bookkeeping
//! stays what earlier versions wrote.

use std::str::FromStr;

use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::ConnectOptions as _;

use super::lite::{self as db, Checkpointer, Lite, LiteConnection, Opener, ReadPool, Writer};
use super::{ConnectError, ConnectOptions};

static MIGRATOR: Migrator = sqlx::migrate!("migrations/sqlite");

pub struct SqliteStore {
    pool: ReadPool,
    writer: Writer,
    /// `None` for an in-memory database (no WAL) and without `upkeep`.
    _checkpointer: Option<Checkpointer>,
}

impl SqliteStore {
    const KIND: StoreKind = StoreKind::Sqlite;

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
            .create_if_missing(true)
            .foreign_keys(true)
            .busy_timeout(options.acquire_timeout);
        let in_memory =
            sqlite.get_filename().as_os_str() == ":memory:" || options.url.contains("mode=memory");
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
            if let Some(dir) = sqlite.get_filename().parent() {
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
        if options.migrate {
            let migrations = SqlitePoolOptions::new()
                .max_connections(1)
                .acquire_timeout(options.acquire_timeout)
                .connect_with(sqlite.disable_statement_logging())
                .await
                .map_err(connect_error)?;
            MIGRATOR.run(&migrations).await?;
            migrations.close().await;
        }
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
        })
    }

    fn pools_in_use(&self) -> Vec<PoolUse> {
        let writer_idle = u32::from(!self.writer.busy());
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
                idle: writer_idle,
                max: 1,
            },
        ]
    }

    fn writer(&self) -> &Writer {
        &self.writer
    }

    /// A group of reads in one read transaction: SQLite pays for locking and for
    /// checking its page cache once per transaction, not once per statement.
    async fn begin_read(&self) -> Result<db::Transaction<'static, Lite>, StoreError> {
        self.pool.begin().await
    }

    async fn begin_snapshot(&self) -> Result<db::Transaction<'static, Lite>, StoreError> {
        self.pool.begin().await
    }

    async fn begin_write(&self) -> Result<db::Transaction<'static, Lite>, StoreError> {
        self.writer.begin().await
    }
}

super::sql::sql_store!(
    SqliteStore,
    Lite,
    LiteConnection,
    for_update = "",
    for_update_of_volume = ""
);

//! What the store needs from a database: transactions of three kinds and a way to run a
//! statement in them. `postgres.rs` (sqlx) and `sqlite/` (rusqlite) implement it; the
//! store's methods are written once, generic over it.

use std::future::Future;

pub mod connect;
pub mod error;
mod pg_hosts;
mod pg_pool;
pub mod postgres;
mod read_only;
pub mod row;
pub mod schema;
pub mod sql;
pub mod sqlite;

use connect::{PoolUse, StoreKind};
use error::StoreError;
use row::FromRow;
use sql::Sql;

/// A lock held for as long as this value lives (see `Database::hold_lock`).
pub type HeldLock = Box<dyn std::any::Any + Send + Sync>;

/// Runs statements on one connection (inside a transaction, or a group of reads).
pub trait Executor: Send {
    fn fetch_all<T: FromRow + Send>(
        &mut self,
        sql: Sql,
    ) -> impl Future<Output = Result<Vec<T>, StoreError>> + Send;

    fn fetch_optional<T: FromRow + Send>(
        &mut self,
        sql: Sql,
    ) -> impl Future<Output = Result<Option<T>, StoreError>> + Send;

    /// Runs a statement; the number of rows it changed.
    fn execute(&mut self, sql: Sql) -> impl Future<Output = Result<u64, StoreError>> + Send;
}

/// A transaction: rolled back when dropped without `commit`.
pub trait Transaction: Executor {
    fn commit(self) -> impl Future<Output = Result<(), StoreError>> + Send;
}

pub trait Database: Send + Sync + 'static {
    /// A group of reads.
    type Read: Executor;
    /// A write transaction, or a read-only snapshot.
    type Tx: Transaction;

    const KIND: StoreKind;
    /// Appended to a `select` that locks the rows it reads for the rest of the write
    /// transaction. PostgreSQL needs the lock; SQLite's write transactions start with
    /// `BEGIN IMMEDIATE` and so already exclude every other writer.
    const FOR_UPDATE: &'static str;
    /// The same for a `select` joining `volumes v` that locks only the volume row.
    const FOR_UPDATE_OF_VOLUME: &'static str;
    /// The database has `cinder_attach_lock_volume_rows` (migration 0010): a volume is locked
    /// and its live attachments read in one round trip.
    const LOCK_FUNCTION: bool;
    /// Serializes the writes that count a project's usage against its quota, until the
    /// transaction ends (`$1` is the project id). SQLite's write lock already does.
    const PROJECT_LOCK: Option<&'static str>;

    /// Reads that belong together (one connection; one snapshot on SQLite).
    fn begin_read(&self) -> impl Future<Output = Result<Self::Read, StoreError>> + Send;
    /// A write transaction; on SQLite it holds the database's write lock from the start.
    fn begin_write(&self) -> impl Future<Output = Result<Self::Tx, StoreError>> + Send;
    /// A read-only transaction that sees one snapshot for all its statements.
    fn begin_snapshot(&self) -> impl Future<Output = Result<Self::Tx, StoreError>> + Send;

    /// One read statement on its own.
    fn fetch_all<T: FromRow + Send>(
        &self,
        sql: Sql,
    ) -> impl Future<Output = Result<Vec<T>, StoreError>> + Send;

    fn fetch_optional<T: FromRow + Send>(
        &self,
        sql: Sql,
    ) -> impl Future<Output = Result<Option<T>, StoreError>> + Send;

    /// One write statement on its own (its own transaction); the rows it changed.
    fn execute(&self, sql: Sql) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Holds the lock named `key`, shared by every process on the database, until the
    /// value returned is dropped. `None` where the database has none to give: SQLite is
    /// one process's, whose callers take turns in the process instead.
    fn hold_lock(
        &self,
        _key: String,
    ) -> impl Future<Output = Result<Option<HeldLock>, StoreError>> + Send {
        async { Ok(None) }
    }

    /// How busy each connection pool is.
    fn pool_use(&self) -> Vec<PoolUse>;

    /// Listens on `channel` (`LISTEN`) from now on, if the database can notify; whether
    /// it listens. SQLite has no notifications: its callers poll.
    fn listen(
        &self,
        _channel: &'static str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        async { Ok(false) }
    }

    /// Waits for a notification on the channel `listen` took, for at most `longest`.
    fn wait_notified(
        &self,
        longest: std::time::Duration,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        async move {
            tokio::time::sleep(longest).await;
            Ok(())
        }
    }

    /// Waits for connections in use to come back and closes them.
    fn close(&self) -> impl Future<Output = ()> + Send;
}

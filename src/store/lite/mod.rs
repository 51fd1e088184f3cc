//! The embedded store's query layer: a small API shaped like the part of sqlx that
//! `sql.rs` uses (`query`, `query_as`, `QueryBuilder`, `Transaction`), run on rusqlite.
//!
//! Why not sqlx for SQLite: sqlx gives every SQLite connection its own worker thread and
//! hands each statement and each result over a channel, so an attach request (about ten
//! statements) costs dozens of thread wake-ups; under load those dominated the profile.
//! Here a statement runs on the calling task's thread and has finished when the future
//! is first polled. Statements on this schema take microseconds (indexed lookups, WAL,
//! `synchronous=NORMAL`), so running them in place blocks a runtime thread for far less
//! time than the hand-offs cost.
//!
//! Writers take turns on the one write connection (`writer`); readers take a connection
//! from a small pool (`pool`); a thread of its own keeps the WAL short (`checkpoint`).
//! Only another process holding the write lock makes `BEGIN IMMEDIATE` wait, and that
//! wait is an async retry loop, so it never blocks a runtime thread and can be cancelled.

mod checkpoint;
mod pool;
mod query;
mod values;
mod writer;

use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use rusqlite::{Connection, ErrorCode};

pub use checkpoint::Checkpointer;
pub use pool::{Opener, ReadPool};
pub use query::{query, query_as, QueryBuilder};
pub use values::{column, get, FromRow};
pub use writer::{Transaction, Writer};

use super::StoreError;

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

/// The dialect marker `sql.rs` is instantiated with for SQLite.
pub struct Lite;

/// The connection type the shared SQL's helpers take.
pub type LiteConnection = Connection;

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

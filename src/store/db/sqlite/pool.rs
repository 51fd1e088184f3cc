//! Opening connections, and the pool of reader connections.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::super::error::StoreError;
use super::{closed, CheckedOut, Home};

const STATEMENT_CACHE: usize = 256;
/// How to open one more connection to the database.
#[derive(Clone)]
pub struct Opener {
    pub path: PathBuf,
    /// `Some("memdb")` for an in-memory database shared by this process's connections.
    pub vfs: Option<&'static str>,
    pub busy_timeout: Duration,
}

impl Opener {
    pub fn open(&self) -> Result<Connection, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = match self.vfs {
            Some(vfs) => Connection::open_with_flags_and_vfs(&self.path, flags, vfs)?,
            None => Connection::open_with_flags(&self.path, flags)?,
        };
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        conn.busy_timeout(self.busy_timeout)?;
        if self.vfs.is_none() {
            conn.pragma_update(None, "journal_mode", "WAL")?;
        }
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        Ok(conn)
    }
}

/// Connections for reads outside write transactions. A read runs to completion where it
/// is called, so the pool only ever holds about as many connections as threads run.
pub struct ReadPool {
    inner: Arc<PoolInner>,
}

pub struct PoolInner {
    opener: Opener,
    idle: Mutex<Vec<Connection>>,
    open: AtomicU32,
    max_idle: usize,
    closed: AtomicBool,
}

impl PoolInner {
    fn closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }
}

impl ReadPool {
    pub fn new(opener: Opener, max_idle: usize) -> Self {
        ReadPool {
            inner: Arc::new(PoolInner {
                opener,
                idle: Mutex::new(Vec::new()),
                open: AtomicU32::new(0),
                max_idle: max_idle.max(1),
                closed: AtomicBool::new(false),
            }),
        }
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Connection>> {
        // A panic while holding this lock cannot leave the vector half-changed.
        self.inner.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub async fn acquire(&self) -> Result<PooledConnection, StoreError> {
        if self.inner.closed() {
            return Err(closed());
        }
        let reused = self.idle().pop();
        let conn = match reused {
            Some(conn) => conn,
            None => {
                let conn = self.inner.opener.open()?;
                self.inner.open.fetch_add(1, Ordering::Relaxed);
                conn
            }
        };
        Ok(CheckedOut::new(conn, self.inner.clone()))
    }

    /// Closes the idle connections; connections in use close when they come back.
    pub async fn close(&self) {
        self.inner.closed.store(true, Ordering::Relaxed);
        let idle = std::mem::take(&mut *self.idle());
        self.inner
            .open
            .fetch_sub(idle.len() as u32, Ordering::Relaxed);
    }

    pub fn open(&self) -> u32 {
        self.inner.open.load(Ordering::Relaxed)
    }

    pub fn num_idle(&self) -> usize {
        self.idle().len()
    }

    pub fn max(&self) -> u32 {
        u32::try_from(self.inner.max_idle).unwrap_or(u32::MAX)
    }
}

/// A read connection, back in the pool when dropped.
pub type PooledConnection = CheckedOut<PoolInner>;

impl Home for PoolInner {
    fn give_back(&self, conn: Connection) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < self.max_idle && conn.is_autocommit() && !self.closed() {
            idle.push(conn);
        } else {
            self.open.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

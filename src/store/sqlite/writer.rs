//! The one write connection, and transactions on it or on a reader.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::super::error::StoreError;
use super::pool::PooledConnection;
use super::statement::control;
use super::{closed, is_busy, CheckedOut, Home};
/// The one write connection. A write transaction never waits inside (every statement
/// has finished when its future is first polled), so the connection is only ever out
/// for the ~100 µs a transaction runs, on another thread. A thread that finds it out
/// first spins for `SPIN` (a hand-over without a sleep and a wake-up, measured 15-50%
/// more attach cycles per second than sleeping at once), then sleeps on a condition
/// variable for up to `PARK`; only a longer wait (something unusual) goes on
/// asynchronously.
pub struct Writer {
    pub(super) slot: Arc<WriterSlot>,
    /// How long `BEGIN IMMEDIATE` keeps retrying while another process writes.
    lock_timeout: Duration,
}

pub struct WriterSlot {
    conn: Mutex<Option<Connection>>,
    returned: std::sync::Condvar,
    returned_async: tokio::sync::Notify,
    closed: AtomicBool,
}

impl WriterSlot {
    fn conn(&self) -> std::sync::MutexGuard<'_, Option<Connection>> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The write connection for a thread outside the runtime; `None` once closed.
    pub(super) fn check_out_blocking(self: &Arc<Self>) -> Option<WriterConnection> {
        let conn = self.conn();
        let mut conn = self
            .returned
            .wait_while(conn, |c| c.is_none())
            .unwrap_or_else(|e| e.into_inner());
        if self.closed.load(Ordering::Relaxed) {
            return None;
        }
        let conn = conn.take()?;
        Some(CheckedOut::new(conn, self.clone()))
    }
}

impl Writer {
    const SPIN: Duration = Duration::from_micros(150);
    const PARK: Duration = Duration::from_micros(500);

    pub fn new(conn: Connection, lock_timeout: Duration) -> Result<Self, StoreError> {
        // Waits for other processes happen in `begin`, never in SQLite's busy handler.
        conn.busy_timeout(Duration::ZERO)?;
        // A WAL that grew past this is cut back when it starts over.
        conn.pragma_update(None, "journal_size_limit", 64_i64 << 20)?;
        Ok(Writer {
            slot: Arc::new(WriterSlot {
                conn: Mutex::new(Some(conn)),
                returned: std::sync::Condvar::new(),
                returned_async: tokio::sync::Notify::new(),
                closed: AtomicBool::new(false),
            }),
            lock_timeout,
        })
    }

    async fn check_out(&self) -> WriterConnection {
        loop {
            let taken = self.spin().or_else(|| {
                let conn = self.slot.conn();
                let (mut conn, _) = self
                    .slot
                    .returned
                    .wait_timeout_while(conn, Self::PARK, |c| c.is_none())
                    .unwrap_or_else(|e| e.into_inner());
                conn.take()
            });
            if let Some(conn) = taken {
                return CheckedOut::new(conn, self.slot.clone());
            }
            let returned = self.slot.returned_async.notified();
            tokio::pin!(returned);
            returned.as_mut().enable();
            if self.slot.conn().is_none() {
                returned.await;
            }
        }
    }

    fn spin(&self) -> Option<Connection> {
        let until = Instant::now() + Self::SPIN;
        loop {
            if let Ok(mut conn) = self.slot.conn.try_lock() {
                if let Some(conn) = conn.take() {
                    return Some(conn);
                }
            }
            if Instant::now() >= until {
                return None;
            }
            for _ in 0..64 {
                std::hint::spin_loop();
            }
        }
    }

    /// `BEGIN IMMEDIATE` on the write connection: the database's write lock is held from
    /// here to commit or drop, so what the transaction reads cannot change under it.
    pub async fn begin(&self) -> Result<Transaction, StoreError> {
        let deadline = Instant::now() + self.lock_timeout;
        let mut pause = Duration::from_millis(1);
        loop {
            let conn = self.check_out().await;
            if self.slot.closed.load(Ordering::Relaxed) {
                return Err(closed());
            }
            match control(&conn, "BEGIN IMMEDIATE") {
                Ok(()) => return Ok(Transaction::new(Held::Writer(conn))),
                Err(err) if is_busy(&err) && Instant::now() < deadline => {
                    // Another process writes: wait without keeping the connection out.
                    drop(conn);
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
                Err(err) => return Err(err.into()),
            }
        }
    }

    /// Refuses new transactions and waits for the one in progress.
    pub async fn close(&self) {
        self.slot.closed.store(true, Ordering::Relaxed);
        drop(self.check_out().await);
    }

    pub fn busy(&self) -> bool {
        self.slot.conn().is_none()
    }
}

/// The write connection while a transaction has it; given back when dropped.
pub(super) type WriterConnection = CheckedOut<WriterSlot>;

impl Home for WriterSlot {
    fn give_back(&self, conn: Connection) {
        *self.conn() = Some(conn);
        self.returned.notify_one();
        self.returned_async.notify_one();
    }
}

pub(super) enum Held {
    Writer(WriterConnection),
    Pooled(PooledConnection),
}

/// An open transaction; rolled back when dropped without `commit`.
pub struct Transaction {
    held: Option<Held>,
}

impl Transaction {
    pub(super) fn new(held: Held) -> Self {
        Transaction { held: Some(held) }
    }

    pub fn commit(mut self) -> Result<(), StoreError> {
        control(&self, "COMMIT")?;
        self.held = None;
        Ok(())
    }
}

impl Deref for Transaction {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        match self.held.as_ref().expect("present until committed") {
            Held::Writer(conn) => conn,
            Held::Pooled(conn) => conn,
        }
    }
}

impl DerefMut for Transaction {
    fn deref_mut(&mut self) -> &mut Connection {
        match self.held.as_mut().expect("present until committed") {
            Held::Writer(conn) => conn,
            Held::Pooled(conn) => conn,
        }
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if self.held.is_some() && !self.is_autocommit() {
            if let Err(err) = control(self, "ROLLBACK") {
                tracing::warn!(error = %err, "rolling back an abandoned SQLite transaction failed");
            }
        }
    }
}

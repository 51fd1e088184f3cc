//! The one write connection, and transactions on it or on a reader.
//!
//! Write transactions commit in groups. Each runs inside a savepoint of one SQLite
//! transaction (the group's); when it commits and another transaction already waits
//! for the connection, the connection is handed over with the group still open, and
//! the last member to finish writes one `COMMIT` for all. Every member's `commit`
//! returns once that `COMMIT` did, so nothing is acknowledged before it is stored, and
//! a member rolled back (`ROLLBACK TO` its savepoint) leaves the others' work alone. A
//! commit costs SQLite a write of every page the transaction changed to the WAL (62 µs
//! of the writer's 219 µs per attachment request, measured in issue 27); members of a
//! group mostly change the same pages (the tails of the same tables and indexes), which
//! are then written once.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio::sync::watch;

use super::super::error::StoreError;
use super::pool::PooledConnection;
use super::statement::control;
use super::{closed, is_busy, CheckedOut, Home};

/// The one write connection. A write transaction never waits inside (every statement
/// has finished when its future is first polled), so the connection is only ever out
/// for the ~100 µs a transaction runs, on another thread. A transaction that finds it
/// out waits asynchronously. Before transactions committed in groups, spinning for up
/// to 150 µs and then sleeping on a condition variable gave 15-50% more attach cycles
/// per second than waiting asynchronously; with groups, waiting asynchronously gives
/// about 10-50% more and costs 28-47% less CPU per cycle (issue 27, BENCHMARKS.md).
pub struct Writer {
    pub(super) slot: Arc<WriterSlot>,
    /// How long `BEGIN IMMEDIATE` keeps retrying while another process writes.
    lock_timeout: Duration,
}

pub struct WriterSlot {
    conn: Mutex<Option<Connection>>,
    /// The group whose transaction is open on the connection while it waits in the slot
    /// for the next member. Set before the connection is given back and taken after it
    /// is checked out: only the connection's holder touches it.
    open_group: Mutex<Option<Arc<Group>>>,
    /// Transactions waiting for the connection in `Writer::begin`.
    waiting: AtomicUsize,
    /// How long a group takes new members (`Group::MAX_AGE`; tests that need a hand-over
    /// on a loaded machine make it longer).
    max_group_age: Duration,
    returned: std::sync::Condvar,
    returned_async: tokio::sync::Notify,
    closed: AtomicBool,
}

impl WriterSlot {
    fn conn(&self) -> std::sync::MutexGuard<'_, Option<Connection>> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn open_group(&self) -> std::sync::MutexGuard<'_, Option<Arc<Group>>> {
        self.open_group.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The write connection for a thread outside the runtime, with no transaction open
    /// on it (a group left open is committed first); `None` once closed.
    pub(super) fn check_out_blocking(self: &Arc<Self>) -> Option<WriterConnection> {
        let conn = self.conn();
        let mut conn = self
            .returned
            .wait_while(conn, |c| c.is_none())
            .unwrap_or_else(|e| e.into_inner());
        let conn = CheckedOut::new(conn.take()?, self.clone());
        self.commit_open_group(&conn);
        if self.closed.load(Ordering::Relaxed) {
            return None;
        }
        Some(conn)
    }

    /// Commits the group left open on `conn`, if there is one.
    fn commit_open_group(&self, conn: &Connection) {
        if let Some(group) = self.open_group().take() {
            group.commit(conn);
        }
    }

    /// Ends a member's turn on the connection: hands the open group over to a waiting
    /// transaction while the group is young and small, or commits it.
    fn end_turn(&self, conn: WriterConnection, group: Arc<Group>) {
        let hand_over = !conn.is_autocommit()
            && self.waiting.load(Ordering::Relaxed) > 0
            && !self.closed.load(Ordering::Relaxed)
            && group.members.load(Ordering::Relaxed) < Group::MAX_MEMBERS
            && group.started.elapsed() < self.max_group_age;
        if hand_over {
            *self.open_group() = Some(group);
        } else {
            group.commit(&conn);
        }
        drop(conn);
    }

    /// A group left open in the slot when the transaction it was handed to gave up
    /// waiting (a cancelled request): committed by one of its members.
    fn commit_stranded_group(self: &Arc<Self>) {
        let taken = match self.conn.try_lock() {
            Ok(mut conn) => conn.take(),
            Err(_) => None,
        };
        if let Some(conn) = taken {
            let conn = CheckedOut::new(conn, self.clone());
            self.commit_open_group(&conn);
        }
    }
}

/// The write transactions that share one SQLite transaction and its `COMMIT`.
pub(super) struct Group {
    /// Set once, when the group's transaction committed or failed.
    outcome: watch::Sender<Option<Result<(), GroupFailure>>>,
    members: AtomicUsize,
    started: Instant,
}

#[derive(Clone, Debug)]
struct GroupFailure {
    message: String,
    unavailable: bool,
}

impl Group {
    /// Enough to take every request of a busy server in one group; a bound on how long
    /// the first member waits for its acknowledgement.
    const MAX_MEMBERS: usize = 32;
    const MAX_AGE: Duration = Duration::from_millis(5);
    /// How often a member waiting for the group's commit checks for a stranded group.
    const STRANDED_CHECK: Duration = Duration::from_millis(5);

    fn new() -> Arc<Self> {
        Arc::new(Group {
            outcome: watch::Sender::new(None),
            members: AtomicUsize::new(0),
            started: Instant::now(),
        })
    }

    /// Commits the group's transaction, open on `conn`, and tells its members.
    fn commit(&self, conn: &Connection) {
        let outcome = if conn.is_autocommit() {
            // SQLite ended the transaction itself (an I/O error, a full disk): the
            // members' work is gone.
            Err(GroupFailure {
                message: "SQLite rolled back the write transaction".into(),
                unavailable: true,
            })
        } else {
            control(conn, "COMMIT").map_err(|err| {
                if !conn.is_autocommit() {
                    if let Err(err) = control(conn, "ROLLBACK") {
                        tracing::warn!(error = %err, "rolling back a failed SQLite commit failed");
                    }
                }
                let message = err.to_string();
                let unavailable = matches!(StoreError::from(err), StoreError::Unavailable(_));
                GroupFailure {
                    message,
                    unavailable,
                }
            })
        };
        self.outcome.send_replace(Some(outcome));
    }
}

impl GroupFailure {
    fn error(&self) -> StoreError {
        let message = format!("the group commit failed: {}", self.message).into();
        match self.unavailable {
            true => StoreError::Unavailable(message),
            false => StoreError::Other(message),
        }
    }
}

/// Counts a transaction waiting for the connection until dropped.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Writer {
    pub fn new(conn: Connection, lock_timeout: Duration) -> Result<Self, StoreError> {
        Self::with_group_age(conn, lock_timeout, Group::MAX_AGE)
    }

    pub(super) fn with_group_age(
        conn: Connection,
        lock_timeout: Duration,
        max_group_age: Duration,
    ) -> Result<Self, StoreError> {
        // Waits for other processes happen in `begin`, never in SQLite's busy handler.
        conn.busy_timeout(Duration::ZERO)?;
        // A WAL that grew past this is cut back when it starts over.
        conn.pragma_update(None, "journal_size_limit", 64_i64 << 20)?;
        Ok(Writer {
            slot: Arc::new(WriterSlot {
                conn: Mutex::new(Some(conn)),
                open_group: Mutex::new(None),
                waiting: AtomicUsize::new(0),
                max_group_age,
                returned: std::sync::Condvar::new(),
                returned_async: tokio::sync::Notify::new(),
                closed: AtomicBool::new(false),
            }),
            lock_timeout,
        })
    }

    /// The connection, and the group left open on it for this transaction to join.
    async fn check_out(&self) -> (WriterConnection, Option<Arc<Group>>) {
        let _waiting = Waiting::new(&self.slot.waiting);
        loop {
            let returned = self.slot.returned_async.notified();
            tokio::pin!(returned);
            returned.as_mut().enable();
            if let Some(conn) = self.slot.conn().take() {
                let conn = CheckedOut::new(conn, self.slot.clone());
                return (conn, self.slot.open_group().take());
            }
            returned.await;
        }
    }

    /// A write transaction: a savepoint in the open group's transaction, or in a new
    /// group's, begun with `BEGIN IMMEDIATE`: the database's write lock is held from
    /// there to the group's commit, so what the transaction reads cannot change under it.
    pub async fn begin(&self) -> Result<Transaction, StoreError> {
        let deadline = Instant::now() + self.lock_timeout;
        let mut pause = Duration::from_millis(1);
        loop {
            let (conn, open) = self.check_out().await;
            if self.slot.closed.load(Ordering::Relaxed) {
                if let Some(group) = open {
                    group.commit(&conn);
                }
                return Err(closed());
            }
            let group = match open {
                Some(group) => group,
                None => match control(&conn, "BEGIN IMMEDIATE") {
                    Ok(()) => Group::new(),
                    Err(err) if is_busy(&err) && Instant::now() < deadline => {
                        // Another process writes: wait without keeping the connection out.
                        drop(conn);
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(Duration::from_millis(20));
                        continue;
                    }
                    Err(err) => return Err(err.into()),
                },
            };
            if let Err(err) = control(&conn, "SAVEPOINT member") {
                self.slot.end_turn(conn, group);
                return Err(err.into());
            }
            group.members.fetch_add(1, Ordering::Relaxed);
            return Ok(Transaction {
                held: Some(Held::Writer(conn)),
                group: Some(group),
            });
        }
    }

    /// Refuses new transactions and waits for the one in progress (and its group's
    /// commit).
    pub async fn close(&self) {
        self.slot.closed.store(true, Ordering::Relaxed);
        let (conn, open) = self.check_out().await;
        if let Some(group) = open {
            group.commit(&conn);
        }
    }

    pub fn busy(&self) -> bool {
        self.slot.conn().is_none()
    }

    /// How many transactions wait for the connection (tests make one up with it).
    #[cfg(test)]
    pub(super) fn waiting(&self) -> &AtomicUsize {
        &self.slot.waiting
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

impl super::pool::ReadPool {
    /// A read transaction: in WAL mode it sees one snapshot from its first read on.
    pub async fn begin(&self) -> Result<Transaction, StoreError> {
        let conn = self.acquire().await?;
        control(&conn, "BEGIN")?;
        Ok(Transaction::new(Held::Pooled(conn)))
    }
}

pub(super) enum Held {
    Writer(WriterConnection),
    Pooled(PooledConnection),
}

/// An open transaction; rolled back when dropped without `commit`.
pub struct Transaction {
    held: Option<Held>,
    /// A write transaction's group (it runs in the savepoint `member`).
    group: Option<Arc<Group>>,
}

impl Transaction {
    pub(super) fn new(held: Held) -> Self {
        Transaction {
            held: Some(held),
            group: None,
        }
    }

    /// Commits; a write transaction returns once its group's `COMMIT` is done.
    pub async fn commit(mut self) -> Result<(), StoreError> {
        if self.group.is_none() {
            control(&self, "COMMIT")?;
            self.held = None;
            return Ok(());
        }
        // Refused, the member is dropped and so rolled back like any other.
        control(&self, "RELEASE member")?;
        // The member's work is the group's now: its `COMMIT` stores it, whoever waits.
        crate::commit_watch::note_commit();
        let (Some(Held::Writer(conn)), Some(group)) = (self.held.take(), self.group.take()) else {
            unreachable!("only a write transaction has a group");
        };
        let slot = conn.home().clone();
        let mut outcome = group.outcome.subscribe();
        slot.end_turn(conn, group);
        loop {
            if let Some(done) = outcome.borrow_and_update().as_ref() {
                return done.clone().map_err(|failure| failure.error());
            }
            let changed = tokio::time::timeout(Group::STRANDED_CHECK, outcome.changed());
            if changed.await.is_err() {
                slot.commit_stranded_group();
            }
        }
    }
}

/// Undoes a member's work, leaving the rest of its group's.
fn roll_back_member(conn: &Connection) {
    if conn.is_autocommit() {
        return;
    }
    let undone = control(conn, "ROLLBACK TO member").and_then(|()| control(conn, "RELEASE member"));
    if let Err(err) = undone {
        tracing::warn!(error = %err, "rolling back an abandoned SQLite transaction failed");
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
        if let Some(group) = self.group.take() {
            if let Some(Held::Writer(conn)) = self.held.take() {
                roll_back_member(&conn);
                conn.home().clone().end_turn(conn, group);
            }
            return;
        }
        if self.held.is_some() && !self.is_autocommit() {
            if let Err(err) = control(self, "ROLLBACK") {
                tracing::warn!(error = %err, "rolling back an abandoned SQLite transaction failed");
            }
        }
    }
}

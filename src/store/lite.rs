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
//! Writers queue on one async mutex around the single write connection (fair, no busy
//! sleeping); readers take a connection from a small pool. Only another process holding
//! the write lock makes `BEGIN IMMEDIATE` wait, and that wait is an async retry loop, so
//! it never blocks a runtime thread and can be cancelled.

use std::fmt::Display;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDateTime, SecondsFormat, TimeZone, Utc};
use rusqlite::types::{Value, ValueRef};
use rusqlite::{Connection, ErrorCode, OpenFlags, Row, Statement};

use super::{DbId, StoreError};

/// The dialect marker `sql.rs` is instantiated with for SQLite.
pub struct Lite;

/// The connection type the shared SQL's helpers take.
pub type LiteConnection = Connection;

const STATEMENT_CACHE: usize = 256;

// ----- values in and out ---------------------------------------------------------------

/// A value that can be bound to a statement parameter, stored the way sqlx's SQLite
/// driver stores it (so databases written before this layer read the same).
pub trait Bind {
    fn into_value(self) -> Value;
}

impl Bind for Value {
    fn into_value(self) -> Value {
        self
    }
}

impl Bind for DbId {
    fn into_value(self) -> Value {
        Value::Text(self.0.hyphenated().to_string())
    }
}

impl Bind for String {
    fn into_value(self) -> Value {
        Value::Text(self)
    }
}

impl Bind for &str {
    fn into_value(self) -> Value {
        Value::Text(self.to_owned())
    }
}

impl Bind for &String {
    fn into_value(self) -> Value {
        Value::Text(self.clone())
    }
}

impl Bind for i64 {
    fn into_value(self) -> Value {
        Value::Integer(self)
    }
}

impl Bind for i32 {
    fn into_value(self) -> Value {
        Value::Integer(self.into())
    }
}

impl Bind for bool {
    fn into_value(self) -> Value {
        Value::Integer(self.into())
    }
}

impl Bind for DateTime<Utc> {
    fn into_value(self) -> Value {
        Value::Text(self.to_rfc3339_opts(SecondsFormat::AutoSi, false))
    }
}

impl Bind for &Option<String> {
    fn into_value(self) -> Value {
        self.as_deref().into_value()
    }
}

impl<T: Bind> Bind for Option<T> {
    fn into_value(self) -> Value {
        self.map_or(Value::Null, Bind::into_value)
    }
}

/// A column value read into a Rust type; a mismatch means the file holds something this
/// code never wrote, reported as `Corrupt`.
pub trait Decode: Sized {
    fn decode(value: ValueRef<'_>) -> Result<Self, String>;
}

fn mismatch(expected: &str, value: ValueRef<'_>) -> String {
    format!("expected {expected}, found {:?}", value.data_type())
}

impl Decode for String {
    fn decode(value: ValueRef<'_>) -> Result<Self, String> {
        match value {
            ValueRef::Text(text) => String::from_utf8(text.to_vec()).map_err(|e| e.to_string()),
            other => Err(mismatch("text", other)),
        }
    }
}

impl Decode for i64 {
    fn decode(value: ValueRef<'_>) -> Result<Self, String> {
        match value {
            ValueRef::Integer(n) => Ok(n),
            other => Err(mismatch("integer", other)),
        }
    }
}

impl Decode for bool {
    fn decode(value: ValueRef<'_>) -> Result<Self, String> {
        i64::decode(value).map(|n| n != 0)
    }
}

impl Decode for DbId {
    fn decode(value: ValueRef<'_>) -> Result<Self, String> {
        let text = value.as_str().map_err(|_| mismatch("uuid text", value))?;
        uuid::Uuid::parse_str(text)
            .map(DbId)
            .map_err(|e| format!("{text:?}: {e}"))
    }
}

impl Decode for DateTime<Utc> {
    fn decode(value: ValueRef<'_>) -> Result<Self, String> {
        match value {
            ValueRef::Text(_) => {
                let text = value.as_str().map_err(|e| e.to_string())?;
                parse_timestamp(text).ok_or_else(|| format!("timestamp {text:?}"))
            }
            ValueRef::Integer(seconds) => Utc
                .timestamp_opt(seconds, 0)
                .single()
                .ok_or_else(|| format!("timestamp {seconds}")),
            other => Err(mismatch("timestamp", other)),
        }
    }
}

/// RFC 3339 (what `Bind` writes) or SQLite's own `YYYY-MM-DD HH:MM:SS[.f]` (UTC).
fn parse_timestamp(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Some(at.with_timezone(&Utc));
    }
    ["%F %T%.f", "%FT%T%.f"]
        .iter()
        .find_map(|format| NaiveDateTime::parse_from_str(text, format).ok())
        .map(|naive| naive.and_utc())
}

impl<T: Decode> Decode for Option<T> {
    fn decode(value: ValueRef<'_>) -> Result<Self, String> {
        match value {
            ValueRef::Null => Ok(None),
            other => T::decode(other).map(Some),
        }
    }
}

/// A result row read into a Rust value: structs by column name, tuples by position.
pub trait FromRow: Sized {
    /// Where each value this row type reads sits among the statement's `columns`.
    fn locate(columns: &[&str]) -> Result<Vec<usize>, StoreError>;
    fn from_row(row: &Row<'_>, at: &[usize]) -> Result<Self, StoreError>;
}

/// The index of column `name`, for `FromRow` implementations.
pub fn column(columns: &[&str], name: &str) -> Result<usize, StoreError> {
    columns
        .iter()
        .position(|c| c.eq_ignore_ascii_case(name))
        .ok_or_else(|| StoreError::Corrupt(format!("the query returns no column {name:?}")))
}

/// The value at `at` (as located by `FromRow::locate`) decoded as `T`.
pub fn get<T: Decode>(row: &Row<'_>, at: Option<&usize>, name: &str) -> Result<T, StoreError> {
    let index = *at.ok_or_else(|| StoreError::Corrupt(format!("column {name} not located")))?;
    let value = row.get_ref(index)?;
    T::decode(value).map_err(|e| StoreError::Corrupt(format!("column {name}: {e}")))
}

macro_rules! tuple_row {
    ($($T:ident),+) => {
        impl<$($T: Decode),+> FromRow for ($($T,)+) {
            fn locate(columns: &[&str]) -> Result<Vec<usize>, StoreError> {
                let wanted = [$(stringify!($T)),+].len();
                if columns.len() < wanted {
                    return Err(StoreError::Corrupt(format!(
                        "the query returns {} columns, {wanted} expected",
                        columns.len()
                    )));
                }
                Ok((0..wanted).collect())
            }

            fn from_row(row: &Row<'_>, at: &[usize]) -> Result<Self, StoreError> {
                let mut at = at.iter();
                Ok(($(get::<$T>(row, at.next(), stringify!($T))?,)+))
            }
        }
    };
}

tuple_row!(A);
tuple_row!(A, B);
tuple_row!(A, B, C);
tuple_row!(A, B, C, D);

// ----- running statements --------------------------------------------------------------

/// Binds `args` to the statement's `$N` / `?N` parameters by number (so one value can be
/// used twice and numbers need not appear in order), plain `?` in sequence.
fn bind_args(stmt: &mut Statement<'_>, args: &[Value]) -> Result<(), StoreError> {
    let mut sequential = 0;
    for index in 1..=stmt.parameter_count() {
        let number = match stmt.parameter_name(index) {
            Some(name) => name
                .strip_prefix(['$', '?'])
                .and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(|| StoreError::Other(format!("unsupported parameter {name}").into()))?,
            None => {
                sequential += 1;
                sequential
            }
        };
        // As in sqlx, a parameter without a value is NULL.
        let value = number
            .checked_sub(1)
            .and_then(|i| args.get(i))
            .unwrap_or(&Value::Null);
        stmt.raw_bind_parameter(index, value)?;
    }
    Ok(())
}

fn fetch<T: FromRow>(
    conn: &Connection,
    sql: &str,
    args: &[Value],
    limit: usize,
) -> Result<Vec<T>, StoreError> {
    let mut stmt = conn.prepare_cached(sql)?;
    bind_args(&mut stmt, args)?;
    let at = T::locate(&stmt.column_names())?;
    let mut rows = stmt.raw_query();
    let mut found = Vec::new();
    while found.len() < limit {
        let Some(row) = rows.next()? else { break };
        found.push(T::from_row(row, &at)?);
    }
    Ok(found)
}

/// `BEGIN`, `COMMIT` and the like, from the statement cache.
fn control(conn: &Connection, sql: &str) -> Result<(), rusqlite::Error> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

fn execute(conn: &Connection, sql: &str, args: &[Value]) -> Result<Done, StoreError> {
    let mut stmt = conn.prepare_cached(sql)?;
    bind_args(&mut stmt, args)?;
    let writes = !stmt.readonly();
    let mut rows = stmt.raw_query();
    while rows.next()?.is_some() {}
    let rows_affected = if writes { conn.changes() } else { 0 };
    Ok(Done { rows_affected })
}

/// What `execute` reports.
pub struct Done {
    rows_affected: u64,
}

impl Done {
    pub fn rows_affected(&self) -> u64 {
        self.rows_affected
    }
}

/// Where a statement runs: a connection the caller holds (a transaction), the read pool,
/// or the writer (a statement there is its own write transaction).
pub enum Target<'a> {
    Connection(&'a mut Connection),
    Pool(&'a ReadPool),
    Writer(&'a Writer),
}

impl<'a> From<&'a mut Connection> for Target<'a> {
    fn from(conn: &'a mut Connection) -> Self {
        Target::Connection(conn)
    }
}

impl<'a> From<&'a ReadPool> for Target<'a> {
    fn from(pool: &'a ReadPool) -> Self {
        Target::Pool(pool)
    }
}

impl<'a> From<&'a Writer> for Target<'a> {
    fn from(writer: &'a Writer) -> Self {
        Target::Writer(writer)
    }
}

impl Target<'_> {
    async fn run<R>(
        self,
        work: impl FnOnce(&Connection) -> Result<R, StoreError> + Send,
    ) -> Result<R, StoreError> {
        match self {
            Target::Connection(conn) => work(conn),
            Target::Pool(pool) => work(&*pool.acquire().await?),
            Target::Writer(writer) => {
                let tx = writer.begin().await?;
                let result = work(&tx)?;
                tx.commit().await?;
                Ok(result)
            }
        }
    }
}

/// A statement and its arguments.
pub struct Query<'q> {
    sql: &'q str,
    args: Vec<Value>,
}

pub fn query(sql: &str) -> Query<'_> {
    Query {
        sql,
        args: Vec::new(),
    }
}

impl<'q> Query<'q> {
    pub fn bind(mut self, value: impl Bind) -> Self {
        self.args.push(value.into_value());
        self
    }

    pub async fn execute<'e>(self, target: impl Into<Target<'e>>) -> Result<Done, StoreError> {
        target
            .into()
            .run(|conn| execute(conn, self.sql, &self.args))
            .await
    }
}

/// A statement whose rows are read as `T`.
pub struct QueryAs<'q, T> {
    query: Query<'q>,
    row: PhantomData<fn() -> T>,
}

pub fn query_as<T: FromRow>(sql: &str) -> QueryAs<'_, T> {
    QueryAs {
        query: query(sql),
        row: PhantomData,
    }
}

impl<T: FromRow + Send> QueryAs<'_, T> {
    pub fn bind(mut self, value: impl Bind) -> Self {
        self.query.args.push(value.into_value());
        self
    }

    async fn fetch<'e>(
        self,
        target: impl Into<Target<'e>>,
        limit: usize,
    ) -> Result<Vec<T>, StoreError> {
        let Query { sql, args } = self.query;
        target
            .into()
            .run(|conn| fetch(conn, sql, &args, limit))
            .await
    }

    pub async fn fetch_all<'e>(self, target: impl Into<Target<'e>>) -> Result<Vec<T>, StoreError> {
        self.fetch(target, usize::MAX).await
    }

    pub async fn fetch_optional<'e>(
        self,
        target: impl Into<Target<'e>>,
    ) -> Result<Option<T>, StoreError> {
        Ok(self.fetch(target, 1).await?.pop())
    }

    pub async fn fetch_one<'e>(self, target: impl Into<Target<'e>>) -> Result<T, StoreError> {
        self.fetch_optional(target)
            .await?
            .ok_or(StoreError::NotFound)
    }
}

/// Builds a statement piece by piece; bound values become numbered parameters.
pub struct QueryBuilder<'a, D> {
    sql: String,
    args: Vec<Value>,
    dialect: PhantomData<(&'a (), D)>,
}

impl<'a, D> QueryBuilder<'a, D> {
    pub fn new(start: impl Into<String>) -> Self {
        QueryBuilder {
            sql: start.into(),
            args: Vec::new(),
            dialect: PhantomData,
        }
    }

    pub fn push(&mut self, sql: impl Display) -> &mut Self {
        use std::fmt::Write;
        let _ = write!(self.sql, "{sql}");
        self
    }

    pub fn push_bind(&mut self, value: impl Bind) -> &mut Self {
        self.args.push(value.into_value());
        let number = self.args.len();
        self.push(format_args!("${number}"))
    }

    pub fn separated(&mut self, separator: &'static str) -> Separated<'_, 'a, D> {
        Separated {
            builder: self,
            separator,
            first: true,
        }
    }

    /// `values (…), (…)`: one parenthesised row per item, its values written by `row`.
    pub fn push_values<I>(
        &mut self,
        items: impl IntoIterator<Item = I>,
        mut row: impl FnMut(Separated<'_, 'a, D>, I),
    ) -> &mut Self {
        self.push("values ");
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            self.push("(");
            row(self.separated(", "), item);
            self.push(")");
        }
        self
    }

    pub fn build(&mut self) -> Query<'_> {
        Query {
            sql: &self.sql,
            args: std::mem::take(&mut self.args),
        }
    }

    pub fn build_query_as<T: FromRow>(&mut self) -> QueryAs<'_, T> {
        QueryAs {
            query: self.build(),
            row: PhantomData,
        }
    }
}

/// A list inside a `QueryBuilder`: every push after the first is preceded by the separator.
pub struct Separated<'b, 'a, D> {
    builder: &'b mut QueryBuilder<'a, D>,
    separator: &'static str,
    first: bool,
}

impl<D> Separated<'_, '_, D> {
    fn separate(&mut self) {
        if !std::mem::take(&mut self.first) {
            self.builder.push(self.separator);
        }
    }

    pub fn push(&mut self, sql: impl Display) -> &mut Self {
        self.separate();
        self.builder.push(sql);
        self
    }

    pub fn push_bind(&mut self, value: impl Bind) -> &mut Self {
        self.separate();
        self.builder.push_bind(value);
        self
    }
}

// ----- connections ---------------------------------------------------------------------

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

struct PoolInner {
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
        Ok(PooledConnection {
            conn: Some(conn),
            pool: self.inner.clone(),
        })
    }

    /// A read transaction: in WAL mode it sees one snapshot from its first read on.
    pub async fn begin(&self) -> Result<Transaction<'static, Lite>, StoreError> {
        let conn = self.acquire().await?;
        control(&conn, "BEGIN")?;
        Ok(Transaction::new(Held::Pooled(conn)))
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
pub struct PooledConnection {
    conn: Option<Connection>,
    pool: Arc<PoolInner>,
}

impl Deref for PooledConnection {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("present until dropped")
    }
}

impl DerefMut for PooledConnection {
    fn deref_mut(&mut self) -> &mut Connection {
        self.conn.as_mut().expect("present until dropped")
    }
}

impl Drop for PooledConnection {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        let mut idle = self.pool.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < self.pool.max_idle && conn.is_autocommit() && !self.pool.closed() {
            idle.push(conn);
        } else {
            self.pool.open.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// The one write connection. A write transaction never waits inside (every statement
/// has finished when its future is first polled), so the connection is only ever out
/// for the ~100 µs a transaction runs, on another thread. A thread that finds it out
/// first spins for `SPIN` (a hand-over without a sleep and a wake-up, measured 15-50%
/// more attach cycles per second than sleeping at once), then sleeps on a condition
/// variable for up to `PARK`; only a longer wait (something unusual) goes on
/// asynchronously.
pub struct Writer {
    slot: Arc<WriterSlot>,
    /// How long `BEGIN IMMEDIATE` keeps retrying while another process writes.
    lock_timeout: Duration,
}

struct WriterSlot {
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
    fn check_out_blocking(self: &Arc<Self>) -> Option<WriterConnection> {
        let conn = self.conn();
        let mut conn = self
            .returned
            .wait_while(conn, |c| c.is_none())
            .unwrap_or_else(|e| e.into_inner());
        if self.closed.load(Ordering::Relaxed) {
            return None;
        }
        Some(WriterConnection {
            conn: conn.take(),
            slot: self.clone(),
        })
    }

    fn give_back(&self, conn: Connection) {
        *self.conn() = Some(conn);
        self.returned.notify_one();
        self.returned_async.notify_one();
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
                return WriterConnection {
                    conn: Some(conn),
                    slot: self.slot.clone(),
                };
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
    pub async fn begin(&self) -> Result<Transaction<'static, Lite>, StoreError> {
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
struct WriterConnection {
    conn: Option<Connection>,
    slot: Arc<WriterSlot>,
}

impl Deref for WriterConnection {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("present until dropped")
    }
}

impl DerefMut for WriterConnection {
    fn deref_mut(&mut self) -> &mut Connection {
        self.conn.as_mut().expect("present until dropped")
    }
}

impl Drop for WriterConnection {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.slot.give_back(conn);
        }
    }
}

/// Keeps the WAL short, from a thread of its own, so the write connection never
/// checkpoints inside a commit (a checkpoint fsyncs; every request queued behind the
/// write lock would wait for it).
///
/// Passive checkpoints copy frames without blocking anyone, but under a steady stream
/// of writes they never catch up, and SQLite only starts the WAL over once one has: the
/// file grew by ~100 MB/s under the attach benchmark. So once the WAL holds more than
/// `RESTART_FRAMES`, a RESTART checkpoint runs on the write connection itself: the few
/// frames the passive pass left are copied while in-process writers wait for the
/// connection (as for any transaction), readers finish, and the WAL starts over.
/// Stops when dropped.
pub struct Checkpointer {
    _stop: std::sync::mpsc::Sender<()>,
}

impl Checkpointer {
    const INTERVAL: Duration = Duration::from_millis(100);
    /// About 4 MiB of 4 KiB pages.
    const RESTART_FRAMES: i64 = 1000;
    /// How long a RESTART waits for readers that started before it.
    const READERS_WAIT: Duration = Duration::from_millis(50);

    pub fn start(opener: &Opener, writer: &Writer) -> Result<Self, StoreError> {
        let conn = opener.open()?;
        let slot = writer.slot.clone();
        // From here on the write connection leaves checkpoints to this thread.
        if let Some(writer) = slot.check_out_blocking() {
            writer.pragma_update(None, "wal_autocheckpoint", 0)?;
        }
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(Self::INTERVAL)
                {
                    if let Err(err) = Self::round(&conn, &slot) {
                        tracing::warn!(error = %err, "SQLite WAL checkpoint failed");
                    }
                }
            })
            .map_err(|e| StoreError::Other(e.into()))?;
        Ok(Checkpointer { _stop: stop })
    }

    fn round(conn: &Connection, slot: &Arc<WriterSlot>) -> Result<(), rusqlite::Error> {
        let frames = checkpoint(conn, "PASSIVE")?;
        if frames < Self::RESTART_FRAMES {
            return Ok(());
        }
        let Some(writer) = slot.check_out_blocking() else {
            return Ok(());
        };
        writer.busy_timeout(Self::READERS_WAIT)?;
        let restarted = checkpoint(&writer, "RESTART");
        writer.busy_timeout(Duration::ZERO)?;
        restarted.map(drop)
    }
}

/// Runs a checkpoint; the number of frames the WAL held.
fn checkpoint(conn: &Connection, mode: &str) -> Result<i64, rusqlite::Error> {
    conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
        row.get(1)
    })
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

enum Held {
    Writer(WriterConnection),
    Pooled(PooledConnection),
}

/// An open transaction; rolled back when dropped without `commit`.
pub struct Transaction<'c, D> {
    held: Option<Held>,
    scope: PhantomData<(&'c (), D)>,
}

impl<D> Transaction<'_, D> {
    fn new(held: Held) -> Self {
        Transaction {
            held: Some(held),
            scope: PhantomData,
        }
    }

    pub async fn commit(mut self) -> Result<(), StoreError> {
        control(&self, "COMMIT")?;
        self.held = None;
        Ok(())
    }
}

impl<D> Deref for Transaction<'_, D> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        match self.held.as_ref().expect("present until committed") {
            Held::Writer(conn) => conn,
            Held::Pooled(conn) => conn,
        }
    }
}

impl<D> DerefMut for Transaction<'_, D> {
    fn deref_mut(&mut self) -> &mut Connection {
        match self.held.as_mut().expect("present until committed") {
            Held::Writer(conn) => conn,
            Held::Pooled(conn) => conn,
        }
    }
}

impl<D> Drop for Transaction<'_, D> {
    fn drop(&mut self) {
        if self.held.is_some() && !self.is_autocommit() {
            if let Err(err) = control(self, "ROLLBACK") {
                tracing::warn!(error = %err, "rolling back an abandoned SQLite transaction failed");
            }
        }
    }
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
mod tests {
    use super::*;

    fn memory_store() -> (Writer, ReadPool) {
        let opener = Opener {
            path: format!("/lite-test-{}", uuid::Uuid::new_v4()).into(),
            vfs: Some("memdb"),
            busy_timeout: Duration::from_millis(100),
        };
        let writer = Writer::new(opener.open().unwrap(), Duration::from_millis(300)).unwrap();
        let pool = ReadPool::new(opener, 4);
        (writer, pool)
    }

    async fn with_table() -> (Writer, ReadPool) {
        let (writer, pool) = memory_store();
        query("create table t (id text primary key, n integer, at text, flag integer, note text)")
            .execute(&writer)
            .await
            .unwrap();
        (writer, pool)
    }

    #[tokio::test]
    async fn parameters_bind_by_number_in_any_order_and_more_than_once() {
        let (writer, pool) = with_table().await;
        query("insert into t (n, id, note) values ($2, $1, $2 || '-' || $1)")
            .bind("a")
            .bind(7_i64)
            .execute(&writer)
            .await
            .unwrap();
        let row: (String, i64, Option<String>) = query_as("select id, n, note from t")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(row, ("a".to_owned(), 7, Some("7-a".to_owned())));
    }

    #[tokio::test]
    async fn values_come_back_as_written_and_null_as_none() {
        let (writer, pool) = with_table().await;
        let id = DbId(uuid::Uuid::new_v4());
        let at = Utc.with_ymd_and_hms(2026, 11, 22, 5, 6, 7).unwrap()
            + chrono::Duration::microseconds(123_456);
        query("insert into t (id, n, at, flag, note) values ($1, $2, $3, $4, $5)")
            .bind(id)
            .bind(-3_i64)
            .bind(at)
            .bind(true)
            .bind(None::<String>)
            .execute(&writer)
            .await
            .unwrap();
        let row: (DbId, DateTime<Utc>, bool, Option<String>) =
            query_as("select id, at, flag, note from t")
                .fetch_one(&pool)
                .await
                .unwrap();
        assert_eq!(row, (id, at, true, None));
        // Stored the way sqlx's SQLite driver stores them, so old files read the same.
        let (text,): (String,) = query_as("select at from t").fetch_one(&pool).await.unwrap();
        assert_eq!(text, "2026-11-22T05:06:07.123456+00:00");
    }

    #[test]
    fn sqlite_own_timestamp_format_is_read_too() {
        assert_eq!(
            parse_timestamp("2026-11-22 05:06:07"),
            Some(Utc.with_ymd_and_hms(2026, 11, 22, 5, 6, 7).unwrap())
        );
        assert_eq!(parse_timestamp("yesterday"), None);
    }

    #[tokio::test]
    async fn a_mismatched_value_is_corrupt_not_a_panic() {
        let (writer, pool) = with_table().await;
        query("insert into t (id, n) values ('not-a-uuid', 1)")
            .execute(&writer)
            .await
            .unwrap();
        let found: Result<Option<(DbId,)>, _> =
            query_as("select id from t").fetch_optional(&pool).await;
        assert!(matches!(found, Err(StoreError::Corrupt(_))), "{found:?}");
        let found: Result<Vec<(i64, i64)>, _> = query_as("select n from t").fetch_all(&pool).await;
        assert!(matches!(found, Err(StoreError::Corrupt(_))), "{found:?}");
    }

    #[tokio::test]
    async fn a_dropped_transaction_rolls_back_and_frees_the_writer() {
        let (writer, pool) = with_table().await;
        {
            let mut tx = writer.begin().await.unwrap();
            query("insert into t (id) values ('x')")
                .execute(&mut *tx)
                .await
                .unwrap();
        }
        let mut tx = writer.begin().await.unwrap();
        query("insert into t (id) values ('y')")
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let ids: Vec<(String,)> = query_as("select id from t").fetch_all(&pool).await.unwrap();
        assert_eq!(ids, vec![("y".to_owned(),)]);
    }

    #[tokio::test]
    async fn a_duplicate_key_is_a_conflict() {
        let (writer, _pool) = with_table().await;
        query("insert into t (id) values ('x')")
            .execute(&writer)
            .await
            .unwrap();
        let again = query("insert into t (id) values ('x')")
            .execute(&writer)
            .await;
        assert!(
            matches!(again, Err(StoreError::Conflict(_))),
            "{:?}",
            again.err()
        );
    }

    #[tokio::test]
    async fn query_builder_numbers_its_binds() {
        let (writer, pool) = with_table().await;
        let mut q = QueryBuilder::<Lite>::new("insert into t (id, n) ");
        q.push_values([("a", 1_i64), ("b", 2)], |mut row, (id, n)| {
            row.push_bind(id).push_bind(n);
        });
        q.build().execute(&writer).await.unwrap();
        let mut q = QueryBuilder::<Lite>::new("select id from t where n in (");
        let mut list = q.separated(", ");
        list.push_bind(2_i64);
        list.push_bind(3_i64);
        q.push(") order by id");
        let found: Vec<(String,)> = q.build_query_as().fetch_all(&pool).await.unwrap();
        assert_eq!(found, vec![("b".to_owned(),)]);
    }

    #[tokio::test]
    async fn rows_affected_counts_changed_rows_only() {
        let (writer, _pool) = with_table().await;
        query("insert into t (id, n) values ('a', 1), ('b', 1), ('c', 2)")
            .execute(&writer)
            .await
            .unwrap();
        let done = query("update t set n = 5 where n = 1")
            .execute(&writer)
            .await
            .unwrap();
        assert_eq!(done.rows_affected(), 2);
        let done = query("select 1").execute(&writer).await.unwrap();
        assert_eq!(done.rows_affected(), 0);
    }

    #[tokio::test]
    async fn another_process_holding_the_write_lock_makes_begin_wait_then_give_up() {
        let dir = std::env::temp_dir().join(format!("lite-busy-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let opener = Opener {
            path: dir.join("db.sqlite"),
            vfs: None,
            busy_timeout: Duration::from_millis(100),
        };
        let writer = Writer::new(opener.open().unwrap(), Duration::from_millis(200)).unwrap();
        let other = opener.open().unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let started = Instant::now();
        let refused = writer.begin().await;
        assert!(
            matches!(refused, Err(StoreError::Unavailable(_))),
            "{:?}",
            refused.err()
        );
        assert!(started.elapsed() >= Duration::from_millis(200));
        // Released in time: the waiting transaction goes ahead.
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            other.execute_batch("COMMIT").unwrap();
        });
        writer.begin().await.unwrap().commit().await.unwrap();
        release.join().unwrap();
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Under a steady stream of writes with readers always active, passive checkpoints
    /// alone never let the WAL start over; the restart pass must keep it bounded.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_wal_stays_bounded_under_steady_writes_and_reads() {
        let dir = std::env::temp_dir().join(format!("lite-wal-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let opener = Opener {
            path: dir.join("db.sqlite"),
            vfs: None,
            busy_timeout: Duration::from_secs(1),
        };
        let writer = Arc::new(Writer::new(opener.open().unwrap(), Duration::from_secs(5)).unwrap());
        let pool = Arc::new(ReadPool::new(opener.clone(), 4));
        let _checkpointer = Checkpointer::start(&opener, &writer).unwrap();
        query("create table t (id integer primary key, body text)")
            .execute(&*writer)
            .await
            .unwrap();
        let reading = Arc::new(AtomicBool::new(true));
        let reader = {
            let (pool, reading) = (pool.clone(), reading.clone());
            tokio::spawn(async move {
                while reading.load(Ordering::Relaxed) {
                    let mut tx = pool.begin().await.unwrap();
                    let _: Vec<(i64,)> = query_as("select count(*) from t")
                        .fetch_all(&mut *tx)
                        .await
                        .unwrap();
                    tokio::task::yield_now().await;
                }
            })
        };
        // 30,000 pages of WAL (~120 MB) if nothing ever started it over.
        let body = "x".repeat(3000);
        for i in 0..30_000_i64 {
            query("insert or replace into t (id, body) values ($1, $2)")
                .bind(i % 500)
                .bind(body.as_str())
                .execute(&*writer)
                .await
                .unwrap();
        }
        reading.store(false, Ordering::Relaxed);
        reader.await.unwrap();
        let wal = std::fs::metadata(dir.join("db.sqlite-wal")).unwrap().len();
        assert!(wal <= 64 << 20, "the WAL grew to {wal} bytes");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn a_closed_store_is_unavailable() {
        let (writer, pool) = with_table().await;
        pool.close().await;
        writer.close().await;
        let read: Result<Vec<(String,)>, _> = query_as("select id from t").fetch_all(&pool).await;
        assert!(matches!(read, Err(StoreError::Unavailable(_))), "{read:?}");
        let write = query("insert into t (id) values ('x')")
            .execute(&writer)
            .await;
        assert!(
            matches!(write, Err(StoreError::Unavailable(_))),
            "{:?}",
            write.err()
        );
    }
}

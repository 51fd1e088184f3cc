//! The production database: PostgreSQL through sqlx, shared by any number of API
//! processes. Writes that decide on what they read lock the rows they read
//! (`FOR UPDATE`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgArguments, PgConnection, PgListener, PgPoolOptions, PgRow};
use sqlx::{Arguments, Row as _};
use tokio::sync::Semaphore;
use uuid::Uuid;

use super::connect::{
    redact_password, ConnectError, ConnectOptions, PoolUse, StartWait, StoreKind,
};
use super::error::StoreError;
use super::pg_hosts;
use super::pg_pool::{PgPool, PoolChecks, Pooled, IDLE_TIMEOUT, MAX_LIFETIME};
use super::read_only::{self, opened_since_read_only};
use super::row::{Columns, FromRow, Row};
use super::schema::{self, Applied, SchemaStatus};
use super::sql::{trace_control, Arg, Sql};
use super::{Database, Executor, HeldLock, Transaction};

static MIGRATOR: Migrator = sqlx::migrate!("migrations/postgres");

pub struct Postgres {
    pool: PgPool,
    listener: tokio::sync::Mutex<Option<PgListener>>,
    /// Bounds the connections that hold a lock for `hold_lock` to half the pool: each
    /// holder still needs one more for the write it holds the lock around.
    lock_holders: Arc<Semaphore>,
    schema: SchemaStatus,
}

impl Postgres {
    pub async fn connect(options: &ConnectOptions) -> Result<Self, ConnectError> {
        read_only::start_clock();
        let url = redact_password(&options.url);
        let connect_error = |source| ConnectError::Connect {
            url: url.clone(),
            source,
        };
        let hosts = pg_hosts::parse(&options.url).map_err(connect_error)?;
        let checks = PoolChecks {
            on_open: |conn| Box::pin(refuse_standby(conn)),
            usable_at_age: opened_since_read_only,
            max_lifetime: MAX_LIFETIME,
            idle_timeout: IDLE_TIMEOUT,
        };
        let pool = PgPool::new(
            hosts,
            options.max_connections,
            options.acquire_timeout,
            checks,
        );
        first_connection(&pool, options.start_wait, &url)
            .await
            .map_err(connect_error)?;
        let mut conn = pool.acquire().await.map_err(connect_error)?;
        let applied =
            applied_migrations(conn.start())
                .await
                .map_err(|source| ConnectError::ReadSchema {
                    url: url.clone(),
                    source,
                })?;
        conn.finish();
        let schema = schema::judge(&MIGRATOR, &applied);
        if schema::settle(&schema, options.schema, &url)? {
            MIGRATOR.run(conn.start()).await?;
            conn.finish();
        }
        drop(conn);
        let holders = (options.max_connections / 2).max(1) as usize;
        Ok(Self {
            pool,
            listener: tokio::sync::Mutex::new(None),
            lock_holders: Arc::new(Semaphore::new(holders)),
            schema,
        })
    }

    /// The migrations the database had when this store connected (before migrating).
    pub fn schema(&self) -> &SchemaStatus {
        &self.schema
    }
}

/// sqlx's bookkeeping rows; none before the first migration.
async fn applied_migrations(conn: &mut PgConnection) -> Result<Vec<Applied>, sqlx::Error> {
    let (exists,): (bool,) = sqlx::query_as("select to_regclass('_sqlx_migrations') is not null")
        .fetch_one(&mut *conn)
        .await?;
    if !exists {
        return Ok(Vec::new());
    }
    let rows: Vec<(i64, String, Vec<u8>, bool)> = sqlx::query_as(schema::SELECT_APPLIED)
        .fetch_all(conn)
        .await?;
    Ok(rows.into_iter().map(Applied::from).collect())
}

/// The first connection, so that a wrong password shows at start. While no server
/// answers (or only a standby does), it is tried again as `wait` says: the service starts
/// with its database, or while a failover elects a primary.
async fn first_connection(pool: &PgPool, wait: StartWait, url: &str) -> Result<(), sqlx::Error> {
    let mut attempt = 1u32;
    loop {
        match pool.acquire().await {
            Ok(conn) => {
                if attempt > 1 {
                    tracing::info!(%url, attempt, "database reached");
                }
                drop(conn);
                return Ok(());
            }
            Err(err @ (sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::PoolTimedOut))
                if wait.attempts.is_none_or(|n| attempt < n) =>
            {
                let left = wait.attempts.map(|n| n - attempt);
                tracing::warn!(%url, error = %err, attempts_left = ?left,
                    "no primary database server answers yet; trying again in {:?}", wait.interval);
                tokio::time::sleep(wait.interval).await;
                attempt += 1;
            }
            Err(err) => return Err(err),
        }
    }
}

/// A new connection that reached a standby (a primary demoted by a failover, or a
/// replica a router has not taken out yet) could only fail every write: it is refused
/// (as unreachable, so the request gets a 503), and the pool tries again until it reaches
/// the primary. One round trip per new connection, none per request.
async fn refuse_standby(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    let (standby,): (bool,) = sqlx::query_as("select pg_is_in_recovery()")
        .fetch_one(&mut *conn)
        .await?;
    if standby {
        return Err(sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "the database server is a standby (read-only); waiting for the primary",
        )));
    }
    Ok(())
}

fn arguments(sql: &Sql) -> Result<PgArguments, StoreError> {
    let mut args = PgArguments::default();
    for arg in sql.args() {
        let added = match arg {
            Arg::Uuid(id) => args.add(*id),
            Arg::Text(text) => args.add(text.as_deref()),
            Arg::Int(n) => args.add(*n),
            Arg::Bool(b) => args.add(*b),
            Arg::Timestamp(at) => args.add(*at),
        };
        added.map_err(StoreError::Other)?;
    }
    Ok(args)
}

fn read<T: FromRow>(row: &PgRow) -> Result<T, StoreError> {
    T::from_row(&mut Columns::new(&PgValues(row)))
}

async fn fetch_all<T: FromRow>(conn: &mut Pooled, sql: &Sql) -> Result<Vec<T>, StoreError> {
    sql.trace();
    let query = sqlx::query_with(sql.text(), arguments(sql)?);
    let rows = query.fetch_all(conn.start()).await?;
    conn.finish();
    rows.iter().map(read).collect()
}

async fn fetch_optional<T: FromRow>(conn: &mut Pooled, sql: &Sql) -> Result<Option<T>, StoreError> {
    sql.trace();
    let query = sqlx::query_with(sql.text(), arguments(sql)?);
    let row = query.fetch_optional(conn.start()).await?;
    conn.finish();
    row.as_ref().map(read).transpose()
}

async fn execute(conn: &mut Pooled, sql: &Sql) -> Result<u64, StoreError> {
    sql.trace();
    let query = sqlx::query_with(sql.text(), arguments(sql)?);
    let done = query.execute(conn.start()).await?;
    conn.finish();
    Ok(done.rows_affected())
}

/// A connection held by a transaction or a group of reads.
pub struct PgConn(Pooled);

impl Executor for PgConn {
    async fn fetch_all<T: FromRow + Send>(&mut self, sql: Sql) -> Result<Vec<T>, StoreError> {
        fetch_all(&mut self.0, &sql).await
    }

    async fn fetch_optional<T: FromRow + Send>(
        &mut self,
        sql: Sql,
    ) -> Result<Option<T>, StoreError> {
        fetch_optional(&mut self.0, &sql).await
    }

    async fn execute(&mut self, sql: Sql) -> Result<u64, StoreError> {
        execute(&mut self.0, &sql).await
    }
}

impl Transaction for PgConn {
    async fn commit(self) -> Result<(), StoreError> {
        trace_control("commit");
        crate::commit_watch::note_commit();
        // Lost while committing: the server may have committed before it went away.
        self.0
            .commit()
            .await
            .map_err(|err| match StoreError::from(err) {
                StoreError::Unavailable(source) => StoreError::InDoubt(source),
                other => other,
            })
    }
}

impl Database for Postgres {
    /// Postgres needs no transaction around a group of reads (a `BEGIN` would cost a
    /// round trip of its own): one pooled connection.
    type Read = PgConn;
    type Tx = PgConn;

    const KIND: StoreKind = StoreKind::Postgres;
    const FOR_UPDATE: &'static str = " for update";
    const PROJECT_LOCK: Option<&'static str> =
        Some("select pg_advisory_xact_lock(hashtextextended('cinder-attach quota ' || $1, 0))");
    const FOR_UPDATE_OF_VOLUME: &'static str = " for update of v";
    const LOCK_FUNCTION: bool = true;

    async fn begin_read(&self) -> Result<Self::Read, StoreError> {
        Ok(PgConn(self.pool.acquire().await?))
    }

    async fn begin_write(&self) -> Result<Self::Tx, StoreError> {
        trace_control("begin");
        Ok(PgConn(self.pool.begin("BEGIN").await?))
    }

    async fn begin_snapshot(&self) -> Result<Self::Tx, StoreError> {
        let begin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
        trace_control(begin);
        Ok(PgConn(self.pool.begin(begin).await?))
    }

    async fn fetch_all<T: FromRow + Send>(&self, sql: Sql) -> Result<Vec<T>, StoreError> {
        fetch_all(&mut self.pool.acquire().await?, &sql).await
    }

    async fn fetch_optional<T: FromRow + Send>(&self, sql: Sql) -> Result<Option<T>, StoreError> {
        fetch_optional(&mut self.pool.acquire().await?, &sql).await
    }

    /// A transaction holding `pg_advisory_xact_lock` on the key: dropping it rolls back,
    /// which releases the lock (and a process that dies releases it with its connection).
    /// The begin and the lock go in one round trip (a simple query of two statements).
    async fn hold_lock(&self, key: String) -> Result<Option<HeldLock>, StoreError> {
        let permit = Arc::clone(&self.lock_holders)
            .acquire_owned()
            .await
            .map_err(|err| StoreError::Unavailable(Box::new(err)))?;
        let key = key.replace('\'', "''");
        let begin = format!("BEGIN; SELECT pg_advisory_xact_lock(hashtextextended('{key}', 0))");
        trace_control(&begin);
        let tx = PgConn(self.pool.begin(&begin).await?);
        Ok(Some(Box::new((permit, Mutex::new(tx)))))
    }

    async fn execute(&self, sql: Sql) -> Result<u64, StoreError> {
        let mut conn = self.pool.acquire().await?;
        // A statement on its own commits as it runs.
        crate::commit_watch::note_commit();
        execute(&mut conn, &sql).await
    }

    async fn listen(&self, channel: &'static str) -> Result<bool, StoreError> {
        let mut listener = self.listener.lock().await;
        if listener.is_none() {
            // sqlx's listener keeps a connection of its own and, when it is lost, opens
            // another and listens again.
            let pool = PgPoolOptions::new()
                .max_connections(1)
                .connect_lazy_with(self.pool.current_server());
            let mut opened = PgListener::connect_with(&pool).await?;
            opened.listen(channel).await?;
            *listener = Some(opened);
        }
        Ok(true)
    }

    async fn wait_notified(&self, longest: Duration) -> Result<(), StoreError> {
        let mut listener = self.listener.lock().await;
        let Some(open) = listener.as_mut() else {
            tokio::time::sleep(longest).await;
            return Ok(());
        };
        match tokio::time::timeout(longest, open.try_recv()).await {
            // Notified, timed out, or the connection was lost (a notification may have
            // been lost with it): the caller looks again either way.
            Ok(Ok(_)) | Err(_) => Ok(()),
            Ok(Err(err)) => {
                *listener = None;
                Err(err.into())
            }
        }
    }

    fn pool_use(&self) -> Vec<PoolUse> {
        let (open, idle, max) = self.pool.usage();
        vec![PoolUse {
            pool: "main",
            open,
            idle,
            max,
        }]
    }

    async fn close(&self) {
        self.pool.close().await;
    }
}

/// A PostgreSQL row through the store's `Row`.
struct PgValues<'r>(&'r PgRow);

impl PgValues<'_> {
    fn get<T>(&self, at: usize) -> Result<Option<T>, StoreError>
    where
        T: for<'v> sqlx::Decode<'v, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
    {
        Ok(self.0.try_get::<Option<T>, _>(at)?)
    }
}

impl Row for PgValues<'_> {
    fn uuid(&self, at: usize) -> Result<Option<Uuid>, StoreError> {
        self.get(at)
    }
    fn text(&self, at: usize) -> Result<Option<String>, StoreError> {
        self.get(at)
    }
    fn int(&self, at: usize) -> Result<Option<i64>, StoreError> {
        self.get(at)
    }
    fn bool(&self, at: usize) -> Result<Option<bool>, StoreError> {
        self.get(at)
    }
    fn timestamp(&self, at: usize) -> Result<Option<DateTime<Utc>>, StoreError> {
        self.get(at)
    }
}

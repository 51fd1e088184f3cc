//! PostgreSQL's connection pool. sqlx's own pool pings the server (a `Sync` round trip)
//! every time it hands a connection out and again every time one comes back: four round
//! trips per request beside its statements, which cost the attach cycle a sixth of its
//! speed (BENCHMARKS.md). Here a connection whose last statement or commit finished goes
//! straight back to the idle stack. One whose last use did not finish (an error, a future
//! dropped mid-statement, a transaction never committed) is settled first, in a task of
//! its own, as sqlx settles every one: rolled back, or pinged to drain what the server
//! still sends; so no connection sits idle inside a transaction holding its locks. One
//! idle for a second or more is pinged before it is handed out, so a connection that died
//! in an outage is replaced instead of failing a request.

use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sqlx::postgres::{PgConnectOptions, PgConnection};

use super::pg_hosts::PgHosts;
use sqlx::{ConnectOptions as _, Connection as _, Executor as _};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a connection may sit idle and still be handed out without a ping.
const TRUSTED_IDLE: Duration = Duration::from_secs(1);
/// As sqlx's pool: a connection is closed after half an hour (so the server's memory of
/// each session is renewed), or after ten minutes unused.
pub(super) const MAX_LIFETIME: Duration = Duration::from_secs(30 * 60);
pub(super) const IDLE_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// How long settling a connection given back unsettled may take before it is dropped
/// (so a server that stopped answering cannot keep its permit for good).
const SETTLE_WITHIN: Duration = Duration::from_secs(10);
/// The first and the longest pause between two attempts to open a connection.
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const MAX_BACKOFF: Duration = Duration::from_millis(500);

pub(super) type CheckFuture<'c> =
    Pin<Box<dyn Future<Output = Result<(), sqlx::Error>> + Send + 'c>>;

/// What the pool asks of the connections it opens and takes back.
pub(super) struct PoolChecks {
    /// Run on every new connection; an `Io` error there means "try another one".
    pub on_open: for<'c> fn(&'c mut PgConnection) -> CheckFuture<'c>,
    /// Whether a connection opened this long ago may still be used.
    pub usable_at_age: fn(Duration) -> bool,
    /// A connection is closed this long after it was opened, or after it has been idle
    /// this long (`MAX_LIFETIME`, `IDLE_TIMEOUT`).
    pub max_lifetime: Duration,
    pub idle_timeout: Duration,
}

pub(super) struct PgPool {
    inner: Arc<Inner>,
}

struct Inner {
    hosts: PgHosts,
    /// The server that last opened a connection: new ones try it first.
    current: AtomicUsize,
    checks: PoolChecks,
    /// One permit per connection that may be open; a handed-out connection holds one.
    permits: Arc<Semaphore>,
    max: u32,
    acquire_timeout: Duration,
    /// The most recently used last, so the busiest connections stay warm.
    idle: Mutex<Vec<Idle>>,
    open: AtomicU32,
}

struct Idle {
    conn: PgConnection,
    opened: Instant,
    since: Instant,
}

/// A connection handed out by the pool; it goes back when dropped.
pub(super) struct Pooled {
    conn: Option<PgConnection>,
    opened: Instant,
    /// A statement started and has not finished (dropped or failed).
    unsettled: bool,
    in_transaction: bool,
    permit: Option<OwnedSemaphorePermit>,
    pool: Arc<Inner>,
}

impl PgPool {
    /// A pool of up to `max` connections, one of them opened now, so that a wrong address
    /// or password shows at start-up.
    #[cfg(test)]
    pub async fn connect(
        options: PgConnectOptions,
        max: u32,
        acquire_timeout: Duration,
        checks: PoolChecks,
    ) -> Result<Self, sqlx::Error> {
        let hosts = PgHosts {
            servers: vec![options],
            connect_timeout: None,
        };
        let pool = Self::new(hosts, max, acquire_timeout, checks);
        drop(pool.acquire().await?);
        Ok(pool)
    }

    /// A pool of up to `max` connections to the first of `hosts` that answers and passes
    /// the checks; none is opened yet.
    pub fn new(hosts: PgHosts, max: u32, acquire_timeout: Duration, checks: PoolChecks) -> Self {
        let max = max.max(1);
        Self {
            inner: Arc::new(Inner {
                hosts,
                current: AtomicUsize::new(0),
                checks,
                permits: Arc::new(Semaphore::new(max as usize)),
                max,
                acquire_timeout,
                idle: Mutex::new(Vec::new()),
                open: AtomicU32::new(0),
            }),
        }
    }

    /// The server new connections go to first (the one that last took one).
    pub fn current_server(&self) -> PgConnectOptions {
        let servers = &self.inner.hosts.servers;
        servers[self.inner.current.load(Ordering::Relaxed) % servers.len()].clone()
    }

    /// A connection, waiting up to the acquire timeout for one to be free.
    pub async fn acquire(&self) -> Result<Pooled, sqlx::Error> {
        let inner = &self.inner;
        let deadline = Instant::now() + inner.acquire_timeout;
        let permit =
            tokio::time::timeout_at(deadline.into(), Arc::clone(&inner.permits).acquire_owned())
                .await
                .map_err(|_| sqlx::Error::PoolTimedOut)?
                .map_err(|_| sqlx::Error::PoolClosed)?;
        while let Some(Idle {
            mut conn,
            opened,
            since,
        }) = inner.pop_idle()
        {
            if since.elapsed() >= TRUSTED_IDLE {
                // The ping, too, waits no longer than the acquire may. One cut off by the
                // deadline ends the acquire: the next idle connection's ping would be cut
                // off at once, and a working connection forgotten with each.
                match tokio::time::timeout_at(deadline.into(), conn.ping()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) => {
                        inner.forget(conn);
                        continue;
                    }
                    Err(_) => {
                        inner.forget(conn);
                        return Err(sqlx::Error::PoolTimedOut);
                    }
                }
            }
            return Ok(inner.hand_out(conn, opened, permit));
        }
        let conn = inner.open_new(deadline).await?;
        Ok(inner.hand_out(conn, Instant::now(), permit))
    }

    /// A connection in a transaction begun by `begin` (`BEGIN` or a variant of it).
    pub async fn begin(&self, begin: &str) -> Result<Pooled, sqlx::Error> {
        let mut pooled = self.acquire().await?;
        pooled.in_transaction = true;
        pooled.start().execute(begin).await?;
        pooled.finish();
        Ok(pooled)
    }

    /// Open connections, how many of them are idle, and the bound.
    pub fn usage(&self) -> (u32, u32, u32) {
        let idle = u32::try_from(self.inner.idle().len()).unwrap_or(u32::MAX);
        (
            self.inner.open.load(Ordering::Relaxed),
            idle,
            self.inner.max,
        )
    }

    /// Hands out nothing from now on, and closes the idle connections.
    pub async fn close(&self) {
        self.inner.permits.close();
        let idle = std::mem::take(&mut *self.inner.idle());
        for idle in idle {
            self.inner.open.fetch_sub(1, Ordering::Relaxed);
            let _ = idle.conn.close().await;
        }
    }
}

impl Inner {
    fn idle(&self) -> MutexGuard<'_, Vec<Idle>> {
        self.idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The most recently used idle connection that may still be used (older ones that
    /// may not are closed on the way).
    fn pop_idle(&self) -> Option<Idle> {
        loop {
            let idle = self.idle().pop()?;
            if self.usable_at_age(idle.opened.elapsed()) {
                return Some(idle);
            }
            self.retire(idle.conn);
        }
    }

    fn hand_out(
        self: &Arc<Self>,
        conn: PgConnection,
        opened: Instant,
        permit: OwnedSemaphorePermit,
    ) -> Pooled {
        Pooled {
            conn: Some(conn),
            opened,
            unsettled: false,
            in_transaction: false,
            permit: Some(permit),
            pool: Arc::clone(self),
        }
    }

    /// Opens a connection, trying again while no server can be reached (or none is the
    /// one wanted), until `deadline`.
    async fn open_new(&self, deadline: Instant) -> Result<PgConnection, sqlx::Error> {
        let mut backoff = FIRST_BACKOFF;
        loop {
            match self.open_on_any(deadline).await {
                Ok(conn) => {
                    self.open.fetch_add(1, Ordering::Relaxed);
                    return Ok(conn);
                }
                Err(err @ (sqlx::Error::Io(_) | sqlx::Error::Tls(_)))
                    if Instant::now() + backoff < deadline =>
                {
                    tracing::debug!(error = %err, "no database connection yet; trying again");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// One try of every server in turn, from the one that last opened a connection: the
    /// first that answers and passes the checks. A server that cannot be reached (or is
    /// a standby) passes the turn on; any other error (a wrong password) ends the try.
    async fn open_on_any(&self, deadline: Instant) -> Result<PgConnection, sqlx::Error> {
        let servers = &self.hosts.servers;
        let first = self.current.load(Ordering::Relaxed);
        let mut last = None;
        for turn in 0..servers.len() {
            let at = (first + turn) % servers.len();
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            // The servers still to try share what time is left, unless libpq's
            // connect_timeout says how long one may take.
            let share = left / u32::try_from(servers.len() - turn).unwrap_or(1);
            let limit = self.hosts.connect_timeout.unwrap_or(share).min(left);
            let attempt = tokio::time::timeout(limit, async {
                let mut conn = servers[at].connect().await?;
                (self.checks.on_open)(&mut conn).await?;
                Ok::<_, sqlx::Error>(conn)
            })
            .await
            .unwrap_or_else(|_| Err(sqlx::Error::PoolTimedOut));
            match attempt {
                Ok(conn) => {
                    self.current.store(at, Ordering::Relaxed);
                    return Ok(conn);
                }
                Err(
                    err @ (sqlx::Error::Io(_) | sqlx::Error::Tls(_) | sqlx::Error::PoolTimedOut),
                ) => {
                    if servers.len() > 1 {
                        tracing::debug!(server = at, error = %err, "database server passed over");
                    }
                    last = Some(err);
                }
                Err(err) => return Err(err),
            }
        }
        Err(last.unwrap_or(sqlx::Error::PoolTimedOut))
    }

    /// Whether a connection opened `age` ago may still be used.
    fn usable_at_age(&self, age: Duration) -> bool {
        age < self.checks.max_lifetime && (self.checks.usable_at_age)(age)
    }

    /// Back on the idle stack, or closed when it may no longer be used or the pool is
    /// closed. The least recently used connection is closed when it has been idle too
    /// long (the stack's bottom: the busy ones are taken from its top).
    fn take_back(&self, conn: PgConnection, opened: Instant) {
        if self.permits.is_closed() || !self.usable_at_age(opened.elapsed()) {
            return self.retire(conn);
        }
        let since = Instant::now();
        let stale = {
            let mut idle = self.idle();
            idle.push(Idle {
                conn,
                opened,
                since,
            });
            let stale = idle[0].since.elapsed() >= self.checks.idle_timeout;
            stale.then(|| idle.remove(0))
        };
        if let Some(stale) = stale {
            self.retire(stale.conn);
        }
    }

    /// Closes a connection that still works (too old, idle too long, or the pool is
    /// closed), telling the server, as sqlx's pool does.
    fn retire(&self, conn: PgConnection) {
        self.open.fetch_sub(1, Ordering::Relaxed);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(conn.close());
        }
    }

    /// Drops a broken connection.
    fn forget(&self, conn: PgConnection) {
        self.open.fetch_sub(1, Ordering::Relaxed);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(conn.close_hard());
        }
    }
}

impl Pooled {
    /// The connection for one statement; call `finish` when it has succeeded.
    pub fn start(&mut self) -> &mut PgConnection {
        self.unsettled = true;
        self
    }

    /// The statement begun by `start` finished.
    pub fn finish(&mut self) {
        self.unsettled = false;
    }

    /// Ends the transaction with `COMMIT`.
    pub async fn commit(mut self) -> Result<(), sqlx::Error> {
        self.start().execute("COMMIT").await?;
        self.finish();
        self.in_transaction = false;
        Ok(())
    }
}

impl Deref for Pooled {
    type Target = PgConnection;
    fn deref(&self) -> &PgConnection {
        self.conn.as_ref().expect("present until dropped")
    }
}

impl DerefMut for Pooled {
    fn deref_mut(&mut self) -> &mut PgConnection {
        self.conn.as_mut().expect("present until dropped")
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        let (pool, opened, permit) = (Arc::clone(&self.pool), self.opened, self.permit.take());
        if !self.unsettled && !self.in_transaction {
            pool.take_back(conn, opened);
            return;
        }
        let rollback = self.in_transaction;
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            pool.open.fetch_sub(1, Ordering::Relaxed);
            return;
        };
        // The permit goes with the connection, so it is handed out again only settled.
        runtime.spawn(async move {
            let settle = async {
                if rollback {
                    conn.execute("ROLLBACK").await.map(drop)
                } else {
                    conn.ping().await
                }
            };
            match tokio::time::timeout(SETTLE_WITHIN, settle).await {
                Ok(Ok(())) => pool.take_back(conn, opened),
                Ok(Err(_)) | Err(_) => pool.forget(conn),
            }
            drop(permit);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool on the server at `TEST_DATABASE_URL` (none when it is not set), its
    /// connections named `name` in `pg_stat_activity`.
    async fn pool(name: &str, max: u32, acquire_timeout: Duration) -> Option<PgPool> {
        pool_with(name, max, acquire_timeout, MAX_LIFETIME, IDLE_TIMEOUT).await
    }

    async fn pool_with(
        name: &str,
        max: u32,
        acquire_timeout: Duration,
        max_lifetime: Duration,
        idle_timeout: Duration,
    ) -> Option<PgPool> {
        let url = std::env::var("TEST_DATABASE_URL")
            .ok()
            .filter(|u| !u.is_empty())?;
        let options: PgConnectOptions = url.parse().expect("a PostgreSQL URL");
        let checks = PoolChecks {
            on_open: |_| Box::pin(async { Ok(()) }),
            usable_at_age: |_| true,
            max_lifetime,
            idle_timeout,
        };
        let options = options.application_name(name);
        Some(
            PgPool::connect(options, max, acquire_timeout, checks)
                .await
                .expect("server"),
        )
    }

    async fn one<T>(pool: &PgPool, sql: &str) -> T
    where
        T: Send + Unpin + for<'r> sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
    {
        let mut conn = pool.acquire().await.expect("connection");
        let (value,): (T,) = sqlx::query_as(sql)
            .fetch_one(conn.start())
            .await
            .expect(sql);
        conn.finish();
        value
    }

    async fn backend_pid(conn: &mut Pooled) -> i32 {
        let (pid,): (i32,) = sqlx::query_as("select pg_backend_pid()")
            .fetch_one(conn.start())
            .await
            .expect("a live connection");
        conn.finish();
        pid
    }

    /// Waits up to two seconds for `sql` to be true, asked on a connection of its own
    /// (not the pool's: a session sees its own locks as free and its own state as active).
    async fn eventually(sql: &str) -> bool {
        let url = std::env::var("TEST_DATABASE_URL").expect("set");
        let mut observer = PgConnection::connect(&url).await.expect("observer");
        for _ in 0..40 {
            let (yes,): (bool,) = sqlx::query_as(sql)
                .fetch_one(&mut observer)
                .await
                .expect(sql);
            if yes {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    #[tokio::test]
    async fn a_finished_connection_is_handed_out_again() {
        let Some(pool) = pool("pool-reuse", 4, Duration::from_secs(5)).await else {
            return;
        };
        let first: i32 = one(&pool, "select pg_backend_pid()").await;
        let second: i32 = one(&pool, "select pg_backend_pid()").await;
        assert_eq!(first, second, "the idle connection was not reused");
        assert_eq!(pool.usage(), (1, 1, 4));
        pool.close().await;
        assert_eq!(pool.usage(), (0, 0, 4));
    }

    #[tokio::test]
    async fn a_transaction_never_committed_is_rolled_back_before_reuse() {
        let Some(pool) = pool("pool-rollback", 2, Duration::from_secs(5)).await else {
            return;
        };
        let key = i64::from(rand_key());
        let mut tx = pool.begin("BEGIN").await.expect("begin");
        sqlx::query("select pg_advisory_xact_lock($1)")
            .bind(key)
            .execute(tx.start())
            .await
            .expect("lock");
        tx.finish();
        drop(tx);
        let free = format!("select pg_try_advisory_xact_lock({key})");
        assert!(
            eventually(&free).await,
            "the dropped transaction kept its lock"
        );
        let idle_in_transaction = "select count(*) = 0 from pg_stat_activity \
             where application_name = 'pool-rollback' and state like 'idle in transaction%'";
        assert!(eventually(idle_in_transaction).await);
        assert_eq!(pool.usage(), (1, 1, 2));
        pool.close().await;
    }

    #[tokio::test]
    async fn a_statement_dropped_midway_leaves_a_usable_connection() {
        let Some(pool) = pool("pool-dropped", 1, Duration::from_secs(5)).await else {
            return;
        };
        let mut conn = pool.acquire().await.expect("connection");
        let slow = sqlx::query("select pg_sleep(0.3)").execute(conn.start());
        assert!(tokio::time::timeout(Duration::from_millis(50), slow)
            .await
            .is_err());
        drop(conn);
        // The only connection comes back once the server finished the statement.
        assert_eq!(one::<i32>(&pool, "select 7").await, 7);
        pool.close().await;
    }

    #[tokio::test]
    async fn acquiring_past_the_bound_waits_then_times_out() {
        let Some(pool) = pool("pool-bound", 1, Duration::from_millis(200)).await else {
            return;
        };
        let held = pool.acquire().await.expect("connection");
        let waited = Instant::now();
        let refused = pool.acquire().await.err();
        assert!(
            matches!(refused, Some(sqlx::Error::PoolTimedOut)),
            "{refused:?}"
        );
        assert!(waited.elapsed() >= Duration::from_millis(190));
        drop(held);
        assert_eq!(one::<i32>(&pool, "select 1").await, 1);
        pool.close().await;
        assert!(matches!(
            pool.acquire().await.err(),
            Some(sqlx::Error::PoolClosed)
        ));
    }

    #[tokio::test]
    async fn a_connection_that_died_while_idle_is_replaced() {
        let Some(pool) = pool("pool-dead", 2, Duration::from_secs(5)).await else {
            return;
        };
        let mut victim = pool.acquire().await.expect("first connection");
        let before = backend_pid(&mut victim).await;
        let mut killer = pool.acquire().await.expect("second connection");
        drop(victim);
        sqlx::query("select pg_terminate_backend($1)")
            .bind(before)
            .execute(killer.start())
            .await
            .expect("terminated");
        killer.finish();
        drop(killer);
        // Idle past the trusted time, both are pinged; the dead one is replaced.
        tokio::time::sleep(TRUSTED_IDLE + Duration::from_millis(100)).await;
        let mut both = [
            pool.acquire().await.expect("first"),
            pool.acquire().await.expect("second"),
        ];
        for conn in &mut both {
            assert_ne!(backend_pid(conn).await, before);
        }
        drop(both);
        pool.close().await;
    }

    #[tokio::test]
    async fn old_and_long_idle_connections_are_closed() {
        let short = Duration::from_millis(200);
        let Some(pool) =
            pool_with("pool-age", 2, Duration::from_secs(5), short, IDLE_TIMEOUT).await
        else {
            return;
        };
        let first: i32 = one(&pool, "select pg_backend_pid()").await;
        tokio::time::sleep(short + Duration::from_millis(100)).await;
        let second: i32 = one(&pool, "select pg_backend_pid()").await;
        assert_ne!(
            first, second,
            "a connection past its lifetime was handed out"
        );
        pool.close().await;

        let Some(pool) =
            pool_with("pool-idle", 2, Duration::from_secs(5), MAX_LIFETIME, short).await
        else {
            return;
        };
        let both = [
            pool.acquire().await.expect("one"),
            pool.acquire().await.expect("two"),
        ];
        drop(both);
        assert_eq!(pool.usage(), (2, 2, 2));
        tokio::time::sleep(short + Duration::from_millis(100)).await;
        // The busy one comes back; the one unused since is closed.
        assert_eq!(one::<i32>(&pool, "select 1").await, 1);
        assert_eq!(pool.usage(), (1, 1, 2));
        pool.close().await;
    }

    fn rand_key() -> u32 {
        uuid::Uuid::new_v4().as_u128() as u32
    }
}

//! The production store: PostgreSQL, shared by any number of API processes. Writes that
//! decide on what they read lock the rows they read (`for update`).

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgPool, PgPoolOptions, Postgres};

use super::{ConnectError, ConnectOptions};
// The shared SQL (`sql.rs`) calls its query API as `db::…`.
use sqlx as db;

static MIGRATOR: Migrator = sqlx::migrate!("migrations/postgres");

pub struct PgStore {
    pool: PgPool,
}

impl PgStore {
    const KIND: StoreKind = StoreKind::Postgres;

    pub async fn connect(options: &ConnectOptions) -> Result<Self, ConnectError> {
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(options.acquire_timeout)
            .connect(&options.url)
            .await
            .map_err(|source| ConnectError::Connect {
                url: super::redact_password(&options.url),
                source,
            })?;
        if options.migrate {
            MIGRATOR.run(&pool).await?;
        }
        Ok(Self { pool })
    }

    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, Postgres>, StoreError> {
        Ok(self.pool.begin().await?)
    }

    /// A connection for a group of reads. Postgres needs no transaction around them to
    /// do it in one go (a `BEGIN` would cost a round trip of its own).
    async fn begin_read(&self) -> Result<sqlx::pool::PoolConnection<Postgres>, StoreError> {
        Ok(self.pool.acquire().await?)
    }

    /// A read-only transaction that sees one snapshot for all its statements.
    async fn begin_snapshot(&self) -> Result<sqlx::Transaction<'static, Postgres>, StoreError> {
        Ok(self
            .pool
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await?)
    }

    fn pools_in_use(&self) -> Vec<PoolUse> {
        vec![PoolUse {
            pool: "main",
            open: self.pool.size(),
            idle: u32::try_from(self.pool.num_idle()).unwrap_or(u32::MAX),
            max: self.pool.options().get_max_connections(),
        }]
    }

    /// Postgres takes concurrent writers; row locks order them.
    fn writer(&self) -> &PgPool {
        &self.pool
    }
}

super::sql::sql_store!(
    PgStore,
    Postgres,
    sqlx::PgConnection,
    for_update = " for update",
    for_update_of_volume = " for update of v"
);

//! Fresh databases for the store's own tests: SQLite in memory, and a PostgreSQL
//! database of its own on the server at `TEST_DATABASE_URL` when that is set.

use std::time::Duration;

use sqlx::Connection as _;

use super::db::postgres::Postgres;
use super::db::sqlite::Sqlite;
use super::{ConnectOptions, SchemaUse, StartWait};

pub(super) fn options(url: String) -> ConnectOptions {
    ConnectOptions {
        url,
        max_connections: 2,
        acquire_timeout: Duration::from_secs(5),
        schema: SchemaUse::Migrate,
        upkeep: false,
        record_events: false,
        start_wait: StartWait::ONCE,
    }
}

pub(super) async fn sqlite() -> Sqlite {
    Sqlite::connect(&options("sqlite::memory:".into()))
        .await
        .expect("in-memory store")
}

/// A PostgreSQL database made for one test, dropped by `drop_it`.
pub(super) struct FreshPostgres {
    admin: sqlx::PgConnection,
    name: String,
}

impl FreshPostgres {
    /// A migrated database of its own and its store; `None` when `TEST_DATABASE_URL`
    /// is not set.
    pub async fn create() -> Option<(Postgres, Self)> {
        let admin_url = std::env::var("TEST_DATABASE_URL")
            .ok()
            .filter(|u| !u.is_empty())?;
        let name = format!("t_{}", uuid::Uuid::new_v4().simple());
        let mut admin = sqlx::PgConnection::connect(&admin_url)
            .await
            .expect("server");
        sqlx::raw_sql(&format!("create database \"{name}\""))
            .execute(&mut admin)
            .await
            .expect("fresh database");
        let server = admin_url
            .rsplit_once('/')
            .map_or(admin_url.as_str(), |(s, _)| s);
        let db = Postgres::connect(&options(format!("{server}/{name}")))
            .await
            .expect("migrated database");
        Some((db, FreshPostgres { admin, name }))
    }

    /// Drops the database (its store's connections with it).
    pub async fn drop_it(mut self) {
        sqlx::raw_sql(&format!("drop database \"{}\" with (force)", self.name))
            .execute(&mut self.admin)
            .await
            .expect("dropped");
    }
}

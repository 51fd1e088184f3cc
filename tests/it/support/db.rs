//! Throw-away databases: a SQLite file in a temporary directory, or a `t_<uuid>`
//! database on the Postgres server named by `TEST_DATABASE_URL`, dropped afterwards.

use std::path::PathBuf;
use std::sync::Arc;

use cinder_attach::store::{self, ConnectOptions, SchemaUse, Store};
use sqlx::Connection;
use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

pub struct TestDb {
    pub backend: Backend,
    /// URL of this test's own database.
    pub url: String,
    cleanup: Cleanup,
}

enum Cleanup {
    Directory(PathBuf),
    PostgresDatabase { admin_url: String, name: String },
}

/// The Postgres server for tests, or `None` (skip) outside CI. In CI a missing or
/// unreachable server fails the test instead of silently skipping it.
fn postgres_admin_url() -> Option<String> {
    match std::env::var("TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("CI is set but TEST_DATABASE_URL is not: the Postgres tests must run")
        }
        _ => {
            eprintln!("note: TEST_DATABASE_URL is not set; skipping the Postgres variant");
            None
        }
    }
}

/// `postgres://u@h:p/old?x` with the database name replaced.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let scheme_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    let server = match base[scheme_end..].find('/') {
        Some(slash) => &base[..scheme_end + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{server}/{name}?{query}"),
        None => format!("{server}/{name}"),
    }
}

impl TestDb {
    pub async fn create(backend: Backend) -> Option<TestDb> {
        match backend {
            Backend::Sqlite => {
                let dir =
                    std::env::temp_dir().join(format!("cinder-attach-test-{}", Uuid::new_v4()));
                std::fs::create_dir_all(&dir).expect("temp dir");
                let url = format!("sqlite://{}", dir.join("test.db").display());
                Some(TestDb {
                    backend,
                    url,
                    cleanup: Cleanup::Directory(dir),
                })
            }
            Backend::Postgres => {
                let admin_url = postgres_admin_url()?;
                let name = format!("t_{}", Uuid::new_v4().simple());
                let mut admin = sqlx::PgConnection::connect(&admin_url)
                    .await
                    .unwrap_or_else(|e| {
                        panic!("Postgres at TEST_DATABASE_URL is unreachable: {e}")
                    });
                sqlx::raw_sql(&format!("create database \"{name}\""))
                    .execute(&mut admin)
                    .await
                    .expect("create test database");
                let _ = admin.close().await;
                Some(TestDb {
                    backend,
                    url: with_database(&admin_url, &name),
                    cleanup: Cleanup::PostgresDatabase { admin_url, name },
                })
            }
        }
    }

    pub fn connect_options(&self) -> ConnectOptions {
        ConnectOptions {
            url: self.url.clone(),
            max_connections: 8,
            acquire_timeout: std::time::Duration::from_secs(5),
            schema: SchemaUse::Migrate,
            upkeep: true,
            record_events: true,
            start_wait: cinder_attach::store::StartWait::ONCE,
        }
    }

    /// The migrated store on this database.
    pub async fn store(&self) -> Arc<dyn Store> {
        store::connect(&self.connect_options())
            .await
            .expect("store connects and migrates")
    }

    /// Runs SQL directly (fixtures, and checking what the database holds). The statements
    /// are written so that one text works on both dialects.
    pub async fn execute(&self, sql: &str) -> Result<(), sqlx::Error> {
        match self.backend {
            Backend::Sqlite => {
                let mut conn = sqlx::SqliteConnection::connect(&self.url).await?;
                sqlx::raw_sql(sql).execute(&mut conn).await?;
                conn.close().await
            }
            Backend::Postgres => {
                let mut conn = sqlx::PgConnection::connect(&self.url).await?;
                sqlx::raw_sql(sql).execute(&mut conn).await?;
                conn.close().await
            }
        }
    }

    /// The first column of every row of a query, as text.
    pub async fn column(&self, sql: &str) -> Vec<String> {
        use sqlx::Row;
        match self.backend {
            Backend::Sqlite => {
                let mut conn = sqlx::SqliteConnection::connect(&self.url)
                    .await
                    .expect("connect");
                let rows = sqlx::query(sql).fetch_all(&mut conn).await.expect("query");
                rows.iter().map(|row| row.get::<String, _>(0)).collect()
            }
            Backend::Postgres => {
                let mut conn = sqlx::PgConnection::connect(&self.url)
                    .await
                    .expect("connect");
                let rows = sqlx::query(sql).fetch_all(&mut conn).await.expect("query");
                rows.iter().map(|row| row.get::<String, _>(0)).collect()
            }
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        match &self.cleanup {
            Cleanup::Directory(dir) => {
                let _ = std::fs::remove_dir_all(dir);
            }
            Cleanup::PostgresDatabase { admin_url, name } => {
                let (admin_url, name) = (admin_url.clone(), name.clone());
                // Drop runs inside the test's runtime, so the clean-up gets its own.
                let dropped = std::thread::spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("runtime");
                    runtime.block_on(async move {
                        let mut admin = sqlx::PgConnection::connect(&admin_url).await?;
                        sqlx::raw_sql(&format!("drop database if exists \"{name}\" with (force)"))
                            .execute(&mut admin)
                            .await?;
                        admin.close().await
                    })
                })
                .join();
                if !matches!(dropped, Ok(Ok(()))) {
                    eprintln!("warning: could not drop test database {}", self.url);
                }
            }
        }
    }
}

#[test]
fn database_name_is_replaced() {
    assert_eq!(
        with_database("postgres://postgres@127.0.0.1:5432/postgres", "t_1"),
        "postgres://postgres@127.0.0.1:5432/t_1"
    );
    assert_eq!(
        with_database("postgres://u:p@h/db?sslmode=disable", "t_2"),
        "postgres://u:p@h/t_2?sslmode=disable"
    );
    assert_eq!(with_database("postgres://h", "t_3"), "postgres://h/t_3");
}

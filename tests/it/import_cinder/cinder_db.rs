//! A throw-away database holding a dump the real Cinder 29 made, on PostgreSQL
//! (`cinder29.sql`, on `TEST_DATABASE_URL`) or MariaDB (`cinder29.mysql.sql`, on
//! `TEST_MYSQL_URL`, which scripts/start-mariadb starts), and the test's own reads of it.

use std::collections::BTreeMap;

use chrono::NaiveDateTime;
use serde_json::Value;
use sqlx::mysql::MySqlRow;
use sqlx::postgres::PgRow;
use sqlx::{Column, Connection, MySqlConnection, PgConnection, Row, TypeInfo};
use uuid::Uuid;

const POSTGRES_DUMP: &str = include_str!("../../cinder_import/cinder29.sql");
const MYSQL_DUMP: &str = include_str!("../../cinder_import/cinder29.mysql.sql");

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Dialect {
    Postgres,
    MySql,
}

/// Dropped by `drop`.
pub(crate) struct CinderDb {
    dialect: Dialect,
    admin_url: String,
    name: String,
    /// As an operator copies it from cinder.conf (SQLAlchemy's form for MySQL).
    pub(crate) url: String,
}

fn server_url(variable: &str) -> Option<String> {
    match std::env::var(variable) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => panic!("CI needs {variable}"),
        _ => {
            eprintln!("note: {variable} is not set; skipping the import test");
            None
        }
    }
}

impl CinderDb {
    pub(crate) async fn load() -> Option<CinderDb> {
        Self::load_into(Dialect::Postgres).await
    }

    pub(crate) async fn load_into(dialect: Dialect) -> Option<CinderDb> {
        let name = format!("cinder_{}", Uuid::new_v4().simple());
        let db = match dialect {
            Dialect::Postgres => {
                let admin_url = server_url("TEST_DATABASE_URL")?;
                let mut admin = PgConnection::connect(&admin_url).await.expect("connect");
                let sql = format!("create database \"{name}\"");
                sqlx::raw_sql(&sql)
                    .execute(&mut admin)
                    .await
                    .expect("create");
                let _ = admin.close().await;
                let (server, _) = admin_url.rsplit_once('/').expect("a database URL");
                let url = format!("{server}/{name}");
                let mut conn = PgConnection::connect(&url).await.expect("connect");
                sqlx::raw_sql(POSTGRES_DUMP)
                    .execute(&mut conn)
                    .await
                    .expect("the dump loads");
                let _ = conn.close().await;
                CinderDb {
                    dialect,
                    admin_url,
                    name,
                    url,
                }
            }
            Dialect::MySql => {
                let admin_url = server_url("TEST_MYSQL_URL")?;
                let mut admin = MySqlConnection::connect(&admin_url).await.expect("connect");
                let sql = format!("create database `{name}`");
                sqlx::raw_sql(&sql)
                    .execute(&mut admin)
                    .await
                    .expect("create");
                let _ = admin.close().await;
                let server = admin_url.trim_end_matches('/');
                let mut conn = MySqlConnection::connect(&format!("{server}/{name}"))
                    .await
                    .expect("connect");
                sqlx::raw_sql(MYSQL_DUMP)
                    .execute(&mut conn)
                    .await
                    .expect("the dump loads");
                let _ = conn.close().await;
                let (_, host) = server.split_once("://").expect("a database URL");
                CinderDb {
                    dialect,
                    url: format!("mysql+pymysql://{host}/{name}?charset=utf8"),
                    admin_url,
                    name,
                }
            }
        };
        Some(db)
    }

    /// Every row of a query, each as column → text as Cinder's API shows it (null as
    /// JSON null, booleans `true`/`false`, times `2026-11-27T16:51:04.206010`).
    pub(crate) async fn rows(&self, sql: &str) -> Vec<BTreeMap<String, Value>> {
        match self.dialect {
            Dialect::Postgres => {
                let mut conn = PgConnection::connect(&self.url).await.expect("connect");
                let rows = sqlx::query(sql).fetch_all(&mut conn).await.expect(sql);
                let _ = conn.close().await;
                rows.iter().map(pg_texts).collect()
            }
            Dialect::MySql => {
                let server = self.admin_url.trim_end_matches('/');
                let url = format!("{server}/{}", self.name);
                let mut conn = MySqlConnection::connect(&url).await.expect("connect");
                let rows = sqlx::query(sql).fetch_all(&mut conn).await.expect(sql);
                let _ = conn.close().await;
                rows.iter().map(mysql_texts).collect()
            }
        }
    }

    pub(crate) async fn drop(self) {
        match self.dialect {
            Dialect::Postgres => {
                let mut admin = PgConnection::connect(&self.admin_url).await.unwrap();
                let sql = format!("drop database if exists \"{}\" with (force)", self.name);
                let _ = sqlx::raw_sql(&sql).execute(&mut admin).await;
                let _ = admin.close().await;
            }
            Dialect::MySql => {
                let mut admin = MySqlConnection::connect(&self.admin_url).await.unwrap();
                let sql = format!("drop database if exists `{}`", self.name);
                let _ = sqlx::raw_sql(&sql).execute(&mut admin).await;
                let _ = admin.close().await;
            }
        }
    }
}

fn time(t: Option<NaiveDateTime>) -> Value {
    t.map_or(Value::Null, |t| {
        Value::String(t.format("%Y-%m-%dT%H:%M:%S%.6f").to_string())
    })
}

fn text<T: ToString>(v: Option<T>) -> Value {
    v.map_or(Value::Null, |v| Value::String(v.to_string()))
}

fn pg_texts(row: &PgRow) -> BTreeMap<String, Value> {
    let cell = |i: usize| match row.columns()[i].type_info().name() {
        "BOOL" => text(row.try_get::<Option<bool>, _>(i).unwrap()),
        "INT4" => text(row.try_get::<Option<i32>, _>(i).unwrap()),
        "INT8" => text(row.try_get::<Option<i64>, _>(i).unwrap()),
        "TIMESTAMP" => time(row.try_get(i).unwrap()),
        _ => text(row.try_get::<Option<String>, _>(i).unwrap()),
    };
    let name = |i: usize| row.columns()[i].name().to_owned();
    (0..row.len()).map(|i| (name(i), cell(i))).collect()
}

fn mysql_texts(row: &MySqlRow) -> BTreeMap<String, Value> {
    // MySQL has no booleans: SQLAlchemy's are TINYINT(1), which sqlx names BOOLEAN.
    let cell = |i: usize| match row.columns()[i].type_info().name() {
        "BOOLEAN" => text(row.try_get::<Option<bool>, _>(i).unwrap()),
        "TINYINT" | "SMALLINT" | "INT" | "BIGINT" => {
            text(row.try_get::<Option<i64>, _>(i).unwrap())
        }
        "DATETIME" => time(row.try_get(i).unwrap()),
        _ => text(row.try_get::<Option<String>, _>(i).unwrap()),
    };
    let name = |i: usize| row.columns()[i].name().to_owned();
    (0..row.len()).map(|i| (name(i), cell(i))).collect()
}

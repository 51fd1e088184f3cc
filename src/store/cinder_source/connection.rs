//! The connection `import-cinder` reads Cinder's database through: PostgreSQL or MySQL
//! (MariaDB), the two databases Cinder is deployed on. The queries are written once, in
//! the SQL both accept; this hides the rest (the URL's form, how a read-only snapshot
//! transaction begins, which Rust types a column decodes into).

use sqlx::mysql::{MySql, MySqlRow};
use sqlx::postgres::{PgRow, Postgres};
use sqlx::{ColumnIndex, Connection, Decode, MySqlConnection, PgConnection, Row, Type};

/// Cinder's URL (`[database] connection` of its cinder.conf, SQLAlchemy's form accepted:
/// a `+driver` suffix, PyMySQL's `unix_socket`) as sqlx takes it.
pub fn source_url(url: &str) -> Result<String, String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("{url:?} is not a database URL"))?;
    match scheme.split('+').next().unwrap_or_default() {
        "postgresql" | "postgres" => Ok(format!("postgresql://{rest}")),
        "mysql" | "mariadb" => Ok(format!(
            "mysql://{}",
            rest.replace("unix_socket=", "socket=")
        )),
        other => Err(format!(
            "{other:?} databases are not read; give a postgresql:// or mysql:// URL"
        )),
    }
}

pub enum SourceConnection {
    Postgres(PgConnection),
    MySql(MySqlConnection),
}

/// One row of either database.
pub enum SourceRow {
    Postgres(PgRow),
    MySql(MySqlRow),
}

impl SourceConnection {
    pub async fn connect(url: &str) -> Result<Self, String> {
        let url = source_url(url)?;
        let connected = if url.starts_with("mysql:") {
            MySqlConnection::connect(&url).await.map(Self::MySql)
        } else {
            PgConnection::connect(&url).await.map(Self::Postgres)
        };
        connected.map_err(|e| format!("cannot connect to Cinder's database: {e}"))
    }

    /// Starts the one transaction every read runs in: read only, at one snapshot, so the
    /// rows agree with each other even while Cinder keeps running.
    pub async fn begin_snapshot(&mut self) -> Result<(), sqlx::Error> {
        match self {
            Self::Postgres(conn) => {
                let sql = "begin transaction isolation level repeatable read read only";
                sqlx::raw_sql(sql).execute(conn).await?;
            }
            Self::MySql(conn) => {
                // MySQL's "consistent snapshot" needs repeatable read, its usual default.
                let sql = "set transaction isolation level repeatable read";
                sqlx::raw_sql(sql).execute(&mut *conn).await?;
                let sql = "start transaction with consistent snapshot, read only";
                sqlx::raw_sql(sql).execute(conn).await?;
            }
        }
        Ok(())
    }

    pub async fn end_snapshot(&mut self) -> Result<(), sqlx::Error> {
        match self {
            Self::Postgres(conn) => sqlx::raw_sql("commit").execute(conn).await.map(drop),
            Self::MySql(conn) => sqlx::raw_sql("commit").execute(conn).await.map(drop),
        }
    }

    pub async fn rows(&mut self, sql: &str) -> Result<Vec<SourceRow>, sqlx::Error> {
        Ok(match self {
            Self::Postgres(conn) => {
                let rows = sqlx::query(sql).fetch_all(conn).await?;
                rows.into_iter().map(SourceRow::Postgres).collect()
            }
            Self::MySql(conn) => {
                let rows = sqlx::query(sql).fetch_all(conn).await?;
                rows.into_iter().map(SourceRow::MySql).collect()
            }
        })
    }

    pub async fn close(self) {
        let _ = match self {
            Self::Postgres(conn) => conn.close().await,
            Self::MySql(conn) => conn.close().await,
        };
    }
}

impl SourceRow {
    /// A column as `T`, which both databases must decode it into (MySQL's booleans are
    /// integers, which sqlx decodes into `bool` too).
    pub fn get<T, I>(&self, column: I) -> Result<T, sqlx::Error>
    where
        T: for<'r> Decode<'r, Postgres> + Type<Postgres>,
        T: for<'r> Decode<'r, MySql> + Type<MySql>,
        I: ColumnIndex<PgRow> + ColumnIndex<MySqlRow>,
    {
        match self {
            Self::Postgres(row) => row.try_get(column),
            Self::MySql(row) => row.try_get(column),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::source_url;

    #[test]
    fn cinder_urls_are_taken_as_sqlx_wants_them() {
        let url = source_url("postgresql+psycopg2://cinder:pw@db:5432/cinder").unwrap();
        assert_eq!(url, "postgresql://cinder:pw@db:5432/cinder");
        assert!(source_url("postgres://x@h/c").is_ok());
        let url = source_url("mysql+pymysql://cinder:pw@db/cinder?charset=utf8").unwrap();
        assert_eq!(url, "mysql://cinder:pw@db/cinder?charset=utf8");
        let url = source_url("mysql+pymysql://cinder@/cinder?unix_socket=/run/mysqld.sock");
        assert_eq!(
            url.unwrap(),
            "mysql://cinder@/cinder?socket=/run/mysqld.sock"
        );
        assert!(source_url("sqlite:///x.db").is_err());
        assert!(source_url("cinder").is_err());
    }
}

//! Holding a volume's write lock from a connection of the test's own.

use sqlx::Connection;

use super::{Backend, TestDb};

/// A connection of the test's own that holds a write lock the server's attach must wait
/// for: the volume row (Postgres) or the whole database (SQLite).
pub enum VolumeLock {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
}

impl VolumeLock {
    pub async fn take(db: &TestDb, volume: &str) -> VolumeLock {
        match db.backend {
            Backend::Sqlite => {
                let mut conn = sqlx::SqliteConnection::connect(&db.url)
                    .await
                    .expect("connect");
                sqlx::raw_sql("begin immediate")
                    .execute(&mut conn)
                    .await
                    .expect("lock");
                VolumeLock::Sqlite(conn)
            }
            Backend::Postgres => {
                let mut conn = sqlx::PgConnection::connect(&db.url).await.expect("connect");
                sqlx::raw_sql(&format!(
                    "begin; select id from volumes where id = '{volume}' for update"
                ))
                .execute(&mut conn)
                .await
                .expect("lock");
                VolumeLock::Postgres(conn)
            }
        }
    }

    pub async fn release(self) {
        match self {
            VolumeLock::Sqlite(mut conn) => {
                sqlx::raw_sql("commit")
                    .execute(&mut conn)
                    .await
                    .expect("unlock");
            }
            VolumeLock::Postgres(mut conn) => {
                sqlx::raw_sql("commit")
                    .execute(&mut conn)
                    .await
                    .expect("unlock");
            }
        }
    }
}

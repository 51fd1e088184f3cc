use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeZone, Utc};

use super::values::parse_timestamp;
use super::*;
use crate::store::{DbId, StoreError};

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

/// A database file in a fresh temporary directory (removed by the test).
fn file_database(name: &str) -> (std::path::PathBuf, Opener) {
    let dir = std::env::temp_dir().join(format!("{name}-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let opener = Opener {
        path: dir.join("db.sqlite"),
        vfs: None,
        busy_timeout: Duration::from_secs(1),
    };
    (dir, opener)
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
    let (dir, opener) = file_database("lite-busy");
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
    let (dir, opener) = file_database("lite-wal");
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

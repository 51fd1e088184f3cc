use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeZone, Utc};

use super::values::parse_timestamp;
use super::*;
use crate::store::db::Executor;

fn memory_database() -> Sqlite {
    let opener = Opener {
        path: format!("/lite-test-{}", uuid::Uuid::new_v4()).into(),
        vfs: Some("memdb"),
        busy_timeout: Duration::from_millis(100),
    };
    // Groups stay open long enough for the group tests' hand-overs on a loaded machine.
    let writer = Writer::with_group_age(
        opener.open().unwrap(),
        Duration::from_millis(300),
        Duration::from_secs(10),
    )
    .unwrap();
    Sqlite {
        pool: ReadPool::new(opener, 4),
        writer,
        _checkpointer: None,
        schema: SchemaStatus::default(),
    }
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

async fn with_table() -> Sqlite {
    let db = memory_database();
    db.execute(Sql::new(
        "create table t (id text primary key, n integer, at text, flag integer, note text)",
    ))
    .await
    .unwrap();
    db
}

#[tokio::test]
async fn parameters_bind_by_number_in_any_order_and_more_than_once() {
    let db = with_table().await;
    let insert = Sql::new("insert into t (n, id, note) values ($2, $1, $2 || '-' || $1)")
        .bind("a")
        .bind(7_i64);
    db.execute(insert).await.unwrap();
    let row: Option<(String, i64, Option<String>)> = db
        .fetch_optional(Sql::new("select id, n, note from t"))
        .await
        .unwrap();
    assert_eq!(row, Some(("a".to_owned(), 7, Some("7-a".to_owned()))));
}

#[tokio::test]
async fn values_come_back_as_written_and_null_as_none() {
    let db = with_table().await;
    let id = uuid::Uuid::new_v4();
    let at = Utc.with_ymd_and_hms(2026, 11, 22, 5, 6, 7).unwrap()
        + chrono::Duration::microseconds(123_456);
    let insert = Sql::new("insert into t (id, n, at, flag, note) values ($1, $2, $3, $4, $5)")
        .bind(id)
        .bind(-3_i64)
        .bind(at)
        .bind(true)
        .bind(None::<String>);
    db.execute(insert).await.unwrap();
    let row: Option<(uuid::Uuid, DateTime<Utc>, bool, Option<String>)> = db
        .fetch_optional(Sql::new("select id, at, flag, note from t"))
        .await
        .unwrap();
    assert_eq!(row, Some((id, at, true, None)));
    // Stored the way sqlx's SQLite driver stores them, so old files read the same.
    let text: Option<(String,)> = db
        .fetch_optional(Sql::new("select at from t"))
        .await
        .unwrap();
    assert_eq!(text.unwrap().0, "2026-11-22T05:06:07.123456+00:00");
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
    let db = with_table().await;
    db.execute(Sql::new("insert into t (id, n) values ('not-a-uuid', 1)"))
        .await
        .unwrap();
    let found: Result<Option<(uuid::Uuid,)>, _> =
        db.fetch_optional(Sql::new("select id from t")).await;
    assert!(matches!(found, Err(StoreError::Corrupt(_))), "{found:?}");
    let found: Result<Vec<(i64, i64)>, _> = db.fetch_all(Sql::new("select n from t")).await;
    assert!(found.is_err(), "a missing column: {found:?}");
    let found: Result<Vec<(i64,)>, _> = db.fetch_all(Sql::new("select id from t")).await;
    assert!(matches!(found, Err(StoreError::Corrupt(_))), "{found:?}");
}

#[tokio::test]
async fn a_dropped_transaction_rolls_back_and_frees_the_writer() {
    let db = with_table().await;
    {
        let mut tx = db.begin_write().await.unwrap();
        tx.execute(Sql::new("insert into t (id) values ('x')"))
            .await
            .unwrap();
    }
    let mut tx = db.begin_write().await.unwrap();
    tx.execute(Sql::new("insert into t (id) values ('y')"))
        .await
        .unwrap();
    super::super::Transaction::commit(tx).await.unwrap();
    let ids: Vec<(String,)> = db.fetch_all(Sql::new("select id from t")).await.unwrap();
    assert_eq!(ids, vec![("y".to_owned(),)]);
}

/// Begins a write transaction inserting `id` into `t`, once `db`'s writer is free.
fn insert_in_turn(db: &Arc<Sqlite>, id: &'static str) -> tokio::task::JoinHandle<Transaction> {
    let db = db.clone();
    tokio::spawn(async move {
        let mut tx = db.begin_write().await.unwrap();
        let insert = Sql::new("insert into t (id) values ($1)").bind(id);
        tx.execute(insert).await.unwrap();
        tx
    })
}

async fn ids(db: &Sqlite) -> Vec<String> {
    let found: Vec<(String,)> = db
        .fetch_all(Sql::new("select id from t order by id"))
        .await
        .unwrap();
    found.into_iter().map(|(id,)| id).collect()
}

/// `a` commits while `b` waits for the writer: `b` joins `a`'s group, and `a`'s commit
/// returns only with the group's. The future of `a`'s commit, and `b`.
async fn grouped(
    db: &Arc<Sqlite>,
) -> (tokio::task::JoinHandle<Result<(), StoreError>>, Transaction) {
    let a = insert_in_turn(db, "a").await.unwrap();
    let b = insert_in_turn(db, "b");
    while db.writer.waiting().load(Ordering::Relaxed) == 0 {
        tokio::task::yield_now().await;
    }
    let a_commit = tokio::spawn(a.commit());
    (a_commit, b.await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_commits_once_and_acknowledges_no_member_before() {
    // On a file in WAL mode, as served, so a reader runs beside the open group.
    let (dir, opener) = file_database("lite-group");
    let conn = opener.open().unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    let db = Arc::new(Sqlite {
        writer: Writer::with_group_age(conn, Duration::from_secs(1), Duration::from_secs(10))
            .unwrap(),
        pool: ReadPool::new(opener, 2),
        _checkpointer: None,
        schema: SchemaStatus::default(),
    });
    db.execute(Sql::new("create table t (id text primary key)"))
        .await
        .unwrap();
    let (a_commit, b) = grouped(&db).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(
        !a_commit.is_finished(),
        "acknowledged before its group committed"
    );
    assert_eq!(ids(&db).await, Vec::<String>::new());
    b.commit().await.unwrap();
    a_commit.await.unwrap().unwrap();
    assert_eq!(ids(&db).await, ["a", "b"]);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_rolled_back_leaves_the_rest_of_its_group() {
    let db = Arc::new(with_table().await);
    let (a_commit, b) = grouped(&db).await;
    drop(b);
    a_commit.await.unwrap().unwrap();
    assert_eq!(ids(&db).await, ["a"]);
    // The writer is free again.
    db.execute(Sql::new("insert into t (id) values ('c')"))
        .await
        .unwrap();
    assert_eq!(ids(&db).await, ["a", "c"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_whose_transaction_is_lost_fails_every_member() {
    let db = Arc::new(with_table().await);
    let (a_commit, mut b) = grouped(&db).await;
    // What SQLite does on a full disk or an I/O error: it ends the transaction.
    b.execute(Sql::new("ROLLBACK")).await.unwrap();
    assert!(b.commit().await.is_err());
    let a = a_commit.await.unwrap();
    assert!(matches!(a, Err(StoreError::Unavailable(_))), "{a:?}");
    assert_eq!(ids(&db).await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_handed_to_a_waiter_that_gave_up_is_committed_by_its_member() {
    let db = Arc::new(with_table().await);
    let a = insert_in_turn(&db, "a").await.unwrap();
    // A transaction said it waits, so the group is handed over, but never takes it (as
    // when its request is cancelled).
    db.writer.waiting().fetch_add(1, Ordering::Relaxed);
    let committed = tokio::time::timeout(Duration::from_secs(5), a.commit()).await;
    db.writer.waiting().fetch_sub(1, Ordering::Relaxed);
    committed.expect("the stranded group is committed").unwrap();
    assert_eq!(ids(&db).await, ["a"]);
}

#[tokio::test]
async fn a_duplicate_key_is_a_conflict() {
    let db = with_table().await;
    let insert = || Sql::new("insert into t (id) values ('x')");
    db.execute(insert()).await.unwrap();
    let again = db.execute(insert()).await;
    assert!(
        matches!(again, Err(StoreError::Conflict(_))),
        "{:?}",
        again.err()
    );
}

#[tokio::test]
async fn built_statements_number_their_binds() {
    let db = with_table().await;
    let mut insert = Sql::new("insert into t (id, n) values (");
    insert
        .push_list(["a"])
        .push(", ")
        .push_list([1_i64])
        .push("), (")
        .push_list(["b"])
        .push(", ")
        .push_list([2_i64])
        .push(")");
    db.execute(insert).await.unwrap();
    let mut select = Sql::new("select id from t where n in (");
    select.push_list([2_i64, 3]).push(") order by id");
    let found: Vec<(String,)> = db.fetch_all(select).await.unwrap();
    assert_eq!(found, vec![("b".to_owned(),)]);
}

#[tokio::test]
async fn execute_counts_changed_rows_only() {
    let db = with_table().await;
    db.execute(Sql::new(
        "insert into t (id, n) values ('a', 1), ('b', 1), ('c', 2)",
    ))
    .await
    .unwrap();
    let changed = db
        .execute(Sql::new("update t set n = 5 where n = 1"))
        .await
        .unwrap();
    assert_eq!(changed, 2);
    assert_eq!(db.execute(Sql::new("select 1")).await.unwrap(), 0);
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
    let writer = Writer::new(opener.open().unwrap(), Duration::from_secs(5)).unwrap();
    // A restart after 1,000 frames (about 4 MiB) instead of the served 16,000 (about
    // 62 MiB), so the bound below is about the restarts happening, not about how many
    // rounds in a row a busy machine makes them miss.
    let checkpointer = Checkpointer::start_restarting_at(&opener, &writer, 1_000).unwrap();
    let db = Arc::new(Sqlite {
        pool: ReadPool::new(opener.clone(), 4),
        writer,
        _checkpointer: Some(checkpointer),
        schema: SchemaStatus::default(),
    });
    db.execute(Sql::new(
        "create table t (id integer primary key, body text)",
    ))
    .await
    .unwrap();
    let reading = Arc::new(AtomicBool::new(true));
    let reader = {
        let (db, reading) = (db.clone(), reading.clone());
        tokio::spawn(async move {
            while reading.load(Ordering::Relaxed) {
                let mut reads = db.begin_read().await.unwrap();
                let _: Vec<(i64,)> = reads
                    .fetch_all(Sql::new("select count(*) from t"))
                    .await
                    .unwrap();
                tokio::task::yield_now().await;
            }
        })
    };
    // 60,000 pages of WAL (about 240 MB, measured) if nothing ever started it over.
    let body = "x".repeat(3000);
    for i in 0..60_000_i64 {
        let upsert = Sql::new("insert or replace into t (id, body) values ($1, $2)")
            .bind(i % 500)
            .bind(body.as_str());
        db.execute(upsert).await.unwrap();
    }
    reading.store(false, Ordering::Relaxed);
    reader.await.unwrap();
    let wal = std::fs::metadata(dir.join("db.sqlite-wal")).unwrap().len();
    // The test writes about 13 MB per checkpoint round (100 ms), and a RESTART that finds
    // readers busy for 50 ms waits for the next round, so the WAL peaks at a few rounds'
    // worth: 30-62 MiB in 13 runs here. Half of no restarts at all is far from both.
    assert!(wal <= 120 << 20, "the WAL grew to {wal} bytes");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_closed_store_is_unavailable() {
    let db = with_table().await;
    db.close().await;
    let read: Result<Vec<(String,)>, _> = db.fetch_all(Sql::new("select id from t")).await;
    assert!(matches!(read, Err(StoreError::Unavailable(_))), "{read:?}");
    let write = db
        .execute(Sql::new("insert into t (id) values ('x')"))
        .await;
    assert!(
        matches!(write, Err(StoreError::Unavailable(_))),
        "{:?}",
        write.err()
    );
}

use chrono::TimeZone;
use sqlx::Connection as _;

use super::super::db::postgres::Postgres;
use super::super::db::sqlite::Sqlite;
use super::super::{ConnectOptions, SchemaUse};
use super::*;

fn options(url: String) -> ConnectOptions {
    ConnectOptions {
        url,
        max_connections: 2,
        acquire_timeout: Duration::from_secs(5),
        schema: SchemaUse::Migrate,
        upkeep: false,
        record_events: false,
        start_wait: crate::store::StartWait::ONCE,
    }
}

/// A commit whose answer was lost counts as done exactly when the row carries the
/// write's stamp; any other outcome passes through.
async fn settles_by_the_rows_stamp<D: Database>(db: D) {
    let store = SqlStore {
        db,
        events: false,
        relay_listening: Default::default(),
    };
    let (volume, attachment) = (VolumeId::generate(), AttachmentId::generate());
    let written = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap();
    let volume_row = Sql::new(
        "insert into volumes (id, project_id, size, status, volume_type_id, created_at) \
         select $1, 'p', 1, $3, id, $2 from volume_types limit 1",
    )
    .bind(volume)
    .bind(written)
    .bind(crate::domain::volume::VolumeStatus::Reserved);
    store.db.execute(volume_row).await.expect("volume");
    let reservation = Sql::new(INSERT_RESERVATION)
        .bind(attachment)
        .bind(volume)
        .bind("instance")
        .bind(AttachStatus::Reserved)
        .bind(crate::domain::attachment::AttachMode::ReadWrite)
        .bind(written);
    store.db.execute(reservation).await.expect("attachment");
    let lost = || {
        Err(StoreError::InDoubt(
            "connection reset while committing".into(),
        ))
    };

    let stored = store
        .settle_attachment_write(lost(), attachment, written)
        .await;
    assert!(stored.is_ok(), "{stored:?}");
    let later = written + chrono::Duration::seconds(1);
    let missing = store
        .settle_attachment_write(lost(), attachment, later)
        .await;
    assert!(
        matches!(missing, Err(StoreError::Unavailable(_))),
        "{missing:?}"
    );
    let done = store
        .settle_attachment_write(Ok(()), attachment, later)
        .await;
    assert!(done.is_ok());
    let conflict = Err(StoreError::Conflict("dup".into()));
    let kept = store
        .settle_attachment_write(conflict, attachment, later)
        .await;
    assert!(matches!(kept, Err(StoreError::Conflict(_))));
}

#[tokio::test]
async fn a_lost_commit_is_settled_by_the_rows_stamp_sqlite() {
    let db = Sqlite::connect(&options("sqlite::memory:".into())).await;
    settles_by_the_rows_stamp(db.expect("in-memory store")).await;
}

/// On a fresh database of the server at `TEST_DATABASE_URL`, when it is set.
#[tokio::test]
async fn a_lost_commit_is_settled_by_the_rows_stamp_postgres() {
    let Some(admin_url) = std::env::var("TEST_DATABASE_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        return;
    };
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
    let db = Postgres::connect(&options(format!("{server}/{name}"))).await;
    settles_by_the_rows_stamp(db.expect("migrated database")).await;
    sqlx::raw_sql(&format!("drop database \"{name}\" with (force)"))
        .execute(&mut admin)
        .await
        .expect("dropped");
}

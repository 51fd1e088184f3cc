use chrono::TimeZone;

use super::super::test_databases;
use super::*;

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
    settles_by_the_rows_stamp(test_databases::sqlite().await).await;
}

/// On a fresh database of the server at `TEST_DATABASE_URL`, when it is set.
#[tokio::test]
async fn a_lost_commit_is_settled_by_the_rows_stamp_postgres() {
    let Some((db, fresh)) = test_databases::FreshPostgres::create().await else {
        return;
    };
    settles_by_the_rows_stamp(db).await;
    fresh.drop_it().await;
}

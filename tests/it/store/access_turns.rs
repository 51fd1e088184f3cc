//! A volume's access turn (`ExportStore::access_turn`): on PostgreSQL an advisory lock
//! that every process on the database takes turns at, released when the turn is
//! dropped; SQLite, one process's database, gives none (its turns are the process's).

use std::time::Duration;

use cinder_attach::domain::ids::VolumeId;

use crate::support::{Backend, TestApp};

async fn one_turn_per_volume_at_a_time(app: TestApp) {
    let store = app.store.clone();
    let (volume, other) = (VolumeId::generate(), VolumeId::generate());
    let held = store.access_turn(volume).await.unwrap();
    if app.db.backend == Backend::Sqlite {
        assert!(held.is_none(), "SQLite gives no shared turn");
        return;
    }
    assert!(held.is_some());
    // Another volume's turn is free; this one's waits until the holder lets go.
    let free = tokio::time::timeout(Duration::from_secs(5), store.access_turn(other)).await;
    assert!(matches!(free, Ok(Ok(Some(_)))));
    drop(free);
    let waiting = {
        let store = store.clone();
        tokio::spawn(async move { store.access_turn(volume).await.map(|t| t.is_some()) })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !waiting.is_finished(),
        "a second turn of one volume was given"
    );
    drop(held);
    let taken = tokio::time::timeout(Duration::from_secs(5), waiting).await;
    assert!(matches!(taken, Ok(Ok(Ok(true)))), "{taken:?}");
}

backend_tests!(one_turn_per_volume_at_a_time);

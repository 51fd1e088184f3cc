//! `revert` (3.40): a volume put back to its latest snapshot, byte for byte, under
//! Cinder's rules and with its words; a backend failure leaves the volume `error` and
//! the snapshot `available`.

use axum::http::Method;
use serde_json::{json, Value};

use super::backups::{noise, write_at, MIB};
use crate::support::helpers::*;
use crate::support::{TestApp, TestResponse};

async fn snapshot_of(app: &TestApp, volume: &str) -> String {
    let body = json!({"snapshot": {"volume_id": volume}});
    let taken = call_as(
        app,
        MEMBER_P1,
        "3.40",
        Method::POST,
        "/v3/p1/snapshots",
        Some(body),
    )
    .await;
    assert_eq!(taken.status, 202, "{}", taken.text);
    str_of(&taken.json["snapshot"], "id")
}

async fn revert(app: &TestApp, volume: &str, snapshot: Value, version: &str) -> TestResponse {
    let path = format!("/v3/p1/volumes/{volume}/action");
    let body = json!({"revert": {"snapshot_id": snapshot}});
    call_as(app, MEMBER_P1, version, Method::POST, &path, Some(body)).await
}

fn head_of(app: &TestApp, volume: &str) -> Vec<u8> {
    let bytes = std::fs::read(app.volume_file(volume)).unwrap();
    bytes[..MIB].to_vec()
}

async fn snapshot_status(app: &TestApp, snapshot: &str) -> String {
    let shown = app
        .get(&format!("/v3/p1/snapshots/{snapshot}"))
        .version("3.40")
        .send()
        .await;
    str_of(&shown.json["snapshot"], "status")
}

async fn a_volume_goes_back_to_its_latest_snapshot(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    write_at(&app.volume_file(&volume), 0, &noise(MIB, 1));
    let older = snapshot_of(&app, &volume).await;
    write_at(&app.volume_file(&volume), 0, &noise(MIB, 2));
    let latest = snapshot_of(&app, &volume).await;
    write_at(&app.volume_file(&volume), 0, &noise(MIB, 3));

    // Below 3.40 there is no such action; then only the latest snapshot will do.
    assert_eq!(
        revert(&app, &volume, json!(latest), "3.39").await.status,
        404
    );
    revert(&app, &volume, json!(older), "3.40")
        .await
        .assert_fault(
            400,
            "badRequest",
            &format!(
                "Specified snapshot {older} is None or not the latest one of volume {volume}."
            ),
        );
    revert(&app, &volume, Value::Null, "3.40")
        .await
        .assert_fault(
            400,
            "badRequest",
            &format!("Specified snapshot None is None or not the latest one of volume {volume}."),
        );
    assert_eq!(head_of(&app, &volume), noise(MIB, 3), "nothing changed");

    let reverted = revert(&app, &volume, json!(latest), "3.40").await;
    assert_eq!(reverted.status, 202, "{}", reverted.text);
    assert_eq!(app.volume_status(&volume).await, "available");
    assert_eq!(snapshot_status(&app, &latest).await, "available");
    assert_eq!(
        head_of(&app, &volume),
        noise(MIB, 2),
        "the latest snapshot's bytes"
    );
    let events = app
        .get(&format!("/v3/p1/events?volume_id={volume}"))
        .send()
        .await;
    let kinds: Vec<String> = events.json["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| str_of(e, "event_type"))
        .filter(|t| t.contains("revert"))
        .collect();
    assert_eq!(
        kinds,
        [
            "volume.revert.start",
            "snapshot.revert.start",
            "volume.revert.end",
            "snapshot.revert.end"
        ]
    );
}

async fn cinders_refusals_keep_everything_as_it_was(app: TestApp) {
    let bare = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    revert(&app, &bare, json!(uuid::Uuid::new_v4().to_string()), "3.40")
        .await
        .assert_fault(
            400,
            "badRequest",
            &format!("Volume {bare} doesn't have any snapshots."),
        );

    // A volume grown since its snapshot.
    let grown = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let small = snapshot_of(&app, &grown).await;
    let extended = app
        .volume_action(&grown, json!({"os-extend": {"new_size": 2}}))
        .await;
    assert_eq!(extended.status, 202, "{}", extended.text);
    revert(&app, &grown, json!(small), "3.40")
        .await
        .assert_fault(
            400,
            "badRequest",
            &format!(
                "Can't revert volume {grown} to its latest snapshot {small}. The volume size must \
             be equal to the snapshot size."
            ),
        );

    // An attached volume: 409, as Cinder's InvalidVolume here.
    let attached = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let snapshot = snapshot_of(&app, &attached).await;
    app.attach_directly(&attached, "c7d8e9f0-3333-4444-8555-b66677778888", I1)
        .await;
    revert(&app, &attached, json!(snapshot), "3.40")
        .await
        .assert_fault(
            409,
            "conflictingRequest",
            &format!(
            "Invalid volume: Can't revert volume {attached} to its latest snapshot {snapshot}. \
             Volume's status must be 'available'."
        ),
        );
    assert_eq!(app.volume_status(&attached).await, "in-use");
    assert_eq!(snapshot_status(&app, &snapshot).await, "available");

    // A snapshot that is not available: 409, Cinder's InvalidSnapshot.
    let busy = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let snapshot = snapshot_of(&app, &busy).await;
    app.db
        .execute(&format!(
            "update snapshots set status = 'error' where id = '{snapshot}'"
        ))
        .await
        .unwrap();
    revert(&app, &busy, json!(snapshot), "3.40")
        .await
        .assert_fault(
            409,
            "conflictingRequest",
            &format!(
                "Invalid snapshot: Can't revert volume {busy} to its latest snapshot {snapshot}. \
             Snapshot's status must be 'available'."
            ),
        );
    assert_eq!(app.volume_status(&busy).await, "available");
    // A reader may not revert.
    let path = format!("/v3/p1/volumes/{busy}/action");
    let body = json!({"revert": {"snapshot_id": snapshot}});
    let reader = call_as(&app, READER_P1, "3.40", Method::POST, &path, Some(body)).await;
    assert_eq!(reader.status, 403, "{}", reader.text);
}

async fn a_failed_backend_leaves_the_volume_in_error(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let snapshot = snapshot_of(&app, &volume).await;
    // The snapshot's data is gone from under the service.
    std::fs::remove_file(app.volumes_dir.join(format!("snapshot-{snapshot}"))).unwrap();
    let reverted = revert(&app, &volume, json!(snapshot), "3.40").await;
    assert_eq!(reverted.status, 202, "{}", reverted.text);
    assert_eq!(app.volume_status(&volume).await, "error");
    assert_eq!(snapshot_status(&app, &snapshot).await, "available");
}

backend_tests!(
    a_volume_goes_back_to_its_latest_snapshot,
    cinders_refusals_keep_everything_as_it_was,
    a_failed_backend_leaves_the_volume_in_error,
);

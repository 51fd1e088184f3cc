//! A new volume's source is pinned while the backend copies from it: a delete of the
//! snapshot (or volume) a volume is being made from, sent at the same time as the
//! create, never leaves the new volume in `error`; of the two, the one that locks the
//! source first wins and the other is refused with nothing changed.

use axum::http::Method;
use serde_json::json;

use crate::support::helpers::*;
use crate::support::{TestApp, TestResponse};

async fn snapshot_of(app: &TestApp, volume: &str) -> String {
    let created = app
        .request(Method::POST, "/v3/p1/snapshots")
        .json(&json!({"snapshot": {"volume_id": volume}}))
        .send()
        .await;
    assert_eq!(created.status, 202, "{}", created.text);
    str_of(&created.json["snapshot"], "id")
}

async fn snapshot_status(app: &TestApp, id: &str) -> Vec<String> {
    app.db
        .column(&format!("select status from snapshots where id = '{id}'"))
        .await
}

/// The new volume, or `None` for a create whose source went away first: refused with
/// Cinder's 400 for a source no longer `available`, or its 404 when the source's delete
/// had finished before the create looked for it.
fn created_volume(created: &TestResponse, unavailable: &str) -> Option<String> {
    match created.status.as_u16() {
        202 => Some(str_of(&created.json["volume"], "id")),
        400 => {
            assert!(created.text.contains(unavailable), "{}", created.text);
            None
        }
        _ => {
            created.assert_fault(404, "itemNotFound", "could not be found.");
            None
        }
    }
}

/// Volumes of p1 that ended in `error`.
async fn volumes_in_error(app: &TestApp) -> Vec<String> {
    app.db
        .column("select cast(id as text) from volumes where status = 'error' and deleted = false")
        .await
}

async fn snapshot_delete_racing_a_create_from_it(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let (mut creates_won, mut deletes_won) = (0, 0);
    for round in 0..8 {
        let snapshot = snapshot_of(&app, &volume).await;
        let create = app
            .request(Method::POST, "/v3/p1/volumes")
            .json(&json!({"volume": {"snapshot_id": snapshot}}))
            .send();
        let delete = app
            .request(Method::DELETE, &format!("/v3/p1/snapshots/{snapshot}"))
            .send();
        let (created, deleted) = tokio::join!(create, delete);
        if let Some(new) = created_volume(&created, "Originating snapshot status must be") {
            creates_won += 1;
            assert_eq!(
                created.json["volume"]["status"], "available",
                "round {round}"
            );
            assert_eq!(app.stored_status(&new).await, ["available"]);
            assert!(app.volume_file(&new).exists());
        }
        if deleted.status == 202 {
            deletes_won += 1;
            assert_eq!(snapshot_status(&app, &snapshot).await, ["deleted"]);
        } else {
            deleted.assert_fault(
                400,
                "badRequest",
                &format!("Invalid snapshot: Snapshot {snapshot} is the source of volume"),
            );
            assert_eq!(snapshot_status(&app, &snapshot).await, ["available"]);
            assert_eq!(created.status, 202, "the delete lost to the create");
            let removed = app
                .request(Method::DELETE, &format!("/v3/p1/snapshots/{snapshot}"))
                .send()
                .await;
            assert_eq!(removed.status, 202, "{}", removed.text);
        }
        assert!(
            created.status == 202 || deleted.status == 202,
            "one of them wins"
        );
    }
    assert_eq!(volumes_in_error(&app).await, Vec::<String>::new());
    println!("creates won {creates_won}, deletes won {deletes_won}");
}

async fn volume_delete_racing_a_clone_of_it(app: TestApp) {
    for round in 0..8 {
        let source = str_of(&app.create_volume(json!({"size": 1})).await, "id");
        let clone = app
            .request(Method::POST, "/v3/p1/volumes")
            .json(&json!({"volume": {"source_volid": source}}))
            .send();
        let delete = app
            .request(Method::DELETE, &format!("/v3/p1/volumes/{source}"))
            .send();
        let (cloned, deleted) = tokio::join!(clone, delete);
        let made = created_volume(&cloned, "Originating source volume status must be");
        if let Some(new) = &made {
            assert_eq!(app.stored_status(new).await, ["available"], "round {round}");
        }
        if deleted.status == 202 {
            assert_eq!(app.stored_status(&source).await, ["deleted"]);
        } else {
            assert_eq!(deleted.status, 400, "{}", deleted.text);
            assert!(
                deleted.text.contains("is the source of volume"),
                "{}",
                deleted.text
            );
            assert_eq!(app.stored_status(&source).await, ["available"]);
        }
        assert!(cloned.status == 202 || deleted.status == 202);
        // Room for the next round under the volumes quota.
        for id in made.iter().chain([&source]) {
            app.request(Method::DELETE, &format!("/v3/p1/volumes/{id}"))
                .send()
                .await;
        }
    }
    assert_eq!(volumes_in_error(&app).await, Vec::<String>::new());
}

/// While a volume is `creating` from a snapshot, neither the snapshot nor its volume
/// (with `cascade`) may go; once it is made, both may.
async fn a_source_is_pinned_while_a_volume_is_creating_from_it(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let snapshot = snapshot_of(&app, &volume).await;
    let made = str_of(
        &app.create_volume(json!({"size": 1, "snapshot_id": snapshot}))
            .await,
        "id",
    );
    // As if the backend were still copying.
    app.db
        .execute(&format!(
            "update volumes set status = 'creating' where id = '{made}'"
        ))
        .await
        .unwrap();
    app.request(Method::DELETE, &format!("/v3/p1/snapshots/{snapshot}"))
        .send()
        .await
        .assert_fault(
            400,
            "badRequest",
            &format!(
                "Invalid snapshot: Snapshot {snapshot} is the source of volume {made}, which is \
                 being created; delete it once that volume is made."
            ),
        );
    app.request(
        Method::DELETE,
        &format!("/v3/p1/volumes/{volume}?cascade=true"),
    )
    .send()
    .await
    .assert_fault(
        400,
        "badRequest",
        &format!(
            "Invalid volume: Volume {volume} is the source of volume {made}, which is being \
                 created; delete it once that volume is made."
        ),
    );
    assert_eq!(snapshot_status(&app, &snapshot).await, ["available"]);
    assert_eq!(app.stored_status(&volume).await, ["available"]);
    app.db
        .execute(&format!(
            "update volumes set status = 'available' where id = '{made}'"
        ))
        .await
        .unwrap();
    let deleted = app
        .request(
            Method::DELETE,
            &format!("/v3/p1/volumes/{volume}?cascade=true"),
        )
        .send()
        .await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
    assert_eq!(snapshot_status(&app, &snapshot).await, ["deleted"]);
}

/// A create the backend failed leaves an `error` volume that counts against the quota
/// until it is deleted; its delete gives the quota back.
async fn an_error_volume_gives_its_quota_back_when_deleted(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 2})).await, "id");
    let snapshot = snapshot_of(&app, &volume).await;
    // The snapshot's data is gone: the backend cannot make a volume from it.
    std::fs::remove_file(app.volumes_dir.join(format!("snapshot-{snapshot}"))).unwrap();
    let failed = app
        .request(Method::POST, "/v3/p1/volumes")
        .json(&json!({"volume": {"snapshot_id": snapshot}}))
        .send()
        .await;
    assert_eq!(failed.status, 202, "{}", failed.text);
    assert_eq!(failed.json["volume"]["status"], "error");
    let broken = str_of(&failed.json["volume"], "id");
    let usage = |app: &TestApp| {
        let app = app.get("/v3/p1/os-quota-sets/p1?usage=True").send();
        async move {
            let shown = app.await;
            let set = shown.json["quota_set"].clone();
            (
                set["volumes"]["in_use"].clone(),
                set["gigabytes"]["in_use"].clone(),
            )
        }
    };
    // Two volumes of 2 GiB and the snapshot's 2 GiB.
    assert_eq!(usage(&app).await, (json!(2), json!(6)));
    let deleted = app
        .request(Method::DELETE, &format!("/v3/p1/volumes/{broken}"))
        .send()
        .await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
    assert_eq!(app.stored_status(&broken).await, ["deleted"]);
    assert_eq!(usage(&app).await, (json!(1), json!(4)));
}

backend_tests!(
    snapshot_delete_racing_a_create_from_it,
    volume_delete_racing_a_clone_of_it,
    a_source_is_pinned_while_a_volume_is_creating_from_it,
    an_error_volume_gives_its_quota_back_when_deleted,
);

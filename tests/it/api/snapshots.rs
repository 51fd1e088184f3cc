//! Snapshots: taken through the file backend for real (their data is a copy), volumes made
//! from them and cloned from volumes, cascade delete, the in-use rules, quotas, and a
//! snapshot racing a delete of its volume.

use std::io::{Read, Seek, SeekFrom, Write};

use axum::http::Method;
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::{TestApp, TestResponse};

const MIB: u64 = 1024 * 1024;

async fn post_snapshot(app: &TestApp, fields: Value, version: &str) -> TestResponse {
    app.request(Method::POST, "/v3/p1/snapshots")
        .version(version)
        .json(&json!({ "snapshot": fields }))
        .send()
        .await
}

async fn snapshot_of(app: &TestApp, volume: &str) -> String {
    let made = post_snapshot(app, json!({"volume_id": volume}), "3.65").await;
    assert_eq!(made.status, 202, "{}", made.text);
    assert_eq!(made.json["snapshot"]["status"], "available");
    str_of(&made.json["snapshot"], "id")
}

fn write_at(app: &TestApp, file: &str, offset: u64, data: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(app.volumes_dir.join(file))
        .expect("volume file");
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.write_all(data).unwrap();
}

fn read_at(app: &TestApp, file: &str, offset: u64, len: usize) -> Vec<u8> {
    let mut f = std::fs::File::open(app.volumes_dir.join(file)).expect("file");
    f.seek(SeekFrom::Start(offset)).unwrap();
    let mut buf = vec![0; len];
    f.read_exact(&mut buf).unwrap();
    buf
}

fn file_len(app: &TestApp, file: &str) -> Option<u64> {
    std::fs::metadata(app.volumes_dir.join(file))
        .ok()
        .map(|m| m.len())
}

async fn snapshot_lifecycle(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    write_at(&app, &format!("volume-{volume}"), MIB, b"hello");
    let made = post_snapshot(
        &app,
        json!({"volume_id": volume, "name": " s1 ", "description": "first", "metadata": {"a": "1"}}),
        "3.65",
    )
    .await;
    assert_eq!(made.status, 202, "{}", made.text);
    let snapshot = &made.json["snapshot"];
    let id = str_of(snapshot, "id");
    assert_eq!(snapshot["status"], "available");
    assert_eq!(snapshot["size"], 1);
    assert_eq!(snapshot["name"], "s1");
    assert_eq!(snapshot["volume_id"], volume.as_str());
    assert_eq!(snapshot["metadata"], json!({"a": "1"}));
    assert_eq!(snapshot["user_id"], "admin");
    assert_eq!(snapshot["consumes_quota"], true);
    // The extended attributes are for show and detail only, as in Cinder.
    assert!(snapshot
        .get("os-extended-snapshot-attributes:progress")
        .is_none());
    let shown = app.get(&format!("/v3/p1/snapshots/{id}")).send().await;
    assert_eq!(
        shown.json["snapshot"]["os-extended-snapshot-attributes:progress"],
        "100%"
    );
    assert_eq!(
        shown.json["snapshot"]["os-extended-snapshot-attributes:project_id"],
        "p1"
    );
    // The snapshot is a copy: later writes to the volume do not change it.
    write_at(&app, &format!("volume-{volume}"), MIB, b"HELLO");
    assert_eq!(read_at(&app, &format!("snapshot-{id}"), MIB, 5), b"hello");

    let summary = app.get("/v3/p1/snapshots").send().await;
    assert_eq!(summary.json["snapshots"].as_array().unwrap().len(), 1);
    assert!(summary.json["snapshots"][0]
        .get("os-extended-snapshot-attributes:project_id")
        .is_none());
    let detail = app.get("/v3/p1/snapshots/detail").send().await;
    assert_eq!(
        detail.json["snapshots"][0]["os-extended-snapshot-attributes:project_id"],
        "p1"
    );
    let renamed = app
        .request(Method::PUT, &format!("/v3/p1/snapshots/{id}"))
        .json(&json!({"snapshot": {"name": "s2"}}))
        .send()
        .await;
    assert_eq!(renamed.json["snapshot"]["name"], "s2");
    assert_eq!(renamed.json["snapshot"]["description"], "first");

    let meta_path = format!("/v3/p1/snapshots/{id}/metadata");
    let merged = app
        .request(Method::POST, &meta_path)
        .json(&json!({"metadata": {"b": "2"}}))
        .send()
        .await;
    assert_eq!(merged.json, json!({"metadata": {"a": "1", "b": "2"}}));
    let item = app.get(&format!("{meta_path}/b")).send().await;
    assert_eq!(item.json, json!({"meta": {"b": "2"}}));
    let removed = app
        .request(Method::DELETE, &format!("{meta_path}/a"))
        .send()
        .await;
    assert_eq!(removed.status, 200, "{}", removed.text);
    app.request(Method::DELETE, &format!("{meta_path}/a"))
        .send()
        .await
        .assert_fault(
            404,
            "itemNotFound",
            &format!("Snapshot {id} has no metadata with key a."),
        );

    // A volume with snapshots is deleted only with cascade.
    app.request(Method::DELETE, &format!("/v3/p1/volumes/{volume}"))
        .send()
        .await
        .assert_fault(400, "badRequest", "have snapshots");

    // Others do not see it.
    app.get(&format!("/v3/p2/snapshots/{id}"))
        .token(MEMBER_P2)
        .send()
        .await
        .assert_fault(
            404,
            "itemNotFound",
            &format!("Snapshot {id} could not be found."),
        );

    let deleted = app
        .request(Method::DELETE, &format!("/v3/p1/snapshots/{id}"))
        .send()
        .await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
    assert_eq!(file_len(&app, &format!("snapshot-{id}")), None);
    app.get(&format!("/v3/p1/snapshots/{id}"))
        .send()
        .await
        .assert_fault(404, "itemNotFound", "could not be found");
    let gone = app
        .request(Method::DELETE, &format!("/v3/p1/volumes/{volume}"))
        .send()
        .await;
    assert_eq!(gone.status, 202, "{}", gone.text);
}

async fn volumes_from_snapshots_and_clones(app: TestApp) {
    let gold = app.create_type("gold", json!({})).await;
    let volume = str_of(
        &app.create_volume(json!({"size": 2, "volume_type": "gold"}))
            .await,
        "id",
    );
    write_at(&app, &format!("volume-{volume}"), 3 * MIB, b"data!");
    let snapshot = snapshot_of(&app, &volume).await;

    // From the snapshot: its size by default, its volume's type, its data.
    let from = app.create_volume(json!({"snapshot_id": snapshot})).await;
    assert_eq!(from["status"], "available");
    assert_eq!(from["size"], 2);
    assert_eq!(from["snapshot_id"], snapshot.as_str());
    assert_eq!(from["volume_type"], "gold");
    let from_id = str_of(&from, "id");
    assert_eq!(
        read_at(&app, &format!("volume-{from_id}"), 3 * MIB, 5),
        b"data!"
    );
    // Larger than the source is fine; the file grows.
    let bigger = str_of(
        &app.create_volume(json!({"snapshot_id": snapshot, "size": 3}))
            .await,
        "id",
    );
    assert_eq!(
        file_len(&app, &format!("volume-{bigger}")),
        Some(3 * 1024 * MIB)
    );
    app.post_volume(json!({"snapshot_id": snapshot, "size": 1}), "3.71")
        .await
        .assert_fault(
            400,
            "badRequest",
            "Volume size '1'GB cannot be smaller than the snapshot size 2GB. They must be >= original snapshot size.",
        );

    // A clone of the volume.
    let clone = app.create_volume(json!({"source_volid": volume})).await;
    assert_eq!(clone["source_volid"], volume.as_str());
    assert_eq!(clone["volume_type"], "gold");
    let clone_id = str_of(&clone, "id");
    assert_eq!(
        read_at(&app, &format!("volume-{clone_id}"), 3 * MIB, 5),
        b"data!"
    );
    app.post_volume(
        json!({"source_volid": volume, "availability_zone": "elsewhere"}),
        "3.71",
    )
    .await
    .assert_fault(400, "badRequest", "");

    // Sources that are not usable.
    let missing = "00000000-0000-4000-8000-000000000000";
    app.post_volume(json!({"snapshot_id": missing}), "3.71")
        .await
        .assert_fault(
            404,
            "itemNotFound",
            &format!("Snapshot {missing} could not be found."),
        );
    let reset = app
        .request(Method::POST, &format!("/v3/p1/snapshots/{snapshot}/action"))
        .json(&json!({"os-reset_status": {"status": "error"}}))
        .send()
        .await;
    assert_eq!(reset.status, 202, "{}", reset.text);
    app.post_volume(json!({"snapshot_id": snapshot}), "3.71")
        .await
        .assert_fault(
            400,
            "badRequest",
            "Invalid snapshot: Originating snapshot status must be one of 'available' values",
        );
    let _ = gold;

    // Cascade removes the snapshots with the volume.
    let cascaded = app
        .request(
            Method::DELETE,
            &format!("/v3/p1/volumes/{volume}?cascade=true"),
        )
        .send()
        .await;
    assert_eq!(cascaded.status, 202, "{}", cascaded.text);
    assert_eq!(file_len(&app, &format!("snapshot-{snapshot}")), None);
    assert_eq!(file_len(&app, &format!("volume-{volume}")), None);
    let live = app
        .db
        .column("select cast(id as text) from snapshots where deleted = false")
        .await;
    assert!(live.is_empty(), "{live:?}");
}

async fn in_use_volumes_need_force_until_3_66(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    app.attach_fully(&volume, I1, conn()).await;
    post_snapshot(&app, json!({"volume_id": volume}), "3.65")
        .await
        .assert_fault(
            400,
            "badRequest",
            &format!("Invalid volume: Volume {volume} status must be available, but current status is: in-use."),
        );
    let forced = post_snapshot(&app, json!({"volume_id": volume, "force": true}), "3.65").await;
    assert_eq!(forced.status, 202, "{}", forced.text);
    let plain = post_snapshot(&app, json!({"volume_id": volume}), "3.66").await;
    assert_eq!(plain.status, 202, "{}", plain.text);
    post_snapshot(&app, json!({"volume_id": volume, "force": false}), "3.66")
        .await
        .assert_fault(
            400,
            "badRequest",
            "Since microversion 3.66 the 'force' flag is invalid",
        );
    assert_eq!(app.volume_status(&volume).await, "in-use");
    // A member of another project cannot snapshot it.
    app.request(Method::POST, "/v3/p2/snapshots")
        .token(MEMBER_P2)
        .json(&json!({"snapshot": {"volume_id": volume}}))
        .send()
        .await
        .assert_fault(404, "itemNotFound", "could not be found");
}

async fn snapshots_count_against_the_quota(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 2})).await, "id");
    let put = app
        .request(Method::PUT, "/v3/p1/os-quota-sets/p1")
        .json(&json!({"quota_set": {"snapshots": 1, "gigabytes": 7}}))
        .send()
        .await;
    assert_eq!(put.status, 200, "{}", put.text);
    snapshot_of(&app, &volume).await;
    post_snapshot(&app, json!({"volume_id": volume}), "3.65")
        .await
        .assert_fault(
            413,
            "overLimit",
            "Maximum number of snapshots allowed (1) exceeded",
        );
    let usage = app.get("/v3/p1/os-quota-sets/p1?usage=true").send().await;
    assert_eq!(usage.json["quota_set"]["snapshots"]["in_use"], 1);
    assert_eq!(usage.json["quota_set"]["gigabytes"]["in_use"], 4);
    app.post_volume(json!({"size": 4}), "3.71")
        .await
        .assert_fault(
            413,
            "overLimit",
            "Requested 4G, quota is 7G and 4G has been consumed.",
        );
}

async fn admin_actions_and_bad_bodies(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let id = snapshot_of(&app, &volume).await;
    let action = |body: Value, token: &'static str| {
        let app = &app;
        let id = id.clone();
        async move {
            app.request(Method::POST, &format!("/v3/p1/snapshots/{id}/action"))
                .token(token)
                .json(&body)
                .send()
                .await
        }
    };
    action(
        json!({"os-reset_status": {"status": "creating"}}),
        MEMBER_P1,
    )
    .await
    .assert_fault(403, "forbidden", "snapshot_admin_actions:reset_status");
    action(
        json!({"os-reset_status": {"status": "bogus"}}),
        crate::support::http::ADMIN_TOKEN,
    )
    .await
    .assert_fault(400, "badRequest", "");
    let stuck = action(
        json!({"os-reset_status": {"status": "creating"}}),
        crate::support::http::ADMIN_TOKEN,
    )
    .await;
    assert_eq!(stuck.status, 202, "{}", stuck.text);
    // A driver reports progress of a snapshot it is taking (os-update_snapshot_status).
    action(
        json!({"os-update_snapshot_status": {"status": "deleting"}}),
        MEMBER_P1,
    )
    .await
    .assert_fault(
        400,
        "badRequest",
        "Provided snapshot status deleting not allowed for snapshot with status creating.",
    );
    let progress = action(
        json!({"os-update_snapshot_status": {"status": "creating", "progress": "40%"}}),
        MEMBER_P1,
    )
    .await;
    assert_eq!(progress.status, 202, "{}", progress.text);
    let shown = app.get(&format!("/v3/p1/snapshots/{id}")).send().await;
    assert_eq!(
        shown.json["snapshot"]["os-extended-snapshot-attributes:progress"],
        "40%"
    );
    app.request(Method::DELETE, &format!("/v3/p1/snapshots/{id}"))
        .send()
        .await
        .assert_fault(
            400,
            "badRequest",
            "Invalid snapshot: Snapshot status must be available or error and must not be part of a group.",
        );
    let forced = action(
        json!({"os-force_delete": {}}),
        crate::support::http::ADMIN_TOKEN,
    )
    .await;
    assert_eq!(forced.status, 202, "{}", forced.text);
    post_snapshot(&app, json!({"name": "x"}), "3.65")
        .await
        .assert_fault(400, "badRequest", "");
    post_snapshot(&app, json!({"volume_id": volume, "bogus": 1}), "3.65")
        .await
        .assert_fault(400, "badRequest", "");
}

/// A snapshot and a delete of its volume, fired together: exactly one wins.
async fn snapshot_races_volume_delete(app: TestApp) {
    for _ in 0..8 {
        let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
        let snap = app
            .request(Method::POST, "/v3/p1/snapshots")
            .json(&json!({"snapshot": {"volume_id": volume}}))
            .send();
        let delete = app
            .request(Method::DELETE, &format!("/v3/p1/volumes/{volume}"))
            .send();
        let (snap, delete) = tokio::join!(snap, delete);
        let won = [&snap, &delete].iter().filter(|r| r.status == 202).count();
        assert_eq!(won, 1, "{} / {}", snap.text, delete.text);
        let live_snapshots = app
            .db
            .column(&format!(
                "select cast(id as text) from snapshots where volume_id = '{volume}' and deleted = false"
            ))
            .await;
        if snap.status == 202 {
            assert_eq!(live_snapshots.len(), 1);
            assert_eq!(app.volume_status(&volume).await, "available");
        } else {
            assert!(live_snapshots.is_empty());
        }
    }
}

/// The backend cannot copy (the volume's file is gone): the snapshot is `error` and the
/// project gets Cinder's user message; a volume from a source that cannot be read is
/// `error` too.
async fn backend_failures_leave_error_and_a_message(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let good = snapshot_of(&app, &volume).await;
    std::fs::remove_file(app.volumes_dir.join(format!("volume-{volume}"))).unwrap();
    let failed = post_snapshot(&app, json!({"volume_id": volume}), "3.65").await;
    assert_eq!(failed.status, 202, "{}", failed.text);
    assert_eq!(failed.json["snapshot"]["status"], "error");
    let id = str_of(&failed.json["snapshot"], "id");
    let message = app.message_about(&id).await;
    assert_eq!(message["event_id"], "VOLUME_VOLUME_SNAPSHOT_009_013");
    assert_eq!(
        message["user_message"],
        "create snapshot: Snapshot failed to create."
    );
    assert_eq!(message["resource_type"], "VOLUME_SNAPSHOT");
    // A clone of a volume whose data is gone fails the same way a create does.
    let clone = app.create_volume(json!({"source_volid": volume})).await;
    assert_eq!(clone["status"], "error");
    // The snapshot taken before still restores.
    let restored = app.create_volume(json!({"snapshot_id": good})).await;
    assert_eq!(restored["status"], "available");
}

/// `with_count` (3.45) counts every snapshot the listing's filters match, over all pages,
/// as for volumes; before 3.45 the answer has no count.
async fn listings_count_with_count(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    for _ in 0..3 {
        snapshot_of(&app, &volume).await;
    }
    let other = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    snapshot_of(&app, &other).await;
    for path in ["/v3/p1/snapshots", "/v3/p1/snapshots/detail"] {
        let page = app
            .get(&format!(
                "{path}?with_count=true&limit=1&volume_id={volume}"
            ))
            .version("3.45")
            .send()
            .await;
        assert_eq!(page.status, 200, "{}", page.text);
        assert_eq!(page.json["snapshots"].as_array().unwrap().len(), 1);
        assert_eq!(page.json["count"], 3, "{path}: {}", page.text);
        let all = app
            .get(&format!("{path}?with_count=true"))
            .version("3.45")
            .send()
            .await;
        assert_eq!(all.json["count"], 4, "{}", all.text);
        let old = app
            .get(&format!("{path}?with_count=true"))
            .version("3.44")
            .send()
            .await;
        assert!(old.json.get("count").is_none(), "{}", old.text);
        let not_asked = app.get(path).version("3.45").send().await;
        assert!(not_asked.json.get("count").is_none(), "{}", not_asked.text);
    }
}

backend_tests!(
    listings_count_with_count,
    backend_failures_leave_error_and_a_message,
    snapshot_lifecycle,
    volumes_from_snapshots_and_clones,
    in_use_volumes_need_force_until_3_66,
    snapshots_count_against_the_quota,
    admin_actions_and_bad_bodies,
    snapshot_races_volume_delete,
);

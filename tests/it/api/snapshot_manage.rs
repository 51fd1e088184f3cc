//! Adoption of snapshots on the file backend: a snapshot unmanaged leaves its data as
//! `unmanaged-snapshot-<id>` and goes from the listings; managed again under that name
//! it is a new snapshot of its volume with the data, name and metadata asked for, and a
//! volume made from it holds that data. Cinder's refusals answer with its words.

use axum::http::Method;
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::http::ADMIN_TOKEN;
use crate::support::{TestApp, TestResponse};

const V: &str = "3.64";

async fn admin(app: &TestApp, method: Method, path: &str, body: Option<Value>) -> TestResponse {
    call_as(app, ADMIN_TOKEN, V, method, path, body).await
}

async fn snapshot_of(app: &TestApp, volume: &str) -> String {
    let body = json!({"snapshot": {"volume_id": volume, "name": "before"}});
    let taken = admin(app, Method::POST, "/v3/p1/snapshots", Some(body)).await;
    assert_eq!(taken.status, 202, "{}", taken.text);
    str_of(&taken.json["snapshot"], "id")
}

fn manage_body(volume: &str, name: &str) -> Value {
    json!({"snapshot": {"volume_id": volume, "ref": {"source-name": name},
                        "name": "adopted", "description": "back again",
                        "metadata": {"from": "outside"}}})
}

async fn snapshots_are_unmanaged_and_managed_again(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    std::fs::write(app.volume_file(&volume), b"state at the snapshot").unwrap();
    let snapshot = snapshot_of(&app, &volume).await;
    std::fs::write(app.volume_file(&volume), b"written afterwards....").unwrap();

    let action = format!("/v3/p1/snapshots/{snapshot}/action");
    let member = call_as(
        &app,
        MEMBER_P1,
        V,
        Method::POST,
        &action,
        Some(json!({"os-unmanage": {}})),
    );
    assert_eq!(member.await.status, 403, "admins only");
    let unmanaged = admin(
        &app,
        Method::POST,
        &action,
        Some(json!({"os-unmanage": {}})),
    )
    .await;
    assert_eq!(unmanaged.status, 202, "{}", unmanaged.text);
    let gone = admin(
        &app,
        Method::GET,
        &format!("/v3/p1/snapshots/{snapshot}"),
        None,
    )
    .await;
    assert_eq!(gone.status, 404);
    let kept = app
        .volumes_dir
        .join(format!("unmanaged-snapshot-{snapshot}"));
    assert!(kept.exists(), "the data stays");
    let usage = admin(
        &app,
        Method::GET,
        "/v3/p1/os-quota-sets/p1?usage=true",
        None,
    )
    .await;
    assert_eq!(usage.json["quota_set"]["snapshots"]["in_use"], 0);

    let name = format!("unmanaged-snapshot-{snapshot}");
    let body = manage_body(&volume, &name);
    let member = call_as(
        &app,
        MEMBER_P1,
        V,
        Method::POST,
        "/v3/p1/os-snapshot-manage",
        Some(body.clone()),
    );
    assert_eq!(member.await.status, 403, "admins only");
    let managed = admin(&app, Method::POST, "/v3/p1/os-snapshot-manage", Some(body)).await;
    assert_eq!(managed.status, 202, "{}", managed.text);
    let made = &managed.json["snapshot"];
    assert_eq!(made["status"], "available");
    assert_eq!(made["volume_id"], json!(volume));
    assert_eq!(made["size"], 1);
    assert_eq!(made["name"], "adopted");
    assert_eq!(made["description"], "back again");
    assert_eq!(made["metadata"], json!({"from": "outside"}));
    let id = str_of(made, "id");
    assert!(!kept.exists());
    assert!(app.volumes_dir.join(format!("snapshot-{id}")).exists());
    let usage = admin(
        &app,
        Method::GET,
        "/v3/p1/os-quota-sets/p1?usage=true",
        None,
    )
    .await;
    assert_eq!(usage.json["quota_set"]["snapshots"]["in_use"], 1);

    // Its data is the snapshot's: a volume made from it holds it.
    let body = json!({"volume": {"size": 1, "snapshot_id": id}});
    let from = admin(&app, Method::POST, "/v3/p1/volumes", Some(body)).await;
    assert_eq!(from.status, 202, "{}", from.text);
    let copy = std::fs::read(app.volume_file(&str_of(&from.json["volume"], "id"))).unwrap();
    assert_eq!(&copy[..21], b"state at the snapshot");
    app.assert_consistent(&volume).await;

    // The 3.8 form, once the snapshot is let go again.
    let action = format!("/v3/p1/snapshots/{id}/action");
    let again = admin(
        &app,
        Method::POST,
        &action,
        Some(json!({"os-unmanage": null})),
    )
    .await;
    assert_eq!(again.status, 202, "{}", again.text);
    let body = manage_body(&volume, &format!("unmanaged-snapshot-{id}"));
    let old = call_as(
        &app,
        ADMIN_TOKEN,
        "3.7",
        Method::POST,
        "/v3/p1/manageable_snapshots",
        Some(body.clone()),
    );
    assert_eq!(old.await.status, 404, "3.8+");
    let managed = admin(
        &app,
        Method::POST,
        "/v3/p1/manageable_snapshots",
        Some(body),
    )
    .await;
    assert_eq!(managed.status, 202, "{}", managed.text);
}

async fn refusals_use_cinders_words(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let path = "/v3/p1/os-snapshot-manage";
    let no_name = json!({"snapshot": {"volume_id": volume, "ref": {"name": "x"}}});
    admin(&app, Method::POST, path, Some(no_name))
        .await
        .assert_fault(
            400,
            "badRequest",
            "Reference must contain source-name element.",
        );
    let missing = manage_body(&volume, "nothing-here");
    admin(&app, Method::POST, path, Some(missing))
        .await
        .assert_fault(400, "badRequest", "invalid backend reference");
    let unknown = manage_body("8c4a7f38-0000-4000-8000-000000000000", "x");
    admin(&app, Method::POST, path, Some(unknown))
        .await
        .assert_fault(404, "itemNotFound", "could not be found");
    let no_volume = json!({"snapshot": {"ref": {"source-name": "x"}}});
    admin(&app, Method::POST, path, Some(no_volume))
        .await
        .assert_fault(400, "badRequest", "volume_id");
    // A live snapshot's own data is not an object to manage.
    let snapshot = snapshot_of(&app, &volume).await;
    let own = manage_body(&volume, &format!("snapshot-{snapshot}"));
    admin(&app, Method::POST, path, Some(own))
        .await
        .assert_fault(400, "badRequest", "invalid backend reference");
    let listed = admin(&app, Method::GET, "/v3/p1/manageable_snapshots", None).await;
    listed.assert_fault(400, "badRequest", "Host field is missing.");
    let listed = admin(
        &app,
        Method::GET,
        "/v3/p1/manageable_snapshots?host=nowhere",
        None,
    )
    .await;
    listed.assert_fault(400, "badRequest", "Host 'nowhere' not found");
    app.assert_consistent(&volume).await;
}

/// A backend over file storage (`iscsi-sim`, as `tgt`) adopts through that storage.
async fn backends_over_files_adopt_through_them(app: TestApp) {
    let dir = app.volumes_dir.join("iscsi");
    let spec = format!("iscsi=iscsi-sim,dir={}", dir.display());
    let app = app.with_backends(&[spec.as_str()]).await;
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let snapshot = snapshot_of(&app, &volume).await;
    let action = format!("/v3/p1/snapshots/{snapshot}/action");
    let unmanaged = admin(
        &app,
        Method::POST,
        &action,
        Some(json!({"os-unmanage": {}})),
    )
    .await;
    assert_eq!(unmanaged.status, 202, "{}", unmanaged.text);
    assert!(dir.join(format!("unmanaged-snapshot-{snapshot}")).exists());
    let body = manage_body(&volume, &format!("unmanaged-snapshot-{snapshot}"));
    let managed = admin(&app, Method::POST, "/v3/p1/os-snapshot-manage", Some(body)).await;
    assert_eq!(managed.status, 202, "{}", managed.text);
    let id = str_of(&managed.json["snapshot"], "id");
    assert!(dir.join(format!("snapshot-{id}")).exists());
    let action = format!("/v3/p1/volumes/{volume}/action");
    let refused = admin(
        &app,
        Method::POST,
        &action,
        Some(json!({"os-unmanage": {}})),
    )
    .await;
    assert_eq!(
        refused.status, 400,
        "a volume with snapshots stays: {}",
        refused.text
    );
    app.assert_consistent(&volume).await;
}

/// No live volume's storage is taken as a snapshot: not another project's, not the named
/// volume's own. The victim keeps its data and its status.
async fn a_live_volume_is_never_managed_as_a_snapshot(app: TestApp) {
    let own = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let victim = call_as(
        &app,
        "victim:p2:member,reader",
        V,
        Method::POST,
        "/v3/p2/volumes",
        Some(json!({"volume": {"size": 1}})),
    )
    .await;
    assert_eq!(victim.status, 202, "{}", victim.text);
    let victim = str_of(&victim.json["volume"], "id");
    std::fs::write(app.volume_file(&victim), b"the victim's data").unwrap();
    for name in [format!("volume-{victim}"), format!("volume-{own}")] {
        let taken = admin(
            &app,
            Method::POST,
            "/v3/p1/os-snapshot-manage",
            Some(manage_body(&own, &name)),
        )
        .await;
        taken.assert_fault(400, "badRequest", "storage of a live volume");
    }
    assert_eq!(
        std::fs::read(app.volume_file(&victim)).unwrap(),
        b"the victim's data"
    );
    let snapshots = app
        .db
        .column("select cast(count(*) as text) from snapshots")
        .await;
    assert_eq!(snapshots, ["0"], "nothing was recorded");
    app.assert_consistent(&victim).await;
}

/// A link in the backend's directory is neither offered nor taken, as a volume or a
/// snapshot; its target outside the directory is neither grown nor moved.
async fn links_in_the_backend_directory_are_not_followed(app: TestApp) {
    let own = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let outside = std::env::temp_dir().join(format!("outside-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&outside).unwrap();
    let target = outside.join("host-file");
    std::fs::write(&target, b"the host's").unwrap();
    std::os::unix::fs::symlink(&target, app.volumes_dir.join("link")).unwrap();
    let shown = admin(&app, Method::GET, &format!("/v3/p1/volumes/{own}"), None).await;
    let host = str_of(&shown.json["volume"], "os-vol-host-attr:host");
    let listed = admin(
        &app,
        Method::GET,
        &format!("/v3/p1/manageable_volumes?host={host}"),
        None,
    )
    .await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert!(!listed.text.contains("\"link\""), "{}", listed.text);
    let volume = json!({"volume": {"host": host, "ref": {"source-name": "link"}}});
    let refused = admin(&app, Method::POST, "/v3/p1/os-volume-manage", Some(volume)).await;
    refused.assert_fault(400, "badRequest", "not a regular file");
    let snapshot = admin(
        &app,
        Method::POST,
        "/v3/p1/os-snapshot-manage",
        Some(manage_body(&own, "link")),
    )
    .await;
    snapshot.assert_fault(400, "badRequest", "not a regular file");
    assert_eq!(std::fs::read(&target).unwrap(), b"the host's");
    assert!(std::fs::symlink_metadata(app.volumes_dir.join("link"))
        .unwrap()
        .is_symlink());
    std::fs::remove_dir_all(&outside).unwrap();
}

/// Every endpoint that turns a name into a path, given names that would leave the
/// directory: a 400 (or the 404 of a thing not found), never a 5xx, nothing written.
async fn names_that_would_leave_their_directory_are_refused(app: TestApp) {
    let own = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let shown = admin(&app, Method::GET, &format!("/v3/p1/volumes/{own}"), None).await;
    let host = str_of(&shown.json["volume"], "os-vol-host-attr:host");
    let long = "a".repeat(4096);
    let names = [
        "../../../../etc/passwd",
        "/etc/passwd",
        "..",
        ".",
        "a/../../b",
        "x\u{0}y",
        "x\ny",
        long.as_str(),
        "",
    ];
    let before = app
        .db
        .column("select cast(count(*) as text) from volumes")
        .await;
    for name in names {
        let volume = json!({"volume": {"host": host, "ref": {"source-name": name}}});
        let snapshot = manage_body(&own, name);
        for (path, body) in [
            ("/v3/p1/os-volume-manage", volume),
            ("/v3/p1/os-snapshot-manage", snapshot),
        ] {
            let answer = admin(&app, Method::POST, path, Some(body)).await;
            assert_eq!(answer.status, 400, "{path} {name:?}: {}", answer.text);
        }
    }
    let after = app
        .db
        .column("select cast(count(*) as text) from volumes")
        .await;
    assert_eq!(before, after);
    let snapshots = app
        .db
        .column("select cast(count(*) as text) from snapshots")
        .await;
    assert_eq!(snapshots, ["0"]);
}

backend_tests!(
    snapshots_are_unmanaged_and_managed_again,
    refusals_use_cinders_words,
    backends_over_files_adopt_through_them,
    a_live_volume_is_never_managed_as_a_snapshot,
    links_in_the_backend_directory_are_not_followed,
    names_that_would_leave_their_directory_are_refused,
);

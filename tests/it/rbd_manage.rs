//! Adoption on the rbd backend, against the real cluster: an image made outside the
//! service is listed as manageable, managed into a volume (renamed `volume-<id>`, grown
//! to whole GiB, its data kept), unmanaged (renamed `unmanaged-volume-<id>`, kept) and
//! managed again.

use axum::http::Method;
use cinder_attach::backend::rbd::ceph::features;
use serde_json::json;

use crate::rbd::{admin, ceph_conf, pool};
use crate::support::helpers::*;
use crate::support::TestApp;

const GIB: u64 = 1 << 30;

async fn images_are_managed_and_unmanaged(app: TestApp) {
    let Some(conf) = ceph_conf() else {
        return;
    };
    let spec = format!("ceph=rbd,conf={conf},pool={},capacity_gb=1000", pool());
    let app = app.with_backends(&[spec.as_str()]).await;
    let cluster = admin(&conf);
    let io = cluster.io(&pool(), None).unwrap();
    let legacy = format!("legacy-{}", uuid::Uuid::new_v4().simple());
    io.create_image(&legacy, GIB / 2, features::LAYERING)
        .unwrap();
    io.open(&legacy, None, false)
        .unwrap()
        .write(0, b"written before the service")
        .unwrap();

    let made = app.create_volume(json!({"size": 1})).await;
    let shown = app.show_volume(&str_of(&made, "id"), "3.64").await;
    let host = str_of(&shown.json["volume"], "os-vol-host-attr:host");
    let path = format!(
        "/v3/p1/manageable_volumes/detail?host={}",
        host.replace('#', "%23")
    );
    let listed = app.get(&path).version("3.64").send().await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let ours = listed.json["manageable-volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["reference"]["source-name"] == legacy.as_str())
        .cloned()
        .expect("the image is listed");
    assert_eq!(ours["size"], 1);
    assert_eq!(ours["safe_to_manage"], true);

    let body = json!({"volume": {"host": host, "ref": {"source-name": legacy}}});
    let managed = app
        .request(Method::POST, "/v3/p1/os-volume-manage")
        .json(&body)
        .send()
        .await;
    assert_eq!(managed.status, 202, "{}", managed.text);
    let id = str_of(&managed.json["volume"], "id");
    assert_eq!(managed.json["volume"]["status"], "available");
    let image = io.open(&format!("volume-{id}"), None, true).unwrap();
    assert_eq!(image.size().unwrap(), GIB);
    assert_eq!(image.read(0, 26).unwrap(), b"written before the service");
    drop(image);
    app.assert_consistent(&id).await;

    let action = format!("/v3/p1/volumes/{id}/action");
    let unmanaged = app
        .request(Method::POST, &action)
        .json(&json!({"os-unmanage": null}))
        .send()
        .await;
    assert_eq!(unmanaged.status, 202, "{}", unmanaged.text);
    let kept = format!("unmanaged-volume-{id}");
    assert!(io.open(&kept, None, true).is_ok(), "the image is kept");
    assert!(io.open(&format!("volume-{id}"), None, true).is_err());

    let body = json!({"volume": {"host": host, "ref": {"source-name": kept}}});
    let again = app
        .request(Method::POST, "/v3/p1/os-volume-manage")
        .json(&body)
        .send()
        .await;
    assert_eq!(again.status, 202, "{}", again.text);
    let back = str_of(&again.json["volume"], "id");
    let deleted = app
        .request(Method::DELETE, &format!("/v3/p1/volumes/{back}"))
        .send()
        .await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
    assert!(io.open(&format!("volume-{back}"), None, true).is_err());
}

backend_tests!(images_are_managed_and_unmanaged);

/// A snapshot unmanaged on rbd stays on its volume's image as
/// `unmanaged-snapshot-<id>`, is listed as manageable with its volume, and managed again
/// is the snapshot `snapshot-<new id>` a volume can be cloned from.
async fn snapshots_are_unmanaged_and_managed(app: TestApp) {
    let Some(conf) = ceph_conf() else {
        return;
    };
    let spec = format!("ceph=rbd,conf={conf},pool={},capacity_gb=1000", pool());
    let app = app.with_backends(&[spec.as_str()]).await;
    let cluster = admin(&conf);
    let io = cluster.io(&pool(), None).unwrap();
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let image = format!("volume-{volume}");
    io.open(&image, None, false)
        .unwrap()
        .write(0, b"before the snapshot")
        .unwrap();
    let body = json!({"snapshot": {"volume_id": volume}});
    let taken = app
        .request(Method::POST, "/v3/p1/snapshots")
        .json(&body)
        .send()
        .await;
    assert_eq!(taken.status, 202, "{}", taken.text);
    let snapshot = str_of(&taken.json["snapshot"], "id");
    let action = format!("/v3/p1/snapshots/{snapshot}/action");
    let body = json!({"os-unmanage": {}});
    let unmanaged = app.request(Method::POST, &action).json(&body).send().await;
    assert_eq!(unmanaged.status, 202, "{}", unmanaged.text);
    let kept = format!("unmanaged-snapshot-{snapshot}");
    let names = io.open(&image, None, true).unwrap().snapshots().unwrap();
    assert_eq!(names, vec![kept.clone()]);

    let shown = app.show_volume(&volume, "3.64").await;
    let host = str_of(&shown.json["volume"], "os-vol-host-attr:host");
    let path = format!(
        "/v3/p1/manageable_snapshots/detail?host={}",
        host.replace('#', "%23")
    );
    let listed = app.get(&path).version("3.64").send().await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let ours = listed.json["manageable-snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["reference"]["source-name"] == kept.as_str())
        .cloned()
        .expect("the snapshot is listed");
    assert_eq!(ours["source_reference"]["source-name"], image.as_str());
    assert_eq!(ours["safe_to_manage"], true);
    assert_eq!(ours["size"], 1);

    let body = json!({"snapshot": {"volume_id": volume, "ref": {"source-name": kept}}});
    let managed = app
        .request(Method::POST, "/v3/p1/os-snapshot-manage")
        .json(&body)
        .send()
        .await;
    assert_eq!(managed.status, 202, "{}", managed.text);
    assert_eq!(managed.json["snapshot"]["status"], "available");
    let again = str_of(&managed.json["snapshot"], "id");
    let names = io.open(&image, None, true).unwrap().snapshots().unwrap();
    assert_eq!(names, vec![format!("snapshot-{again}")]);
    // A volume cloned from it holds the snapshot's data.
    let body = json!({"volume": {"size": 1, "snapshot_id": again}});
    let clone = app
        .request(Method::POST, "/v3/p1/volumes")
        .json(&body)
        .send()
        .await;
    assert_eq!(clone.status, 202, "{}", clone.text);
    let clone = str_of(&clone.json["volume"], "id");
    let data = io.open(&format!("volume-{clone}"), None, true).unwrap();
    assert_eq!(data.read(0, 19).unwrap(), b"before the snapshot");
    drop(data);
    app.assert_consistent(&volume).await;
    for path in [
        format!("/v3/p1/volumes/{clone}"),
        format!("/v3/p1/snapshots/{again}"),
        format!("/v3/p1/volumes/{volume}"),
    ] {
        let deleted = app.request(Method::DELETE, &path).send().await;
        assert_eq!(deleted.status, 202, "{path}: {}", deleted.text);
    }
}

backend_tests!(snapshots_are_unmanaged_and_managed);

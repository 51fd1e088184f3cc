//! `import-cinder` onto an `rbd` backend with shared credentials, against the real
//! cluster: the images stay where Cinder's RBD driver put them (`volume-<id>`, snapshots
//! `snapshot-<id>` on their volume's image), nothing is copied, and the service serves and
//! deletes them afterwards. The two stores run one after the other: the fixture's ids name
//! the images, and the pool is shared.

use std::collections::BTreeSet;

use axum::http::Method;
use cinder_attach::backend::rbd::ceph::features;
use serde_json::json;

use crate::import_cinder::{get, import_onto, text, CinderDb, P1};
use crate::rbd::{admin, ceph_conf, pool};
use crate::support::{run_case, Backend, TestApp};

const GIB: u64 = 1 << 30;

async fn images_stay_where_cinder_put_them(app: TestApp) {
    let Some(conf) = ceph_conf() else {
        return;
    };
    let Some(cinder) = CinderDb::load().await else {
        return;
    };
    let spec = format!("ceph=rbd,conf={conf},pool={},capacity_gb=1000", pool());
    let app = app.with_backends(&[spec.as_str()]).await;
    let cluster = admin(&conf);
    let io = cluster.io(&pool(), None).unwrap();
    let volumes = cinder
        .rows(
            "select id, display_name, size from volumes \
              where not deleted and display_name not in ('no-storage', 'broken')",
        )
        .await;
    let snapshot = cinder
        .rows("select id, volume_id from snapshots where not deleted")
        .await
        .remove(0);
    for v in &volumes {
        let name = format!("volume-{}", text(v, "id"));
        let size: u64 = text(v, "size").parse().unwrap();
        io.create_image(&name, size * GIB, features::LAYERING)
            .unwrap();
        let image = io.open(&name, None, false).unwrap();
        image.write(0, text(v, "id").as_bytes()).unwrap();
        if v["id"] == snapshot["volume_id"] {
            let snap = format!("snapshot-{}", text(&snapshot, "id"));
            image.snap_create(&snap).unwrap();
            image.snap_protect(&snap).unwrap();
        }
    }
    // Other tests share the pool: only the images of the fixture's volumes are compared.
    let ours = |names: Vec<String>| -> BTreeSet<String> {
        let ids: Vec<String> = volumes.iter().map(|v| text(v, "id")).collect();
        let mine = |name: &String| ids.iter().any(|id| name.contains(id.as_str()));
        names.into_iter().filter(mine).collect()
    };
    let before = ours(io.list_images().unwrap());

    let report = import_onto(&app, &cinder, "ceph", false).await;
    assert_eq!(report.tally.inserted["volumes"], volumes.len());
    assert_eq!(report.tally.inserted["snapshots"], 1);
    assert_eq!(report.tally.inserted["attachments"], 3);
    let after = ours(io.list_images().unwrap());
    assert_eq!(before.len(), volumes.len());
    assert_eq!(before, after, "no image made, copied or renamed");
    for v in &volumes {
        let id = text(v, "id");
        let image = io.open(&format!("volume-{id}"), None, true).unwrap();
        assert_eq!(
            image.read(0, id.len()).unwrap(),
            id.as_bytes(),
            "Cinder's data"
        );
    }

    let shown = get(&app, P1, &format!("/volumes/{}", text(&volumes[0], "id"))).await;
    assert_eq!(
        shown["volume"]["shared_targets"], false,
        "as rbd reports it"
    );

    // The service serves them: a third host attaches the shared disk.
    let shared = volumes
        .iter()
        .find(|v| v["display_name"] == "shared-disk")
        .unwrap();
    let body = json!({"attachment": {
        "volume_uuid": text(shared, "id"),
        "instance_uuid": "44444444-4444-4444-8444-444444444444",
        "connector": {"host": "compute-3", "ip": "10.0.0.13", "platform": "x86_64",
                      "os_type": "linux", "multipath": false},
        "mode": "ro"}});
    let made = app
        .request(Method::POST, &format!("/v3/{P1}/attachments"))
        .token(&format!("admin:{P1}"))
        .version("3.54")
        .json(&body)
        .send()
        .await;
    assert_eq!(made.status, 200, "{}", made.text);
    let info = &made.json["attachment"]["connection_info"];
    assert_eq!(info["driver_volume_type"], "rbd");
    assert_eq!(
        info["name"],
        json!(format!("{}/volume-{}", pool(), text(shared, "id")))
    );

    // And deletes them: every attachment ended, the snapshot, then the volumes.
    let listed = get(&app, P1, "/attachments").await;
    for a in listed["attachments"].as_array().unwrap() {
        let path = format!("/v3/{P1}/attachments/{}", a["id"].as_str().unwrap());
        let token = format!("admin:{P1}");
        let ended = app
            .request(Method::DELETE, &path)
            .token(&token)
            .version("3.54");
        assert_eq!(ended.send().await.status, 200);
    }
    let path = format!("/v3/{P1}/snapshots/{}", text(&snapshot, "id"));
    let deleted = app
        .request(Method::DELETE, &path)
        .token(&format!("admin:{P1}"));
    assert_eq!(deleted.send().await.status, 202);
    for v in volumes.iter().rev() {
        let listed = get(&app, P1, &format!("/volumes/{}", text(v, "id"))).await;
        let project = listed["volume"]["os-vol-tenant-attr:tenant_id"]
            .as_str()
            .unwrap();
        let path = format!("/v3/{project}/volumes/{}", text(v, "id"));
        let deleted = app
            .request(Method::DELETE, &path)
            .token(&format!("admin:{project}"));
        let deleted = deleted.send().await;
        assert_eq!(deleted.status, 202, "{}", deleted.text);
    }
    let left: BTreeSet<String> = io.list_images().unwrap().into_iter().collect();
    for v in &volumes {
        assert!(!left.contains(&format!("volume-{}", text(v, "id"))));
    }
    cinder.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_stay_where_cinder_put_them_on_both_stores() {
    run_case(Backend::Sqlite, images_stay_where_cinder_put_them).await;
    run_case(Backend::Postgres, images_stay_where_cinder_put_them).await;
}

//! The `rbd` backend on a real Ceph cluster (`scripts/start-ceph`, whose ceph.conf is in
//! `CEPH_CONF`): images, snapshots and copy-on-write clones as Cinder's RBD driver keeps
//! them, Cinder's connection info, and a librbd client acting as the host that reads and
//! writes the volume with nothing but what that connection info says.

use std::time::{Duration, Instant};

use axum::http::Method;
use cinder_attach::backend::rbd::ceph::{ClientConfig, Cluster};
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::TestApp;

const GIB: u64 = 1024 * 1024 * 1024;

/// The cluster's ceph.conf, or `None` (with a note) when no cluster was started outside
/// CI; in CI the tests must run.
fn ceph_conf() -> Option<String> {
    match std::env::var("CEPH_CONF") {
        Ok(conf) if !conf.is_empty() => Some(conf),
        _ if std::env::var_os("CI").is_some() => {
            panic!("CI is set but CEPH_CONF is not: the rbd tests must run (scripts/start-ceph)")
        }
        _ => {
            eprintln!("note: CEPH_CONF is not set; skipping the rbd tests (scripts/start-ceph)");
            None
        }
    }
}

fn pool() -> String {
    std::env::var("CEPH_POOL").unwrap_or_else(|_| "volumes".to_owned())
}

/// The app with one `rbd` backend (as the cluster's admin: `credentials=shared` with
/// auth off for hosts), or `None` without a cluster.
async fn rbd_app(app: TestApp) -> Option<(TestApp, String)> {
    let conf = ceph_conf()?;
    let spec = format!(
        "ceph=rbd,conf={conf},pool={},capacity_gb=1000,max_clone_depth=2",
        pool()
    );
    Some((app.with_backends(&[spec.as_str()]).await, conf))
}

/// The cluster as its admin sees it, to look at what the backend made.
fn admin(conf: &str) -> Cluster {
    Cluster::connect(&ClientConfig {
        conf_file: Some(conf.to_owned()),
        user: "admin".into(),
        ..ClientConfig::default()
    })
    .expect("the admin connects")
}

/// `(size in GiB, parent image@snapshot)` of a volume's image, `None` when it is gone.
fn image_of(conf: &str, volume: &str) -> Option<(u64, Option<String>)> {
    let cluster = admin(conf);
    let io = cluster.io(&pool(), None).unwrap();
    let image = match io.open(&format!("volume-{volume}"), None, true) {
        Err(e) if e.errno == 2 => return None,
        other => other.unwrap(),
    };
    let parent = image
        .parent()
        .unwrap()
        .map(|p| format!("{}@{}", p.image, p.snapshot));
    Some((image.size().unwrap() / GIB, parent))
}

fn snapshots_of(conf: &str, volume: &str) -> Vec<String> {
    let cluster = admin(conf);
    let io = cluster.io(&pool(), None).unwrap();
    let image = io.open(&format!("volume-{volume}"), None, true).unwrap();
    image.snapshots().unwrap()
}

async fn create(app: &TestApp, fields: Value) -> String {
    let created = app.post_volume(fields, "3.71").await;
    assert_eq!(created.status, 202, "{}", created.text);
    assert_eq!(
        created.json["volume"]["status"], "available",
        "{}",
        created.text
    );
    str_of(&created.json["volume"], "id")
}

async fn delete(app: &TestApp, path: &str) -> u16 {
    let response = app.request(Method::DELETE, path).send().await;
    assert!(
        [202, 400].contains(&response.status.as_u16()),
        "{}",
        response.text
    );
    response.status.as_u16()
}

async fn images_snapshots_and_clones(app: TestApp) {
    let Some((app, conf)) = rbd_app(app).await else {
        return;
    };
    let source = create(&app, json!({"size": 1})).await;
    assert_eq!(image_of(&conf, &source), Some((1, None)));
    let extended = app
        .volume_action(&source, json!({"os-extend": {"new_size": 2}}))
        .await;
    assert_eq!(extended.status, 202, "{}", extended.text);
    assert_eq!(image_of(&conf, &source), Some((2, None)));

    let taken = app
        .request(Method::POST, "/v3/p1/snapshots")
        .json(&json!({"snapshot": {"volume_id": source}}))
        .send()
        .await;
    assert_eq!(
        taken.json["snapshot"]["status"], "available",
        "{}",
        taken.text
    );
    let snapshot = str_of(&taken.json["snapshot"], "id");
    assert_eq!(
        snapshots_of(&conf, &source),
        [format!("snapshot-{snapshot}")]
    );

    // Volumes from the snapshot are copy-on-write clones: as quick at 100 GiB as at 2.
    let mut took = Vec::new();
    let mut made = Vec::new();
    for size in [2, 100] {
        let started = Instant::now();
        let id = create(&app, json!({"snapshot_id": snapshot, "size": size})).await;
        took.push(started.elapsed());
        assert_eq!(
            image_of(&conf, &id),
            Some((size, Some(format!("volume-{source}@snapshot-{snapshot}"))))
        );
        made.push(id);
    }
    assert!(
        took[1] < took[0] * 5 + Duration::from_secs(2),
        "100 GiB took {:?}, 2 GiB {:?}",
        took[1],
        took[0]
    );

    // A clone of a volume hangs off a snapshot taken for it; past the clone depth (2
    // here) the new image is flattened.
    let clone = create(&app, json!({"source_volid": made[0]})).await;
    let (_, parent) = image_of(&conf, &clone).unwrap();
    assert_eq!(
        parent,
        Some(format!("volume-{}@volume-{clone}.clone_snap", made[0]))
    );
    let deep = create(&app, json!({"source_volid": clone})).await;
    assert_eq!(image_of(&conf, &deep), Some((2, None)), "flattened");
    assert_eq!(snapshots_of(&conf, &clone), Vec::<String>::new());

    // The source of a clone cannot go while the clone needs it: it stays available.
    assert_eq!(
        delete(&app, &format!("/v3/p1/volumes/{}", made[0])).await,
        202
    );
    assert_eq!(app.stored_status(&made[0]).await, ["available"]);
    assert!(image_of(&conf, &made[0]).is_some());
    // Once the clone is gone, its snapshot goes with it, and the source may go.
    assert_eq!(delete(&app, &format!("/v3/p1/volumes/{clone}")).await, 202);
    assert_eq!(image_of(&conf, &clone), None);
    assert_eq!(snapshots_of(&conf, &made[0]), Vec::<String>::new());
    assert_eq!(
        delete(&app, &format!("/v3/p1/volumes/{}", made[0])).await,
        202
    );
    assert_eq!(app.stored_status(&made[0]).await, ["deleted"]);
    assert_eq!(image_of(&conf, &made[0]), None);

    // The snapshot may go while a volume made from it lives (clone v2 keeps its data
    // for the clone); then everything can be deleted.
    assert_eq!(
        delete(&app, &format!("/v3/p1/snapshots/{snapshot}")).await,
        202
    );
    for id in [&made[1], &deep, &source] {
        assert_eq!(delete(&app, &format!("/v3/p1/volumes/{id}")).await, 202);
        assert_eq!(image_of(&conf, id), None, "{id}");
    }
}

/// Cinder's RBD connection info, and a host that uses only it: a librbd client built
/// from `hosts`/`ports` and the backend's identity writes, and reads back what it wrote.
async fn connection_info_reaches_the_image(app: TestApp) {
    let Some((app, conf)) = rbd_app(app).await else {
        return;
    };
    let volume = create(&app, json!({"size": 1})).await;
    let attached = app
        .post_attachment(
            json!({"volume_uuid": volume, "instance_uuid": I1, "connector": conn(), "mode": "rw"}),
            "3.54",
        )
        .await;
    assert_eq!(attached.status, 200, "{}", attached.text);
    let info = &attached.json["attachment"]["connection_info"];
    assert_eq!(info["driver_volume_type"], "rbd", "{info}");
    assert_eq!(info["name"], format!("{}/volume-{volume}", pool()));
    assert_eq!(info["cluster_name"], "ceph");
    assert_eq!(info["auth_enabled"], false);
    assert_eq!(info["auth_username"], Value::Null);
    assert_eq!(info["secret_type"], "ceph");
    assert_eq!(info["volume_id"], volume);
    assert_eq!(info["discard"], false);
    assert_eq!(info["access_mode"], "rw");
    let hosts = info["hosts"].as_array().unwrap();
    let ports = info["ports"].as_array().unwrap();
    assert_eq!(hosts, &[json!("127.0.0.1")]);
    let mon_host = format!(
        "{}:{}",
        hosts[0].as_str().unwrap(),
        ports[0].as_str().unwrap()
    );

    // The host: no ceph.conf of its own, the monitors from the connection info.
    let keyring = std::path::Path::new(&conf)
        .parent()
        .unwrap()
        .join("admin.keyring");
    let host = Cluster::connect(&ClientConfig {
        conf_file: None,
        user: "admin".into(),
        keyring: Some(keyring.display().to_string()),
        options: vec![("mon_host".into(), mon_host)],
        ..ClientConfig::default()
    })
    .expect("the host connects with the connection info");
    let (pool_name, image) = info["name"].as_str().unwrap().split_once('/').unwrap();
    let io = host.io(pool_name, None).unwrap();
    let opened = io.open(image, None, false).unwrap();
    opened.write(4096, b"written by the host").unwrap();
    opened.flush().unwrap();
    assert_eq!(opened.read(4096, 19).unwrap(), b"written by the host");
    drop(opened);
    let attachment = str_of(&attached.json["attachment"], "id");
    assert_eq!(app.delete_attachment(&attachment).await.status, 200);
    assert_eq!(delete(&app, &format!("/v3/p1/volumes/{volume}")).await, 202);
    assert_eq!(image_of(&conf, &volume), None);
}

backend_tests!(
    images_snapshots_and_clones,
    connection_info_reaches_the_image
);

/// A cluster that does not answer: a create ends in `error` with a user message saying
/// so, within the connect timeout, and nothing is left half-made. (Runs without a
/// cluster: librados itself may be missing, which is said the same way.)
async fn an_unreachable_cluster_is_an_error_not_a_hang(app: TestApp) {
    let dir = std::env::temp_dir().join(format!("ceph-down-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let conf = dir.join("ceph.conf");
    std::fs::write(
        &conf,
        format!("[global]\nmon host = v1:127.0.0.1:{port}\nauth client required = none\n"),
    )
    .unwrap();
    let spec = format!(
        "down=rbd,conf={},pool=volumes,connect_timeout=1",
        conf.display()
    );
    let app = app.with_backends(&[spec.as_str()]).await;
    let started = Instant::now();
    let created = app.post_volume(json!({"size": 1}), "3.71").await;
    assert_eq!(created.status, 202, "{}", created.text);
    assert_eq!(created.json["volume"]["status"], "error");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let messages = app.get("/v3/p1/messages").version("3.3").send().await;
    let text = messages.json["messages"][0]["user_message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        text.contains("The rbd backend down could not reach its Ceph cluster")
            || text.contains("cannot load librados"),
        "{}",
        messages.text
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

backend_tests!(an_unreachable_cluster_is_an_error_not_a_hang);

#[test]
fn per_attachment_credentials_are_refused_until_built() {
    let spec: cinder_attach::backend::BackendSpec = "c=rbd,pool=volumes,credentials=per-attachment"
        .parse()
        .unwrap();
    let refused = spec
        .build(std::sync::Arc::new(cinder_attach::backend::NoRecords))
        .err()
        .unwrap();
    assert!(
        refused.contains("credentials=\"per-attachment\" is not built yet"),
        "{refused}"
    );
}

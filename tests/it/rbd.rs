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
pub(super) fn ceph_conf() -> Option<String> {
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

pub(super) fn pool() -> String {
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
pub(super) fn admin(conf: &str) -> Cluster {
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

pub(super) async fn create(app: &TestApp, fields: Value) -> String {
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
    // The checker finds it where the backend keeps it.
    assert!(snapshots_listed(&app).await.contains(&snapshot));

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
    assert!(!snapshots_listed(&app).await.contains(&snapshot));
    for id in [&made[1], &deep, &source] {
        assert_eq!(delete(&app, &format!("/v3/p1/volumes/{id}")).await, 202);
        assert_eq!(image_of(&conf, id), None, "{id}");
    }
}

/// The snapshots whose data the app's backend lists (for `cinder-attach check`).
async fn snapshots_listed(app: &TestApp) -> Vec<String> {
    let spec = app.backend_specs()[0].clone();
    let backends = cinder_attach::commands::check::backends_from_specs(
        &[spec.parse().expect("spec")],
        "test-host",
        &app.store,
    )
    .expect("builds");
    let listed = backends[0].driver.list_snapshots().await.expect("lists");
    listed.iter().map(ToString::to_string).collect()
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
    // Cinder's fixed words; why (the cluster not reached) is in the log only.
    let message = &messages.json["messages"][0];
    assert_eq!(
        message["event_id"], "VOLUME_VOLUME_008_012",
        "{}",
        messages.text
    );
    assert_eq!(
        message["user_message"],
        "create volume from backend storage: Driver failed to create the volume."
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

backend_tests!(an_unreachable_cluster_is_an_error_not_a_hang);

/// The app with one `rbd` backend that gives each attachment's host an identity of its
/// own. Each test's backend has a name of its own: tests share the pool, and a backend
/// reconciles the identities of its name.
pub(super) async fn per_attachment_app(app: TestApp) -> Option<(TestApp, String)> {
    let conf = ceph_conf()?;
    let name = format!("c{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let spec = format!(
        "{name}=rbd,conf={conf},pool={},capacity_gb=1000,credentials=per-attachment",
        pool()
    );
    Some((app.with_backends(&[spec.as_str()]).await, conf))
}

/// A host as os-brick would be one: only what the connection info says (the monitors,
/// the user and the keyring), no ceph.conf.
pub(super) fn host_of(
    info: &Value,
) -> Result<Cluster, cinder_attach::backend::rbd::ceph::CephError> {
    let hosts = info["hosts"].as_array().unwrap();
    let ports = info["ports"].as_array().unwrap();
    let mon_host = format!(
        "{}:{}",
        hosts[0].as_str().unwrap(),
        ports[0].as_str().unwrap()
    );
    let keyring = info["keyring"]
        .as_str()
        .expect("a keyring in the connection info");
    let key = keyring
        .lines()
        .find_map(|l| l.trim().strip_prefix("key = "))
        .expect("a key in the keyring");
    Cluster::connect(&ClientConfig {
        conf_file: None,
        user: info["auth_username"].as_str().unwrap().to_owned(),
        key: Some(key.to_owned()),
        options: vec![
            ("mon_host".into(), mon_host),
            ("rados_osd_op_timeout".into(), "10".into()),
            ("rados_mon_op_timeout".into(), "10".into()),
            // A removed identity is refused at once; wait no longer than that for it.
            ("client_mount_timeout".into(), "5".into()),
        ],
        ..ClientConfig::default()
    })
}

/// Attaches `volume` for `host` in `mode`; the attachment's id and connection info.
pub(super) async fn attach_as(
    app: &TestApp,
    volume: &str,
    host: &str,
    mode: &str,
) -> (String, Value) {
    attach_with(app, volume, conn_for(host, "/dev/vdb"), mode).await
}

/// Attaches `volume` with `connector` in `mode` at 3.54; the attachment's id and
/// connection info.
pub(super) async fn attach_with(
    app: &TestApp,
    volume: &str,
    connector: Value,
    mode: &str,
) -> (String, Value) {
    let attached = app
        .post_attachment(
            json!({"volume_uuid": volume, "instance_uuid": uuid::Uuid::new_v4().to_string(),
                   "connector": connector, "mode": mode}),
            "3.54",
        )
        .await;
    assert_eq!(attached.status, 200, "{}", attached.text);
    let attachment = &attached.json["attachment"];
    (
        str_of(attachment, "id"),
        attachment["connection_info"].clone(),
    )
}

pub(super) fn image(info: &Value) -> String {
    info["name"]
        .as_str()
        .unwrap()
        .split_once('/')
        .unwrap()
        .1
        .to_owned()
}

/// Whether the cluster holds `client.<identity>`.
fn identity_exists(conf: &str, identity: &str) -> bool {
    let entity = format!("client.{identity}");
    admin(conf)
        .mon_command(&json!({"prefix": "auth get", "entity": entity}), None)
        .is_ok()
}

async fn per_attachment_keys_reach_their_volume_and_nothing_else(app: TestApp) {
    let Some((app, _conf)) = per_attachment_app(app).await else {
        return;
    };
    app.create_multiattach_type("ma").await;
    let volume = create(&app, json!({"size": 1, "volume_type": "ma"})).await;
    let other = create(&app, json!({"size": 1})).await;
    let (_, rw) = attach_as(&app, &volume, "node-1", "rw").await;
    assert_eq!(rw["auth_enabled"], true);
    let user = rw["auth_username"].as_str().unwrap().to_owned();
    assert!(user.starts_with("ca.c") && user.contains(&volume), "{user}");
    assert!(user.ends_with(".rw"));
    assert_eq!(rw["name"], format!("{}/volume-{volume}", pool()));
    assert!(rw["secret_uuid"].as_str().is_some_and(|u| u.len() == 36));

    let writer = host_of(&rw).expect("the host connects with its own key");
    let io = writer.io(&pool(), None).unwrap();
    let opened = io.open(&image(&rw), None, false).unwrap();
    opened.write(0, b"the writer's block").unwrap();
    opened.flush().unwrap();
    // Another volume is out of its reach.
    let refused = io
        .open(&format!("volume-{other}"), None, true)
        .err()
        .unwrap();
    assert_eq!(refused.errno, 1, "{refused}");

    // A read-only attachment: its own identity reads, and cannot open for writing.
    let (_, ro) = attach_as(&app, &volume, "node-2", "ro").await;
    assert!(ro["auth_username"].as_str().unwrap().ends_with(".ro"));
    let reader = host_of(&ro).unwrap();
    let io = reader.io(&pool(), None).unwrap();
    let read = io.open(&image(&ro), None, true).unwrap();
    assert_eq!(read.read(0, 18).unwrap(), b"the writer's block");
    let no_write = io.open(&image(&ro), None, false).err().unwrap();
    assert_eq!(no_write.errno, 1, "{no_write}");
    // The same key does not reach the writer's identity's rights.
    let other_io = reader.io(&pool(), None).unwrap();
    assert!(other_io
        .open(&format!("volume-{other}"), None, true)
        .is_err());
}

async fn detach_fences_an_open_writer(app: TestApp) {
    let Some((app, conf)) = per_attachment_app(app).await else {
        return;
    };
    let volume = create(&app, json!({"size": 1})).await;
    let (attachment, info) = attach_as(&app, &volume, "node-1", "rw").await;
    let identity = info["auth_username"].as_str().unwrap().to_owned();
    let host = host_of(&info).unwrap();
    let io = host.io(&pool(), None).unwrap();
    let opened = io.open(&image(&info), None, false).unwrap();
    opened.write(0, b"before").unwrap();
    opened.flush().unwrap();

    let started = Instant::now();
    assert_eq!(app.delete_attachment(&attachment).await.status, 200);
    let detach_took = started.elapsed();
    assert!(!identity_exists(&conf, &identity), "the identity is gone");
    // The host still holds the image open: its next write fails within seconds.
    let mut failed_after = None;
    for _ in 0..100 {
        let wrote = opened.write(0, b"after").and_then(|()| opened.flush());
        if wrote.is_err() {
            failed_after = Some(started.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let failed_after = failed_after.expect("a fenced host cannot write");
    assert!(
        detach_took < Duration::from_secs(2),
        "detach took {detach_took:?}"
    );
    assert!(failed_after < Duration::from_secs(10), "{failed_after:?}");
    println!("detach {detach_took:?}, writes refused after {failed_after:?}");
    // What it wrote before stays; what it tried after did not land.
    let check = admin(&conf);
    let io = check.io(&pool(), None).unwrap();
    let data = io
        .open(&image(&info), None, true)
        .unwrap()
        .read(0, 6)
        .unwrap();
    assert_eq!(data, b"before");
}

/// A multiattach volume takes two writers at once (no exclusive lock to pass around);
/// each host's identity is its own.
async fn two_writers_share_a_multiattach_volume(app: TestApp) {
    let Some((app, _conf)) = per_attachment_app(app).await else {
        return;
    };
    app.create_multiattach_type("ma").await;
    let volume = create(&app, json!({"size": 1, "volume_type": "ma"})).await;
    let (_, first) = attach_as(&app, &volume, "node-1", "rw").await;
    let (_, second) = attach_as(&app, &volume, "node-2", "rw").await;
    assert_ne!(first["auth_username"], second["auth_username"]);
    let hosts = [host_of(&first).unwrap(), host_of(&second).unwrap()];
    std::thread::scope(|scope| {
        for (n, host) in hosts.iter().enumerate() {
            let name = image(&first);
            scope.spawn(move || {
                let io = host.io(&pool(), None).unwrap();
                let opened = io.open(&name, None, false).unwrap();
                for round in 0..20u64 {
                    let offset = (n as u64 * 1_048_576) + round * 4096;
                    opened.write(offset, &[n as u8 + 1; 4096]).unwrap();
                }
                opened.flush().unwrap();
            });
        }
    });
    let io = hosts[0].io(&pool(), None).unwrap();
    let opened = io.open(&image(&first), None, true).unwrap();
    assert_eq!(opened.read(0, 1).unwrap(), [1]);
    assert_eq!(opened.read(1_048_576, 1).unwrap(), [2]);
}

/// A host of a volume made from a snapshot reads through to the data of the image it
/// is a clone of (read-only caps on it), and writes only its own.
async fn a_clone_reads_through_to_its_parent(app: TestApp) {
    let Some((app, conf)) = per_attachment_app(app).await else {
        return;
    };
    let source = create(&app, json!({"size": 1})).await;
    {
        let cluster = admin(&conf);
        let io = cluster.io(&pool(), None).unwrap();
        let opened = io.open(&format!("volume-{source}"), None, false).unwrap();
        opened.write(8192, b"from the parent").unwrap();
        opened.flush().unwrap();
    }
    let taken = app
        .request(Method::POST, "/v3/p1/snapshots")
        .json(&json!({"snapshot": {"volume_id": source}}))
        .send()
        .await;
    let snapshot = str_of(&taken.json["snapshot"], "id");
    let clone = create(&app, json!({"snapshot_id": snapshot})).await;
    let (_, info) = attach_as(&app, &clone, "node-1", "rw").await;
    let host = host_of(&info).unwrap();
    let io = host.io(&pool(), None).unwrap();
    let opened = io.open(&image(&info), None, false).unwrap();
    assert_eq!(opened.read(8192, 15).unwrap(), b"from the parent");
    opened.write(8192, b"from the child!").unwrap();
    opened.flush().unwrap();
    let parent = io
        .open(&format!("volume-{source}"), None, false)
        .err()
        .unwrap();
    assert_eq!(parent.errno, 1, "{parent}");
}

/// The cluster's identities follow the database: one removed by hand comes back with
/// the key its host holds, one nobody backs is fenced and removed; `check` reports both
/// before the repair.
async fn reconciliation_puts_identities_back_and_removes_strays(app: TestApp) {
    let Some((app, conf)) = per_attachment_app(app).await else {
        return;
    };
    let volume = create(&app, json!({"size": 1})).await;
    let (_, info) = attach_as(&app, &volume, "node-1", "rw").await;
    let identity = info["auth_username"].as_str().unwrap().to_owned();
    let cluster = admin(&conf);
    cluster
        .mon_command(
            &json!({"prefix": "auth rm", "entity": format!("client.{identity}")}),
            None,
        )
        .unwrap();
    let backend = identity.split('.').nth(1).unwrap();
    let stray = format!("ca.{backend}.{volume}.000000000000.rw");
    cluster
        .mon_command(
            &json!({"prefix": "auth get-or-create", "entity": format!("client.{stray}"),
                    "caps": ["mon", "allow r"]}),
            None,
        )
        .unwrap();
    let backends = app.backends();
    let driver = &backends.iter().next().unwrap().driver;
    let drift = driver.reconcile(false).await.unwrap();
    assert!(
        drift
            .iter()
            .any(|d| d.contains(&identity) && d.contains("missing")),
        "{drift:?}"
    );
    assert!(drift.iter().any(|d| d.contains(&stray)), "{drift:?}");
    let repaired = driver.reconcile(true).await.unwrap();
    assert_eq!(repaired.len(), 2, "{repaired:?}");
    assert!(identity_exists(&conf, &identity));
    assert!(!identity_exists(&conf, &stray));
    // The host's key works again.
    let host = host_of(&info).unwrap();
    let io = host.io(&pool(), None).unwrap();
    io.open(&image(&info), None, false)
        .unwrap()
        .write(0, b"x")
        .unwrap();
    assert_eq!(driver.reconcile(false).await.unwrap(), Vec::<String>::new());
}

/// `attach:single_writer`: readers beside one writer; the writer's role passes to
/// another host only through the first one's detach, which fences it first.
async fn single_writer_hands_over_after_the_fence(app: TestApp) {
    let Some((app, _conf)) = per_attachment_app(app).await else {
        return;
    };
    app.create_type(
        "sw",
        json!({"multiattach": "<is> True", "attach:single_writer": "<is> True"}),
    )
    .await;
    let volume = create(&app, json!({"size": 1, "volume_type": "sw"})).await;
    let (first, old) = attach_as(&app, &volume, "node-1", "rw").await;
    let (_, reader) = attach_as(&app, &volume, "node-2", "ro").await;
    let refused = app
        .post_attachment(
            json!({"volume_uuid": volume, "instance_uuid": uuid::Uuid::new_v4().to_string(),
                   "connector": conn_for("node-3", "/dev/vdb"), "mode": "rw"}),
            "3.54",
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    let old_host = host_of(&old).unwrap();
    let io = old_host.io(&pool(), None).unwrap();
    let writer = io.open(&image(&old), None, false).unwrap();
    writer.write(0, b"old").unwrap();
    writer.flush().unwrap();

    assert_eq!(app.delete_attachment(&first).await.status, 200);
    let (_, new) = attach_as(&app, &volume, "node-3", "rw").await;
    let new_host = host_of(&new).unwrap();
    let io = new_host.io(&pool(), None).unwrap();
    let taken = io.open(&image(&new), None, false).unwrap();
    taken.write(0, b"new").unwrap();
    taken.flush().unwrap();
    // The old writer is cut off (once the OSD has the map with its blocklist entry);
    // the reader reads the new writer's data.
    let cut_off = (0..50).any(|_| {
        let failed = writer
            .write(0, b"old")
            .and_then(|()| writer.flush())
            .is_err();
        if !failed {
            std::thread::sleep(Duration::from_millis(100));
        }
        failed
    });
    assert!(cut_off, "the old writer still writes");
    let reading = host_of(&reader).unwrap();
    let io = reading.io(&pool(), None).unwrap();
    let read = io.open(&image(&reader), None, true).unwrap();
    assert_eq!(read.read(0, 3).unwrap(), b"new");
}

backend_tests!(
    single_writer_hands_over_after_the_fence,
    per_attachment_keys_reach_their_volume_and_nothing_else,
    detach_fences_an_open_writer,
    two_writers_share_a_multiattach_volume,
    a_clone_reads_through_to_its_parent,
    reconciliation_puts_identities_back_and_removes_strays,
);

/// An image's bytes go into a new volume's image through librbd (blocks of zeros left
/// unwritten) and come out again in order, as creating from and uploading to Glance use
/// them.
#[tokio::test]
async fn image_data_goes_in_and_comes_out() {
    let Some(conf) = ceph_conf() else {
        return;
    };
    let spec: cinder_attach::backend::BackendSpec = format!("data=rbd,conf={conf},pool={}", pool())
        .parse()
        .unwrap();
    let (driver, _) = spec
        .build(std::sync::Arc::new(cinder_attach::backend::NoRecords))
        .unwrap();
    let volume = cinder_attach::domain::ids::VolumeId::generate();
    driver.create_volume(volume, 1).await.unwrap();
    let mut data = vec![0u8; 3 << 20];
    for (i, byte) in data.iter_mut().enumerate().skip(1 << 20) {
        *byte = (i % 251) as u8;
    }
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let sent = data.clone();
    tokio::spawn(async move {
        for chunk in sent.chunks(100_000) {
            tx.send(axum::body::Bytes::copy_from_slice(chunk))
                .await
                .unwrap();
        }
    });
    assert_eq!(driver.write_data(volume, rx).await.unwrap(), 3 << 20);
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let reader = driver.clone();
    let reading = tokio::spawn(async move { reader.read_data(volume, tx).await });
    let mut back = Vec::new();
    while let Some(chunk) = rx.recv().await {
        back.extend_from_slice(&chunk.unwrap());
    }
    reading.await.unwrap().unwrap();
    assert_eq!(back.len() as u64, GIB, "the whole volume comes out");
    assert_eq!(&back[..data.len()], &data[..]);
    assert!(back[data.len()..].iter().all(|b| *b == 0));
    driver.delete_volume(volume).await.unwrap();
}

#[test]
fn unknown_credentials_are_refused() {
    let spec: cinder_attach::backend::BackendSpec =
        "c=rbd,pool=volumes,credentials=everyone".parse().unwrap();
    let refused = spec
        .build(std::sync::Arc::new(cinder_attach::backend::NoRecords))
        .err()
        .unwrap();
    assert!(
        refused.contains("neither shared nor per-attachment"),
        "{refused}"
    );
}

/// Two processes serve one per-attachment backend on one database: a detach through one
/// fences the host an attach through the other let in. A process killed between the
/// database's decision and the cluster's change leaves the cluster behind; the next
/// process to start puts it right before it serves (here: an attachment whose row is
/// gone while its identity still lets the host write).
async fn processes_share_the_backend_and_a_restart_reconciles(backend: crate::support::Backend) {
    use crate::support::process::ServerProcess;
    let Some(conf) = ceph_conf() else {
        return;
    };
    let Some(db) = crate::support::TestDb::create(backend).await else {
        return;
    };
    db.store().await.close().await;
    let name = format!("c{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let spec = format!(
        "{name}=rbd,conf={conf},pool={},capacity_gb=1000,credentials=per-attachment",
        pool()
    );
    let start = || ServerProcess::start_with_backend("127.0.0.1:0", &db.url, &spec, &[]);
    let (a, b) = (start(), start());
    let (status, created) = a.send(
        "POST",
        "/v3/p1/volumes",
        Some(&json!({"volume": {"size": 1}})),
    );
    assert_eq!(status, 202, "{created}");
    let volume = str_of(&created["volume"], "id");
    let attach = |server: &ServerProcess, host: &str| {
        let body = json!({"attachment": {"volume_uuid": volume,
                          "instance_uuid": uuid::Uuid::new_v4().to_string(),
                          "connector": conn_for(host, "/dev/vdb")}});
        let (status, attached) = server.send("POST", "/v3/p1/attachments", Some(&body));
        assert_eq!(status, 200, "{attached}");
        (
            str_of(&attached["attachment"], "id"),
            attached["attachment"]["connection_info"].clone(),
        )
    };
    let writes = |info: &Value| -> bool {
        let Ok(host) = host_of(info) else {
            return false;
        };
        let Ok(io) = host.io(&pool(), None) else {
            return false;
        };
        io.open(&image(info), None, false)
            .and_then(|image| {
                image.write(0, b"x")?;
                image.flush()
            })
            .is_ok()
    };

    // Attached through a, detached through b: the host is cut off.
    let (first, info) = attach(&a, "node-1");
    let host = host_of(&info).unwrap();
    let io = host.io(&pool(), None).unwrap();
    let opened = io.open(&image(&info), None, false).unwrap();
    opened.write(0, b"a").unwrap();
    opened.flush().unwrap();
    let (status, _) = b.send("DELETE", &format!("/v3/p1/attachments/{first}"), None);
    assert_eq!(status, 200);
    let mut refused = false;
    for _ in 0..50 {
        if opened.write(0, b"b").and_then(|()| opened.flush()).is_err() {
            refused = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        refused,
        "the host detached through the other process still writes"
    );

    // Attached through b, then b is killed; the row goes as a detach decided but not
    // applied would leave it.
    let (second, info) = attach(&b, "node-2");
    assert!(writes(&info));
    drop(b);
    drop(a);
    db.execute(&format!(
        "update volume_attachment set deleted = true, attach_status = 'detached' \
          where id = '{second}'"
    ))
    .await
    .unwrap();
    assert!(writes(&info), "nothing has told the cluster yet");
    let c = start();
    assert!(
        !identity_exists(&conf, info["auth_username"].as_str().unwrap()),
        "the restarted process removed the identity before serving"
    );
    assert!(!writes(&info));
    drop(c);
}

process_tests!(processes_share_the_backend_and_a_restart_reconciles);

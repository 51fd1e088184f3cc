//! Backups kept on a Ceph pool (`--backup-driver ceph`, Cinder's `ceph` backup driver),
//! against the real cluster: a full backup is an image of the `backups` pool holding the
//! volume's data and nothing of its zeros; an incremental one is a clone of it holding
//! only the changed MiB; both restore byte for byte; the cluster keeps a parent while a
//! clone builds on it; deleting removes the images and manifests.

use std::time::{Duration, Instant};

use axum::http::Method;
use cinder_attach::backend::rbd::ceph::{ClientConfig, Parent};
use cinder_attach::backup::Repository;
use serde_json::{json, Value};

use crate::api::backups::{
    admin, backed_up, member, noise, same_bytes, wait_backup, wait_volume, with_repository,
    with_repository_checked, write_at, MIB,
};
use crate::rbd::{admin as ceph_admin, ceph_conf};
use crate::support::helpers::str_of;
use crate::support::TestApp;

fn backup_pool() -> String {
    std::env::var("CEPH_BACKUP_POOL").unwrap_or_else(|_| "backups".to_owned())
}

fn image_of(volume: &str, backup: &Value) -> String {
    format!("volume-{volume}.backup-{}", str_of(backup, "id"))
}

/// Bytes the backup's image holds of its own, and its parent; `None` when it is gone.
fn stored(conf: &str, volume: &str, backup: &Value) -> Option<(u64, Option<Parent>)> {
    let cluster = ceph_admin(conf);
    let io = cluster.io(&backup_pool(), None).unwrap();
    let image = io.open(&image_of(volume, backup), None, true).ok()?;
    Some((image.allocated_bytes().unwrap(), image.parent().unwrap()))
}

fn manifest_exists(conf: &str, volume: &str, backup: &Value) -> bool {
    let cluster = ceph_admin(conf);
    let io = cluster.io(&backup_pool(), None).unwrap();
    let name = format!("{}.manifest", image_of(volume, backup));
    io.read_object(&name).is_ok()
}

/// Waits until the backup `id` is deleted (404).
async fn wait_gone(app: &TestApp, id: &str) {
    let path = format!("/v3/p1/backups/{id}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while admin(app, Method::GET, &path, None).await.status != 404 {
        assert!(Instant::now() < deadline, "never deleted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The cluster's conf file and its admin, as a backup repository's client.
fn admin_client() -> Option<(String, ClientConfig)> {
    let conf = ceph_conf()?;
    let client = ClientConfig {
        conf_file: Some(conf.clone()),
        user: "admin".into(),
        ..ClientConfig::default()
    };
    Some((conf, client))
}

async fn backups_live_on_the_pool(app: TestApp) {
    let Some((conf, client)) = admin_client() else {
        return;
    };
    let app = with_repository(app, Repository::ceph(client, backup_pool()));
    let fields = json!({"size": 1, "name": "db"});
    let volume = str_of(&app.create_volume(fields).await, "id");
    let file = app.volume_file(&volume);
    write_at(&file, 0, &noise(8 * MIB, 1));
    write_at(&file, 700 * MIB as u64, &noise(MIB, 2));

    let full = backed_up(&app, json!({"volume_id": volume})).await;
    assert_eq!(full["container"], backup_pool().as_str(), "the pool");
    assert_eq!(full["object_count"], 2);
    let (bytes, parent) = stored(&conf, &volume, &full).expect("the full backup's image");
    assert_eq!(bytes, 9 * MIB as u64, "the data, none of the zeros");
    assert_eq!(parent, None);
    let before = app.volumes_dir.join("before");
    std::fs::copy(&file, &before).unwrap();

    // One MiB changes: the incremental backup is a clone holding that MiB.
    write_at(&file, 3 * MIB as u64, &noise(MIB, 3));
    // And a MiB of data becomes zeros: the clone must not read the parent's through.
    write_at(&file, 700 * MIB as u64, &vec![0u8; MIB]);
    let incremental = json!({"volume_id": volume, "incremental": true});
    let incremental = backed_up(&app, incremental).await;
    assert_eq!(incremental["is_incremental"], true);
    let (bytes, parent) = stored(&conf, &volume, &incremental).expect("its image");
    assert_eq!(
        bytes,
        2 * MIB as u64,
        "the changed MiB and the MiB of zeros"
    );
    let parent = parent.expect("a clone");
    assert_eq!(parent.image, image_of(&volume, &full));
    assert_eq!(parent.snapshot, "backup");

    // Restored onto a new volume and over the source: the same bytes.
    let id = str_of(&incremental, "id");
    let path = format!("/v3/p1/backups/{id}/restore");
    let restored = member(&app, Method::POST, &path, Some(json!({"restore": {}}))).await;
    assert_eq!(restored.status, 202, "{}", restored.text);
    let target = str_of(&restored.json["restore"], "volume_id");
    wait_volume(&app, &target, "available").await;
    wait_backup(&app, &id, "available").await;
    assert!(same_bytes(&file, &app.volume_file(&target)));
    let full_id = str_of(&full, "id");
    let path = format!("/v3/p1/backups/{full_id}/restore");
    let body = json!({"restore": {"volume_id": volume}});
    let restored = member(&app, Method::POST, &path, Some(body)).await;
    assert_eq!(restored.status, 202, "{}", restored.text);
    wait_backup(&app, &full_id, "available").await;
    wait_volume(&app, &volume, "available").await;
    assert!(same_bytes(&before, &file));

    // The record names Cinder's ceph driver.
    let path = format!("/v3/p1/backups/{id}/export_record");
    let exported = admin(&app, Method::GET, &path, None).await;
    assert_eq!(exported.status, 200, "{}", exported.text);
    assert_eq!(
        exported.json["backup-record"]["backup_service"],
        "cinder.backup.drivers.ceph.CephBackupDriver"
    );

    // A pool that is not a name is refused before anything is recorded.
    let bad = json!({"backup": {"volume_id": volume, "container": "a/b"}});
    let refused = member(&app, Method::POST, "/v3/p1/backups", Some(bad)).await;
    assert_eq!(refused.status, 400, "{}", refused.text);

    // Deleted, the incremental then the full: images and manifests are gone.
    for backup in [&incremental, &full] {
        let path = format!("/v3/p1/backups/{}", str_of(backup, "id"));
        wait_backup(&app, &str_of(backup, "id"), "available").await;
        let deleted = member(&app, Method::DELETE, &path, None).await;
        assert_eq!(deleted.status, 202, "{}", deleted.text);
        wait_gone(&app, &str_of(backup, "id")).await;
        assert_eq!(stored(&conf, &volume, backup), None);
        assert!(!manifest_exists(&conf, &volume, backup));
    }
}

/// As Cinder's backup service with a driver that fails `check_for_setup_error`: while
/// the pool is missing, backup requests find no service (503) and the host's
/// `cinder-backup` sends no heartbeat; once the pool exists, the next check lets them in.
async fn backups_wait_for_their_pool(app: TestApp) {
    let Some((conf, client)) = admin_client() else {
        return;
    };
    let pool = format!("late-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let repository = Repository::ceph(client, pool.clone());
    let app = with_repository_checked(app, repository, false);
    let service = &app.state.service;
    service
        .keep_setting_backups_up(Duration::from_millis(200))
        .await;
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let body = json!({"backup": {"volume_id": volume}});
    let refused = member(&app, Method::POST, "/v3/p1/backups", Some(body.clone())).await;
    assert_eq!(refused.status, 503, "{}", refused.text);
    assert_eq!(
        refused.json["serviceUnavailable"]["message"],
        "Service cinder-backup could not be found."
    );
    // The heartbeat leaves a backup service that cannot work alone.
    let later = chrono::Utc::now() + chrono::Duration::minutes(5);
    let hosts = ["test-host".to_owned()];
    app.store
        .heartbeat(&hosts, Some("cinder-backup"), later)
        .await
        .unwrap();
    let services = app
        .store
        .list_services(Some("test-host"), None)
        .await
        .unwrap();
    for service in services.iter().filter(|s| s.host == "test-host") {
        // (PostgreSQL keeps microseconds.)
        let reported = service.updated_at > Some(later - chrono::Duration::seconds(1));
        assert_eq!(reported, service.binary != "cinder-backup", "{service:?}");
    }

    let cluster = ceph_admin(&conf);
    let create = json!({"prefix": "osd pool create", "pool": pool, "pg_num": 8});
    cluster.mon_command(&create, None).unwrap();
    let enable = json!({"prefix": "osd pool application enable", "pool": pool, "app": "rbd"});
    cluster.mon_command(&enable, None).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let made = loop {
        let made = member(&app, Method::POST, "/v3/p1/backups", Some(body.clone())).await;
        if made.status != 503 || Instant::now() > deadline {
            break made;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(made.status, 202, "{}", made.text);
    let id = str_of(&made.json["backup"], "id");
    let done = wait_backup(&app, &id, "available").await;
    assert_eq!(done["container"], pool.as_str());
    let deleted = admin(&app, Method::DELETE, &format!("/v3/p1/backups/{id}"), None).await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
    wait_gone(&app, &id).await;
    let remove = json!({"prefix": "osd pool delete", "pool": pool, "pool2": pool,
                        "yes_i_really_really_mean_it": true});
    cluster.mon_command(&remove, None).unwrap();
}

backend_tests!(backups_live_on_the_pool, backups_wait_for_their_pool);

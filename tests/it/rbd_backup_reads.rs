//! Backups of volumes on the `rbd` backend read as Cinder's RBD driver hands volumes to
//! its Ceph backup driver, against the real cluster: each backup reads a snapshot of the
//! image (`backup.<id>.snap.<time>`), not the live image; an incremental one reads only
//! the chunks that changed since its parent's snapshot (`rbd export-diff --from-snap`);
//! only the newest such snapshot stays, and the volume is deleted with it.

use std::sync::Arc;

use axum::http::Method;
use cinder_attach::backend::{Backend, BackendSpec, ChangedChunks, NoRecords};
use cinder_attach::backup::manifest::CHUNK;
use cinder_attach::backup::Repository;
use cinder_attach::domain::ids::{BackupId, VolumeId};
use serde_json::json;

use crate::api::backups::{admin, backed_up, member, noise, wait_backup, wait_volume, MIB};
use crate::rbd::{admin as ceph_admin, ceph_conf, pool};
use crate::support::helpers::str_of;
use crate::support::TestApp;

const M: u64 = MIB as u64;

fn write_image(conf: &str, volume: &str, offset: u64, bytes: &[u8]) {
    let cluster = ceph_admin(conf);
    let io = cluster.io(&pool(), None).unwrap();
    let image = io.open(&format!("volume-{volume}"), None, false).unwrap();
    image.write(offset, bytes).unwrap();
    image.flush().unwrap();
}

fn read_image(conf: &str, volume: &str, offset: u64, len: usize) -> Vec<u8> {
    let cluster = ceph_admin(conf);
    let io = cluster.io(&pool(), None).unwrap();
    let image = io.open(&format!("volume-{volume}"), None, true).unwrap();
    image.read(offset, len).unwrap()
}

fn backup_snapshots(conf: &str, volume: &str) -> Vec<String> {
    let cluster = ceph_admin(conf);
    let io = cluster.io(&pool(), None).unwrap();
    let image = io.open(&format!("volume-{volume}"), None, true).unwrap();
    let snapshots = image.snapshots().unwrap();
    snapshots
        .into_iter()
        .filter(|s| s.starts_with("backup."))
        .collect()
}

/// What `read_backup_data` sends for `backup`.
async fn read_for(
    driver: &Arc<dyn Backend>,
    volume: VolumeId,
    backup: BackupId,
    changed: Option<Arc<ChangedChunks>>,
) -> Vec<u8> {
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let reader = driver.clone();
    let reading =
        tokio::spawn(async move { reader.read_backup_data(volume, backup, changed, tx).await });
    let mut back = Vec::new();
    while let Some(block) = rx.recv().await {
        back.extend_from_slice(&block.unwrap());
    }
    reading.await.unwrap().unwrap();
    back
}

/// The backend's side alone: the snapshot, the changed chunks, what is read and kept.
#[tokio::test]
async fn a_backup_reads_a_snapshot_and_an_incremental_only_what_changed() {
    let Some(conf) = ceph_conf() else {
        return;
    };
    let spec: BackendSpec = format!("reads=rbd,conf={conf},pool={}", pool())
        .parse()
        .unwrap();
    let (driver, _) = spec.build(Arc::new(NoRecords)).unwrap();
    let volume = VolumeId::generate();
    let name = volume.to_string();
    driver.create_volume(volume, 1).await.unwrap();
    write_image(&conf, &name, 0, &noise(8 * MIB, 1));
    write_image(&conf, &name, 700 * M, &noise(MIB, 2));

    let (first, second, third) = (
        BackupId::generate(),
        BackupId::generate(),
        BackupId::generate(),
    );
    let changed = driver
        .begin_backup_read(volume, first, None, CHUNK as u64)
        .await;
    assert_eq!(changed.unwrap(), None, "a full backup reads everything");
    let taken = backup_snapshots(&conf, &name);
    assert_eq!(taken.len(), 1, "{taken:?}");
    assert!(
        taken[0].starts_with(&format!("backup.{first}.snap.")),
        "{taken:?}"
    );
    // Written after the snapshot: the backup does not see it.
    write_image(&conf, &name, 3 * M, &noise(MIB, 3));
    write_image(&conf, &name, 700 * M, &vec![0u8; MIB]);
    let full = read_for(&driver, volume, first, None).await;
    assert_eq!(full.len() as u64, 1024 * M);
    assert_eq!(&full[..8 * MIB], &noise(8 * MIB, 1)[..]);
    assert_eq!(&full[700 * MIB..701 * MIB], &noise(MIB, 2)[..]);
    driver.end_backup_read(volume, first, true).await.unwrap();

    // The next backup reads the two changed MiB only, as they are now.
    let changed = driver
        .begin_backup_read(volume, second, Some(first), CHUNK as u64)
        .await
        .unwrap()
        .expect("the parent's snapshot is kept");
    assert_eq!(changed.ranges(), vec![(3 * M, M), (700 * M, M)]);
    let read = read_for(&driver, volume, second, Some(Arc::new(changed))).await;
    assert_eq!(read.len(), 2 * MIB);
    assert_eq!(&read[..MIB], &noise(MIB, 3)[..]);
    assert!(read[MIB..].iter().all(|b| *b == 0));
    driver.end_backup_read(volume, second, true).await.unwrap();
    let kept = backup_snapshots(&conf, &name);
    assert_eq!(kept.len(), 1, "only the newest stays: {kept:?}");
    assert!(kept[0].starts_with(&format!("backup.{second}.snap.")));

    // A backup that failed leaves the last stored one's snapshot alone.
    driver
        .begin_backup_read(volume, third, Some(second), CHUNK as u64)
        .await
        .unwrap();
    driver.end_backup_read(volume, third, false).await.unwrap();
    assert_eq!(backup_snapshots(&conf, &name), kept);
    // Nothing changed since: nothing to read.
    let changed = driver
        .begin_backup_read(volume, third, Some(second), CHUNK as u64)
        .await
        .unwrap()
        .unwrap();
    assert!(changed.ranges().is_empty());
    driver.end_backup_read(volume, third, true).await.unwrap();

    // The volume goes, its backup's snapshot with it.
    driver.delete_volume(volume).await.unwrap();
    let cluster = ceph_admin(&conf);
    let io = cluster.io(&pool(), None).unwrap();
    assert!(io.open(&format!("volume-{name}"), None, true).is_err());
}

/// Through the API: full and incremental backups of an rbd volume into the Ceph backup
/// pool restore byte for byte, whatever the host wrote meanwhile; the volume's snapshot
/// for them is not offered to manage; the volume is deleted with it.
async fn rbd_volumes_back_up_from_snapshots(app: TestApp) {
    let Some(conf) = ceph_conf() else {
        return;
    };
    let spec = format!("ceph=rbd,conf={conf},pool={},capacity_gb=1000", pool());
    let app = app.with_backends(&[spec.as_str()]).await;
    let client = cinder_attach::backend::rbd::ceph::ClientConfig {
        conf_file: Some(conf.clone()),
        user: "admin".into(),
        ..Default::default()
    };
    let pool_name = std::env::var("CEPH_BACKUP_POOL").unwrap_or_else(|_| "backups".to_owned());
    let app = crate::api::backups::with_repository(app, Repository::ceph(client, pool_name));
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    write_image(&conf, &volume, 0, &noise(4 * MIB, 5));
    let full = backed_up(&app, json!({"volume_id": volume})).await;
    let before = read_image(&conf, &volume, 0, 8 * MIB);
    write_image(&conf, &volume, 5 * M + 1000, &noise(100_000, 6));
    write_image(&conf, &volume, 0, &vec![0u8; 300_000]);
    let incremental = json!({"volume_id": volume, "incremental": true});
    let incremental = backed_up(&app, incremental).await;
    assert_eq!(incremental["is_incremental"], true);
    let after = read_image(&conf, &volume, 0, 8 * MIB);
    assert_eq!(backup_snapshots(&conf, &volume).len(), 1);

    let shown = app.show_volume(&volume, "3.64").await;
    let host = str_of(&shown.json["volume"], "os-vol-host-attr:host");
    let path = format!(
        "/v3/p1/manageable_snapshots/detail?host={}",
        host.replace('#', "%23")
    );
    let manageable = admin(&app, Method::GET, &path, None).await;
    assert_eq!(manageable.status, 200, "{}", manageable.text);
    assert!(!manageable.text.contains("backup."), "{}", manageable.text);

    for (backup, expected) in [(&incremental, &after), (&full, &before)] {
        let id = str_of(backup, "id");
        let path = format!("/v3/p1/backups/{id}/restore");
        let restored = member(&app, Method::POST, &path, Some(json!({"restore": {}}))).await;
        assert_eq!(restored.status, 202, "{}", restored.text);
        let target = str_of(&restored.json["restore"], "volume_id");
        wait_volume(&app, &target, "available").await;
        wait_backup(&app, &id, "available").await;
        assert!(
            read_image(&conf, &target, 0, 8 * MIB) == *expected,
            "backup {id} restores what the volume held when it was taken"
        );
        assert!(read_image(&conf, &target, 8 * M, MIB)
            .iter()
            .all(|b| *b == 0));
    }

    let deleted = app
        .request(Method::DELETE, &format!("/v3/p1/volumes/{volume}"))
        .send()
        .await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while app.show_volume(&volume, "3.64").await.status != 404 {
        assert!(
            std::time::Instant::now() < deadline,
            "the volume was not deleted"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

backend_tests!(rbd_volumes_back_up_from_snapshots);

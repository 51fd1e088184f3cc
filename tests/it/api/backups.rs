//! Backups as Cinder runs them, with a real repository directory: full and incremental
//! backups written in the background, restores byte for byte (onto a new volume and
//! over an existing one), the rules that refuse, quotas, deletes, and exported records.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::Method;
use cinder_attach::backup::Repository;
use cinder_attach::service::{BackupSettings, Settings};
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::http::ADMIN_TOKEN;
use crate::support::{TestApp, TestResponse};

pub(crate) const V: &str = "3.64";
pub(crate) const MIB: usize = 1 << 20;

/// The app with a backup repository in a fresh directory.
fn with_backups(app: TestApp) -> (TestApp, PathBuf) {
    let dir = std::env::temp_dir().join(format!("cinder-attach-backups-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    (with_repository(app, Repository::new(dir.clone())), dir)
}

/// The app keeping backups in `repository`.
pub(crate) fn with_repository(app: TestApp, repository: Repository) -> TestApp {
    with_repository_checked(app, repository, true)
}

/// The app keeping backups in `repository`, set up (`ready`: as if its set-up check had
/// passed) or not yet.
pub(crate) fn with_repository_checked(
    app: TestApp,
    repository: Repository,
    ready: bool,
) -> TestApp {
    app.with_settings(settings_with_repository(repository, ready))
}

/// Settings keeping backups in `repository`, else the defaults.
pub(crate) fn settings_with_repository(repository: Repository, ready: bool) -> Settings {
    Settings {
        backups: Some(BackupSettings {
            repository,
            host: "test-host".into(),
            stale_after: Duration::from_secs(30),
            ready: Arc::new(AtomicBool::new(ready)),
        }),
        ..Settings::default()
    }
}

pub(crate) async fn member(
    app: &TestApp,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> TestResponse {
    call_as(app, MEMBER_P1, V, method, path, body).await
}

pub(crate) async fn admin(
    app: &TestApp,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> TestResponse {
    call_as(app, ADMIN_TOKEN, V, method, path, body).await
}

/// Pseudo-random bytes that do not compress.
pub(crate) fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

pub(crate) fn write_at(path: &Path, offset: u64, bytes: &[u8]) {
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.seek(SeekFrom::Start(offset)).unwrap();
    file.write_all(bytes).unwrap();
    file.sync_all().unwrap();
}

/// Whether two volume files hold the same bytes (compared a MiB at a time).
pub(crate) fn same_bytes(a: &Path, b: &Path) -> bool {
    let (mut a, mut b) = (
        std::fs::File::open(a).unwrap(),
        std::fs::File::open(b).unwrap(),
    );
    let (mut x, mut y) = (vec![0u8; MIB], vec![0u8; MIB]);
    loop {
        let n = a.read(&mut x).unwrap();
        let m = b.read(&mut y).unwrap();
        if n != m || x[..n] != y[..m] {
            return false;
        }
        if n == 0 {
            return true;
        }
    }
}

pub(crate) async fn backup_of(app: &TestApp, fields: Value) -> TestResponse {
    member(
        app,
        Method::POST,
        "/v3/p1/backups",
        Some(json!({ "backup": fields })),
    )
    .await
}

/// Waits until the backup has `status`; its detail.
pub(crate) async fn wait_backup(app: &TestApp, id: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let shown = admin(app, Method::GET, &format!("/v3/p1/backups/{id}"), None).await;
        assert_eq!(shown.status, 200, "{}", shown.text);
        if shown.json["backup"]["status"] == status {
            return shown.json["backup"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "backup never {status}: {}",
            shown.text
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) async fn wait_volume(app: &TestApp, id: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let shown = app.show_volume(id, V).await;
        if shown.json["volume"]["status"] == status {
            return shown.json["volume"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "volume never {status}: {}",
            shown.text
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) async fn backed_up(app: &TestApp, fields: Value) -> Value {
    let made = backup_of(app, fields).await;
    assert_eq!(made.status, 202, "{}", made.text);
    let id = str_of(&made.json["backup"], "id");
    wait_backup(app, &id, "available").await
}

pub(crate) fn data_object(dir: &Path, backup: &Value) -> PathBuf {
    let container = backup["container"].as_str().unwrap();
    dir.join(container)
        .join(format!("backup-{}.data", str_of(backup, "id")))
}

async fn backups_restore_byte_for_byte_and_incrementals_store_only_changes(app: TestApp) {
    let (app, dir) = with_backups(app);
    let fields = json!({"size": 1, "name": "db", "metadata": {"tier": "gold"}});
    let volume = str_of(&app.create_volume(fields).await, "id");
    let file = app.volume_file(&volume);
    write_at(&file, 0, &noise(8 * MIB, 1));
    write_at(&file, 700 * MIB as u64, &noise(MIB, 2));

    let full = backed_up(&app, json!({"volume_id": volume, "name": "nightly"})).await;
    assert_eq!(full["size"], 1);
    assert_eq!(full["is_incremental"], false);
    assert_eq!(full["object_count"], 2);
    assert_eq!(
        wait_volume(&app, &volume, "available").await["status"],
        "available"
    );
    let full_bytes = std::fs::metadata(data_object(&dir, &full)).unwrap().len();
    assert_eq!(
        full_bytes,
        9 * MIB as u64,
        "noise is stored as it is, zeros not at all"
    );
    let before = app.volumes_dir.join("before");
    std::fs::copy(&file, &before).unwrap();

    // One MiB changes: the incremental backup stores about one MiB.
    write_at(&file, 3 * MIB as u64, &noise(MIB, 3));
    let incremental = json!({"volume_id": volume, "incremental": true});
    let incremental = backed_up(&app, incremental).await;
    assert_eq!(incremental["is_incremental"], true);
    let stored = std::fs::metadata(data_object(&dir, &incremental))
        .unwrap()
        .len();
    assert!(
        stored >= MIB as u64 && stored < MIB as u64 + 4096,
        "{stored}"
    );
    let full_id = str_of(&full, "id");
    let parent = wait_backup(&app, &full_id, "available").await;
    assert_eq!(parent["has_dependent_backups"], true);

    // Restored onto a new volume: the same bytes, the source's name and metadata.
    let path = format!("/v3/p1/backups/{}/restore", str_of(&incremental, "id"));
    let restored = member(&app, Method::POST, &path, Some(json!({"restore": {}}))).await;
    assert_eq!(restored.status, 202, "{}", restored.text);
    let target = str_of(&restored.json["restore"], "volume_id");
    let shown = wait_volume(&app, &target, "available").await;
    wait_backup(&app, &str_of(&incremental, "id"), "available").await;
    assert!(same_bytes(&file, &app.volume_file(&target)));
    assert_eq!(shown["name"], "db");
    assert_eq!(shown["metadata"]["tier"], "gold");
    assert_eq!(
        shown["metadata"]["src_backup_id"],
        str_of(&incremental, "id")
    );

    // The full backup over the volume itself: what it held before the change.
    let path = format!("/v3/p1/backups/{full_id}/restore");
    let body = json!({"restore": {"volume_id": volume}});
    let restored = member(&app, Method::POST, &path, Some(body)).await;
    assert_eq!(restored.status, 202, "{}", restored.text);
    assert_eq!(restored.json["restore"]["volume_name"], "db");
    wait_backup(&app, &full_id, "available").await;
    wait_volume(&app, &volume, "available").await;
    assert!(same_bytes(&before, &file));

    // The full backup is not deleted while the incremental one builds on it.
    let path = format!("/v3/p1/backups/{full_id}");
    let refused = member(&app, Method::DELETE, &path, None).await;
    refused.assert_fault(
        400,
        "badRequest",
        "Incremental backups exist for this backup.",
    );
    let path = format!("/v3/p1/backups/{}", str_of(&incremental, "id"));
    assert_eq!(member(&app, Method::DELETE, &path, None).await.status, 202);
    let path = format!("/v3/p1/backups/{full_id}");
    wait_backup(&app, &full_id, "available").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while member(&app, Method::DELETE, &path, None).await.status != 202 {
        assert!(
            Instant::now() < deadline,
            "the parent never became deletable"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    while admin(&app, Method::GET, &path, None).await.status != 404 {
        assert!(Instant::now() < deadline, "the backup was never deleted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!data_object(&dir, &full).exists());
    std::fs::remove_dir_all(dir).ok();
}

async fn refusals_use_cinders_words(app: TestApp) {
    let unconfigured = backup_of(&app, json!({"volume_id": uuid::Uuid::nil()})).await;
    assert_eq!(unconfigured.status, 404, "{}", unconfigured.text);
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let off = backup_of(&app, json!({"volume_id": volume})).await;
    off.assert_fault(
        503,
        "serviceUnavailable",
        "Service cinder-backup could not be found.",
    );

    let (app, dir) = with_backups(app);
    let first = backup_of(&app, json!({"volume_id": volume, "incremental": true})).await;
    first.assert_fault(
        400,
        "badRequest",
        "Invalid backup: No backups available to do an incremental backup.",
    );
    app.attach_fully(&volume, I1, conn()).await;
    let in_use = backup_of(&app, json!({"volume_id": volume})).await;
    in_use.assert_fault(
        400,
        "badRequest",
        "Invalid volume: Backing up an in-use volume must use the force flag.",
    );
    let bad = backup_of(&app, json!({"volume_id": volume, "container": "../etc"})).await;
    assert_eq!(bad.status, 400, "{}", bad.text);

    // An admin who disables the host's cinder-backup stops backups, as in Cinder.
    let service = json!({"host": "test-host", "binary": "cinder-backup"});
    for (action, status) in [("disable", 503), ("enable", 202)] {
        let path = format!("/v3/p1/os-services/{action}");
        let set = admin(&app, Method::PUT, &path, Some(service.clone())).await;
        assert_eq!(set.status, 200, "{}", set.text);
        let fields = json!({"volume_id": volume, "force": true});
        let tried = backup_of(&app, fields).await;
        assert_eq!(tried.status, status, "{action}: {}", tried.text);
        if status == 503 {
            tried.assert_fault(
                503,
                "serviceUnavailable",
                "Service cinder-backup could not be found.",
            );
        } else {
            let id = str_of(&tried.json["backup"], "id");
            wait_backup(&app, &id, "available").await;
            let path = format!("/v3/p1/backups/{id}");
            assert_eq!(member(&app, Method::DELETE, &path, None).await.status, 202);
            let deadline = Instant::now() + Duration::from_secs(30);
            while admin(&app, Method::GET, &path, None).await.status != 404 {
                assert!(Instant::now() < deadline, "the backup was never deleted");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    let forced = backed_up(&app, json!({"volume_id": volume, "force": true})).await;
    assert_eq!(app.volume_status(&volume).await, "in-use");
    let id = str_of(&forced, "id");

    // Restores want an available volume at least as large as the backup.
    let path = format!("/v3/p1/backups/{id}/restore");
    let onto_in_use = json!({"restore": {"volume_id": volume}});
    let refused = member(&app, Method::POST, &path, Some(onto_in_use)).await;
    refused.assert_fault(
        400,
        "badRequest",
        "Invalid volume: Volume to be restored to must be available",
    );

    // Quotas: one backup allowed, and one is there.
    let quota = json!({"quota_set": {"backups": 1}});
    let set = admin(&app, Method::PUT, "/v3/p1/os-quota-sets/p1", Some(quota)).await;
    assert_eq!(set.status, 200, "{}", set.text);
    let over = backup_of(&app, json!({"volume_id": volume, "force": true})).await;
    over.assert_fault(
        413,
        "overLimit",
        "Maximum number of backups allowed (1) exceeded",
    );
    let usage = admin(
        &app,
        Method::GET,
        "/v3/p1/os-quota-sets/p1?usage=true",
        None,
    )
    .await;
    assert_eq!(
        usage.json["quota_set"]["backups"]["in_use"], 1,
        "{}",
        usage.text
    );
    assert_eq!(usage.json["quota_set"]["backup_gigabytes"]["in_use"], 1);

    // Admin actions: members may not, admins may; only available or error.
    let action = format!("/v3/p1/backups/{id}/action");
    let reset = json!({"os-reset_status": {"status": "error"}});
    let denied = member(&app, Method::POST, &action, Some(reset.clone())).await;
    assert_eq!(denied.status, 403, "{}", denied.text);
    let wrong = json!({"os-reset_status": {"status": "creating"}});
    let wrong = admin(&app, Method::POST, &action, Some(wrong)).await;
    wrong.assert_fault(
        400,
        "badRequest",
        "Backup status: creating is invalid, valid statuses are: ['available', 'error'].",
    );
    assert_eq!(
        admin(&app, Method::POST, &action, Some(reset)).await.status,
        202
    );
    let shown = wait_backup(&app, &id, "error").await;
    assert_eq!(shown["os-backup-project-attr:project_id"], "p1");
    let restore = json!({"restore": {}});
    let refused = member(&app, Method::POST, &path, Some(restore)).await;
    refused.assert_fault(
        400,
        "badRequest",
        "Invalid backup: Backup status must be available",
    );
    let force = json!({"os-force_delete": {}});
    assert_eq!(
        admin(&app, Method::POST, &action, Some(force)).await.status,
        202
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let shown = format!("/v3/p1/backups/{id}");
    while admin(&app, Method::GET, &shown, None).await.status != 404 {
        assert!(Instant::now() < deadline, "the backup was never deleted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    std::fs::remove_dir_all(dir).ok();
}

async fn records_export_and_import_and_snapshots_are_backed_up(app: TestApp) {
    let (app, dir) = with_backups(app);
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    write_at(&app.volume_file(&volume), 0, &noise(MIB, 9));
    let body = json!({"snapshot": {"volume_id": volume, "name": "s"}});
    let snapshot = member(&app, Method::POST, "/v3/p1/snapshots", Some(body)).await;
    assert_eq!(snapshot.status, 202, "{}", snapshot.text);
    let snapshot = str_of(&snapshot.json["snapshot"], "id");
    // The volume changes after the snapshot: the backup of the snapshot does not.
    write_at(&app.volume_file(&volume), 0, &noise(MIB, 10));
    let other = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let mismatch = backup_of(&app, json!({"volume_id": other, "snapshot_id": snapshot})).await;
    assert_eq!(mismatch.status, 400, "{}", mismatch.text);
    assert!(mismatch
        .text
        .contains("does not match with snapshot.volume_id"));
    let fields = json!({"volume_id": volume, "snapshot_id": snapshot, "metadata": {"k": "v"}});
    let of_snapshot = backed_up(&app, fields).await;
    assert_eq!(of_snapshot["snapshot_id"], snapshot.as_str());
    assert_eq!(of_snapshot["metadata"]["k"], "v");
    let id = str_of(&of_snapshot, "id");

    let path = format!("/v3/p1/backups/{id}/export_record");
    assert_eq!(member(&app, Method::GET, &path, None).await.status, 403);
    let exported = admin(&app, Method::GET, &path, None).await;
    assert_eq!(exported.status, 200, "{}", exported.text);
    let record = &exported.json["backup-record"];
    assert!(record["backup_service"]
        .as_str()
        .unwrap()
        .starts_with("cinder.backup.drivers"));
    let again = json!({"backup-record": record});
    let taken = admin(
        &app,
        Method::POST,
        "/v3/p1/backups/import_record",
        Some(again),
    )
    .await;
    taken.assert_fault(
        400,
        "badRequest",
        "Invalid backup: Backup already exists in database.",
    );

    // The same record under another id names the same objects, and Cinder takes it: both
    // records are live, and the delete of the first leaves the objects to the second.
    use base64::Engine;
    let engine = base64::engine::general_purpose::STANDARD;
    let url = engine
        .decode(record["backup_url"].as_str().unwrap())
        .unwrap();
    let mut fields: Value = serde_json::from_slice(&url).unwrap();
    let new_id = uuid::Uuid::new_v4().to_string();
    fields["id"] = json!(new_id);
    let url = engine.encode(fields.to_string());
    let body =
        json!({"backup-record": {"backup_service": record["backup_service"], "backup_url": url}});
    let imported = admin(
        &app,
        Method::POST,
        "/v3/p1/backups/import_record",
        Some(body),
    )
    .await;
    assert_eq!(imported.status, 201, "{}", imported.text);
    assert_eq!(imported.json["backup"]["id"], new_id.as_str());
    let path = format!("/v3/p1/backups/{id}");
    assert_eq!(admin(&app, Method::DELETE, &path, None).await.status, 202);
    wait_gone(&app, &path).await;
    let path = format!("/v3/p1/backups/{new_id}/restore");
    let restored = member(
        &app,
        Method::POST,
        &path,
        Some(json!({"restore": {"name": "back"}})),
    )
    .await;
    assert_eq!(restored.status, 202, "{}", restored.text);
    assert_eq!(restored.json["restore"]["volume_name"], "back");
    let target = str_of(&restored.json["restore"], "volume_id");
    wait_volume(&app, &target, "available").await;
    let mut head = vec![0u8; MIB];
    std::fs::File::open(app.volume_file(&target))
        .unwrap()
        .read_exact(&mut head)
        .unwrap();
    assert_eq!(
        head,
        noise(MIB, 9),
        "the snapshot's data, not the volume's later data"
    );

    // Deleted, it can be imported again under the same id: its row is brought back with
    // the record's columns. (The delete of the last record naming the objects removes
    // them; they are put back first.)
    let shown = admin(&app, Method::GET, &format!("/v3/p1/backups/{new_id}"), None).await;
    let container = dir.join(str_of(&shown.json["backup"], "container"));
    let saved = dir.join("saved");
    save_objects(&container, &saved);
    let path = format!("/v3/p1/backups/{new_id}");
    assert_eq!(admin(&app, Method::DELETE, &path, None).await.status, 202);
    wait_gone(&app, &path).await;
    put_back_objects(&saved, &container);
    let body =
        json!({"backup-record": {"backup_service": record["backup_service"], "backup_url": url}});
    let revived = admin(
        &app,
        Method::POST,
        "/v3/p1/backups/import_record",
        Some(body),
    )
    .await;
    assert_eq!(revived.status, 201, "{}", revived.text);
    let again = wait_backup(&app, &new_id, "available").await;
    for key in [
        "size",
        "object_count",
        "container",
        "volume_id",
        "snapshot_id",
        "data_timestamp",
    ] {
        assert_eq!(again[key], shown.json["backup"][key], "{key}");
    }
    assert_eq!(again["has_dependent_backups"], false);

    let garbage =
        json!({"backup-record": {"backup_service": record["backup_service"], "backup_url": "!!"}});
    let refused = admin(
        &app,
        Method::POST,
        "/v3/p1/backups/import_record",
        Some(garbage),
    )
    .await;
    refused.assert_fault(400, "badRequest", "Can't parse backup record.");
    let listed = member(
        &app,
        Method::GET,
        "/v3/p1/backups/detail?with_count=true",
        None,
    )
    .await;
    assert_eq!(listed.json["count"], 1, "{}", listed.text);
    let named = member(&app, Method::GET, "/v3/p1/backups?volume_id=nonsense", None).await;
    assert_eq!(named.json["backups"], json!([]));
    std::fs::remove_dir_all(dir).ok();
}

/// Copies the objects of a container aside.
fn save_objects(container: &Path, saved: &Path) {
    std::fs::create_dir_all(saved).unwrap();
    for entry in std::fs::read_dir(container).unwrap() {
        let object = entry.unwrap().path();
        std::fs::copy(&object, saved.join(object.file_name().unwrap())).unwrap();
    }
}

/// Puts objects copied aside back into their container.
fn put_back_objects(saved: &Path, container: &Path) {
    std::fs::create_dir_all(container).unwrap();
    for entry in std::fs::read_dir(saved).unwrap() {
        let object = entry.unwrap().path();
        std::fs::copy(&object, container.join(object.file_name().unwrap())).unwrap();
    }
}

/// Waits until `path` answers 404 (a delete done).
async fn wait_gone(app: &TestApp, path: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while admin(app, Method::GET, path, None).await.status != 404 {
        assert!(Instant::now() < deadline, "{path} is still there");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn volumes_are_made_from_backups(app: TestApp) {
    let (app, dir) = with_backups(app);
    let fields = json!({"size": 1, "name": "src", "metadata": {"k": "v"}});
    let volume = str_of(&app.create_volume(fields).await, "id");
    write_at(&app.volume_file(&volume), 5 * MIB as u64, &noise(MIB, 4));
    let backup = backed_up(&app, json!({"volume_id": volume})).await;
    let id = str_of(&backup, "id");

    let old = json!({"volume": {"backup_id": id}});
    let refused = member(&app, Method::POST, "/v3/p1/volumes", Some(old.clone())).await;
    assert_eq!(
        refused.status, 202,
        "3.64 takes backup_id: {}",
        refused.text
    );
    let made = str_of(&refused.json["volume"], "id");
    let shown = wait_volume(&app, &made, "available").await;
    assert_eq!(shown["size"], 1);
    assert_eq!(
        shown["name"], "src",
        "an unnamed volume takes the source's name"
    );
    assert_eq!(shown["metadata"]["src_backup_id"], id.as_str());
    assert!(same_bytes(
        &app.volume_file(&volume),
        &app.volume_file(&made)
    ));
    wait_backup(&app, &id, "available").await;

    let before = call_as(
        &app,
        MEMBER_P1,
        "3.46",
        Method::POST,
        "/v3/p1/volumes",
        Some(old),
    )
    .await;
    assert_eq!(before.status, 400, "{}", before.text);
    assert!(
        before.text.contains("'backup_id' was unexpected"),
        "{}",
        before.text
    );
    let small = json!({"volume": {"backup_id": id, "size": 0}});
    let small = member(&app, Method::POST, "/v3/p1/volumes", Some(small)).await;
    assert_eq!(small.status, 400, "{}", small.text);
    let both = json!({"volume": {"backup_id": id, "snapshot_id": uuid::Uuid::new_v4()}});
    let both = member(&app, Method::POST, "/v3/p1/volumes", Some(both)).await;
    assert_eq!(both.status, 400, "{}", both.text);
    let missing = json!({"volume": {"backup_id": uuid::Uuid::new_v4()}});
    let missing = member(&app, Method::POST, "/v3/p1/volumes", Some(missing)).await;
    missing.assert_fault(404, "itemNotFound", "could not be found.");
    std::fs::remove_dir_all(dir).ok();
}

/// A backup another driver made (the repository was switched, as an operator moving from
/// Cinder's Swift driver would): this one cannot read it, so it is neither restored,
/// deleted, reset nor exported (Cinder's words), and no incremental builds on it.
async fn another_drivers_backups_are_left_alone(app: TestApp) {
    let (app, dir) = with_backups(app);
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let ours = backed_up(&app, json!({"volume_id": volume, "name": "ours"})).await;
    let theirs = backed_up(&app, json!({"volume_id": volume, "name": "theirs"})).await;
    let theirs = str_of(&theirs, "id");
    let swift = "cinder.backup.drivers.swift.SwiftBackupDriver";
    app.db
        .execute(&format!(
            "update backups set service = '{swift}' where id = '{theirs}'"
        ))
        .await
        .unwrap();
    let refusal = |action: &str| {
        format!(
            "Invalid backup: {action} aborted, the backup service currently configured \
             [cinder.backup.drivers.posix.PosixBackupDriver] is not the backup service that \
             was used to create this backup [{swift}]."
        )
    };
    let path = format!("/v3/p1/backups/{theirs}");
    let restore = json!({"restore": {}});
    let restored = member(
        &app,
        Method::POST,
        &format!("{path}/restore"),
        Some(restore),
    )
    .await;
    restored.assert_fault(400, "badRequest", &refusal("Restore backup"));
    let create = json!({"volume": {"backup_id": theirs}});
    let created = member(&app, Method::POST, "/v3/p1/volumes", Some(create)).await;
    created.assert_fault(400, "badRequest", &refusal("Restore backup"));
    let exported = admin(&app, Method::GET, &format!("{path}/export_record"), None).await;
    exported.assert_fault(400, "badRequest", &refusal("Export record"));
    let reset = json!({"os-reset_status": {"status": "error"}});
    let action = format!("{path}/action");
    let reset = admin(&app, Method::POST, &action, Some(reset)).await;
    reset.assert_fault(400, "badRequest", &refusal("Reset backup status"));
    let deleted = member(&app, Method::DELETE, &path, None).await;
    deleted.assert_fault(400, "badRequest", &refusal("Delete backup"));
    let forced = json!({"os-force_delete": {}});
    let forced = admin(&app, Method::POST, &action, Some(forced)).await;
    forced.assert_fault(400, "badRequest", &refusal("Delete backup"));
    let shown = wait_backup(&app, &theirs, "available").await;
    assert_eq!(shown["name"], "theirs", "nothing changed: {shown}");
    // The refused create from it left no volume behind.
    let listed = member(&app, Method::GET, "/v3/p1/volumes", None).await;
    assert_eq!(listed.json["volumes"].as_array().unwrap().len(), 1);

    // The newer backup is another driver's: an incremental one builds on ours.
    let incremental = json!({"volume_id": volume, "incremental": true});
    let incremental = backed_up(&app, incremental).await;
    assert_eq!(incremental["is_incremental"], true);
    let parent = app
        .db
        .column(&format!(
            "select cast(parent_id as text) from backups where id = '{}'",
            str_of(&incremental, "id")
        ))
        .await;
    assert_eq!(parent, [str_of(&ours, "id")]);
    std::fs::remove_dir_all(dir).ok();
}

/// A record as `export_record` gave it, decoded.
async fn exported_fields(app: &TestApp, backup: &str) -> (Value, Value) {
    use base64::Engine;
    let path = format!("/v3/p1/backups/{backup}/export_record");
    let exported = admin(app, Method::GET, &path, None).await;
    assert_eq!(exported.status, 200, "{}", exported.text);
    let record = exported.json["backup-record"].clone();
    let url = base64::engine::general_purpose::STANDARD
        .decode(record["backup_url"].as_str().unwrap())
        .unwrap();
    (
        record["backup_service"].clone(),
        serde_json::from_slice(&url).unwrap(),
    )
}

async fn import(app: &TestApp, service: &Value, fields: &Value) -> TestResponse {
    use base64::Engine;
    let url = base64::engine::general_purpose::STANDARD.encode(fields.to_string());
    let body = json!({"backup-record": {"backup_service": service, "backup_url": url}});
    admin(
        app,
        Method::POST,
        "/v3/p1/backups/import_record",
        Some(body),
    )
    .await
}

/// Records crafted to reach outside the repository, count negative or hang a backup on
/// another project's: each a 400, nothing written, no file outside the repository
/// touched.
async fn hostile_backup_records_are_refused(app: TestApp) {
    let (app, dir) = with_backups(app);
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    write_at(&app.volume_file(&volume), 0, &noise(MIB, 3));
    let backup = str_of(&backed_up(&app, json!({"volume_id": volume})).await, "id");
    let (service, fields) = exported_fields(&app, &backup).await;
    // Files outside the repository that a crafted prefix would name.
    let outside = std::env::temp_dir().join(format!("outside-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&outside).unwrap();
    for suffix in ["manifest", "data", "data.part", "manifest.part"] {
        std::fs::write(outside.join(format!("x.{suffix}")), b"keep me").unwrap();
    }
    let climb = format!("{}{}/x", "../".repeat(12), outside.display());
    let shown = admin(&app, Method::GET, &format!("/v3/p1/backups/{backup}"), None).await;
    let container = dir.join(str_of(&shown.json["backup"], "container"));
    // A copy of the backup's objects under another prefix, for records that must get
    // past the read of their manifest.
    let copied = |crafted: &mut Value| {
        let prefix = format!("backup-{}", crafted["id"].as_str().unwrap());
        for object in ["manifest", "data"] {
            std::fs::copy(
                container.join(format!("backup-{backup}.{object}")),
                container.join(format!("{prefix}.{object}")),
            )
            .unwrap();
        }
        crafted["service_metadata"] = json!(prefix);
    };
    let before = app
        .db
        .column("select cast(count(*) as text) from backups")
        .await;
    let with = |key: &str, value: Value| {
        let mut crafted = fields.clone();
        crafted["id"] = json!(uuid::Uuid::new_v4().to_string());
        crafted[key] = value;
        crafted
    };
    let cases = [
        (
            "a prefix climbing out",
            with("service_metadata", json!(climb)),
            "prefix",
        ),
        (
            "an absolute prefix",
            with(
                "service_metadata",
                json!(format!("{}/x", outside.display())),
            ),
            "prefix",
        ),
        (
            "a prefix with a slash",
            with("service_metadata", json!("a/b")),
            "prefix",
        ),
        (
            "a hidden prefix",
            with("service_metadata", json!("..")),
            "prefix",
        ),
        (
            "a prefix with NUL",
            with("service_metadata", json!("x\u{0}y")),
            "prefix",
        ),
        (
            "a prefix with a newline",
            with("service_metadata", json!("x\ny")),
            "prefix",
        ),
        (
            "a long prefix",
            with("service_metadata", json!("p".repeat(300))),
            "prefix",
        ),
        (
            "a container climbing out",
            with("container", json!("../../tmp")),
            "container",
        ),
        (
            "an absolute container",
            with("container", json!("/tmp")),
            "container",
        ),
        (
            "a negative size",
            with("size", json!(-100)),
            "at least 1 GB",
        ),
        ("a size of 0", with("size", json!(0)), "at least 1 GB"),
    ];
    for (what, crafted, words) in cases {
        let refused = import(&app, &service, &crafted).await;
        assert_eq!(refused.status, 400, "{what}: {}", refused.text);
        assert!(refused.text.contains(words), "{what}: {}", refused.text);
    }
    let mut orphan = with("parent_id", json!(uuid::Uuid::new_v4().to_string()));
    copied(&mut orphan);
    let refused = import(&app, &service, &orphan).await;
    refused.assert_fault(400, "badRequest", "parent backup");
    // Another project's backup as a parent.
    let other = call_as(
        &app,
        "o:p2:member,reader",
        V,
        Method::POST,
        "/v3/p2/volumes",
        Some(json!({"volume": {"size": 1}})),
    )
    .await;
    let other = str_of(&other.json["volume"], "id");
    let theirs = call_as(
        &app,
        "o:p2:member,reader",
        V,
        Method::POST,
        "/v3/p2/backups",
        Some(json!({"backup": {"volume_id": other}})),
    )
    .await;
    assert_eq!(theirs.status, 202, "{}", theirs.text);
    let theirs = str_of(&theirs.json["backup"], "id");
    let deadline = Instant::now() + Duration::from_secs(60);
    while app
        .db
        .column(&format!("select status from backups where id = '{theirs}'"))
        .await
        != ["available"]
    {
        assert!(Instant::now() < deadline, "p2's backup never available");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut adopted = with("parent_id", json!(theirs));
    copied(&mut adopted);
    let adopted = import(&app, &service, &adopted).await;
    adopted.assert_fault(400, "badRequest", "parent backup");
    let after = app
        .db
        .column("select cast(count(*) as text) from backups")
        .await;
    assert_eq!(
        after,
        [(before[0].parse::<i64>().unwrap() + 1).to_string()],
        "only p2's own backup was added"
    );
    for suffix in ["manifest", "data", "data.part", "manifest.part"] {
        assert_eq!(
            std::fs::read(outside.join(format!("x.{suffix}"))).unwrap(),
            b"keep me"
        );
    }
    let usage = admin(
        &app,
        Method::GET,
        "/v3/p1/os-quota-sets/p1?usage=true",
        None,
    )
    .await;
    assert_eq!(
        usage.json["quota_set"]["backup_gigabytes"]["in_use"], 1,
        "{}",
        usage.text
    );
    // A parent of the project's own is recorded as one: it cannot go while the
    // imported child depends on it.
    let mut child = with("parent_id", json!(backup));
    copied(&mut child);
    let imported = import(&app, &service, &child).await;
    assert_eq!(imported.status, 201, "{}", imported.text);
    let parent = admin(&app, Method::GET, &format!("/v3/p1/backups/{backup}"), None).await;
    assert_eq!(
        parent.json["backup"]["has_dependent_backups"], true,
        "{}",
        parent.text
    );
    let refused = admin(
        &app,
        Method::DELETE,
        &format!("/v3/p1/backups/{backup}"),
        None,
    )
    .await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    std::fs::remove_dir_all(outside).ok();
    std::fs::remove_dir_all(dir).ok();
}

/// A record of a live backup imported under a new id (what tempest's export/import test
/// does, and Cinder takes): both restore, and deleting either leaves the objects to the
/// other; the last one's delete removes them.
async fn a_record_sharing_a_live_backups_objects_leaves_them_to_it(app: TestApp) {
    let (app, dir) = with_backups(app);
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let data = noise(MIB, 9);
    write_at(&app.volume_file(&volume), 0, &data);
    let backup = str_of(&backed_up(&app, json!({"volume_id": volume})).await, "id");
    let (service, mut fields) = exported_fields(&app, &backup).await;
    let alias = uuid::Uuid::new_v4().to_string();
    fields["id"] = json!(alias);
    let imported = import(&app, &service, &fields).await;
    assert_eq!(imported.status, 201, "{}", imported.text);
    wait_backup(&app, &alias, "available").await;
    let shown = admin(&app, Method::GET, &format!("/v3/p1/backups/{backup}"), None).await;
    let container = dir.join(str_of(&shown.json["backup"], "container"));
    let manifest = container.join(format!("backup-{backup}.manifest"));

    let restores_its_data = |id: String| {
        let app = &app;
        let data = &data;
        async move {
            let path = format!("/v3/p1/backups/{id}/restore");
            let restored = member(app, Method::POST, &path, Some(json!({"restore": {}}))).await;
            assert_eq!(restored.status, 202, "{}", restored.text);
            let target = str_of(&restored.json["restore"], "volume_id");
            wait_volume(app, &target, "available").await;
            wait_backup(app, &id, "available").await;
            let written = std::fs::read(app.volume_file(&target)).unwrap();
            assert_eq!(&written[..MIB], &data[..], "restored from {id}");
        }
    };
    // The alias goes first: the original's objects stay and still restore.
    let path = format!("/v3/p1/backups/{alias}");
    assert_eq!(admin(&app, Method::DELETE, &path, None).await.status, 202);
    wait_gone(&app, &path).await;
    assert!(manifest.exists(), "the live backup's objects were removed");
    restores_its_data(backup.clone()).await;

    // Imported again, and this time the original goes first: the alias keeps them.
    let again = uuid::Uuid::new_v4().to_string();
    fields["id"] = json!(again);
    assert_eq!(import(&app, &service, &fields).await.status, 201);
    wait_backup(&app, &again, "available").await;
    let path = format!("/v3/p1/backups/{backup}");
    assert_eq!(admin(&app, Method::DELETE, &path, None).await.status, 202);
    wait_gone(&app, &path).await;
    assert!(manifest.exists(), "the alias's objects were removed");
    restores_its_data(again.clone()).await;

    // The last record's delete removes them.
    let path = format!("/v3/p1/backups/{again}");
    assert_eq!(admin(&app, Method::DELETE, &path, None).await.status, 202);
    wait_gone(&app, &path).await;
    assert!(!manifest.exists(), "the objects outlived their last backup");
    std::fs::remove_dir_all(dir).ok();
}

backend_tests!(
    a_record_sharing_a_live_backups_objects_leaves_them_to_it,
    hostile_backup_records_are_refused,
    another_drivers_backups_are_left_alone,
    volumes_are_made_from_backups,
    backups_restore_byte_for_byte_and_incrementals_store_only_changes,
    refusals_use_cinders_words,
    records_export_and_import_and_snapshots_are_backed_up,
);

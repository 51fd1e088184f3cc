//! Backups of encrypted volumes, as Cinder takes them: the LUKS container copied as it
//! is, the backup holding a copy of its own of the volume's key (so it outlives the
//! volume), and restores only onto a volume of the backed-up volume's type, a new one
//! being made of that type.

use std::path::PathBuf;

use axum::http::Method;
use base64::Engine;
use cinder_attach::backup::Repository;
use cinder_attach::keys::{KeyManager, FIXED_KEY_ID};
use serde_json::{json, Value};

use super::backups::{
    admin, backed_up, member, noise, same_bytes, settings_with_repository, wait_backup,
    wait_volume, write_at, MIB,
};
use super::encryption::luks;
use crate::support::helpers::*;
use crate::support::TestApp;

/// The app with a backup repository in a fresh directory and the fixed-key manager.
fn with_keyed_backups(app: TestApp) -> (TestApp, PathBuf) {
    let dir = std::env::temp_dir().join(format!("cinder-attach-backups-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut settings = settings_with_repository(Repository::new(dir.clone()), true);
    settings.key_manager = KeyManager::fixed("00").unwrap();
    (app.with_settings(settings), dir)
}

/// The key id an exported backup record names.
async fn exported_key(app: &TestApp, backup: &str) -> Value {
    let path = format!("/v3/p1/backups/{backup}/export_record");
    let exported = admin(app, Method::GET, &path, None).await;
    assert_eq!(exported.status, 200, "{}", exported.text);
    let url = exported.json["backup-record"]["backup_url"]
        .as_str()
        .unwrap();
    let record = base64::engine::general_purpose::STANDARD
        .decode(url)
        .unwrap();
    let record: Value = serde_json::from_slice(&record).unwrap();
    record["encryption_key_id"].clone()
}

async fn restore(app: &TestApp, backup: &str, body: Value) -> crate::support::TestResponse {
    let path = format!("/v3/p1/backups/{backup}/restore");
    member(app, Method::POST, &path, Some(json!({ "restore": body }))).await
}

async fn encrypted_volumes_are_backed_up_with_a_key_of_their_own(app: TestApp) {
    let (app, dir) = with_keyed_backups(app);
    let secret = app.create_type("secret", json!({})).await;
    let path = format!("/v3/p1/types/{secret}/encryption");
    let made = app.send_json(Method::POST, &path, Some(luks())).await;
    assert_eq!(made.status, 200, "{}", made.text);
    let fields = json!({"size": 1, "volume_type": "secret", "name": "sealed"});
    let volume = str_of(&app.create_volume(fields).await, "id");
    // What a host wrote through LUKS: to the backup it is only bytes.
    write_at(&app.volume_file(&volume), 3 * MIB as u64, &noise(MIB, 9));

    let backup = backed_up(&app, json!({"volume_id": volume})).await;
    let id = str_of(&backup, "id");
    assert!(
        backup.get("encryption_key_id").is_none(),
        "the fixed key's id is not shown, as Cinder: {backup}"
    );
    assert_eq!(
        exported_key(&app, &id).await,
        FIXED_KEY_ID,
        "the backup keeps a key"
    );
    let shown = app.show_volume(&volume, "3.64").await;
    assert_eq!(shown.json["volume"]["encrypted"], true);
    assert!(shown.json["volume"].get("encryption_key_id").is_none());

    // Onto a volume of another type it cannot go: the key would not open it.
    let plain = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let refused = restore(&app, &id, json!({"volume_id": plain})).await;
    refused.assert_fault(
        400,
        "badRequest",
        "is different than the destination volume type",
    );
    assert_eq!(
        wait_volume(&app, &plain, "available").await["status"],
        "available"
    );
    wait_backup(&app, &id, "available").await;
    let asked = json!({"volume": {"backup_id": id, "volume_type": "__DEFAULT__"}});
    let refused = member(&app, Method::POST, "/v3/p1/volumes", Some(asked)).await;
    refused.assert_fault(
        400,
        "badRequest",
        "is different than the destination volume type",
    );

    // A new volume for the restore is made of the backed-up volume's type, even once that
    // volume is gone, and holds the same LUKS container.
    let copy = str_of(
        &app.create_volume(json!({"size": 1, "volume_type": "secret"}))
            .await,
        "id",
    );
    std::fs::copy(app.volume_file(&volume), app.volume_file(&copy)).unwrap();
    let deleted = app
        .request(Method::DELETE, &format!("/v3/p1/volumes/{volume}"))
        .send()
        .await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
    let started = restore(&app, &id, json!({})).await;
    assert_eq!(started.status, 202, "{}", started.text);
    let restored = str_of(&started.json["restore"], "volume_id");
    let shown = wait_volume(&app, &restored, "available").await;
    assert_eq!(shown["volume_type"], "secret", "{shown}");
    assert_eq!(shown["encrypted"], true);
    assert_eq!(shown["name"], "sealed");
    assert!(same_bytes(
        &app.volume_file(&copy),
        &app.volume_file(&restored)
    ));

    // Created from the backup (3.47+): of that type too; and over a volume of that type.
    let asked = json!({"volume": {"backup_id": id}});
    let made = member(&app, Method::POST, "/v3/p1/volumes", Some(asked)).await;
    assert_eq!(made.status, 202, "{}", made.text);
    let from_backup = str_of(&made.json["volume"], "id");
    let shown = wait_volume(&app, &from_backup, "available").await;
    assert_eq!(shown["volume_type"], "secret", "{shown}");
    assert!(same_bytes(
        &app.volume_file(&copy),
        &app.volume_file(&from_backup)
    ));
    wait_backup(&app, &id, "available").await;
    let over = str_of(
        &app.create_volume(json!({"size": 1, "volume_type": "secret"}))
            .await,
        "id",
    );
    let started = restore(&app, &id, json!({"volume_id": over})).await;
    assert_eq!(started.status, 202, "{}", started.text);
    wait_volume(&app, &over, "available").await;
    assert!(same_bytes(&app.volume_file(&copy), &app.volume_file(&over)));

    // The type is gone: a new volume for the restore cannot be made of it.
    wait_backup(&app, &id, "available").await;
    for volume in [&copy, &restored, &from_backup, &over] {
        let path = format!("/v3/p1/volumes/{volume}");
        assert_eq!(app.request(Method::DELETE, &path).send().await.status, 202);
        for _ in 0..600 {
            if app.show_volume(volume, "3.64").await.status == 404 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
    let removed = app
        .request(Method::DELETE, &format!("/v3/p1/types/{secret}"))
        .send()
        .await;
    assert_eq!(removed.status, 202, "{}", removed.text);
    let refused = restore(&app, &id, json!({})).await;
    refused.assert_fault(
        400,
        "badRequest",
        &format!("The source volume type '{secret}' is not available."),
    );
    std::fs::remove_dir_all(dir).ok();
}

backend_tests!(encrypted_volumes_are_backed_up_with_a_key_of_their_own);

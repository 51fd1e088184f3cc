//! A volume moved between two backends of the service (`os-migrate_volume`, and a retype
//! with `migration_policy: on-demand`): the data arrives byte for byte, the old copy goes,
//! `migration_status` ends `success`; Cinder's refusals with its words; a failed or
//! interrupted move leaves the volume where it was, `error` in `migration_status`, and no
//! new copy behind. `os-migrate_volume_completion` answers Nova's swap.

use std::time::{Duration, Instant};

use axum::http::Method;
use serde_json::{json, Value};

use super::backups::{noise, write_at, MIB};
use crate::support::helpers::*;
use crate::support::http::ADMIN_TOKEN;
use crate::support::{TestApp, TestResponse};

const HERE: &str = "test-host@file#file";
pub(crate) const THERE: &str = "test-host@file2#file2";

pub(crate) async fn two_backends(app: TestApp) -> TestApp {
    let (a, b) = (app.volumes_dir.join("a"), app.volumes_dir.join("b"));
    let specs = [
        format!("file=file,dir={}", a.display()),
        format!("file2=file,dir={}", b.display()),
    ];
    let specs: Vec<&str> = specs.iter().map(String::as_str).collect();
    app.with_backends(&specs).await
}

pub(crate) fn file_in(app: &TestApp, backend: &str, volume: &str) -> std::path::PathBuf {
    app.volumes_dir
        .join(backend)
        .join(format!("volume-{volume}"))
}

pub(crate) async fn admin(
    app: &TestApp,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> TestResponse {
    call_as(app, ADMIN_TOKEN, "3.64", method, path, body).await
}

pub(crate) async fn on_first_backend(app: &TestApp) -> String {
    let t = app
        .create_type("on-file", json!({"volume_backend_name": "file"}))
        .await;
    let _ = t;
    let volume = str_of(
        &app.create_volume(json!({"size": 1, "volume_type": "on-file"}))
            .await,
        "id",
    );
    let shown = admin(app, Method::GET, &format!("/v3/p1/volumes/{volume}"), None).await;
    assert_eq!(shown.json["volume"]["os-vol-host-attr:host"], HERE);
    volume
}

pub(crate) async fn migrate(app: &TestApp, volume: &str, fields: Value) -> TestResponse {
    let body = json!({"os-migrate_volume": fields});
    let path = format!("/v3/p1/volumes/{volume}/action");
    admin(app, Method::POST, &path, Some(body)).await
}

/// Waits for the move to end; the volume's detail.
async fn moved(app: &TestApp, volume: &str) -> Value {
    moved_within(app, volume, Duration::from_secs(60)).await
}

/// Waits up to `limit` for the move to end; the volume's detail.
pub(crate) async fn moved_within(app: &TestApp, volume: &str, limit: Duration) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let shown = admin(app, Method::GET, &format!("/v3/p1/volumes/{volume}"), None).await;
        let detail = shown.json["volume"].clone();
        if matches!(
            detail["migration_status"].as_str(),
            Some("success" | "error")
        ) {
            return detail;
        }
        assert!(Instant::now() < deadline, "still moving: {detail}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn an_available_volume_moves_with_its_data(app: TestApp) {
    let app = two_backends(app).await;
    let volume = on_first_backend(&app).await;
    write_at(&file_in(&app, "a", &volume), 3 * MIB as u64, &noise(MIB, 7));
    let started = migrate(&app, &volume, json!({"host": THERE, "lock_volume": true})).await;
    assert_eq!(started.status, 202, "{}", started.text);
    let detail = moved(&app, &volume).await;
    assert_eq!(detail["migration_status"], "success", "{detail}");
    assert_eq!(detail["os-vol-mig-status-attr:migstat"], "success");
    assert_eq!(detail["os-vol-host-attr:host"], THERE);
    assert_eq!(detail["status"], "available", "the lock is lifted");
    // The old copy goes after the move is recorded (as Cinder deletes the source volume
    // once migrate_volume_completion has run).
    let old = file_in(&app, "a", &volume);
    let deadline = Instant::now() + Duration::from_secs(5);
    while old.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!old.exists(), "the old copy goes");
    let bytes = std::fs::read(file_in(&app, "b", &volume)).unwrap();
    assert_eq!(bytes.len(), 1 << 30);
    assert_eq!(&bytes[3 * MIB..4 * MIB], noise(MIB, 7).as_slice());
    // It works where it is now: attached and detached again.
    let attachment = app.attach_fully(&volume, I1, conn()).await;
    assert_eq!(app.delete_attachment(&attachment).await.status, 200);
    app.assert_consistent(&volume).await;
}

async fn cinders_refusals_move_nothing(app: TestApp) {
    let app = two_backends(app).await;
    let volume = on_first_backend(&app).await;
    let path = format!("/v3/p1/volumes/{volume}/action");
    let body = json!({"os-migrate_volume": {"host": THERE}});
    let member = call_as(&app, MEMBER_P1, "3.64", Method::POST, &path, Some(body)).await;
    assert_eq!(member.status, 403, "{}", member.text);
    migrate(&app, &volume, json!({"host": "nowhere@x#x"}))
        .await
        .assert_fault(
            400,
            "badRequest",
            "Invalid host: No available service named nowhere@x#x",
        );
    migrate(&app, &volume, json!({"host": HERE}))
        .await
        .assert_fault(
            400,
            "badRequest",
            "Invalid host: Destination host must be different than the current host.",
        );
    migrate(&app, &volume, json!({"force_host_copy": true}))
        .await
        .assert_fault(400, "badRequest", "host");
    let snapshot = admin(
        &app,
        Method::POST,
        "/v3/p1/snapshots",
        Some(json!({"snapshot": {"volume_id": volume}})),
    )
    .await;
    assert_eq!(snapshot.status, 202, "{}", snapshot.text);
    migrate(&app, &volume, json!({"host": THERE}))
        .await
        .assert_fault(
            400,
            "badRequest",
            &format!("Invalid volume: Volume {volume} must not have snapshots."),
        );
    let attached = on_first_backend_named(&app).await;
    app.attach_fully(&attached, I1, conn()).await;
    migrate(&app, &attached, json!({"host": THERE}))
        .await
        .assert_fault(400, "badRequest", "attached");
    let errored = on_first_backend_named(&app).await;
    app.db
        .execute(&format!(
            "update volumes set status = 'error' where id = '{errored}'"
        ))
        .await
        .unwrap();
    migrate(&app, &errored, json!({"host": THERE}))
        .await
        .assert_fault(
            400,
            "badRequest",
            &format!(
                "Invalid volume: Volume {errored} status must be available or in-use, but current \
             status is: error."
            ),
        );
    for id in [&volume, &attached, &errored] {
        let shown = admin(&app, Method::GET, &format!("/v3/p1/volumes/{id}"), None).await;
        assert_eq!(shown.json["volume"]["os-vol-host-attr:host"], HERE);
        assert_eq!(shown.json["volume"]["migration_status"], Value::Null);
    }
}

/// Another volume on the first backend (its type exists already).
pub(crate) async fn on_first_backend_named(app: &TestApp) -> String {
    str_of(
        &app.create_volume(json!({"size": 1, "volume_type": "on-file"}))
            .await,
        "id",
    )
}

async fn a_retype_on_demand_moves_the_volume(app: TestApp) {
    let app = two_backends(app).await;
    let volume = on_first_backend(&app).await;
    write_at(&file_in(&app, "a", &volume), 0, &noise(MIB, 9));
    app.create_type("on-file2", json!({"volume_backend_name": "file2"}))
        .await;
    let path = format!("/v3/p1/volumes/{volume}/action");
    let never = json!({"os-retype": {"new_type": "on-file2", "migration_policy": "never"}});
    let refused = call_as(&app, MEMBER_P1, "3.64", Method::POST, &path, Some(never)).await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    let body = json!({"os-retype": {"new_type": "on-file2", "migration_policy": "on-demand"}});
    let retyped = call_as(&app, MEMBER_P1, "3.64", Method::POST, &path, Some(body)).await;
    assert_eq!(retyped.status, 202, "{}", retyped.text);
    let detail = moved(&app, &volume).await;
    assert_eq!(detail["migration_status"], "success", "{detail}");
    assert_eq!(detail["volume_type"], "on-file2");
    assert_eq!(detail["os-vol-host-attr:host"], THERE);
    assert_eq!(detail["status"], "available");
    let bytes = std::fs::read(file_in(&app, "b", &volume)).unwrap();
    assert_eq!(&bytes[..MIB], noise(MIB, 9).as_slice());
    let usage = admin(
        &app,
        Method::GET,
        "/v3/p1/os-quota-sets/p1?usage=true",
        None,
    )
    .await;
    assert_eq!(
        usage.json["quota_set"]["volumes_on-file2"]["in_use"], 1,
        "{}",
        usage.text
    );
    assert_eq!(usage.json["quota_set"]["volumes_on-file"]["in_use"], 0);
}

async fn a_failed_move_leaves_the_volume_where_it_was(app: TestApp) {
    // The destination's directory is a plain file: its storage cannot be made.
    std::fs::create_dir_all(&app.volumes_dir).unwrap();
    let broken = app.volumes_dir.join("b");
    std::fs::write(&broken, b"not a directory").unwrap();
    let app = two_backends(app).await;
    let volume = on_first_backend(&app).await;
    write_at(&file_in(&app, "a", &volume), 0, &noise(MIB, 4));
    let started = migrate(&app, &volume, json!({"host": THERE, "lock_volume": true})).await;
    assert_eq!(started.status, 202, "{}", started.text);
    let detail = moved(&app, &volume).await;
    assert_eq!(detail["migration_status"], "error", "{detail}");
    assert_eq!(detail["os-vol-host-attr:host"], HERE);
    assert_eq!(detail["status"], "available");
    let bytes = std::fs::read(file_in(&app, "a", &volume)).unwrap();
    assert_eq!(&bytes[..MIB], noise(MIB, 4).as_slice());
}

async fn a_move_cut_by_a_restart_is_undone(app: TestApp) {
    let app = two_backends(app).await;
    let volume = on_first_backend(&app).await;
    // What a process killed mid-copy leaves: the volume moving, half a copy there.
    std::fs::create_dir_all(app.volumes_dir.join("b")).unwrap();
    std::fs::write(file_in(&app, "b", &volume), b"half").unwrap();
    app.db
        .execute(&format!(
            "update volumes set migration_status = 'migrating', migration_host = '{THERE}', \
             previous_status = 'available', status = 'maintenance', \
             updated_at = '2026-01-01T00:00:00+00:00' where id = '{volume}'"
        ))
        .await
        .unwrap();
    let handled = app
        .state
        .service
        .recover_interrupted_work(chrono::Duration::seconds(1))
        .await
        .unwrap();
    assert_eq!(handled, 1);
    let shown = admin(&app, Method::GET, &format!("/v3/p1/volumes/{volume}"), None).await;
    let detail = &shown.json["volume"];
    assert_eq!(detail["migration_status"], "error");
    assert_eq!(detail["status"], "available");
    assert_eq!(detail["os-vol-host-attr:host"], HERE);
    assert!(!file_in(&app, "b", &volume).exists(), "the half copy goes");
    assert!(file_in(&app, "a", &volume).exists());
}

async fn a_swap_nova_made_is_completed_with_the_new_volume(app: TestApp) {
    let old = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let new = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let path = format!("/v3/p1/volumes/{old}/action");
    let body = json!({"os-migrate_volume_completion": {"new_volume": new, "error": false}});
    let done = admin(&app, Method::POST, &path, Some(body.clone())).await;
    assert_eq!(done.status, 200, "{}", done.text);
    assert_eq!(done.json, json!({"save_volume_id": new}));
    let member = call_as(&app, MEMBER_P1, "3.64", Method::POST, &path, Some(body)).await;
    assert_eq!(member.status, 403, "{}", member.text);
    let missing = uuid::Uuid::new_v4().to_string();
    let body = json!({"os-migrate_volume_completion": {"new_volume": missing}});
    let unknown = admin(&app, Method::POST, &path, Some(body)).await;
    assert_eq!(unknown.status, 404, "{}", unknown.text);
    let body = json!({"os-migrate_volume_completion": {"error": true}});
    let malformed = admin(&app, Method::POST, &path, Some(body)).await;
    assert_eq!(malformed.status, 400, "{}", malformed.text);
}

backend_tests!(
    an_available_volume_moves_with_its_data,
    cinders_refusals_move_nothing,
    a_retype_on_demand_moves_the_volume,
    a_failed_move_leaves_the_volume_where_it_was,
    a_move_cut_by_a_restart_is_undone,
    a_swap_nova_made_is_completed_with_the_new_volume,
);

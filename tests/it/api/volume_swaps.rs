//! An attached volume moved through Nova's swap, with the test playing Nova's part over
//! the API exactly as Nova's compute manager does (`os-begin_detaching`, an attachment
//! to the temporary volume, the old attachment deleted with its service token, then
//! `os-migrate_volume_completion`); the Nova configured here does not answer, so the
//! swap call stays owed. A real Nova makes the same calls in tests/nova/scenarios.py.

use axum::http::Method;
use serde_json::{json, Value};

use super::nova_calls::silent_nova;
use super::volume_migrations::{
    admin, file_in, migrate, on_first_backend, on_first_backend_named, two_backends, THERE,
};
use crate::support::helpers::*;
use crate::support::TestApp;
use cinder_attach::service::Settings;

async fn with_nova(app: TestApp, retry_for: chrono::Duration) -> TestApp {
    let app = app.with_settings(Settings {
        nova: Some(silent_nova()),
        nova_retry_for: retry_for,
        ..Settings::default()
    });
    two_backends(app).await
}

async fn detail(app: &TestApp, volume: &str) -> Value {
    let shown = admin(app, Method::GET, &format!("/v3/p1/volumes/{volume}"), None).await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    shown.json["volume"].clone()
}

/// Waits for the swap to be owed to Nova; the temporary volume's id.
async fn swap_owed(app: &TestApp, volume: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while detail(app, volume).await["migration_status"] != "migrating" {
        assert!(std::time::Instant::now() < deadline, "never migrating");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let calls = app
        .db
        .column(&format!(
            "select kind || ' ' || cast(new_volume_id as text) || ' ' || servers || ' ' || status \
             from compute_calls where cast(volume_id as text) = '{volume}'"
        ))
        .await;
    assert_eq!(calls.len(), 1, "{calls:?}");
    let parts: Vec<&str> = calls[0].split(' ').collect();
    assert_eq!(parts[0], "swap-volume");
    assert_eq!(parts[2], format!("[\"{I1}\"]"));
    assert_eq!(parts[3], "pending");
    parts[1].to_owned()
}

/// Nova's part of a swap before its completion: the server attached to the temporary
/// volume (created, connected, completed), then its old attachment deleted. The new
/// attachment.
async fn nova_moves_the_server(app: &TestApp, temporary: &str, old: &str) -> String {
    let body = json!({"attachment": {"volume_uuid": temporary, "instance_uuid": I1}});
    let created = as_nova(app, Method::POST, "/v3/p1/attachments", Some(body)).await;
    assert_eq!(created.status, 200, "{}", created.text);
    let new = str_of(&created.json["attachment"], "id");
    assert_eq!(app.put_attachment(&new, conn()).await.status, 200);
    assert_eq!(app.complete(&new).await.status, 204);
    let path = format!("/v3/p1/attachments/{old}");
    let deleted = as_nova(app, Method::DELETE, &path, None).await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    new
}

async fn an_attached_volume_moves_through_novas_swap(app: TestApp) {
    let app = with_nova(app, chrono::Duration::minutes(10)).await;
    let volume = on_first_backend(&app).await;
    let old = app.attach_fully(&volume, I1, conn()).await;
    let started = migrate(&app, &volume, json!({"host": THERE})).await;
    assert_eq!(started.status, 202, "{}", started.text);
    let temporary = swap_owed(&app, &volume).await;
    let shown = detail(&app, &volume).await;
    assert_eq!(shown["status"], "in-use");
    let target = detail(&app, &temporary).await;
    assert_eq!(target["status"], "available");
    assert_eq!(target["migration_status"], format!("target:{volume}"));
    assert_eq!(target["os-vol-host-attr:host"], THERE);
    assert!(
        file_in(&app, "b", &temporary).exists(),
        "the new storage is made"
    );
    // The temporary volume counts against no quota, as in Cinder.
    let quota = admin(
        &app,
        Method::GET,
        "/v3/p1/os-quota-sets/p1?usage=True",
        None,
    )
    .await;
    assert_eq!(
        quota.json["quota_set"]["volumes"]["in_use"], 1,
        "{}",
        quota.text
    );

    // Nova's swap: the server's old volume begins detaching, the new one is attached
    // (created, connected, completed), the old attachment deleted, then the completion.
    let action = format!("/v3/p1/volumes/{volume}/action");
    let begin = as_nova(
        &app,
        Method::POST,
        &action,
        Some(json!({"os-begin_detaching": {}})),
    )
    .await;
    assert_eq!(begin.status, 202, "{}", begin.text);
    assert_eq!(
        detail(&app, &volume).await["status"],
        "in-use",
        "hidden while migrating"
    );
    let new = nova_moves_the_server(&app, &temporary, &old).await;
    assert_eq!(
        detail(&app, &volume).await["status"],
        "in-use",
        "migrating: kept"
    );
    let body = json!({"os-migrate_volume_completion": {"new_volume": temporary, "error": false}});
    let done = admin(&app, Method::POST, &action, Some(body)).await;
    assert_eq!(done.status, 200, "{}", done.text);
    assert_eq!(done.json, json!({"save_volume_id": volume}));

    // The volume lives on where the new storage is, with Nova's attachment.
    let moved = detail(&app, &volume).await;
    assert_eq!(moved["status"], "in-use", "{moved}");
    assert_eq!(moved["migration_status"], "success");
    assert_eq!(moved["os-vol-host-attr:host"], THERE);
    assert_eq!(moved["os-vol-mig-status-attr:name_id"], temporary.as_str());
    assert_eq!(moved["attachments"].as_array().unwrap().len(), 1);
    assert_eq!(moved["attachments"][0]["attachment_id"], new.as_str());
    let gone = admin(
        &app,
        Method::GET,
        &format!("/v3/p1/volumes/{temporary}"),
        None,
    )
    .await;
    assert_eq!(gone.status, 404, "the temporary record goes");
    assert!(
        !file_in(&app, "a", &volume).exists(),
        "the old storage goes"
    );
    assert!(file_in(&app, "b", &temporary).exists());
    app.assert_consistent(&volume).await;

    // Everything after goes to the storage it lives in: detach, extend, snapshot,
    // attach again, delete.
    let detached = as_nova(
        &app,
        Method::DELETE,
        &format!("/v3/p1/attachments/{new}"),
        None,
    )
    .await;
    assert_eq!(detached.status, 200, "{}", detached.text);
    assert_eq!(detail(&app, &volume).await["status"], "available");
    let extended = app
        .volume_action(&volume, json!({"os-extend": {"new_size": 2}}))
        .await;
    assert_eq!(extended.status, 202, "{}", extended.text);
    app.wait_for_status(&volume, "available").await;
    let size = std::fs::metadata(file_in(&app, "b", &temporary))
        .unwrap()
        .len();
    assert_eq!(size, 2 << 30, "the storage it lives in grew");
    let body = json!({"snapshot": {"volume_id": volume}});
    let snapshot = admin(&app, Method::POST, "/v3/p1/snapshots", Some(body)).await;
    assert_eq!(snapshot.status, 202, "{}", snapshot.text);
    let snapshot = str_of(&snapshot.json["snapshot"], "id");
    let snap_path = format!("/v3/p1/snapshots/{snapshot}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let shown = admin(&app, Method::GET, &snap_path, None).await;
        if shown.json["snapshot"]["status"] == "available" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{}", shown.text);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        admin(&app, Method::DELETE, &snap_path, None).await.status,
        202
    );
    let again = app.attach_fully(&volume, I2, conn()).await;
    let asks_nova = app.delete_attachment(&again).await;
    assert_eq!(asks_nova.status, 503, "{}", asks_nova.text);
    let path = format!("/v3/p1/attachments/{again}");
    let detached = as_nova(&app, Method::DELETE, &path, None).await;
    assert_eq!(detached.status, 200, "{}", detached.text);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let removed = admin(
            &app,
            Method::DELETE,
            &format!("/v3/p1/volumes/{volume}"),
            None,
        )
        .await;
        if removed.status == 202 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{}", removed.text);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while file_in(&app, "b", &temporary).exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the storage it lived in stays"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The move was undone: the temporary volume and its storage gone, the volume where it
/// was, attached, the move in `error`.
async fn undone(app: &TestApp, volume: &str, temporary: &str) {
    let shown = detail(app, volume).await;
    assert_eq!(shown["migration_status"], "error", "{shown}");
    assert_eq!(shown["status"], "in-use");
    assert_eq!(shown["os-vol-host-attr:host"], "test-host@file#file");
    assert_eq!(shown["attachments"].as_array().unwrap().len(), 1);
    let gone = admin(
        app,
        Method::GET,
        &format!("/v3/p1/volumes/{temporary}"),
        None,
    )
    .await;
    assert_eq!(gone.status, 404);
    assert!(
        !file_in(app, "b", temporary).exists(),
        "its new storage goes"
    );
    assert!(file_in(app, "a", volume).exists());
    app.assert_consistent(volume).await;
}

/// Nova reports the swap failed, or never takes the call: the temporary volume and its
/// storage go, the volume stays where it was, attached, the move in `error`.
async fn a_failed_or_refused_swap_is_undone(app: TestApp) {
    let app = with_nova(app, chrono::Duration::seconds(2)).await;
    // Nova's completion with an error.
    let volume = on_first_backend(&app).await;
    app.attach_fully(&volume, I1, conn()).await;
    assert_eq!(
        migrate(&app, &volume, json!({"host": THERE})).await.status,
        202
    );
    let temporary = swap_owed(&app, &volume).await;
    let body = json!({"os-migrate_volume_completion": {"new_volume": temporary, "error": true}});
    let path = format!("/v3/p1/volumes/{volume}/action");
    let done = admin(&app, Method::POST, &path, Some(body)).await;
    assert_eq!(done.status, 200, "{}", done.text);
    assert_eq!(done.json, json!({"save_volume_id": volume}));
    undone(&app, &volume, &temporary).await;

    // Nova never takes the call: given up after `nova_retry_for`, then undone.
    let volume = on_first_backend_named(&app).await;
    app.attach_fully(&volume, I1, conn()).await;
    assert_eq!(
        migrate(&app, &volume, json!({"host": THERE})).await.status,
        202
    );
    let temporary = swap_owed(&app, &volume).await;
    let nova = app.state.service.settings.nova.clone().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while detail(&app, &volume).await["migration_status"] == "migrating" {
        assert!(std::time::Instant::now() < deadline, "never given up");
        app.state.service.call_nova_once(&nova).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    undone(&app, &volume, &temporary).await;
}

/// What a process killed during a swap leaves: while the temporary volume's storage was
/// being made (`starting`), the swap is undone at the restart; once Nova was asked
/// (`migrating`), it is Nova's to finish and the restart leaves it alone.
async fn a_restart_undoes_only_a_swap_not_yet_owed_to_nova(app: TestApp) {
    let app = with_nova(app, chrono::Duration::minutes(10)).await;
    let mut cases = Vec::new();
    for (n, state) in ["starting", "migrating"].into_iter().enumerate() {
        let volume = if n == 0 {
            on_first_backend(&app).await
        } else {
            on_first_backend_named(&app).await
        };
        app.attach_fully(&volume, I1, conn()).await;
        let temporary = on_first_backend_named(&app).await;
        std::fs::create_dir_all(app.volumes_dir.join("b")).unwrap();
        std::fs::write(file_in(&app, "b", &temporary), b"new storage").unwrap();
        let temp_status = if state == "starting" {
            "creating"
        } else {
            "available"
        };
        for sql in [
            format!(
                "update volumes set migration_status = '{state}', migration_host = '{THERE}', \
                 previous_status = 'in-use', updated_at = '2026-01-01T00:00:00+00:00' \
                 where id = '{volume}'"
            ),
            format!(
                "update volumes set migration_status = 'target:{volume}', host = '{THERE}', \
                 status = '{temp_status}' where id = '{temporary}'"
            ),
        ] {
            app.db.execute(&sql).await.unwrap();
        }
        cases.push((volume, temporary));
    }
    let handled = app
        .state
        .service
        .recover_interrupted_work(chrono::Duration::seconds(1))
        .await
        .unwrap();
    assert_eq!(handled, 1, "only the swap not yet owed to Nova");
    let (undone, temporary) = &cases[0];
    let shown = detail(&app, undone).await;
    assert_eq!(shown["migration_status"], "error", "{shown}");
    assert_eq!(shown["status"], "in-use");
    let gone = admin(
        &app,
        Method::GET,
        &format!("/v3/p1/volumes/{temporary}"),
        None,
    )
    .await;
    assert_eq!(gone.status, 404);
    assert!(!file_in(&app, "b", temporary).exists());
    let (waiting, temporary) = &cases[1];
    assert_eq!(detail(&app, waiting).await["migration_status"], "migrating");
    assert_eq!(detail(&app, temporary).await["status"], "available");
    assert!(file_in(&app, "b", temporary).exists());
}

/// A retype with `migration_policy: on-demand` of an attached volume moves it the same
/// way: `retyping` while Nova swaps, then of the new type on the new backend, `in-use`,
/// counted under the new type's quota.
async fn an_attached_retype_moves_through_novas_swap(app: TestApp) {
    let app = with_nova(app, chrono::Duration::minutes(10)).await;
    let volume = on_first_backend(&app).await;
    let old = app.attach_fully(&volume, I1, conn()).await;
    app.create_type("on-file2", json!({"volume_backend_name": "file2"}))
        .await;
    let path = format!("/v3/p1/volumes/{volume}/action");
    let body = json!({"os-retype": {"new_type": "on-file2", "migration_policy": "on-demand"}});
    let retyped = call_as(&app, MEMBER_P1, "3.64", Method::POST, &path, Some(body)).await;
    assert_eq!(retyped.status, 202, "{}", retyped.text);
    let temporary = swap_owed(&app, &volume).await;
    assert_eq!(detail(&app, &volume).await["status"], "retyping");
    assert_eq!(detail(&app, &temporary).await["volume_type"], "on-file2");

    nova_moves_the_server(&app, &temporary, &old).await;
    assert_eq!(detail(&app, &volume).await["status"], "retyping");
    let body = json!({"os-migrate_volume_completion": {"new_volume": temporary}});
    let done = admin(&app, Method::POST, &path, Some(body)).await;
    assert_eq!(done.status, 200, "{}", done.text);

    let moved = detail(&app, &volume).await;
    assert_eq!(moved["volume_type"], "on-file2", "{moved}");
    assert_eq!(moved["status"], "in-use");
    assert_eq!(moved["migration_status"], "success");
    assert_eq!(moved["os-vol-host-attr:host"], THERE);
    let usage = admin(
        &app,
        Method::GET,
        "/v3/p1/os-quota-sets/p1?usage=true",
        None,
    )
    .await;
    let usage = &usage.json["quota_set"];
    assert_eq!(usage["volumes_on-file2"]["in_use"], 1, "{usage}");
    assert_eq!(usage["volumes_on-file"]["in_use"], 0, "{usage}");
    app.assert_consistent(&volume).await;
}

backend_tests!(
    an_attached_retype_moves_through_novas_swap,
    a_restart_undoes_only_a_swap_not_yet_owed_to_nova,
    an_attached_volume_moves_through_novas_swap,
    a_failed_or_refused_swap_is_undone,
);

//! `cinder-attach check`: each kind of violation is seeded straight into the database (or
//! the backend directory) and must be reported; a healthy database reports nothing.

use std::collections::BTreeSet;

use cinder_attach::commands::check::{self, CheckedBackend};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::support::helpers::{conn, str_of};
use crate::support::load::checker;
use crate::support::TestApp;

fn backends(app: &TestApp) -> Vec<CheckedBackend> {
    let spec = format!("file=file,dir={}", app.volumes_dir.display());
    check::backends_from_specs(&[spec.parse().expect("spec")], "test-host", &app.store)
        .expect("builds")
}

/// `(kind, id)` of every finding.
async fn findings(app: &TestApp) -> BTreeSet<(String, String)> {
    let report = check::run(app.store.as_ref(), &backends(app))
        .await
        .expect("check runs");
    report
        .findings
        .iter()
        .map(|f| {
            let value = serde_json::to_value(f).expect("serialises");
            let id = value
                .get("attachment_id")
                .or_else(|| value.get("snapshot_id"))
                .or_else(|| value.get("volume_id"))
                .or_else(|| value.get("project_id"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            (value["kind"].as_str().unwrap_or_default().to_owned(), id)
        })
        .collect()
}

/// Takes a snapshot of an available volume; its id.
async fn take_snapshot(app: &TestApp, volume: &str) -> String {
    let taken = app
        .request(axum::http::Method::POST, "/v3/p1/snapshots")
        .json(&json!({"snapshot": {"volume_id": volume}}))
        .send()
        .await;
    assert_eq!(taken.status, 202, "{}", taken.text);
    str_of(&taken.json["snapshot"], "id")
}

async fn checker_is_quiet_after_normal_use(app: TestApp) {
    let single = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let shared = app.multiattach_volume().await;
    let idle = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    take_snapshot(&app, &idle).await;
    app.attach_fully(&single, &Uuid::new_v4().to_string(), conn())
        .await;
    app.attach_fully(&shared, &Uuid::new_v4().to_string(), conn())
        .await;
    app.attach_fully(&shared, &Uuid::new_v4().to_string(), conn())
        .await;
    let gone = app
        .attach_fully(&idle, &Uuid::new_v4().to_string(), conn())
        .await;
    assert_eq!(app.delete_attachment(&gone).await.status, 200);
    let deleted = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    assert_eq!(
        app.request(
            axum::http::Method::DELETE,
            &format!("/v3/p1/volumes/{deleted}")
        )
        .send()
        .await
        .status,
        202
    );
    assert_eq!(findings(&app).await, BTreeSet::new());
    let report = check::run(app.store.as_ref(), &backends(&app))
        .await
        .expect("runs");
    assert_eq!((report.volumes, report.attachments), (3, 3));
}

async fn checker_finds_every_seeded_violation(app: TestApp) {
    // A volume that says `available` while an attachment is attached.
    let lying = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    app.attach_fully(&lying, &Uuid::new_v4().to_string(), conn())
        .await;
    // A non-multiattach volume attached to two instances.
    let crowded = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    app.attach_fully(&crowded, &Uuid::new_v4().to_string(), conn())
        .await;
    let intruder = Uuid::new_v4().to_string();
    // A live attachment whose volume was deleted.
    let orphaned = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let orphan_attachment = app
        .attach_fully(&orphaned, &Uuid::new_v4().to_string(), conn())
        .await;
    // Connector rows of a deleted attachment (its volume is kept consistent).
    let shared = app.multiattach_volume().await;
    app.attach_fully(&shared, &Uuid::new_v4().to_string(), conn())
        .await;
    let dropped = app
        .attach_fully(&shared, &Uuid::new_v4().to_string(), conn())
        .await;
    // A volume whose file is gone, and a file no volume owns.
    let dataless = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let stray = Uuid::new_v4();
    // Snapshot data no snapshot record owns: written by hand, or its record deleted.
    let stray_snapshot = Uuid::new_v4();
    let forgotten = take_snapshot(&app, &dataless).await;

    app.db
        .execute(&format!(
            "update volumes set status = 'available' where id = '{lying}';
             insert into volume_attachment (id, volume_id, instance_uuid, attach_status, attach_mode, created_at, deleted)
             values ('{intruder}', '{crowded}', 'i-9', 'attached', 'rw', '2026-01-02T03:04:05+00:00', false);
             update volumes set deleted = true, status = 'deleted' where id = '{orphaned}';
             update volume_attachment set deleted = true, attach_status = 'deleted' where id = '{dropped}';
             update snapshots set deleted = true, status = 'deleted' where id = '{forgotten}';"
        ))
        .await
        .expect("seed applies");
    std::fs::remove_file(app.volume_file(&dataless)).expect("file removed");
    std::fs::write(app.volumes_dir.join(format!("volume-{stray}")), b"").expect("stray file");
    std::fs::write(
        app.volumes_dir.join(format!("snapshot-{stray_snapshot}")),
        b"",
    )
    .expect("stray snapshot file");

    let expected: BTreeSet<(String, String)> = [
        ("status_mismatch", lying),
        ("several_instances_without_multiattach", crowded),
        ("attachment_of_deleted_volume", orphan_attachment),
        ("specs_of_deleted_attachment", dropped),
        ("backend_object_missing", dataless),
        ("backend_object_without_volume", stray.to_string()),
        // The deleted volume's file is still there too.
        ("backend_object_without_volume", orphaned),
        ("snapshot_data_without_record", stray_snapshot.to_string()),
        ("snapshot_data_without_record", forgotten),
    ]
    .into_iter()
    .map(|(k, id)| (k.to_owned(), id))
    .collect();
    assert_eq!(findings(&app).await, expected);
}

/// A project whose usage (with reserved growth) passes a limit stored for it, and growth
/// reserved for a volume that is not extending, are reported; extends that landed are not.
async fn checker_reports_quota_overuse_and_stale_reservations(app: TestApp) {
    let grown = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let extended = app
        .volume_action(&grown, json!({"os-extend": {"new_size": 2}}))
        .await;
    assert_eq!(extended.status, 202, "{}", extended.text);
    assert_eq!(findings(&app).await, BTreeSet::new());
    let other = str_of(&app.create_volume(json!({"size": 3})).await, "id");
    // Seeded as a broken writer or an older version could leave them.
    let seed = [
        "insert into quotas (project_id, resource, hard_limit, created_at, deleted) \
         values ('p1', 'gigabytes', 4, '2026-01-01 00:00:00', false)"
            .to_owned(),
        format!("update volumes set reserved_growth = 2 where id = '{other}'"),
    ];
    for sql in seed {
        app.db.execute(&sql).await.unwrap();
    }
    let expected: BTreeSet<(String, String)> = [
        ("over_quota".to_owned(), "p1".to_owned()),
        ("stale_reservation".to_owned(), other.clone()),
    ]
    .into();
    assert_eq!(findings(&app).await, expected);
}

backend_tests!(
    checker_is_quiet_after_normal_use,
    checker_finds_every_seeded_violation,
    checker_reports_quota_overuse_and_stale_reservations,
);

/// The binary: exit 0 and an empty JSON list when clean, 1 with findings, 2 when the
/// database cannot be read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_command_exit_codes_and_json() {
    cinder_attach::telemetry::init_for_test();
    let db = crate::support::TestDb::create(crate::support::Backend::Sqlite)
        .await
        .expect("sqlite");
    let app = TestApp::new(db).await;
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    app.attach_fully(&volume, &Uuid::new_v4().to_string(), conn())
        .await;

    let (code, report, _) = checker(&app.db.url, &app.volumes_dir);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["findings"], json!([]));
    assert_eq!(report["volumes"], 1);
    assert_eq!(report["backends_checked"], json!(["test-host@file"]));

    app.db
        .execute(&format!(
            "update volumes set status = 'available' where id = '{volume}'"
        ))
        .await
        .expect("seed");
    let (code, report, _) = checker(&app.db.url, &app.volumes_dir);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["findings"][0]["kind"], "status_mismatch");
    assert_eq!(report["findings"][0]["volume_id"], volume.as_str());

    let missing = app.volumes_dir.join("no-such-dir/db.sqlite");
    let (code, _, _) = checker(&format!("sqlite://{}", missing.display()), &app.volumes_dir);
    assert_eq!(code, 2);
}

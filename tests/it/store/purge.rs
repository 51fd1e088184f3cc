//! `purge`: soft-deleted rows older than the cut-off go for good, children before
//! parents; live rows and recent deletions stay, and the checker finds nothing after.

use chrono::{Duration, Utc};
use cinder_attach::domain::ids::MessageId;
use cinder_attach::domain::message::Message;
use serde_json::json;
use uuid::Uuid;

use crate::support::helpers::*;
use crate::support::old_outbox::recorded_as_by_0_2_0;
use crate::support::TestApp;

async fn count(app: &TestApp, sql: &str) -> i64 {
    app.db.column(sql).await[0].parse().unwrap()
}

async fn rows(app: &TestApp, table: &str) -> i64 {
    count(app, &format!("select cast(count(*) as text) from {table}")).await
}

/// A volume that was attached (with a connector), detached, given metadata and deleted,
/// and a type with specs that was deleted: every kind of soft-deleted row.
async fn history(app: &TestApp) -> String {
    let v = str_of(
        &app.create_volume(json!({"size": 1, "metadata": {"a": "1"}}))
            .await,
        "id",
    );
    let a = app.attach_fully(&v, I1, conn()).await;
    app.delete_attachment(&a).await;
    let deleted = app
        .request(axum::http::Method::DELETE, &format!("/v3/p1/volumes/{v}"))
        .send()
        .await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
    let t = app
        .create_type(&format!("old-{}", Uuid::new_v4()), json!({"k": "v"}))
        .await;
    let encrypted = app
        .request(
            axum::http::Method::POST,
            &format!("/v3/p1/types/{t}/encryption"),
        )
        .json(&json!({"encryption": {"provider": "luks", "control_location": "front-end"}}))
        .send()
        .await;
    assert_eq!(encrypted.status, 200, "{}", encrypted.text);
    let gone = app
        .request(axum::http::Method::DELETE, &format!("/v3/p1/types/{t}"))
        .send()
        .await;
    assert_eq!(gone.status, 202, "{}", gone.text);
    v
}

async fn live_rows(app: &TestApp) -> Vec<String> {
    app.db
        .column(
            "select cast((select count(*) from volumes where deleted = false) + \
                    (select count(*) from volume_attachment where deleted = false) + \
                    (select count(*) from attachment_specs where deleted = false) + \
                    (select count(*) from volume_metadata where deleted = false) as text)",
        )
        .await
}

async fn purge_removes_old_deleted_rows_only(app: TestApp) {
    let old = history(&app).await;
    // Make everything deleted so far ten days old.
    let long_ago = (Utc::now() - Duration::days(10)).to_rfc3339();
    for table in [
        "attachment_specs",
        "volume_attachment",
        "volume_metadata",
        "volume_admin_metadata",
        "volumes",
        "volume_type_extra_specs",
        "encryption",
        "volume_types",
    ] {
        app.db
            .execute(&format!(
                "update {table} set deleted_at = '{long_ago}' where deleted = true"
            ))
            .await
            .unwrap();
    }
    let recent = history(&app).await;
    // A live volume, attached, with a live attachment and metadata.
    let live = str_of(
        &app.create_volume(json!({"size": 1, "metadata": {"keep": "me"}}))
            .await,
        "id",
    );
    app.attach_fully(&live, I2, conn()).await;
    let live_before = live_rows(&app).await;
    let report = app
        .store
        .purge_deleted(Utc::now() - Duration::days(7), false)
        .await
        .expect("purge runs");
    let purged = |table: &str| {
        report
            .tables
            .iter()
            .find(|(t, _)| *t == table)
            .map(|(_, n)| *n)
            .unwrap()
    };
    assert_eq!(purged("volumes"), 1, "{report:?}");
    assert_eq!(purged("volume_attachment"), 1, "{report:?}");
    assert!(purged("attachment_specs") >= 3, "{report:?}");
    assert_eq!(purged("volume_metadata"), 1, "{report:?}");
    assert_eq!(purged("volume_types"), 1, "{report:?}");
    assert_eq!(purged("volume_type_extra_specs"), 1, "{report:?}");
    assert_eq!(
        purged("encryption"),
        1,
        "the deleted type's encryption: {report:?}"
    );
    assert_eq!(
        count(
            &app,
            &format!("select cast(count(*) as text) from volumes where id = '{old}'")
        )
        .await,
        0
    );
    assert_eq!(
        count(
            &app,
            &format!("select cast(count(*) as text) from volumes where id = '{recent}'")
        )
        .await,
        1,
        "deleted three seconds ago: kept"
    );
    assert_eq!(live_rows(&app).await, live_before, "no live row touched");
    assert_eq!(app.volume_status(&live).await, "in-use");
    app.assert_consistent(&live).await;
    // Everything deleted goes with a cut-off of now; running it twice is harmless.
    let all = app.store.purge_deleted(Utc::now(), false).await.unwrap();
    assert!(all.total() > 0);
    assert_eq!(
        app.store
            .purge_deleted(Utc::now(), false)
            .await
            .unwrap()
            .total(),
        0
    );
    for table in [
        "volumes",
        "volume_attachment",
        "attachment_specs",
        "volume_types",
    ] {
        assert_eq!(
            count(
                &app,
                &format!("select cast(count(*) as text) from {table} where deleted = true")
            )
            .await,
            0,
            "{table}"
        );
    }
    assert!(rows(&app, "volumes").await >= 1);
    let report = cinder_attach::commands::check::run(app.store.as_ref(), &[])
        .await
        .expect("check runs");
    assert!(report.findings.is_empty(), "{:?}", report.findings);
}

/// Purging while attach cycles run: no cycle fails, and the purge finishes.
async fn purge_runs_beside_attach_cycles(app: TestApp) {
    for _ in 0..20 {
        history(&app).await;
    }
    let v = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let cycles = {
        async {
            for _ in 0..30 {
                let a = app.attach_fully(&v, I1, conn()).await;
                assert_eq!(app.delete_attachment(&a).await.status, 200);
            }
        }
    };
    let purge = async {
        let mut total = 0;
        for _ in 0..10 {
            total += app
                .store
                .purge_deleted(Utc::now(), false)
                .await
                .expect("purge")
                .total();
        }
        total
    };
    let ((), purged) = tokio::join!(cycles, purge);
    assert!(purged > 0);
    assert_eq!(app.volume_status(&v).await, "available");
    app.assert_consistent(&v).await;
}

/// Messages past their expiry go (deleted or not, whatever the cut-off), as Cinder's
/// message reaper removes them; the others stay, and the API no longer lists the gone.
async fn purge_removes_expired_messages(app: TestApp) {
    let now = Utc::now();
    let message = |expires_at| Message {
        id: MessageId::generate(),
        project_id: "p1".into(),
        request_id: None,
        resource_type: "VOLUME".into(),
        resource_uuid: None,
        event_id: "VOLUME_VOLUME_001_001".into(),
        message_level: "ERROR".into(),
        user_message: "schedule allocate volume: Could not find any available weighted backend."
            .into(),
        created_at: now - Duration::days(40),
        expires_at,
    };
    let expired = message(Some(now - Duration::days(10)));
    let current = message(Some(now + Duration::days(20)));
    let timeless = message(None);
    for m in [&expired, &current, &timeless] {
        app.store.insert_message(m).await.unwrap();
    }
    let listed = app.get("/v3/p1/messages").version("3.3").send().await;
    assert_eq!(
        listed.json["messages"].as_array().unwrap().len(),
        3,
        "{}",
        listed.text
    );
    // The soft-delete cut-off does not keep an expired message.
    let report = app
        .store
        .purge_deleted(now - Duration::days(365), false)
        .await
        .unwrap();
    assert!(report
        .tables
        .iter()
        .all(|(t, n)| *t != "messages" || *n == 0));
    assert_eq!(app.store.purge_expired_messages(now).await.unwrap(), 1);
    assert_eq!(app.store.purge_expired_messages(now).await.unwrap(), 0);
    let ids: Vec<String> = app.get("/v3/p1/messages").version("3.3").send().await.json["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| str_of(m, "id"))
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(!ids.contains(&expired.id.to_string()));
    assert_eq!(
        rows(&app, "messages").await,
        2,
        "the expired row is gone from the table"
    );
}

/// Makes every recorded event ten days old (both outbox tables), and the rows matching
/// `confirmed` sent then.
async fn age_events(app: &TestApp, table: &str, confirmed: &str) {
    let long_ago = (Utc::now() - Duration::days(10)).to_rfc3339();
    let statements = [
        format!("update {table} set created_at = '{long_ago}'"),
        format!("update {table} set sent_at = '{long_ago}' where {confirmed}"),
    ];
    for sql in statements {
        app.db.execute(&sql).await.unwrap();
    }
}

/// Old outbox rows go once the broker confirmed their events; the ones still owed to
/// the bus stay unless asked for (`--unsent-events`); recent ones always stay.
async fn purge_removes_old_confirmed_events(app: TestApp) {
    let confirmed = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let owed = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let of = |v: &str| format!("select cast(count(*) as text) from outbox where volume_id = '{v}'");
    let (confirmed_rows, owed_rows) = (
        count(&app, &of(&confirmed)).await,
        count(&app, &of(&owed)).await,
    );
    assert!(confirmed_rows > 0 && owed_rows > 0);
    age_events(&app, "outbox", &format!("volume_id = '{confirmed}'")).await;
    app.attach_fully(&confirmed, I1, conn()).await;
    let recent = rows(&app, "outbox").await - confirmed_rows - owed_rows;
    let cut_off = Utc::now() - Duration::days(7);
    let report = app.store.purge_deleted(cut_off, false).await.unwrap();
    assert!(
        report.tables.contains(&("outbox", confirmed_rows as u64)),
        "{report:?}"
    );
    assert_eq!(
        rows(&app, "outbox").await,
        owed_rows + recent,
        "the unsent ones stay"
    );
    let report = app.store.purge_deleted(cut_off, true).await.unwrap();
    assert!(
        report.tables.contains(&("outbox", owed_rows as u64)),
        "{report:?}"
    );
    assert_eq!(rows(&app, "outbox").await, recent, "recent events stay");
}

/// Events a 0.2.0 process recorded, a row each, the payload stored in the last of the
/// ones recorded together and shared: it stays while another of them does, and they
/// read it all along.
async fn purge_keeps_a_payload_while_it_is_shared(app: TestApp) {
    let v = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    // With a connector the reservation records `volume.attach.start` and then
    // `attachment.create.end`, which stores their payload.
    app.attach(&v, Some(I1), Some(conn())).await;
    recorded_as_by_0_2_0(&app).await;
    // The broker confirmed `attachment.create.end`, not yet `volume.attach.start`.
    age_events(&app, "events", "event_type <> 'volume.attach.start'").await;
    let cut_off = Utc::now() - Duration::days(7);
    app.store.purge_deleted(cut_off, false).await.unwrap();
    let left = app
        .db
        .column(&format!(
            "select event_type from events where volume_id = '{v}' order by seq"
        ))
        .await;
    assert_eq!(left, ["volume.attach.start", "attachment.create.end"]);
    let owed = app.store.pending_events(10).await.unwrap();
    assert_eq!(owed.len(), 1);
    let payload = &owed[0].payload;
    assert_eq!(payload["volume_id"], json!(v));
    assert_eq!(payload["status"], "attaching");

    app.db
        .execute("update events set sent_at = created_at")
        .await
        .unwrap();
    app.store.purge_deleted(cut_off, false).await.unwrap();
    assert_eq!(
        rows(&app, "events").await,
        0,
        "both go once neither is owed"
    );
}

/// The hosts `os-services` lists, sorted.
async fn service_hosts(app: &TestApp) -> Vec<String> {
    let services = app
        .request(axum::http::Method::GET, "/v3/p1/os-services")
        .send()
        .await;
    assert_eq!(services.status, 200, "{}", services.text);
    let mut hosts: Vec<String> = services.json["services"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| str_of(s, "host"))
        .collect();
    hosts.sort();
    hosts
}

/// Services silent since the cut-off with no live volume (a backend taken out of the
/// configuration) are removed; a silent one still holding a volume and the live ones stay.
async fn purge_removes_stale_services(app: TestApp) {
    let long_ago = (Utc::now() - Duration::days(30)).to_rfc3339();
    for (host, uuid) in [("gone@old", Uuid::new_v4()), ("gone@busy", Uuid::new_v4())] {
        app.db
            .execute(&format!(
                "insert into services (uuid, host, binary_name, backend_name, driver, \
                   created_at, updated_at) \
                 values ('{uuid}', '{host}', 'cinder-volume', 'b', 'file', '{long_ago}', '{long_ago}')"
            ))
            .await
            .unwrap();
        if host == "gone@busy" {
            let v = str_of(&app.create_volume(json!({"size": 1})).await, "id");
            app.db
                .execute(&format!(
                    "update volumes set service_uuid = '{uuid}', host = 'gone@busy#b' where id = '{v}'"
                ))
                .await
                .unwrap();
        }
    }
    let before = service_hosts(&app).await;
    assert!(before.contains(&"gone@old".to_string()), "{before:?}");
    let removed = app
        .store
        .remove_stale_services(Utc::now() - Duration::days(7), Utc::now())
        .await
        .unwrap();
    assert_eq!(
        removed,
        [("cinder-volume".to_string(), "gone@old".to_string())]
    );
    let after = service_hosts(&app).await;
    let mut expected = before.clone();
    expected.retain(|host| host != "gone@old");
    assert_eq!(after, expected);
    assert!(after.contains(&"gone@busy".to_string()));
    // Run again: nothing more goes.
    let again = app
        .store
        .remove_stale_services(Utc::now() - Duration::days(7), Utc::now())
        .await
        .unwrap();
    assert!(again.is_empty(), "{again:?}");
}

/// A deleted group (with a group snapshot taken and deleted) of a deleted volume type and
/// a deleted group type: all of it goes, children first, nothing refused by a reference.
async fn purge_removes_deleted_groups_and_their_types(app: TestApp) {
    use axum::http::Method;
    let send = |method: Method, path: String, body: serde_json::Value| {
        app.request(method, &path)
            .version("3.64")
            .json(&body)
            .send()
    };
    let t = app.create_type("grouped", json!({})).await;
    let made = send(
        Method::POST,
        "/v3/p1/group_types".into(),
        json!({"group_type": {"name": "gt"}}),
    )
    .await;
    let gt = str_of(&made.json["group_type"], "id");
    let body = json!({"group": {"group_type": gt, "volume_types": [t]}});
    let made = send(Method::POST, "/v3/p1/groups".into(), body).await;
    let g = str_of(&made.json["group"], "id");
    app.create_volume(json!({"size": 1, "volume_type": "grouped", "group_id": g}))
        .await;
    let body = json!({"group_snapshot": {"group_id": g}});
    let made = send(Method::POST, "/v3/p1/group_snapshots".into(), body).await;
    let gs = str_of(&made.json["group_snapshot"], "id");
    let steps = [
        (
            Method::DELETE,
            format!("/v3/p1/group_snapshots/{gs}"),
            json!(null),
        ),
        (
            Method::POST,
            format!("/v3/p1/groups/{g}/action"),
            json!({"delete": {"delete-volumes": true}}),
        ),
        (
            Method::DELETE,
            format!("/v3/p1/group_types/{gt}"),
            json!(null),
        ),
        (Method::DELETE, format!("/v3/p1/types/{t}"), json!(null)),
    ];
    for (method, path, body) in steps {
        let done = send(method, path.clone(), body).await;
        assert_eq!(done.status, 202, "{path}: {}", done.text);
    }
    let report = app
        .store
        .purge_deleted(Utc::now() + Duration::days(1), true)
        .await
        .expect("purge runs");
    for table in [
        "group_snapshots",
        "group_volume_type_mapping",
        "groups",
        "group_types",
        "snapshots",
        "volumes",
    ] {
        assert_eq!(rows(&app, table).await, 0, "{table}: {report:?}");
    }
    let left = count(
        &app,
        &format!("select cast(count(*) as text) from volume_types where id = '{t}'"),
    )
    .await;
    assert_eq!(left, 0, "{report:?}");
}

/// Backups deleted long ago go with their metadata; a recent deletion and a live backup
/// stay.
async fn purge_removes_old_deleted_backups(app: TestApp) {
    let long_ago = (Utc::now() - Duration::days(10)).to_rfc3339();
    let now = Utc::now().to_rfc3339();
    let (old, recent, live) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let mut sql = String::new();
    for (id, deleted, at) in [
        (old, true, &long_ago),
        (recent, true, &now),
        (live, false, &now),
    ] {
        let deleted_at = if deleted {
            format!("'{at}'")
        } else {
            "null".to_owned()
        };
        let status = if deleted { "deleted" } else { "available" };
        sql += &format!(
            "insert into backups (id, volume_id, project_id, status, size, created_at, deleted, \
             deleted_at) values ('{id}', '{}', 'p1', '{status}', 1, '{at}', {deleted}, {deleted_at});\
             insert into backup_metadata (backup_id, key, value, created_at, deleted, deleted_at) \
             values ('{id}', 'k', 'v', '{at}', {deleted}, {deleted_at});",
            Uuid::new_v4()
        );
    }
    app.db.execute(&sql).await.unwrap();
    let report = app
        .store
        .purge_deleted(Utc::now() - Duration::days(7), false)
        .await
        .expect("purge runs");
    let purged = |table: &str| {
        report
            .tables
            .iter()
            .find(|(t, _)| *t == table)
            .map(|(_, n)| *n)
    };
    assert_eq!(purged("backup_metadata"), Some(1), "{report:?}");
    assert_eq!(purged("backups"), Some(1), "{report:?}");
    assert_eq!(rows(&app, "backups").await, 2);
    assert_eq!(rows(&app, "backup_metadata").await, 2);
}

/// Calls to Nova go once settled (sent, or given up) before the cut-off; one still
/// pending is owed and stays, however old.
async fn purge_removes_old_settled_compute_calls(app: TestApp) {
    let long_ago = (Utc::now() - Duration::days(10)).to_rfc3339();
    let now = Utc::now().to_rfc3339();
    let calls = [
        ("sent", &long_ago, "c0000001"),
        ("failed", &long_ago, "c0000002"),
        ("pending", &long_ago, "c0000003"),
        ("sent", &now, "c0000004"),
    ];
    for (status, at, prefix) in calls {
        app.db
            .execute(&format!(
                "insert into compute_calls (id, kind, volume_id, project_id, servers, status, \
                 attempts, next_attempt_at, created_at, updated_at) values \
                 ('{prefix}-0000-4000-8000-000000000000', 'volume-extended', \
                  'b0000000-0000-4000-8000-000000000000', 'p1', '[\"s\"]', '{status}', 1, \
                  '{at}', '{at}', '{at}')"
            ))
            .await
            .unwrap();
    }
    let report = app
        .store
        .purge_deleted(Utc::now() - Duration::days(7), false)
        .await
        .unwrap();
    assert!(report.tables.contains(&("compute_calls", 2)), "{report:?}");
    let left = app
        .db
        .column("select substr(cast(id as text), 1, 8) from compute_calls order by id")
        .await;
    assert_eq!(left, ["c0000003", "c0000004"]);
}

backend_tests!(
    purge_removes_old_settled_compute_calls,
    purge_removes_old_deleted_backups,
    purge_removes_stale_services,
    purge_keeps_a_payload_while_it_is_shared,
    purge_removes_old_deleted_rows_only,
    purge_runs_beside_attach_cycles,
    purge_removes_old_confirmed_events,
    purge_removes_expired_messages,
    purge_removes_deleted_groups_and_their_types,
);

//! Availability zones, extensions and the legacy attach actions tempest still uses.

use axum::http::Method;
use serde_json::json;

use crate::support::helpers::{conn, str_of};
use crate::support::TestApp;

const READER_P1: &str = "rita:p1:reader";

async fn zones_and_extensions(app: TestApp) {
    let app = app
        .with_backends(&[
            "a=file,availability_zone=zone-b",
            "b=file,availability_zone=nova",
            "c=file,availability_zone=nova",
        ])
        .await;
    let zones = app
        .get("/v3/p1/os-availability-zone")
        .token(READER_P1)
        .send()
        .await;
    assert_eq!(zones.status, 200, "{}", zones.text);
    assert_eq!(
        zones.json,
        json!({"availabilityZoneInfo": [
            {"zoneName": "nova", "zoneState": {"available": true}},
            {"zoneName": "zone-b", "zoneState": {"available": true}}]})
    );
    let listed = app.get("/v3/p1/extensions").token(READER_P1).send().await;
    assert_eq!(listed.status, 200);
    let aliases: Vec<&str> = listed.json["extensions"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|e| e["alias"].as_str().expect("alias"))
        .collect();
    for served in [
        "os-volume-actions",
        "os-hosts",
        "qos-specs",
        "os-quota-sets",
        "os-services",
        "scheduler-stats",
        "capabilities",
        "os-volume-transfer",
        "os-volume-type-access",
        "encryption",
        "os-volume-encryption-metadata",
        "os-vol-image-meta",
        "backups",
        "os-volume-manage",
        "os-volume-unmanage",
        "os-snapshot-manage",
        "os-snapshot-unmanage",
    ] {
        assert!(aliases.contains(&served), "{served}: {aliases:?}");
    }
    // Nothing this service does not serve (consistency groups).
    for absent in ["cgsnapshots", "consistencygroups"] {
        assert!(!aliases.contains(&absent), "{absent}: {aliases:?}");
    }
    let shown = app.get("/v3/p1/extensions/os-vol-host-attr").send().await;
    assert_eq!(
        shown.json,
        json!({"extension": {"name": "VolumeHostAttribute", "alias": "os-vol-host-attr",
               "description": "Expose host as an attribute of a volume.",
               "updated": "2011-11-03T00:00:00+00:00", "links": []}})
    );
    app.get("/v3/p1/extensions/nope")
        .send()
        .await
        .assert_fault(404, "itemNotFound", "");
    // Without credentials neither answers.
    assert_eq!(
        app.get("/v3/p1/extensions")
            .without_token()
            .send()
            .await
            .status,
        401
    );
}

async fn reserve_and_unreserve(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let act = |name: &'static str| {
        let (app, id) = (&app, id.clone());
        async move { app.volume_action(&id, json!({ name: null })).await }
    };
    assert_eq!(act("os-reserve").await.status, 202);
    assert_eq!(app.volume_status(&id).await, "attaching");
    act("os-reserve").await.assert_fault(
        400,
        "badRequest",
        "Volume status must be available to reserve, but the status is attaching.",
    );
    assert_eq!(act("os-unreserve").await.status, 202);
    assert_eq!(app.volume_status(&id).await, "available");
    // Unreserving what is not reserved changes nothing, and is not an error.
    assert_eq!(act("os-unreserve").await.status, 202);
    assert_eq!(app.volume_status(&id).await, "available");
    act("os-begin_detaching").await.assert_fault(
        400,
        "badRequest",
        "Volume status must be 'in-use' and attach_status must be 'attached' to detach.",
    );
    let reader = app
        .request(Method::POST, &format!("/v3/p1/volumes/{id}/action"))
        .token(READER_P1)
        .json(&json!({"os-reserve": null}))
        .send()
        .await;
    reader.assert_fault(403, "forbidden", "volume_extension:volume_actions:reserve");
}

async fn detaching_begins_and_rolls_back(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    app.attach_fully(&id, &uuid::Uuid::new_v4().to_string(), conn())
        .await;
    assert_eq!(
        app.volume_action(&id, json!({"os-begin_detaching": {}}))
            .await
            .status,
        202
    );
    assert_eq!(app.volume_status(&id).await, "detaching");
    assert_eq!(
        app.volume_action(&id, json!({"os-roll_detaching": {}}))
            .await
            .status,
        202
    );
    assert_eq!(app.volume_status(&id).await, "in-use");
    app.assert_consistent(&id).await;
    // Reserving an in-use volume without multiattach is refused; unreserve of an
    // attached volume returns it to in-use.
    app.volume_action(&id, json!({"os-reserve": null}))
        .await
        .assert_fault(400, "badRequest", "must be available to reserve");
}

backend_tests!(
    zones_and_extensions,
    reserve_and_unreserve,
    detaching_begins_and_rolls_back
);

async fn volume_summary(app: TestApp) {
    for (size, metadata) in [
        (1, json!({"a": "1"})),
        (2, json!({"a": "2", "b": "x"})),
        (3, json!({"a": "1"})),
    ] {
        app.create_volume(json!({"size": size, "metadata": metadata}))
            .await;
    }
    let summary = app
        .get("/v3/p1/volumes/summary")
        .version("3.36")
        .send()
        .await;
    assert_eq!(summary.status, 200, "{}", summary.text);
    assert_eq!(
        summary.json,
        json!({"volume-summary": {"total_count": 3, "total_size": 6,
                                   "metadata": {"a": ["1", "2"], "b": ["x"]}}})
    );
    let older = app
        .get("/v3/p1/volumes/summary")
        .version("3.12")
        .send()
        .await;
    assert_eq!(
        older.json,
        json!({"volume-summary": {"total_count": 3, "total_size": 6}})
    );
    let filtered = app
        .get("/v3/p1/volumes/summary?metadata={'b':'x'}")
        .version("3.36")
        .send()
        .await;
    assert_eq!(
        filtered.json["volume-summary"]["total_count"], 1,
        "{}",
        filtered.text
    );
    // Another project sees nothing of p1's; before 3.12 there is no summary.
    let other = app
        .get("/v3/p2/volumes/summary")
        .token("eve:p2:member,reader")
        .version("3.36")
        .send()
        .await;
    assert_eq!(
        other.json,
        json!({"volume-summary": {"total_count": 0, "total_size": 0, "metadata": {}}})
    );
    assert_eq!(
        app.get("/v3/p1/volumes/summary")
            .version("3.11")
            .send()
            .await
            .status,
        404
    );
}

backend_tests!(volume_summary);

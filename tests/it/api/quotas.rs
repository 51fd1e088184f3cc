//! Quotas (`os-quota-sets`, `os-quota-class-sets`), `/limits`, and the quota check of
//! volume create and extend.

use axum::http::Method;
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::TestApp;

async fn put_quotas(app: &TestApp, project: &str, set: Value) -> crate::support::TestResponse {
    app.request(Method::PUT, &format!("/v3/p1/os-quota-sets/{project}"))
        .json(&json!({ "quota_set": set }))
        .send()
        .await
}

async fn live_volumes(app: &TestApp, project: &str) -> usize {
    app.db
        .column(&format!(
            "select cast(id as text) from volumes where project_id = '{project}' and deleted = false"
        ))
        .await
        .len()
}

async fn show_defaults_and_usage(app: TestApp) {
    let shown = app.get("/v3/p1/os-quota-sets/p1").send().await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    let set = &shown.json["quota_set"];
    let expected = json!({
        "id": "p1", "volumes": 10, "per_volume_gigabytes": -1, "snapshots": 10,
        "gigabytes": 1000, "backups": 10, "backup_gigabytes": 1000, "groups": 10,
        "volumes___DEFAULT__": -1, "gigabytes___DEFAULT__": -1, "snapshots___DEFAULT__": -1,
    });
    assert_eq!(set, &expected);

    app.create_volume(json!({"size": 2})).await;
    let used = app
        .get("/v3/p1/os-quota-sets/p1?usage=True")
        .token(MEMBER_P1)
        .send()
        .await;
    assert_eq!(used.status, 200, "{}", used.text);
    let set = &used.json["quota_set"];
    assert_eq!(set["id"], "p1");
    assert_eq!(
        set["volumes"],
        json!({"limit": 10, "in_use": 1, "reserved": 0})
    );
    assert_eq!(
        set["gigabytes"],
        json!({"limit": 1000, "in_use": 2, "reserved": 0})
    );
    assert_eq!(
        set["gigabytes___DEFAULT__"],
        json!({"limit": -1, "in_use": 2, "reserved": 0})
    );
    app.get("/v3/p1/os-quota-sets/p1?usage=maybe")
        .send()
        .await
        .assert_fault(
            400,
            "badRequest",
            "Value 'maybe' for 'usage' is not a boolean.",
        );
    // Another project's quotas are not a member's business.
    app.get("/v3/p1/os-quota-sets/p2")
        .token(MEMBER_P1)
        .send()
        .await
        .assert_fault(
            403,
            "forbidden",
            "Policy doesn't allow volume_extension:quotas:show to be performed.",
        );
}

async fn update_validate_and_delete(app: TestApp) {
    app.create_volume(json!({"size": 3})).await;
    let updated = put_quotas(
        &app,
        "p1",
        json!({"volumes": 4, "gigabytes": "50", "id": "x"}),
    )
    .await;
    assert_eq!(updated.status, 200, "{}", updated.text);
    let set = &updated.json["quota_set"];
    assert_eq!(set["volumes"], 4);
    assert_eq!(set["gigabytes"], 50);
    assert_eq!(set["snapshots"], 10);
    assert!(set.get("id").is_none(), "{set}");

    put_quotas(&app, "p1", json!({"volumes": 1, "bogus": 2, "other": 1}))
        .await
        .assert_fault(
            400,
            "badRequest",
            "Invalid input received: Bad key(s) in quota set: bogus, other",
        );
    put_quotas(&app, "p1", json!({"volumes": "many"}))
        .await
        .assert_fault(400, "badRequest", "volumes must be an integer");
    put_quotas(&app, "p1", json!({"volumes": -2}))
        .await
        .assert_fault(400, "badRequest", "volumes must be >= -1");
    put_quotas(&app, "p1", json!({"gigabytes": 2}))
        .await
        .assert_fault(
            400,
            "badRequest",
            "Quota gigabytes limit must be equal or greater than existing resources. Current \
             usage is 3 and the requested limit is 2.",
        );
    put_quotas(&app, "p1", json!({}))
        .await
        .assert_fault(400, "badRequest", "");
    app.request(Method::PUT, "/v3/p1/os-quota-sets/p1")
        .token(MEMBER_P1)
        .json(&json!({"quota_set": {"volumes": 100}}))
        .send()
        .await
        .assert_fault(
            403,
            "forbidden",
            "Policy doesn't allow volume_extension:quotas:update to be performed.",
        );
    // Refused updates changed nothing.
    let shown = app.get("/v3/p1/os-quota-sets/p1").send().await;
    assert_eq!(shown.json["quota_set"]["volumes"], 4);
    assert_eq!(shown.json["quota_set"]["gigabytes"], 50);

    let deleted = app
        .request(Method::DELETE, "/v3/p1/os-quota-sets/p1")
        .send()
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    let shown = app.get("/v3/p1/os-quota-sets/p1").send().await;
    assert_eq!(shown.json["quota_set"]["volumes"], 10);
    let live = app
        .db
        .column("select resource from quotas where project_id = 'p1' and deleted = false")
        .await;
    assert!(live.is_empty(), "{live:?}");
}

async fn creates_over_quota_get_413(app: TestApp) {
    assert_eq!(
        put_quotas(
            &app,
            "p1",
            json!({"volumes": 2, "gigabytes": 5, "per_volume_gigabytes": 4})
        )
        .await
        .status,
        200
    );
    app.create_volume(json!({"size": 1})).await;
    let big = app.post_volume(json!({"size": 5}), "3.71").await;
    big.assert_fault(
        413,
        "overLimit",
        "Requested volume size 5G is larger than maximum allowed limit 4G.",
    );
    assert_eq!(big.json["overLimit"]["retryAfter"], "0");
    assert_eq!(big.header("retry-after"), Some("0"));
    app.create_volume(json!({"size": 4})).await;
    app.post_volume(json!({"size": 1}), "3.71")
        .await
        .assert_fault(
            413,
            "overLimit",
            "Requested volume or snapshot exceeds allowed gigabytes quota. Requested 1G, quota is \
         5G and 5G has been consumed.",
        );
    assert_eq!(
        put_quotas(&app, "p1", json!({"gigabytes": -1}))
            .await
            .status,
        200
    );
    app.post_volume(json!({"size": 1}), "3.71")
        .await
        .assert_fault(
            413,
            "overLimit",
            "Maximum number of volumes allowed (2) exceeded for quota 'volumes'.",
        );
    assert_eq!(live_volumes(&app, "p1").await, 2);

    // Per-type limits count only that type's volumes.
    app.create_type("gold", json!({})).await;
    assert_eq!(
        put_quotas(&app, "p1", json!({"volumes": -1, "volumes_gold": 0}))
            .await
            .status,
        200
    );
    app.post_volume(json!({"size": 1, "volume_type": "gold"}), "3.71")
        .await
        .assert_fault(
            413,
            "overLimit",
            "Maximum number of volumes allowed (0) exceeded for quota 'volumes_gold'.",
        );
    app.create_volume(json!({"size": 1})).await;
    assert_eq!(live_volumes(&app, "p1").await, 3);
    // Deleting gives the room back.
    assert_eq!(
        put_quotas(&app, "p1", json!({"volumes": 3})).await.status,
        200
    );
    app.post_volume(json!({"size": 1}), "3.71")
        .await
        .assert_fault(413, "overLimit", "exceeded for quota 'volumes'");
    let ids = app
        .db
        .column("select cast(id as text) from volumes where project_id = 'p1' and deleted = false")
        .await;
    let deleted = app
        .request(Method::DELETE, &format!("/v3/p1/volumes/{}", ids[0]))
        .send()
        .await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
    app.create_volume(json!({"size": 1})).await;
}

async fn extend_counts_the_growth(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 2})).await, "id");
    assert_eq!(
        put_quotas(&app, "p1", json!({"gigabytes": 5})).await.status,
        200
    );
    let refused = app
        .volume_action(&volume, json!({"os-extend": {"new_size": 6}}))
        .await;
    refused.assert_fault(
        413,
        "overLimit",
        "Requested volume or snapshot exceeds allowed gigabytes quota. Requested 4G, quota is \
         5G and 2G has been consumed.",
    );
    assert_eq!(app.volume_status(&volume).await, "available");
    assert_eq!(
        app.db
            .column(&format!(
                "select cast(size as text) from volumes where id = '{volume}'"
            ))
            .await,
        ["2"]
    );
    let grown = app
        .volume_action(&volume, json!({"os-extend": {"new_size": 5}}))
        .await;
    assert_eq!(grown.status, 202, "{}", grown.text);
}

async fn parallel_creates_stop_at_the_quota(app: TestApp) {
    assert_eq!(
        put_quotas(&app, "p1", json!({"volumes": 5})).await.status,
        200
    );
    let requests: Vec<_> = (0..20)
        .map(|_| {
            app.request(Method::POST, "/v3/p1/volumes")
                .token(MEMBER_P1)
                .json(&json!({"volume": {"size": 1}}))
                .send()
        })
        .collect();
    let responses = all_at_once(requests).await;
    let created = responses.iter().filter(|r| r.status == 202).count();
    let refused = responses.iter().filter(|r| r.status == 413).count();
    assert_eq!(
        (created, refused),
        (5, 15),
        "{:?}",
        responses.iter().map(|r| &r.text).collect::<Vec<_>>()
    );
    assert_eq!(live_volumes(&app, "p1").await, 5);
}

async fn the_default_class_sets_every_projects_defaults(app: TestApp) {
    let updated = app
        .request(Method::PUT, "/v3/p1/os-quota-class-sets/default")
        .json(&json!({"quota_class_set": {"volumes": 3, "gigabytes": 30}}))
        .send()
        .await;
    assert_eq!(updated.status, 200, "{}", updated.text);
    assert_eq!(updated.json["quota_class_set"]["volumes"], 3);
    assert!(updated.json["quota_class_set"].get("id").is_none());
    let shown = app.get("/v3/p1/os-quota-class-sets/default").send().await;
    assert_eq!(shown.json["quota_class_set"]["id"], "default");
    assert_eq!(shown.json["quota_class_set"]["gigabytes"], 30);
    assert_eq!(shown.json["quota_class_set"]["snapshots"], 10);
    let defaults = app.get("/v3/p1/os-quota-sets/p2/defaults").send().await;
    assert_eq!(defaults.json["quota_set"]["id"], "p2");
    assert_eq!(defaults.json["quota_set"]["volumes"], 3);
    let p2 = app.get("/v3/p1/os-quota-sets/p2").send().await;
    assert_eq!(p2.json["quota_set"]["volumes"], 3);

    app.request(Method::PUT, "/v3/p1/os-quota-class-sets/default")
        .json(&json!({"quota_class_set": {"id": "x"}}))
        .send()
        .await
        .assert_fault(
            400,
            "badRequest",
            "Invalid input received: Bad key(s) in quota class set: id",
        );
    app.get("/v3/p1/os-quota-class-sets/default")
        .token(MEMBER_P1)
        .send()
        .await
        .assert_fault(
            403,
            "forbidden",
            "Policy doesn't allow volume_extension:quota_classes:get to be performed.",
        );
}

async fn limits_show_the_quota_and_its_use(app: TestApp) {
    app.create_volume(json!({"size": 3})).await;
    assert_eq!(
        put_quotas(&app, "p1", json!({"volumes": 7})).await.status,
        200
    );
    let limits = app.get("/v3/p1/limits").token(MEMBER_P1).send().await;
    assert_eq!(limits.status, 200, "{}", limits.text);
    assert_eq!(
        limits.json,
        json!({"limits": {"rate": [], "absolute": {
            "maxTotalVolumeGigabytes": 1000, "maxTotalBackupGigabytes": 1000,
            "maxTotalVolumes": 7, "maxTotalSnapshots": 10, "maxTotalBackups": 10,
            "totalVolumesUsed": 1, "totalGigabytesUsed": 3, "totalSnapshotsUsed": 0,
            "totalBackupsUsed": 0, "totalBackupGigabytesUsed": 0}}})
    );
    // An admin names another project from 3.39; a member cannot.
    let other = app
        .get("/v3/p1/limits?project_id=p2")
        .version("3.39")
        .send()
        .await;
    assert_eq!(other.json["limits"]["absolute"]["maxTotalVolumes"], 10);
    assert_eq!(other.json["limits"]["absolute"]["totalVolumesUsed"], 0);
    let own = app
        .get("/v3/p1/limits?project_id=p2")
        .version("3.39")
        .token(MEMBER_P1)
        .send()
        .await;
    assert_eq!(own.json["limits"]["absolute"]["maxTotalVolumes"], 7);
}

async fn renaming_a_type_keeps_its_quotas(app: TestApp) {
    let id = app.create_type("gold", json!({})).await;
    assert_eq!(
        put_quotas(&app, "p1", json!({"volumes_gold": 2}))
            .await
            .status,
        200
    );
    let renamed = app
        .request(Method::PUT, &format!("/v3/p1/types/{id}"))
        .json(&json!({"volume_type": {"name": "platinum"}}))
        .send()
        .await;
    assert_eq!(renamed.status, 200, "{}", renamed.text);
    let shown = app.get("/v3/p1/os-quota-sets/p1").send().await;
    assert_eq!(shown.json["quota_set"]["volumes_platinum"], 2);
    assert!(shown.json["quota_set"].get("volumes_gold").is_none());
}

backend_tests!(
    show_defaults_and_usage,
    update_validate_and_delete,
    creates_over_quota_get_413,
    extend_counts_the_growth,
    parallel_creates_stop_at_the_quota,
    the_default_class_sets_every_projects_defaults,
    limits_show_the_quota_and_its_use,
    renaming_a_type_keeps_its_quotas,
);

//! Attachment listings: scoping, the two views and their timestamps.

use serde_json::Value;

use crate::support::fixtures::{self, *};
use crate::support::helpers::ATTACHMENT_DETAIL_KEYS;
use crate::support::TestApp;

fn ids(body: &Value) -> Vec<&str> {
    body["attachments"]
        .as_array()
        .expect("attachments list")
        .iter()
        .map(|a| a["id"].as_str().expect("id"))
        .collect()
}

fn keys(item: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = item
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

async fn summary_items_have_four_keys(app: TestApp) {
    app.db
        .execute(&fixtures::two_projects_with_attachments())
        .await
        .unwrap();
    let response = app.get("/v3/attachments").version("3.27").send().await;
    assert_eq!(response.status, 200);
    assert_eq!(
        ids(&response.json),
        [ATTACHMENT_3, ATTACHMENT_2, ATTACHMENT_1]
    );
    let first = &response.json["attachments"][0];
    assert_eq!(keys(first), ["id", "instance", "status", "volume_id"]);
    assert_eq!(first["status"], "attached");
    assert_eq!(first["instance"], INSTANCE_2);
    assert_eq!(first["volume_id"], VOLUME_P1);
}

async fn detail_items_add_times_mode_and_connection(app: TestApp) {
    app.db
        .execute(&fixtures::two_projects_with_attachments())
        .await
        .unwrap();
    let response = app
        .get("/v3/p1/attachments/detail")
        .version("3.44")
        .send()
        .await;
    assert_eq!(response.status, 200);
    let items = response.json["attachments"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    for item in items {
        assert_eq!(keys(item), ATTACHMENT_DETAIL_KEYS);
    }
    let by_id = |id: &str| items.iter().find(|i| i["id"] == id).unwrap();
    let attached = by_id(ATTACHMENT_1);
    assert_eq!(attached["attached_at"], "2026-01-02T03:04:05.123456");
    assert_eq!(attached["detached_at"], "", "unset times are empty strings");
    assert_eq!(attached["attach_mode"], "rw");
    assert_eq!(attached["connection_info"]["driver_volume_type"], "local");
    let whole_second = by_id(ATTACHMENT_3);
    assert_eq!(whole_second["attached_at"], "2026-01-02T03:04:06.000000");
    let reserved = by_id(ATTACHMENT_2);
    assert_eq!(reserved["attached_at"], "");
    assert_eq!(reserved["attach_mode"], "null", "Cinder's literal string");
    assert_eq!(reserved["connection_info"], Value::Null);
}

async fn admins_see_other_projects_only_with_all_tenants(app: TestApp) {
    app.db
        .execute(&fixtures::two_projects_with_attachments())
        .await
        .unwrap();
    let own = app.get("/v3/attachments").version("3.27").send().await;
    assert_eq!(ids(&own.json).len(), 3);
    let all = app
        .get("/v3/attachments?all_tenants=1")
        .version("3.27")
        .send()
        .await;
    assert_eq!(
        ids(&all.json),
        [ATTACHMENT_P2, ATTACHMENT_3, ATTACHMENT_2, ATTACHMENT_1]
    );
    // Presence counts, not the value, as in Cinder.
    let zero = app
        .get("/v3/attachments?all_tenants=0")
        .version("3.27")
        .send()
        .await;
    assert_eq!(ids(&zero.json).len(), 4);
    let p2 = app
        .get("/v3/attachments?all_tenants=1&project_id=p2")
        .version("3.27")
        .send()
        .await;
    assert_eq!(ids(&p2.json), [ATTACHMENT_P2]);
}

async fn soft_deleted_attachments_are_not_listed(app: TestApp) {
    app.db
        .execute(&fixtures::two_projects_with_attachments())
        .await
        .unwrap();
    let response = app
        .get("/v3/attachments?all_tenants=1")
        .version("3.27")
        .send()
        .await;
    assert!(!ids(&response.json).contains(&ATTACHMENT_DELETED));
}

backend_tests!(
    summary_items_have_four_keys,
    detail_items_add_times_mode_and_connection,
    admins_see_other_projects_only_with_all_tenants,
    soft_deleted_attachments_are_not_listed,
);

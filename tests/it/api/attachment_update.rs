//! `PUT /attachments/{id}` and `os-complete`.

use axum::http::Method;
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::TestApp;

async fn reserved(app: &TestApp) -> (String, String) {
    let v = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let a = app.attach(&v, Some(I1), None).await;
    (v, a)
}

async fn update_connects(app: TestApp) {
    let (v, a) = reserved(&app).await;
    let response = app.put_attachment(&a, conn()).await;
    assert_eq!(response.status, 200, "{}", response.text);
    let info = &response.json["attachment"]["connection_info"];
    assert_eq!(info["attachment_id"], a);
    assert_eq!(info["access_mode"], "rw");
    assert!(info.get("data").is_none(), "flat connection info");
    let shown = app.show_attachment(&a).await.json["attachment"].clone();
    assert_eq!(
        shown, response.json["attachment"],
        "the answer is as stored"
    );
    assert_eq!(shown["status"], "attaching");
    assert_eq!(shown["attach_mode"], "rw");
    let attached_at = str_of(&shown, "attached_at");
    assert_eq!(attached_at.len(), 26, "{attached_at}");
    let volume = app.show_volume(&v, "3.44").await.json["volume"].clone();
    assert_eq!(volume["status"], "attaching");
    assert_eq!(volume["attachments"], json!([]));
    // The connector is kept as attachment specs.
    let specs = app.db.column(&format!("select key from attachment_specs where attachment_id = '{a}' and deleted = false order by key")).await;
    assert!(
        specs.contains(&"host".to_owned())
            && specs.contains(&"initiator".to_owned())
            && specs.contains(&"mode".to_owned()),
        "{specs:?}"
    );
    app.assert_consistent(&v).await;
}

async fn update_validation(app: TestApp) {
    let (v, a) = reserved(&app).await;
    let put = |body: Value| {
        app.request(Method::PUT, &format!("/v3/p1/attachments/{a}"))
            .version("3.44")
            .json(&body)
            .send()
    };
    put(json!({"attachment": {"connector": {}}}))
        .await
        .assert_fault(400, "badRequest", "should be non-empty");
    put(json!({"attachment": {}})).await.assert_fault(
        400,
        "badRequest",
        "'connector' is a required property",
    );
    put(json!({"attachment": {"connector": conn(), "mode": "ro"}}))
        .await
        .assert_fault(400, "badRequest", "('mode' was unexpected)");
    let mut no_host = conn();
    no_host.as_object_mut().unwrap().remove("host");
    put(json!({"attachment": {"connector": no_host}}))
        .await
        .assert_fault(
            400,
            "badRequest",
            "Connector doesn't have required information: host",
        );
    let unknown = "8c4a7f38-0000-4000-8000-000000000000";
    app.put_attachment(unknown, conn()).await.assert_fault(
        404,
        "itemNotFound",
        &format!("Volume attachment could not be found with filter: attachment_id = {unknown}."),
    );
    assert_eq!(
        app.volume_status(&v).await,
        "reserved",
        "refusals changed nothing"
    );
}

async fn error_volumes_refuse_updates(app: TestApp) {
    let (v, a) = reserved(&app).await;
    app.volume_action(&v, json!({"os-reset_status": {"status": "error"}}))
        .await;
    app.put_attachment(&a, conn()).await.assert_fault(
        409,
        "conflictingRequest",
        "Volume attachments can not be updated if the volume is in an error state",
    );
}

async fn duplicate_connectors_are_refused(app: TestApp) {
    let (v, first) = reserved(&app).await;
    let second = app.attach(&v, Some(I1), None).await;
    assert_eq!(app.put_attachment(&first, conn()).await.status, 200);
    app.put_attachment(&second, conn()).await.assert_fault(
        409,
        "conflictingRequest",
        &format!("duplicate connectors detected on volume {v}"),
    );
    let stored = app.show_attachment(&second).await.json["attachment"].clone();
    assert_eq!(stored["status"], "reserved");
}

async fn modes_at_update(app: TestApp) {
    // No mode at create: the connector's counts.
    let (_, a) = reserved(&app).await;
    let mut ro = conn();
    ro["mode"] = json!("ro");
    app.put_attachment(&a, ro).await;
    let shown = app.show_attachment(&a).await.json["attachment"].clone();
    assert_eq!(shown["attach_mode"], "ro");
    assert_eq!(
        shown["connection_info"]["access_mode"], "ro",
        "access mode follows the attachment (api-ref D25)"
    );
    // Mode given at create wins over the connector's.
    let v = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let created = app
        .post_attachment(json!({"volume_uuid": v, "mode": "ro"}), "3.54")
        .await;
    let b = str_of(&created.json["attachment"], "id");
    let mut rw = conn();
    rw["mode"] = json!("rw");
    app.put_attachment(&b, rw).await;
    assert_eq!(
        app.show_attachment(&b).await.json["attachment"]["attach_mode"],
        "ro"
    );
}

async fn reconnecting_an_attached_attachment(app: TestApp) {
    let v = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let a = app.attach_fully(&v, I1, conn()).await;
    assert_eq!(app.put_attachment(&a, conn()).await.status, 200);
    assert_eq!(
        app.show_attachment(&a).await.json["attachment"]["status"],
        "attaching"
    );
    assert_eq!(app.volume_status(&v).await, "attaching");
    assert_eq!(app.complete(&a).await.status, 204);
    assert_eq!(
        app.show_attachment(&a).await.json["attachment"]["status"],
        "attached"
    );
    assert_eq!(app.volume_status(&v).await, "in-use");
}

async fn other_projects_cannot_update(app: TestApp) {
    let (_, a) = reserved(&app).await;
    let response = app
        .request(Method::PUT, &format!("/v3/p2/attachments/{a}"))
        .token(MEMBER_P2)
        .version("3.44")
        .json(&json!({"attachment": {"connector": conn()}}))
        .send()
        .await;
    response.assert_fault(404, "itemNotFound", "Volume attachment could not be found");
}

async fn complete_attaches(app: TestApp) {
    let (v, a) = reserved(&app).await;
    app.put_attachment(&a, conn()).await;
    let response = app.complete(&a).await;
    assert_eq!(response.status, 204);
    assert!(response.text.is_empty());
    assert_eq!(
        app.show_attachment(&a).await.json["attachment"]["status"],
        "attached"
    );
    let volume = app.show_volume(&v, "3.44").await.json["volume"].clone();
    assert_eq!(volume["status"], "in-use");
    let listed = &volume["attachments"];
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["attachment_id"], a);
    assert_eq!(listed[0]["server_id"], I1);
    assert_eq!(listed[0]["device"], "/dev/vdb");
    assert_eq!(listed[0]["host_name"], "cmp-1");
    app.assert_consistent(&v).await;
}

async fn complete_bodies(app: TestApp) {
    for body in [json!({"os-complete": {}}), json!({"os-complete": "an id"})] {
        let (_, a) = reserved(&app).await;
        let response = app
            .request(Method::POST, &format!("/v3/p1/attachments/{a}/action"))
            .version("3.44")
            .json(&body)
            .send()
            .await;
        assert_eq!(response.status, 204, "{body}: {}", response.text);
    }
    let (_, a) = reserved(&app).await;
    let post = |body: Value| {
        app.request(Method::POST, &format!("/v3/p1/attachments/{a}/action"))
            .version("3.44")
            .json(&body)
            .send()
    };
    post(json!({"os-complete": null, "x": 1}))
        .await
        .assert_fault(400, "badRequest", "Malformed request body");
    post(json!({"os-foo": null})).await.assert_fault(
        400,
        "badRequest",
        "There is no such action: os-foo",
    );
    app.complete("8c4a7f38-0000-4000-8000-000000000000")
        .await
        .assert_fault(404, "itemNotFound", "could not be found");
}

async fn complete_without_connect(app: TestApp) {
    let (v, a) = reserved(&app).await;
    assert_eq!(app.complete(&a).await.status, 204);
    let volume = app.show_volume(&v, "3.44").await.json["volume"].clone();
    assert_eq!(volume["status"], "in-use");
    assert_eq!(volume["attachments"][0]["attached_at"], Value::Null);
}

backend_tests!(
    update_connects,
    update_validation,
    error_volumes_refuse_updates,
    duplicate_connectors_are_refused,
    modes_at_update,
    reconnecting_an_attached_attachment,
    other_projects_cannot_update,
    complete_attaches,
    complete_bodies,
    complete_without_connect,
);

//! Multi-attach: several consumers, `rw` and `ro` side by side.

use axum::http::Method;
use serde_json::json;

use crate::support::helpers::*;
use crate::support::TestApp;

async fn two_instances_one_volume(app: TestApp) {
    let v = app.multiattach_volume().await;
    app.attach_fully(&v, I1, conn_for("cmp-1", "/dev/vdb"))
        .await;
    // The first host keeps using the volume while the second attaches: in-use throughout.
    let second = app.attach(&v, Some(I2), None).await;
    assert_eq!(app.volume_status(&v).await, "in-use");
    app.put_attachment(&second, conn_for("cmp-2", "/dev/vdc"))
        .await;
    assert_eq!(app.volume_status(&v).await, "in-use");
    app.assert_consistent(&v).await;
    app.complete(&second).await;
    let volume = app.show_volume(&v, "3.44").await.json["volume"].clone();
    assert_eq!(volume["status"], "in-use");
    assert_eq!(volume["attachments"].as_array().unwrap().len(), 2);
    app.assert_consistent(&v).await;
}

/// Unlike Cinder, a multiattach volume takes a new attachment while another is reserved
/// or attaching; the volume's status follows the most advanced of them.
async fn new_attachments_while_others_are_pending(app: TestApp) {
    let v = app.multiattach_volume().await;
    let first = app.attach(&v, Some(I1), None).await;
    let second = app.attach(&v, Some(I2), None).await;
    assert_eq!(app.volume_status(&v).await, "reserved");
    app.put_attachment(&first, conn()).await;
    assert_eq!(app.volume_status(&v).await, "attaching");
    let third = app.attach(&v, Some(I3), None).await;
    assert_eq!(app.volume_status(&v).await, "attaching");
    app.assert_consistent(&v).await;
    app.complete(&first).await;
    assert_eq!(app.volume_status(&v).await, "in-use");
    app.delete_attachment(&first).await;
    assert_eq!(app.volume_status(&v).await, "reserved");
    for id in [&second, &third] {
        app.delete_attachment(id).await;
    }
    assert_eq!(app.volume_status(&v).await, "available");
    app.assert_consistent(&v).await;
    // A legacy detach in progress still refuses new attachments.
    let w = str_of(
        &app.create_volume(json!({"size": 1, "volume_type": "ma"}))
            .await,
        "id",
    );
    app.attach_fully(&w, I1, conn()).await;
    app.volume_action(&w, json!({"os-begin_detaching": null}))
        .await;
    app.post_attachment(json!({"volume_uuid": w, "instance_uuid": I2}), "3.44")
        .await
        .assert_fault(400, "badRequest", "but the current status is detaching.");
}

async fn bootable_multiattach_needs_its_own_rule(app: TestApp) {
    let v = app.multiattach_volume().await;
    app.volume_action(&v, json!({"os-set_bootable": {"bootable": true}}))
        .await;
    let denied = app.with_rule("volume:multiattach_bootable_volume", "!");
    // The first attachment (volume available) is not subject to the rule.
    denied.attach_fully(&v, I1, conn()).await;
    denied
        .post_attachment(json!({"volume_uuid": v, "instance_uuid": I2}), "3.44")
        .await
        .assert_fault(
            403,
            "forbidden",
            "Policy doesn't allow volume:multiattach_bootable_volume to be performed.",
        );
    assert_eq!(denied.volume_status(&v).await, "in-use", "nothing changed");
    // A volume only reserved by another server asks the rule too: it is shared as well.
    let w = str_of(
        &denied
            .create_volume(json!({"size": 1, "volume_type": "ma"}))
            .await,
        "id",
    );
    denied
        .volume_action(&w, json!({"os-set_bootable": {"bootable": true}}))
        .await;
    denied.attach(&w, Some(I1), None).await;
    denied
        .post_attachment(json!({"volume_uuid": w, "instance_uuid": I2}), "3.44")
        .await
        .assert_fault(403, "forbidden", "volume:multiattach_bootable_volume");
    let allowed = denied.with_rule(
        "volume:multiattach_bootable_volume",
        "rule:xena_system_admin_or_project_member",
    );
    allowed.attach(&v, Some(I2), None).await;
    allowed.attach(&w, Some(I2), None).await;
}

async fn read_write_and_read_only_side_by_side(app: TestApp) {
    let v = app.multiattach_volume().await;
    let rw = app
        .post_attachment(
            json!({"volume_uuid": v, "instance_uuid": I1, "mode": "rw"}),
            "3.54",
        )
        .await;
    let rw = str_of(&rw.json["attachment"], "id");
    app.put_attachment(&rw, conn_for("cmp-1", "/dev/vdb")).await;
    app.complete(&rw).await;
    let ro = app
        .post_attachment(
            json!({"volume_uuid": v, "instance_uuid": I2, "mode": "ro"}),
            "3.54",
        )
        .await;
    let ro = str_of(&ro.json["attachment"], "id");
    app.put_attachment(&ro, conn_for("cmp-2", "/dev/vdc")).await;
    app.complete(&ro).await;
    let listed = app
        .get(&format!(
            "/v3/p1/attachments/detail?volume_id={v}&sort=instance_uuid:asc"
        ))
        .version("3.54")
        .send()
        .await;
    let items = listed.json["attachments"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(
        (
            items[0]["attach_mode"].as_str(),
            items[0]["status"].as_str()
        ),
        (Some("rw"), Some("attached"))
    );
    assert_eq!(
        (
            items[1]["attach_mode"].as_str(),
            items[1]["status"].as_str()
        ),
        (Some("ro"), Some("attached"))
    );
    assert_eq!(items[0]["connection_info"]["access_mode"], "rw");
    assert_eq!(items[1]["connection_info"]["access_mode"], "ro");
}

async fn nova_flow_at_3_44_and_3_54(app: TestApp) {
    let v = app.multiattach_volume().await;
    for (instance, version, mode) in [(I1, "3.44", None), (I2, "3.54", Some("ro"))] {
        let mut body = json!({"volume_uuid": v, "instance_uuid": instance});
        if let Some(mode) = mode {
            body["mode"] = json!(mode);
        }
        let created = app.post_attachment(body, version).await;
        assert_eq!(created.status, 200, "{}", created.text);
        let id = str_of(&created.json["attachment"], "id");
        let updated = app
            .request(Method::PUT, &format!("/v3/p1/attachments/{id}"))
            .version(version)
            .json(&json!({"attachment": {"connector": conn_for(instance, "/dev/vdb")}}))
            .send()
            .await;
        assert_eq!(updated.status, 200, "{}", updated.text);
        let completed = app
            .request(Method::POST, &format!("/v3/p1/attachments/{id}/action"))
            .version(version)
            .json(&json!({"os-complete": null}))
            .send()
            .await;
        assert_eq!(completed.status, 204);
    }
    let volume = app.show_volume(&v, "3.54").await.json["volume"].clone();
    assert_eq!(volume["status"], "in-use");
    assert_eq!(volume["attachments"].as_array().unwrap().len(), 2);
    for attachment in volume["attachments"].as_array().unwrap().clone() {
        app.delete_attachment(&str_of(&attachment, "attachment_id"))
            .await;
    }
    assert_eq!(app.volume_status(&v).await, "available");
}

backend_tests!(
    two_instances_one_volume,
    new_attachments_while_others_are_pending,
    bootable_multiattach_needs_its_own_rule,
    read_write_and_read_only_side_by_side,
    nova_flow_at_3_44_and_3_54,
);

//! `DELETE /attachments/{id}` and the status recompute.

use axum::http::Method;
use serde_json::json;

use crate::support::helpers::*;
use crate::support::TestApp;

async fn deleting_the_only_attachment_frees_the_volume(app: TestApp) {
    for connect in [false, true] {
        let v = str_of(&app.create_volume(json!({"size": 1})).await, "id");
        let a = if connect {
            app.attach_fully(&v, I1, conn()).await
        } else {
            app.attach(&v, Some(I1), None).await
        };
        let response = app.delete_attachment(&a).await;
        assert_eq!(response.status, 200, "{}", response.text);
        assert_eq!(response.json, json!({"attachments": []}));
        let volume = app.show_volume(&v, "3.44").await.json["volume"].clone();
        assert_eq!(volume["status"], "available");
        assert_eq!(volume["attachments"], json!([]));
        app.show_attachment(&a)
            .await
            .assert_fault(404, "itemNotFound", "could not be found");
        app.delete_attachment(&a)
            .await
            .assert_fault(404, "itemNotFound", "could not be found");
        let stored = app
            .db
            .column(&format!(
                "select attach_status from volume_attachment where id = '{a}'"
            ))
            .await;
        assert_eq!(stored, ["detached"], "kept, soft-deleted");
        app.assert_consistent(&v).await;
    }
    app.delete_attachment("8c4a7f38-0000-4000-8000-000000000000")
        .await
        .assert_fault(404, "itemNotFound", "could not be found");
}

async fn siblings_decide_the_status(app: TestApp) {
    let v = app.multiattach_volume().await;
    let a1 = app
        .attach_fully(&v, I1, conn_for("cmp-1", "/dev/vdb"))
        .await;
    let a2 = app
        .attach_fully(&v, I2, conn_for("cmp-2", "/dev/vdc"))
        .await;
    let response = app.delete_attachment(&a1).await;
    assert_eq!(response.json["attachments"][0]["id"], a2);
    assert_eq!(response.json["attachments"][0]["status"], "attached");
    let volume = app.show_volume(&v, "3.44").await.json["volume"].clone();
    assert_eq!(volume["status"], "in-use");
    assert_eq!(volume["attachments"].as_array().unwrap().len(), 1);
    assert_eq!(volume["attachments"][0]["attachment_id"], a2);
    app.assert_consistent(&v).await;

    // A1 attached, A2 reserved (volume in-use); deleting A1 leaves it reserved.
    let w = str_of(
        &app.create_volume(json!({"size": 1, "volume_type": "ma"}))
            .await,
        "id",
    );
    let b1 = app.attach_fully(&w, I1, conn()).await;
    let b2 = app.attach(&w, Some(I2), None).await;
    assert_eq!(app.volume_status(&w).await, "in-use");
    let response = app.delete_attachment(&b1).await;
    assert_eq!(response.json["attachments"][0]["id"], b2);
    assert_eq!(app.volume_status(&w).await, "reserved");

    // A1 attached, A2 attaching: the volume is in-use throughout.
    let x = str_of(
        &app.create_volume(json!({"size": 1, "volume_type": "ma"}))
            .await,
        "id",
    );
    app.attach_fully(&x, I1, conn()).await;
    let c2 = app.attach(&x, Some(I2), None).await;
    app.put_attachment(&c2, conn_for("cmp-2", "/dev/vdc")).await;
    assert_eq!(app.volume_status(&x).await, "in-use");
    app.delete_attachment(&c2).await;
    assert_eq!(app.volume_status(&x).await, "in-use");
    app.assert_consistent(&x).await;
}

async fn readers_may_not_detach(app: TestApp) {
    let v = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let a = app.attach(&v, Some(I1), None).await;
    let response = app
        .request(Method::DELETE, &format!("/v3/p1/attachments/{a}"))
        .token(READER_P1)
        .version("3.44")
        .send()
        .await;
    response.assert_fault(
        403,
        "forbidden",
        "Policy doesn't allow volume:attachment_delete to be performed.",
    );
    let member = app
        .request(Method::DELETE, &format!("/v3/p1/attachments/{a}"))
        .token(MEMBER_P1)
        .version("3.44")
        .send()
        .await;
    assert_eq!(member.status, 200, "{}", member.text);
}

async fn error_attachments_are_ignored(app: TestApp) {
    let v = app.multiattach_volume().await;
    let keep = app.attach_fully(&v, I1, conn()).await;
    let broken = app.attach(&v, Some(I2), None).await;
    app.db
        .execute(&format!(
            "update volume_attachment set attach_status = 'error_attaching' where id = '{broken}'"
        ))
        .await
        .unwrap();
    app.delete_attachment(&keep).await;
    assert_eq!(app.volume_status(&v).await, "available");
    let listed = app
        .get(&format!("/v3/p1/attachments?volume_id={v}"))
        .version("3.44")
        .send()
        .await;
    assert_eq!(
        listed.json["attachments"][0]["status"], "error_attaching",
        "still listed"
    );
}

async fn a_volume_with_attachments_cannot_be_deleted(app: TestApp) {
    let v = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let a = app.attach(&v, Some(I1), None).await;
    app.request(Method::DELETE, &format!("/v3/p1/volumes/{v}"))
        .send()
        .await
        .assert_fault(400, "badRequest", "Volume status must be available");
    app.delete_attachment(&a).await;
    assert_eq!(
        app.request(Method::DELETE, &format!("/v3/p1/volumes/{v}"))
            .send()
            .await
            .status,
        202
    );
}

async fn reset_to_detached_detaches_everything(app: TestApp) {
    let v = app.multiattach_volume().await;
    app.attach_fully(&v, I1, conn()).await;
    app.attach_fully(&v, I2, conn_for("cmp-2", "/dev/vdc"))
        .await;
    let response = app
        .volume_action(
            &v,
            json!({"os-reset_status": {"status": "available", "attach_status": "detached"}}),
        )
        .await;
    assert_eq!(response.status, 202, "{}", response.text);
    assert_eq!(app.live_attachments(&v).await, 0);
    assert_eq!(app.volume_status(&v).await, "available");
    app.assert_consistent(&v).await;
    // One transaction: one clock reading for both, and their connectors went with them.
    let stamps = app
        .db
        .column(&format!(
            "select distinct cast(deleted_at as text) from volume_attachment \
              where volume_id = '{v}'"
        ))
        .await;
    assert_eq!(stamps.len(), 1, "{stamps:?}");
    let connectors = app
        .db
        .column(&format!(
            "select s.key from attachment_specs s join volume_attachment a \
               on a.id = s.attachment_id where a.volume_id = '{v}' and s.deleted = false"
        ))
        .await;
    assert!(connectors.is_empty(), "{connectors:?}");
}

/// A volume attached the legacy way carries `attached_mode` in its admin metadata; a
/// detach removes it, as Cinder's `finish_detach` does (and leaves other keys alone).
async fn a_detach_forgets_the_attached_mode(app: TestApp) {
    let v = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let a = app.attach_fully(&v, I1, conn()).await;
    app.db
        .execute(&format!(
            "insert into volume_admin_metadata (volume_id, key, value, created_at, deleted) \
             values ('{v}', 'attached_mode', 'rw', '2026-01-01T00:00:00Z', false), \
                    ('{v}', 'readonly', 'False', '2026-01-01T00:00:00Z', false)"
        ))
        .await
        .unwrap();
    assert_eq!(app.delete_attachment(&a).await.status, 200);
    let live = app
        .db
        .column(&format!(
            "select key from volume_admin_metadata where volume_id = '{v}' and deleted = false order by key"
        ))
        .await;
    assert_eq!(live, ["readonly"]);
}

backend_tests!(
    a_detach_forgets_the_attached_mode,
    deleting_the_only_attachment_frees_the_volume,
    siblings_decide_the_status,
    readers_may_not_detach,
    error_attachments_are_ignored,
    a_volume_with_attachments_cannot_be_deleted,
    reset_to_detached_detaches_everything,
);

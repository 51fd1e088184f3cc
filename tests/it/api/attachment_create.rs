//! `POST /attachments`: validation and reservation rules.

use axum::http::Method;
use serde_json::{json, Value};

use std::time::Duration;

use crate::support::helpers::*;
use crate::support::lock::VolumeLock;
use crate::support::TestApp;

async fn new_volume(app: &TestApp) -> String {
    str_of(&app.create_volume(json!({"size": 1})).await, "id")
}

async fn body_validation(app: TestApp) {
    let v = new_volume(&app).await;
    let create = |body: Value, version: &'static str| {
        app.request(Method::POST, "/v3/p1/attachments")
            .version(version)
            .json(&body)
            .send()
    };
    create(json!({}), "3.44").await.assert_fault(
        400,
        "badRequest",
        "'attachment' is a required property",
    );
    create(json!({"attachment": {"instance_uuid": I1}}), "3.44")
        .await
        .assert_fault(400, "badRequest", "'volume_uuid' is a required property");
    create(
        json!({"attachment": {"volume_uuid": "invalid-uuid"}}),
        "3.44",
    )
    .await
    .assert_fault(400, "badRequest", "is not a 'uuid'");
    create(
        json!({"attachment": {"volume_uuid": v, "instance_uuid": "invalid-uuid"}}),
        "3.44",
    )
    .await
    .assert_fault(400, "badRequest", "is not a 'uuid'");
    create(
        json!({"attachment": {"volume_uuid": v, "instance_uuid": null}}),
        "3.44",
    )
    .await
    .assert_fault(400, "badRequest", "None is not of type 'string'");
    create(json!({"attachment": {"volume_uuid": 123}}), "3.44")
        .await
        .assert_fault(400, "badRequest", "is not of type 'string'");
    create(json!({"attachment": {"volume_uuid": v, "foo": 1}}), "3.44")
        .await
        .assert_fault(
            400,
            "badRequest",
            "Additional properties are not allowed ('foo' was unexpected)",
        );
    create(json!({"attachment": {"volume_uuid": v}, "bar": 1}), "3.27")
        .await
        .assert_fault(
            400,
            "badRequest",
            "Additional properties are not allowed ('bar' was unexpected)",
        );
    create(json!({"attachment": {"volume_uuid": v, "foo": 1}}), "3.71")
        .await
        .assert_fault(400, "badRequest", "('foo' was unexpected)");
    for connector in [json!([]), json!("x")] {
        create(
            json!({"attachment": {"volume_uuid": v, "connector": connector}}),
            "3.44",
        )
        .await
        .assert_fault(400, "badRequest", "is not of type 'object', 'null'");
    }
    create(
        json!({"attachment": {"volume_uuid": v, "mode": "ro"}}),
        "3.53",
    )
    .await
    .assert_fault(400, "badRequest", "'mode' was unexpected");
    create(
        json!({"attachment": {"volume_uuid": v, "mode": "rx"}}),
        "3.54",
    )
    .await
    .assert_fault(400, "badRequest", "'rx' is not one of ['rw', 'ro']");
    let unknown = "8c4a7f38-0000-4000-8000-000000000000";
    create(json!({"attachment": {"volume_uuid": unknown}}), "3.44")
        .await
        .assert_fault(
            404,
            "itemNotFound",
            &format!("Volume {unknown} could not be found."),
        );
    assert_eq!(
        app.volume_status(&v).await,
        "available",
        "nothing was reserved"
    );
    assert_eq!(app.live_attachments(&v).await, 0);
    // null connector reserves; odd spellings of a uuid pass the schema.
    let ok = create(
        json!({"attachment": {"volume_uuid": v.to_uppercase(), "connector": null}}),
        "3.44",
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    let braces = new_volume(&app).await;
    let ok = create(
        json!({"attachment": {"volume_uuid": format!("{{{braces}}}")}}),
        "3.44",
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.text);
}

async fn reserve_without_connector(app: TestApp) {
    let v = new_volume(&app).await;
    let response = app
        .post_attachment(json!({"volume_uuid": v, "instance_uuid": I1}), "3.44")
        .await;
    assert_eq!(response.status, 200, "{}", response.text);
    let a = &response.json["attachment"];
    assert_eq!(a["status"], "reserved");
    assert_eq!(a["instance"], I1);
    assert_eq!(a["volume_id"], v);
    assert_eq!(a["attach_mode"], "null");
    assert_eq!(a["connection_info"], json!({}));
    assert_eq!(a["attached_at"], "");
    assert_eq!(a["detached_at"], "");
    let volume = app.show_volume(&v, "3.44").await.json["volume"].clone();
    assert_eq!(volume["status"], "reserved");
    assert_eq!(
        volume["attachments"],
        json!([]),
        "reserved attachments are not listed on the volume"
    );
    // Without an instance.
    let other = new_volume(&app).await;
    let response = app
        .post_attachment(json!({"volume_uuid": other}), "3.44")
        .await;
    assert_eq!(response.json["attachment"]["instance"], Value::Null);
    app.assert_consistent(&v).await;
}

async fn volumes_in_error_or_busy_are_refused(app: TestApp) {
    let v = new_volume(&app).await;
    app.volume_action(&v, json!({"os-reset_status": {"status": "error"}}))
        .await;
    app.post_attachment(json!({"volume_uuid": v}), "3.44").await.assert_fault(
        400,
        "badRequest",
        &format!("Invalid volume: Volume attachments can not be created if the volume is in an error state. The Volume {v} currently has a status of: error "),
    );
    let creating = new_volume(&app).await;
    app.volume_action(
        &creating,
        json!({"os-reset_status": {"status": "creating"}}),
    )
    .await;
    app.post_attachment(json!({"volume_uuid": creating}), "3.44").await.assert_fault(
        400,
        "badRequest",
        "status must be available or downloading to reserve, but the current status is creating",
    );
    assert_eq!(
        app.live_attachments(&v).await + app.live_attachments(&creating).await,
        0
    );
}

async fn second_instance_is_refused_on_a_single_attach_volume(app: TestApp) {
    let v = new_volume(&app).await;
    app.attach(&v, Some(I1), None).await;
    app.post_attachment(json!({"volume_uuid": v, "instance_uuid": I2}), "3.44").await.assert_fault(
        400,
        "badRequest",
        "status must be available or downloading to reserve, but the current status is reserved",
    );
    assert_eq!(app.live_attachments(&v).await, 1);
    // Attached to I1 (in-use): I2 is still refused, and so is a create without instance.
    let w = new_volume(&app).await;
    app.attach_fully(&w, I1, conn()).await;
    app.post_attachment(json!({"volume_uuid": w, "instance_uuid": I2}), "3.44")
        .await
        .assert_fault(400, "badRequest", "but the current status is in-use.");
    app.post_attachment(json!({"volume_uuid": w}), "3.44")
        .await
        .assert_fault(400, "badRequest", "but the current status is in-use.");
    assert_eq!(app.volume_status(&w).await, "in-use");
    app.assert_consistent(&w).await;
}

async fn same_instance_may_attach_again(app: TestApp) {
    // Reserved by I1: I1 again is allowed; deleting one leaves the volume reserved.
    let v = new_volume(&app).await;
    let first = app.attach(&v, Some(I1), None).await;
    app.attach(&v, Some(I1), None).await;
    assert_eq!(app.live_attachments(&v).await, 2);
    assert_eq!(app.volume_status(&v).await, "reserved");
    let deleted = app.delete_attachment(&first).await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    assert_eq!(app.volume_status(&v).await, "reserved");
    assert_eq!(app.live_attachments(&v).await, 1);
    // In-use by I1: a new reservation for I1 keeps the volume in-use; deleting the
    // attached one leaves it reserved.
    let w = new_volume(&app).await;
    let attached = app.attach_fully(&w, I1, conn()).await;
    app.attach(&w, Some(I1), None).await;
    assert_eq!(app.volume_status(&w).await, "in-use");
    app.delete_attachment(&attached).await;
    assert_eq!(app.volume_status(&w).await, "reserved");
    app.assert_consistent(&w).await;
}

async fn one_shot_create_connects(app: TestApp) {
    let v = new_volume(&app).await;
    let response = app
        .post_attachment(
            json!({"volume_uuid": v, "instance_uuid": I1, "connector": conn()}),
            "3.44",
        )
        .await;
    assert_eq!(response.status, 200, "{}", response.text);
    let a = &response.json["attachment"];
    let id = str_of(a, "id");
    let info = &a["connection_info"];
    assert_eq!(info["driver_volume_type"], "local");
    assert_eq!(info["access_mode"], "rw");
    assert_eq!(info["attachment_id"], id);
    assert_eq!(info["enforce_multipath"], false);
    assert!(info["device_path"]
        .as_str()
        .unwrap()
        .ends_with(&format!("volume-{v}")));
    assert_eq!(
        a["status"], "attaching",
        "the stored state, not Cinder's stale one"
    );
    assert_eq!(a["attach_mode"], "rw");
    let shown = app.show_attachment(&id).await.json["attachment"].clone();
    assert_eq!(shown["status"], "attaching");
    assert_eq!(&shown, a, "the answer is the attachment as stored");
    assert_eq!(app.volume_status(&v).await, "attaching");
    app.assert_consistent(&v).await;
    // The lookup behind complete and delete carries the volume's backend host.
    let record = app
        .store
        .get_attachment(id.parse().unwrap())
        .await
        .unwrap()
        .expect("live attachment");
    let host = app
        .db
        .column(&format!("select host from volumes where id = '{v}'"))
        .await;
    assert_eq!(record.volume_host.as_deref(), Some(host[0].as_str()));
    assert_eq!(record.connector.host(), Some("cmp-1"));
}

async fn a_bad_connector_changes_nothing(app: TestApp) {
    let dir = app.volumes_dir.join("iscsi");
    let spec = format!("iscsi=iscsi-sim,dir={}", dir.display());
    let app = app.with_backends(&[spec.as_str()]).await;
    let v = new_volume(&app).await;
    let mut connector = conn();
    connector.as_object_mut().unwrap().remove("initiator");
    app.post_attachment(json!({"volume_uuid": v, "connector": connector}), "3.44")
        .await
        .assert_fault(
            400,
            "badRequest",
            "Invalid input received: Connector doesn't have required information: initiator",
        );
    assert_eq!(app.volume_status(&v).await, "available");
    assert_eq!(app.live_attachments(&v).await, 0);
    // With an initiator the iSCSI target data comes back.
    let response = app
        .post_attachment(json!({"volume_uuid": v, "connector": conn()}), "3.44")
        .await;
    let info = &response.json["attachment"]["connection_info"];
    assert_eq!(info["driver_volume_type"], "iscsi");
    assert_eq!(
        info["target_iqn"],
        format!("iqn.2010-10.org.openstack:volume-{v}")
    );
    assert_eq!(info["target_portal"], "127.0.0.1:3260");
}

async fn a_failing_backend_rolls_the_reservation_back(app: TestApp) {
    let v = new_volume(&app).await;
    // The volume's data disappears: the backend cannot export it.
    std::fs::remove_file(app.volume_file(&v)).unwrap();
    let response = app
        .post_attachment(
            json!({"volume_uuid": v, "instance_uuid": I1, "connector": conn()}),
            "3.44",
        )
        .await;
    response.assert_fault(
        500,
        "computeFault",
        "Unable to create attachment for volume (",
    );
    assert_eq!(app.volume_status(&v).await, "available");
    assert_eq!(app.live_attachments(&v).await, 0);
}

async fn readonly_volumes_attach_read_only(app: TestApp) {
    let v = new_volume(&app).await;
    app.volume_action(&v, json!({"os-update_readonly_flag": {"readonly": true}}))
        .await;
    let response = app
        .post_attachment(json!({"volume_uuid": v, "mode": "rw"}), "3.54")
        .await;
    assert_eq!(response.json["attachment"]["attach_mode"], "ro");
    // A readonly flag set to False does not force anything (Cinder would).
    let w = new_volume(&app).await;
    app.volume_action(&w, json!({"os-update_readonly_flag": {"readonly": false}}))
        .await;
    let response = app
        .post_attachment(json!({"volume_uuid": w, "mode": "rw"}), "3.54")
        .await;
    assert_eq!(response.json["attachment"]["attach_mode"], "rw");
}

async fn mode_at_3_54(app: TestApp) {
    let v = new_volume(&app).await;
    let response = app
        .post_attachment(json!({"volume_uuid": v, "mode": "ro"}), "3.54")
        .await;
    assert_eq!(response.status, 200, "{}", response.text);
    assert_eq!(response.json["attachment"]["attach_mode"], "ro");
}

async fn readers_may_not_attach(app: TestApp) {
    let v = new_volume(&app).await;
    let response = app
        .request(Method::POST, "/v3/p1/attachments")
        .token(READER_P1)
        .version("3.44")
        .json(&json!({"attachment": {"volume_uuid": v}}))
        .send()
        .await;
    response.assert_fault(
        403,
        "forbidden",
        "Policy doesn't allow volume:attachment_create to be performed.",
    );
    assert_eq!(app.volume_status(&v).await, "available");
    let stranger = app
        .request(Method::POST, "/v3/p2/attachments")
        .token(MEMBER_P2)
        .version("3.44")
        .json(&json!({"attachment": {"volume_uuid": v}}))
        .send()
        .await;
    stranger.assert_fault(404, "itemNotFound", "could not be found");
}

/// A refusal that the status already decides is answered without the volume's lock, so
/// a crowd of attaches to a busy volume does not queue in front of the attach that holds
/// it; what the lock guards still waits for it.
async fn a_busy_volume_is_refused_without_its_lock(app: TestApp) {
    let v = new_volume(&app).await;
    {
        let volume = &v;
        let first = app
            .post_attachment(
                json!({"volume_uuid": volume, "instance_uuid": I1, "connector": conn()}),
                "3.44",
            )
            .await;
        assert_eq!(first.status, 200, "{}", first.text);
        assert_eq!(app.volume_status(volume).await, "attaching");
        let lock = VolumeLock::take(&app.db, volume).await;
        let refused = tokio::time::timeout(
            Duration::from_secs(3),
            app.post_attachment(json!({"volume_uuid": volume, "instance_uuid": I2}), "3.44"),
        )
        .await
        .expect("refused without waiting for the lock");
        refused.assert_fault(400, "badRequest", "but the current status is attaching.");
        lock.release().await;
        assert_eq!(app.live_attachments(volume).await, 1);
        assert_eq!(app.volume_status(volume).await, "attaching");
        app.assert_consistent(volume).await;
    }
}

backend_tests!(
    a_busy_volume_is_refused_without_its_lock,
    body_validation,
    reserve_without_connector,
    volumes_in_error_or_busy_are_refused,
    second_instance_is_refused_on_a_single_attach_volume,
    same_instance_may_attach_again,
    one_shot_create_connects,
    a_bad_connector_changes_nothing,
    a_failing_backend_rolls_the_reservation_back,
    readonly_volumes_attach_read_only,
    mode_at_3_54,
    readers_may_not_attach,
);

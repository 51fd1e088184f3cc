//! The legacy attach actions (`os-initialize_connection`, `os-attach`,
//! `os-terminate_connection`, `os-detach`, `os-force_detach`) and how they mix with the
//! attachments API: one set of attachment rows, one status aggregator.

use axum::http::Method;
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::TestApp;

impl TestApp {
    async fn legacy(
        &self,
        volume: &str,
        action: &str,
        fields: Value,
    ) -> crate::support::TestResponse {
        self.volume_action(volume, json!({ action: fields })).await
    }

    async fn legacy_ok(&self, volume: &str, action: &str, fields: Value) -> Value {
        let response = self.legacy(volume, action, fields).await;
        let expected = if action == "os-initialize_connection" {
            200
        } else {
            202
        };
        assert_eq!(response.status, expected, "{action}: {}", response.text);
        response.json
    }

    /// The volume's live attachments as `GET /attachments` lists them (detail view).
    async fn attachments_of(&self, volume: &str) -> Vec<Value> {
        let listed = self
            .get(&format!("/v3/p1/attachments/detail?volume_id={volume}"))
            .version("3.44")
            .send()
            .await;
        assert_eq!(listed.status, 200, "{}", listed.text);
        listed.json["attachments"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

/// Nova's legacy attach and detach, step by step, with the volume status after each.
async fn nova_attaches_and_detaches_the_old_way(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    app.legacy_ok(&id, "os-reserve", json!(null)).await;
    assert_eq!(app.volume_status(&id).await, "attaching");
    let answer = app
        .legacy_ok(
            &id,
            "os-initialize_connection",
            json!({"connector": conn()}),
        )
        .await;
    let info = &answer["connection_info"];
    assert_eq!(info["driver_volume_type"], "local", "{answer}");
    assert_eq!(info["enforce_multipath"], false);
    assert_eq!(info["data"]["access_mode"], "rw");
    assert!(info["data"]["device_path"].is_string(), "{answer}");
    assert!(info["data"].as_object().unwrap().contains_key("qos_specs"));
    let attachment_id = str_of(&info["data"], "attachment_id");
    assert_eq!(app.volume_status(&id).await, "attaching");
    // The connection is an attachment the attachments API shows.
    let listed = app.attachments_of(&id).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], attachment_id.as_str());
    assert_eq!(listed[0]["status"], "attaching");
    assert_eq!(
        listed[0]["connection_info"]["attachment_id"],
        attachment_id.as_str()
    );

    app.legacy_ok(
        &id,
        "os-attach",
        json!({"instance_uuid": I1, "mountpoint": "/dev/vdb", "mode": "rw"}),
    )
    .await;
    assert_eq!(app.volume_status(&id).await, "in-use");
    let shown = app.show_attachment(&attachment_id).await;
    assert_eq!(
        shown.json["attachment"]["status"], "attached",
        "{}",
        shown.text
    );
    assert_eq!(shown.json["attachment"]["instance"], I1);
    let volume = app.show_volume(&id, "3.71").await.json["volume"].clone();
    assert_eq!(volume["attachments"][0]["server_id"], I1, "{volume}");
    assert_eq!(
        volume["attachments"][0]["attachment_id"],
        attachment_id.as_str()
    );
    assert_eq!(volume["metadata"]["attached_mode"], "rw", "{volume}");
    app.assert_consistent(&id).await;

    app.legacy_ok(&id, "os-begin_detaching", json!(null)).await;
    assert_eq!(app.volume_status(&id).await, "detaching");
    app.legacy_ok(&id, "os-terminate_connection", json!({"connector": conn()}))
        .await;
    // The host's connection ended; the attachment stays until os-detach.
    assert_eq!(app.volume_status(&id).await, "detaching");
    let shown = app.show_attachment(&attachment_id).await;
    assert_eq!(shown.json["attachment"]["status"], "attached");
    assert_eq!(shown.json["attachment"]["connection_info"], json!({}));
    app.legacy_ok(&id, "os-detach", json!({"attachment_id": attachment_id}))
        .await;
    assert_eq!(app.volume_status(&id).await, "available");
    assert!(app.attachments_of(&id).await.is_empty());
    assert_eq!(app.live_attachments(&id).await, 0);
    let volume = app.show_volume(&id, "3.71").await.json["volume"].clone();
    assert!(
        volume["metadata"].get("attached_mode").is_none(),
        "{volume}"
    );
    app.assert_consistent(&id).await;
}

/// gophercloud's volumeactions: attach without a connection, detach, and a connection
/// initialized and terminated without an attach.
async fn attach_without_a_connection_and_connect_without_an_attach(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    app.legacy_ok(
        &id,
        "os-attach",
        json!({"instance_uuid": I1, "mountpoint": "/mnt", "mode": "rw"}),
    )
    .await;
    assert_eq!(app.volume_status(&id).await, "in-use");
    let listed = app.attachments_of(&id).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["status"], "attached");
    // Attaching the same instance again changes nothing.
    app.legacy_ok(
        &id,
        "os-attach",
        json!({"instance_uuid": I1, "mountpoint": "/mnt"}),
    )
    .await;
    assert_eq!(app.live_attachments(&id).await, 1);
    app.legacy_ok(&id, "os-detach", json!({})).await;
    assert_eq!(app.volume_status(&id).await, "available");
    assert_eq!(app.live_attachments(&id).await, 0);

    app.legacy_ok(
        &id,
        "os-initialize_connection",
        json!({"connector": conn()}),
    )
    .await;
    assert_eq!(app.volume_status(&id).await, "attaching");
    app.legacy_ok(&id, "os-terminate_connection", json!({"connector": conn()}))
        .await;
    assert_eq!(app.volume_status(&id).await, "available");
    assert_eq!(app.live_attachments(&id).await, 0);
    // A host attach (no instance): Cinder's sanitized host name.
    app.legacy_ok(
        &id,
        "os-attach",
        json!({"host_name": "Backup_Host 1", "mountpoint": "/mnt"}),
    )
    .await;
    let volume = app.show_volume(&id, "3.71").await.json["volume"].clone();
    assert_eq!(
        volume["attachments"][0]["host_name"], "backup-host-1",
        "{volume}"
    );
    app.legacy_ok(&id, "os-detach", json!(null)).await;
    assert_eq!(app.volume_status(&id).await, "available");
    app.assert_consistent(&id).await;
}

async fn the_same_host_keeps_one_connection(app: TestApp) {
    let id = app.multiattach_volume().await;
    let first = app
        .legacy_ok(
            &id,
            "os-initialize_connection",
            json!({"connector": conn()}),
        )
        .await;
    let again = app
        .legacy_ok(
            &id,
            "os-initialize_connection",
            json!({"connector": conn()}),
        )
        .await;
    let attachment = |v: &Value| v["connection_info"]["data"]["attachment_id"].clone();
    assert_eq!(attachment(&first), attachment(&again));
    let other = app
        .legacy_ok(
            &id,
            "os-initialize_connection",
            json!({"connector": conn_for("cmp-2", "/dev/vdc")}),
        )
        .await;
    assert_ne!(attachment(&first), attachment(&other));
    assert_eq!(app.live_attachments(&id).await, 2);
    // Two hosts connected: a terminate without a host cannot say which.
    app.legacy(&id, "os-terminate_connection", json!({"connector": null}))
        .await
        .assert_fault(
            400,
            "badRequest",
            "Connector doesn't have required information: host",
        );
    app.legacy_ok(
        &id,
        "os-terminate_connection",
        json!({"connector": conn_for("cmp-2", "/dev/vdc")}),
    )
    .await;
    assert_eq!(app.live_attachments(&id).await, 1);
    app.legacy_ok(&id, "os-terminate_connection", json!({"connector": null}))
        .await;
    assert_eq!(app.live_attachments(&id).await, 0);
    assert_eq!(app.volume_status(&id).await, "available");
}

async fn a_read_only_volume_connects_read_only(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    app.legacy_ok(&id, "os-update_readonly_flag", json!({"readonly": true}))
        .await;
    app.legacy(
        &id,
        "os-attach",
        json!({"instance_uuid": I1, "mountpoint": "/mnt", "mode": "rw"}),
    )
    .await
    .assert_fault(
        400,
        "badRequest",
        &format!("Invalid attaching mode 'rw' for volume {id}."),
    );
    // os-attach's mode defaults to rw, as in Cinder.
    app.legacy(
        &id,
        "os-attach",
        json!({"instance_uuid": I1, "mountpoint": "/mnt"}),
    )
    .await
    .assert_fault(400, "badRequest", "Invalid attaching mode 'rw'");
    assert_eq!(app.live_attachments(&id).await, 0);
    let answer = app
        .legacy_ok(
            &id,
            "os-initialize_connection",
            json!({"connector": conn()}),
        )
        .await;
    assert_eq!(answer["connection_info"]["data"]["access_mode"], "ro");
    // A connection made read-only is not claimed for writing.
    app.legacy_ok(
        &id,
        "os-attach",
        json!({"instance_uuid": I1, "mountpoint": "/mnt", "mode": "ro"}),
    )
    .await;
    let listed = app.attachments_of(&id).await;
    assert_eq!(listed[0]["attach_mode"], "ro");
    assert_eq!(listed[0]["status"], "attached");
}

/// Two os-attach at once on a volume without multiattach: exactly one wins.
async fn two_attaches_race_for_a_single_attach_volume(app: TestApp) {
    for round in 0..3 {
        let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
        let requests: Vec<_> = [I1, I2, I3]
            .into_iter()
            .map(|instance| {
                Box::pin(
                    app.request(Method::POST, &format!("/v3/p1/volumes/{id}/action"))
                        .version("3.71")
                        .json(&json!({"os-attach": {"instance_uuid": instance, "mountpoint": "/dev/vdb"}}))
                        .send(),
                )
            })
            .collect();
        let responses = all_at_once(requests).await;
        let won = responses.iter().filter(|r| r.status == 202).count();
        assert_eq!(
            won,
            1,
            "round {round}: {:?}",
            responses.iter().map(|r| &r.text).collect::<Vec<_>>()
        );
        for lost in responses.iter().filter(|r| r.status != 202) {
            lost.assert_fault(
                400,
                "badRequest",
                "Error attaching volume - InvalidVolume: Invalid volume: volume is already attached and multiple attachments are not enabled",
            );
        }
        assert_eq!(app.live_attachments(&id).await, 1);
        assert_eq!(app.volume_status(&id).await, "in-use");
        app.assert_consistent(&id).await;
    }
}

/// Attached one way, detached the other, both ways round; a reservation of the
/// attachments API completed by os-attach.
async fn the_two_flows_mix(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let new_style = app.attach_fully(&id, I1, conn()).await;
    app.legacy_ok(&id, "os-detach", json!({"attachment_id": new_style}))
        .await;
    assert_eq!(app.volume_status(&id).await, "available");
    assert_eq!(app.show_attachment(&new_style).await.status, 404);

    app.legacy_ok(
        &id,
        "os-initialize_connection",
        json!({"connector": conn()}),
    )
    .await;
    app.legacy_ok(
        &id,
        "os-attach",
        json!({"instance_uuid": I1, "mountpoint": "/dev/vdb"}),
    )
    .await;
    let old_style = str_of(&app.attachments_of(&id).await[0], "id");
    // Another instance through the attachments API: refused, the volume is not shared.
    app.post_attachment(json!({"volume_uuid": id, "instance_uuid": I2}), "3.44")
        .await
        .assert_fault(400, "badRequest", "");
    let deleted = app.delete_attachment(&old_style).await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    assert_eq!(app.volume_status(&id).await, "available");

    let reservation = app.attach(&id, Some(I2), None).await;
    assert_eq!(app.volume_status(&id).await, "reserved");
    // A second instance the old way is refused while I2 holds the volume...
    app.legacy(
        &id,
        "os-attach",
        json!({"instance_uuid": I3, "mountpoint": "/dev/vdb"}),
    )
    .await
    .assert_fault(400, "badRequest", "multiple attachments are not enabled");
    // ...and I2's os-attach completes its reservation.
    app.legacy_ok(
        &id,
        "os-attach",
        json!({"instance_uuid": I2, "mountpoint": "/dev/vdc"}),
    )
    .await;
    let shown = app.show_attachment(&reservation).await;
    assert_eq!(
        shown.json["attachment"]["status"], "attached",
        "{}",
        shown.text
    );
    assert_eq!(app.volume_status(&id).await, "in-use");
    assert_eq!(app.live_attachments(&id).await, 1);
    app.assert_consistent(&id).await;
}

async fn force_detach_removes_one_attachment_among_three(app: TestApp) {
    let id = app.multiattach_volume().await;
    let ids = [
        app.attach_fully(&id, I1, conn_for("cmp-1", "/dev/vdb"))
            .await,
        app.attach_fully(&id, I2, conn_for("cmp-2", "/dev/vdb"))
            .await,
        app.attach(&id, Some(I3), None).await,
    ];
    let member = app
        .request(Method::POST, &format!("/v3/p1/volumes/{id}/action"))
        .token(MEMBER_P1)
        .json(&json!({"os-force_detach": {"attachment_id": ids[1]}}))
        .send()
        .await;
    member.assert_fault(
        403,
        "forbidden",
        "volume_extension:volume_admin_actions:force_detach",
    );
    app.legacy_ok(
        &id,
        "os-force_detach",
        json!({"attachment_id": ids[1], "connector": null}),
    )
    .await;
    assert_eq!(app.show_attachment(&ids[1]).await.status, 404);
    assert_eq!(
        app.show_attachment(&ids[0]).await.json["attachment"]["status"],
        "attached"
    );
    assert_eq!(
        app.show_attachment(&ids[2]).await.json["attachment"]["status"],
        "reserved"
    );
    assert_eq!(app.volume_status(&id).await, "in-use");
    // A reservation goes too, whatever its state; with the host's connector given,
    // that host's connection ends first.
    app.legacy_ok(&id, "os-force_detach", json!({"attachment_id": ids[2]}))
        .await;
    app.legacy_ok(
        &id,
        "os-force_detach",
        json!({"attachment_id": ids[0], "connector": conn_for("cmp-1", "/dev/vdb")}),
    )
    .await;
    assert_eq!(app.live_attachments(&id).await, 0);
    assert_eq!(app.volume_status(&id).await, "available");
    // An id that names no attachment (well-formed or not) is refused as Cinder's API
    // refuses a VolumeAttachmentNotFound, before any connection is ended.
    let again = app
        .attach_fully(&id, I1, conn_for("cmp-1", "/dev/vdb"))
        .await;
    for missing in [
        "not-an-id",
        "c9999999-9999-4999-8999-999999999999",
        ids[0].as_str(),
    ] {
        app.legacy(
            &id,
            "os-force_detach",
            json!({"attachment_id": missing, "connector": conn_for("cmp-1", "/dev/vdb")}),
        )
        .await
        .assert_fault(
            400,
            "badRequest",
            &format!(
                "Error force detaching volume - VolumeAttachmentNotFound: Volume attachment \
                 could not be found with filter: attachment_id = {missing}."
            ),
        );
    }
    assert_eq!(app.live_attachments(&id).await, 1);
    assert_eq!(
        app.show_attachment(&again).await.json["attachment"]["status"],
        "attached"
    );
    assert_eq!(app.volume_status(&id).await, "in-use");
    // A connector that is not an object names no host.
    for action in ["os-force_detach", "os-terminate_connection"] {
        app.legacy(&id, action, json!({"connector": "cmp-1"}))
            .await
            .assert_fault(
                400,
                "badRequest",
                &format!("Invalid input received: the connector of {action} must be an object"),
            );
    }
    assert_eq!(app.live_attachments(&id).await, 1);
    app.legacy_ok(&id, "os-force_detach", json!({"attachment_id": again}))
        .await;
    assert_eq!(app.volume_status(&id).await, "available");
    app.assert_consistent(&id).await;
}

async fn detach_rules(app: TestApp) {
    let id = app.multiattach_volume().await;
    let first = app
        .attach_fully(&id, I1, conn_for("cmp-1", "/dev/vdb"))
        .await;
    app.attach_fully(&id, I2, conn_for("cmp-2", "/dev/vdb"))
        .await;
    app.legacy(&id, "os-detach", json!({}))
        .await
        .assert_fault(
            400,
            "badRequest",
            "Error detaching volume - InvalidVolume: Invalid volume: Detach volume failed: More than one attachment, but no attachment_id provided.",
        );
    let other = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    app.legacy(&other, "os-detach", json!({"attachment_id": first}))
        .await
        .assert_fault(
            400,
            "badRequest",
            "Invalid input received: Mismatched volume and attachment",
        );
    app.legacy(&id, "os-detach", json!({"attachment_id": "nope"}))
        .await
        .assert_fault(400, "badRequest", "");
    app.legacy(&id, "os-detach", json!({"attachment_id": first, "x": 1}))
        .await
        .assert_fault(400, "badRequest", "");
    // A detach that already happened: nothing to remove, the volume is recomputed.
    app.legacy_ok(&id, "os-begin_detaching", json!(null)).await;
    assert_eq!(app.volume_status(&id).await, "detaching");
    app.legacy_ok(
        &id,
        "os-detach",
        json!({"attachment_id": uuid::Uuid::new_v4().to_string()}),
    )
    .await;
    assert_eq!(app.volume_status(&id).await, "in-use");
    assert_eq!(app.live_attachments(&id).await, 2);
    app.assert_consistent(&id).await;
}

async fn maintenance_and_bad_bodies(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    for (body, phrase) in [
        (
            json!({"os-attach": {"instance_uuid": I1}}),
            "'mountpoint' is a required property",
        ),
        (json!({"os-attach": {"mountpoint": "/dev/vdb"}}), ""),
        (
            json!({"os-attach": {"instance_uuid": "x", "mountpoint": "/m"}}),
            "is not a 'uuid'",
        ),
        (
            json!({"os-attach": {"instance_uuid": I1, "mountpoint": "/m", "mode": "rx"}}),
            "",
        ),
        (
            json!({"os-initialize_connection": {}}),
            "'connector' is a required property",
        ),
        (
            json!({"os-initialize_connection": {"connector": {"initiator": "iqn.x"}}}),
            "Connector doesn't have required information: host",
        ),
        (
            json!({"os-initialize_connection": {"connector": "h"}}),
            "Connector doesn't have required information",
        ),
        (
            json!({"os-terminate_connection": {}}),
            "'connector' is a required property",
        ),
        (json!({"os-force_detach": []}), ""),
    ] {
        app.volume_action(&id, body.clone())
            .await
            .assert_fault(400, "badRequest", phrase);
    }
    assert_eq!(app.live_attachments(&id).await, 0);
    assert_eq!(app.volume_status(&id).await, "available");
    app.legacy_ok(&id, "os-reset_status", json!({"status": "maintenance"}))
        .await;
    for (action, fields, phrase) in [
        (
            "os-attach",
            json!({"instance_uuid": I1, "mountpoint": "/m"}),
            "The volume cannot be attached in maintenance mode.",
        ),
        (
            "os-detach",
            json!({}),
            "The volume cannot be detached in maintenance mode.",
        ),
        (
            "os-initialize_connection",
            json!({"connector": conn()}),
            "The volume connection cannot be initialized in maintenance mode.",
        ),
    ] {
        app.legacy(&id, action, fields)
            .await
            .assert_fault(400, "badRequest", phrase);
    }
    app.legacy_ok(&id, "os-reset_status", json!({"status": "error"}))
        .await;
    app.legacy(
        &id,
        "os-initialize_connection",
        json!({"connector": conn()}),
    )
    .await
    .assert_fault(400, "badRequest", "but the status is error");
    app.legacy(
        &id,
        "os-attach",
        json!({"instance_uuid": I1, "mountpoint": "/m"}),
    )
    .await
    .assert_fault(400, "badRequest", "Error attaching volume - InvalidVolume");
    assert_eq!(app.live_attachments(&id).await, 0);
    assert_eq!(app.stored_status(&id).await, vec!["error".to_owned()]);
    // A volume that does not exist is 404.
    app.legacy(
        "8c4a7f38-0000-4000-8000-000000000000",
        "os-attach",
        json!({"instance_uuid": I1, "mountpoint": "/m"}),
    )
    .await
    .assert_fault(404, "itemNotFound", "could not be found");
}

async fn policies_and_limits(app: TestApp) {
    let type_id = app
        .create_type(
            "capped",
            json!({"multiattach": "<is> True", "attach:max_attachments": "2"}),
        )
        .await;
    let created = app
        .create_volume(json!({"size": 1, "volume_type": type_id}))
        .await;
    let id = str_of(&created, "id");
    let as_reader = |body: Value| {
        app.request(Method::POST, &format!("/v3/p1/volumes/{id}/action"))
            .token(READER_P1)
            .json(&body)
            .send()
    };
    for (body, rule) in [
        (
            json!({"os-initialize_connection": {"connector": conn()}}),
            "volume_extension:volume_actions:initialize_connection",
        ),
        (
            json!({"os-attach": {"instance_uuid": I1, "mountpoint": "/m"}}),
            "volume_extension:volume_actions:attach",
        ),
        (
            json!({"os-detach": {}}),
            "volume_extension:volume_actions:detach",
        ),
        (
            json!({"os-terminate_connection": {"connector": conn()}}),
            "volume_extension:volume_actions:terminate_connection",
        ),
    ] {
        as_reader(body).await.assert_fault(403, "forbidden", rule);
    }
    // A member may; the type's cap holds for the old flow too.
    let as_member = |body: Value| {
        app.request(Method::POST, &format!("/v3/p1/volumes/{id}/action"))
            .token(MEMBER_P1)
            .json(&body)
            .send()
    };
    for instance in [I1, I2] {
        let response =
            as_member(json!({"os-attach": {"instance_uuid": instance, "mountpoint": "/m"}})).await;
        assert_eq!(response.status, 202, "{}", response.text);
    }
    as_member(json!({"os-attach": {"instance_uuid": I3, "mountpoint": "/m"}}))
        .await
        .assert_fault(400, "badRequest", "attach:max_attachments");
    as_member(json!({"os-initialize_connection": {"connector": conn()}}))
        .await
        .assert_fault(400, "badRequest", "attach:max_attachments");
    assert_eq!(app.live_attachments(&id).await, 2);
    app.assert_consistent(&id).await;
}

/// The backend failing to export answers Cinder's 500 text (not the backend's), and
/// nothing is recorded: the volume stays `available` without an attachment.
async fn a_backend_failure_answers_cinders_text(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    // The volume's data disappears: the backend cannot export it.
    std::fs::remove_file(app.volume_file(&id)).unwrap();
    app.legacy(
        &id,
        "os-initialize_connection",
        json!({"connector": conn()}),
    )
    .await
    .assert_fault(
        500,
        "computeFault",
        "Unable to fetch connection information from backend.",
    );
    assert_eq!(app.volume_status(&id).await, "available");
    assert_eq!(app.live_attachments(&id).await, 0);
    app.assert_consistent(&id).await;
}

backend_tests!(
    a_backend_failure_answers_cinders_text,
    nova_attaches_and_detaches_the_old_way,
    attach_without_a_connection_and_connect_without_an_attach,
    the_same_host_keeps_one_connection,
    a_read_only_volume_connects_read_only,
    two_attaches_race_for_a_single_attach_volume,
    the_two_flows_mix,
    force_detach_removes_one_attachment_among_three,
    detach_rules,
    maintenance_and_bad_bodies,
    policies_and_limits,
);

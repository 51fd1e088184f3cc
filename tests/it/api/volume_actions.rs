//! `POST /volumes/{id}/action`.

use serde_json::json;

use crate::support::helpers::*;
use crate::support::TestApp;

async fn bootable_flag(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let response = app
        .volume_action(&id, json!({"os-set_bootable": {"bootable": true}}))
        .await;
    assert_eq!(response.status, 200, "{}", response.text);
    assert_eq!(
        app.show_volume(&id, "3.71").await.json["volume"]["bootable"],
        "true"
    );
    app.volume_action(&id, json!({"os-set_bootable": {"bootable": "False"}}))
        .await;
    assert_eq!(
        app.show_volume(&id, "3.71").await.json["volume"]["bootable"],
        "false"
    );
    app.volume_action(&id, json!({"os-set_bootable": {"bootable": "maybe"}}))
        .await
        .assert_fault(400, "badRequest", "is not one of");
    app.volume_action(&id, json!({"os-set_bootable": {}}))
        .await
        .assert_fault(400, "badRequest", "'bootable' is a required property");
}

async fn readonly_flag_needs_an_available_volume(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let response = app
        .volume_action(&id, json!({"os-update_readonly_flag": {"readonly": true}}))
        .await;
    assert_eq!(response.status, 202, "{}", response.text);
    assert_eq!(
        app.show_volume(&id, "3.71").await.json["volume"]["metadata"],
        json!({"readonly": "True"})
    );
    app.attach_directly(
        &id,
        "a1111111-1111-4111-8111-111111111111",
        "c1111111-1111-4111-8111-111111111111",
    )
    .await;
    app.volume_action(&id, json!({"os-update_readonly_flag": {"readonly": false}}))
        .await
        .assert_fault(
            400,
            "badRequest",
            "status must be available to update readonly flag, but current status is: in-use.",
        );
}

async fn body_must_name_one_known_action(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    app.volume_action(&id, json!({"os-bogus": {}}))
        .await
        .assert_fault(400, "badRequest", "There is no such action: os-bogus. Verify the request body and Content-Type header and try again.");
    app.volume_action(&id, json!({"os-set_bootable": {"bootable": true}, "x": 1}))
        .await
        .assert_fault(400, "badRequest", "Malformed request body");
    // Not an action of Cinder's API (an internal call of its volume manager).
    app.volume_action(
        &id,
        json!({"os-update_volume_admin_metadata": {"metadata": {}}}),
    )
    .await
    .assert_fault(
        400,
        "badRequest",
        "There is no such action: os-update_volume_admin_metadata.",
    );
    // Built now: Cinder's own refusal.
    app.volume_action(&id, json!({"os-migrate_volume": {}}))
        .await
        .assert_fault(
            400,
            "badRequest",
            "One of host or cluster must be provided.",
        );
    // An unknown action is 400 even for a volume that does not exist (Cinder picks the
    // action before it reads the volume); a known one is 404 there.
    app.volume_action(
        "8c4a7f38-0000-4000-8000-000000000000",
        json!({"os-update_volume_admin_metadata": {"metadata": {}}}),
    )
    .await
    .assert_fault(400, "badRequest", "There is no such action");
    app.volume_action(
        "8c4a7f38-0000-4000-8000-000000000000",
        json!({"os-set_bootable": {"bootable": true}}),
    )
    .await
    .assert_fault(404, "itemNotFound", "could not be found");
}

async fn extend_grows_available_volumes(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    for bad in [
        json!({"os-extend": {}}),
        json!({"os-extend": {"new_size": null}}),
        json!({"os-extend": {"new_size": "two"}}),
        json!({"os-extend": {"new_size": 0}}),
    ] {
        app.volume_action(&id, bad)
            .await
            .assert_fault(400, "badRequest", "");
    }
    app.volume_action(&id, json!({"os-extend": {"new_size": 1}}))
        .await
        .assert_fault(
            400,
            "badRequest",
            "New size for extend must be greater than current size. (current: 1, extended: 1).",
        );
    assert_eq!(
        app.volume_action(&id, json!({"os-extend": {"new_size": "3"}}))
            .await
            .status,
        202
    );
    let shown = app.show_volume(&id, "3.0").await.json["volume"].clone();
    assert_eq!(
        (shown["size"].clone(), shown["status"].clone()),
        (json!(3), json!("available"))
    );
    assert_eq!(
        std::fs::metadata(app.volume_file(&id)).expect("file").len(),
        3 * 1024 * 1024 * 1024
    );
    app.attach_fully(
        &id,
        &uuid::Uuid::new_v4().to_string(),
        crate::support::helpers::conn(),
    )
    .await;
    // Before 3.42 an attached volume is not extended.
    app.request(
        axum::http::Method::POST,
        &format!("/v3/p1/volumes/{id}/action"),
    )
    .version("3.41")
    .json(&json!({"os-extend": {"new_size": 4}}))
    .send()
    .await
    .assert_fault(
        400,
        "badRequest",
        "status must be 'available' to extend, currently in-use.",
    );
    // From 3.42 it is, and stays attached.
    assert_eq!(
        app.volume_action(&id, json!({"os-extend": {"new_size": 4}}))
            .await
            .status,
        202
    );
    let shown = app.show_volume(&id, "3.71").await.json["volume"].clone();
    assert_eq!(
        (shown["size"].clone(), shown["status"].clone()),
        (json!(4), json!("in-use"))
    );
    assert_eq!(shown["attachments"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        std::fs::metadata(app.volume_file(&id)).expect("file").len(),
        4 * 1024 * 1024 * 1024
    );
    app.assert_consistent(&id).await;
    // `volume:extend_attached_volume` decides for attached volumes only.
    let app = app.with_rule("volume:extend_attached_volume", "!");
    app.volume_action(&id, json!({"os-extend": {"new_size": 5}}))
        .await
        .assert_fault(403, "forbidden", "volume:extend_attached_volume");
    app.volume_action(
        "8c4a7f38-0000-4000-8000-000000000000",
        json!({"os-extend": {"new_size": 4}}),
    )
    .await
    .assert_fault(404, "itemNotFound", "could not be found");
}

async fn reset_status_is_for_admins(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let body = json!({"os-reset_status": {"status": "error"}});
    let member = app
        .request(
            axum::http::Method::POST,
            &format!("/v3/p1/volumes/{id}/action"),
        )
        .token(MEMBER_P1)
        .json(&body)
        .send()
        .await;
    member.assert_fault(
        403,
        "forbidden",
        "volume_extension:volume_admin_actions:reset_status",
    );
    assert_eq!(app.volume_action(&id, body).await.status, 202);
    assert_eq!(app.stored_status(&id).await, ["error"]);
    app.volume_action(&id, json!({"os-reset_status": {"status": "in-use"}}))
        .await
        .assert_fault(400, "badRequest", "does not have any attachments");
    app.volume_action(&id, json!({"os-reset_status": {"status": "bogus"}}))
        .await
        .assert_fault(400, "badRequest", "Volume status: bogus is invalid");
    app.volume_action(&id, json!({"os-reset_status": {}}))
        .await
        .assert_fault(
            400,
            "badRequest",
            "Must specify 'status', 'attach_status' or 'migration_status'",
        );
    app.volume_action(&id, json!({"os-force_delete": {}})).await;
    assert_eq!(app.show_volume(&id, "3.71").await.status, 404);
}

async fn retype_to_multiattach_while_available(app: TestApp) {
    app.create_multiattach_type("ma").await;
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let response = app
        .volume_action(
            &id,
            json!({"os-retype": {"new_type": "ma", "migration_policy": "never"}}),
        )
        .await;
    assert_eq!(response.status, 202, "{}", response.text);
    let volume = app.show_volume(&id, "3.71").await.json["volume"].clone();
    assert_eq!(volume["multiattach"], true);
    assert_eq!(volume["volume_type"], "ma");
    assert_eq!(volume["status"], "available");
}

async fn retype_never_flips_multiattach_in_use(app: TestApp) {
    app.create_multiattach_type("ma").await;
    app.create_multiattach_type("ma2").await;
    let plain = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    app.attach_directly(
        &plain,
        "a1111111-1111-4111-8111-111111111111",
        "c1111111-1111-4111-8111-111111111111",
    )
    .await;
    app.volume_action(&plain, json!({"os-retype": {"new_type": "ma"}}))
        .await
        .assert_fault(
            400,
            "badRequest",
            "retypes affecting multiattach are only allowed on available volumes, the specified volume however currently has a status of: in-use.",
        );
    let shared = str_of(
        &app.create_volume(json!({"size": 1, "volume_type": "ma"}))
            .await,
        "id",
    );
    app.attach_directly(
        &shared,
        "a2222222-2222-4222-8222-222222222222",
        "c2222222-2222-4222-8222-222222222222",
    )
    .await;
    let response = app
        .volume_action(&shared, json!({"os-retype": {"new_type": "ma2"}}))
        .await;
    assert_eq!(response.status, 202, "{}", response.text);
    let volume = app.show_volume(&shared, "3.71").await.json["volume"].clone();
    assert_eq!(
        (volume["status"].as_str(), volume["volume_type"].as_str()),
        (Some("in-use"), Some("ma2"))
    );
    assert_eq!(volume["multiattach"], true);
}

async fn retype_refusals(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    app.volume_action(&id, json!({"os-retype": {"new_type": "__DEFAULT__"}}))
        .await
        .assert_fault(
            400,
            "badRequest",
            "Retype needs volume to be in available or in-use state",
        );
    app.volume_action(&id, json!({"os-retype": {"new_type": "nope"}}))
        .await
        .assert_fault(
            404,
            "itemNotFound",
            "Volume type with name nope could not be found.",
        );
    app.volume_action(&id, json!({"os-retype": {}}))
        .await
        .assert_fault(400, "badRequest", "'new_type' is a required property");
    app.create_multiattach_type("ma").await;
    let app = app.with_rule("volume:multiattach", "role:admin");
    let member = app
        .request(
            axum::http::Method::POST,
            &format!("/v3/p1/volumes/{id}/action"),
        )
        .token(MEMBER_P1)
        .json(&json!({"os-retype": {"new_type": "ma"}}))
        .send()
        .await;
    member.assert_fault(403, "forbidden", "volume:multiattach");
}

backend_tests!(
    bootable_flag,
    readonly_flag_needs_an_available_volume,
    body_must_name_one_known_action,
    extend_grows_available_volumes,
    reset_status_is_for_admins,
    retype_to_multiattach_while_available,
    retype_never_flips_multiattach_in_use,
    retype_refusals,
);

//! `os-reimage` (3.68): an image's data in place of a volume's (what was there before is
//! gone, zeros included), the image's metadata in place of the old image's, the status it
//! had back; for a volume Nova reserved (`reimage_reserved`), a `volume-reimaged` event
//! owed to the server. Images come from `support::hostile_glance` serving plain images.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::Method;
use cinder_attach::image::{Glance, GlanceConfig};
use cinder_attach::service::Settings;
use serde_json::{json, Value};

use super::backups::{noise, write_at, MIB};
use crate::support::helpers::*;
use crate::support::hostile_glance::HostileGlance;
use crate::support::{TestApp, TestResponse};

async fn with_images(app: TestApp, nova: bool) -> (TestApp, HostileGlance) {
    let glance = HostileGlance::start().await;
    let client = Glance::new(&GlanceConfig {
        api_servers: vec![glance.url.clone()],
        timeout: Some(Duration::from_secs(20)),
        ..Default::default()
    })
    .unwrap();
    let conversion = std::env::temp_dir().join(format!("conversion-{}", uuid::Uuid::new_v4()));
    let settings = Settings {
        glance: Some(Arc::new(client)),
        image_conversion_dir: conversion,
        nova: nova.then(super::nova_calls::silent_nova),
        ..Settings::default()
    };
    (app.with_settings(settings), glance)
}

async fn reimage(app: &TestApp, volume: &str, fields: Value, version: &str) -> TestResponse {
    let path = format!("/v3/p1/volumes/{volume}/action");
    let body = json!({"os-reimage": fields});
    call_as(app, MEMBER_P1, version, Method::POST, &path, Some(body)).await
}

/// Waits until the volume leaves `downloading`; its status.
async fn settled(app: &TestApp, volume: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = app.volume_status(volume).await;
        if status != "downloading" {
            return status;
        }
        assert!(Instant::now() < deadline, "still downloading");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn a_volume_takes_an_images_data_in_place_of_its_own(app: TestApp) {
    let (app, glance) = with_images(app, false).await;
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    write_at(&app.volume_file(&volume), 0, &noise(MIB, 1));
    write_at(&app.volume_file(&volume), 600 * MIB as u64, &noise(MIB, 2));
    let image = glance.serve("raw", noise(MIB, 3));
    let id = json!({"image_id": image});
    assert_eq!(reimage(&app, &volume, id.clone(), "3.67").await.status, 404);
    let started = reimage(&app, &volume, id, "3.68").await;
    assert_eq!(started.status, 202, "{}", started.text);
    assert_eq!(settled(&app, &volume).await, "available");
    let bytes = std::fs::read(app.volume_file(&volume)).unwrap();
    assert_eq!(bytes.len(), 1 << 30);
    assert_eq!(&bytes[..MIB], noise(MIB, 3).as_slice(), "the image's bytes");
    assert!(
        bytes[600 * MIB..601 * MIB].iter().all(|b| *b == 0),
        "nothing of the old data stays"
    );
    let metadata = app
        .volume_action(&volume, json!({"os-show_image_metadata": null}))
        .await;
    assert_eq!(metadata.json["metadata"]["image_id"], image.as_str());
    // A second image replaces the first one's metadata too.
    let qcow = glance.serve("raw", noise(MIB, 4));
    let again = reimage(&app, &volume, json!({"image_id": qcow}), "3.68").await;
    assert_eq!(again.status, 202, "{}", again.text);
    assert_eq!(settled(&app, &volume).await, "available");
    let metadata = app
        .volume_action(&volume, json!({"os-show_image_metadata": null}))
        .await;
    assert_eq!(metadata.json["metadata"]["image_id"], qcow.as_str());
}

async fn a_reserved_volume_is_reimaged_for_nova_when_asked(app: TestApp) {
    let (app, glance) = with_images(app, true).await;
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let server = uuid::Uuid::new_v4().to_string();
    let reserved = app
        .post_attachment(
            json!({"volume_uuid": volume, "instance_uuid": server}),
            "3.68",
        )
        .await;
    assert_eq!(reserved.status, 200, "{}", reserved.text);
    assert_eq!(app.volume_status(&volume).await, "reserved");
    let image = glance.serve("raw", noise(MIB, 5));
    reimage(&app, &volume, json!({"image_id": image}), "3.68")
        .await
        .assert_fault(
            400,
            "badRequest",
            &format!(
                "Invalid volume: Volume {volume} status must be available or error, but current \
                 status is reserved."
            ),
        );
    let started = reimage(
        &app,
        &volume,
        json!({"image_id": image, "reimage_reserved": true}),
        "3.68",
    )
    .await;
    assert_eq!(started.status, 202, "{}", started.text);
    assert_eq!(settled(&app, &volume).await, "reserved");
    let owed = app
        .db
        .column(&format!(
            "select kind || ' ' || servers || ' ' || status from compute_calls \
             where cast(volume_id as text) = '{volume}'"
        ))
        .await;
    assert_eq!(owed, [format!("volume-reimaged [\"{server}\"] pending")]);
}

async fn refusals_and_failures_keep_the_volume_sound(app: TestApp) {
    let (app, glance) = with_images(app, false).await;
    // Attached to two servers: Cinder's 409.
    let shared = app.multiattach_volume().await;
    app.attach_fully(&shared, I1, conn()).await;
    app.attach_fully(&shared, I2, conn()).await;
    let image = glance.serve("raw", noise(MIB, 6));
    reimage(&app, &shared, json!({"image_id": image}), "3.68")
        .await
        .assert_fault(
            409,
            "conflictingRequest",
            "Cannot re-image a volume which is attached to more than one server.",
        );
    // An image larger than the volume: refused, the status given back.
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let big = glance.serve("raw", vec![0; (1 << 30) + 512]);
    let refused = reimage(&app, &volume, json!({"image_id": big}), "3.68").await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert_eq!(app.volume_status(&volume).await, "available");
    // Data that does not match its checksum: the volume ends `error`, Cinder's message.
    let corrupt = glance.serve("raw", noise(MIB, 7));
    glance.corrupt(&corrupt);
    let started = reimage(&app, &volume, json!({"image_id": corrupt}), "3.68").await;
    assert_eq!(started.status, 202, "{}", started.text);
    assert_eq!(settled(&app, &volume).await, "error");
    let message = app.message_about(&volume).await;
    assert_eq!(message["event_id"], "VOLUME_VOLUME_016_001");
    assert_eq!(
        message["user_message"],
        "reimage volume: An unknown error occurred."
    );
    // An `error` volume may be re-imaged again; as in Cinder it goes back to the status
    // it had before (`error`: an admin resets it), with the image's data.
    let good = glance.serve("raw", noise(MIB, 8));
    let again = reimage(&app, &volume, json!({"image_id": good}), "3.68").await;
    assert_eq!(again.status, 202, "{}", again.text);
    assert_eq!(settled(&app, &volume).await, "error");
    let bytes = std::fs::read(app.volume_file(&volume)).unwrap();
    assert_eq!(&bytes[..MIB], noise(MIB, 8).as_slice());
}

backend_tests!(
    a_volume_takes_an_images_data_in_place_of_its_own,
    a_reserved_volume_is_reimaged_for_nova_when_asked,
    refusals_and_failures_keep_the_volume_sound,
);

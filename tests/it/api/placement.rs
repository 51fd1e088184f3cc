//! Placement by capabilities: a volume type's extra specs pick the backend, the free
//! space decides among those that can, and a volume no backend can take is recorded in
//! `error` with the scheduler's user message.

use axum::http::Method;
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::TestApp;

/// Two file backends: `small` (4 GiB, in `nova`) and `big` (100 GiB, tier gold, in `east`).
async fn two_backends(app: TestApp) -> TestApp {
    let small = app.volumes_dir.join("small");
    let big = app.volumes_dir.join("big");
    let specs = [
        format!("small=file,dir={},capacity_gb=4", small.display()),
        format!(
            "big=file,dir={},capacity_gb=100,availability_zone=east,\
             capabilities.tier=gold,vendor_name=Acme",
            big.display()
        ),
    ];
    let specs: Vec<&str> = specs.iter().map(String::as_str).collect();
    app.with_backends(&specs).await
}

async fn host_of(app: &TestApp, id: &str) -> Value {
    app.show_volume(id, "3.71").await.json["volume"]["os-vol-host-attr:host"].clone()
}

async fn error_message_for(app: &TestApp, id: &str) -> Value {
    app.find_message(id).await.unwrap_or(Value::Null)
}

async fn extra_specs_choose_the_backend(app: TestApp) {
    let app = two_backends(app).await;
    let hostname = app.backends().iter().next().unwrap().host.clone();
    let node = hostname.split('@').next().unwrap().to_owned();
    // No specs: the most free space wins.
    let plain = app.create_volume(json!({"size": 1})).await;
    assert_eq!(
        host_of(&app, &str_of(&plain, "id")).await,
        json!(format!("{node}@big#big"))
    );
    // The zone of the request narrows the choice.
    let in_nova = app
        .create_volume(json!({"size": 1, "availability_zone": "nova"}))
        .await;
    assert_eq!(
        host_of(&app, &str_of(&in_nova, "id")).await,
        json!(format!("{node}@small#small"))
    );
    let cases = [
        (json!({"volume_backend_name": "small"}), "small"),
        (json!({"capabilities:tier": "gold"}), "big"),
        (json!({"vendor_name": "Open Source"}), "small"),
        (
            json!({"storage_protocol": "<in> loc", "tier": "<or> silver <or> gold"}),
            "big",
        ),
        (json!({"total_capacity_gb": "<= 10"}), "small"),
        (
            json!({"attach:max_attachments": "3", "multiattach": "<is> True"}),
            "big",
        ),
    ];
    for (n, (specs, expected)) in cases.into_iter().enumerate() {
        let name = format!("t{n}");
        app.create_type(&name, specs.clone()).await;
        let volume = app
            .create_volume(json!({"size": 1, "volume_type": name}))
            .await;
        assert_eq!(volume["status"], "available", "{specs}");
        assert_eq!(
            host_of(&app, &str_of(&volume, "id")).await,
            json!(format!("{node}@{expected}#{expected}")),
            "{specs}"
        );
    }
}

async fn no_matching_backend_leaves_an_error_volume(app: TestApp) {
    let app = two_backends(app).await;
    app.create_type(
        "bogus",
        json!({"storage_protocol": "FC", "vendor_name": "Nobody"}),
    )
    .await;
    let created = app
        .post_volume(json!({"size": 1, "volume_type": "bogus"}), "3.71")
        .await;
    assert_eq!(created.status, 202, "{}", created.text);
    let id = str_of(&created.json["volume"], "id");
    assert_eq!(created.json["volume"]["status"], "error");
    assert_eq!(host_of(&app, &id).await, Value::Null);
    let message = error_message_for(&app, &id).await;
    assert_eq!(message["event_id"], "VOLUME_VOLUME_001_003");
    assert_eq!(message["message_level"], "ERROR");
    assert_eq!(
        message["user_message"],
        "schedule allocate volume: Could not find any available weighted backend."
    );
    // Too big for every backend in the zone is the same.
    let too_big = app
        .create_volume(json!({"size": 5, "availability_zone": "nova"}))
        .await;
    assert_eq!(too_big["status"], "error");
    // An error volume is deleted like any other.
    let deleted = app
        .request(Method::DELETE, &format!("/v3/p1/volumes/{id}"))
        .send()
        .await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
    let left = app
        .db
        .column(&format!(
            "select status from volumes where id = '{id}' and deleted = false"
        ))
        .await;
    assert!(left.is_empty(), "the record is gone: {left:?}");
}

async fn a_disabled_backend_takes_no_new_volumes(app: TestApp) {
    let app = two_backends(app).await;
    let big_host = app.backends().iter().nth(1).unwrap().host.clone();
    let before = app
        .create_volume(json!({"size": 1, "availability_zone": "east"}))
        .await;
    let disabled = app
        .request(Method::PUT, "/v3/p1/os-services/disable")
        .json(&json!({"host": big_host, "binary": "cinder-volume"}))
        .send()
        .await;
    assert_eq!(disabled.status, 200, "{}", disabled.text);
    let refused = app
        .create_volume(json!({"size": 1, "availability_zone": "east"}))
        .await;
    assert_eq!(refused["status"], "error");
    let elsewhere = app.create_volume(json!({"size": 1})).await;
    assert!(host_of(&app, &str_of(&elsewhere, "id"))
        .await
        .as_str()
        .unwrap()
        .ends_with("@small#small"));
    // What the disabled backend holds keeps working.
    let id = str_of(&before, "id");
    app.attach_fully(&id, I1, conn()).await;
    assert_eq!(app.volume_status(&id).await, "in-use");
    let enabled = app
        .request(Method::PUT, "/v3/p1/os-services/enable")
        .json(&json!({"host": big_host, "binary": "cinder-volume"}))
        .send()
        .await;
    assert_eq!(enabled.status, 200, "{}", enabled.text);
    let again = app
        .create_volume(json!({"size": 1, "availability_zone": "east"}))
        .await;
    assert_eq!(again["status"], "available");
}

/// Ten creates race for a backend with room for four: exactly four get it, the rest
/// find no backend; the database never holds more than the backend's size.
async fn creates_race_for_the_last_free_space(app: TestApp) {
    let dir = app.volumes_dir.join("tight");
    let spec = format!("tight=file,dir={},capacity_gb=4", dir.display());
    let app = app.with_backends(&[spec.as_str()]).await;
    // Each from its own project, so that no quota lock lines them up.
    let requests: Vec<_> = (0..10)
        .map(|n| {
            app.request(Method::POST, &format!("/v3/race{n}/volumes"))
                .token(&format!("user{n}:race{n}:member,reader"))
                .json(&json!({"volume": {"size": 1}}))
                .send()
        })
        .collect();
    let responses = all_at_once(requests).await;
    let statuses: Vec<String> = responses
        .iter()
        .map(|r| {
            r.json["volume"]["status"]
                .as_str()
                .unwrap_or("?")
                .to_owned()
        })
        .collect();
    let available = statuses.iter().filter(|s| *s == "available").count();
    let error = statuses.iter().filter(|s| *s == "error").count();
    assert_eq!((available, error), (4, 6), "{statuses:?}");
    let placed = app
        .db
        .column(
            "select cast(coalesce(sum(size), 0) as text) from volumes \
             where deleted = false and host is not null",
        )
        .await;
    assert_eq!(placed, ["4"]);
}

/// A clone stays on its source's backend; when that backend cannot take the new type (or
/// has no room), the clone is an `error` volume, as Cinder's scheduler decides.
async fn a_clone_goes_where_its_source_is_or_nowhere(app: TestApp) {
    let dir = app.volumes_dir.join("plain");
    let spec = format!(
        "plain=file,dir={},multiattach=false,capacity_gb=3",
        dir.display()
    );
    let app = app.with_backends(&[spec.as_str()]).await;
    let source = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let clone = app.create_volume(json!({"source_volid": source})).await;
    assert_eq!(clone["status"], "available");
    app.create_multiattach_type("ma").await;
    let shared = app
        .create_volume(json!({"source_volid": source, "volume_type": "ma"}))
        .await;
    assert_eq!(shared["status"], "error", "the backend has no multiattach");
    let too_big = app
        .create_volume(json!({"source_volid": source, "size": 2}))
        .await;
    assert_eq!(too_big["status"], "error", "2 of 3 GiB are taken");
    let message = error_message_for(&app, &str_of(&too_big, "id")).await;
    assert_eq!(message["event_id"], "VOLUME_VOLUME_001_003");
}

/// Nothing migrates: a retype keeps the volume on its backend, so that backend must suit
/// the new type.
async fn retype_needs_a_backend_that_suits_the_new_type(app: TestApp) {
    let app = two_backends(app).await;
    let volume = app
        .create_volume(json!({"size": 1, "availability_zone": "nova"}))
        .await;
    let id = str_of(&volume, "id");
    app.create_type("gold", json!({"capabilities:tier": "gold"}))
        .await;
    app.create_type("local", json!({"storage_protocol": "local"}))
        .await;
    app.volume_action(&id, json!({"os-retype": {"new_type": "gold"}}))
        .await
        .assert_fault(
            400,
            "badRequest",
            "Invalid volume: Retype requires migration but is not allowed.",
        );
    let shown = app.show_volume(&id, "3.71").await;
    assert_eq!(shown.json["volume"]["volume_type"], "__DEFAULT__");
    let retyped = app
        .volume_action(&id, json!({"os-retype": {"new_type": "local"}}))
        .await;
    assert_eq!(retyped.status, 202, "{}", retyped.text);
    let shown = app.show_volume(&id, "3.71").await;
    assert_eq!(shown.json["volume"]["volume_type"], "local");
}

backend_tests!(
    retype_needs_a_backend_that_suits_the_new_type,
    a_clone_goes_where_its_source_is_or_nowhere,
    extra_specs_choose_the_backend,
    no_matching_backend_leaves_an_error_volume,
    a_disabled_backend_takes_no_new_volumes,
    creates_race_for_the_last_free_space,
);

//! Sharing one volume: concurrent attaches, attachment limits, single-writer mode and
//! shared connections (not in Cinder; api-ref differences D40-D43).

use axum::http::Method;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::support::helpers::*;
use crate::support::{TestApp, TestResponse};
use cinder_attach::service::Settings;

/// A type `name` with `specs` (multiattach on) and a volume of it.
async fn shared_volume(app: &TestApp, name: &str, specs: Value) -> String {
    let mut all = json!({"multiattach": "<is> True"});
    for (key, value) in specs.as_object().unwrap() {
        all[key] = value.clone();
    }
    app.create_type(name, all).await;
    str_of(
        &app.create_volume(json!({"size": 1, "volume_type": name}))
            .await,
        "id",
    )
}

fn create(app: &TestApp, body: Value) -> Pending {
    Box::pin(
        app.request(Method::POST, "/v3/p1/attachments")
            .version("3.54")
            .json(&json!({ "attachment": body }))
            .send(),
    )
}

fn rw_with_connector(volume: &str, host: &str) -> Value {
    json!({"volume_uuid": volume, "instance_uuid": Uuid::new_v4().to_string(),
           "connector": conn_for(host, "/dev/vdb"), "mode": "rw"})
}

async fn parallel_attaches_with_and_without_connectors_all_succeed(app: TestApp) {
    let v = app.multiattach_volume().await;
    let requests: Vec<_> = (0..16)
        .map(|i| {
            let mut body = json!({"volume_uuid": v, "instance_uuid": Uuid::new_v4().to_string()});
            if i % 2 == 0 {
                body["connector"] = conn_for(&format!("cmp-{i}"), "/dev/vdb");
            }
            create(&app, body)
        })
        .collect();
    let responses = all_at_once(requests).await;
    assert_eq!(successes(&responses), 16, "{:?}", texts(&responses));
    assert_eq!(app.live_attachments(&v).await, 16);
    assert_eq!(app.volume_status(&v).await, "attaching");
    app.assert_consistent(&v).await;
    // Completing them in parallel too: the volume ends in-use.
    let ids: Vec<String> = responses
        .iter()
        .filter(|r| r.json["attachment"]["status"] == "attaching")
        .map(|r| str_of(&r.json["attachment"], "id"))
        .collect();
    assert_eq!(ids.len(), 8);
    let completes: Vec<Pending> = ids
        .iter()
        .map(|id| {
            Box::pin(
                app.request(Method::POST, &format!("/v3/p1/attachments/{id}/action"))
                    .version("3.44")
                    .json(&json!({"os-complete": null}))
                    .send(),
            ) as Pending
        })
        .collect();
    let done = all_at_once(completes).await;
    assert!(done.iter().all(|r| r.status == 204), "{:?}", texts(&done));
    assert_eq!(app.volume_status(&v).await, "in-use");
    app.assert_consistent(&v).await;
}

fn texts(responses: &[TestResponse]) -> Vec<&str> {
    responses.iter().map(|r| r.text.as_str()).collect()
}

async fn a_type_caps_its_volumes_attachments(app: TestApp) {
    let v = shared_volume(&app, "three", json!({"attach:max_attachments": "3"})).await;
    let mut ids = Vec::new();
    for instance in [I1, I2, I3] {
        ids.push(app.attach(&v, Some(instance), None).await);
    }
    let fourth = app
        .post_attachment(
            json!({"volume_uuid": v, "instance_uuid": Uuid::new_v4().to_string()}),
            "3.44",
        )
        .await;
    fourth.assert_fault(
        400,
        "badRequest",
        &format!(
            "Invalid volume: Volume {v} already has 3 attachments, the most its volume type \
             allows (attach:max_attachments)."
        ),
    );
    assert_eq!(app.live_attachments(&v).await, 3, "nothing written");
    app.delete_attachment(&ids[0]).await;
    app.attach(&v, Some(I1), None).await;
}

async fn the_service_default_caps_types_without_a_cap(app: TestApp) {
    let app = app.with_settings(Settings {
        max_attachments_per_volume: Some(2),
        ..Settings::default()
    });
    let v = app.multiattach_volume().await;
    app.attach(&v, Some(I1), None).await;
    app.attach(&v, Some(I2), None).await;
    app.post_attachment(json!({"volume_uuid": v, "instance_uuid": I3}), "3.44")
        .await
        .assert_fault(
            400,
            "badRequest",
            "already has 2 attachments, the most this service allows per volume \
             (max_attachments_per_volume).",
        );
    // A type's own cap wins over the default.
    let w = shared_volume(&app, "five", json!({"attach:max_attachments": "5"})).await;
    for _ in 0..5 {
        app.attach(&w, Some(&Uuid::new_v4().to_string()), None)
            .await;
    }
}

async fn twenty_creates_race_for_five_places(app: TestApp) {
    let v = shared_volume(&app, "five", json!({"attach:max_attachments": "5"})).await;
    let requests: Vec<_> = (0..20)
        .map(|i| create(&app, rw_with_connector(&v, &format!("cmp-{i}"))))
        .collect();
    let responses = all_at_once(requests).await;
    assert_eq!(successes(&responses), 5, "{:?}", texts(&responses));
    for refused in responses.iter().filter(|r| r.status != 200) {
        refused.assert_fault(400, "badRequest", "already has 5 attachments");
    }
    assert_eq!(app.live_attachments(&v).await, 5);
    app.assert_consistent(&v).await;
    // The refused creates withdrew nothing they had not made: the five stay connected.
    let connected = app
        .db
        .column(&format!(
            "select attach_status from volume_attachment where volume_id = '{v}' and deleted = false"
        ))
        .await;
    assert!(connected.iter().all(|s| s == "attaching"), "{connected:?}");
}

async fn single_writer_allows_readers_beside_one_writer(app: TestApp) {
    let v = shared_volume(&app, "sw", json!({"attach:single_writer": "<is> True"})).await;
    let writer = app
        .post_attachment(rw_with_connector(&v, "cmp-1"), "3.54")
        .await;
    assert_eq!(writer.status, 200, "{}", writer.text);
    let writer = str_of(&writer.json["attachment"], "id");
    for host in ["cmp-2", "cmp-3"] {
        let reader = app
            .post_attachment(
                json!({"volume_uuid": v, "instance_uuid": Uuid::new_v4().to_string(),
                       "connector": conn_for(host, "/dev/vdc"), "mode": "ro"}),
                "3.54",
            )
            .await;
        assert_eq!(reader.status, 200, "{}", reader.text);
        assert_eq!(
            reader.json["attachment"]["connection_info"]["access_mode"],
            "ro"
        );
    }
    let message = format!("attachment {writer} holds write access");
    app.post_attachment(rw_with_connector(&v, "cmp-4"), "3.54")
        .await
        .assert_fault(400, "badRequest", &message);
    // A reservation without a mode is fine; connecting it becomes rw, which is refused.
    let pending = app.attach(&v, Some(I2), None).await;
    app.put_attachment(&pending, conn_for("cmp-5", "/dev/vdd"))
        .await
        .assert_fault(400, "badRequest", &message);
    let stored = app.show_attachment(&pending).await;
    assert_eq!(
        stored.json["attachment"]["status"], "reserved",
        "nothing written"
    );
    // Once the writer detaches, another may write.
    app.delete_attachment(&writer).await;
    let updated = app
        .put_attachment(&pending, conn_for("cmp-5", "/dev/vdd"))
        .await;
    assert_eq!(updated.status, 200, "{}", updated.text);
    assert_eq!(
        updated.json["attachment"]["connection_info"]["access_mode"],
        "rw"
    );
    app.assert_consistent(&v).await;
}

async fn twenty_writers_race_for_one_place(app: TestApp) {
    let v = shared_volume(&app, "sw", json!({"attach:single_writer": "<is> True"})).await;
    let mut requests: Vec<_> = (0..20)
        .map(|i| create(&app, rw_with_connector(&v, &format!("cmp-{i}"))))
        .collect();
    // Readers in the same crowd all get in.
    for i in 0..5 {
        requests.push(create(
            &app,
            json!({"volume_uuid": v, "instance_uuid": Uuid::new_v4().to_string(),
                   "connector": conn_for(&format!("ro-{i}"), "/dev/vdb"), "mode": "ro"}),
        ));
    }
    let responses = all_at_once(requests).await;
    let writers = responses[..20].iter().filter(|r| r.status == 200).count();
    assert_eq!(writers, 1, "{:?}", texts(&responses));
    assert_eq!(successes(&responses[20..]), 5);
    let modes = app
        .db
        .column(&format!(
            "select attach_mode from volume_attachment where volume_id = '{v}' and deleted = false"
        ))
        .await;
    assert_eq!(modes.iter().filter(|m| *m == "rw").count(), 1, "{modes:?}");
    assert_eq!(modes.len(), 6);
}

async fn sharing_specs_are_validated_when_set(app: TestApp) {
    let created = app
        .request(Method::POST, "/v3/p1/types")
        .json(&json!({"volume_type": {"name": "bad", "extra_specs": {"attach:max_attachments": "lots"}}}))
        .send()
        .await;
    created.assert_fault(
        400,
        "badRequest",
        "Invalid input received: extra spec attach:max_attachments must be a positive integer, not 'lots'.",
    );
    let id = app.create_type("good", json!({})).await;
    for (key, value) in [
        ("attach:max_attachments", "0"),
        ("attach:max_attachments", "-2"),
        ("attach:single_writer", "yes"),
    ] {
        app.request(Method::POST, &format!("/v3/p1/types/{id}/extra_specs"))
            .json(&json!({"extra_specs": {key: value}}))
            .send()
            .await
            .assert_fault(400, "badRequest", &format!("extra spec {key} must be"));
    }
    let specs = app
        .get(&format!("/v3/p1/types/{id}/extra_specs"))
        .send()
        .await;
    assert_eq!(specs.json["extra_specs"], json!({}), "nothing written");
    let ok = app
        .request(
            Method::PUT,
            &format!("/v3/p1/types/{id}/extra_specs/attach:max_attachments"),
        )
        .json(&json!({"attach:max_attachments": "7"}))
        .send()
        .await;
    assert_eq!(ok.status, 200, "{}", ok.text);
}

async fn retype_into_single_writer_needs_an_available_volume(app: TestApp) {
    let v = app.multiattach_volume().await;
    app.create_type(
        "sw",
        json!({"multiattach": "<is> True", "attach:single_writer": "<is> True"}),
    )
    .await;
    app.attach_fully(&v, I1, conn()).await;
    app.volume_action(&v, json!({"os-retype": {"new_type": "sw"}}))
        .await
        .assert_fault(
            400,
            "badRequest",
            "retypes affecting single-writer (attach:single_writer) are only allowed on \
             available volumes, the specified volume however currently has a status of: in-use.",
        );
    let w = str_of(
        &app.create_volume(json!({"size": 1, "volume_type": "ma"}))
            .await,
        "id",
    );
    let retyped = app
        .volume_action(&w, json!({"os-retype": {"new_type": "sw"}}))
        .await;
    assert_eq!(retyped.status, 202, "{}", retyped.text);
}

async fn shared_connections_name_the_same_hosts_other_attachments(app: TestApp) {
    let v = app.multiattach_volume().await;
    let a = app
        .attach_fully(&v, I1, conn_for("cmp-1", "/dev/vdb"))
        .await;
    let b = app
        .attach_fully(&v, I2, conn_for("cmp-1", "/dev/vdc"))
        .await;
    let c = app
        .attach_fully(&v, I3, conn_for("cmp-2", "/dev/vdb"))
        .await;
    let reserved = app
        .attach(&v, Some(&Uuid::new_v4().to_string()), None)
        .await;
    let shared = |response: TestResponse| response.json["attachment"]["shared_connections"].clone();
    assert_eq!(shared(app.show_attachment(&a).await), json!([b]));
    assert_eq!(shared(app.show_attachment(&b).await), json!([a]));
    assert_eq!(shared(app.show_attachment(&c).await), json!([]));
    assert_eq!(shared(app.show_attachment(&reserved).await), json!([]));
    let listed = app
        .get(&format!("/v3/p1/attachments/detail?volume_id={v}"))
        .version("3.44")
        .send()
        .await;
    for item in listed.json["attachments"].as_array().unwrap() {
        let expected = if item["id"] == a {
            json!([b])
        } else if item["id"] == b {
            json!([a])
        } else {
            json!([])
        };
        assert_eq!(item["shared_connections"], expected, "{item}");
    }
    // Detaching one leaves the other the host's last.
    app.delete_attachment(&b).await;
    assert_eq!(shared(app.show_attachment(&a).await), json!([]));
}

async fn a_migrating_shared_volume_takes_no_new_attachment(app: TestApp) {
    let v = app.multiattach_volume().await;
    app.attach_fully(&v, I1, conn()).await;
    let reset = app
        .volume_action(
            &v,
            json!({"os-reset_status": {"migration_status": "migrating"}}),
        )
        .await;
    assert_eq!(reset.status, 202, "{}", reset.text);
    app.post_attachment(json!({"volume_uuid": v, "instance_uuid": I2}), "3.44")
        .await
        .assert_fault(
            400,
            "badRequest",
            &format!("Invalid volume: Volume {v} is being migrated"),
        );
    assert_eq!(app.live_attachments(&v).await, 1);
    app.volume_action(
        &v,
        json!({"os-reset_status": {"migration_status": "success"}}),
    )
    .await;
    app.attach(&v, Some(I2), None).await;
}

backend_tests!(
    a_migrating_shared_volume_takes_no_new_attachment,
    parallel_attaches_with_and_without_connectors_all_succeed,
    a_type_caps_its_volumes_attachments,
    the_service_default_caps_types_without_a_cap,
    twenty_creates_race_for_five_places,
    single_writer_allows_readers_beside_one_writer,
    twenty_writers_race_for_one_place,
    sharing_specs_are_validated_when_set,
    retype_into_single_writer_needs_an_available_volume,
    shared_connections_name_the_same_hosts_other_attachments,
);

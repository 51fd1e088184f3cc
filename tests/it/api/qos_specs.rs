//! QoS specs: their API (admin only), their association with volume types, and the
//! front-end specs every connection carries to the host.

use axum::http::Method;
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::{TestApp, TestResponse};

async fn qos_call(app: &TestApp, method: Method, path: &str, body: Option<Value>) -> TestResponse {
    let request = app.request(method, &format!("/v3/p1/qos-specs{path}"));
    match body {
        Some(body) => request.json(&body).send().await,
        None => request.send().await,
    }
}

async fn create_qos(app: &TestApp, specs: Value) -> String {
    let created = qos_call(app, Method::POST, "", Some(json!({ "qos_specs": specs }))).await;
    assert_eq!(created.status, 200, "{}", created.text);
    str_of(&created.json["qos_specs"], "id")
}

async fn qos_lifecycle(app: TestApp) {
    let created = qos_call(
        &app,
        Method::POST,
        "",
        Some(json!({"qos_specs": {"name": " fast ", "consumer": "front-end", "read_iops_sec": "2000"}})),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.text);
    let id = str_of(&created.json["qos_specs"], "id");
    let expected = json!({"id": id, "name": "fast", "consumer": "front-end",
                          "specs": {"read_iops_sec": "2000"}});
    assert_eq!(created.json["qos_specs"], expected);
    assert_eq!(created.json["links"][0]["rel"], "self");

    let shown = qos_call(&app, Method::GET, &format!("/{id}"), None).await;
    assert_eq!(shown.json["qos_specs"], expected);
    let listed = qos_call(&app, Method::GET, "", None).await;
    assert_eq!(listed.json, json!({"qos_specs": [expected]}));

    let set = json!({"qos_specs": {"iops_bytes": "500", "consumer": "both"}});
    let updated = qos_call(&app, Method::PUT, &format!("/{id}"), Some(set.clone())).await;
    assert_eq!(updated.status, 200, "{}", updated.text);
    assert_eq!(updated.json, set);
    let shown = qos_call(&app, Method::GET, &format!("/{id}"), None).await;
    assert_eq!(shown.json["qos_specs"]["consumer"], "both");
    assert_eq!(
        shown.json["qos_specs"]["specs"],
        json!({"read_iops_sec": "2000", "iops_bytes": "500"})
    );

    let unset = qos_call(
        &app,
        Method::PUT,
        &format!("/{id}/delete_keys"),
        Some(json!({"keys": ["iops_bytes"]})),
    )
    .await;
    assert_eq!(unset.status, 202, "{}", unset.text);
    qos_call(
        &app,
        Method::PUT,
        &format!("/{id}/delete_keys"),
        Some(json!({"keys": ["read_iops_sec", "nope"]})),
    )
    .await
    .assert_fault(
        404,
        "itemNotFound",
        &format!("QoS spec {id} has no spec with key nope."),
    );
    let shown = qos_call(&app, Method::GET, &format!("/{id}"), None).await;
    assert_eq!(
        shown.json["qos_specs"]["specs"],
        json!({"read_iops_sec": "2000"}),
        "a refused unset removes nothing"
    );

    qos_call(
        &app,
        Method::POST,
        "",
        Some(json!({"qos_specs": {"name": "fast"}})),
    )
    .await
    .assert_fault(409, "conflictingRequest", "QoS Specs fast already exists.");
    qos_call(
        &app,
        Method::POST,
        "",
        Some(json!({"qos_specs": {"name": "x", "consumer": "host"}})),
    )
    .await
    .assert_fault(
        400,
        "badRequest",
        "consumer must be one of front-end, back-end, both, not 'host'",
    );
    qos_call(
        &app,
        Method::POST,
        "",
        Some(json!({"qos_specs": {"name": "x", "iops": 5}})),
    )
    .await
    .assert_fault(
        400,
        "badRequest",
        "Value for key \"iops\" is not a string or unicode",
    );
    app.request(Method::GET, "/v3/p1/qos-specs")
        .token(MEMBER_P1)
        .send()
        .await
        .assert_fault(
            403,
            "forbidden",
            "volume_extension:qos_specs_manage:get_all",
        );

    let deleted = qos_call(&app, Method::DELETE, &format!("/{id}"), None).await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
    qos_call(&app, Method::GET, &format!("/{id}"), None)
        .await
        .assert_fault(404, "itemNotFound", &format!("No such QoS spec {id}."));
    let listed = qos_call(&app, Method::GET, "", None).await;
    assert_eq!(listed.json, json!({"qos_specs": []}));
}

async fn associations_with_types(app: TestApp) {
    let qos = create_qos(&app, json!({"name": "gold-qos", "consumer": "back-end"})).await;
    let other = create_qos(&app, json!({"name": "silver-qos"})).await;
    let gold = app.create_type("gold", json!({})).await;
    let silver = app.create_type("silver", json!({})).await;
    for type_id in [&gold, &silver] {
        let done = qos_call(
            &app,
            Method::GET,
            &format!("/{qos}/associate?vol_type_id={type_id}"),
            None,
        )
        .await;
        assert_eq!(done.status, 202, "{}", done.text);
    }
    let listed = qos_call(&app, Method::GET, &format!("/{qos}/associations"), None).await;
    assert_eq!(
        listed.json,
        json!({"qos_associations": [
            {"association_type": "volume_type", "name": "gold", "id": gold},
            {"association_type": "volume_type", "name": "silver", "id": silver}
        ]})
    );
    let shown = app.get(&format!("/v3/p1/types/{gold}")).send().await;
    assert_eq!(shown.json["volume_type"]["qos_specs_id"], qos);

    qos_call(
        &app,
        Method::GET,
        &format!("/{other}/associate?vol_type_id={gold}"),
        None,
    )
    .await
    .assert_fault(
        400,
        "badRequest",
        &format!("Type {gold} is already associated with another qos specs: {qos}"),
    );
    qos_call(&app, Method::GET, &format!("/{qos}/associate"), None)
        .await
        .assert_fault(400, "badRequest", "Volume Type id must not be None.");
    let missing = "00000000-0000-4000-8000-000000000000";
    qos_call(
        &app,
        Method::GET,
        &format!("/{qos}/associate?vol_type_id={missing}"),
        None,
    )
    .await
    .assert_fault(
        404,
        "itemNotFound",
        &format!("Volume type {missing} could not be found."),
    );

    qos_call(&app, Method::DELETE, &format!("/{qos}"), None)
        .await
        .assert_fault(400, "badRequest", "Qos specs still in use.");
    let done = qos_call(
        &app,
        Method::GET,
        &format!("/{qos}/disassociate?vol_type_id={gold}"),
        None,
    )
    .await;
    assert_eq!(done.status, 202, "{}", done.text);
    let listed = qos_call(&app, Method::GET, &format!("/{qos}/associations"), None).await;
    assert_eq!(listed.json["qos_associations"].as_array().unwrap().len(), 1);
    let done = qos_call(&app, Method::GET, &format!("/{qos}/disassociate_all"), None).await;
    assert_eq!(done.status, 202, "{}", done.text);
    let listed = qos_call(&app, Method::GET, &format!("/{qos}/associations"), None).await;
    assert_eq!(listed.json, json!({"qos_associations": []}));

    // force disassociates before deleting.
    qos_call(
        &app,
        Method::GET,
        &format!("/{other}/associate?vol_type_id={silver}"),
        None,
    )
    .await;
    let forced = qos_call(&app, Method::DELETE, &format!("/{other}?force=True"), None).await;
    assert_eq!(forced.status, 202, "{}", forced.text);
    let shown = app.get(&format!("/v3/p1/types/{silver}")).send().await;
    assert_eq!(shown.json["volume_type"]["qos_specs_id"], Value::Null);
}

/// Nova applies `connection_info.qos_specs`: front-end specs of the type, with per-GB
/// limits scaled to the volume's size; back-end specs stay with the storage.
async fn front_end_specs_reach_the_host(app: TestApp) {
    let front = create_qos(
        &app,
        json!({"name": "per-gb", "consumer": "front-end", "total_iops_sec_per_gb": "10",
               "total_iops_sec_per_gb_min": "50", "read_bytes_sec": "1000"}),
    )
    .await;
    let back = create_qos(
        &app,
        json!({"name": "array", "consumer": "back-end", "x": "1"}),
    )
    .await;
    let fast = app.create_multiattach_type("fast").await;
    let slow = app.create_type("slow", json!({})).await;
    qos_call(
        &app,
        Method::GET,
        &format!("/{front}/associate?vol_type_id={fast}"),
        None,
    )
    .await;
    qos_call(
        &app,
        Method::GET,
        &format!("/{back}/associate?vol_type_id={slow}"),
        None,
    )
    .await;

    let volume = str_of(
        &app.create_volume(json!({"size": 8, "volume_type": "fast"}))
            .await,
        "id",
    );
    let made = app
        .post_attachment(
            json!({"volume_uuid": volume, "instance_uuid": I1, "connector": conn()}),
            "3.54",
        )
        .await;
    assert_eq!(made.status, 200, "{}", made.text);
    let expected = json!({"total_iops_sec": 80, "read_bytes_sec": "1000"});
    assert_eq!(
        made.json["attachment"]["connection_info"]["qos_specs"],
        expected
    );
    // Every attachment of the shared volume carries them.
    let second = app.attach(&volume, Some(I2), None).await;
    let updated = app
        .put_attachment(&second, conn_for("cmp-2", "/dev/vdc"))
        .await;
    assert_eq!(
        updated.json["attachment"]["connection_info"]["qos_specs"],
        expected
    );

    let plain = str_of(
        &app.create_volume(json!({"size": 1, "volume_type": "slow"}))
            .await,
        "id",
    );
    let initialized = app
        .volume_action(
            &plain,
            json!({"os-initialize_connection": {"connector": conn()}}),
        )
        .await;
    assert_eq!(initialized.status, 200, "{}", initialized.text);
    assert_eq!(
        initialized.json["connection_info"]["data"]["qos_specs"],
        Value::Null
    );
}

/// Cinder's `validate_dictionary_string_length`: keys of 1 to 255 characters, values of
/// at most 255, on create and on set; nothing is written for a refused request.
async fn spec_keys_and_values_have_cinders_length_limits(app: TestApp) {
    let long = "v".repeat(70_000);
    let key = "k".repeat(256);
    for (specs, phrase) in [
        (
            json!({"name": "a", "read_iops_sec": long}),
            "Invalid input received: Value for key \"read_iops_sec\" has 70000 characters, \
             more than 255.",
        ),
        (
            json!({"name": "a", key.clone(): "1"}),
            "characters, more than 255.",
        ),
        (
            json!({"name": "a", "": "1"}),
            "Invalid input received: Key \"\" has 0 characters, less than 1.",
        ),
    ] {
        qos_call(&app, Method::POST, "", Some(json!({ "qos_specs": specs })))
            .await
            .assert_fault(400, "badRequest", phrase);
    }
    assert_eq!(
        qos_call(&app, Method::GET, "", None).await.json["qos_specs"],
        json!([])
    );
    let fits = json!({"name": "a", "read_iops_sec": "9".repeat(255)});
    let created = qos_call(&app, Method::POST, "", Some(json!({ "qos_specs": fits }))).await;
    assert_eq!(created.status, 200, "{}", created.text);
    let id = str_of(&created.json["qos_specs"], "id");
    let too_long = json!({"qos_specs": {"read_iops_sec": "9".repeat(256)}});
    let set = qos_call(&app, Method::PUT, &format!("/{id}"), Some(too_long)).await;
    assert_eq!(set.status, 400, "{}", set.text);
    let shown = qos_call(&app, Method::GET, &format!("/{id}"), None).await;
    assert_eq!(
        shown.json["qos_specs"]["specs"]["read_iops_sec"],
        "9".repeat(255)
    );
}

/// The listing pages as Cinder's: limit, marker, sort by name, `qos_specs_links` on a full
/// page; an unknown marker is 404, an unknown sort key 400.
async fn listings_page(app: TestApp) {
    for name in ["b", "c", "a"] {
        create_qos(&app, json!({"name": name, "read_iops_sec": "100"})).await;
    }
    let names = |page: &TestResponse| -> Vec<String> {
        page.json["qos_specs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| str_of(q, "name"))
            .collect()
    };
    let first = qos_call(&app, Method::GET, "?sort=name:asc&limit=2", None).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(names(&first), ["a", "b"]);
    assert_eq!(first.json["qos_specs"][0]["specs"]["read_iops_sec"], "100");
    let next = first.json["qos_specs_links"][0]["href"]
        .as_str()
        .expect("a next link on a full page")
        .to_owned();
    assert_eq!(first.json["qos_specs_links"][0]["rel"], "next");
    let marker = str_of(&first.json["qos_specs"][1], "id");
    assert!(next.contains(&format!("marker={marker}")), "{next}");
    let rest = qos_call(
        &app,
        Method::GET,
        &format!("?sort=name:asc&limit=2&marker={marker}"),
        None,
    )
    .await;
    assert_eq!(names(&rest), ["c"]);
    assert!(rest.json.get("qos_specs_links").is_none(), "{}", rest.text);
    // Newest first by default, every one when no limit is given.
    let all = qos_call(&app, Method::GET, "", None).await;
    assert_eq!(names(&all), ["a", "c", "b"]);
    let offset = qos_call(
        &app,
        Method::GET,
        "?sort_key=name&sort_dir=desc&offset=1",
        None,
    )
    .await;
    assert_eq!(names(&offset), ["b", "a"]);
    qos_call(
        &app,
        Method::GET,
        "?marker=8c4a7f38-0000-4000-8000-000000000000",
        None,
    )
    .await
    .assert_fault(404, "itemNotFound", "Marker");
    qos_call(&app, Method::GET, "?sort=bogus", None)
        .await
        .assert_fault(400, "badRequest", "Invalid sort key");
}

/// Cinder's retype rule: a volume that is not `available` cannot change front-end QoS
/// (the host applies it), while back-end specs may change; an available volume may.
async fn retype_keeps_front_end_qos_of_attached_volumes(app: TestApp) {
    let front = create_qos(
        &app,
        json!({"name": "fe", "consumer": "front-end", "read_iops_sec": "1"}),
    )
    .await;
    let back = create_qos(
        &app,
        json!({"name": "be", "consumer": "back-end", "a": "1"}),
    )
    .await;
    let back2 = create_qos(
        &app,
        json!({"name": "be2", "consumer": "back-end", "a": "2"}),
    )
    .await;
    for (name, qos) in [
        ("plain", None),
        ("t-fe", Some(&front)),
        ("t-be", Some(&back)),
        ("t-be2", Some(&back2)),
    ] {
        let type_id = app.create_type(name, json!({})).await;
        if let Some(qos) = qos {
            let path = format!("/{qos}/associate?vol_type_id={type_id}");
            let associated = qos_call(&app, Method::GET, &path, None).await;
            assert_eq!(associated.status, 202, "{}", associated.text);
        }
    }
    let retype = |volume: String, to: &'static str| {
        let app = &app;
        async move {
            app.volume_action(&volume, json!({"os-retype": {"new_type": to}}))
                .await
        }
    };
    let attached = str_of(
        &app.create_volume(json!({"size": 1, "volume_type": "plain"}))
            .await,
        "id",
    );
    app.attach_fully(&attached, I1, conn()).await;
    retype(attached.clone(), "t-fe").await.assert_fault(
        400,
        "badRequest",
        &format!("Invalid input received: Retype cannot change front-end qos specs for in-use volume: {attached}."),
    );
    assert_eq!(app.volume_status(&attached).await, "in-use");
    let to_back = retype(attached.clone(), "t-be").await;
    assert_eq!(to_back.status, 202, "{}", to_back.text);
    let between_back = retype(attached.clone(), "t-be2").await;
    assert_eq!(between_back.status, 202, "{}", between_back.text);
    let available = str_of(
        &app.create_volume(json!({"size": 1, "volume_type": "plain"}))
            .await,
        "id",
    );
    let to_front = retype(available.clone(), "t-fe").await;
    assert_eq!(to_front.status, 202, "{}", to_front.text);
    app.assert_consistent(&attached).await;
}

backend_tests!(
    retype_keeps_front_end_qos_of_attached_volumes,
    listings_page,
    spec_keys_and_values_have_cinders_length_limits,
    qos_lifecycle,
    associations_with_types,
    front_end_specs_reach_the_host,
);

//! Volume update and user metadata, as Cinder's controllers answer them.

use axum::http::Method;
use serde_json::{json, Value};

use crate::support::helpers::str_of;
use crate::support::{TestApp, TestResponse};

const READER_P1: &str = "reader:p1:reader";
const MEMBER_P2: &str = "member:p2:member";

async fn call(app: &TestApp, method: Method, path: &str, body: Option<Value>) -> TestResponse {
    let request = app.request(method, path).version("3.60");
    match body {
        Some(body) => request.json(&body).send().await,
        None => request.send().await,
    }
}

async fn update_renames_and_replaces_metadata(app: TestApp) {
    let id = str_of(
        &app.create_volume(json!({"size": 1, "name": "old", "description": "d",
                                  "metadata": {"a": "1", "b": "2"}}))
            .await,
        "id",
    );
    let path = format!("/v3/p1/volumes/{id}");
    let updated = call(
        &app,
        Method::PUT,
        &path,
        Some(json!({"volume": {"name": "  new  ", "metadata": {"c": "3"}}})),
    )
    .await;
    assert_eq!(updated.status, 200, "{}", updated.text);
    assert_eq!(updated.json["volume"]["name"], "new");
    assert_eq!(updated.json["volume"]["description"], "d");
    assert_eq!(updated.json["volume"]["metadata"], json!({"c": "3"}));
    assert_eq!(updated.json["volume"]["id"], id.as_str());

    // `null` clears; the v2 names are accepted too.
    let cleared = call(
        &app,
        Method::PUT,
        &path,
        Some(json!({"volume": {"display_description": null}})),
    )
    .await;
    assert_eq!(cleared.status, 200);
    assert_eq!(cleared.json["volume"]["description"], Value::Null);
    assert_eq!(cleared.json["volume"]["name"], "new");
    let shown = app.show_volume(&id, "3.60").await;
    assert_eq!(shown.json["volume"]["metadata"], json!({"c": "3"}));

    for bad in [
        json!({"volume": {"size": 2}}),
        json!({"volume": {"name": "x".repeat(256)}}),
        json!({"volume": {"metadata": {"bad\u{1}key": "v"}}}),
        json!({"volume": {"metadata": {"k": 1}}}),
        json!({"volume": {"metadata": null}}),
        json!({"name": "x"}),
    ] {
        // Schema messages vary ("Invalid input ...", "... is a required property").
        call(&app, Method::PUT, &path, Some(bad))
            .await
            .assert_fault(400, "badRequest", "");
    }
    app.db
        .execute(&format!(
            "update volumes set status = 'maintenance' where id = '{id}'"
        ))
        .await
        .expect("fixture");
    call(
        &app,
        Method::PUT,
        &path,
        Some(json!({"volume": {"name": "x"}})),
    )
    .await
    .assert_fault(400, "badRequest", "cannot be updated during maintenance");
    let other = call(
        &app,
        Method::PUT,
        "/v3/p1/volumes/9b2f1c1e-1b1a-4c1a-9d1e-1f1a1b1c1d1e",
        Some(json!({"volume": {"name": "x"}})),
    )
    .await;
    other.assert_fault(404, "itemNotFound", "could not be found");
}

async fn metadata_crud(app: TestApp) {
    let id = str_of(
        &app.create_volume(json!({"size": 1, "metadata": {"a": "1"}}))
            .await,
        "id",
    );
    let path = format!("/v3/p1/volumes/{id}/metadata");
    let listed = call(&app, Method::GET, &path, None).await;
    assert_eq!(listed.status, 200);
    assert_eq!(listed.json, json!({"metadata": {"a": "1"}}));

    let merged = call(
        &app,
        Method::POST,
        &path,
        Some(json!({"metadata": {"b": "2", "a": "one"}})),
    )
    .await;
    assert_eq!(merged.status, 200, "{}", merged.text);
    assert_eq!(merged.json, json!({"metadata": {"a": "one", "b": "2"}}));

    let replaced = call(
        &app,
        Method::PUT,
        &path,
        Some(json!({"metadata": {"c": "3", "key with space": "v"}})),
    )
    .await;
    assert_eq!(replaced.status, 200);
    assert_eq!(
        replaced.json,
        json!({"metadata": {"c": "3", "key with space": "v"}})
    );

    let item = call(&app, Method::GET, &format!("{path}/c"), None).await;
    assert_eq!(item.status, 200);
    assert_eq!(item.json, json!({"meta": {"c": "3"}}));
    call(&app, Method::GET, &format!("{path}/a"), None)
        .await
        .assert_fault(
            404,
            "itemNotFound",
            &format!("Volume {id} has no metadata with key a."),
        );

    let set = call(
        &app,
        Method::PUT,
        &format!("{path}/c"),
        Some(json!({"meta": {"c": "three"}})),
    )
    .await;
    assert_eq!(set.status, 200);
    assert_eq!(set.json, json!({"meta": {"c": "three"}}));
    call(
        &app,
        Method::PUT,
        &format!("{path}/c"),
        Some(json!({"meta": {"d": "4"}})),
    )
    .await
    .assert_fault(400, "badRequest", "Request body and URI mismatch");
    call(
        &app,
        Method::PUT,
        &format!("{path}/c"),
        Some(json!({"meta": {"c": "1", "d": "4"}})),
    )
    .await
    .assert_fault(400, "badRequest", "Invalid input");

    let deleted = call(&app, Method::DELETE, &format!("{path}/c"), None).await;
    assert_eq!(deleted.status, 200);
    assert_eq!(deleted.text, "");
    call(&app, Method::DELETE, &format!("{path}/c"), None)
        .await
        .assert_fault(404, "itemNotFound", "has no metadata with key c");
    let after = call(&app, Method::GET, &path, None).await;
    assert_eq!(after.json, json!({"metadata": {"key with space": "v"}}));
    // The volume view shows the same metadata.
    assert_eq!(
        app.show_volume(&id, "3.60").await.json["volume"]["metadata"],
        json!({"key with space": "v"})
    );
    // What the database holds: one live row, the others soft-deleted.
    assert_eq!(
        app.db
            .column(&format!(
                "select key from volume_metadata where volume_id = '{id}' and deleted = false"
            ))
            .await,
        ["key with space"]
    );
}

async fn metadata_rules(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let path = format!("/v3/p1/volumes/{id}/metadata");
    // Readers read but do not write; other projects see nothing.
    let read = app.get(&path).token(READER_P1).send().await;
    assert_eq!(read.status, 200);
    app.request(Method::POST, &path)
        .token(READER_P1)
        .json(&json!({"metadata": {"a": "1"}}))
        .send()
        .await
        .assert_fault(403, "forbidden", "volume:create_volume_metadata");
    app.get(&format!("/v3/p2/volumes/{id}/metadata"))
        .token(MEMBER_P2)
        .send()
        .await
        .assert_fault(404, "itemNotFound", "could not be found");
    // Not while the volume is uploading or in maintenance; nothing is written.
    app.db
        .execute(&format!(
            "update volumes set status = 'uploading' where id = '{id}'"
        ))
        .await
        .expect("fixture");
    call(
        &app,
        Method::POST,
        &path,
        Some(json!({"metadata": {"a": "1"}})),
    )
    .await
    .assert_fault(
        400,
        "badRequest",
        "Updating volume metadata is not allowed for volumes in uploading status.",
    );
    assert_eq!(
        call(&app, Method::GET, &path, None).await.json,
        json!({"metadata": {}})
    );
    for bad in [
        json!({"metadata": "x"}),
        json!({"metadata": {"": "v"}}),
        json!({"metadata": {"k": "v".repeat(256)}}),
        json!({"meta": {"k": "v"}}),
    ] {
        // Schema messages vary ("Invalid input ...", "... is a required property").
        call(&app, Method::PUT, &path, Some(bad))
            .await
            .assert_fault(400, "badRequest", "");
    }
}

fn items(prefix: &str, count: usize) -> Value {
    let map: serde_json::Map<String, Value> = (0..count)
        .map(|i| (format!("{prefix}{i}"), json!("v")))
        .collect();
    Value::Object(map)
}

/// A volume holds at most 128 metadata items: larger requests get a 400 that says so
/// (16,384 keys once got a 500), and a merge past the limit changes nothing.
async fn metadata_item_count_is_bounded(app: TestApp) {
    let refused = "Invalid metadata: a volume holds at most 128 metadata items";
    app.post_volume(json!({"size": 1, "metadata": items("k", 129)}), "3.71")
        .await
        .assert_fault(400, "badRequest", refused);
    let id = str_of(
        &app.create_volume(json!({"size": 1, "metadata": items("a", 100)}))
            .await,
        "id",
    );
    let path = format!("/v3/p1/volumes/{id}/metadata");
    for method in [Method::POST, Method::PUT] {
        call(
            &app,
            method,
            &path,
            Some(json!({"metadata": items("b", 16_384)})),
        )
        .await
        .assert_fault(400, "badRequest", "this request would leave it with 16384.");
    }
    call(
        &app,
        Method::POST,
        &path,
        Some(json!({"metadata": items("b", 29)})),
    )
    .await
    .assert_fault(400, "badRequest", "this request would leave it with 129.");
    let kept = call(&app, Method::GET, &path, None).await;
    assert_eq!(kept.json["metadata"].as_object().unwrap().len(), 100);
    let merged = call(
        &app,
        Method::POST,
        &path,
        Some(json!({"metadata": items("b", 28)})),
    )
    .await;
    assert_eq!(merged.status, 200, "{}", merged.text);
    assert_eq!(merged.json["metadata"].as_object().unwrap().len(), 128);
    app.request(Method::PUT, &format!("/v3/p1/volumes/{id}"))
        .json(&json!({"volume": {"metadata": items("c", 200)}}))
        .send()
        .await
        .assert_fault(400, "badRequest", refused);
}

backend_tests!(
    metadata_item_count_is_bounded,
    update_renames_and_replaces_metadata,
    metadata_crud,
    metadata_rules
);

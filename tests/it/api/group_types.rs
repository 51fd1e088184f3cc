//! Group types and their specs (3.11+), with Cinder's statuses, bodies and rules: admins
//! make, change and delete them; members list and show the public ones, without specs.

use axum::http::Method;
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::http::ADMIN_TOKEN;
use crate::support::{TestApp, TestResponse};

async fn call(app: &TestApp, method: Method, path: &str, body: Option<Value>) -> TestResponse {
    call_as(app, ADMIN_TOKEN, method, path, body).await
}

async fn call_as(
    app: &TestApp,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> TestResponse {
    let request = app.request(method, path).token(token).version("3.11");
    match body {
        Some(body) => request.json(&body).send().await,
        None => request.send().await,
    }
}

async fn make(app: &TestApp, body: Value) -> Value {
    let made = call(app, Method::POST, "/v3/p1/group_types", Some(body)).await;
    assert_eq!(made.status, 202, "{}", made.text);
    made.json["group_type"].clone()
}

async fn a_group_type_is_made_shown_changed_and_deleted(app: TestApp) {
    let made = make(
        &app,
        json!({"group_type": {"name": "cg", "description": "consistent",
                              "group_specs": {"consistent_group_snapshot_enabled": "<is> True"}}}),
    )
    .await;
    let id = str_of(&made, "id");
    assert_eq!(
        made,
        json!({"id": id, "name": "cg", "description": "consistent", "is_public": true,
               "group_specs": {"consistent_group_snapshot_enabled": "<is> True"}})
    );
    let path = format!("/v3/p1/group_types/{id}");
    let shown = call(&app, Method::GET, &path, None).await;
    assert_eq!(shown.json["group_type"], made);
    // A member sees it, without its specs.
    let seen = call_as(&app, MEMBER_P1, Method::GET, &path, None).await;
    assert_eq!(seen.status, 200, "{}", seen.text);
    assert!(seen.json["group_type"].get("group_specs").is_none());

    call(
        &app,
        Method::POST,
        "/v3/p1/group_types",
        Some(json!({"group_type": {"name": "cg"}})),
    )
    .await
    .assert_fault(409, "conflictingRequest", "Group Type cg already exists.");

    let renamed = call(
        &app,
        Method::PUT,
        &path,
        Some(json!({"group_type": {"name": "cg2", "is_public": "false"}})),
    )
    .await;
    assert_eq!(renamed.status, 200, "{}", renamed.text);
    assert_eq!(renamed.json["group_type"]["name"], "cg2");
    assert_eq!(renamed.json["group_type"]["is_public"], false);
    assert_eq!(renamed.json["group_type"]["description"], "consistent");
    // Private now: members no longer see it.
    call_as(&app, MEMBER_P1, Method::GET, &path, None)
        .await
        .assert_fault(
            404,
            "itemNotFound",
            &format!("Group type {id} could not be found."),
        );
    for (body, message) in [
        (
            json!({"group_type": {}}),
            "Specify group type name, description",
        ),
        (
            json!({"group_type": {"name": " "}}),
            "Group type name can not be empty.",
        ),
    ] {
        call(&app, Method::PUT, &path, Some(body))
            .await
            .assert_fault(400, "badRequest", message);
    }

    let deleted = call(&app, Method::DELETE, &path, None).await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
    call(&app, Method::GET, &path, None).await.assert_fault(
        404,
        "itemNotFound",
        "could not be found",
    );
    call(&app, Method::DELETE, &path, None).await.assert_fault(
        404,
        "itemNotFound",
        "could not be found",
    );
    // The name is free again.
    make(&app, json!({"group_type": {"name": "cg2"}})).await;
}

async fn only_admins_change_group_types_and_below_3_11_there_are_none(app: TestApp) {
    let made = make(&app, json!({"group_type": {"name": "g"}})).await;
    let path = format!("/v3/p1/group_types/{}", str_of(&made, "id"));
    for (method, target, body) in [
        (
            Method::POST,
            "/v3/p1/group_types".to_owned(),
            Some(json!({"group_type": {"name": "x"}})),
        ),
        (
            Method::PUT,
            path.clone(),
            Some(json!({"group_type": {"name": "x"}})),
        ),
        (Method::DELETE, path.clone(), None),
        (Method::GET, format!("{path}/group_specs"), None),
    ] {
        call_as(&app, MEMBER_P1, method, &target, body)
            .await
            .assert_fault(403, "forbidden", "");
    }
    let old = app.get("/v3/p1/group_types").version("3.10").send().await;
    assert_eq!(old.status, 404, "{}", old.text);
    call(&app, Method::GET, "/v3/p1/group_types/default", None)
        .await
        .assert_fault(404, "itemNotFound", "Default group type can not be found.");
    call(
        &app,
        Method::POST,
        "/v3/p1/group_types",
        Some(json!({"group_type": {"name": "y", "bogus": 1}})),
    )
    .await
    .assert_fault(400, "badRequest", "");
}

async fn listings_filter_public_types_and_page(app: TestApp) {
    for (name, public) in [("a", true), ("b", false), ("c", true)] {
        make(
            &app,
            json!({"group_type": {"name": name, "is_public": public}}),
        )
        .await;
    }
    let names = |response: &TestResponse| -> Vec<String> {
        let items = response.json["group_types"].as_array().expect("a list");
        items.iter().map(|t| str_of(t, "name")).collect()
    };
    let path = "/v3/p1/group_types?sort=name:asc";
    let public = call(&app, Method::GET, path, None).await;
    assert_eq!(names(&public), ["a", "c"], "public ones by default");
    let all = call(&app, Method::GET, &format!("{path}&is_public=none"), None).await;
    assert_eq!(names(&all), ["a", "b", "c"]);
    let private = call(&app, Method::GET, &format!("{path}&is_public=false"), None).await;
    assert_eq!(names(&private), ["b"]);
    let member = call_as(
        &app,
        MEMBER_P1,
        Method::GET,
        &format!("{path}&is_public=none"),
        None,
    )
    .await;
    assert_eq!(
        names(&member),
        ["a", "c"],
        "members see public types whatever they ask"
    );
    let first = call(
        &app,
        Method::GET,
        &format!("{path}&is_public=none&limit=2"),
        None,
    )
    .await;
    assert_eq!(names(&first), ["a", "b"]);
    let next = first.json["group_type_links"][0]["href"]
        .as_str()
        .expect("a next link");
    assert!(next.contains("marker="), "{next}");
    let marker = str_of(&first.json["group_types"][1], "id");
    let rest = call(
        &app,
        Method::GET,
        &format!("{path}&is_public=none&limit=2&marker={marker}"),
        None,
    )
    .await;
    assert_eq!(names(&rest), ["c"]);
}

async fn group_specs_are_set_shown_and_removed(app: TestApp) {
    let made = make(&app, json!({"group_type": {"name": "s"}})).await;
    let specs = format!("/v3/p1/group_types/{}/group_specs", str_of(&made, "id"));
    let set = call(
        &app,
        Method::POST,
        &specs,
        Some(json!({"group_specs": {"k1": "v1", "k2": "v2"}})),
    )
    .await;
    assert_eq!(
        (set.status.as_u16(), set.json.clone()),
        (202, json!({"group_specs": {"k1": "v1", "k2": "v2"}}))
    );
    let replaced = call(
        &app,
        Method::PUT,
        &format!("{specs}/k1"),
        Some(json!({"k1": "new"})),
    )
    .await;
    assert_eq!(
        (replaced.status.as_u16(), replaced.json.clone()),
        (200, json!({"k1": "new"}))
    );
    call(
        &app,
        Method::PUT,
        &format!("{specs}/k1"),
        Some(json!({"k2": "x"})),
    )
    .await
    .assert_fault(400, "badRequest", "Request body and URI mismatch");
    let shown = call(&app, Method::GET, &format!("{specs}/k1"), None).await;
    assert_eq!(shown.json, json!({"k1": "new"}));
    let listed = call(&app, Method::GET, &specs, None).await;
    assert_eq!(
        listed.json,
        json!({"group_specs": {"k1": "new", "k2": "v2"}})
    );
    let removed = call(&app, Method::DELETE, &format!("{specs}/k2"), None).await;
    assert_eq!(removed.status, 202, "{}", removed.text);
    let id = str_of(&made, "id");
    call(&app, Method::DELETE, &format!("{specs}/k2"), None)
        .await
        .assert_fault(
            404,
            "itemNotFound",
            &format!("Group Type {id} has no specs with key k2."),
        );
    call(&app, Method::GET, &format!("{specs}/k2"), None)
        .await
        .assert_fault(
            404,
            "itemNotFound",
            &format!("Group Type {id} has no extra spec with key k2."),
        );
    let shown = call(&app, Method::GET, &format!("/v3/p1/group_types/{id}"), None).await;
    assert_eq!(
        shown.json["group_type"]["group_specs"],
        json!({"k1": "new"})
    );
    call(
        &app,
        Method::POST,
        &specs,
        Some(json!({"group_specs": {"bad key": "v"}})),
    )
    .await
    .assert_fault(400, "badRequest", "");
    let unknown = "/v3/p1/group_types/4b4a2c9a-86b8-4a1d-9df8-1c5e8f6d2b11/group_specs";
    call(&app, Method::GET, unknown, None).await.assert_fault(
        404,
        "itemNotFound",
        "could not be found",
    );
}

backend_tests!(
    a_group_type_is_made_shown_changed_and_deleted,
    only_admins_change_group_types_and_below_3_11_there_are_none,
    listings_filter_public_types_and_page,
    group_specs_are_set_shown_and_removed,
);

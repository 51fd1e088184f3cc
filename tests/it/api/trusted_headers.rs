//! The `trusted-headers` strategy: identity from an auth proxy's headers, project
//! isolation, and roles deciding policy for non-admin users.

use axum::http::Method;
use serde_json::json;

use crate::support::helpers::*;
use crate::support::http::{AuthMode, RequestBuilder};
use crate::support::TestApp;

fn as_user(request: RequestBuilder, user: &str, project: &str, roles: &str) -> RequestBuilder {
    request
        .without_token()
        .header("X-Identity-Status", "Confirmed")
        .header("X-User-Id", user)
        .header("X-Project-Id", project)
        .header("X-Roles", roles)
}

async fn identity_comes_from_the_headers(app: TestApp) {
    let app = app.with_auth(AuthMode::TrustedHeaders);
    let anonymous = app.get("/v3/p1/volumes").without_token().send().await;
    anonymous.assert_fault(401, "unauthorized", "requires authentication");
    let invalid = app
        .get("/v3/p1/volumes")
        .without_token()
        .header("X-Identity-Status", "Invalid")
        .header("X-User-Id", "u")
        .header("X-Project-Id", "p1")
        .send()
        .await;
    assert_eq!(invalid.status, 401);
    // A second copy of an identity header came from the client: refused, whatever order.
    let doubled = as_user(app.get("/v3/p1/volumes"), "u", "p1", "admin")
        .header("X-Identity-Status", "Invalid")
        .send()
        .await;
    doubled.assert_fault(
        401,
        "unauthorized",
        "The identity header x-identity-status was given more than once.",
    );
    let two_projects = as_user(app.get("/v3/p1/volumes"), "u", "p1", "member")
        .header("X-Project-Id", "p2")
        .send()
        .await;
    assert_eq!(two_projects.status, 401, "{}", two_projects.text);
    // A noauth token means nothing here.
    assert_eq!(app.get("/v3/p1/volumes").send().await.status, 401);

    let created = as_user(
        app.request(Method::POST, "/v3/p1/volumes"),
        "bob",
        "p1",
        "member,reader",
    )
    .version("3.71")
    .json(&json!({"volume": {"size": 1}}))
    .send()
    .await;
    assert_eq!(created.status, 202, "{}", created.text);
    let volume = &created.json["volume"];
    assert_eq!(volume["user_id"], "bob");
    assert!(
        volume.get("os-vol-host-attr:host").is_none(),
        "a member is not admin"
    );
    let id = str_of(volume, "id");

    // Another project's member: 404, not 403, and nothing in lists.
    let other = as_user(
        app.get(&format!("/v3/p2/volumes/{id}")),
        "eve",
        "p2",
        "member,reader",
    )
    .send()
    .await;
    other.assert_fault(404, "itemNotFound", "could not be found");
    let listed = as_user(
        app.get("/v3/p2/volumes?all_tenants=1"),
        "eve",
        "p2",
        "member,reader",
    )
    .send()
    .await;
    assert_eq!(listed.json["volumes"], json!([]));
    // An admin (role admin, any project) sees it and its host.
    let admin = as_user(
        app.get(&format!("/v3/p9/volumes/{id}")),
        "root",
        "p9",
        "admin",
    )
    .version("3.71")
    .send()
    .await;
    assert_eq!(admin.status, 200, "{}", admin.text);
    assert!(admin.json["volume"].get("os-vol-host-attr:host").is_some());

    // A reader may look but not attach or delete.
    let reader = as_user(
        app.request(Method::POST, "/v3/p1/attachments"),
        "rita",
        "p1",
        "reader",
    )
    .version("3.44")
    .json(&json!({"attachment": {"volume_uuid": id}}))
    .send()
    .await;
    reader.assert_fault(403, "forbidden", "volume:attachment_create");
    let shown = as_user(
        app.get(&format!("/v3/p1/volumes/{id}")),
        "rita",
        "p1",
        "reader",
    )
    .send()
    .await;
    assert_eq!(shown.status, 200);
    let force = as_user(
        app.request(Method::DELETE, &format!("/v3/p1/volumes/{id}?force=true")),
        "bob",
        "p1",
        "member,reader",
    )
    .version("3.23")
    .send()
    .await;
    force.assert_fault(403, "forbidden", "volume:force_delete");
}

async fn attachments_are_isolated_by_project(app: TestApp) {
    let app = app.with_auth(AuthMode::TrustedHeaders);
    let created = as_user(
        app.request(Method::POST, "/v3/p1/volumes"),
        "bob",
        "p1",
        "member,reader",
    )
    .json(&json!({"volume": {"size": 1}}))
    .send()
    .await;
    let v = str_of(&created.json["volume"], "id");
    let attached = as_user(
        app.request(Method::POST, "/v3/p1/attachments"),
        "bob",
        "p1",
        "member,reader",
    )
    .version("3.44")
    .json(&json!({"attachment": {"volume_uuid": v, "instance_uuid": I1}}))
    .send()
    .await;
    assert_eq!(attached.status, 200, "{}", attached.text);
    let a = str_of(&attached.json["attachment"], "id");
    for (method, path) in [
        (Method::GET, format!("/v3/p2/attachments/{a}")),
        (Method::DELETE, format!("/v3/p2/attachments/{a}")),
    ] {
        let response = as_user(app.request(method, &path), "eve", "p2", "member,reader")
            .version("3.44")
            .send()
            .await;
        response.assert_fault(404, "itemNotFound", "could not be found");
    }
    let listed = as_user(
        app.get("/v3/p2/attachments?all_tenants=1"),
        "eve",
        "p2",
        "member,reader",
    )
    .version("3.44")
    .send()
    .await;
    assert_eq!(listed.json["attachments"], json!([]));
    let reader_delete = as_user(
        app.request(Method::DELETE, &format!("/v3/p1/attachments/{a}")),
        "rita",
        "p1",
        "reader",
    )
    .version("3.44")
    .send()
    .await;
    reader_delete.assert_fault(403, "forbidden", "volume:attachment_delete");
}

backend_tests!(
    identity_comes_from_the_headers,
    attachments_are_isolated_by_project
);

//! noauth: Cinder's `user:project` token, with the differences D1–D3 of
//! api-ref/differences-from-cinder.md.

use crate::support::fixtures::{self, *};
use crate::support::TestApp;

async fn a_request_without_token_is_401(app: TestApp) {
    let response = app
        .get("/v3/attachments")
        .without_token()
        .header("X-Auth-User", "bob")
        .header("X-Auth-Project-Id", "1234")
        .version("3.27")
        .send()
        .await;
    response.assert_fault(401, "unauthorized", "requires authentication");
    assert!(response.header("www-authenticate").is_some());
    assert!(response.header("x-openstack-request-id").is_some());
    // An empty token is no token.
    let empty = app
        .get("/v3/attachments")
        .token(" ")
        .version("3.27")
        .send()
        .await;
    assert_eq!(empty.status, 401);
}

async fn a_token_without_colon_is_user_and_project(app: TestApp) {
    app.db
        .execute(&fixtures::two_projects_with_attachments())
        .await
        .unwrap();
    // Token `p2` is user p2 of project p2: the URL with p2 is its own, p1's is not.
    let own = app
        .get("/v3/p2/attachments")
        .token("p2")
        .version("3.27")
        .send()
        .await;
    assert_eq!(own.status, 200, "{}", own.text);
    let ids: Vec<&str> = own.json["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [ATTACHMENT_P2]);
    let other = app
        .get("/v3/p1/attachments")
        .token("p2")
        .version("3.27")
        .send()
        .await;
    other.assert_fault(400, "badRequest", "Malformed request url");
}

async fn url_project_must_be_the_callers(app: TestApp) {
    let response = app
        .get("/v3/bbbb/attachments")
        .token("u:aaaa")
        .version("3.27")
        .send()
        .await;
    response.assert_fault(400, "badRequest", "Malformed request url");
    assert_eq!(
        response.header("openstack-api-version"),
        Some("volume 3.27")
    );
}

async fn explicit_roles_limit_what_a_caller_sees(app: TestApp) {
    app.db
        .execute(&fixtures::two_projects_with_attachments())
        .await
        .unwrap();
    // `all_tenants` widens the listing for admins only.
    let member = app
        .get("/v3/attachments?all_tenants=1")
        .token("u:p1:member,reader")
        .version("3.27")
        .send()
        .await;
    assert_eq!(member.json["attachments"].as_array().unwrap().len(), 3);
    let admin = app
        .get("/v3/attachments?all_tenants=1")
        .token("u:p1:admin")
        .version("3.27")
        .send()
        .await;
    assert_eq!(admin.json["attachments"].as_array().unwrap().len(), 4);
}

backend_tests!(
    a_request_without_token_is_401,
    a_token_without_colon_is_user_and_project,
    url_project_must_be_the_callers,
    explicit_roles_limit_what_a_caller_sees,
);

//! Paths with and without a project, unknown paths and methods.

use axum::http::Method;

use crate::support::fixtures;
use crate::support::TestApp;

async fn project_segment_is_optional(app: TestApp) {
    app.db
        .execute(&fixtures::two_projects_with_attachments())
        .await
        .unwrap();
    for version in ["3.27", "3.71"] {
        for path in ["attachments", "attachments/detail"] {
            let with = app
                .get(&format!("/v3/p1/{path}"))
                .version(version)
                .send()
                .await;
            let without = app
                .get(&format!("/v3/{path}"))
                .version(version)
                .send()
                .await;
            assert_eq!(with.status, 200, "{}", with.text);
            assert_eq!(with.json, without.json, "{path} at {version}");
            assert_eq!(with.json["attachments"].as_array().unwrap().len(), 3);
        }
    }
}

async fn gophercloud_style_project_names_route(app: TestApp) {
    // gophercloud's noauth client puts the project *name* in the URL.
    let response = app
        .get("/v3/admin/attachments")
        .token("admin:admin")
        .version("3.27")
        .send()
        .await;
    assert_eq!(response.status, 200, "{}", response.text);
    // A segment with characters no project id has is not routed.
    let odd = app
        .get("/v3/a.b/attachments")
        .token("u:a.b")
        .version("3.27")
        .send()
        .await;
    odd.assert_fault(404, "itemNotFound", "could not be found");
}

async fn attachments_summary_is_not_found(app: TestApp) {
    let response = app
        .get("/v3/attachments/summary")
        .version("3.27")
        .send()
        .await;
    response.assert_fault(404, "itemNotFound", "could not be found");
}

async fn unknown_path_is_a_json_404(app: TestApp) {
    for path in ["/v3/nonsense", "/v3/p1/nonsense/deeper", "/v2/", "/nothing"] {
        let response = app.get(path).version("3.27").send().await;
        response.assert_fault(404, "itemNotFound", "The resource could not be found.");
    }
}

async fn wrong_method_is_bad_method(app: TestApp) {
    let response = app
        .request(Method::PATCH, "/v3/attachments/detail")
        .version("3.27")
        .send()
        .await;
    response.assert_fault(405, "badMethod", "PATCH");
    assert_eq!(
        response.header("openstack-api-version"),
        Some("volume 3.27")
    );
}

async fn unbuilt_operations_are_not_implemented(app: TestApp) {
    let workers = app.get("/v3/p1/workers").version("3.27").send().await;
    workers.assert_fault(501, "notImplemented", "workers");
    let groups = app
        .get("/v3/p1/consistencygroups")
        .version("3.27")
        .send()
        .await;
    groups.assert_fault(501, "notImplemented", "consistencygroups");
    // Built now: an unknown type's encryption is Cinder's 404.
    let encryption = app
        .get("/v3/p1/types/8c4a7f38-0000-4000-8000-000000000000/encryption")
        .version("3.27")
        .send()
        .await;
    encryption.assert_fault(404, "itemNotFound", "could not be found");
    // The microversion gate still comes first.
    let early = app
        .request(Method::DELETE, "/v3/attachments/x")
        .version("3.26")
        .send()
        .await;
    early.assert_fault(404, "itemNotFound", "could not be found");
}

backend_tests!(
    project_segment_is_optional,
    gophercloud_style_project_names_route,
    attachments_summary_is_not_found,
    unknown_path_is_a_json_404,
    wrong_method_is_bad_method,
    unbuilt_operations_are_not_implemented,
);

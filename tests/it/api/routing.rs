//! Paths with and without a project, unknown paths and methods.

use axum::http::Method;
use serde_json::json;

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
    let clusters = app.get("/v3/p1/clusters").version("3.27").send().await;
    clusters.assert_fault(501, "notImplemented", "clusters");
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

/// `resource_filters` (3.33): what each listing takes; every filter it names for volumes
/// is one a member's volume listing takes.
async fn resource_filters_name_what_listings_take(app: TestApp) {
    let early = app
        .get("/v3/p1/resource_filters")
        .version("3.32")
        .send()
        .await;
    early.assert_fault(404, "itemNotFound", "could not be found");
    let all = app
        .get("/v3/p1/resource_filters")
        .version("3.33")
        .send()
        .await;
    assert_eq!(all.status, 200, "{}", all.text);
    let resources: Vec<&str> = all.json["resource_filters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["resource"].as_str().unwrap())
        .collect();
    assert_eq!(
        resources,
        [
            "volume",
            "backup",
            "snapshot",
            "group",
            "group_snapshot",
            "attachment",
            "message",
            "pool",
            "volume_type"
        ]
    );
    let one = app
        .get("/v3/p1/resource_filters?resource=attachment")
        .version("3.33")
        .send()
        .await;
    assert_eq!(
        one.json,
        json!({"resource_filters": [{"resource": "attachment",
            "filters": ["volume_id", "status", "instance_id", "attach_status"]}]})
    );
    let none = app
        .get("/v3/p1/resource_filters?resource=nothing")
        .version("3.33")
        .send()
        .await;
    assert_eq!(none.json, json!({"resource_filters": []}));

    let volume = app
        .get("/v3/p1/resource_filters?resource=volume")
        .version("3.33")
        .send()
        .await;
    let sample = |filter: &str| match filter {
        "metadata" => "%7B%22k%22%3A%22v%22%7D",
        "bootable" => "true",
        "size" => "1",
        "group_id" => "8c4a7f38-0000-4000-8000-000000000000",
        "created_at" | "updated_at" => "gt%3A2020-01-01T00%3A00%3A00",
        _ => "x",
    };
    for filter in volume.json["resource_filters"][0]["filters"]
        .as_array()
        .unwrap()
    {
        let filter = filter.as_str().unwrap();
        let path = format!("/v3/p1/volumes?{filter}={}", sample(filter));
        let listed = app
            .get(&path)
            .token(crate::support::helpers::MEMBER_P1)
            .version("3.60")
            .send()
            .await;
        assert_eq!(listed.status, 200, "{filter}: {}", listed.text);
    }
}

backend_tests!(
    resource_filters_name_what_listings_take,
    project_segment_is_optional,
    gophercloud_style_project_names_route,
    attachments_summary_is_not_found,
    unknown_path_is_a_json_404,
    wrong_method_is_bad_method,
    unbuilt_operations_are_not_implemented,
);

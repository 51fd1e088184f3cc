//! Version discovery and microversion negotiation.

use serde_json::Value;

use crate::support::TestApp;

#[track_caller]
fn assert_version_document(body: &Value, host_base: &str) {
    let versions = body["versions"].as_array().expect("versions list");
    assert_eq!(versions.len(), 1);
    let v = &versions[0];
    assert_eq!(v["id"], "v3.0");
    assert_eq!(v["status"], "CURRENT");
    assert_eq!(v["version"], "3.71");
    assert_eq!(v["min_version"], "3.0");
    assert_eq!(v["updated"], "2023-08-31T00:00:00Z");
    let links = v["links"].as_array().expect("links");
    assert_eq!(links.len(), 2);
    assert_eq!(links[0]["rel"], "describedby");
    assert_eq!(links[0]["type"], "text/html");
    assert_eq!(links[1]["rel"], "self");
    assert_eq!(links[1]["href"], format!("{host_base}/v3/"));
    assert_eq!(
        v["media-types"],
        serde_json::json!([{"base": "application/json",
                            "type": "application/vnd.openstack.volume+json;version=3"}])
    );
}

async fn root_lists_versions_without_auth(app: TestApp) {
    let response = app
        .get("/")
        .without_token()
        .header("host", "cinder.test:8776")
        .send()
        .await;
    assert_eq!(response.status, 300);
    assert_version_document(&response.json, "http://cinder.test:8776");
    assert_eq!(
        response.header("openstack-api-version"),
        None,
        "no microversion outside /v3"
    );
}

async fn v3_document_at_3_0(app: TestApp) {
    let response = app
        .get("/v3/")
        .header("host", "h:1")
        .version("3.0")
        .send()
        .await;
    assert_eq!(response.status, 200);
    assert_version_document(&response.json, "http://h:1");
    assert_eq!(response.header("openstack-api-version"), Some("volume 3.0"));
    assert_eq!(response.header("vary"), Some("OpenStack-API-Version"));
    // Public like `GET /`, and `/v3` without the slash is served directly.
    let anonymous = app
        .get("/v3")
        .without_token()
        .header("host", "h:1")
        .send()
        .await;
    assert_eq!(anonymous.status, 200);
    assert_eq!(anonymous.json, response.json);
}

async fn latest_resolves_to_the_maximum(app: TestApp) {
    let response = app
        .get("/v3/")
        .header("OpenStack-API-Version", "volume latest")
        .send()
        .await;
    assert_eq!(response.status, 200);
    assert_eq!(
        response.header("openstack-api-version"),
        Some("volume 3.71")
    );
}

async fn public_endpoint_sets_the_self_link(app: TestApp) {
    let app = app.reconfigure(cinder_attach::api::ServiceConfig {
        public_endpoint: Some("https://volume.example.com/".into()),
        ..Default::default()
    });
    let response = app.get("/").send().await;
    assert_version_document(&response.json, "https://volume.example.com");
}

async fn no_header_means_3_0_and_attachments_are_not_there(app: TestApp) {
    let response = app.get("/v3/attachments").send().await;
    response.assert_fault(404, "itemNotFound", "The resource could not be found.");
    assert_eq!(response.header("openstack-api-version"), Some("volume 3.0"));
    assert_eq!(response.header("vary"), Some("OpenStack-API-Version"));
}

async fn attachments_start_at_3_27(app: TestApp) {
    let below = app.get("/v3/attachments").version("3.26").send().await;
    below.assert_fault(404, "itemNotFound", "could not be found");
    let at = app.get("/v3/attachments").version("3.27").send().await;
    assert_eq!(at.status, 200);
    assert_eq!(at.json, serde_json::json!({"attachments": []}));
    assert_eq!(at.header("openstack-api-version"), Some("volume 3.27"));
}

async fn out_of_range_is_406(app: TestApp) {
    for (version, shown) in [("3.72", "3.72"), ("4.0", "4.0"), ("2.0", "2.0")] {
        let response = app.get("/v3/attachments").version(version).send().await;
        response.assert_fault(
            406,
            "computeFault",
            &format!(
                "Version {shown} is not supported by the API. Minimum is 3.0 and maximum is 3.71."
            ),
        );
        // Cinder echoes the refused version.
        assert_eq!(
            response.header("openstack-api-version"),
            Some(format!("volume {shown}").as_str())
        );
    }
    let discovery = app.get("/v3/").version("3.72").send().await;
    discovery.assert_fault(406, "computeFault", "Version 3.72 is not supported");
}

async fn malformed_versions_are_400(app: TestApp) {
    for version in ["2.0.1", "3.x", "3.07"] {
        let response = app.get("/v3/attachments").version(version).send().await;
        response.assert_fault(
            400,
            "badRequest",
            &format!("API Version String {version} is of invalid format. Must be of format MajorNum.MinorNum."),
        );
        assert_eq!(
            response.header("openstack-api-version"),
            None,
            "not parsed, not echoed"
        );
    }
    // Cinder fails with 500 on a part that is not exactly two tokens; we say 400.
    let response = app
        .get("/v3/attachments")
        .header("OpenStack-API-Version", "volume 3.27 extra")
        .send()
        .await;
    response.assert_fault(400, "badRequest", "volume <major>.<minor>");
}

async fn several_services_in_one_header(app: TestApp) {
    let none = app
        .get("/v3/attachments")
        .header("OpenStack-API-Version", "compute 2.22, identity 2.3")
        .send()
        .await;
    none.assert_fault(400, "badRequest", "malformed or otherwise incorrect");
    let mixed = app
        .get("/v3/attachments")
        .header("OpenStack-API-Version", "volume 3.27, compute 2.22")
        .send()
        .await;
    assert_eq!(mixed.status, 200, "{}", mixed.text);
    assert_eq!(mixed.header("openstack-api-version"), Some("volume 3.27"));
}

async fn volumev3_is_a_volume_service(app: TestApp) {
    let response = app
        .get("/v3/attachments")
        .header("OpenStack-API-Version", "volumev3 3.27")
        .send()
        .await;
    assert_eq!(response.status, 200);
    assert_eq!(
        response.header("openstack-api-version"),
        Some("volume 3.27")
    );
}

async fn complete_needs_3_44(app: TestApp) {
    let path = "/v3/attachments/a1111111-1111-4111-8111-111111111111/action";
    let body = serde_json::json!({"os-complete": null});
    let response = app
        .request(axum::http::Method::POST, path)
        .version("3.43")
        .json(&body)
        .send()
        .await;
    response.assert_fault(404, "itemNotFound", "could not be found");
}

async fn service_name_is_case_sensitive(app: TestApp) {
    let capital = app
        .get("/v3/attachments")
        .header("OpenStack-API-Version", "Volume 3.27")
        .send()
        .await;
    capital.assert_fault(400, "badRequest", "malformed");
    let lower_name = app
        .get("/v3/attachments")
        .header("openstack-api-version", "volume 3.27")
        .send()
        .await;
    assert_eq!(lower_name.status, 200);
}

async fn legacy_header_is_ignored(app: TestApp) {
    let response = app
        .get("/v3/attachments")
        .header("X-OpenStack-Volume-API-Version", "3.27")
        .send()
        .await;
    response.assert_fault(404, "itemNotFound", "could not be found");
}

backend_tests!(
    root_lists_versions_without_auth,
    v3_document_at_3_0,
    latest_resolves_to_the_maximum,
    public_endpoint_sets_the_self_link,
    no_header_means_3_0_and_attachments_are_not_there,
    attachments_start_at_3_27,
    out_of_range_is_406,
    malformed_versions_are_400,
    several_services_in_one_header,
    volumev3_is_a_volume_service,
    complete_needs_3_44,
    service_name_is_case_sensitive,
    legacy_header_is_ignored,
);

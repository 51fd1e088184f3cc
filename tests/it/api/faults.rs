//! Every failure answers in Cinder's fault shape, with a request id.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::Method;
use axum::routing::get;
use axum::Router;
use chrono::Utc;
use cinder_attach::api::{with_process_layers, AppState, ServiceConfig};
use cinder_attach::domain::ids::MessageId;
use cinder_attach::domain::message::Message;
use tower::ServiceExt;

use crate::support::{TestApp, TestResponse};

async fn wrong_content_type_is_415(app: TestApp) {
    let response = app
        .request(Method::POST, "/v3/attachments")
        .version("3.27")
        .raw_body("text/plain", "{\"attachment\": {}}")
        .send()
        .await;
    response.assert_fault(415, "badMediaType", "Unsupported Content-Type");
    assert_eq!(
        response.header("openstack-api-version"),
        Some("volume 3.27")
    );
}

async fn invalid_json_is_malformed_body(app: TestApp) {
    for body in ["{not json", "{\"attachment\": }", "\u{0}"] {
        let response = app
            .request(Method::POST, "/v3/attachments")
            .version("3.27")
            .raw_body("application/json", body)
            .send()
            .await;
        response.assert_fault(400, "badRequest", "Malformed request body");
    }
    // The OpenStack media type and charset parameters are accepted.
    let response = app
        .request(Method::POST, "/v3/attachments")
        .version("3.27")
        .raw_body(
            "application/vnd.openstack.volume+json; charset=UTF-8",
            "{oops",
        )
        .send()
        .await;
    response.assert_fault(400, "badRequest", "Malformed request body");
}

async fn oversized_body_is_413(app: TestApp) {
    let app = app.reconfigure(ServiceConfig {
        max_body_bytes: 64,
        ..Default::default()
    });
    let big = format!(
        "{{\"attachment\": {{\"volume_uuid\": \"{}\"}}}}",
        "x".repeat(200)
    );
    let response = app
        .request(Method::POST, "/v3/attachments")
        .version("3.27")
        .raw_body("application/json", big)
        .send()
        .await;
    response.assert_fault(413, "overLimit", "larger than 64 bytes");
}

async fn request_ids_on_every_response(app: TestApp) {
    let responses = [
        app.get("/").send().await,
        app.get("/v3/attachments").version("3.27").send().await,
        app.get("/v3/attachments").version("3.72").send().await,
        app.get("/v3/attachments").without_token().send().await,
        app.get("/v3/nowhere").send().await,
    ];
    let mut seen = std::collections::HashSet::new();
    for response in &responses {
        let id = response
            .header("x-openstack-request-id")
            .expect("request id");
        assert!(id.starts_with("req-"), "{id}");
        assert!(
            cinder_attach::domain::ids::parse_uuid_like(&id[4..]).is_some(),
            "{id}"
        );
        assert_eq!(response.header("x-compute-request-id"), Some(id));
        assert!(seen.insert(id.to_owned()), "ids are unique per request");
    }
}

async fn database_unavailable_is_503(app: TestApp) {
    app.store.close().await;
    let response = app.get("/v3/attachments").version("3.27").send().await;
    response.assert_fault(503, "serviceUnavailable", "database is unavailable");
    assert!(
        !response.text.to_lowercase().contains("pool"),
        "no internals: {}",
        response.text
    );
}

/// The real process layers around handlers that misbehave on purpose.
fn misbehaving_app(state: AppState) -> Router {
    let routes = Router::new()
        .route(
            "/v3/boom",
            get(|| async {
                if true {
                    panic!("a bug");
                }
                "unreachable"
            }),
        )
        .route(
            "/v3/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                "late"
            }),
        )
        .route(
            "/v3/stored-then-slow/{id}",
            get(
                |State(state): State<AppState>, Path(id): Path<uuid::Uuid>| async move {
                    let message = Message {
                        id: MessageId::from(id),
                        project_id: "p1".into(),
                        request_id: None,
                        resource_type: "VOLUME".into(),
                        resource_uuid: None,
                        event_id: "VOLUME_VOLUME_008_012".into(),
                        message_level: "ERROR".into(),
                        user_message: "stored before the stall".into(),
                        created_at: Utc::now(),
                        expires_at: None,
                    };
                    state.service.store.insert_message(&message).await.unwrap();
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    "late"
                },
            ),
        );
    with_process_layers(routes, state)
}

async fn call(router: Router, path: &str) -> TestResponse {
    let request = axum::http::Request::get(path)
        .body(axum::body::Body::empty())
        .unwrap();
    TestResponse::read(router.oneshot(request).await.unwrap()).await
}

async fn a_panic_is_a_500_fault(app: TestApp) {
    let response = call(misbehaving_app(app.state.clone()), "/v3/boom").await;
    response.assert_fault(500, "computeFault", "erred or is incapable");
    assert!(!response.text.contains("a bug"));
    assert!(response.header("x-openstack-request-id").is_some());
}

async fn a_slow_request_times_out_with_503(app: TestApp) {
    let app = app.reconfigure(ServiceConfig {
        request_timeout: Duration::from_millis(200),
        ..Default::default()
    });
    let response = call(misbehaving_app(app.state.clone()), "/v3/slow").await;
    response.assert_fault(
        503,
        "serviceUnavailable",
        "did not complete within 0.2 seconds",
    );
    assert!(response.header("x-openstack-request-id").is_some());
}

/// Cut off after it committed, a request is not answered as if nothing had changed.
async fn a_request_cut_off_after_a_commit_is_504_and_keeps_its_change(app: TestApp) {
    let app = app.reconfigure(ServiceConfig {
        request_timeout: Duration::from_millis(300),
        ..Default::default()
    });
    let id = MessageId::generate();
    let path = format!("/v3/stored-then-slow/{id}");
    let response = call(misbehaving_app(app.state.clone()), &path).await;
    response.assert_fault(504, "computeFault", "may or may not have been made");
    let stored = app.store.get_message(id).await.unwrap();
    assert!(
        stored.is_some(),
        "the change the 504 may have made is there"
    );
}

backend_tests!(
    wrong_content_type_is_415,
    invalid_json_is_malformed_body,
    oversized_body_is_413,
    request_ids_on_every_response,
    database_unavailable_is_503,
    a_panic_is_a_500_fault,
    a_slow_request_times_out_with_503,
    a_request_cut_off_after_a_commit_is_504_and_keeps_its_change,
);

//! Prometheus metrics: request counts and latency histograms by route and status,
//! attachments and volumes by status, and connection-pool use.

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use serde_json::json;
use tower::ServiceExt;
use uuid::Uuid;

use crate::support::helpers::{conn, str_of};
use crate::support::{Backend, TestApp};

pub(crate) async fn scrape(app: &TestApp) -> String {
    let response = cinder_attach::api::metrics_router(app.state.clone())
        .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
        .await
        .expect("answers");
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).expect("utf-8")
}

/// The value of the sample named exactly `series` (name and labels).
pub(crate) fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

async fn metrics_count_requests_and_model_state(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    app.attach_fully(&volume, &Uuid::new_v4().to_string(), conn())
        .await;
    for _ in 0..3 {
        assert_eq!(app.show_volume(&volume, "3.44").await.status, 200);
    }
    assert_eq!(app.get("/v3/p1/no-such-thing").send().await.status, 404);

    let text = scrape(&app).await;
    let show = r#"method="GET",route="/v3/{project_id}/volumes/{volume_id}",status="200""#;
    assert_eq!(
        sample(
            &text,
            &format!("cinder_attach_http_requests_total{{{show}}}")
        ),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            &format!("cinder_attach_http_request_duration_seconds_bucket{{le=\"+Inf\",{show}}}")
        ),
        Some(3.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"cinder_attach_http_requests_total{method="POST",route="/v3/{project_id}/volumes",status="202"}"#
        ),
        Some(1.0)
    );
    // Unknown paths are counted under one label, never under the raw path.
    assert!(text.contains(r#"status="404""#));
    assert!(!text.contains("no-such-thing"), "{text}");
    assert_eq!(sample(&text, "cinder_attach_database_up"), Some(1.0));
    assert_eq!(
        sample(&text, r#"cinder_attach_attachments{status="attached"}"#),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, r#"cinder_attach_volumes{status="in-use"}"#),
        Some(1.0)
    );
    // No call owed to Nova: no series.
    assert!(!text.contains("cinder_attach_compute_calls{"), "{text}");
    let pool = match app.db.backend {
        Backend::Sqlite => "write",
        Backend::Postgres => "main",
    };
    assert!(
        sample(
            &text,
            &format!(r#"cinder_attach_db_pool_connections{{pool="{pool}",state="max"}}"#)
        )
        .is_some_and(|max| max >= 1.0),
        "{text}"
    );
    assert!(sample(&text, "process_resident_memory_bytes").is_some_and(|b| b > 0.0));
}

/// Labels come from closed sets: 5,000 requests with made-up methods and paths add one
/// series, not 5,000.
async fn hostile_requests_add_no_series(app: TestApp) {
    let before = scrape(&app).await.lines().count();
    for i in 0..5_000 {
        let method = axum::http::Method::from_bytes(format!("X{i:05}").as_bytes()).unwrap();
        let path = format!("/v3/p1/volumes/{i}/x{i}");
        app.request(method, &path).send().await;
    }
    let text = scrape(&app).await;
    assert!(!text.contains("X0"), "a client's method became a label");
    let others: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("cinder_attach_http_requests_total{method=\"other\""))
        .collect();
    assert_eq!(others.len(), 1, "{others:?}");
    assert!(others[0].ends_with(" 5000"), "{others:?}");
    // That one series (counter and histogram), and nothing else grew.
    let added = text.lines().count() - before;
    assert!(added <= 20, "{added} lines added");
}

/// Calls owed to Nova, by status: what an operator alerts on when Nova stops taking
/// them (pending ones pile up) or refuses them (failed ones grow).
async fn compute_calls_are_counted_by_status(app: TestApp) {
    let now = chrono::Utc::now().to_rfc3339();
    for (n, status) in ["pending", "sent", "sent"].iter().enumerate() {
        app.db
            .execute(&format!(
                "insert into compute_calls (id, kind, volume_id, project_id, servers, status, \
                 attempts, next_attempt_at, created_at) values \
                 ('d000000{n}-0000-4000-8000-000000000000', 'volume-reimaged', \
                  'b0000000-0000-4000-8000-000000000000', 'p1', '[\"s\"]', '{status}', 0, \
                  '{now}', '{now}')"
            ))
            .await
            .unwrap();
    }
    let text = scrape(&app).await;
    let count = |status: &str| {
        sample(
            &text,
            &format!(r#"cinder_attach_compute_calls{{status="{status}"}}"#),
        )
    };
    assert_eq!(count("pending"), Some(1.0), "{text}");
    assert_eq!(count("sent"), Some(2.0), "{text}");
    assert_eq!(count("failed"), None, "{text}");
}

backend_tests!(
    compute_calls_are_counted_by_status,
    metrics_count_requests_and_model_state,
    hostile_requests_add_no_series
);

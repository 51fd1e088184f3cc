//! `workers/cleanup` (3.24): an admin has the half-done work of services finished; the
//! services this process runs are cleaned for, others are `unavailable`; Cinder's words
//! for bad requests.

use axum::http::Method;
use chrono::{Duration, Utc};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::support::helpers::*;
use crate::support::{TestApp, TestResponse};

async fn cleanup(app: &TestApp, body: Option<Value>) -> TestResponse {
    let request = app
        .request(Method::POST, "/v3/p1/workers/cleanup")
        .version("3.24");
    match body {
        Some(body) => request.json(&body).send().await,
        None => request.send().await,
    }
}

fn hosts(listed: &Value) -> Vec<String> {
    let mut hosts: Vec<String> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                s["binary"].as_str().unwrap(),
                s["host"].as_str().unwrap()
            )
        })
        .collect();
    hosts.sort();
    hosts
}

/// A volume left `creating` an hour ago, as a process that died would leave it.
async fn stuck_volume(app: &TestApp) -> String {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let long_ago = (Utc::now() - Duration::hours(1)).to_rfc3339();
    app.db
        .execute(&format!(
            "update volumes set status = 'creating', updated_at = '{long_ago}' where id = '{id}'"
        ))
        .await
        .unwrap();
    id
}

async fn live_services_are_cleaned_down_ones_are_unavailable(app: TestApp) {
    let backend = app.backends().iter().next().unwrap().host.clone();
    let node = backend.split('@').next().unwrap().to_owned();
    // A volume service of another host that stopped reporting a day ago.
    let long_ago = (Utc::now() - Duration::days(1)).to_rfc3339();
    app.db
        .execute(&format!(
            "insert into services (uuid, host, binary_name, backend_name, driver, created_at, \
               updated_at) values ('{}', 'gone@b', 'cinder-volume', 'b', 'file', '{long_ago}', \
               '{long_ago}')",
            Uuid::new_v4()
        ))
        .await
        .unwrap();

    // No body: down services (Cinder's default), and nobody runs that one.
    let down = cleanup(&app, None).await;
    assert_eq!(down.status, 202, "{}", down.text);
    assert_eq!(hosts(&down.json["cleaning"]), Vec::<String>::new());
    assert_eq!(hosts(&down.json["unavailable"]), ["cinder-volume gone@b"]);
    assert_eq!(down.json["unavailable"][0]["cluster_name"], Value::Null);

    // The live services of this host: the scheduler and the backend are cleaned for.
    let stuck = stuck_volume(&app).await;
    let fresh = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    app.db
        .execute(&format!(
            "update volumes set status = 'creating' where id = '{fresh}'"
        ))
        .await
        .unwrap();
    let live = cleanup(&app, Some(json!({"is_up": "true", "host": node}))).await;
    assert_eq!(live.status, 202, "{}", live.text);
    assert_eq!(
        hosts(&live.json["cleaning"]),
        [
            format!("cinder-scheduler {node}"),
            format!("cinder-volume {backend}")
        ]
    );
    assert_eq!(
        hosts(&live.json["unavailable"]),
        [format!("cinder-backup {node}")]
    );
    // The stuck create ends in error, as a restart ends it; work a request may still be
    // doing (changed just now) is left alone.
    app.wait_for_status(&stuck, "error").await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(app.volume_status(&fresh).await, "creating");
}

async fn one_resource_is_found_where_it_is(app: TestApp) {
    let stuck = stuck_volume(&app).await;
    let answer = cleanup(&app, Some(json!({"is_up": true, "resource_id": stuck}))).await;
    assert_eq!(answer.status, 202, "{}", answer.text);
    let backend = app.backends().iter().next().unwrap().host.clone();
    assert_eq!(
        hosts(&answer.json["cleaning"]),
        [format!("cinder-volume {backend}")]
    );
    app.wait_for_status(&stuck, "error").await;

    // An available volume, or no volume at all, is nothing to clean up.
    let idle = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    for id in [idle, Uuid::new_v4().to_string()] {
        cleanup(
            &app,
            Some(json!({"resource_id": id, "resource_type": "volume"})),
        )
        .await
        .assert_fault(
            400,
            "badRequest",
            &format!(
                "Invalid input received: There is no resource with UUID {id} pending cleanup."
            ),
        );
    }
}

async fn bad_requests_and_callers_are_refused(app: TestApp) {
    cleanup(&app, Some(json!({"resource_type": "backup"})))
        .await
        .assert_fault(
            400,
            "badRequest",
            "Invalid input received: Resource type Backup not valid, must be Volume or Snapshot",
        );
    for body in [
        json!({"binary": "cinder-backup"}),
        json!({"is_up": "maybe"}),
        json!({"service_id": "abc"}),
        json!({"resource_id": "not-a-uuid"}),
        json!({"other": 1}),
    ] {
        let refused = cleanup(&app, Some(body.clone())).await;
        assert_eq!(refused.status, 400, "{body}: {}", refused.text);
    }
    let early = app
        .request(Method::POST, "/v3/p1/workers/cleanup")
        .version("3.23")
        .send()
        .await;
    early.assert_fault(404, "itemNotFound", "could not be found");
    let member = call_as(
        &app,
        MEMBER_P1,
        "3.24",
        Method::POST,
        "/v3/p1/workers/cleanup",
        None,
    )
    .await;
    assert_eq!(member.status, 403, "{}", member.text);
}

backend_tests!(
    live_services_are_cleaned_down_ones_are_unavailable,
    one_resource_is_found_where_it_is,
    bad_requests_and_callers_are_refused,
);

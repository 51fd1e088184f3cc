//! Concurrent requests on one volume: exactly the right number win,
//! and afterwards the volume's status stands with its attachments.

use axum::http::Method;
use serde_json::json;
use uuid::Uuid;

use crate::support::helpers::*;
use crate::support::TestApp;

fn create_for(app: &TestApp, volume: &str, instance: &str) -> Pending {
    Box::pin(
        app.request(Method::POST, "/v3/p1/attachments")
            .version("3.44")
            .json(&json!({"attachment": {"volume_uuid": volume, "instance_uuid": instance}}))
            .send(),
    )
}

async fn twenty_instances_race_for_one_volume(app: TestApp) {
    let v = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let requests: Vec<_> = (0..20)
        .map(|_| create_for(&app, &v, &Uuid::new_v4().to_string()))
        .collect();
    let responses = all_at_once(requests).await;
    assert_eq!(successes(&responses), 1);
    for refused in responses.iter().filter(|r| r.status != 200) {
        refused.assert_fault(
            400,
            "badRequest",
            "status must be available or downloading to reserve",
        );
    }
    assert_eq!(app.live_attachments(&v).await, 1);
    assert_eq!(app.volume_status(&v).await, "reserved");
    app.assert_consistent(&v).await;
}

async fn twenty_requests_of_one_instance(app: TestApp) {
    let v = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let requests: Vec<_> = (0..20).map(|_| create_for(&app, &v, I1)).collect();
    let responses = all_at_once(requests).await;
    assert!(successes(&responses) >= 1);
    for ok in responses.iter().filter(|r| r.status == 200) {
        assert_eq!(ok.json["attachment"]["instance"], I1);
    }
    let instances = app.db.column(&format!("select instance_uuid from volume_attachment where volume_id = '{v}' and deleted = false")).await;
    assert!(instances.iter().all(|i| i == I1), "{instances:?}");
    assert_eq!(instances.len(), successes(&responses));
    assert_eq!(app.volume_status(&v).await, "reserved");
}

/// A multiattach volume takes every attachment asked for at once (Cinder refuses all but
/// one while the first is reserved).
async fn ten_instances_race_for_an_in_use_multiattach_volume(app: TestApp) {
    app.create_multiattach_type("ma").await;
    let v = str_of(
        &app.create_volume(json!({"size": 1, "volume_type": "ma"}))
            .await,
        "id",
    );
    app.attach_fully(&v, I1, conn()).await;
    let requests: Vec<_> = (0..10)
        .map(|_| create_for(&app, &v, &Uuid::new_v4().to_string()))
        .collect();
    let responses = all_at_once(requests).await;
    assert_eq!(successes(&responses), 10);
    assert_eq!(app.live_attachments(&v).await, 11);
    assert_eq!(app.volume_status(&v).await, "in-use");
    app.assert_consistent(&v).await;
}

async fn sibling_deletes_race(app: TestApp) {
    app.create_multiattach_type("ma").await;
    for _ in 0..5 {
        let v = str_of(
            &app.create_volume(json!({"size": 1, "volume_type": "ma"}))
                .await,
            "id",
        );
        let a1 = app.attach_fully(&v, I1, conn()).await;
        let a2 = app
            .attach_fully(&v, I2, conn_for("cmp-2", "/dev/vdc"))
            .await;
        let requests = vec![
            app.request(Method::DELETE, &format!("/v3/p1/attachments/{a1}"))
                .version("3.44")
                .send(),
            app.request(Method::DELETE, &format!("/v3/p1/attachments/{a2}"))
                .version("3.44")
                .send(),
        ];
        let responses = all_at_once(requests).await;
        assert_eq!(successes(&responses), 2);
        assert_eq!(app.volume_status(&v).await, "available");
        assert_eq!(
            app.db
                .column(&format!(
                    "select attach_status from volumes where id = '{v}'"
                ))
                .await,
            ["detached"]
        );
    }
}

async fn duplicate_connector_updates_race(app: TestApp) {
    for _ in 0..5 {
        let v = str_of(&app.create_volume(json!({"size": 1})).await, "id");
        let a = app.attach(&v, Some(I1), None).await;
        let b = app.attach(&v, Some(I1), None).await;
        let requests = vec![
            app.request(Method::PUT, &format!("/v3/p1/attachments/{a}"))
                .version("3.44")
                .json(&json!({"attachment": {"connector": conn()}}))
                .send(),
            app.request(Method::PUT, &format!("/v3/p1/attachments/{b}"))
                .version("3.44")
                .json(&json!({"attachment": {"connector": conn()}}))
                .send(),
        ];
        let responses = all_at_once(requests).await;
        assert_eq!(
            successes(&responses),
            1,
            "{:?}",
            responses.iter().map(|r| &r.text).collect::<Vec<_>>()
        );
        let refused = responses.iter().find(|r| r.status != 200).unwrap();
        refused.assert_fault(409, "conflictingRequest", "duplicate connectors detected");
        app.assert_consistent(&v).await;
    }
}

async fn attach_races_volume_delete(app: TestApp) {
    for _ in 0..10 {
        let v = str_of(&app.create_volume(json!({"size": 1})).await, "id");
        let delete: Pending = Box::pin(
            app.request(Method::DELETE, &format!("/v3/p1/volumes/{v}"))
                .send(),
        );
        let requests = vec![create_for(&app, &v, I1), delete];
        let responses = all_at_once(requests).await;
        let (attach, delete) = (&responses[0], &responses[1]);
        match (attach.status.as_u16(), delete.status.as_u16()) {
            (200, 400) => {
                assert_eq!(app.volume_status(&v).await, "reserved");
                assert_eq!(app.live_attachments(&v).await, 1);
            }
            (400 | 404, 202) => {
                assert_eq!(app.stored_status(&v).await, ["deleted"]);
                assert_eq!(
                    app.live_attachments(&v).await,
                    0,
                    "no live attachment on a deleted volume"
                );
            }
            other => panic!(
                "unexpected outcome {other:?}: {} / {}",
                attach.text, delete.text
            ),
        }
    }
}

backend_tests!(
    twenty_instances_race_for_one_volume,
    twenty_requests_of_one_instance,
    ten_instances_race_for_an_in_use_multiattach_volume,
    sibling_deletes_race,
    duplicate_connector_updates_race,
    attach_races_volume_delete,
);

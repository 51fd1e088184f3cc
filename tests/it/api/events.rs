//! The notification outbox: every change Cinder notifies about records its events in the
//! transaction of the change (nothing for a refused request), with Cinder's volume usage
//! payload; the audit trail (`GET /events`) shows them to admins only.

use axum::http::Method;
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::TestApp;

async fn events(app: &TestApp, query: &str) -> Vec<Value> {
    let response = app.get(&format!("/v3/p1/events{query}")).send().await;
    assert_eq!(response.status, 200, "{}", response.text);
    response.json["events"].as_array().expect("a list").clone()
}

fn types(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| str_of(e, "event_type")).collect()
}

async fn a_shared_volume_cycle_is_reported(app: TestApp) {
    let volume = app.multiattach_volume().await;
    let created = events(&app, &format!("?volume_id={volume}")).await;
    assert_eq!(
        types(&created),
        ["volume.create.start", "volume.create.end"]
    );
    let payload = &created[1]["payload"];
    assert_eq!(payload["volume_id"], json!(volume));
    assert_eq!(payload["metadata"], json!({}));
    assert_eq!(payload["tenant_id"], "p1");
    assert_eq!(payload["status"], "available");
    assert_eq!(payload["size"], 1);
    assert_eq!(payload["multiattach"], true);
    assert_eq!(payload["volume_attachment"], json!([]));
    assert_eq!(created[1]["publisher_id"], "volume.test-host");

    let tagged = app
        .request(Method::POST, &format!("/v3/p1/volumes/{volume}/metadata"))
        .json(&json!({"metadata": {"purpose": "shared"}}))
        .send()
        .await;
    assert_eq!(tagged.status, 200, "{}", tagged.text);

    let rw = app
        .attach_fully(&volume, I1, conn_for("h1", "/dev/vdb"))
        .await;
    let ro = app.attach(&volume, Some(I2), None).await;
    let updated = app
        .request(Method::PUT, &format!("/v3/p1/attachments/{ro}"))
        .version("3.54")
        .json(&json!({"attachment": {"connector": conn_for("h2", "/dev/vdc")}}))
        .send()
        .await;
    assert_eq!(updated.status, 200, "{}", updated.text);
    assert_eq!(app.complete(&ro).await.status, 204);
    assert_eq!(app.delete_attachment(&rw).await.status, 200);

    let cycle = events(
        &app,
        &format!("?volume_id={volume}&marker={}", created[1]["seq"]),
    )
    .await;
    assert_eq!(
        types(&cycle),
        [
            "attachment.create.end",
            "volume.attach.start",
            "attachment.update.end",
            "attachment.complete.end",
            "attachment.create.end",
            "volume.attach.start",
            "attachment.update.end",
            "attachment.complete.end",
            "volume.detach.start",
            "volume.detach.end",
            "attachment.delete.end",
        ]
    );
    // Events recorded together store their payload once (in the last of them) and read
    // alike: the delete's `.end` pair.
    assert_eq!(cycle[9]["payload"], cycle[10]["payload"]);
    let stored = app
        .db
        .column(&format!(
            "select event_type from events where volume_id = '{volume}' and payload is null order by seq"
        ))
        .await;
    assert_eq!(stored, ["volume.detach.end"]);
    // Each event names its attachment; the payload shows the volume as the change left it.
    let about = |i: usize| str_of(&cycle[i], "attachment_id");
    assert_eq!(
        (about(0), about(4), about(10)),
        (rw.clone(), ro.clone(), rw.clone())
    );
    let both_attached = &cycle[7]["payload"];
    assert_eq!(both_attached["status"], "in-use");
    let listed = both_attached["volume_attachment"].as_array().expect("list");
    assert_eq!(listed.len(), 2);
    assert_eq!(both_attached["metadata"], json!({"purpose": "shared"}));
    let first = listed[0].as_object().expect("an attachment object");
    let mut keys: Vec<&str> = first.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "attach_mode",
            "attach_status",
            "attach_time",
            "attached_host",
            "detach_time",
            "id",
            "instance_uuid",
            "mountpoint",
            "volume_id"
        ]
    );
    assert!(first["attach_time"].is_string(), "{first:?}");
    assert_eq!(first["detach_time"], Value::Null);
    assert_eq!(both_attached["attachment"]["attached_host"], "h2");
    assert_eq!(both_attached["attachment"]["instance_uuid"], I2);
    assert_eq!(both_attached["attachment"]["attach_status"], "attached");
    // Cinder's detach.start shows the volume before the detach, .end after it.
    assert_eq!(
        cycle[8]["payload"]["volume_attachment"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    assert_eq!(
        cycle[9]["payload"]["volume_attachment"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert_eq!(
        cycle[10]["payload"]["attachment"]["attach_status"],
        "detached"
    );
    assert_eq!(cycle[10]["payload"]["status"], "in-use");
    // Who asked: the request's id and its caller.
    assert!(str_of(&cycle[0], "request_id").starts_with("req-"));
    assert_eq!(cycle[0]["caller_project_id"], "p1");
    assert_eq!(
        cycle[0]["sent_at"],
        Value::Null,
        "no bus configured: kept, not sent"
    );

    // Filters: by attachment, by type, by time.
    let of_ro = events(&app, &format!("?attachment_id={ro}")).await;
    assert_eq!(of_ro.len(), 4);
    let deletes = events(&app, "?event_type=attachment.delete.end").await;
    assert_eq!(deletes.len(), 1);
    assert!(events(&app, "?since=2999-01-01T00:00:00Z").await.is_empty());
    assert_eq!(
        events(&app, &format!("?volume_id={volume}&limit=2"))
            .await
            .len(),
        2
    );
}

async fn refused_requests_record_nothing(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    app.attach(&volume, Some(I1), None).await;
    let before = events(&app, &format!("?volume_id={volume}")).await.len();
    // A second attachment of a volume that is not multiattach is refused.
    let second = app
        .post_attachment(json!({"volume_uuid": volume, "instance_uuid": I2}), "3.44")
        .await;
    assert_eq!(second.status, 400, "{}", second.text);
    let delete = app
        .request(Method::DELETE, &format!("/v3/p1/volumes/{volume}"))
        .send()
        .await;
    assert_eq!(delete.status, 400, "{}", delete.text);
    assert_eq!(
        events(&app, &format!("?volume_id={volume}")).await.len(),
        before
    );
}

async fn parallel_attaches_each_record_one_event(app: TestApp) {
    let volume = app.multiattach_volume().await;
    let instances: Vec<String> = (0..8)
        .map(|i| format!("c{i}111111-1111-4111-8111-111111111111"))
        .collect();
    let requests = instances
        .iter()
        .map(|instance| {
            app.request(Method::POST, "/v3/p1/attachments")
                .version("3.44")
                .json(&json!({"attachment": {"volume_uuid": volume, "instance_uuid": instance}}))
                .send()
        })
        .collect();
    let responses = all_at_once(requests).await;
    let won = successes(&responses);
    let created = events(
        &app,
        &format!("?volume_id={volume}&event_type=attachment.create.end"),
    )
    .await;
    assert_eq!(created.len(), won);
    let stored = app
        .db
        .column(&format!(
            "select cast(count(*) as text) from volume_attachment where volume_id = '{volume}'"
        ))
        .await;
    assert_eq!(stored, [won.to_string()]);
    // In the order the volume's lock let them in: each saw the ones before it.
    for (i, event) in created.iter().enumerate() {
        let seen = event["payload"]["volume_attachment"]
            .as_array()
            .map(Vec::len);
        assert_eq!(seen, Some(i + 1), "{event}");
    }
}

async fn only_admins_read_the_trail(app: TestApp) {
    let member = app.get("/v3/p1/events").token(MEMBER_P1).send().await;
    assert_eq!(member.status, 403, "{}", member.text);
    assert_eq!(member.json["forbidden"]["code"], 403);
    for bad in ["volume_id=nope", "since=yesterday", "limit=-1", "marker=x"] {
        let response = app.get(&format!("/v3/p1/events?{bad}")).send().await;
        assert_eq!(response.status, 400, "{bad}: {}", response.text);
        assert_eq!(response.json["badRequest"]["code"], 400, "{bad}");
    }
}

backend_tests!(
    a_shared_volume_cycle_is_reported,
    refused_requests_record_nothing,
    parallel_attaches_each_record_one_event,
    only_admins_read_the_trail,
);

//! The notification outbox: every change Cinder notifies about records its events in the
//! transaction of the change (nothing for a refused request), with Cinder's volume usage
//! payload; the audit trail (`GET /events`) shows them to admins only.

use axum::http::Method;
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::old_outbox::recorded_as_by_0_2_0;
use crate::support::TestApp;

async fn events(app: &TestApp, query: &str) -> Vec<Value> {
    let response = app.get(&format!("/v3/p1/events{query}")).send().await;
    assert_eq!(response.status, 200, "{}", response.text);
    response.json["events"].as_array().expect("a list").clone()
}

fn types(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| str_of(e, "event_type")).collect()
}

/// Two attachments of one volume, each made as Nova makes it: `rw` on h1 with its
/// connector at once; `ro` reserved first, its connector given by an update, completed.
pub(super) async fn attach_twice(app: &TestApp, volume: &str) -> (String, String) {
    let rw = app
        .attach_fully(volume, I1, conn_for("h1", "/dev/vdb"))
        .await;
    let ro = app.attach(volume, Some(I2), None).await;
    let updated = app
        .request(Method::PUT, &format!("/v3/p1/attachments/{ro}"))
        .version("3.54")
        .json(&json!({"attachment": {"connector": conn_for("h2", "/dev/vdc")}}))
        .send()
        .await;
    assert_eq!(updated.status, 200, "{}", updated.text);
    assert_eq!(app.complete(&ro).await.status, 204);
    (rw, ro)
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

    let (rw, ro) = attach_twice(&app, &volume).await;
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
    // The events recorded at one point are one outbox row, numbered one after the other
    // from the row's, with one payload: the delete's `.end` pair.
    assert_eq!(cycle[9]["payload"], cycle[10]["payload"]);
    assert_eq!(
        cycle[10]["seq"].as_i64(),
        cycle[9]["seq"].as_i64().map(|s| s + 1)
    );
    let stored = app
        .db
        .column(&format!(
            "select events from outbox where volume_id = '{volume}' order by seq desc limit 1"
        ))
        .await;
    let last: Vec<(String, String, String)> = serde_json::from_str(&stored[0]).expect("an array");
    let last_types: Vec<&str> = last.iter().map(|(_, t, _)| t.as_str()).collect();
    assert_eq!(last_types, ["volume.detach.end", "attachment.delete.end"]);
    assert_eq!(str_of(&cycle[10], "message_id"), last[1].0);
    let points = app
        .db
        .column(&format!(
            "select cast(seq as text) from outbox where volume_id = '{volume}' and seq > {}",
            created[1]["seq"]
        ))
        .await;
    assert_eq!(
        points.len(),
        10,
        "four per attachment (the update records before and after its writes), two for the delete: {points:?}"
    );
    let old_shape = app.db.column("select cast(seq as text) from events").await;
    assert!(
        old_shape.is_empty(),
        "nothing recorded a row per event: {old_shape:?}"
    );
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
    // Integers past 64 bits are still integers: a limit clamps, a marker finds nothing.
    let huge = "13572726786487618435522775482368";
    let all = events(&app, &format!("?volume_id={volume}")).await.len();
    let clamped = events(&app, &format!("?volume_id={volume}&limit={huge}")).await;
    assert_eq!(clamped.len(), all);
    assert!(events(&app, &format!("?marker={huge}")).await.is_empty());
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

/// A volume that changes project leaves a trace: the offer, a withdrawal and the accept
/// are reported as Cinder's transfer API notifies them, each start showing the volume
/// before and each end after the change (and in the project it then belongs to).
async fn transfers_are_reported(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let offer = || {
        app.request(Method::POST, "/v3/p1/os-volume-transfer")
            .json(&json!({"transfer": {"volume_id": volume}}))
            .send()
    };
    let first = offer().await;
    assert_eq!(first.status, 202, "{}", first.text);
    let withdrawn = app
        .request(
            Method::DELETE,
            &format!(
                "/v3/p1/os-volume-transfer/{}",
                str_of(&first.json["transfer"], "id")
            ),
        )
        .send()
        .await;
    assert_eq!(withdrawn.status, 202, "{}", withdrawn.text);
    let second = offer().await;
    let transfer = &second.json["transfer"];
    let accepted = app
        .request(
            Method::POST,
            &format!(
                "/v3/p2/os-volume-transfer/{}/accept",
                str_of(transfer, "id")
            ),
        )
        .token(MEMBER_P2)
        .json(&json!({"accept": {"auth_key": str_of(transfer, "auth_key")}}))
        .send()
        .await;
    assert_eq!(accepted.status, 202, "{}", accepted.text);
    let trail = events(&app, &format!("?volume_id={volume}")).await;
    assert_eq!(
        types(&trail),
        [
            "volume.create.start",
            "volume.create.end",
            "volume.transfer.create.start",
            "volume.transfer.create.end",
            "volume.transfer.delete.start",
            "volume.transfer.delete.end",
            "volume.transfer.create.start",
            "volume.transfer.create.end",
            "volume.transfer.accept.start",
            "volume.transfer.accept.end",
        ]
    );
    let status = |i: usize| str_of(&trail[i]["payload"], "status");
    assert_eq!(
        (status(2), status(3), status(5), status(8), status(9)),
        (
            "available".into(),
            "awaiting-transfer".into(),
            "available".into(),
            "awaiting-transfer".into(),
            "available".into()
        )
    );
    let project = |i: usize| str_of(&trail[i], "project_id");
    assert_eq!((project(8), project(9)), ("p1".into(), "p2".into()));
    assert_eq!(trail[9]["payload"]["tenant_id"], "p2");
}

/// Snapshots are reported with Cinder's snapshot payload; a create that ends in `error`
/// records `volume.create.error` (priority ERROR) after its start.
async fn snapshots_and_failed_creates_are_reported(app: TestApp) {
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let taken = app
        .request(Method::POST, "/v3/p1/snapshots")
        .json(&json!({"snapshot": {"volume_id": volume, "name": "s1"}}))
        .send()
        .await;
    assert_eq!(taken.status, 202, "{}", taken.text);
    let snapshot = str_of(&taken.json["snapshot"], "id");
    let removed = app
        .request(Method::DELETE, &format!("/v3/p1/snapshots/{snapshot}"))
        .send()
        .await;
    assert_eq!(removed.status, 202, "{}", removed.text);
    let trail = events(&app, &format!("?volume_id={volume}")).await;
    assert_eq!(
        types(&trail)[2..],
        [
            "snapshot.create.start",
            "snapshot.create.end",
            "snapshot.delete.start",
            "snapshot.delete.end",
        ]
    );
    let made = &trail[3]["payload"];
    assert_eq!(made["snapshot_id"], json!(snapshot));
    assert_eq!(made["volume_id"], json!(volume));
    assert_eq!(made["display_name"], "s1");
    assert_eq!(made["status"], "available");
    assert_eq!(made["volume_size"], 1);
    assert_eq!(made["tenant_id"], "p1");
    assert_eq!(made["deleted"], "False");
    assert_eq!(trail[5]["payload"]["deleted"], "True");

    // A snapshot whose data is gone cannot be made into a volume: the create fails.
    let second = app
        .request(Method::POST, "/v3/p1/snapshots")
        .json(&json!({"snapshot": {"volume_id": volume}}))
        .send()
        .await;
    let lost = str_of(&second.json["snapshot"], "id");
    std::fs::remove_file(app.volumes_dir.join(format!("snapshot-{lost}"))).unwrap();
    let failed = app
        .request(Method::POST, "/v3/p1/volumes")
        .json(&json!({"volume": {"snapshot_id": lost}}))
        .send()
        .await;
    assert_eq!(failed.json["volume"]["status"], "error", "{}", failed.text);
    let broken = str_of(&failed.json["volume"], "id");
    let trail = events(&app, &format!("?volume_id={broken}")).await;
    assert_eq!(
        types(&trail),
        ["volume.create.start", "volume.create.error"]
    );
    assert_eq!(trail[1]["priority"], "ERROR");
    assert_eq!(trail[1]["payload"]["status"], "error");
}

/// A retype is reported once it is done (Cinder's `volume.retype`), the payload naming
/// the new type; a refused one reports nothing.
async fn a_retype_is_reported_with_its_new_type(app: TestApp) {
    let gold = app.create_type("gold", json!({})).await;
    let volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let refused = app
        .volume_action(&volume, json!({"os-retype": {"new_type": "no-such-type"}}))
        .await;
    assert_eq!(refused.status, 404, "{}", refused.text);
    let retyped = app
        .volume_action(&volume, json!({"os-retype": {"new_type": "gold"}}))
        .await;
    assert_eq!(retyped.status, 202, "{}", retyped.text);
    let trail = events(&app, &format!("?volume_id={volume}")).await;
    assert_eq!(
        types(&trail),
        ["volume.create.start", "volume.create.end", "volume.retype"]
    );
    assert_eq!(trail[2]["payload"]["volume_type"], json!(gold));
    assert_eq!(trail[2]["payload"]["status"], "available");
    assert_eq!(trail[2]["priority"], "INFO");
}

/// Type and extra-spec changes are reported as Cinder's API sends them (`volumeType` and
/// `volumeTypeExtraSpecs` notifiers), about no volume, in the caller's project; a refused
/// change reports nothing.
async fn type_changes_are_reported(app: TestApp) {
    let id = app.create_type("audited", json!({"k": "v"})).await;
    let path = format!("/v3/p1/types/{id}");
    let app = &app;
    let send = |method: Method, path: String, body: Option<Value>| async move {
        app.send_json(method, &path, body).await
    };
    let renamed = send(
        Method::PUT,
        path.clone(),
        Some(json!({"volume_type": {"description": "kept"}})),
    )
    .await;
    assert_eq!(renamed.status, 200, "{}", renamed.text);
    let added = send(
        Method::POST,
        format!("{path}/extra_specs"),
        Some(json!({"extra_specs": {"a": "1", "b": "2"}})),
    )
    .await;
    assert_eq!(added.status, 200, "{}", added.text);
    let replaced = send(
        Method::PUT,
        format!("{path}/extra_specs/a"),
        Some(json!({"a": "3"})),
    )
    .await;
    assert_eq!(replaced.status, 200, "{}", replaced.text);
    let missing = send(Method::DELETE, format!("{path}/extra_specs/nope"), None).await;
    assert_eq!(missing.status, 404, "{}", missing.text);
    let removed = send(Method::DELETE, format!("{path}/extra_specs/b"), None).await;
    assert_eq!(removed.status, 202, "{}", removed.text);
    let deleted = send(Method::DELETE, path.clone(), None).await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);

    let trail: Vec<Value> = events(app, "")
        .await
        .into_iter()
        .filter(|e| str_of(e, "event_type").starts_with("volume_type"))
        .collect();
    assert_eq!(
        types(&trail),
        [
            "volume_type.create",
            "volume_type.update",
            "volume_type_extra_specs.create",
            "volume_type_extra_specs.update",
            "volume_type_extra_specs.delete",
            "volume_type.delete",
        ]
    );
    for event in &trail {
        assert_eq!(event["volume_id"], Value::Null);
        assert_eq!(event["project_id"], "p1");
        let notifier = if str_of(event, "event_type").starts_with("volume_type_extra_specs") {
            "volumeTypeExtraSpecs."
        } else {
            "volumeType."
        };
        assert!(
            str_of(event, "publisher_id").starts_with(notifier),
            "{event}"
        );
    }
    let created = &trail[0]["payload"]["volume_types"];
    assert_eq!(created["id"], json!(id));
    assert_eq!(created["name"], "audited");
    assert_eq!(created["is_public"], true);
    assert_eq!(created["extra_specs"], json!({"k": "v"}));
    assert_eq!(trail[1]["payload"]["volume_types"]["description"], "kept");
    assert_eq!(trail[2]["payload"]["type_id"], json!(id));
    assert_eq!(trail[2]["payload"]["specs"], json!({"a": "1", "b": "2"}));
    assert_eq!(trail[3]["payload"]["id"], "a");
    assert_eq!(trail[4]["payload"]["id"], "b");
    let gone = &trail[5]["payload"]["volume_types"];
    assert_eq!(gone["extra_specs"], json!({"k": "v", "a": "3"}));
}

/// QoS specs changes, as Cinder's `QoSSpecs` notifier sends them from its API: the
/// payload its controller builds for each call; a refused call sends nothing.
async fn qos_changes_are_reported(app: TestApp) {
    let app = &app;
    let send = |method: Method, path: String, body: Option<Value>| async move {
        app.send_json(method, &path, body).await
    };
    let created = send(
        Method::POST,
        "/v3/p1/qos-specs".into(),
        Some(json!({"qos_specs": {"name": "gold", "consumer": "front-end", "total_iops_sec": "500"}})),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.text);
    let qos = str_of(&created.json["qos_specs"], "id");
    let path = format!("/v3/p1/qos-specs/{qos}");
    let type_id = app.create_type("with-qos", json!({})).await;
    let steps = [
        (
            Method::PUT,
            path.clone(),
            Some(json!({"qos_specs": {"read_iops_sec": "100"}})),
            200,
        ),
        (
            Method::PUT,
            format!("{path}/delete_keys"),
            Some(json!({"keys": ["nope"]})),
            404,
        ),
        (
            Method::PUT,
            format!("{path}/delete_keys"),
            Some(json!({"keys": ["read_iops_sec"]})),
            202,
        ),
        (
            Method::GET,
            format!("{path}/associate?vol_type_id={type_id}"),
            None,
            202,
        ),
        (
            Method::GET,
            format!("{path}/disassociate?vol_type_id={type_id}"),
            None,
            202,
        ),
        (Method::GET, format!("{path}/disassociate_all"), None, 202),
        (Method::DELETE, path.clone(), None, 202),
    ];
    for (method, path, body, status) in steps {
        let answered = send(method, path.clone(), body).await;
        assert_eq!(answered.status, status, "{path}: {}", answered.text);
    }

    let trail: Vec<Value> = events(app, "")
        .await
        .into_iter()
        .filter(|e| str_of(e, "event_type").starts_with("qos_specs"))
        .collect();
    assert_eq!(
        types(&trail),
        [
            "qos_specs.create",
            "qos_specs.update",
            "qos_specs.delete_keys",
            "qos_specs.associate",
            "qos_specs.disassociate",
            "qos_specs.disassociate_all",
            "qos_specs.delete",
        ]
    );
    for event in &trail {
        assert_eq!(event["volume_id"], Value::Null);
        assert_eq!(event["project_id"], "p1");
        assert!(
            str_of(event, "publisher_id").starts_with("QoSSpecs."),
            "{event}"
        );
        if str_of(event, "event_type") != "qos_specs.create" {
            assert_eq!(event["payload"]["id"], json!(qos), "{event}");
        }
        assert!(event["payload"]["created_at"].is_string(), "{event}");
    }
    assert_eq!(
        trail[0]["payload"],
        json!({"name": "gold", "created_at": trail[0]["payload"]["created_at"],
               "specs": {"consumer": "front-end", "total_iops_sec": "500"}})
    );
    assert_eq!(
        trail[1]["payload"]["specs"],
        json!({"read_iops_sec": "100"})
    );
    assert!(trail[1]["payload"]["updated_at"].is_string());
    assert!(trail[2]["payload"]["updated_at"].is_string());
    assert_eq!(trail[3]["payload"]["type_id"], json!(type_id));
    assert_eq!(trail[4]["payload"]["type_id"], json!(type_id));
    assert_eq!(trail[5]["payload"].as_object().unwrap().len(), 2);
    assert!(trail[6]["payload"]["deleted_at"].is_string());
}

/// Events a 0.2.0 process recorded, a row each in `events`, and this version's rows
/// read as one trail in `seq` order, and the relay's batch holds both until each row is
/// marked sent.
async fn events_of_both_shapes_are_one_trail(app: TestApp) {
    let volume = app.multiattach_volume().await;
    // With a connector the reservation records two events at one point.
    let attachment = app.attach(&volume, Some(I1), Some(conn())).await;
    assert_eq!(app.complete(&attachment).await.status, 204);
    recorded_as_by_0_2_0(&app).await;
    let old = events(&app, &format!("?volume_id={volume}")).await;
    assert_eq!(app.delete_attachment(&attachment).await.status, 200);
    let trail = events(&app, &format!("?volume_id={volume}")).await;
    assert_eq!(
        types(&trail),
        [
            "volume.create.start",
            "volume.create.end",
            "volume.attach.start",
            "attachment.create.end",
            "attachment.complete.end",
            "volume.detach.start",
            "volume.detach.end",
            "attachment.delete.end",
        ]
    );
    assert_eq!(&trail[..old.len()], &old[..], "the old rows read as before");
    let seqs: Vec<i64> = trail
        .iter()
        .map(|e| e["seq"].as_i64().expect("a number"))
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    // The shared payload of old rows recorded together reads in each of them.
    assert_eq!(trail[2]["payload"], trail[3]["payload"]);
    assert_eq!(trail[3]["payload"]["status"], "attaching");
    // Paging by the last number seen, across both tables.
    for (i, event) in trail.iter().enumerate().take(trail.len() - 1) {
        let page = events(
            &app,
            &format!("?volume_id={volume}&marker={}&limit=1", event["seq"]),
        )
        .await;
        assert_eq!(page, [trail[i + 1].clone()], "after {}", event["seq"]);
    }

    let pending = app.store.pending_events(1000).await.unwrap();
    let pending_seqs: Vec<i64> = pending.iter().map(|e| e.seq).collect();
    let all = events(&app, "").await;
    let all_seqs: Vec<i64> = all.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(pending_seqs, all_seqs, "nothing was sent yet");
    let rows: Vec<_> = pending.iter().map(|e| e.row).collect();
    app.store
        .mark_events_sent(&rows, chrono::Utc::now())
        .await
        .unwrap();
    assert!(app.store.pending_events(1000).await.unwrap().is_empty());
    assert_eq!(app.store.event_backlog().await.unwrap().pending, 0);
}

backend_tests!(
    events_of_both_shapes_are_one_trail,
    type_changes_are_reported,
    qos_changes_are_reported,
    a_retype_is_reported_with_its_new_type,
    transfers_are_reported,
    snapshots_and_failed_creates_are_reported,
    a_shared_volume_cycle_is_reported,
    refused_requests_record_nothing,
    parallel_attaches_each_record_one_event,
    only_admins_read_the_trail,
);

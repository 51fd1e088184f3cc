//! Group snapshots (3.14+) as Cinder runs them: a snapshot of every member at once (one
//! quota check for all, nothing recorded when refused), their snapshots kept until the
//! group snapshot goes, a group made from one, and an admin's reset.

use axum::http::Method;
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::http::ADMIN_TOKEN;
use crate::support::{TestApp, TestResponse};

const V: &str = "3.64";

async fn member(app: &TestApp, method: Method, path: &str, body: Option<Value>) -> TestResponse {
    call_as(app, MEMBER_P1, V, method, path, body).await
}

/// A group of type `gold` with `count` volumes in it; the group's and the volumes' ids.
async fn group_with_volumes(app: &TestApp, count: usize) -> (String, Vec<String>) {
    let gold = app.create_type("gold", json!({})).await;
    let body = json!({"group_type": {"name": "generic"}});
    let made = call_as(
        app,
        ADMIN_TOKEN,
        V,
        Method::POST,
        "/v3/p1/group_types",
        Some(body),
    )
    .await;
    assert_eq!(made.status, 202, "{}", made.text);
    let body = json!({"group": {"group_type": "generic", "volume_types": [gold], "name": "g"}});
    let made = member(app, Method::POST, "/v3/p1/groups", Some(body)).await;
    assert_eq!(made.status, 202, "{}", made.text);
    let group = str_of(&made.json["group"], "id");
    let mut volumes = Vec::new();
    for _ in 0..count {
        let fields = json!({"size": 1, "volume_type": "gold", "group_id": group});
        volumes.push(str_of(&app.create_volume(fields).await, "id"));
    }
    (group, volumes)
}

async fn snapshot_group(app: &TestApp, group: &str, name: &str) -> TestResponse {
    let body = json!({"group_snapshot": {"group_id": group, "name": name}});
    member(app, Method::POST, "/v3/p1/group_snapshots", Some(body)).await
}

async fn count(app: &TestApp, sql: &str) -> String {
    app.db
        .column(&format!("select cast(count(*) as text) {sql}"))
        .await
        .concat()
}

async fn a_group_snapshot_holds_a_snapshot_of_each_member_until_it_goes(app: TestApp) {
    let (group, volumes) = group_with_volumes(&app, 2).await;
    // One member in use: Cinder snapshots it all the same.
    app.attach_directly(&volumes[1], "a1111111-1111-4111-8111-111111111111", I1)
        .await;
    let made = snapshot_group(&app, &group, "gs1").await;
    assert_eq!(made.status, 202, "{}", made.text);
    let id = str_of(&made.json["group_snapshot"], "id");
    let group_type = made.json["group_snapshot"]["group_type_id"].clone();
    assert_eq!(
        made.json,
        json!({"group_snapshot": {"id": id, "name": "gs1", "group_type_id": group_type}})
    );

    let shown = member(
        &app,
        Method::GET,
        &format!("/v3/p1/group_snapshots/{id}"),
        None,
    )
    .await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    let view = &shown.json["group_snapshot"];
    assert_eq!(
        (view["status"].as_str(), view["group_id"].as_str()),
        (Some("available"), Some(group.as_str()))
    );
    assert!(view.get("project_id").is_none(), "admins only, from 3.58");
    let listed = member(&app, Method::GET, "/v3/p1/group_snapshots", None).await;
    assert_eq!(
        listed.json,
        json!({"group_snapshots": [{"id": id, "name": "gs1"}]})
    );
    let detail = member(&app, Method::GET, "/v3/p1/group_snapshots/detail", None).await;
    assert_eq!(detail.json["group_snapshots"][0]["status"], "available");
    // Below 3.14 there are none.
    call_as(
        &app,
        MEMBER_P1,
        "3.13",
        Method::GET,
        "/v3/p1/group_snapshots",
        None,
    )
    .await
    .assert_fault(404, "itemNotFound", "");

    // Each member has an available snapshot naming the group snapshot.
    let snapshots = member(&app, Method::GET, "/v3/p1/snapshots/detail", None).await;
    let snapshots = snapshots.json["snapshots"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(snapshots.len(), 2);
    for snapshot in &snapshots {
        assert_eq!(snapshot["group_snapshot_id"], id.as_str());
        assert_eq!(snapshot["status"], "available");
        assert!(volumes.iter().any(|v| snapshot["volume_id"] == v.as_str()));
    }
    // Those snapshots go only with the group snapshot, and the group only without it.
    let one = str_of(&snapshots[0], "id");
    member(
        &app,
        Method::DELETE,
        &format!("/v3/p1/snapshots/{one}"),
        None,
    )
    .await
    .assert_fault(400, "badRequest", "must not be part of a group.");
    let delete = json!({"delete": {"delete-volumes": true}});
    member(
        &app,
        Method::POST,
        &format!("/v3/p1/groups/{group}/action"),
        Some(delete.clone()),
    )
    .await
    .assert_fault(
        400,
        "badRequest",
        "Invalid Group: Group has existing snapshots.",
    );

    // Nor with a volume taken out of the group (`cascade`).
    let out = json!({"group": {"remove_volumes": volumes[0]}});
    let removed = member(
        &app,
        Method::PUT,
        &format!("/v3/p1/groups/{group}"),
        Some(out),
    )
    .await;
    assert_eq!(removed.status, 202, "{}", removed.text);
    let cascade = format!("/v3/p1/volumes/{}?cascade=true", volumes[0]);
    let kept = member(&app, Method::DELETE, &cascade, None).await;
    assert_eq!(kept.status, 400, "{}", kept.text);
    assert_eq!(
        count(&app, "from snapshots where deleted = false").await,
        "2"
    );

    // A group made from the group snapshot has a volume from each snapshot.
    let body = json!({"create-from-src": {"group_snapshot_id": id, "name": "restored"}});
    let restored = member(&app, Method::POST, "/v3/p1/groups/action", Some(body)).await;
    assert_eq!(restored.status, 202, "{}", restored.text);
    let copy = str_of(&restored.json["group"], "id");
    let shown = member(&app, Method::GET, &format!("/v3/p1/groups/{copy}"), None).await;
    assert_eq!(shown.json["group"]["group_snapshot_id"], id.as_str());
    assert_eq!(shown.json["group"]["status"], "available");
    let made = member(
        &app,
        Method::GET,
        &format!("/v3/p1/volumes/detail?group_id={copy}"),
        None,
    )
    .await;
    let made = made.json["volumes"].as_array().cloned().unwrap_or_default();
    assert_eq!(made.len(), 2);
    assert!(made
        .iter()
        .all(|v| snapshots.iter().any(|s| s["id"] == v["snapshot_id"])));
    let gone = member(
        &app,
        Method::POST,
        &format!("/v3/p1/groups/{copy}/action"),
        Some(delete.clone()),
    )
    .await;
    assert_eq!(gone.status, 202, "{}", gone.text);

    let deleted = member(
        &app,
        Method::DELETE,
        &format!("/v3/p1/group_snapshots/{id}"),
        None,
    )
    .await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
    member(
        &app,
        Method::GET,
        &format!("/v3/p1/group_snapshots/{id}"),
        None,
    )
    .await
    .assert_fault(
        404,
        "itemNotFound",
        &format!("GroupSnapshot {id} could not be found."),
    );
    assert_eq!(
        count(&app, "from snapshots where deleted = false").await,
        "0"
    );
    // Detached, the group goes with its volumes.
    app.db
        .execute(&format!(
            "update volume_attachment set deleted = true where volume_id = '{}';
             update volumes set status = 'available', attach_status = 'detached' where id = '{}'",
            volumes[1], volumes[1]
        ))
        .await
        .expect("fixture applies");
    let gone = member(
        &app,
        Method::POST,
        &format!("/v3/p1/groups/{group}/action"),
        Some(delete),
    )
    .await;
    assert_eq!(gone.status, 202, "{}", gone.text);
    let alone = member(&app, Method::DELETE, &cascade, None).await;
    assert_eq!(alone.status, 202, "{}", alone.text);
    assert_eq!(count(&app, "from volumes where deleted = false").await, "0");

    // Each member snapshot's story is told whole.
    let one_story = app
        .get("/v3/p1/events?event_type=snapshot.delete.start")
        .send()
        .await;
    let starts = one_story.json["events"].as_array().map(Vec::len);
    let ends = app
        .get("/v3/p1/events?event_type=snapshot.delete.end")
        .send()
        .await;
    assert_eq!(starts, ends.json["events"].as_array().map(Vec::len));
    assert_eq!(starts, Some(2), "{}", one_story.text);

    // The audit trail tells the group's story as Cinder's volume manager does.
    let trail = app.get("/v3/p1/events").send().await;
    let trail = trail.json["events"].as_array().cloned().unwrap_or_default();
    let story: Vec<(String, String)> = trail
        .iter()
        .filter(|e| e["payload"]["group_id"] == group.as_str())
        .map(|e| (str_of(e, "event_type"), str_of(&e["payload"], "status")))
        .collect();
    let expected = [
        ("group.create.start", "creating"),
        ("group.create.end", "available"),
        ("group_snapshot.create.start", "creating"),
        ("group_snapshot.create.end", "available"),
        ("group.update.start", "updating"),
        ("group.update.end", "available"),
        ("group_snapshot.delete.start", "deleting"),
        ("group_snapshot.delete.end", "deleted"),
        ("group.delete.start", "deleting"),
        ("group.delete.end", "deleted"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(t, s)| (t.to_string(), s.to_string()))
        .collect();
    assert_eq!(story, expected);
    let first = trail
        .iter()
        .find(|e| e["payload"]["group_id"] == group.as_str())
        .expect("an event");
    assert_eq!(first["volume_id"], Value::Null);
    assert!(
        str_of(first, "publisher_id").starts_with("volume."),
        "{first}"
    );
    assert_eq!(first["payload"]["tenant_id"], "p1");
    assert_eq!(first["payload"]["name"], "g");
}

async fn a_refused_group_snapshot_records_nothing(app: TestApp) {
    let (group, volumes) = group_with_volumes(&app, 2).await;
    let quota = call_as(
        &app,
        ADMIN_TOKEN,
        V,
        Method::PUT,
        "/v3/p1/os-quota-sets/p1",
        Some(json!({"quota_set": {"snapshots": 1}})),
    )
    .await;
    assert_eq!(quota.status, 200, "{}", quota.text);
    snapshot_group(&app, &group, "too-many").await.assert_fault(
        413,
        "overLimit",
        "Maximum number of snapshots allowed (1) exceeded",
    );
    assert_eq!(count(&app, "from group_snapshots").await, "0");
    assert_eq!(count(&app, "from snapshots").await, "0");

    let quota = call_as(
        &app,
        ADMIN_TOKEN,
        V,
        Method::PUT,
        "/v3/p1/os-quota-sets/p1",
        Some(json!({"quota_set": {"snapshots": 10}})),
    )
    .await;
    assert_eq!(quota.status, 200, "{}", quota.text);
    app.db
        .execute(&format!(
            "update volumes set status = 'error' where id = '{}'",
            volumes[0]
        ))
        .await
        .expect("fixture applies");
    snapshot_group(&app, &group, "broken").await.assert_fault(
        400,
        "badRequest",
        "Invalid volume: The snapshot cannot be created when the volume is in error status.",
    );
    assert_eq!(count(&app, "from snapshots").await, "0");
    let missing = snapshot_group(&app, "f00d0000-0000-4000-8000-000000000000", "x").await;
    missing.assert_fault(
        404,
        "itemNotFound",
        "Group f00d0000-0000-4000-8000-000000000000 could not be found.",
    );
}

async fn reset_status_is_for_admins_from_3_19(app: TestApp) {
    let (group, _) = group_with_volumes(&app, 1).await;
    let made = snapshot_group(&app, &group, "gs").await;
    let id = str_of(&made.json["group_snapshot"], "id");
    let path = format!("/v3/p1/group_snapshots/{id}/action");
    let reset = |status: &str| Some(json!({"reset_status": {"status": status}}));
    member(&app, Method::POST, &path, reset("error"))
        .await
        .assert_fault(403, "forbidden", "");
    call_as(
        &app,
        ADMIN_TOKEN,
        "3.18",
        Method::POST,
        &path,
        reset("error"),
    )
    .await
    .assert_fault(404, "itemNotFound", "");
    call_as(&app, ADMIN_TOKEN, V, Method::POST, &path, reset("in-use"))
        .await
        .assert_fault(
            400,
            "badRequest",
            "Invalid GroupSnapshot Status: Group snapshot status: in-use is invalid, valid \
             statuses are: ('error', 'available', 'creating', 'deleting', 'deleted', 'updating', \
             'error_deleting').",
        );
    let done = call_as(&app, ADMIN_TOKEN, V, Method::POST, &path, reset("creating")).await;
    assert_eq!(done.status, 202, "{}", done.text);
    // Only an available or error group snapshot is deleted.
    member(
        &app,
        Method::DELETE,
        &format!("/v3/p1/group_snapshots/{id}"),
        None,
    )
    .await
    .assert_fault(
        400,
        "badRequest",
        "Invalid GroupSnapshot: GroupSnapshot status must be available or error, and no Group \
             can be currently using it as source for its creation.",
    );
    let done = call_as(&app, ADMIN_TOKEN, V, Method::POST, &path, reset("Error")).await;
    assert_eq!(done.status, 202, "{}", done.text);
    let deleted = member(
        &app,
        Method::DELETE,
        &format!("/v3/p1/group_snapshots/{id}"),
        None,
    )
    .await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
}

/// A member's group snapshot and the group's delete (volumes and all), sent at once,
/// round after round: exactly one wins each time, and no snapshot is ever left pointing
/// at a deleted volume.
async fn a_group_snapshot_racing_the_groups_delete_has_one_winner(app: TestApp) {
    let unlimited = json!({"quota_set": {"volumes": -1, "gigabytes": -1, "snapshots": -1,
                                          "groups": -1}});
    let raised = call_as(
        &app,
        ADMIN_TOKEN,
        V,
        Method::PUT,
        "/v3/p1/os-quota-sets/p1",
        Some(unlimited),
    );
    assert_eq!(raised.await.status, 200);
    let (first, _) = group_with_volumes(&app, 2).await;
    let mut groups = vec![first];
    for _ in 1..20 {
        let body = json!({"group": {"group_type": "generic", "volume_types": ["gold"]}});
        let made = member(&app, Method::POST, "/v3/p1/groups", Some(body)).await;
        assert_eq!(made.status, 202, "{}", made.text);
        let group = str_of(&made.json["group"], "id");
        for _ in 0..2 {
            let fields = json!({"size": 1, "volume_type": "gold", "group_id": group});
            app.create_volume(fields).await;
        }
        groups.push(group);
    }
    let (mut snapshots_won, mut deletes_won) = (0, 0);
    for group in &groups {
        let snapshot = app
            .request(Method::POST, "/v3/p1/group_snapshots")
            .token(MEMBER_P1)
            .version(V)
            .json(&json!({"group_snapshot": {"group_id": group}}));
        let delete = app
            .request(Method::POST, &format!("/v3/p1/groups/{group}/action"))
            .token(MEMBER_P1)
            .version(V)
            .json(&json!({"delete": {"delete-volumes": true}}));
        let answers = all_at_once(vec![
            Box::pin(snapshot.send()) as Pending,
            Box::pin(delete.send()) as Pending,
        ])
        .await;
        let won: Vec<u16> = answers.iter().map(|a| a.status.as_u16()).collect();
        match won.as_slice() {
            [202, 400] => snapshots_won += 1,
            // The delete won; on a loaded host it may even have finished (the group
            // gone, not just `deleting`) before the snapshot's request was read.
            [400 | 404, 202] => deletes_won += 1,
            _ => panic!("{won:?}: {} / {}", answers[0].text, answers[1].text),
        }
    }
    // Whatever won, it finishes: no snapshot of a deleted volume, none stuck.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let busy = count(
            &app,
            "from snapshots where deleted = false and status <> 'available'",
        )
        .await;
        let groups_left = count(
            &app,
            "from groups where deleted = false and status <> 'available'",
        )
        .await;
        if busy == "0" && groups_left == "0" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{busy} snapshots, {groups_left} groups unsettled"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let orphans = count(
        &app,
        "from snapshots s join volumes v on v.id = s.volume_id \
         where s.deleted = false and v.deleted = true",
    )
    .await;
    assert_eq!(orphans, "0");
    assert_eq!(
        count(&app, "from snapshots where deleted = false").await,
        (2 * snapshots_won).to_string()
    );
    assert_eq!(
        count(&app, "from groups where deleted = false").await,
        snapshots_won.to_string(),
        "{deletes_won} deletes won"
    );
}

backend_tests!(
    a_group_snapshot_racing_the_groups_delete_has_one_winner,
    a_group_snapshot_holds_a_snapshot_of_each_member_until_it_goes,
    a_refused_group_snapshot_records_nothing,
    reset_status_is_for_admins_from_3_19,
);

//! Generic volume groups (3.13+) as Cinder runs them: a group on one backend for its
//! volume types, volumes created in it or added and removed, Cinder's refusals with its
//! texts (and nothing changed after one), the `groups` quota, and delete with and
//! without `delete-volumes`.

use axum::http::Method;
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::http::ADMIN_TOKEN;
use crate::support::{TestApp, TestResponse};

const V: &str = "3.64";

async fn call(app: &TestApp, method: Method, path: &str, body: Option<Value>) -> TestResponse {
    call_as(app, ADMIN_TOKEN, V, method, path, body).await
}

/// A group type (as admin); its id.
async fn group_type(app: &TestApp, name: &str, specs: Value) -> String {
    let body = json!({"group_type": {"name": name, "group_specs": specs}});
    let made = call(app, Method::POST, "/v3/p1/group_types", Some(body)).await;
    assert_eq!(made.status, 202, "{}", made.text);
    str_of(&made.json["group_type"], "id")
}

async fn post_group(app: &TestApp, token: &str, group: Value) -> TestResponse {
    let body = json!({ "group": group });
    call_as(app, token, V, Method::POST, "/v3/p1/groups", Some(body)).await
}

/// A group of `volume_types` made by a member of p1; its id.
async fn group(app: &TestApp, group_type: &str, volume_types: Value) -> String {
    let group = json!({"group_type": group_type, "volume_types": volume_types, "name": "g"});
    let made = post_group(app, MEMBER_P1, group).await;
    assert_eq!(made.status, 202, "{}", made.text);
    str_of(&made.json["group"], "id")
}

async fn show(app: &TestApp, id: &str) -> Value {
    let shown = call(app, Method::GET, &format!("/v3/p1/groups/{id}"), None).await;
    assert_eq!(shown.status, 200, "{}", shown.text);
    shown.json["group"].clone()
}

async fn update(app: &TestApp, id: &str, fields: Value) -> TestResponse {
    let body = json!({ "group": fields });
    let path = format!("/v3/p1/groups/{id}");
    call_as(app, MEMBER_P1, V, Method::PUT, &path, Some(body)).await
}

async fn group_action(app: &TestApp, token: &str, id: &str, body: Value) -> TestResponse {
    let path = format!("/v3/p1/groups/{id}/action");
    call_as(app, token, V, Method::POST, &path, Some(body)).await
}

/// `create-from-src` as a member of p1.
async fn from_source(app: &TestApp, version: &str, body: Value) -> TestResponse {
    let path = "/v3/p1/groups/action";
    call_as(app, MEMBER_P1, version, Method::POST, path, Some(body)).await
}

async fn volume_in(app: &TestApp, volume_type: &str, group: Option<&str>) -> String {
    let mut fields = json!({"size": 1, "volume_type": volume_type});
    if let Some(group) = group {
        fields["group_id"] = json!(group);
    }
    str_of(&app.create_volume(fields).await, "id")
}

async fn group_of(app: &TestApp, volume: &str) -> Vec<String> {
    app.db
        .column(&format!(
            "select coalesce(group_id, '') from volumes where id = '{volume}'"
        ))
        .await
}

async fn a_group_is_made_shown_listed_filled_and_deleted_with_its_volumes(app: TestApp) {
    app.create_type("gold", json!({})).await;
    let gold = app.create_type("silver", json!({})).await;
    let gt = group_type(&app, "generic", json!({})).await;
    // The group type by name, volume types by name and id.
    let made = post_group(
        &app,
        MEMBER_P1,
        json!({"group_type": "generic", "volume_types": ["gold", gold], "name": " g1 ",
               "description": "two tiers"}),
    )
    .await;
    assert_eq!(made.status, 202, "{}", made.text);
    let id = str_of(&made.json["group"], "id");
    assert_eq!(made.json, json!({"group": {"id": id, "name": "g1"}}));

    let shown = show(&app, &id).await;
    assert_eq!(shown["status"], "available");
    assert_eq!(shown["group_type"], gt.as_str());
    assert_eq!(shown["description"], "two tiers");
    assert_eq!(shown["volume_types"].as_array().map(Vec::len), Some(2));
    assert_eq!(shown["volume_types"][1], gold.as_str());
    assert_eq!(shown["group_snapshot_id"], Value::Null);
    assert_eq!(shown["replication_status"], "disabled");
    assert_eq!(shown["project_id"], "p1", "admins, from 3.58");
    let at_13 = call_as(
        &app,
        MEMBER_P1,
        "3.13",
        Method::GET,
        &format!("/v3/p1/groups/{id}"),
        None,
    )
    .await;
    assert!(
        at_13.json["group"].get("source_group_id").is_none(),
        "{}",
        at_13.text
    );
    let at_58 = call_as(
        &app,
        MEMBER_P1,
        "3.58",
        Method::GET,
        &format!("/v3/p1/groups/{id}"),
        None,
    )
    .await;
    assert!(
        at_58.json["group"].get("project_id").is_none(),
        "admins only"
    );
    // Not there below 3.13; another project's members do not see it.
    call_as(&app, MEMBER_P1, "3.12", Method::GET, "/v3/p1/groups", None)
        .await
        .assert_fault(404, "itemNotFound", "");
    call_as(
        &app,
        MEMBER_P2,
        V,
        Method::GET,
        &format!("/v3/p2/groups/{id}"),
        None,
    )
    .await
    .assert_fault(
        404,
        "itemNotFound",
        &format!("Group {id} could not be found."),
    );

    // A volume made in the group names it, is on its backend, and counts as a member.
    let v1 = volume_in(&app, "gold", Some(&id)).await;
    let v1_view = app.show_volume(&v1, "3.13").await;
    assert_eq!(v1_view.json["volume"]["group_id"], id.as_str());
    assert_eq!(v1_view.json["volume"]["status"], "available");
    let filtered = call(
        &app,
        Method::GET,
        &format!("/v3/p1/volumes?group_id={id}"),
        None,
    )
    .await;
    assert_eq!(
        filtered.json["volumes"].as_array().map(Vec::len),
        Some(1),
        "{}",
        filtered.text
    );
    let listed = call(
        &app,
        Method::GET,
        &format!("/v3/p1/groups/{id}?list_volume=true"),
        None,
    )
    .await;
    assert_eq!(listed.json["group"]["volumes"], json!([v1]));

    let summary = call_as(&app, MEMBER_P1, V, Method::GET, "/v3/p1/groups", None).await;
    assert_eq!(summary.json, json!({"groups": [{"id": id, "name": "g1"}]}));
    let detail = call_as(
        &app,
        MEMBER_P1,
        V,
        Method::GET,
        "/v3/p1/groups/detail",
        None,
    )
    .await;
    assert_eq!(detail.json["groups"][0]["status"], "available");
    // A member volume is not deleted on its own (Cinder's rule).
    let alone = app
        .request(Method::DELETE, &format!("/v3/p1/volumes/{v1}"))
        .send()
        .await;
    assert_eq!(alone.status, 400, "{}", alone.text);

    // The group keeps its volumes unless told to delete them.
    group_action(&app, MEMBER_P1, &id, json!({"delete": {}}))
        .await
        .assert_fault(
            400,
            "badRequest",
            &format!(
                "Invalid Group: Group {id} still contains volumes. The delete-volumes flag is \
                 required to delete it."
            ),
        );
    assert_eq!(show(&app, &id).await["status"], "available");
    // The group type and the volume types stay while the group lives.
    call(
        &app,
        Method::DELETE,
        &format!("/v3/p1/group_types/{gt}"),
        None,
    )
    .await
    .assert_fault(
        400,
        "badRequest",
        &format!("Group Type {gt} deletion is not allowed with groups present with the type."),
    );
    let used = call(&app, Method::DELETE, &format!("/v3/p1/types/{gold}"), None).await;
    assert_eq!(used.status, 400, "{}", used.text);

    let deleted = group_action(
        &app,
        MEMBER_P1,
        &id,
        json!({"delete": {"delete-volumes": true}}),
    )
    .await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
    call(&app, Method::GET, &format!("/v3/p1/groups/{id}"), None)
        .await
        .assert_fault(404, "itemNotFound", "");
    assert_eq!(app.show_volume(&v1, V).await.status, 404);
    let told = app
        .get(&format!("/v3/p1/events?volume_id={v1}"))
        .send()
        .await;
    let told: Vec<&str> = told.json["events"]
        .as_array()
        .map(|e| e.iter().filter_map(|e| e["event_type"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        told,
        [
            "volume.create.start",
            "volume.create.end",
            "volume.delete.start",
            "volume.delete.end"
        ]
    );
    let stored = app
        .db
        .column(&format!("select status from groups where id = '{id}'"))
        .await;
    assert_eq!(stored, vec!["deleted"]);
    let gone = call(
        &app,
        Method::DELETE,
        &format!("/v3/p1/group_types/{gt}"),
        None,
    )
    .await;
    assert_eq!(gone.status, 202, "{}", gone.text);
}

async fn members_are_added_and_removed_by_cinders_rules(app: TestApp) {
    let gold = app.create_type("gold", json!({})).await;
    let other = app.create_type("other", json!({})).await;
    group_type(&app, "generic", json!({})).await;
    let g = group(&app, "generic", json!([gold])).await;
    let g2 = group(&app, "generic", json!([gold])).await;
    let a = volume_in(&app, "gold", Some(&g)).await;
    let b = volume_in(&app, "gold", None).await;
    let c = volume_in(&app, "other", None).await;
    let in_other = volume_in(&app, "gold", Some(&g2)).await;

    // Nothing but the same name: Cinder's "no valid ..." refusal.
    update(&app, &g, json!({"name": "g"})).await.assert_fault(
        400,
        "badRequest",
        &format!(
            "Invalid Group: Cannot update group {g} because no valid name, description, \
                 add_volumes, or remove_volumes were provided."
        ),
    );
    let refusals = [
        (json!({"add_volumes": a, "remove_volumes": a}), format!("UUIDs ['{a}'] are in both add and remove volume list.")),
        (json!({"add_volumes": format!("{b},{c}")}), format!("Cannot add volume {c} to group {g} because volume type {other} is not supported by the group.")),
        (json!({"add_volumes": in_other}), format!("Cannot add volume {in_other} to group {g} because it is already in group {g2}.")),
        (json!({"add_volumes": "f00d0000-0000-4000-8000-000000000000"}), format!("Cannot add volume f00d0000-0000-4000-8000-000000000000 to group {g} because volume cannot be found.")),
        (json!({"remove_volumes": b}), format!("Cannot remove volume {b} from group {g} because it is not in the group.")),
    ];
    for (fields, message) in refusals {
        update(&app, &g, fields).await.assert_fault(
            400,
            "badRequest",
            &format!("Invalid volume: {message}"),
        );
    }
    // A refusal changes nothing: `b` was checked before `c` and stays out.
    assert_eq!(group_of(&app, &b).await, vec![""]);
    assert_eq!(group_of(&app, &a).await, vec![g.clone()]);

    // Add and remove at once, with a new name; the group ends available.
    let changed = update(
        &app,
        &g,
        json!({"name": "renamed", "add_volumes": format!(",{b},"), "remove_volumes": a}),
    )
    .await;
    assert_eq!(changed.status, 202, "{}", changed.text);
    assert_eq!(group_of(&app, &a).await, vec![""]);
    assert_eq!(group_of(&app, &b).await, vec![g.clone()]);
    let shown = show(&app, &g).await;
    assert_eq!(
        (shown["name"].as_str(), shown["status"].as_str()),
        (Some("renamed"), Some("available"))
    );

    // Another project's volume never joins.
    let theirs = app
        .request(Method::POST, "/v3/p2/volumes")
        .token(MEMBER_P2)
        .version(V)
        .json(&json!({"volume": {"size": 1, "volume_type": "gold"}}))
        .send()
        .await;
    let theirs = str_of(&theirs.json["volume"], "id");
    let joined = call(
        &app,
        Method::PUT,
        &format!("/v3/p1/groups/{g}"),
        Some(json!({"group": {"add_volumes": theirs}})),
    )
    .await;
    joined.assert_fault(400, "badRequest", "as they belong to different projects.");

    // Members change only while the group is available; a rename alone makes it so.
    let reset = group_action(
        &app,
        ADMIN_TOKEN,
        &g,
        json!({"reset_status": {"status": "error"}}),
    )
    .await;
    assert_eq!(reset.status, 202, "{}", reset.text);
    update(&app, &g, json!({"add_volumes": a}))
        .await
        .assert_fault(
            400,
            "badRequest",
            "Invalid Group: Group status must be available.",
        );
    assert_eq!(group_of(&app, &a).await, vec![""]);
    let renamed = update(&app, &g, json!({"description": "back"})).await;
    assert_eq!(renamed.status, 202, "{}", renamed.text);
    assert_eq!(show(&app, &g).await["status"], "available");
}

async fn one_volume_added_to_two_groups_at_once_joins_one(app: TestApp) {
    let gold = app.create_type("gold", json!({})).await;
    group_type(&app, "generic", json!({})).await;
    let g1 = group(&app, "generic", json!([gold])).await;
    let g2 = group(&app, "generic", json!([gold])).await;
    for _ in 0..3 {
        let v = volume_in(&app, "gold", None).await;
        let adds: Vec<Pending> = [&g1, &g2]
            .iter()
            .map(|g| -> Pending {
                Box::pin(
                    app.request(Method::PUT, &format!("/v3/p1/groups/{g}"))
                        .token(MEMBER_P1)
                        .version(V)
                        .json(&json!({"group": {"add_volumes": v}}))
                        .send(),
                )
            })
            .collect();
        let answers = all_at_once(adds).await;
        assert_eq!(
            answers.iter().filter(|a| a.status == 202).count(),
            1,
            "{:?}",
            answers.iter().map(|a| &a.text).collect::<Vec<_>>()
        );
        let stored = group_of(&app, &v).await;
        assert!(
            stored == vec![g1.clone()] || stored == vec![g2.clone()],
            "{stored:?}"
        );
    }
}

async fn reset_status_is_for_admins_from_3_20_with_cinders_statuses(app: TestApp) {
    let gold = app.create_type("gold", json!({})).await;
    group_type(&app, "generic", json!({})).await;
    let g = group(&app, "generic", json!([gold])).await;
    let reset = |status: &str| json!({"reset_status": {"status": status}});
    group_action(&app, MEMBER_P1, &g, reset("error"))
        .await
        .assert_fault(403, "forbidden", "");
    let path = format!("/v3/p1/groups/{g}/action");
    call_as(
        &app,
        ADMIN_TOKEN,
        "3.19",
        Method::POST,
        &path,
        Some(reset("error")),
    )
    .await
    .assert_fault(404, "itemNotFound", "");
    // Cinder checks against the group snapshot statuses: `in-use` is refused.
    group_action(&app, ADMIN_TOKEN, &g, reset("in-use"))
        .await
        .assert_fault(
            400,
            "badRequest",
            "Invalid Group Status: Group status: in-use is invalid, valid status are: ('error', \
             'available', 'creating', 'deleting', 'deleted', 'updating', 'in-use', 'error_deleting').",
        );
    for status in ["creating", "AVAILABLE", "error"] {
        let done = group_action(&app, ADMIN_TOKEN, &g, reset(status)).await;
        assert_eq!(done.status, 202, "{}", done.text);
        assert_eq!(show(&app, &g).await["status"], status.to_lowercase());
    }
    group_action(&app, MEMBER_P1, &g, json!({"frobnicate": {}}))
        .await
        .assert_fault(400, "badRequest", "There is no such action: frobnicate");
    // An empty group in error is deleted without `delete-volumes`.
    let deleted = group_action(
        &app,
        MEMBER_P1,
        &g,
        json!({"delete": {"delete-volumes": false}}),
    )
    .await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
}

async fn groups_count_against_the_quota_and_need_one_backend_for_all_types(app: TestApp) {
    let gold = app.create_type("gold", json!({})).await;
    let nowhere = app
        .create_type("nowhere", json!({"volume_backend_name": "no-such-backend"}))
        .await;
    group_type(&app, "generic", json!({})).await;
    group_type(
        &app,
        "consistent",
        json!({"consistent_group_snapshot_enabled": "<is> True"}),
    )
    .await;
    let quota = call(
        &app,
        Method::PUT,
        "/v3/p1/os-quota-sets/p1",
        Some(json!({"quota_set": {"groups": 2}})),
    )
    .await;
    assert_eq!(quota.status, 200, "{}", quota.text);

    // No backend serves both types: the group is recorded in error, on none.
    let split = group(&app, "generic", json!([gold, nowhere])).await;
    let shown = show(&app, &split).await;
    assert_eq!(shown["status"], "error");
    // No backend here takes consistent group snapshots yet: not chosen either.
    let consistent = group(&app, "consistent", json!([gold])).await;
    assert_eq!(show(&app, &consistent).await["status"], "error");
    let over = post_group(
        &app,
        MEMBER_P1,
        json!({"group_type": "generic", "volume_types": [gold]}),
    )
    .await;
    over.assert_fault(
        413,
        "overLimit",
        "Maximum number of groups allowed (2) exceeded",
    );
    let usage = call(
        &app,
        Method::GET,
        "/v3/p1/os-quota-sets/p1?usage=true",
        None,
    )
    .await;
    assert_eq!(
        usage.json["quota_set"]["groups"]["in_use"], 2,
        "{}",
        usage.text
    );
    // A volume is not made in a group in error.
    let refused = app
        .post_volume(
            json!({"size": 1, "volume_type": "gold", "group_id": split}),
            V,
        )
        .await;
    refused.assert_fault(
        400,
        "badRequest",
        "Invalid Group: Originating group status must be one of 'available, creating' values",
    );
    // Nor of a type the group does not allow, nor in a group that is not there.
    let g = {
        let deleted = group_action(&app, MEMBER_P1, &consistent, json!({"delete": {}})).await;
        assert_eq!(deleted.status, 202, "{}", deleted.text);
        group(&app, "generic", json!([gold])).await
    };
    app.create_type("plain", json!({})).await;
    let wrong = app
        .post_volume(json!({"size": 1, "volume_type": "plain", "group_id": g}), V)
        .await;
    wrong.assert_fault(
        400,
        "badRequest",
        "(requested type must be supported by this group).",
    );
    let missing = app
        .post_volume(
            json!({"size": 1, "volume_type": "gold", "group_id": "f00d0000-0000-4000-8000-000000000000"}),
            V,
        )
        .await;
    missing.assert_fault(
        404,
        "itemNotFound",
        "Group f00d0000-0000-4000-8000-000000000000 could not be found.",
    );
    let count = app
        .db
        .column("select cast(count(*) as text) from volumes where deleted = false")
        .await;
    assert_eq!(count, vec!["0"], "no volume recorded by a refused create");
    // Bad input: Cinder's schema.
    post_group(
        &app,
        MEMBER_P1,
        json!({"group_type": "generic", "volume_types": []}),
    )
    .await
    .assert_fault(
        400,
        "badRequest",
        "Invalid input for field/attribute volume_types. Value: []. [] is too short",
    );
    post_group(
        &app,
        MEMBER_P1,
        json!({"group_type": "nope", "volume_types": [gold]}),
    )
    .await
    .assert_fault(
        404,
        "itemNotFound",
        "Group type with name nope could not be found.",
    );
    post_group(
        &app,
        MEMBER_P1,
        json!({"group_type": "generic", "volume_types": ["nope"]}),
    )
    .await
    .assert_fault(
        404,
        "itemNotFound",
        "Volume type with name nope could not be found.",
    );
}

async fn a_group_is_cloned_from_a_group_with_its_volumes(app: TestApp) {
    let gold = app.create_type("gold", json!({})).await;
    group_type(&app, "generic", json!({})).await;
    let source = group(&app, "generic", json!([gold])).await;
    let from = |id: &str| json!({"create-from-src": {"source_group_id": id, "name": "copy"}});
    // An empty group is no source.
    from_source(&app, V, from(&source)).await.assert_fault(
        400,
        "badRequest",
        "Invalid Group: Source Group is empty. No group will be created.",
    );
    let a = volume_in(&app, "gold", Some(&source)).await;
    let b = volume_in(&app, "gold", Some(&source)).await;
    // Below 3.14 there is no such call.
    from_source(&app, "3.13", from(&source))
        .await
        .assert_fault(404, "itemNotFound", "");
    let both = json!({"create-from-src": {"source_group_id": source,
                                          "group_snapshot_id": source}});
    let refused = from_source(&app, V, both).await;
    assert_eq!(refused.status, 400, "{}", refused.text);

    let made = from_source(&app, V, from(&source)).await;
    assert_eq!(made.status, 202, "{}", made.text);
    let copy = str_of(&made.json["group"], "id");
    assert_eq!(made.json["group"]["name"], "copy");
    let shown = show(&app, &copy).await;
    assert_eq!(shown["status"], "available");
    assert_eq!(shown["source_group_id"], source.as_str());
    assert_eq!(shown["volume_types"], json!([gold]));
    let members = call(
        &app,
        Method::GET,
        &format!("/v3/p1/volumes/detail?group_id={copy}"),
        None,
    )
    .await;
    let clones = members.json["volumes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(clones.len(), 2, "{}", members.text);
    let mut sources: Vec<&str> = clones
        .iter()
        .filter_map(|v| v["source_volid"].as_str())
        .collect();
    sources.sort_unstable();
    let mut expected = vec![a.as_str(), b.as_str()];
    expected.sort_unstable();
    assert_eq!(sources, expected);
    assert!(clones.iter().all(|v| v["status"] == "available"));

    // Over the volumes quota the clone is refused, and nothing of the new group stays.
    let quota = call(
        &app,
        Method::PUT,
        "/v3/p1/os-quota-sets/p1",
        Some(json!({"quota_set": {"volumes": 5}})),
    )
    .await;
    assert_eq!(quota.status, 200, "{}", quota.text);
    let over = from_source(&app, V, from(&source)).await;
    over.assert_fault(
        413,
        "overLimit",
        "Maximum number of volumes allowed (5) exceeded",
    );
    let live = app
        .db
        .column("select cast(count(*) as text) from groups where deleted = false")
        .await;
    assert_eq!(live, vec!["2"]);
    let volumes = app
        .db
        .column("select cast(count(*) as text) from volumes where deleted = false")
        .await;
    assert_eq!(volumes, vec!["4"]);
}

backend_tests!(
    a_group_is_made_shown_listed_filled_and_deleted_with_its_volumes,
    members_are_added_and_removed_by_cinders_rules,
    one_volume_added_to_two_groups_at_once_joins_one,
    reset_status_is_for_admins_from_3_20_with_cinders_statuses,
    groups_count_against_the_quota_and_need_one_backend_for_all_types,
    a_group_is_cloned_from_a_group_with_its_volumes,
);

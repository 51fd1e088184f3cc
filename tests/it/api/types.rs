//! Volume types and extra specs.

use axum::http::Method;
use serde_json::json;

use crate::support::helpers::*;
use crate::support::TestApp;

async fn type_lifecycle(app: TestApp) {
    let created = app
        .request(Method::POST, "/v3/p1/types")
        .json(&json!({"volume_type": {"name": "gold", "description": "fast", "extra_specs": {"foo": "bar"}}}))
        .send()
        .await;
    assert_eq!(created.status, 200, "{}", created.text);
    let t = &created.json["volume_type"];
    assert_eq!(t["name"], "gold");
    assert_eq!(t["description"], "fast");
    assert_eq!(t["is_public"], true);
    assert_eq!(t["os-volume-type-access:is_public"], true);
    assert_eq!(t["extra_specs"], json!({"foo": "bar"}));
    let id = str_of(t, "id");

    let listed = app.get("/v3/p1/types").send().await;
    let names: Vec<&str> = listed.json["volume_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["__DEFAULT__", "gold"]);

    let updated = app
        .request(Method::PUT, &format!("/v3/p1/types/{id}"))
        .json(&json!({"volume_type": {"description": "faster"}}))
        .send()
        .await;
    assert_eq!(updated.json["volume_type"]["description"], "faster");
    assert_eq!(updated.json["volume_type"]["name"], "gold");
    app.request(Method::PUT, &format!("/v3/p1/types/{id}"))
        .json(&json!({"volume_type": {}}))
        .send()
        .await
        .assert_fault(
            400,
            "badRequest",
            "Specify volume type name, description, is_public or a combination thereof.",
        );

    let default = app.get("/v3/p1/types/default").send().await;
    assert_eq!(default.json["volume_type"]["name"], "__DEFAULT__");

    let deleted = app
        .request(Method::DELETE, &format!("/v3/p1/types/{id}"))
        .send()
        .await;
    assert_eq!(deleted.status, 202);
    app.get(&format!("/v3/p1/types/{id}"))
        .send()
        .await
        .assert_fault(
            404,
            "itemNotFound",
            &format!("Volume type {id} could not be found."),
        );
}

async fn names_are_unique_and_admin_only(app: TestApp) {
    app.create_type("dup", json!({})).await;
    app.request(Method::POST, "/v3/p1/types")
        .json(&json!({"volume_type": {"name": "dup"}}))
        .send()
        .await
        .assert_fault(409, "conflictingRequest", "Volume Type dup already exists.");
    app.request(Method::POST, "/v3/p1/types")
        .token(MEMBER_P1)
        .json(&json!({"volume_type": {"name": "mine"}}))
        .send()
        .await
        .assert_fault(
            403,
            "forbidden",
            "Policy doesn't allow volume_extension:type_create to be performed.",
        );
    app.request(Method::POST, "/v3/p1/types")
        .json(&json!({"volume_type": {"name": "   "}}))
        .send()
        .await
        .assert_fault(400, "badRequest", "is not a 'name'");
    app.request(Method::POST, "/v3/p1/types")
        .json(&json!({"volume_type": {"name": "x", "bogus": 1}}))
        .send()
        .await
        .assert_fault(
            400,
            "badRequest",
            "Additional properties are not allowed ('bogus' was unexpected)",
        );
}

async fn non_admins_see_only_user_visible_specs(app: TestApp) {
    let id = app
        .create_type("ma", json!({"multiattach": "<is> True", "foo": "bar"}))
        .await;
    let member = app
        .get(&format!("/v3/p1/types/{id}"))
        .token(MEMBER_P1)
        .send()
        .await;
    assert_eq!(member.status, 200, "{}", member.text);
    assert_eq!(
        member.json["volume_type"]["extra_specs"],
        json!({"multiattach": "<is> True"})
    );
    assert!(member.json["volume_type"].get("qos_specs_id").is_none());
    let admin = app.get(&format!("/v3/p1/types/{id}")).send().await;
    assert_eq!(
        admin.json["volume_type"]["extra_specs"],
        json!({"multiattach": "<is> True", "foo": "bar"})
    );
    let specs = app
        .get(&format!("/v3/p1/types/{id}/extra_specs"))
        .token(MEMBER_P1)
        .send()
        .await;
    assert_eq!(
        specs.json["extra_specs"],
        json!({"multiattach": "<is> True"})
    );
    app.get(&format!("/v3/p1/types/{id}/extra_specs/foo"))
        .token(MEMBER_P1)
        .send()
        .await
        .assert_fault(404, "itemNotFound", "has no extra specs with key foo");
}

async fn extra_spec_crud(app: TestApp) {
    let id = app.create_type("t", json!({})).await;
    let created = app
        .request(Method::POST, &format!("/v3/p1/types/{id}/extra_specs"))
        .json(&json!({"extra_specs": {"a": "1", "b": "2"}}))
        .send()
        .await;
    assert_eq!(created.json, json!({"extra_specs": {"a": "1", "b": "2"}}));
    let shown = app
        .get(&format!("/v3/p1/types/{id}/extra_specs/a"))
        .send()
        .await;
    assert_eq!(shown.json, json!({"a": "1"}));
    let updated = app
        .request(Method::PUT, &format!("/v3/p1/types/{id}/extra_specs/a"))
        .json(&json!({"a": "3"}))
        .send()
        .await;
    assert_eq!(updated.json, json!({"a": "3"}));
    app.request(Method::PUT, &format!("/v3/p1/types/{id}/extra_specs/a"))
        .json(&json!({"b": "3"}))
        .send()
        .await
        .assert_fault(400, "badRequest", "Request body and URI mismatch");
    app.request(Method::PUT, &format!("/v3/p1/types/{id}/extra_specs/a"))
        .json(&json!({"a": "3", "b": "4"}))
        .send()
        .await
        .assert_fault(400, "badRequest", "has too many properties");
    let deleted = app
        .request(Method::DELETE, &format!("/v3/p1/types/{id}/extra_specs/b"))
        .send()
        .await;
    assert_eq!(deleted.status, 202);
    let specs = app
        .get(&format!("/v3/p1/types/{id}/extra_specs"))
        .send()
        .await;
    assert_eq!(specs.json, json!({"extra_specs": {"a": "3"}}));
    app.request(Method::DELETE, &format!("/v3/p1/types/{id}/extra_specs/b"))
        .send()
        .await
        .assert_fault(404, "itemNotFound", "has no extra specs with key b");
    app.request(Method::POST, &format!("/v3/p1/types/{id}/extra_specs"))
        .json(&json!({"extra_specs": {"bad key!": "x"}}))
        .send()
        .await
        .assert_fault(400, "badRequest", "Additional properties are not allowed");
}

async fn specs_are_frozen_while_volumes_use_the_type(app: TestApp) {
    let id = app.create_multiattach_type("ma").await;
    app.create_volume(json!({"size": 1, "volume_type": "ma"}))
        .await;
    app.request(Method::POST, &format!("/v3/p1/types/{id}/extra_specs"))
        .json(&json!({"extra_specs": {"multiattach": "<is> False"}}))
        .send()
        .await
        .assert_fault(400, "badRequest", "Volume Type is currently in use.");
    app.request(
        Method::DELETE,
        &format!("/v3/p1/types/{id}/extra_specs/multiattach"),
    )
    .send()
    .await
    .assert_fault(400, "badRequest", "Volume Type is currently in use.");
    app.request(Method::DELETE, &format!("/v3/p1/types/{id}"))
        .send()
        .await
        .assert_fault(400, "badRequest", "Target volume type is still in use.");
    let specs = app
        .get(&format!("/v3/p1/types/{id}/extra_specs"))
        .send()
        .await;
    assert_eq!(
        specs.json["extra_specs"],
        json!({"multiattach": "<is> True"}),
        "unchanged"
    );
}

async fn cacheable_and_multiattach_conflict(app: TestApp) {
    let id = app.create_type("t", json!({})).await;
    app.request(Method::POST, &format!("/v3/p1/types/{id}/extra_specs"))
        .json(&json!({"extra_specs": {"multiattach": "<is> True", "cacheable": "<is> True"}}))
        .send()
        .await
        .assert_fault(
            400,
            "badRequest",
            "cacheable cannot be set with multiattach.",
        );
    app.request(Method::POST, &format!("/v3/p1/types/{id}/extra_specs"))
        .json(&json!({"extra_specs": {"multiattach": "<is> True"}}))
        .send()
        .await;
    app.request(
        Method::PUT,
        &format!("/v3/p1/types/{id}/extra_specs/cacheable"),
    )
    .json(&json!({"cacheable": "<is> True"}))
    .send()
    .await
    .assert_fault(
        400,
        "badRequest",
        "cacheable cannot be set with multiattach.",
    );
    app.request(Method::POST, "/v3/p1/types")
        .json(&json!({"volume_type": {"name": "both", "extra_specs": {"multiattach": "<is> True", "cacheable": "<is> True"}}}))
        .send()
        .await
        .assert_fault(400, "badRequest", "cacheable cannot be set with multiattach.");
}

async fn the_default_type_stays(app: TestApp) {
    let default = app.get("/v3/p1/types/default").send().await;
    let id = str_of(&default.json["volume_type"], "id");
    app.request(Method::DELETE, &format!("/v3/p1/types/{id}"))
        .send()
        .await
        .assert_fault(
            400,
            "badRequest",
            "is a default volume type and cannot be deleted",
        );
}

async fn private_types_are_hidden(app: TestApp) {
    let created = app
        .request(Method::POST, "/v3/p1/types")
        .json(&json!({"volume_type": {"name": "secret", "os-volume-type-access:is_public": false}}))
        .send()
        .await;
    let id = str_of(&created.json["volume_type"], "id");
    assert_eq!(created.json["volume_type"]["is_public"], false);
    let member_list = app.get("/v3/p1/types").token(MEMBER_P1).send().await;
    let names: Vec<&str> = member_list.json["volume_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["__DEFAULT__"]);
    app.get(&format!("/v3/p1/types/{id}"))
        .token(MEMBER_P1)
        .send()
        .await
        .assert_fault(404, "itemNotFound", "could not be found");
    let admin_private = app.get("/v3/p1/types?is_public=false").send().await;
    assert_eq!(
        admin_private.json["volume_types"].as_array().unwrap().len(),
        1
    );
    let admin_all = app.get("/v3/p1/types?is_public=None").send().await;
    assert_eq!(admin_all.json["volume_types"].as_array().unwrap().len(), 2);
}

async fn access_action(
    app: &TestApp,
    id: &str,
    body: serde_json::Value,
    token: &str,
) -> crate::support::TestResponse {
    app.request(Method::POST, &format!("/v3/p1/types/{id}/action"))
        .token(token)
        .json(&body)
        .send()
        .await
}

/// A private type shared with p1: p1's member sees and uses it, p2's does not, until
/// access is taken back.
async fn project_access_to_a_private_type(app: TestApp) {
    let created = app
        .request(Method::POST, "/v3/p1/types")
        .json(&json!({"volume_type": {"name": "secret", "os-volume-type-access:is_public": false}}))
        .send()
        .await;
    let id = str_of(&created.json["volume_type"], "id");
    let added = access_action(
        &app,
        &id,
        json!({"addProjectAccess": {"project": "p1"}}),
        crate::support::http::ADMIN_TOKEN,
    )
    .await;
    assert_eq!(added.status, 202, "{}", added.text);
    assert_eq!(added.text, "");
    access_action(
        &app,
        &id,
        json!({"addProjectAccess": {"project": "p1"}}),
        crate::support::http::ADMIN_TOKEN,
    )
    .await
    .assert_fault(
        409,
        "conflictingRequest",
        &format!("Volume type access for {id} / p1 combination already exists."),
    );
    let other = access_action(
        &app,
        &id,
        json!({"addProjectAccess": {"project": "p3"}}),
        crate::support::http::ADMIN_TOKEN,
    )
    .await;
    assert_eq!(other.status, 202, "{}", other.text);
    let listed = app
        .get(&format!("/v3/p1/types/{id}/os-volume-type-access"))
        .send()
        .await;
    assert_eq!(
        listed.json,
        json!({"volume_type_access": [
            {"volume_type_id": id, "project_id": "p1"},
            {"volume_type_id": id, "project_id": "p3"}
        ]})
    );

    let seen = app
        .get(&format!("/v3/p1/types/{id}"))
        .token(MEMBER_P1)
        .send()
        .await;
    assert_eq!(seen.status, 200, "{}", seen.text);
    let made = app
        .request(Method::POST, "/v3/p1/volumes")
        .token(MEMBER_P1)
        .json(&json!({"volume": {"size": 1, "volume_type": "secret"}}))
        .send()
        .await;
    assert_eq!(made.status, 202, "{}", made.text);
    app.request(Method::POST, "/v3/p2/volumes")
        .token(MEMBER_P2)
        .json(&json!({"volume": {"size": 1, "volume_type": id}}))
        .send()
        .await
        .assert_fault(
            404,
            "itemNotFound",
            &format!("Volume type {id} could not be found."),
        );

    // Members may neither change nor read the access list.
    access_action(&app, &id, json!({"addProjectAccess": {"project": "p2"}}), MEMBER_P1)
        .await
        .assert_fault(
            403,
            "forbidden",
            "Policy doesn't allow volume_extension:volume_type_access:addProjectAccess to be performed.",
        );
    app.get(&format!("/v3/p1/types/{id}/os-volume-type-access"))
        .token(MEMBER_P1)
        .send()
        .await
        .assert_fault(403, "forbidden", "get_all_for_type");

    let removed = access_action(
        &app,
        &id,
        json!({"removeProjectAccess": {"project": "p1"}}),
        crate::support::http::ADMIN_TOKEN,
    )
    .await;
    assert_eq!(removed.status, 202, "{}", removed.text);
    access_action(
        &app,
        &id,
        json!({"removeProjectAccess": {"project": "p1"}}),
        crate::support::http::ADMIN_TOKEN,
    )
    .await
    .assert_fault(
        404,
        "itemNotFound",
        &format!("Volume type access not found for {id} / p1 combination."),
    );
    app.get(&format!("/v3/p1/types/{id}"))
        .token(MEMBER_P1)
        .send()
        .await
        .assert_fault(404, "itemNotFound", "could not be found");
}

async fn access_of_public_types_and_bad_bodies(app: TestApp) {
    let id = app.create_type("open", json!({})).await;
    access_action(
        &app,
        &id,
        json!({"addProjectAccess": {"project": "p1"}}),
        crate::support::http::ADMIN_TOKEN,
    )
    .await
    .assert_fault(
        400,
        "badRequest",
        "Invalid volume type: Type access modification is not applicable to public volume type.",
    );
    app.get(&format!("/v3/p1/types/{id}/os-volume-type-access"))
        .send()
        .await
        .assert_fault(
            404,
            "itemNotFound",
            "Access list not available for public volume types.",
        );
    access_action(
        &app,
        &id,
        json!({"addProjectAccess": {}}),
        crate::support::http::ADMIN_TOKEN,
    )
    .await
    .assert_fault(400, "badRequest", "project");
    access_action(
        &app,
        &id,
        json!({"addProjectAccess": {"project": ""}}),
        crate::support::http::ADMIN_TOKEN,
    )
    .await
    .assert_fault(400, "badRequest", "");
    access_action(
        &app,
        &id,
        json!({"shareWith": {"project": "p1"}}),
        crate::support::http::ADMIN_TOKEN,
    )
    .await
    .assert_fault(400, "badRequest", "There is no such action: shareWith");
    let missing = "00000000-0000-4000-8000-000000000000";
    access_action(
        &app,
        missing,
        json!({"addProjectAccess": {"project": "p1"}}),
        crate::support::http::ADMIN_TOKEN,
    )
    .await
    .assert_fault(
        404,
        "itemNotFound",
        &format!("Volume type {missing} could not be found."),
    );
}

/// A type looked up alone (by id, by name on a volume create) carries its own specs and
/// project access, never another type's.
async fn each_type_carries_only_its_own_specs_and_access(app: TestApp) {
    let mut ids = Vec::new();
    for (name, specs, project) in [
        ("a", json!({"k": "a"}), "p1"),
        ("b", json!({"k": "b", "x": "y"}), "p2"),
    ] {
        let created = app
            .request(Method::POST, "/v3/p1/types")
            .json(&json!({"volume_type": {"name": name, "extra_specs": specs,
                                          "os-volume-type-access:is_public": false}}))
            .send()
            .await;
        assert_eq!(created.status, 200, "{}", created.text);
        let id = str_of(&created.json["volume_type"], "id");
        let body = json!({"addProjectAccess": {"project": project}});
        let added = access_action(&app, &id, body, crate::support::http::ADMIN_TOKEN).await;
        assert_eq!(added.status, 202, "{}", added.text);
        ids.push((id, specs));
    }
    for (id, specs) in &ids {
        let shown = app.get(&format!("/v3/p1/types/{id}")).send().await;
        assert_eq!(shown.json["volume_type"]["extra_specs"], *specs);
    }
    let member = "member:p1:member";
    for (name, wanted) in [("a", 202), ("b", 404)] {
        let made = app
            .request(Method::POST, "/v3/p1/volumes")
            .token(member)
            .json(&json!({"volume": {"size": 1, "volume_type": name}}))
            .send()
            .await;
        assert_eq!(made.status, wanted, "type {name}: {}", made.text);
    }
}

backend_tests!(
    each_type_carries_only_its_own_specs_and_access,
    project_access_to_a_private_type,
    access_of_public_types_and_bad_bodies,
    type_lifecycle,
    names_are_unique_and_admin_only,
    non_admins_see_only_user_visible_specs,
    extra_spec_crud,
    specs_are_frozen_while_volumes_use_the_type,
    cacheable_and_multiattach_conflict,
    the_default_type_stays,
    private_types_are_hidden,
);

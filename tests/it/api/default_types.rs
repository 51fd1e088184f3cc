//! `/default-types` (3.62): an admin gives a project its own default volume type; that
//! project's volumes made without a type get it (and `GET /types/default` shows it),
//! other projects keep the deployment's; a type some project has as default stays.

use axum::http::Method;
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::{TestApp, TestResponse};

async fn admin(app: &TestApp, method: Method, path: &str, body: Option<Value>) -> TestResponse {
    let request = app.request(method, path).version("3.62");
    match body {
        Some(body) => request.json(&body).send().await,
        None => request.send().await,
    }
}

fn set_body(volume_type: &str) -> Value {
    json!({"default_type": {"volume_type": volume_type}})
}

async fn type_of_new_volume(app: &TestApp, token: &str, project: &str) -> String {
    let made = call_as(
        app,
        token,
        "3.62",
        Method::POST,
        &format!("/v3/{project}/volumes"),
        Some(json!({"volume": {"size": 1}})),
    )
    .await;
    assert_eq!(made.status, 202, "{}", made.text);
    str_of(&made.json["volume"], "volume_type")
}

async fn a_project_default_applies_to_that_project_only(app: TestApp) {
    let gold = app.create_type("gold", json!({})).await;
    assert_eq!(
        type_of_new_volume(&app, MEMBER_P1, "p1").await,
        "__DEFAULT__"
    );

    // Below 3.62 the collection is not there.
    let early = app
        .request(Method::PUT, "/v3/p1/default-types/p1")
        .version("3.61")
        .json(&set_body("gold"))
        .send()
        .await;
    early.assert_fault(404, "itemNotFound", "could not be found");

    // By name; the answer carries the id.
    let set = admin(
        &app,
        Method::PUT,
        "/v3/p1/default-types/p1",
        Some(set_body("gold")),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.text);
    assert_eq!(
        set.json,
        json!({"default_type": {"project_id": "p1", "volume_type_id": gold}})
    );
    assert_eq!(type_of_new_volume(&app, MEMBER_P1, "p1").await, "gold");
    assert_eq!(
        type_of_new_volume(&app, MEMBER_P2, "p2").await,
        "__DEFAULT__"
    );
    let shown = call_as(
        &app,
        MEMBER_P1,
        "3.62",
        Method::GET,
        "/v3/p1/types/default",
        None,
    )
    .await;
    assert_eq!(str_of(&shown.json["volume_type"], "id"), gold);

    // By id, replacing: one row per project.
    let silver = app.create_type("silver", json!({})).await;
    let replaced = admin(
        &app,
        Method::PUT,
        "/v3/p1/default-types/p1",
        Some(set_body(&silver)),
    )
    .await;
    assert_eq!(replaced.status, 200, "{}", replaced.text);
    admin(
        &app,
        Method::PUT,
        "/v3/p1/default-types/p9",
        Some(set_body("gold")),
    )
    .await;
    let listed = admin(&app, Method::GET, "/v3/p1/default-types", None).await;
    assert_eq!(
        listed.json,
        json!({"default_types": [
            {"project_id": "p1", "volume_type_id": silver},
            {"project_id": "p9", "volume_type_id": gold},
        ]})
    );
    let one = admin(&app, Method::GET, "/v3/p1/default-types/p1", None).await;
    assert_eq!(one.json["default_type"]["volume_type_id"], json!(silver));

    // Unset: back to the deployment's default; unsetting again is still 204.
    for _ in 0..2 {
        let unset = admin(&app, Method::DELETE, "/v3/p1/default-types/p1", None).await;
        assert_eq!(unset.status, 204, "{}", unset.text);
    }
    admin(&app, Method::GET, "/v3/p1/default-types/p1", None)
        .await
        .assert_fault(
            404,
            "itemNotFound",
            "Default type for project p1 not found.",
        );
    assert_eq!(
        type_of_new_volume(&app, MEMBER_P1, "p1").await,
        "__DEFAULT__"
    );
}

async fn a_project_default_type_is_not_deleted(app: TestApp) {
    let gold = app.create_type("gold", json!({})).await;
    admin(
        &app,
        Method::PUT,
        "/v3/p1/default-types/p2",
        Some(set_body(&gold)),
    )
    .await;
    let delete = admin(&app, Method::DELETE, &format!("/v3/p1/types/{gold}"), None).await;
    delete.assert_fault(
        400,
        "badRequest",
        &format!("The volume type {gold} is a default volume type and cannot be deleted."),
    );
    admin(&app, Method::DELETE, "/v3/p1/default-types/p2", None).await;
    let delete = admin(&app, Method::DELETE, &format!("/v3/p1/types/{gold}"), None).await;
    assert_eq!(delete.status, 202, "{}", delete.text);
    // A deleted type cannot become a default.
    admin(
        &app,
        Method::PUT,
        "/v3/p1/default-types/p2",
        Some(set_body(&gold)),
    )
    .await
    .assert_fault(
        400,
        "badRequest",
        &format!("Volume type {gold} could not be found."),
    );
}

async fn bad_requests_and_non_admins_are_refused(app: TestApp) {
    app.create_type("gold", json!({})).await;
    admin(
        &app,
        Method::PUT,
        "/v3/p1/default-types/p1",
        Some(set_body("nope")),
    )
    .await
    .assert_fault(
        400,
        "badRequest",
        "Volume type with name nope could not be found.",
    );
    for body in [
        json!({}),
        json!({"default_type": {}}),
        json!({"default_type": {"volume_type": ""}}),
        json!({"default_type": {"volume_type": "gold", "extra": 1}}),
        json!({"default_type": "gold"}),
    ] {
        let refused = admin(
            &app,
            Method::PUT,
            "/v3/p1/default-types/p1",
            Some(body.clone()),
        )
        .await;
        assert_eq!(refused.status, 400, "{body}: {}", refused.text);
    }
    // Nothing was written by any of those.
    let listed = admin(&app, Method::GET, "/v3/p1/default-types", None).await;
    assert_eq!(listed.json, json!({"default_types": []}));

    let body = Some(set_body("gold"));
    for (method, path, body) in [
        (Method::PUT, "/v3/p1/default-types/p1", body),
        (Method::GET, "/v3/p1/default-types/p1", None),
        (Method::GET, "/v3/p1/default-types", None),
        (Method::DELETE, "/v3/p1/default-types/p1", None),
    ] {
        let refused = call_as(&app, MEMBER_P1, "3.62", method, path, body).await;
        assert_eq!(refused.status, 403, "{path}: {}", refused.text);
    }
}

/// A type's delete and a project's default set at once: either the delete wins and the
/// set is refused, or the set wins and the delete is; never a default naming a deleted type.
async fn a_delete_and_a_set_at_once_never_leave_a_dangling_default(app: TestApp) {
    for round in 0..10 {
        let name = format!("t{round}");
        let id = app.create_type(&name, json!({})).await;
        let project = format!("p{round}");
        let set_path = format!("/v3/p1/default-types/{project}");
        let requests: Vec<Pending> = vec![
            Box::pin(
                app.request(Method::DELETE, &format!("/v3/p1/types/{id}"))
                    .version("3.62")
                    .send(),
            ),
            Box::pin(
                app.request(Method::PUT, &set_path)
                    .version("3.62")
                    .json(&set_body(&id))
                    .send(),
            ),
        ];
        let answers = all_at_once(requests).await;
        let (deleted, set) = (answers[0].status == 202, answers[1].status == 200);
        assert!(
            deleted != set,
            "round {round}: {} / {}",
            answers[0].text,
            answers[1].text
        );
        let shown = admin(&app, Method::GET, &set_path, None).await;
        assert_eq!(shown.status == 200, set, "round {round}: {}", shown.text);
    }
}

backend_tests!(
    a_project_default_applies_to_that_project_only,
    a_project_default_type_is_not_deleted,
    bad_requests_and_non_admins_are_refused,
    a_delete_and_a_set_at_once_never_leave_a_dangling_default,
);

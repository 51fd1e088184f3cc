//! Show and list: views, filters, paging, scoping.

use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::TestApp;

fn ids(body: &Value) -> Vec<String> {
    body["attachments"]
        .as_array()
        .expect("list")
        .iter()
        .map(|a| str_of(a, "id"))
        .collect()
}

/// V1 (p1) with A1 (I1), A2 (I1), A3 (I2) in that order; V2 (p2) with A4.
async fn setup(app: &TestApp) -> (String, [String; 4]) {
    app.create_multiattach_type("ma").await;
    let v1 = str_of(
        &app.create_volume(json!({"size": 1, "volume_type": "ma"}))
            .await,
        "id",
    );
    let a1 = app.attach_fully(&v1, I1, conn()).await;
    let a2 = app.attach(&v1, Some(I1), None).await;
    app.complete(&a2).await;
    let a3 = app.attach(&v1, Some(I2), None).await;
    let created = app
        .request(axum::http::Method::POST, "/v3/p2/volumes")
        .token("admin:p2")
        .json(&json!({"volume": {"size": 1}}))
        .send()
        .await;
    let v2 = str_of(&created.json["volume"], "id");
    let a4 = app
        .request(axum::http::Method::POST, "/v3/p2/attachments")
        .token("admin:p2")
        .version("3.44")
        .json(&json!({"attachment": {"volume_uuid": v2}}))
        .send()
        .await;
    let a4 = str_of(&a4.json["attachment"], "id");
    (v1, [a1, a2, a3, a4])
}

async fn show_has_the_detail_keys(app: TestApp) {
    let (_, [a1, ..]) = setup(&app).await;
    let shown = app.show_attachment(&a1).await;
    let mut keys: Vec<&String> = shown.json["attachment"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    keys.sort();
    assert_eq!(keys, ATTACHMENT_DETAIL_KEYS);
}

async fn list_order_limit_marker_sort(app: TestApp) {
    let (_, [a1, a2, a3, _]) = setup(&app).await;
    let all = app.get("/v3/p1/attachments").version("3.44").send().await;
    assert_eq!(
        ids(&all.json),
        [a3.clone(), a2.clone(), a1.clone()],
        "created_at desc"
    );
    assert!(all.json.get("attachments_links").is_none());
    let limited = app
        .get("/v3/p1/attachments?limit=1")
        .version("3.44")
        .send()
        .await;
    assert_eq!(ids(&limited.json), std::slice::from_ref(&a3));
    assert!(
        limited.json.get("attachments_links").is_none(),
        "Cinder never links attachments"
    );
    let after = app
        .get(&format!("/v3/p1/attachments?marker={a3}"))
        .version("3.44")
        .send()
        .await;
    assert_eq!(ids(&after.json), [a2.clone(), a1.clone()]);
    let mut sorted = vec![a1.clone(), a2.clone(), a3.clone()];
    sorted.sort();
    let asc = app
        .get("/v3/p1/attachments?sort_key=id&sort_dir=asc")
        .version("3.44")
        .send()
        .await;
    assert_eq!(ids(&asc.json), sorted);
    let desc = app
        .get("/v3/p1/attachments?sort=id:desc")
        .version("3.44")
        .send()
        .await;
    assert_eq!(ids(&desc.json)[0], sorted[2]);
    let offset = app
        .get("/v3/p1/attachments?offset=1&limit=1")
        .version("3.44")
        .send()
        .await;
    assert_eq!(ids(&offset.json), [a2]);
    let zero = app
        .get("/v3/p1/attachments?limit=0")
        .version("3.44")
        .send()
        .await;
    assert_eq!(ids(&zero.json).len(), 0);
}

async fn tenants_and_filters(app: TestApp) {
    let (v1, [a1, a2, a3, a4]) = setup(&app).await;
    let count = |path: String, token: &'static str| {
        let app = &app;
        async move {
            let response = app.get(&path).token(token).version("3.44").send().await;
            assert_eq!(response.status, 200, "{path}: {}", response.text);
            ids(&response.json).len()
        }
    };
    assert_eq!(
        count("/v3/p1/attachments?all_tenants=1".into(), "admin:p1").await,
        4
    );
    assert_eq!(
        count("/v3/p1/attachments?all_tenants=0".into(), "admin:p1").await,
        4
    );
    assert_eq!(
        count(
            "/v3/p1/attachments?all_tenants=1&project_id=p2".into(),
            "admin:p1"
        )
        .await,
        1
    );
    assert_eq!(
        count("/v3/p1/attachments?all_tenants=1".into(), MEMBER_P1).await,
        3
    );
    assert_eq!(count("/v3/p1/attachments".into(), MEMBER_P1).await, 3);
    assert_eq!(
        count(format!("/v3/p1/attachments?instance_id={I1}"), "admin:p1").await,
        2
    );
    assert_eq!(
        count(format!("/v3/p1/attachments?instance_id={I2}"), "admin:p1").await,
        1
    );
    assert_eq!(
        count(format!("/v3/p1/attachments?volume_id={v1}"), "admin:p1").await,
        3
    );
    let reserved = app
        .get("/v3/p1/attachments?attach_status=reserved")
        .version("3.44")
        .send()
        .await;
    assert_eq!(ids(&reserved.json), std::slice::from_ref(&a3));
    // `status` filters on the attachment status too (api-ref/differences-from-cinder.md D23).
    let by_status = app
        .get("/v3/p1/attachments?status=attached")
        .version("3.44")
        .send()
        .await;
    let mut found = ids(&by_status.json);
    found.sort();
    let mut expected = vec![a1, a2];
    expected.sort();
    assert_eq!(found, expected);
    // Unknown filters: a user's are refused from 3.31 and dropped before; an admin's match nothing.
    app.get("/v3/p1/attachments?foo=bar")
        .token(MEMBER_P1)
        .version("3.31")
        .send()
        .await
        .assert_fault(
            400,
            "badRequest",
            "Invalid filters foo are found in query options.",
        );
    let _ = a4;
}

async fn user_filters_before_3_31(app: TestApp) {
    setup(&app).await;
    let old = app
        .get("/v3/p1/attachments?foo=bar")
        .token(MEMBER_P1)
        .version("3.30")
        .send()
        .await;
    assert_eq!(ids(&old.json).len(), 3, "dropped below 3.31");
    let admin = app
        .get("/v3/p1/attachments?foo=bar")
        .version("3.44")
        .send()
        .await;
    assert_eq!(admin.json, json!({"attachments": []}));
}

async fn bad_paging_parameters(app: TestApp) {
    setup(&app).await;
    let get = |path: &'static str| app.get(path).version("3.44").send();
    get("/v3/p1/attachments?limit=abc").await.assert_fault(
        400,
        "badRequest",
        "limit param must be an integer",
    );
    get("/v3/p1/attachments?limit=-1").await.assert_fault(
        400,
        "badRequest",
        "limit param must be positive",
    );
    get("/v3/p1/attachments?offset=-1").await.assert_fault(
        400,
        "badRequest",
        "offset must be >= 0",
    );
    get("/v3/p1/attachments?sort_dir=up").await.assert_fault(
        400,
        "badRequest",
        "Unknown sort direction, must be 'desc' or 'asc'.",
    );
    get("/v3/p1/attachments?sort=id&sort_key=id")
        .await
        .assert_fault(
            400,
            "badRequest",
            "deprecated and cannot be used with the 'sort' parameter",
        );
    get("/v3/p1/attachments?sort=bogus")
        .await
        .assert_fault(400, "badRequest", "Invalid sort key");
    get("/v3/p1/attachments?marker=8c4a7f38-0000-4000-8000-000000000000")
        .await
        .assert_fault(
            404,
            "itemNotFound",
            "Volume attachment could not be found with filter: attachment_id = 8c4a7f38",
        );
}

async fn other_projects_attachments_are_hidden(app: TestApp) {
    let (_, [a1, _, _, a4]) = setup(&app).await;
    let stranger = app
        .get(&format!("/v3/p2/attachments/{a1}"))
        .token(MEMBER_P2)
        .version("3.44")
        .send()
        .await;
    stranger.assert_fault(404, "itemNotFound", "could not be found");
    let admin = app
        .get(&format!("/v3/p1/attachments/{a4}"))
        .version("3.44")
        .send()
        .await;
    assert_eq!(admin.status, 200, "admins see any attachment by id");
    // Not through a marker either.
    let marker = app
        .get(&format!("/v3/p2/attachments?marker={a1}"))
        .token(MEMBER_P2)
        .version("3.44")
        .send()
        .await;
    assert_eq!(marker.status, 404);
}

backend_tests!(
    show_has_the_detail_keys,
    list_order_limit_marker_sort,
    tenants_and_filters,
    user_filters_before_3_31,
    bad_paging_parameters,
    other_projects_attachments_are_hidden,
);

//! Adoption of existing storage on the file backend: a file no volume is shows in the
//! manageable listing, is managed into a volume that keeps its data (grown to whole GiB),
//! an unmanaged volume leaves its data under another name and can be managed again, and
//! Cinder's refusals answer with its words.

use axum::http::Method;
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::http::ADMIN_TOKEN;
use crate::support::{TestApp, TestResponse};

const V: &str = "3.64";

async fn admin(app: &TestApp, method: Method, path: &str, body: Option<Value>) -> TestResponse {
    call_as(app, ADMIN_TOKEN, V, method, path, body).await
}

/// `host@backend#pool` of the app's file backend, as volumes show it.
async fn backend_host(app: &TestApp) -> String {
    let volume = app.create_volume(json!({"size": 1})).await;
    let id = str_of(&volume, "id");
    let shown = admin(app, Method::GET, &format!("/v3/p1/volumes/{id}"), None).await;
    let host = str_of(&shown.json["volume"], "os-vol-host-attr:host");
    let deleted = admin(app, Method::DELETE, &format!("/v3/p1/volumes/{id}"), None).await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
    host
}

fn manage_body(host: &str, name: &str) -> Value {
    json!({"volume": {"host": host, "ref": {"source-name": name}, "name": "adopted",
                      "metadata": {"from": "outside"}, "bootable": true}})
}

async fn storage_is_managed_and_unmanaged(app: TestApp) {
    let host = backend_host(&app).await;
    // 1.5 GiB of storage made outside the service, with data at its start.
    let outside = app.volumes_dir.join("legacy-disk.img");
    std::fs::write(&outside, b"data from before").unwrap();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&outside)
        .unwrap();
    file.set_len(3 << 29).unwrap();

    let path = format!(
        "/v3/p1/manageable_volumes/detail?host={}",
        host.replace('#', "%23")
    );
    let listed = admin(&app, Method::GET, &path, None).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let items = listed.json["manageable-volumes"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(items.len(), 1, "{}", listed.text);
    assert_eq!(items[0]["reference"]["source-name"], "legacy-disk.img");
    assert_eq!(items[0]["size"], 2, "rounded up to whole GiB");
    assert_eq!(items[0]["safe_to_manage"], true);
    let member = call_as(&app, MEMBER_P1, V, Method::GET, &path, None).await;
    assert_eq!(member.status, 403, "{}", member.text);

    let made = admin(
        &app,
        Method::POST,
        "/v3/p1/os-volume-manage",
        Some(manage_body(&host, "legacy-disk.img")),
    )
    .await;
    assert_eq!(made.status, 202, "{}", made.text);
    let volume = made.json["volume"].clone();
    let id = str_of(&volume, "id");
    assert_eq!(volume["status"], "available");
    assert_eq!(volume["size"], 2);
    assert_eq!(volume["bootable"], "true");
    assert_eq!(volume["metadata"]["from"], "outside");
    assert!(!outside.exists());
    let taken = app.volume_file(&id);
    assert_eq!(std::fs::metadata(&taken).unwrap().len(), 2 << 30);
    assert!(std::fs::read(&taken)
        .unwrap()
        .starts_with(b"data from before"));
    let usage = admin(
        &app,
        Method::GET,
        "/v3/p1/os-quota-sets/p1?usage=true",
        None,
    )
    .await;
    assert_eq!(
        usage.json["quota_set"]["gigabytes"]["in_use"], 2,
        "{}",
        usage.text
    );

    // Its file is a volume now: listed as not safe, refused as already managed.
    let listed = admin(&app, Method::GET, &path, None).await;
    let items = listed.json["manageable-volumes"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(items.len(), 1, "{}", listed.text);
    assert_eq!(items[0]["safe_to_manage"], false);
    assert_eq!(items[0]["cinder_id"], id.as_str());
    let again = admin(
        &app,
        Method::POST,
        "/v3/p1/os-volume-manage",
        Some(manage_body(&host, &format!("volume-{id}"))),
    )
    .await;
    again.assert_fault(400, "badRequest", "The volume is already managed");

    // Unmanage: not while attached; then the volume goes and its data stays.
    let action = format!("/v3/p1/volumes/{id}/action");
    let attachment = app.attach_fully(&id, I1, conn()).await;
    let busy = admin(
        &app,
        Method::POST,
        &action,
        Some(json!({"os-unmanage": {}})),
    )
    .await;
    assert_eq!(busy.status, 400, "{}", busy.text);
    app.delete_attachment(&attachment).await;
    let unmanaged = admin(
        &app,
        Method::POST,
        &action,
        Some(json!({"os-unmanage": {}})),
    )
    .await;
    assert_eq!(unmanaged.status, 202, "{}", unmanaged.text);
    let gone = admin(&app, Method::GET, &format!("/v3/p1/volumes/{id}"), None).await;
    assert_eq!(gone.status, 404, "{}", gone.text);
    let kept = app.volumes_dir.join(format!("unmanaged-volume-{id}"));
    assert!(std::fs::read(&kept)
        .unwrap()
        .starts_with(b"data from before"));
    let usage = admin(
        &app,
        Method::GET,
        "/v3/p1/os-quota-sets/p1?usage=true",
        None,
    )
    .await;
    assert_eq!(
        usage.json["quota_set"]["gigabytes"]["in_use"], 0,
        "{}",
        usage.text
    );

    // Managed again under the name it was left with (3.8+ path).
    let body = manage_body(&host, &format!("unmanaged-volume-{id}"));
    let back = admin(&app, Method::POST, "/v3/p1/manageable_volumes", Some(body)).await;
    assert_eq!(back.status, 202, "{}", back.text);
    let back_id = str_of(&back.json["volume"], "id");
    assert!(std::fs::read(app.volume_file(&back_id))
        .unwrap()
        .starts_with(b"data from before"));
    app.assert_consistent(&back_id).await;
}

async fn refusals_use_cinders_words(app: TestApp) {
    let host = backend_host(&app).await;
    let manage = |body: Value| {
        let app = &app;
        async move { admin(app, Method::POST, "/v3/p1/os-volume-manage", Some(body)).await }
    };
    let missing = manage(manage_body(&host, "no-such-file")).await;
    missing.assert_fault(
        400,
        "badRequest",
        "invalid backend reference {'source-name': 'no-such-file'}",
    );
    let escape = manage(manage_body(&host, "../etc")).await;
    assert_eq!(escape.status, 400, "{}", escape.text);
    let no_host = manage(json!({"volume": {"ref": {"source-name": "x"}}})).await;
    no_host.assert_fault(400, "badRequest", "Host field is missing.");
    let unknown = manage(manage_body("elsewhere@file#file", "x")).await;
    unknown.assert_fault(400, "badRequest", "Host 'elsewhere@file#file' not found");
    let by_id = manage(json!({"volume": {"host": host, "ref": {"source-id": "1"}}})).await;
    by_id.assert_fault(
        400,
        "badRequest",
        "Reference must contain source-name element.",
    );
    std::fs::write(app.volumes_dir.join("other.img"), b"x").unwrap();
    let typed = json!({"volume": {"host": host, "ref": {"source-name": "other.img"}, "volume_type": "nope"}});
    manage(typed).await.assert_fault(
        400,
        "badRequest",
        "Cannot find requested 'nope' volume type",
    );
    let member = call_as(
        &app,
        MEMBER_P1,
        V,
        Method::POST,
        "/v3/p1/os-volume-manage",
        Some(manage_body(&host, "other.img")),
    )
    .await;
    assert_eq!(member.status, 403, "{}", member.text);
    let old = call_as(
        &app,
        ADMIN_TOKEN,
        "3.7",
        Method::GET,
        &format!(
            "/v3/p1/manageable_volumes?host={}",
            host.replace('#', "%23")
        ),
        None,
    )
    .await;
    assert_eq!(old.status, 404, "{}", old.text);
    let sorted = admin(
        &app,
        Method::GET,
        &format!(
            "/v3/p1/manageable_volumes?host={}&sort_key=name",
            host.replace('#', "%23")
        ),
        None,
    )
    .await;
    sorted.assert_fault(400, "badRequest", "Invalid sort keys passed: name");
    assert!(
        app.volumes_dir.join("other.img").exists(),
        "nothing was taken"
    );
}

backend_tests!(storage_is_managed_and_unmanaged, refusals_use_cinders_words);

//! Volumes: create through a backend, views per microversion, listing,
//! delete rules.

use axum::http::Method;
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::TestApp;

async fn create_runs_through_the_backend(app: TestApp) {
    let volume = app
        .create_volume(json!({"size": 2, "name": " v1 ", "metadata": {"k": "v"}}))
        .await;
    let id = str_of(&volume, "id");
    assert_eq!(volume["status"], "available");
    assert_eq!(volume["name"], "v1", "surrounding white space is removed");
    assert_eq!(volume["size"], 2);
    assert_eq!(volume["volume_type"], "__DEFAULT__");
    assert_eq!(volume["multiattach"], false);
    assert_eq!(volume["metadata"], json!({"k": "v"}));
    assert_eq!(volume["bootable"], "false");
    // The os-vol-* extension attributes come with show and list, not with create.
    assert!(volume.get("os-vol-host-attr:host").is_none(), "{volume}");
    assert_eq!(
        app.show_volume(&id, "3.0").await.json["volume"]["os-vol-host-attr:host"],
        "test-host@file#file"
    );
    let file = app.volume_file(&id);
    assert_eq!(
        std::fs::metadata(&file).expect("volume file").len(),
        2 * 1024 * 1024 * 1024
    );

    let delete = app
        .request(Method::DELETE, &format!("/v3/p1/volumes/{id}"))
        .send()
        .await;
    assert_eq!(delete.status, 202, "{}", delete.text);
    assert!(delete.text.is_empty());
    assert!(!file.exists(), "deleting removes the data");
    app.show_volume(&id, "3.0").await.assert_fault(
        404,
        "itemNotFound",
        &format!("Volume {id} could not be found."),
    );
    assert_eq!(
        app.stored_status(&id).await,
        ["deleted"],
        "the row is kept, soft-deleted"
    );
}

async fn multiattach_comes_from_the_type(app: TestApp) {
    app.create_multiattach_type("ma").await;
    let volume = app
        .create_volume(json!({"size": 1, "volume_type": "ma"}))
        .await;
    assert_eq!(volume["multiattach"], true);
    assert_eq!(volume["volume_type"], "ma");
    // Only the exact spelling counts.
    app.create_type("loose", json!({"multiattach": "<is> true"}))
        .await;
    let loose = app
        .create_volume(json!({"size": 1, "volume_type": "loose"}))
        .await;
    assert_eq!(loose["multiattach"], false);
}

async fn the_multiattach_parameter_is_gone(app: TestApp) {
    let refused = app
        .post_volume(json!({"size": 1, "multiattach": true}), "3.71")
        .await;
    refused.assert_fault(400, "badRequest", "multiattach parameter has been removed");
    let accepted = app
        .post_volume(json!({"size": 1, "multiattach": false}), "3.71")
        .await;
    assert_eq!(accepted.status, 202);
    assert_eq!(accepted.json["volume"]["multiattach"], false);
    let count = app
        .db
        .column("select cast(count(*) as text) from volumes")
        .await;
    assert_eq!(count, ["1"], "the refused create wrote nothing");
}

async fn multiattach_policy_guards_creation(app: TestApp) {
    app.create_multiattach_type("ma").await;
    let app = app.with_rule("volume:multiattach", "role:admin");
    let member = app
        .request(Method::POST, "/v3/p1/volumes")
        .token(MEMBER_P1)
        .version("3.71")
        .json(&json!({"volume": {"size": 1, "volume_type": "ma"}}))
        .send()
        .await;
    member.assert_fault(
        403,
        "forbidden",
        "Policy doesn't allow volume:multiattach to be performed.",
    );
    let plain = app
        .request(Method::POST, "/v3/p1/volumes")
        .token(MEMBER_P1)
        .version("3.71")
        .json(&json!({"volume": {"size": 1}}))
        .send()
        .await;
    assert_eq!(plain.status, 202, "a member still creates ordinary volumes");
    app.create_volume(json!({"size": 1, "volume_type": "ma"}))
        .await;
}

async fn no_backend_for_multiattach_leaves_an_error_volume(app: TestApp) {
    let dir = app.volumes_dir.join("single");
    let spec = format!("single=file,dir={},multiattach=false", dir.display());
    let app = app.with_backends(&[spec.as_str()]).await;
    app.create_multiattach_type("ma").await;
    // Cinder's scheduler finds no backend with the capability: the volume is recorded in
    // `error`, on no host, with the scheduler's user message.
    let response = app
        .post_volume(json!({"size": 1, "volume_type": "ma"}), "3.71")
        .await;
    assert_eq!(response.status, 202, "{}", response.text);
    let id = str_of(&response.json["volume"], "id");
    assert_eq!(response.json["volume"]["status"], "error");
    let shown = app.show_volume(&id, "3.71").await;
    assert_eq!(shown.json["volume"]["os-vol-host-attr:host"], Value::Null);
    let message = app.message_about(&id).await;
    assert_eq!(message["event_id"], "VOLUME_VOLUME_001_003");
    assert_eq!(
        message["user_message"],
        "schedule allocate volume: Could not find any available weighted backend."
    );
    assert!(
        !dir.join(format!("volume-{id}")).exists(),
        "no storage was made"
    );
    // Ordinary volumes still go there.
    app.create_volume(json!({"size": 1})).await;
}

async fn backend_failure_leaves_an_error_volume_and_a_message(app: TestApp) {
    let not_a_dir = app.volumes_dir.join("plain-file");
    std::fs::create_dir_all(&app.volumes_dir).unwrap();
    std::fs::write(&not_a_dir, b"x").unwrap();
    let spec = format!("broken=file,dir={}", not_a_dir.display());
    let app = app.with_backends(&[spec.as_str()]).await;
    let response = app
        .post_volume(json!({"size": 1, "name": "doomed"}), "3.71")
        .await;
    assert_eq!(response.status, 202, "{}", response.text);
    let id = str_of(&response.json["volume"], "id");
    assert_eq!(response.json["volume"]["status"], "error");
    let messages = app.get("/v3/p1/messages").version("3.3").send().await;
    assert_eq!(messages.status, 200, "{}", messages.text);
    let found = &messages.json["messages"][0];
    assert_eq!(found["resource_uuid"], id);
    assert_eq!(found["resource_type"], "VOLUME");
    assert_eq!(found["event_id"], "VOLUME_VOLUME_008_012");
    // Cinder's fixed words: the backend's own (a path here) go to the log only.
    assert_eq!(
        found["user_message"],
        "create volume from backend storage: Driver failed to create the volume."
    );
    // Cinder's message rules: readers read, members delete, a caller without either
    // role does neither.
    let message = str_of(found, "id");
    let path = format!("/v3/p1/messages/{message}");
    let as_caller = |token: &'static str, method: Method, path: &str| {
        app.request(method, path).token(token).version("3.3").send()
    };
    for (method, path, rule) in [
        (Method::GET, "/v3/p1/messages", "message:get_all"),
        (Method::GET, path.as_str(), "message:get"),
        (Method::DELETE, path.as_str(), "message:delete"),
    ] {
        as_caller("guest:p1:observer", method, path)
            .await
            .assert_fault(
                403,
                "forbidden",
                &format!("Policy doesn't allow {rule} to be performed."),
            );
    }
    let read = as_caller(READER_P1, Method::GET, &path).await;
    assert_eq!(read.status, 200, "{}", read.text);
    as_caller(READER_P1, Method::DELETE, &path)
        .await
        .assert_fault(403, "forbidden", "message:delete");
    let deleted = as_caller(MEMBER_P1, Method::DELETE, &path).await;
    assert_eq!(deleted.status, 204, "{}", deleted.text);
    // The error volume can be deleted; nothing is left behind.
    let delete = app
        .request(Method::DELETE, &format!("/v3/p1/volumes/{id}"))
        .send()
        .await;
    assert_eq!(delete.status, 202, "{}", delete.text);
    let live = app
        .db
        .column("select cast(count(*) as text) from volumes where deleted = false")
        .await;
    assert_eq!(live, ["0"]);
    let live_meta = app
        .db
        .column("select cast(count(*) as text) from volume_metadata where deleted = false")
        .await;
    assert_eq!(live_meta, ["0"]);
}

async fn size_and_type_validation(app: TestApp) {
    app.post_volume(json!({}), "3.71").await.assert_fault(
        400,
        "badRequest",
        "Volume size 'None' must be an integer and greater than 0",
    );
    app.post_volume(json!({"size": 0}), "3.71")
        .await
        .assert_fault(400, "badRequest", "0 is less than the minimum of 1");
    app.post_volume(json!({"size": "x"}), "3.71")
        .await
        .assert_fault(400, "badRequest", "does not match");
    app.post_volume(json!({"size": 1, "volume_type": "nope"}), "3.71")
        .await
        .assert_fault(
            404,
            "itemNotFound",
            "Volume type with name nope could not be found.",
        );
    let unknown_id = "8c4a7f38-0000-4000-8000-000000000000";
    app.post_volume(json!({"size": 1, "volume_type": unknown_id}), "3.71")
        .await
        .assert_fault(
            404,
            "itemNotFound",
            &format!("Volume type {unknown_id} could not be found."),
        );
    let by_string = app.post_volume(json!({"size": "3"}), "3.71").await;
    assert_eq!(by_string.json["volume"]["size"], 3);
    let no_body = app
        .request(Method::POST, "/v3/p1/volumes")
        .version("3.71")
        .send()
        .await;
    no_body.assert_fault(400, "badRequest", "Malformed request body");
    // Sources: missing ones are 404 as in Cinder; a clone is at least its source's size.
    app.post_volume(
        json!({"size": 1, "snapshot_id": "8c4a7f38-0000-4000-8000-000000000000"}),
        "3.71",
    )
    .await
    .assert_fault(
        404,
        "itemNotFound",
        "Snapshot 8c4a7f38-0000-4000-8000-000000000000 could not be found.",
    );
    app.post_volume(
        json!({"size": 1, "source_volid": "8c4a7f38-0000-4000-8000-000000000000"}),
        "3.71",
    )
    .await
    .assert_fault(
        404,
        "itemNotFound",
        "Volume 8c4a7f38-0000-4000-8000-000000000000 could not be found.",
    );
    let source = by_string.json["volume"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    app.post_volume(json!({"size": 1, "source_volid": source}), "3.71")
        .await
        .assert_fault(
            400,
            "badRequest",
            "Volume size '1'GB cannot be smaller than original volume size  3GB.",
        );
    // A volume's id is no backup's (volumes from backups: tests/it/api/backups.rs).
    app.post_volume(json!({"size": 1, "backup_id": source}), "3.71")
        .await
        .assert_fault(
            404,
            "itemNotFound",
            &format!("Backup {source} could not be found."),
        );
}

async fn strictness_starts_at_3_53(app: TestApp) {
    let lenient = app.post_volume(json!({"size": 1, "foo": 1}), "3.52").await;
    assert_eq!(lenient.status, 202, "{}", lenient.text);
    let strict = app.post_volume(json!({"size": 1, "foo": 1}), "3.53").await;
    strict.assert_fault(
        400,
        "badRequest",
        "Additional properties are not allowed ('foo' was unexpected)",
    );
}

async fn token_project_owns_the_volume(app: TestApp) {
    let response = app
        .request(Method::POST, "/v3/abcd/volumes")
        .token("abcd")
        .json(&json!({"volume": {"size": 1}}))
        .send()
        .await;
    assert_eq!(response.status, 202, "{}", response.text);
    assert_eq!(response.json["volume"]["user_id"], "abcd");
    let id = str_of(&response.json["volume"], "id");
    let shown = app
        .get(&format!("/v3/abcd/volumes/{id}"))
        .token("abcd")
        .send()
        .await;
    assert_eq!(shown.json["volume"]["os-vol-tenant-attr:tenant_id"], "abcd");
}

async fn view_fields_follow_the_microversion(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let old = app.show_volume(&id, "3.47").await.json["volume"].clone();
    assert!(old.get("shared_targets").is_none() && old.get("service_uuid").is_none());
    assert!(old.get("volume_type_id").is_none());
    assert!(old.get("group_id").is_some(), "3.13+");
    let new = app.show_volume(&id, "3.48").await.json["volume"].clone();
    assert_eq!(new["shared_targets"], false);
    assert!(new["service_uuid"].as_str().is_some());
    app.db
        .execute(&format!(
            "update volumes set shared_targets = null where id = '{id}'"
        ))
        .await
        .unwrap();
    assert_eq!(
        app.show_volume(&id, "3.68").await.json["volume"]["shared_targets"],
        true
    );
    assert_eq!(
        app.show_volume(&id, "3.69").await.json["volume"]["shared_targets"],
        Value::Null
    );
    let latest = app.show_volume(&id, "3.71").await.json["volume"].clone();
    assert_eq!(latest["volume_type"], "__DEFAULT__");
    assert!(latest["volume_type_id"].as_str().is_some());
    assert_eq!(latest["consumes_quota"], true);
    let created = str_of(&latest, "created_at");
    assert!(
        created.len() == 26 && created.as_bytes()[19] == b'.' && !created.ends_with('Z'),
        "{created}"
    );
}

async fn admin_only_fields(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    app.attach_directly(
        &id,
        "a1111111-1111-4111-8111-111111111111",
        "c1111111-1111-4111-8111-111111111111",
    )
    .await;
    let admin = app.show_volume(&id, "3.71").await.json["volume"].clone();
    assert!(admin.get("migration_status").is_some());
    assert_eq!(admin["os-vol-host-attr:host"], "test-host@file#file");
    assert_eq!(admin["attachments"][0]["host_name"], "cmp-1");
    assert_eq!(
        admin["attachments"][0]["id"], id,
        "Cinder's element id is the volume id"
    );
    assert_eq!(
        admin["attachments"][0]["server_id"],
        "c1111111-1111-4111-8111-111111111111"
    );
    assert_eq!(admin["attachments"][0]["device"], "/dev/vdb");
    let member = app
        .get(&format!("/v3/p1/volumes/{id}"))
        .token(MEMBER_P1)
        .version("3.71")
        .send()
        .await;
    assert_eq!(member.status, 200, "{}", member.text);
    let member = &member.json["volume"];
    assert!(member.get("migration_status").is_none());
    assert!(member.get("os-vol-host-attr:host").is_none());
    assert_eq!(member["attachments"][0]["host_name"], Value::Null);
    assert_eq!(member["os-vol-tenant-attr:tenant_id"], "p1");
}

async fn other_projects_volumes_do_not_exist(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let stranger = app
        .get(&format!("/v3/p2/volumes/{id}"))
        .token(MEMBER_P2)
        .version("3.71")
        .send()
        .await;
    stranger.assert_fault(
        404,
        "itemNotFound",
        &format!("Volume {id} could not be found."),
    );
    let listed = app.get("/v3/p2/volumes").token(MEMBER_P2).send().await;
    assert_eq!(listed.json["volumes"], json!([]));
    let delete = app
        .request(Method::DELETE, &format!("/v3/p2/volumes/{id}"))
        .token(MEMBER_P2)
        .send()
        .await;
    assert_eq!(delete.status, 404);
    let reader = app
        .request(Method::DELETE, &format!("/v3/p1/volumes/{id}"))
        .token(READER_P1)
        .send()
        .await;
    reader.assert_fault(403, "forbidden", "volume:delete");
}

async fn delete_refuses_busy_volumes(app: TestApp) {
    let reserved = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    app.db
        .execute(&format!(
            "update volumes set status = 'reserved' where id = '{reserved}'"
        ))
        .await
        .unwrap();
    let refusal = "Volume status must be available or error or error_restoring or error_extending or error_managing and must not be migrating, attached";
    app.request(Method::DELETE, &format!("/v3/p1/volumes/{reserved}"))
        .send()
        .await
        .assert_fault(400, "badRequest", refusal);
    let in_use = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    app.attach_directly(
        &in_use,
        "a2222222-2222-4222-8222-222222222222",
        "c2222222-2222-4222-8222-222222222222",
    )
    .await;
    app.request(Method::DELETE, &format!("/v3/p1/volumes/{in_use}"))
        .send()
        .await
        .assert_fault(400, "badRequest", refusal);
    // Force never takes an attached volume.
    app.request(
        Method::DELETE,
        &format!("/v3/p1/volumes/{in_use}?force=true"),
    )
    .version("3.23")
    .send()
    .await
    .assert_fault(
        400,
        "badRequest",
        "Invalid volume: Volume  must not be migrating, attached",
    );
    assert_eq!(app.stored_status(&in_use).await, ["in-use"]);
    assert!(app.volume_file(&in_use).exists());
}

async fn force_delete_takes_a_reserved_volume(app: TestApp) {
    let id = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    app.db
        .execute(&format!(
            "update volumes set status = 'reserved' where id = '{id}';
             insert into volume_attachment (id, volume_id, instance_uuid, attach_status, attach_mode, created_at, deleted)
             values ('a3333333-3333-4333-8333-333333333333', '{id}', 'c3333333-3333-4333-8333-333333333333',
                     'reserved', 'null', '2026-01-02T00:00:00+00:00', false);"
        ))
        .await
        .unwrap();
    // A member may not force; below 3.23 the flag is ignored and normal rules apply.
    app.request(Method::DELETE, &format!("/v3/p1/volumes/{id}?force=true"))
        .token(MEMBER_P1)
        .version("3.23")
        .send()
        .await
        .assert_fault(
            403,
            "forbidden",
            "Policy doesn't allow volume:force_delete to be performed.",
        );
    app.request(Method::DELETE, &format!("/v3/p1/volumes/{id}?force=true"))
        .token(MEMBER_P1)
        .version("3.22")
        .send()
        .await
        .assert_fault(400, "badRequest", "Volume status must be available");
    app.request(Method::DELETE, &format!("/v3/p1/volumes/{id}?force=maybe"))
        .version("3.23")
        .send()
        .await
        .assert_fault(
            400,
            "badRequest",
            "Value 'maybe' for 'force' is not a boolean.",
        );
    let forced = app
        .request(Method::DELETE, &format!("/v3/p1/volumes/{id}?force=true"))
        .version("3.23")
        .send()
        .await;
    assert_eq!(forced.status, 202, "{}", forced.text);
    assert_eq!(app.show_volume(&id, "3.23").await.status, 404);
    let attachment = app
        .db
        .column("select attach_status from volume_attachment where id = 'a3333333-3333-4333-8333-333333333333' and deleted = true")
        .await;
    assert_eq!(attachment, ["deleted"], "its attachment went with it");
    assert!(!app.volume_file(&id).exists());
}

async fn listing_pages_sorts_and_filters(app: TestApp) {
    let mut ids = Vec::new();
    for name in ["a", "b", "c"] {
        ids.push(str_of(
            &app.create_volume(json!({"size": 1, "name": name})).await,
            "id",
        ));
    }
    let all = app.get("/v3/p1/volumes").send().await;
    let names: Vec<&str> = all.json["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c", "b", "a"], "newest first");
    assert_eq!(
        all.json["volumes"][0].as_object().unwrap().len(),
        3,
        "summary: id, name, links"
    );
    assert!(all.json.get("volumes_links").is_none());

    let page = app
        .get("/v3/p1/volumes/detail?limit=2&sort=name:asc")
        .send()
        .await;
    let names: Vec<&str> = page.json["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"]);
    let next = str_of(&page.json["volumes_links"][0], "href");
    assert!(next.contains(&format!("marker={}", ids[1])), "{next}");
    let rest = app
        .get(&format!(
            "/v3/p1/volumes/detail?limit=2&sort=name:asc&marker={}",
            ids[1]
        ))
        .send()
        .await;
    let names: Vec<&str> = rest.json["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c"]);

    let named = app.get("/v3/p1/volumes?name=b").send().await;
    assert_eq!(named.json["volumes"].as_array().unwrap().len(), 1);
    let counted = app
        .get("/v3/p1/volumes?with_count=true&limit=1")
        .version("3.45")
        .send()
        .await;
    assert_eq!(counted.json["count"], 3);
    app.get("/v3/p1/volumes?limit=abc")
        .send()
        .await
        .assert_fault(400, "badRequest", "limit param must be an integer");
    app.get("/v3/p1/volumes?sort=bogus")
        .send()
        .await
        .assert_fault(400, "badRequest", "Invalid sort key");
    app.get("/v3/p1/volumes?marker=8c4a7f38-0000-4000-8000-000000000000")
        .send()
        .await
        .assert_fault(404, "itemNotFound", "Marker");
    // Filters a user may not use: 400 from 3.31, ignored before.
    let strict = app
        .get("/v3/p1/volumes?foo=bar")
        .token(MEMBER_P1)
        .version("3.31")
        .send()
        .await;
    strict.assert_fault(
        400,
        "badRequest",
        "Invalid filters foo are found in query options.",
    );
    let lenient = app
        .get("/v3/p1/volumes?foo=bar")
        .token(MEMBER_P1)
        .version("3.30")
        .send()
        .await;
    assert_eq!(lenient.json["volumes"].as_array().unwrap().len(), 3);
}

fn names_of(listed: &crate::support::TestResponse) -> Vec<String> {
    let mut names: Vec<String> = listed.json["volumes"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", listed.text))
        .iter()
        .map(|v| str_of(v, "name"))
        .collect();
    names.sort();
    names
}

/// `created_at`/`updated_at` comparisons (3.60, any one admits a volume, as in Cinder)
/// and `migration_status`.
async fn time_and_migration_filters(app: TestApp) {
    for (name, created) in [
        ("old", "2024-01-01T00:00:00+00:00"),
        ("mid", "2024-06-01T00:00:00+00:00"),
    ] {
        let id = str_of(
            &app.create_volume(json!({"size": 1, "name": name})).await,
            "id",
        );
        app.db
            .execute(&format!(
                "update volumes set created_at = '{created}', updated_at = '{created}', \
                 migration_status = 'success' where id = '{id}'"
            ))
            .await
            .unwrap();
    }
    app.create_volume(json!({"size": 1, "name": "new"})).await;
    let list = |query: &str, version: &str| {
        app.get(&format!("/v3/p1/volumes?{query}"))
            .token(MEMBER_P1)
            .version(version)
            .send()
    };
    let after = list("created_at=gt%3A2024-03-01T00%3A00%3A00", "3.60").await;
    assert_eq!(names_of(&after), ["mid", "new"]);
    let either = list("created_at=lt%3A2024-03-01%2Cgt%3A2025-01-01", "3.60").await;
    assert_eq!(names_of(&either), ["new", "old"]);
    let exact = list("updated_at=eq%3A2024-06-01T00%3A00%3A00Z", "3.60").await;
    assert_eq!(names_of(&exact), ["mid"]);
    // Before 3.60 Cinder drops the filter.
    let early = list("created_at=gt%3A2024-03-01T00%3A00%3A00", "3.59").await;
    assert_eq!(names_of(&early), ["mid", "new", "old"]);
    list("created_at=after%3A2024-03-01", "3.60")
        .await
        .assert_fault(400, "badRequest", "Invalid after operator");
    list("created_at=gt%3Asoon", "3.60").await.assert_fault(
        400,
        "badRequest",
        "Invalid soon value",
    );
    let migrated = list("migration_status=success", "3.60").await;
    assert_eq!(names_of(&migrated), ["mid", "old"]);
}

backend_tests!(
    time_and_migration_filters,
    create_runs_through_the_backend,
    multiattach_comes_from_the_type,
    the_multiattach_parameter_is_gone,
    multiattach_policy_guards_creation,
    no_backend_for_multiattach_leaves_an_error_volume,
    backend_failure_leaves_an_error_volume_and_a_message,
    size_and_type_validation,
    strictness_starts_at_3_53,
    token_project_owns_the_volume,
    view_fields_follow_the_microversion,
    admin_only_fields,
    other_projects_volumes_do_not_exist,
    delete_refuses_busy_volumes,
    force_delete_takes_a_reserved_volume,
    listing_pages_sorts_and_filters,
);

//! Volume type encryption (`/types/{id}/encryption`) with Cinder's rules, what a host
//! reads before it attaches (`/volumes/{id}/encryption`), and volumes of encrypted types:
//! a key id from the key manager, never multi-attach, the type frozen while they live.

use axum::http::Method;
use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::TestApp;
use cinder_attach::keys::KeyManager;
use cinder_attach::service::Settings;

const LUKS: &str = r#"{"encryption": {"provider": "luks", "control_location": "front-end",
                        "cipher": "aes-xts-plain64", "key_size": "256"}}"#;

pub(crate) fn luks() -> Value {
    serde_json::from_str(LUKS).unwrap()
}

fn with_fixed_key(app: TestApp) -> TestApp {
    app.with_settings(Settings {
        key_manager: KeyManager::fixed("00").unwrap(),
        ..Settings::default()
    })
}

async fn an_encryption_type_is_made_shown_changed_and_removed(app: TestApp) {
    let id = app.create_type("secret", json!({})).await;
    let path = format!("/v3/p1/types/{id}/encryption");
    let none = app.send_json(Method::GET, &path, None).await;
    assert_eq!((none.status.as_u16(), none.json.clone()), (200, json!({})));

    let created = app.send_json(Method::POST, &path, Some(luks())).await;
    assert_eq!(created.status, 200, "{}", created.text);
    let mut echoed = luks();
    echoed["encryption"]["key_size"] = json!(256);
    echoed["encryption"]["volume_type_id"] = json!(id);
    echoed["encryption"]["encryption_id"] = created.json["encryption"]["encryption_id"].clone();
    assert_eq!(
        created.json, echoed,
        "the body comes back, key_size an integer, with the ids"
    );
    app.send_json(Method::POST, &path, Some(luks()))
        .await
        .assert_fault(
            400,
            "badRequest",
            &format!("Volume type encryption for type {id} already exists."),
        );

    let shown = app.send_json(Method::GET, &path, None).await;
    assert_eq!(shown.status, 200);
    let row = &shown.json;
    assert_eq!(row["volume_type_id"], json!(id));
    assert_eq!(row["provider"], "luks");
    assert_eq!(row["control_location"], "front-end");
    assert_eq!(row["cipher"], "aes-xts-plain64");
    assert_eq!(row["key_size"], 256);
    assert_eq!(row["deleted"], false);
    assert_eq!(row["deleted_at"], Value::Null);
    assert!(
        row["created_at"].is_string() && row["updated_at"].is_null(),
        "{row}"
    );
    let encryption_id = str_of(row, "encryption_id");
    assert_eq!(
        created.json["encryption"]["encryption_id"],
        json!(encryption_id)
    );
    let cipher = app
        .send_json(Method::GET, &format!("{path}/cipher"), None)
        .await;
    assert_eq!(cipher.json, json!({"cipher": "aes-xts-plain64"}));
    app.send_json(Method::GET, &format!("{path}/nope"), None)
        .await
        .assert_fault(404, "itemNotFound", "does not exist");

    let item = format!("{path}/{encryption_id}");
    let changed = app
        .send_json(
            Method::PUT,
            &item,
            Some(json!({"encryption": {"key_size": 512}})),
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.text);
    assert_eq!(changed.json, json!({"encryption": {"key_size": 512}}));
    let shown = app.send_json(Method::GET, &path, None).await;
    assert_eq!(
        (
            shown.json["key_size"].clone(),
            shown.json["provider"].clone()
        ),
        (json!(512), json!("luks"))
    );
    assert!(shown.json["updated_at"].is_string());

    assert_eq!(app.send_json(Method::DELETE, &item, None).await.status, 202);
    assert_eq!(
        app.send_json(Method::GET, &path, None).await.json,
        json!({})
    );
    app.send_json(Method::DELETE, &item, None)
        .await
        .assert_fault(
            404,
            "itemNotFound",
            &format!("Volume type encryption for type {id} does not exist."),
        );
    app.send_json(
        Method::PUT,
        &item,
        Some(json!({"encryption": {"key_size": 128}})),
    )
    .await
    .assert_fault(404, "itemNotFound", "does not exist");
}

async fn bad_encryption_bodies_are_refused(app: TestApp) {
    let id = app.create_type("secret", json!({})).await;
    let path = format!("/v3/p1/types/{id}/encryption");
    for (body, phrase) in [
        (
            json!({"encryption": {"control_location": "front-end"}}),
            "provider",
        ),
        (
            json!({"encryption": {"provider": "luks"}}),
            "control_location",
        ),
        (
            json!({"encryption": {"provider": "luks", "control_location": "middle"}}),
            "middle",
        ),
        (
            json!({"encryption": {"provider": "luks", "control_location": "front-end", "key_size": "big"}}),
            "key_size must be an integer.",
        ),
        (
            json!({"encryption": {"provider": "luks", "control_location": "front-end", "key_size": -1}}),
            "key_size",
        ),
        (
            json!({"encryption": {"provider": "luks", "control_location": "front-end"}, "extra": 1}),
            "extra",
        ),
        (json!({"provider": "luks"}), "encryption"),
    ] {
        app.send_json(Method::POST, &path, Some(body.clone()))
            .await
            .assert_fault(400, "badRequest", phrase);
    }
    assert_eq!(
        app.send_json(Method::GET, &path, None).await.json,
        json!({}),
        "nothing written"
    );
    app.send_json(
        Method::POST,
        "/v3/p1/types/00000000-0000-0000-0000-00000000dead/encryption",
        Some(luks()),
    )
    .await
    .assert_fault(404, "itemNotFound", "");
    // Admin only.
    let refused = app
        .request(Method::GET, &path)
        .token(MEMBER_P1)
        .send()
        .await;
    assert_eq!(refused.status, 403, "{}", refused.text);
}

/// A volume of an encrypted type gets the key manager's key id and shows `encrypted`;
/// its host reads the encryption, and the attachment says it; while it lives the type's
/// encryption is frozen; without a key manager no such volume can be made.
async fn volumes_of_an_encrypted_type(app: TestApp) {
    let id = app.create_type("secret", json!({})).await;
    let path = format!("/v3/p1/types/{id}/encryption");
    assert_eq!(
        app.send_json(Method::POST, &path, Some(luks()))
            .await
            .status,
        200
    );

    app.post_volume(json!({"size": 1, "volume_type": "secret"}), "3.71")
        .await
        .assert_fault(400, "badRequest", "no key manager is configured");

    let app = with_fixed_key(app);
    let volume = app
        .create_volume(json!({"size": 1, "volume_type": "secret"}))
        .await;
    let volume = str_of(&volume, "id");
    let shown = app.show_volume(&volume, "3.71").await;
    assert_eq!(shown.json["volume"]["encrypted"], true, "{}", shown.text);
    let metadata = app
        .get(&format!("/v3/p1/volumes/{volume}/encryption"))
        .token(MEMBER_P1)
        .send()
        .await;
    assert_eq!(
        metadata.json,
        json!({"encryption_key_id": "00000000-0000-0000-0000-000000000000",
               "control_location": "front-end", "cipher": "aes-xts-plain64",
               "key_size": 256, "provider": "luks"})
    );
    let provider = app
        .get(&format!("/v3/p1/volumes/{volume}/encryption/provider"))
        .send()
        .await;
    assert_eq!(
        (provider.status.as_u16(), provider.json.clone()),
        (200, json!("luks"))
    );
    let attached = app
        .post_attachment(
            json!({"volume_uuid": volume, "instance_uuid": I1, "connector": conn(), "mode": "rw"}),
            "3.54",
        )
        .await;
    assert_eq!(attached.status, 200, "{}", attached.text);
    assert_eq!(
        attached.json["attachment"]["connection_info"]["encrypted"],
        true
    );

    for (method, target, action) in [
        (Method::POST, path.clone(), "create"),
        (Method::PUT, format!("{path}/any"), "update"),
        (Method::DELETE, format!("{path}/any"), "delete"),
    ] {
        app.send_json(method, &target, Some(luks()))
            .await
            .assert_fault(
                400,
                "badRequest",
                &format!("Cannot {action} encryption specs. Volume type in use."),
            );
    }

    // A plain volume: its host reads only that it has no key.
    let plain = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let none = app
        .get(&format!("/v3/p1/volumes/{plain}/encryption"))
        .send()
        .await;
    assert_eq!(none.json, json!({"encryption_key_id": null}));
    // A retype may not change the encryption.
    app.volume_action(&plain, json!({"os-retype": {"new_type": "secret"}}))
        .await
        .assert_fault(
            400,
            "badRequest",
            "Retype cannot change encryption requirements.",
        );
    // Nor can an encrypted type be multi-attach.
    let both = app
        .create_type("secret-shared", json!({"multiattach": "<is> True"}))
        .await;
    let both_path = format!("/v3/p1/types/{both}/encryption");
    assert_eq!(
        app.send_json(Method::POST, &both_path, Some(luks()))
            .await
            .status,
        200
    );
    app.post_volume(json!({"size": 1, "volume_type": "secret-shared"}), "3.71")
        .await
        .assert_fault(
            400,
            "badRequest",
            "Multiattach cannot be used with encrypted volumes.",
        );
}

/// Cinder's transfer rules for an encrypted volume: refused below 3.70, and without its
/// snapshots at any version; at 3.70 the offer is made, and accepted, the key id kept
/// (the fixed key is every project's).
async fn encrypted_volumes_transfer_from_3_70_with_their_snapshots(app: TestApp) {
    let id = app.create_type("secret", json!({})).await;
    let path = format!("/v3/p1/types/{id}/encryption");
    let made = app.send_json(Method::POST, &path, Some(luks())).await;
    assert_eq!(made.status, 200, "{}", made.text);
    let app = with_fixed_key(app);
    let volume = app
        .create_volume(json!({"size": 1, "volume_type": "secret"}))
        .await;
    let volume = str_of(&volume, "id");
    let offer = |version: &'static str, no_snapshots: bool| {
        let body = json!({"transfer": {"volume_id": volume, "no_snapshots": no_snapshots}});
        app.request(Method::POST, "/v3/p1/volume-transfers")
            .version(version)
            .json(&body)
            .send()
    };
    offer("3.69", false).await.assert_fault(
        400,
        "badRequest",
        "Invalid volume: transferring encrypted volume is not supported",
    );
    offer("3.70", true).await.assert_fault(
        400,
        "badRequest",
        "transferring an encrypted volume without its snapshots is not supported",
    );
    let shown = app.show_volume(&volume, "3.71").await;
    assert_eq!(
        shown.json["volume"]["status"], "available",
        "nothing changed"
    );
    let offered = offer("3.70", false).await;
    assert_eq!(offered.status, 202, "{}", offered.text);
    let transfer = &offered.json["transfer"];
    let accept = json!({"accept": {"auth_key": transfer["auth_key"]}});
    let accepted = app
        .request(
            Method::POST,
            &format!("/v3/p2/volume-transfers/{}/accept", str_of(transfer, "id")),
        )
        .token(MEMBER_P2)
        .version("3.70")
        .json(&accept)
        .send()
        .await;
    assert_eq!(accepted.status, 202, "{}", accepted.text);
    let key = app
        .get(&format!("/v3/p2/volumes/{volume}/encryption"))
        .token(MEMBER_P2)
        .send()
        .await;
    assert_eq!(
        key.json["encryption_key_id"],
        "00000000-0000-0000-0000-000000000000"
    );
}

/// Volume creates of a type race an encryption being added to it (real parallel
/// requests): whatever wins, no live volume of an encrypted type is without a key.
async fn creates_racing_an_encryption_never_leave_a_volume_without_its_key(app: TestApp) {
    let app = with_fixed_key(app);
    let id = app.create_type("raced", json!({})).await;
    let path = format!("/v3/p1/types/{id}/encryption");
    let mut requests: Vec<Pending> = vec![Box::pin(
        app.request(Method::POST, &path).json(&luks()).send(),
    )];
    for _ in 0..6 {
        requests.push(Box::pin(
            app.request(Method::POST, "/v3/p1/volumes")
                .version("3.71")
                .json(&json!({"volume": {"size": 1, "volume_type": "raced"}}))
                .send(),
        ));
    }
    let mut answers = all_at_once(requests).await;
    let created = answers.split_off(1);
    let encrypted = answers.remove(0);
    for answer in &created {
        assert!(
            [202, 409].contains(&answer.status.as_u16()),
            "{}",
            answer.text
        );
    }
    let listed = app
        .get("/v3/p1/volumes/detail")
        .version("3.71")
        .send()
        .await;
    let of_type: Vec<&Value> = listed.json["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["volume_type"] == "raced")
        .collect();
    if encrypted.status == 200 {
        for volume in &of_type {
            assert_eq!(volume["encrypted"], true, "{volume}");
        }
    } else {
        encrypted.assert_fault(400, "badRequest", "Volume type in use.");
        assert!(!of_type.is_empty());
    }
}

/// An encryption change in flight on type `type_id` (PostgreSQL): the type's row held for
/// update and its encryption added, not yet committed (`commit` on the connection ends it).
async fn encryption_in_flight(app: &TestApp, type_id: &str) -> sqlx::PgConnection {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&app.db.url)
        .await
        .expect("connect");
    sqlx::raw_sql(&format!(
        "begin; select id from volume_types where id = '{type_id}' for update; \
         insert into encryption (encryption_id, volume_type_id, provider, control_location, \
                                 created_at, deleted) \
         values (gen_random_uuid(), '{type_id}', 'luks', 'front-end', now(), false)"
    ))
    .execute(&mut conn)
    .await
    .expect("change in flight");
    conn
}

/// The lock protocol behind that, made to wait on purpose (PostgreSQL; SQLite's writes
/// take turns anyway): a volume create in flight holds its type's row shared, so an
/// encryption change waits for it; an encryption change in flight holds the row for
/// update, so a create waits for it.
async fn creates_and_encryption_changes_wait_for_each_other(app: TestApp) {
    use sqlx::Connection;
    if app.db.backend != crate::support::Backend::Postgres {
        return;
    }
    let app = with_fixed_key(app);
    let id = app.create_type("locked", json!({})).await;
    let path = format!("/v3/p1/types/{id}/encryption");
    let hold = |lock: &'static str| {
        let (url, id) = (app.db.url.clone(), id.clone());
        async move {
            let mut conn = sqlx::PgConnection::connect(&url).await.expect("connect");
            sqlx::raw_sql(&format!(
                "begin; select id from volume_types where id = '{id}' {lock}"
            ))
            .execute(&mut conn)
            .await
            .expect("lock");
            conn
        }
    };
    // The request, spawned and seen still waiting; its handle is awaited once released.
    #[allow(clippy::async_yields_async)]
    let waits = |request: Pending| async move {
        let mut task = tokio::spawn(request);
        let early = tokio::time::timeout(std::time::Duration::from_millis(400), &mut task).await;
        assert!(
            early.is_err(),
            "answered while the row was held: {:?}",
            early.map(|r| r.map(|r| r.text))
        );
        task
    };

    // A create in flight: the encryption change waits, then goes through.
    let create_in_flight = hold("for share").await;
    let change = waits(Box::pin(
        app.request(Method::POST, &path).json(&luks()).send(),
    ))
    .await;
    create_in_flight.close().await.expect("released");
    assert_eq!(change.await.expect("answered").status, 200);

    // An encryption change in flight (the row held for update, encryption added and not
    // yet committed): a create that read the type as plain waits, then finds the type
    // encrypted after all and is refused; no plain volume of an encrypted type is left.
    let plain = app.create_type("turning", json!({})).await;
    let mut change_in_flight = encryption_in_flight(&app, &plain).await;
    let create = waits(Box::pin(
        app.request(Method::POST, "/v3/p1/volumes")
            .version("3.71")
            .json(&json!({"volume": {"size": 1, "volume_type": "turning"}}))
            .send(),
    ))
    .await;
    sqlx::raw_sql("commit")
        .execute(&mut change_in_flight)
        .await
        .expect("committed");
    let created = create.await.expect("answered");
    created.assert_fault(409, "conflictingRequest", "encryption changed");
    let listed = app
        .get("/v3/p1/volumes/detail")
        .version("3.71")
        .send()
        .await;
    assert!(
        !listed.json["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["volume_type"] == "turning"),
        "{}",
        listed.text
    );

    // The same for a retype into a type whose encryption is being added.
    let plain_volume = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let target = app.create_type("turning-too", json!({})).await;
    let mut change_in_flight = encryption_in_flight(&app, &target).await;
    let retype = waits(Box::pin(
        app.request(
            Method::POST,
            &format!("/v3/p1/volumes/{plain_volume}/action"),
        )
        .json(&json!({"os-retype": {"new_type": "turning-too"}}))
        .send(),
    ))
    .await;
    sqlx::raw_sql("commit")
        .execute(&mut change_in_flight)
        .await
        .expect("committed");
    retype.await.expect("answered").assert_fault(
        400,
        "badRequest",
        "Retype cannot change encryption requirements.",
    );
    let shown = app.show_volume(&plain_volume, "3.71").await;
    assert_eq!(shown.json["volume"]["volume_type"], "__DEFAULT__");
}

backend_tests!(
    an_encryption_type_is_made_shown_changed_and_removed,
    bad_encryption_bodies_are_refused,
    volumes_of_an_encrypted_type,
    encrypted_volumes_transfer_from_3_70_with_their_snapshots,
    creates_racing_an_encryption_never_leave_a_volume_without_its_key,
    creates_and_encryption_changes_wait_for_each_other,
);

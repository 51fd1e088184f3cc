//! A volume's image metadata (Cinder's volume_image_metadata extension): set, shown on
//! the volume and by `os-show_image_metadata`, removed key by key, with Cinder's
//! policies, status rule and answers.

use serde_json::{json, Value};

use crate::support::helpers::*;
use crate::support::TestApp;

fn set(metadata: Value) -> Value {
    json!({"os-set_image_metadata": {"metadata": metadata}})
}

async fn image_metadata_is_set_shown_and_unset(app: TestApp) {
    let v = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let shown = app.show_volume(&v, "3.71").await;
    assert!(
        shown.json["volume"].get("volume_image_metadata").is_none(),
        "none yet: {}",
        shown.text
    );

    let first = app
        .volume_action(&v, set(json!({"image_id": "abc", "min_ram": "512"})))
        .await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(
        first.json,
        json!({"metadata": {"image_id": "abc", "min_ram": "512"}})
    );
    // A second set merges, as Cinder's does.
    let second = app
        .volume_action(&v, set(json!({"min_ram": "1024", "os_distro": "debian"})))
        .await;
    let all = json!({"image_id": "abc", "min_ram": "1024", "os_distro": "debian"});
    assert_eq!(second.json, json!({"metadata": all}));
    let listed = app
        .volume_action(&v, json!({"os-show_image_metadata": null}))
        .await;
    assert_eq!(
        (listed.status.as_u16(), listed.json.clone()),
        (200, json!({"metadata": all}))
    );
    let shown = app.show_volume(&v, "3.71").await;
    assert_eq!(shown.json["volume"]["volume_image_metadata"], all);
    let detail = app
        .get("/v3/p1/volumes/detail")
        .version("3.71")
        .send()
        .await;
    let found = detail.json["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == json!(v))
        .cloned();
    assert_eq!(found.unwrap()["volume_image_metadata"], all);
    // A reader of the project sees it, and may not change it.
    let seen = app
        .get(&format!("/v3/p1/volumes/{v}"))
        .token(READER_P1)
        .send()
        .await;
    assert_eq!(seen.json["volume"]["volume_image_metadata"], all);
    let refused = app
        .request(
            axum::http::Method::POST,
            &format!("/v3/p1/volumes/{v}/action"),
        )
        .token(READER_P1)
        .json(&set(json!({"k": "v"})))
        .send()
        .await;
    assert_eq!(refused.status, 403, "{}", refused.text);

    app.volume_action(&v, json!({"os-unset_image_metadata": {"key": "nope"}}))
        .await
        .assert_fault(
            404,
            "itemNotFound",
            &format!("Glance metadata for volume/snapshot {v} cannot be found."),
        );
    let unset = app
        .volume_action(&v, json!({"os-unset_image_metadata": {"key": "os_distro"}}))
        .await;
    assert_eq!(unset.status, 200, "{}", unset.text);
    let shown = app.show_volume(&v, "3.71").await;
    assert_eq!(
        shown.json["volume"]["volume_image_metadata"],
        json!({"image_id": "abc", "min_ram": "1024"})
    );
}

async fn bad_image_metadata_requests_are_refused(app: TestApp) {
    let v = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    for body in [
        set(json!({"bad key!": "v"})),
        set(json!({"k": 1})),
        json!({"os-set_image_metadata": {}}),
        json!({"os-set_image_metadata": {"metadata": {}, "extra": 1}}),
        json!({"os-unset_image_metadata": {"key": ""}}),
        json!({"os-unset_image_metadata": {}}),
        json!({"os-show_image_metadata": null, "extra": 1}),
    ] {
        let answer = app.volume_action(&v, body.clone()).await;
        assert_eq!(answer.status, 400, "{body}: {}", answer.text);
    }
    // In maintenance nothing changes, as Cinder's metadata rule says.
    let reset = app
        .volume_action(&v, json!({"os-reset_status": {"status": "maintenance"}}))
        .await;
    assert_eq!(reset.status, 202, "{}", reset.text);
    app.volume_action(&v, set(json!({"k": "v"})))
        .await
        .assert_fault(
            400,
            "badRequest",
            "Updating volume metadata is not allowed for volumes in maintenance status.",
        );
    let unknown = "00000000-0000-4000-8000-000000000001";
    app.volume_action(unknown, set(json!({"k": "v"})))
        .await
        .assert_fault(404, "itemNotFound", "");
    let shown = app
        .volume_action(&v, json!({"os-show_image_metadata": {}}))
        .await;
    assert_eq!(shown.json, json!({"metadata": {}}), "nothing was written");
}

/// A clone and a volume from a snapshot carry their source's image metadata, and boot
/// when it does (Cinder copies `bootable` from the source volume or the snapshot's).
async fn copies_carry_the_image_metadata(app: TestApp) {
    let v = str_of(&app.create_volume(json!({"size": 1})).await, "id");
    let metadata = json!({"image_id": "abc", "os_distro": "debian"});
    assert_eq!(
        app.volume_action(&v, set(metadata.clone())).await.status,
        200
    );
    let plain = str_of(&app.create_volume(json!({"source_volid": v})).await, "id");
    let shown = app.show_volume(&plain, "3.71").await;
    assert_eq!(
        shown.json["volume"]["bootable"], "false",
        "a clone of a plain volume"
    );
    let bootable = json!({"os-set_bootable": {"bootable": true}});
    assert_eq!(app.volume_action(&v, bootable).await.status, 200);
    let clone = str_of(&app.create_volume(json!({"source_volid": v})).await, "id");
    let snapshot = app
        .request(axum::http::Method::POST, "/v3/p1/snapshots")
        .json(&json!({"snapshot": {"volume_id": v}}))
        .send()
        .await;
    assert_eq!(snapshot.status, 202, "{}", snapshot.text);
    let snapshot = str_of(&snapshot.json["snapshot"], "id");
    let restored = str_of(
        &app.create_volume(json!({"snapshot_id": snapshot})).await,
        "id",
    );
    for copy in [clone, restored] {
        let shown = app.show_volume(&copy, "3.71").await;
        assert_eq!(
            shown.json["volume"]["volume_image_metadata"], metadata,
            "{copy}"
        );
        assert_eq!(shown.json["volume"]["bootable"], "true", "{copy}");
    }
}

backend_tests!(
    copies_carry_the_image_metadata,
    image_metadata_is_set_shown_and_unset,
    bad_image_metadata_requests_are_refused,
);

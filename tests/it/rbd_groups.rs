//! Group snapshots on Ceph hold the members' writes: a host writing a sequence number to
//! one volume and then to the other while a group snapshot is taken finds, in the group
//! made from that snapshot, the two numbers equal or the first one ahead by the write in
//! flight, never further apart (which is what snapshotting the members one after another
//! gives). Each host writes with its own attachment's credentials.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use axum::http::Method;
use serde_json::{json, Value};

use super::rbd::{admin, attach_as, host_of, image, per_attachment_app, pool};
use crate::support::helpers::*;
use crate::support::TestApp;

async fn send(app: &TestApp, method: Method, path: &str, body: Value) -> Value {
    let answer = app
        .request(method, path)
        .version("3.64")
        .json(&body)
        .send()
        .await;
    assert!(answer.status.is_success(), "{path}: {}", answer.text);
    answer.json
}

fn number(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes[..8].try_into().expect("eight bytes"))
}

async fn a_group_snapshot_holds_both_members_writes(app: TestApp) {
    let Some((app, conf)) = per_attachment_app(app).await else {
        return;
    };
    let t = app.create_type("plain", json!({})).await;
    let body = json!({"group_type": {"name": "consistent",
        "group_specs": {"consistent_group_snapshot_enabled": "<is> True"}}});
    send(&app, Method::POST, "/v3/p1/group_types", body).await;
    let body = json!({"group": {"group_type": "consistent", "volume_types": [t]}});
    let group = send(&app, Method::POST, "/v3/p1/groups", body).await;
    let group = str_of(&group["group"], "id");
    let shown = send(
        &app,
        Method::GET,
        &format!("/v3/p1/groups/{group}"),
        json!(null),
    )
    .await;
    assert_eq!(
        shown["group"]["status"], "available",
        "the rbd backend takes it"
    );
    let mut volumes = Vec::new();
    for _ in 0..2 {
        let fields = json!({"size": 1, "volume_type": "plain", "group_id": group});
        volumes.push(str_of(&app.create_volume(fields).await, "id"));
    }
    let (first_id, first) = attach_as(&app, &volumes[0], "node-1", "rw").await;
    let (second_id, second) = attach_as(&app, &volumes[1], "node-1", "rw").await;
    // In use (a group snapshot takes members that are available or in use).
    for attachment in [&first_id, &second_id] {
        assert_eq!(app.complete(attachment).await.status, 204);
    }
    let hosts = [host_of(&first).unwrap(), host_of(&second).unwrap()];
    let names = [image(&first), image(&second)];

    let stop = AtomicBool::new(false);
    let written = AtomicU64::new(0);
    let snapshot = std::thread::scope(|scope| {
        scope.spawn(|| {
            let ios: Vec<_> = hosts.iter().map(|h| h.io(&pool(), None).unwrap()).collect();
            let images: Vec<_> = ios
                .iter()
                .zip(&names)
                .map(|(io, name)| io.open(name, None, false).unwrap())
                .collect();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                for image in &images {
                    image.write(0, &n.to_le_bytes()).unwrap();
                    image.flush().unwrap();
                }
                written.store(n, Ordering::Relaxed);
            }
        });
        let runtime = tokio::runtime::Handle::current();
        let taken = std::thread::scope(|inner| {
            inner
                .spawn(|| {
                    std::thread::sleep(Duration::from_millis(300));
                    let body = json!({"group_snapshot": {"group_id": group}});
                    let made =
                        runtime.block_on(send(&app, Method::POST, "/v3/p1/group_snapshots", body));
                    std::thread::sleep(Duration::from_millis(300));
                    made
                })
                .join()
        });
        // The writer stops whatever the request did, so a failure ends the test.
        stop.store(true, Ordering::Relaxed);
        taken.unwrap()
    });
    let snapshot = str_of(&snapshot["group_snapshot"], "id");
    let last = written.load(Ordering::Relaxed);
    assert!(last > 10, "the host wrote throughout ({last})");
    let shown = send(
        &app,
        Method::GET,
        &format!("/v3/p1/group_snapshots/{snapshot}"),
        json!(null),
    )
    .await;
    assert_eq!(shown["group_snapshot"]["status"], "available");

    // A group from the snapshot: its volumes hold what the members held at one point.
    let body = json!({"create-from-src": {"group_snapshot_id": snapshot}});
    let restored = send(&app, Method::POST, "/v3/p1/groups/action", body).await;
    let restored = str_of(&restored["group"], "id");
    let members = send(
        &app,
        Method::GET,
        &format!("/v3/p1/volumes/detail?group_id={restored}"),
        json!(null),
    )
    .await;
    let members = members["volumes"].as_array().cloned().unwrap_or_default();
    assert_eq!(members.len(), 2);
    let check = admin(&conf);
    let io = check.io(&pool(), None).unwrap();
    let mut by_source = std::collections::HashMap::new();
    for made in &members {
        let snapshot = str_of(made, "snapshot_id");
        let taken = send(
            &app,
            Method::GET,
            &format!("/v3/p1/snapshots/{snapshot}"),
            json!(null),
        )
        .await;
        by_source.insert(str_of(&taken["snapshot"], "volume_id"), str_of(made, "id"));
    }
    let value_of = |source: &String| {
        let made = &by_source[source];
        let opened = io.open(&format!("volume-{made}"), None, true).unwrap();
        number(&opened.read(0, 8).unwrap())
    };
    let (a, b) = (value_of(&volumes[0]), value_of(&volumes[1]));
    println!("written {last}, group snapshot holds {a} and {b}");
    assert!(
        b >= 1 && (a == b || a == b + 1),
        "one point in time: {a} and {b}"
    );
    assert!(a < last, "the host kept writing after the snapshot");

    // Everything goes again: the restored group, the snapshot (its copies), the group.
    let delete = json!({"delete": {"delete-volumes": true}});
    send(
        &app,
        Method::POST,
        &format!("/v3/p1/groups/{restored}/action"),
        delete.clone(),
    )
    .await;
    let deleted = app
        .request(
            Method::DELETE,
            &format!("/v3/p1/group_snapshots/{snapshot}"),
        )
        .version("3.64")
        .send()
        .await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
    let left: Vec<String> = io
        .list_images()
        .unwrap()
        .into_iter()
        .filter(|name| name.contains(".gsnap-"))
        .filter(|name| volumes.iter().any(|v| name.contains(v.as_str())))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

backend_tests!(a_group_snapshot_holds_both_members_writes);

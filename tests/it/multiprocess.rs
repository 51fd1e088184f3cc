//! Two server processes on one database, raced over real sockets: the rules hold across
//! processes because they live in the database's transactions, not in process memory.

use std::sync::{Arc, Barrier};

use serde_json::json;
use uuid::Uuid;

use crate::support::process::ServerProcess;
use crate::support::{Backend, TestDb};

async fn two_processes(
    backend: Backend,
) -> Option<(TestDb, ServerProcess, ServerProcess, std::path::PathBuf)> {
    let db = TestDb::create(backend).await?;
    // Migrate once up front so both processes start on a ready schema.
    db.store().await.close().await;
    let volumes = std::env::temp_dir().join(format!("cinder-attach-mp-{}", Uuid::new_v4()));
    let a = ServerProcess::start(&db.url, &volumes);
    let b = ServerProcess::start(&db.url, &volumes);
    Some((db, a, b, volumes))
}

/// Fires `count` requests, alternating between the two servers, released together.
fn race(
    servers: [&ServerProcess; 2],
    count: usize,
    request: impl Fn(usize) -> (String, String, Option<serde_json::Value>) + Sync,
) -> Vec<(u16, serde_json::Value)> {
    let barrier = Arc::new(Barrier::new(count));
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..count)
            .map(|i| {
                let barrier = barrier.clone();
                let addr = servers[i % 2].addr.clone();
                let (method, path, body) = request(i);
                scope.spawn(move || {
                    barrier.wait();
                    crate::support::process::http(&addr, &method, &path, body.as_ref())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("request thread"))
            .collect()
    })
}

async fn reservations_across_processes(backend: Backend) {
    let Some((db, a, b, volumes)) = two_processes(backend).await else {
        return;
    };
    for multiattach in [false, true] {
        let mut body = json!({"volume": {"size": 1}});
        if multiattach {
            a.send("POST", "/v3/p1/types", Some(&json!({"volume_type": {"name": "ma", "extra_specs": {"multiattach": "<is> True"}}})));
            body["volume"]["volume_type"] = json!("ma");
        }
        let (status, created) = a.send("POST", "/v3/p1/volumes", Some(&body));
        assert_eq!(status, 202, "{created}");
        let volume = created["volume"]["id"].as_str().unwrap().to_owned();
        let responses = race([&a, &b], 20, |_| {
            let body = json!({"attachment": {"volume_uuid": volume, "instance_uuid": Uuid::new_v4().to_string()}});
            ("POST".into(), "/v3/p1/attachments".into(), Some(body))
        });
        // One wins a single-attach volume; a multiattach volume takes them all.
        let wanted = if multiattach { 20 } else { 1 };
        let won = responses.iter().filter(|(s, _)| *s == 200).count();
        assert_eq!(won, wanted, "{responses:?}");
        assert!(
            responses.iter().all(|(s, _)| *s == 200 || *s == 400),
            "{responses:?}"
        );
        let (_, shown) = b.send("GET", &format!("/v3/p1/volumes/{volume}"), None);
        assert_eq!(shown["volume"]["status"], "reserved");
        assert_eq!(live_attachments(&db, &volume).await.len(), wanted);
    }
    drop((a, b));
    let _ = std::fs::remove_dir_all(volumes);
}

async fn live_attachments(db: &TestDb, volume: &str) -> Vec<String> {
    db.column(&format!(
        "select attach_mode from volume_attachment where volume_id = '{volume}' and deleted = false"
    ))
    .await
}

/// The attachment cap and single-writer mode hold across processes: 20 creates for 5
/// places, then 20 writers for one place.
async fn sharing_limits_across_processes(backend: Backend) {
    let Some((db, a, b, volumes)) = two_processes(backend).await else {
        return;
    };
    for (name, spec, places) in [
        ("five", json!({"attach:max_attachments": "5"}), 5),
        ("sw", json!({"attach:single_writer": "<is> True"}), 1),
    ] {
        let mut specs = json!({"multiattach": "<is> True"});
        specs
            .as_object_mut()
            .unwrap()
            .extend(spec.as_object().unwrap().clone());
        let (status, _) = a.send(
            "POST",
            "/v3/p1/types",
            Some(&json!({"volume_type": {"name": name, "extra_specs": specs}})),
        );
        assert_eq!(status, 200);
        let (_, created) = a.send(
            "POST",
            "/v3/p1/volumes",
            Some(&json!({"volume": {"size": 1, "volume_type": name}})),
        );
        let volume = created["volume"]["id"].as_str().unwrap().to_owned();
        let responses = race([&a, &b], 20, |i| {
            let body = json!({"attachment": {"volume_uuid": volume,
                "instance_uuid": Uuid::new_v4().to_string(),
                "connector": {"host": format!("cmp-{i}"), "mountpoint": "/dev/vdb"}}});
            ("POST".into(), "/v3/p1/attachments".into(), Some(body))
        });
        let won = responses.iter().filter(|(s, _)| *s == 200).count();
        assert_eq!(won, places, "{name}: {responses:?}");
        assert!(
            responses.iter().all(|(s, _)| *s == 200 || *s == 400),
            "{responses:?}"
        );
        assert_eq!(live_attachments(&db, &volume).await.len(), places);
    }
    drop((a, b));
    let _ = std::fs::remove_dir_all(volumes);
}

async fn detaches_across_processes(backend: Backend) {
    let Some((db, a, b, volumes)) = two_processes(backend).await else {
        return;
    };
    a.send(
        "POST",
        "/v3/p1/types",
        Some(&json!({"volume_type": {"name": "ma", "extra_specs": {"multiattach": "<is> True"}}})),
    );
    let (_, created) = a.send(
        "POST",
        "/v3/p1/volumes",
        Some(&json!({"volume": {"size": 1, "volume_type": "ma"}})),
    );
    let volume = created["volume"]["id"].as_str().unwrap().to_owned();
    let mut attachments = Vec::new();
    for host in ["cmp-1", "cmp-2", "cmp-3", "cmp-4"] {
        let connector = json!({"host": host, "mountpoint": "/dev/vdb"});
        let (status, made) = a.send(
            "POST",
            "/v3/p1/attachments",
            Some(&json!({"attachment": {"volume_uuid": volume, "instance_uuid": Uuid::new_v4().to_string(), "connector": connector}})),
        );
        assert_eq!(status, 200, "{made}");
        let id = made["attachment"]["id"].as_str().unwrap().to_owned();
        assert_eq!(
            b.send(
                "POST",
                &format!("/v3/p1/attachments/{id}/action"),
                Some(&json!({"os-complete": null}))
            )
            .0,
            204
        );
        attachments.push(id);
    }
    let responses = race([&a, &b], 4, |i| {
        (
            "DELETE".into(),
            format!("/v3/p1/attachments/{}", attachments[i]),
            None,
        )
    });
    assert!(responses.iter().all(|(s, _)| *s == 200), "{responses:?}");
    let stored = db
        .column(&format!("select status from volumes where id = '{volume}'"))
        .await;
    assert_eq!(stored, ["available"], "never in-use with no attachment");
    drop((a, b));
    let _ = std::fs::remove_dir_all(volumes);
}

/// A project's volume quota holds when two processes create at once: 20 creates for 5
/// places give exactly 5 volumes.
async fn quota_across_processes(backend: Backend) {
    let Some((db, a, b, volumes)) = two_processes(backend).await else {
        return;
    };
    let (status, _) = a.send(
        "PUT",
        "/v3/p1/os-quota-sets/p1",
        Some(&json!({"quota_set": {"volumes": 5}})),
    );
    assert_eq!(status, 200);
    let responses = race([&a, &b], 20, |_| {
        let body = json!({"volume": {"size": 1}});
        ("POST".into(), "/v3/p1/volumes".into(), Some(body))
    });
    let created = responses.iter().filter(|(s, _)| *s == 202).count();
    let refused = responses.iter().filter(|(s, _)| *s == 413).count();
    assert_eq!((created, refused), (5, 15), "{responses:?}");
    let live = db
        .column("select cast(id as text) from volumes where project_id = 'p1' and deleted = false")
        .await;
    assert_eq!(live.len(), 5);
    drop((a, b));
    let _ = std::fs::remove_dir_all(volumes);
}

process_tests!(
    quota_across_processes,
    reservations_across_processes,
    sharing_limits_across_processes,
    detaches_across_processes
);

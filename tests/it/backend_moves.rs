//! `revert` and `os-migrate_volume` on every kind of backend, with the bytes checked where
//! each keeps them: a volume's data travels file → tgt → rbd → file (every pair of kinds
//! once, each move read back byte for byte, the old copy gone), and a revert puts back
//! the snapshot's bytes on each. Needs a real tgtd (root) and Ceph (`scripts/start-ceph`);
//! without them outside CI the test says so and does nothing.

use std::time::{Duration, Instant};

use axum::http::Method;
use serde_json::{json, Value};

use crate::api::backups::{noise, write_at, MIB};
use crate::api::volume_migrations::moved_within;
use crate::rbd::{admin as ceph_admin, ceph_conf, pool};
use crate::support::helpers::*;
use crate::support::http::ADMIN_TOKEN;
use crate::support::tgtd::Tgtd;
use crate::support::{TestApp, TestResponse};

const M: u64 = MIB as u64;

/// Where a backend keeps a volume's bytes, to read and write them from outside.
enum Kind {
    /// `file` and `tgt`: a file in this directory.
    Dir(std::path::PathBuf),
    /// `rbd`: an image in the test pool.
    Rbd(String),
}

struct Bed {
    app: TestApp,
    /// Backend name → where it keeps volumes.
    kinds: Vec<(&'static str, Kind)>,
    _tgtd: Tgtd,
}

async fn bed(app: TestApp) -> Option<Bed> {
    let conf = ceph_conf()?;
    let tgtd = Tgtd::start("backend-moves").await?;
    let (plain, iscsi) = (app.volumes_dir.join("plain"), app.volumes_dir.join("iscsi"));
    let specs = [
        format!("plain=file,dir={}", plain.display()),
        tgtd.backend_spec("iscsi", &iscsi),
        format!("ceph=rbd,conf={conf},pool={},capacity_gb=1000", pool()),
    ];
    let specs: Vec<&str> = specs.iter().map(String::as_str).collect();
    let app = app.with_backends(&specs).await;
    let kinds = vec![
        ("plain", Kind::Dir(plain)),
        ("iscsi", Kind::Dir(iscsi)),
        ("ceph", Kind::Rbd(conf)),
    ];
    Some(Bed {
        app,
        kinds,
        _tgtd: tgtd,
    })
}

impl Bed {
    fn kind(&self, backend: &str) -> &Kind {
        &self.kinds.iter().find(|(n, _)| *n == backend).unwrap().1
    }

    fn write(&self, backend: &str, volume: &str, offset: u64, bytes: &[u8]) {
        match self.kind(backend) {
            Kind::Dir(dir) => write_at(&dir.join(format!("volume-{volume}")), offset, bytes),
            Kind::Rbd(conf) => {
                let cluster = ceph_admin(conf);
                let io = cluster.io(&pool(), None).unwrap();
                let image = io.open(&format!("volume-{volume}"), None, false).unwrap();
                image.write(offset, bytes).unwrap();
                image.flush().unwrap();
            }
        }
    }

    fn read(&self, backend: &str, volume: &str, offset: u64, len: usize) -> Vec<u8> {
        match self.kind(backend) {
            Kind::Dir(dir) => {
                use std::os::unix::fs::FileExt;
                let file = std::fs::File::open(dir.join(format!("volume-{volume}"))).unwrap();
                let mut bytes = vec![0u8; len];
                file.read_exact_at(&mut bytes, offset).unwrap();
                bytes
            }
            Kind::Rbd(conf) => {
                let cluster = ceph_admin(conf);
                let io = cluster.io(&pool(), None).unwrap();
                let image = io.open(&format!("volume-{volume}"), None, true).unwrap();
                image.read(offset, len).unwrap()
            }
        }
    }

    fn holds(&self, backend: &str, volume: &str) -> bool {
        match self.kind(backend) {
            Kind::Dir(dir) => dir.join(format!("volume-{volume}")).exists(),
            Kind::Rbd(conf) => {
                let cluster = ceph_admin(conf);
                let io = cluster.io(&pool(), None).unwrap();
                let found = io.open(&format!("volume-{volume}"), None, true);
                !matches!(found, Err(ref e) if e.errno == 2)
            }
        }
    }

    /// The old copy goes after the move is recorded (as Cinder casts the delete to the
    /// old host once the move is complete), so it is waited for.
    async fn wait_until_gone(&self, backend: &str, volume: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.holds(backend, volume) {
            assert!(Instant::now() < deadline, "{backend} kept its copy");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn admin(app: &TestApp, method: Method, path: &str, body: Option<Value>) -> TestResponse {
    call_as(app, ADMIN_TOKEN, "3.64", method, path, body).await
}

async fn volume_on(bed: &Bed, backend: &str) -> String {
    let name = format!("on-{backend}");
    bed.app
        .create_type(&name, json!({"volume_backend_name": backend}))
        .await;
    let made = bed
        .app
        .create_volume(json!({"size": 1, "volume_type": name}))
        .await;
    assert_eq!(made["status"], "available", "{made}");
    str_of(&made, "id")
}

fn host_of(detail: &Value) -> String {
    str_of(detail, "os-vol-host-attr:host")
}

/// Moves the volume and waits for the move to end; the volume's detail.
async fn migrate(app: &TestApp, volume: &str, backend: &str) -> Value {
    let path = format!("/v3/p1/volumes/{volume}/action");
    let host = format!("test-host@{backend}#{backend}");
    let body = json!({"os-migrate_volume": {"host": host}});
    let started = admin(app, Method::POST, &path, Some(body)).await;
    assert_eq!(started.status, 202, "{}", started.text);
    // A 1 GiB copy through tgt or Ceph: more time than the file-only tests give.
    moved_within(app, volume, Duration::from_secs(120)).await
}

async fn snapshot_of(app: &TestApp, volume: &str) -> String {
    let body = json!({"snapshot": {"volume_id": volume}});
    let taken = admin(app, Method::POST, "/v3/p1/snapshots", Some(body)).await;
    assert_eq!(taken.status, 202, "{}", taken.text);
    str_of(&taken.json["snapshot"], "id")
}

async fn a_volume_travels_every_pair_of_backend_kinds(app: TestApp) {
    let Some(bed) = bed(app).await else { return };
    let volume = volume_on(&bed, "plain").await;
    // Data at the start, in the middle and at the end, and a hole between.
    let (head, middle, tail) = (noise(MIB, 21), noise(MIB, 22), noise(MIB, 23));
    bed.write("plain", &volume, 0, &head);
    bed.write("plain", &volume, 300 * M, &middle);
    bed.write("plain", &volume, 1023 * M, &tail);
    let mut here = "plain";
    for there in ["iscsi", "ceph", "plain"] {
        let detail = migrate(&bed.app, &volume, there).await;
        assert_eq!(
            detail["migration_status"], "success",
            "{here} → {there}: {detail}"
        );
        assert_eq!(detail["status"], "available");
        assert_eq!(host_of(&detail), format!("test-host@{there}#{there}"));
        assert_eq!(bed.read(there, &volume, 0, MIB), head, "{here} → {there}");
        assert_eq!(
            bed.read(there, &volume, 300 * M, MIB),
            middle,
            "{here} → {there}"
        );
        assert_eq!(
            bed.read(there, &volume, 1023 * M, MIB),
            tail,
            "{here} → {there}"
        );
        assert_eq!(
            bed.read(there, &volume, 600 * M, MIB),
            vec![0u8; MIB],
            "{here} → {there}"
        );
        bed.wait_until_gone(here, &volume).await;
        here = there;
    }
    bed.app.assert_consistent(&volume).await;
}

/// Swaps the attached `volume` onto a temporary volume on `backend`, playing Nova's
/// part: the new attachment connected with `connector`, `data` written at `offset` of
/// the new storage (the hypervisor's copy), the old attachment `old` deleted, the
/// completion. The temporary volume's id (the volume's `name_id` now) and the new
/// attachment.
async fn swap_onto(
    bed: &Bed,
    volume: &str,
    backend: &str,
    old: &str,
    connector: &Value,
    (offset, data): (u64, &[u8]),
) -> (String, String) {
    let app = &bed.app;
    let path = format!("/v3/p1/volumes/{volume}/action");
    let host = format!("test-host@{backend}#{backend}");
    let body = json!({"os-migrate_volume": {"host": host}});
    let started = admin(app, Method::POST, &path, Some(body)).await;
    assert_eq!(started.status, 202, "{}", started.text);
    let marker = format!("target:{volume}");
    let deadline = Instant::now() + Duration::from_secs(60);
    let temporary = loop {
        let found = app
            .db
            .column(&format!(
                "select cast(v.id as text) from volumes v where v.migration_status = '{marker}' \
                   and v.status = 'available' and v.deleted = false"
            ))
            .await;
        if let Some(id) = found.first() {
            break id.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no temporary volume on {backend}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let body = json!({"attachment": {"volume_uuid": temporary, "instance_uuid": I1}});
    let created = as_nova(app, Method::POST, "/v3/p1/attachments", Some(body)).await;
    assert_eq!(created.status, 200, "{}", created.text);
    let new = str_of(&created.json["attachment"], "id");
    let body = json!({"attachment": {"connector": connector}});
    let updated = as_nova(
        app,
        Method::PUT,
        &format!("/v3/p1/attachments/{new}"),
        Some(body),
    )
    .await;
    assert_eq!(updated.status, 200, "{}", updated.text);
    assert_eq!(app.complete(&new).await.status, 204);
    bed.write(backend, &temporary, offset, data);
    let deleted = as_nova(
        app,
        Method::DELETE,
        &format!("/v3/p1/attachments/{old}"),
        None,
    )
    .await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    let body = json!({"os-migrate_volume_completion": {"new_volume": temporary}});
    let done = admin(app, Method::POST, &path, Some(body)).await;
    assert_eq!(done.status, 200, "{}", done.text);
    assert_eq!(done.json["save_volume_id"], volume);
    (temporary, new)
}

/// An attached volume moves through Nova's swap onto tgt, then onto Ceph, each time
/// living on in the storage made for the temporary volume: the host its attachment names
/// logs in to that storage's target and no other host does; the old storage goes; and an
/// available move afterwards copies the bytes from where the volume lives.
async fn an_attached_volume_swaps_onto_tgt_and_ceph(app: TestApp) {
    let app = app.with_settings(cinder_attach::service::Settings {
        nova: Some(crate::api::nova_calls::silent_nova()),
        ..Default::default()
    });
    let Some(bed) = bed(app).await else { return };
    let volume = volume_on(&bed, "plain").await;
    let data = noise(MIB, 31);
    bed.write("plain", &volume, 5 * M, &data);
    let mut connector = conn();
    connector["initiator"] = json!("iqn.2004-10.org.test:swapped-host");
    let mut old = bed.app.attach_fully(&volume, I1, connector.clone()).await;
    let (mut here, mut stored) = ("plain", volume.clone());
    for there in ["iscsi", "ceph"] {
        let (temporary, new) =
            swap_onto(&bed, &volume, there, &old, &connector, (5 * M, &data)).await;
        let detail = admin(
            &bed.app,
            Method::GET,
            &format!("/v3/p1/volumes/{volume}"),
            None,
        )
        .await;
        let detail = &detail.json["volume"];
        assert_eq!(
            host_of(detail),
            format!("test-host@{there}#{there}"),
            "{detail}"
        );
        assert_eq!(detail["status"], "in-use");
        assert_eq!(detail["os-vol-mig-status-attr:name_id"], temporary.as_str());
        if there == "iscsi" {
            let shown = bed.app.show_attachment(&new).await;
            let info = &shown.json["attachment"]["connection_info"];
            assert_eq!(info["driver_volume_type"], "iscsi", "{info}");
            let mine = crate::support::tgtd::can_log_in(info, "iqn.2004-10.org.test:swapped-host");
            assert!(
                mine.await,
                "the attached host reaches the storage the volume lives in"
            );
            let other = crate::support::tgtd::can_log_in(info, "iqn.2004-10.org.test:stranger");
            assert!(!other.await, "no other host does");
        }
        bed.wait_until_gone(here, &stored).await;
        (old, here, stored) = (new, there, temporary);
    }
    let detached = as_nova(
        &bed.app,
        Method::DELETE,
        &format!("/v3/p1/attachments/{old}"),
        None,
    )
    .await;
    assert_eq!(detached.status, 200, "{}", detached.text);
    let detail = migrate(&bed.app, &volume, "plain").await;
    assert_eq!(detail["migration_status"], "success", "{detail}");
    assert_eq!(detail["os-vol-mig-status-attr:name_id"], Value::Null);
    assert_eq!(bed.read("plain", &volume, 5 * M, MIB), data);
    bed.wait_until_gone("ceph", &stored).await;
    bed.app.assert_consistent(&volume).await;
}

async fn a_revert_puts_back_the_snapshots_bytes_on_each_kind(app: TestApp) {
    let Some(bed) = bed(app).await else { return };
    for backend in ["plain", "iscsi", "ceph"] {
        let volume = volume_on(&bed, backend).await;
        let kept = noise(MIB, 31);
        bed.write(backend, &volume, 5 * M, &kept);
        let snapshot = snapshot_of(&bed.app, &volume).await;
        bed.write(backend, &volume, 5 * M, &noise(MIB, 32));
        bed.write(backend, &volume, 900 * M, &noise(MIB, 33));
        let path = format!("/v3/p1/volumes/{volume}/action");
        let body = json!({"revert": {"snapshot_id": snapshot}});
        let reverted = call_as(
            &bed.app,
            ADMIN_TOKEN,
            "3.40",
            Method::POST,
            &path,
            Some(body),
        )
        .await;
        assert_eq!(reverted.status, 202, "{backend}: {}", reverted.text);
        bed.app.wait_for_status(&volume, "available").await;
        assert_eq!(bed.read(backend, &volume, 5 * M, MIB), kept, "{backend}");
        assert_eq!(
            bed.read(backend, &volume, 900 * M, MIB),
            vec![0u8; MIB],
            "{backend}: written after the snapshot"
        );
    }
}

backend_tests!(
    an_attached_volume_swaps_onto_tgt_and_ceph,
    a_volume_travels_every_pair_of_backend_kinds,
    a_revert_puts_back_the_snapshots_bytes_on_each_kind,
);

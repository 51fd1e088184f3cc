//! QEMU's own block layer as the host (`support::qemu_host`): a `qemu-io` per disk, each
//! simulated host at an address of its own, opening volumes from nothing but their
//! connection info, on `rbd` (a real Ceph, both credential modes) and `tgt` (a real
//! tgtd, CHAP). Bytes go in and come back, `ro` and other volumes are refused where the
//! backend can refuse them, and a host that still holds a volume open after its
//! attachment ended fails its next write.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use cinder_attach::backend::rbd::ceph::{ImageIds, WatchListing};

use crate::api::metrics::{sample, scrape};
use crate::rbd::{admin, attach_with, ceph_conf, create, pool};
use crate::support::helpers::*;
use crate::support::qemu_host::{self, Disk, QemuHost};
use crate::support::tgtd::Tgtd;
use crate::support::TestApp;

const MIB: u64 = 1024 * 1024;

/// How soon after the detach's answer a fenced host must fail its next write.
const FENCED_WITHIN: Duration = Duration::from_secs(2);

/// The app with an `rbd` backend whose hosts share its identity, as Cinder's do: a
/// `profile rbd` user made for the test (what an operator gives Cinder and libvirt),
/// with the keyring file hypervisors would hold in a libvirt secret. `None` without a
/// cluster or QEMU.
async fn shared_app(app: TestApp, fence: &str) -> Option<(TestApp, PathBuf)> {
    let conf = ceph_conf()?;
    if qemu_host::unavailable().is_some() {
        return None;
    }
    let user = format!("c{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let pool = pool();
    let (out, _) = admin(&conf)
        .mon_command(
            &json!({"prefix": "auth get-or-create", "entity": format!("client.{user}"),
                    "caps": ["mon", "profile rbd", "osd", format!("profile rbd pool={pool}")],
                    "format": "json"}),
            None,
        )
        .expect("the cluster makes the user");
    let parsed: Value = serde_json::from_slice(&out).unwrap();
    let key = parsed[0]["key"].as_str().expect("a key").to_owned();
    let keyring = std::env::temp_dir().join(format!("{user}.keyring"));
    std::fs::write(&keyring, format!("[client.{user}]\n\tkey = {key}\n")).unwrap();
    let spec = format!(
        "{user}=rbd,conf={conf},pool={pool},user={user},keyring={},\
         secret_uuid=457eb676-33da-42ec-9a8c-9293d545c337,capacity_gb=1000,{fence}",
        keyring.display()
    );
    Some((app.with_backends(&[spec.as_str()]).await, keyring))
}

/// A connector as Nova's: the host's name and the address it reaches storage from.
fn connector_at(host: &str, ip: &str) -> Value {
    let mut connector = conn_for(host, "/dev/vdb");
    connector["ip"] = json!(ip);
    connector
}

/// Attaches `volume` for `host` at `ip` in `mode`: the attachment's id and connection
/// info.
async fn attach_at(
    app: &TestApp,
    volume: &str,
    host: &str,
    ip: &str,
    mode: &str,
) -> (String, Value) {
    attach_with(app, volume, connector_at(host, ip), mode).await
}

async fn detach(app: &TestApp, attachment: &str) -> Duration {
    let started = Instant::now();
    let deleted = app.delete_attachment(attachment).await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    started.elapsed()
}

async fn fences(app: &TestApp, outcome: &str) -> f64 {
    let text = scrape(app).await;
    sample(
        &text,
        &format!("cinder_attach_host_fences{{status=\"{outcome}\"}}"),
    )
    .unwrap_or(0.0)
}

/// The `volume.host_fence` events of `volume` in the audit trail.
async fn fence_events(app: &TestApp, volume: &str) -> Vec<Value> {
    let listed = app
        .get(&format!(
            "/v3/p1/events?volume_id={volume}&event_type=volume.host_fence"
        ))
        .send()
        .await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    listed.json["events"].as_array().unwrap().clone()
}

async fn open(disk: Disk, ip: &str) -> QemuHost {
    QemuHost::open(&disk, ip, false)
        .await
        .unwrap_or_else(|e| panic!("the host at {ip} opens the volume: {e}"))
}

/// With shared credentials the detached host's clients of the volume are blocklisted
/// as the detach answers: its next write fails within 2 s, while its clients of other
/// volumes and another host's client of the same volume go on writing.
async fn a_detached_host_is_fenced_with_shared_credentials(app: TestApp) {
    let Some((app, keyring)) = shared_app(app, "fence=on").await else {
        return;
    };
    app.create_multiattach_type("ma").await;
    let a = create(&app, json!({"size": 1, "volume_type": "ma"})).await;
    let b = create(&app, json!({"size": 1})).await;
    let (a_on_2, info_a2) = attach_at(&app, &a, "host-2", "127.0.0.2", "rw").await;
    let (_, info_a3) = attach_at(&app, &a, "host-3", "127.0.0.3", "rw").await;
    let (_, info_b2) = attach_at(&app, &b, "host-2", "127.0.0.2", "rw").await;
    // Cinder's connection info: the backend's user, the libvirt secret, no key.
    assert_eq!(info_a2["auth_enabled"], true);
    assert!(info_a2.get("keyring").is_none());
    assert_eq!(
        info_a2["secret_uuid"],
        "457eb676-33da-42ec-9a8c-9293d545c337"
    );
    let rbd = |info: &Value| Disk::Rbd {
        info: info.clone(),
        keyring: keyring.clone(),
    };
    let mut a2 = open(rbd(&info_a2), "127.0.0.2").await;
    let mut a3 = open(rbd(&info_a3), "127.0.0.3").await;
    let mut b2 = open(rbd(&info_b2), "127.0.0.2").await;
    for (host, pattern, offset) in [(&mut a2, 0x5a, 0), (&mut a3, 0x3a, MIB), (&mut b2, 0xb2, 0)] {
        let wrote = host.write(pattern, offset, 4096).await;
        assert!(wrote.ok, "{}", wrote.text);
    }
    // The two hosts of the multiattach volume see each other's bytes.
    assert!(a3.read(0x5a, 0, 4096).await.ok);
    assert!(a2.read(0x3a, MIB, 4096).await.ok);

    let detach_took = detach(&app, &a_on_2).await;
    let answered = Instant::now();
    let failed = a2
        .first_failed_write(0x5b, answered, Duration::from_secs(10))
        .await
        .expect("the detached host cannot write any more");
    println!("detach answered in {detach_took:?}; the host's next write failed after {failed:?}");
    assert!(failed < FENCED_WITHIN, "{failed:?}");
    // The same host's disk of another volume, and the other host, go on.
    let wrote = b2.write(0xb3, 0, 4096).await;
    assert!(wrote.ok, "{}", wrote.text);
    let wrote = a3.write(0x3b, MIB, 4096).await;
    assert!(wrote.ok, "{}", wrote.text);
    // What the fenced host tried after did not land.
    let read = a3.read(0x5a, 0, 4096).await;
    assert!(read.ok, "{}", read.text);
    assert_eq!(fences(&app, "fenced").await, 1.0);
    let recorded = fence_events(&app, &a).await;
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    let payload = &recorded[0]["payload"];
    assert_eq!(payload["outcome"], "fenced");
    assert_eq!(payload["host_ip"], "127.0.0.2");
    assert_eq!(
        payload["addresses"].as_array().unwrap().len(),
        1,
        "{payload}"
    );
    assert!(payload["addresses"][0]
        .as_str()
        .unwrap()
        .starts_with("127.0.0.2:"));
    assert_eq!(recorded[0]["priority"], "INFO");
    assert!(fence_events(&app, &b).await.is_empty());

    // The host attaches the volume again: a new client, let in.
    let (again_on_2, again) = attach_at(&app, &a, "host-2", "127.0.0.2", "rw").await;
    let mut back = open(rbd(&again), "127.0.0.2").await;
    let wrote = back.write(0x5c, 0, 4096).await;
    assert!(wrote.ok, "{}", wrote.text);

    // Detached again: the image's id is known now, and its watchers are listed without
    // a blocking thread; the new client is fenced as the first was.
    detach(&app, &again_on_2).await;
    let failed = back
        .first_failed_write(0x5d, Instant::now(), Duration::from_secs(10))
        .await
        .expect("the host detached again cannot write");
    assert!(failed < FENCED_WITHIN, "{failed:?}");
    let wrote = a3.write(0x3c, MIB, 4096).await;
    assert!(wrote.ok, "{}", wrote.text);
    assert_eq!(fences(&app, "fenced").await, 2.0);
    for host in [a2, a3, b2, back] {
        host.close().await;
    }
}

/// The watchers of a volume's image, read without opening it (its id, then its
/// header's watchers: what each detach does) are the ones librbd lists from the open
/// image: one client per host that holds it, at that host's address.
async fn watchers_are_listed_without_opening_the_image(app: TestApp) {
    let Some((app, keyring)) = shared_app(app, "fence=on").await else {
        return;
    };
    app.create_multiattach_type("ma").await;
    let a = create(&app, json!({"size": 1, "volume_type": "ma"})).await;
    let (_, on_2) = attach_at(&app, &a, "host-2", "127.0.0.2", "rw").await;
    let (_, on_3) = attach_at(&app, &a, "host-3", "127.0.0.3", "rw").await;
    let rbd = |info: Value| Disk::Rbd {
        info,
        keyring: keyring.clone(),
    };
    let hosts = [
        open(rbd(on_2), "127.0.0.2").await,
        open(rbd(on_3), "127.0.0.3").await,
    ];
    let cluster = admin(&ceph_conf().unwrap());
    let io = cluster.io(&pool(), None).unwrap();
    let name = format!("volume-{a}");
    let image = io.open(&name, None, true).unwrap();
    let header = format!("rbd_header.{}", image.id().unwrap());
    let listed = io
        .object_watchers(&header)
        .expect("this librados lists an object's watchers")
        .unwrap();
    let ids = Arc::new(ImageIds::default());
    let found = io
        .image_watchers(&name, &ids)
        .unwrap()
        .expect("the image exists");
    assert_eq!(found.header, header);
    let mut by_librbd = image.watchers().unwrap();
    let mut without_open = found.watchers;
    for list in [&mut by_librbd, &mut without_open] {
        list.sort_by(|a, b| a.address.cmp(&b.address));
    }
    assert_eq!(without_open, by_librbd);
    let mut sorted_listed = listed.clone();
    sorted_listed.sort_by(|a, b| a.address.cmp(&b.address));
    assert_eq!(sorted_listed, by_librbd);
    let ips: Vec<&str> = without_open
        .iter()
        .map(|w| cinder_attach::backend::rbd::ceph::address_ip(&w.address))
        .collect();
    assert_eq!(ips, ["127.0.0.2", "127.0.0.3"], "{without_open:?}");
    // Listed again with the id kept: the same, and so asynchronously (what a detach
    // does), many at once.
    let kept = io.image_watchers(&name, &ids).unwrap().unwrap();
    assert_eq!(kept.watchers.len(), 2);
    let listing = Arc::new(
        WatchListing::open(Arc::new(admin(&ceph_conf().unwrap())), &pool())
            .unwrap()
            .expect("this librados lists watchers asynchronously"),
    );
    let mut at_once = tokio::task::JoinSet::new();
    for _ in 0..32 {
        let (listing, name, ids) = (listing.clone(), name.clone(), ids.clone());
        at_once.spawn(async move { listing.kept_image_watchers(&name, &ids).await });
    }
    for found in at_once.join_all().await {
        let mut found = found.expect("the id is kept").unwrap();
        assert_eq!(found.header, header);
        found.watchers.sort_by(|a, b| a.address.cmp(&b.address));
        assert_eq!(found.watchers, by_librbd);
    }
    let missing = listing.object_watchers("rbd_header.nonesuch").await;
    assert_eq!(missing.map_err(|e| e.errno), Err(2));
    assert!(listing
        .kept_image_watchers("volume-none-such", &ids)
        .await
        .is_none());
    // An image that is not there has no watchers to list, nor a header.
    assert_eq!(io.image_watchers("volume-none-such", &ids).unwrap(), None);
    let missing = io.object_watchers("rbd_header.nonesuch").unwrap();
    assert_eq!(missing.map_err(|e| e.errno), Err(2));
    for host in hosts {
        host.close().await;
    }

    // An image made anew under a name whose id was kept: its new header is read.
    let name = format!("volume-{}", uuid::Uuid::new_v4());
    io.create_image(&name, MIB << 10, 1).unwrap();
    let before = io.image_watchers(&name, &ids).unwrap().unwrap();
    assert!(before.watchers.is_empty(), "{before:?}");
    io.remove_image(&name).unwrap();
    io.create_image(&name, MIB << 10, 1).unwrap();
    // Opened for writing here: this test's client watches it.
    let held = io.open(&name, None, false).unwrap();
    let after = io.image_watchers(&name, &ids).unwrap().unwrap();
    assert_ne!(after.header, before.header);
    assert_eq!(after.watchers.len(), 1, "{after:?}");
    let listed = listing
        .kept_image_watchers(&name, &ids)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(listed, after);
    drop(held);
    io.remove_image(&name).unwrap();
    // Gone: the asynchronous listing leaves it to the blocking one, which says so.
    assert!(listing.kept_image_watchers(&name, &ids).await.is_none());
    assert_eq!(io.image_watchers(&name, &ids).unwrap(), None);
}

/// Two servers of one hypervisor share its address: while one of them keeps the volume,
/// whose client is whose cannot be told, so nothing is fenced (and the record says so);
/// when the last one goes, the host is fenced.
async fn a_host_that_keeps_another_attachment_is_not_fenced(app: TestApp) {
    let Some((app, keyring)) = shared_app(app, "fence=on").await else {
        return;
    };
    app.create_multiattach_type("ma").await;
    let a = create(&app, json!({"size": 1, "volume_type": "ma"})).await;
    let (first, info) = attach_at(&app, &a, "host-2", "127.0.0.2", "rw").await;
    let (second, _) = attach_at(&app, &a, "host-2", "127.0.0.2", "rw").await;
    let mut disk = open(
        Disk::Rbd {
            info,
            keyring: keyring.clone(),
        },
        "127.0.0.2",
    )
    .await;
    assert!(disk.write(0x11, 0, 4096).await.ok);
    detach(&app, &first).await;
    let answered = Instant::now();
    assert_eq!(
        disk.first_failed_write(0x12, answered, Duration::from_secs(3))
            .await,
        None,
        "the host's other server keeps its disk"
    );
    assert_eq!(fences(&app, "kept").await, 1.0);
    let recorded = fence_events(&app, &a).await;
    assert_eq!(recorded[0]["payload"]["outcome"], "kept");
    assert!(
        recorded[0]["payload"]["reason"]
            .as_str()
            .unwrap()
            .contains("another live attachment"),
        "{recorded:?}"
    );
    detach(&app, &second).await;
    let answered = Instant::now();
    let failed = disk
        .first_failed_write(0x13, answered, Duration::from_secs(10))
        .await
        .expect("the host's last attachment ended: it is fenced");
    assert!(failed < FENCED_WITHIN, "{failed:?}");
    assert_eq!(fences(&app, "fenced").await, 1.0);
    disk.close().await;
}

/// `fence=off` keeps Cinder's behaviour: nothing stops a detached host.
async fn fence_off_leaves_a_detached_host_writing(app: TestApp) {
    let Some((app, keyring)) = shared_app(app, "fence=off").await else {
        return;
    };
    let a = create(&app, json!({"size": 1})).await;
    let (attachment, info) = attach_at(&app, &a, "host-2", "127.0.0.2", "rw").await;
    let mut disk = open(Disk::Rbd { info, keyring }, "127.0.0.2").await;
    assert!(disk.write(0x21, 0, 4096).await.ok);
    detach(&app, &attachment).await;
    assert_eq!(
        disk.first_failed_write(0x22, Instant::now(), Duration::from_secs(3))
            .await,
        None
    );
    assert_eq!(fences(&app, "fenced").await, 0.0);
    disk.close().await;
}

/// A fence the cluster could not make is recorded as failed, shown by `check`, and
/// made by reconciliation (the host still holding the volume open is cut off then).
async fn a_failed_fence_is_made_by_reconciliation(app: TestApp) {
    let Some((app, keyring)) = shared_app(app, "fence=on").await else {
        return;
    };
    let a = create(&app, json!({"size": 1})).await;
    let (attachment, info) = attach_at(&app, &a, "host-2", "127.0.0.2", "rw").await;
    let mut disk = open(Disk::Rbd { info, keyring }, "127.0.0.2").await;
    assert!(disk.write(0x31, 0, 4096).await.ok);
    // The detach as it is recorded when the cluster did not answer: the attachment gone
    // from the database, the fence failed.
    app.db
        .execute(&format!(
            "update volume_attachment set deleted = true, attach_status = 'detached' \
              where id = '{attachment}'"
        ))
        .await
        .unwrap();
    let volume: uuid::Uuid = a.parse().unwrap();
    app.store
        .record_fence(&cinder_attach::domain::host_fence::HostFence {
            id: uuid::Uuid::new_v4(),
            volume_id: volume.into(),
            backend_host: app.backends().iter().next().unwrap().host.clone(),
            host_ip: Some("127.0.0.2".into()),
            addresses: Vec::new(),
            outcome: cinder_attach::domain::host_fence::FenceOutcome::Failed,
            reason: "the cluster did not answer".into(),
            created_at: chrono::Utc::now(),
        })
        .await
        .unwrap();
    let backends = app.backends();
    let driver = &backends.iter().next().unwrap().driver;
    let drift = driver.reconcile(false).await.unwrap();
    assert_eq!(drift.len(), 1, "{drift:?}");
    assert!(drift[0].contains("127.0.0.2") && drift[0].contains("did not answer"));
    let repaired = driver.reconcile(true).await.unwrap();
    assert!(repaired[0].contains("fenced"), "{repaired:?}");
    let failed = disk
        .first_failed_write(0x32, Instant::now(), Duration::from_secs(10))
        .await;
    assert!(failed.is_some(), "reconciliation fenced the host");
    assert_eq!(driver.reconcile(false).await.unwrap(), Vec::<String>::new());
    disk.close().await;
}

/// The keyring a per-attachment connection info carries, as the file os-brick writes.
fn keyring_file(info: &Value) -> PathBuf {
    let path = std::env::temp_dir().join(format!("qemu-host-{}.keyring", uuid::Uuid::new_v4()));
    std::fs::write(&path, info["keyring"].as_str().expect("a keyring")).unwrap();
    path
}

/// Per-attachment identities under QEMU: the writer's key writes its volume and no
/// other, a read-only attachment's key reads and cannot open for writing, and the
/// writer still holding the volume open fails its next write once detached.
async fn per_attachment_keys_under_qemu(app: TestApp) {
    if qemu_host::unavailable().is_some() {
        return;
    }
    let Some((app, _conf)) = crate::rbd::per_attachment_app(app).await else {
        return;
    };
    app.create_multiattach_type("ma").await;
    let a = create(&app, json!({"size": 1, "volume_type": "ma"})).await;
    let other = create(&app, json!({"size": 1})).await;
    let (writer_attachment, rw) = attach_at(&app, &a, "host-2", "127.0.0.2", "rw").await;
    let rw_disk = |info: &Value| Disk::Rbd {
        info: info.clone(),
        keyring: keyring_file(info),
    };
    let mut writer = open(rw_disk(&rw), "127.0.0.2").await;
    let wrote = writer.write(0x41, 0, 4096).await;
    assert!(wrote.ok, "{}", wrote.text);

    // QEMU opens every rbd disk read-write in librbd (`rbd_open`, which watches the
    // header), read-only disks too; a read-only identity may not watch, so QEMU cannot
    // open a read-only attachment's volume at all (librbd's own read-only open can:
    // tests/it/rbd.rs). The key is refused either way, never lets a write through.
    let (_, ro) = attach_at(&app, &a, "host-3", "127.0.0.3", "ro").await;
    for read_only in [false, true] {
        let opened = QemuHost::open(&rw_disk(&ro), "127.0.0.3", read_only).await;
        let said = opened.err().expect("QEMU cannot open with a read-only key");
        assert!(said.contains("error reading header"), "{said}");
    }

    let mut stolen = rw.clone();
    stolen["name"] = json!(format!("{}/volume-{other}", pool()));
    let elsewhere = QemuHost::open(&rw_disk(&stolen), "127.0.0.2", false).await;
    assert!(elsewhere.is_err(), "the writer's key opened another volume");

    detach(&app, &writer_attachment).await;
    let failed = writer
        .first_failed_write(0x43, Instant::now(), Duration::from_secs(10))
        .await
        .expect("the detached writer cannot write any more");
    assert!(failed < FENCED_WITHIN, "{failed:?}");
    writer.close().await;
}

/// `tgt` under QEMU's libiscsi driver with CHAP: bytes in and out, the read-only target
/// refuses writes, another volume's target refuses the host, and a host still logged in
/// when its attachment ends cannot write any more.
async fn tgt_under_qemu(app: TestApp) {
    if qemu_host::unavailable().is_some() {
        return;
    }
    let Some(tgtd) = Tgtd::start("qemu_hosts::tgt").await else {
        return;
    };
    let spec = tgtd.backend_spec("tgt", &app.volumes_dir);
    let app = app.with_backends(&[&spec]).await;
    let a = app.multiattach_volume().await;
    let other = create(&app, json!({"size": 1})).await;
    let iscsi = |host: &str, initiator: &str| {
        let mut connector = connector_at(host, "127.0.0.1");
        connector["initiator"] = json!(initiator);
        connector
    };
    const WRITER: &str = "iqn.2004-10.org.test:qemu-writer";
    const READER: &str = "iqn.2004-10.org.test:qemu-reader";
    let (writer_attachment, rw) = attach_with(&app, &a, iscsi("host-a", WRITER), "rw").await;
    assert_eq!(rw["auth_method"], "CHAP");
    let disk = |info: &Value, initiator: &str| Disk::Iscsi {
        info: info.clone(),
        initiator: initiator.to_owned(),
    };
    let mut writer = open(disk(&rw, WRITER), "127.0.0.1").await;
    let wrote = writer.write(0x51, 0, 4096).await;
    assert!(wrote.ok, "{}", wrote.text);
    let read = writer.read(0x51, 0, 4096).await;
    assert!(read.ok, "{}", read.text);

    let (_, ro) = attach_with(&app, &a, iscsi("host-b", READER), "ro").await;
    match QemuHost::open(&disk(&ro, READER), "127.0.0.1", false).await {
        Err(said) => println!("the read-only target opened for writing: {said}"),
        Ok(mut opened) => {
            let wrote = opened.write(0x52, 0, 4096).await;
            assert!(
                !wrote.ok,
                "the read-only target took a write: {}",
                wrote.text
            );
        }
    }
    let mut reader = QemuHost::open(&disk(&ro, READER), "127.0.0.1", true)
        .await
        .expect("the read-only target reads");
    let read = reader.read(0x51, 0, 4096).await;
    assert!(read.ok, "{}", read.text);

    let (_, elsewhere) = attach_with(&app, &other, iscsi("host-c", READER), "rw").await;
    let mut stolen = rw.clone();
    stolen["target_iqn"] = elsewhere["target_iqn"].clone();
    stolen["target_lun"] = elsewhere["target_lun"].clone();
    assert!(
        QemuHost::open(&disk(&stolen, WRITER), "127.0.0.1", false)
            .await
            .is_err(),
        "the writer reached another volume's target"
    );

    detach(&app, &writer_attachment).await;
    // Its session is closed and it may not log in again: QEMU's iSCSI driver keeps the
    // write queued while it tries to (a guest sees the disk hang, not an error), and
    // nothing of it reaches the volume.
    writer.patience(Duration::from_secs(5));
    let after = writer.write(0x53, 0, 4096).await;
    assert!(
        !after.ok,
        "the detached writer still writes: {}",
        after.text
    );
    drop(writer);
    let stored = std::fs::read(app.volume_file(&a)).unwrap();
    assert!(
        stored[..4096].iter().all(|b| *b == 0x51),
        "the volume holds what was written before"
    );
    reader.close().await;
}

backend_tests!(
    per_attachment_keys_under_qemu,
    tgt_under_qemu,
    a_detached_host_is_fenced_with_shared_credentials,
    watchers_are_listed_without_opening_the_image,
    a_host_that_keeps_another_attachment_is_not_fenced,
    fence_off_leaves_a_detached_host_writing,
    a_failed_fence_is_made_by_reconciliation,
);

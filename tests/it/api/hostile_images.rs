//! Images crafted to make the service read host files, served by a hostile image
//! service (`support::hostile_glance`: Glance's calls with correct checksums, serving what
//! a real Glance 33 refuses to store). Each is refused before qemu-img opens it: the
//! volume ends `error` with Cinder's fixed message, nothing of it is left on the backend
//! or in the conversion directory, and no byte of the host file reaches any volume. Safe
//! images of the same formats still make volumes, byte for byte.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cinder_attach::image::inspect::ImageRules;
use cinder_attach::image::{Glance, GlanceConfig};
use cinder_attach::service::Settings;
use serde_json::{json, Value};

use crate::support::helpers::str_of;
use crate::support::hostile_glance::HostileGlance;
use crate::support::TestApp;

const SECRET: &[u8] = b"TOPSECRET host file: root:*:19000:0:99999:7:::\n";
const PATTERN: u8 = 0x5a;

struct Bed {
    app: TestApp,
    glance: HostileGlance,
    /// Where qemu-img works (the service's conversion directory).
    conversion: PathBuf,
    /// A directory of the host outside the service's own, holding `secret`.
    host: PathBuf,
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{name}-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn bed(app: TestApp, rules: ImageRules) -> Bed {
    let glance = HostileGlance::start().await;
    let (conversion, host) = (scratch("conversion"), scratch("host"));
    std::fs::write(host.join("secret"), SECRET).unwrap();
    let client = Glance::new(&GlanceConfig {
        api_servers: vec![glance.url.clone()],
        timeout: Some(Duration::from_secs(20)),
        ..Default::default()
    })
    .unwrap();
    let settings = Settings {
        glance: Some(Arc::new(client)),
        image_conversion_dir: conversion.clone(),
        image_rules: rules,
        ..Settings::default()
    };
    Bed {
        app: app.with_settings(settings),
        glance,
        conversion,
        host,
    }
}

fn qemu_img(args: &[&str]) {
    let out = Command::new("qemu-img")
        .args(args)
        .output()
        .expect("qemu-img runs");
    assert!(out.status.success(), "qemu-img {args:?}: {out:?}");
}

/// A file of `format` made by qemu-img from a MiB of `PATTERN` (extra `-o` options).
fn image_of(dir: &Path, format: &str, options: &[&str]) -> Vec<u8> {
    let raw = dir.join("pattern.raw");
    std::fs::write(&raw, vec![PATTERN; 1 << 20]).unwrap();
    let out = dir.join(format!("made.{format}"));
    let mut args = vec!["convert", "-f", "raw", "-O", format];
    args.extend_from_slice(options);
    args.extend([raw.to_str().unwrap(), out.to_str().unwrap()]);
    qemu_img(&args);
    let bytes = std::fs::read(&out).unwrap();
    std::fs::remove_file(out).unwrap();
    bytes
}

/// A VMDK sparse header giving `capacity` sectors, with `descriptor` embedded.
fn kdmv(capacity: u64, descriptor: &str) -> Vec<u8> {
    let mut data = vec![0u8; 512];
    data[..4].copy_from_slice(b"KDMV");
    data[4..8].copy_from_slice(&1u32.to_le_bytes());
    data[8..12].copy_from_slice(&3u32.to_le_bytes());
    data[12..20].copy_from_slice(&capacity.to_le_bytes());
    data[20..28].copy_from_slice(&128u64.to_le_bytes());
    data[28..36].copy_from_slice(&1u64.to_le_bytes());
    data[36..44].copy_from_slice(&20u64.to_le_bytes());
    let mut text = descriptor.as_bytes().to_vec();
    text.resize(20 * 512, 0);
    data.extend(text);
    data
}

fn descriptor(create_type: &str, extent: &str) -> String {
    format!(
        "# Disk DescriptorFile\nversion=1\nCID=a58c4eb7\nparentCID=ffffffff\n\
         createType=\"{create_type}\"\n\n{extent}\n"
    )
}

/// Makes a volume of `image` and waits for its end: `available` or `error`.
async fn volume_of(bed: &Bed, image: &str) -> (String, String) {
    let made = bed
        .app
        .post_volume(json!({"size": 1, "imageRef": image}), "3.71")
        .await;
    assert_eq!(made.status, 202, "{}", made.text);
    let id = str_of(&made.json["volume"], "id");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = bed.app.volume_status(&id).await;
        if status == "available" || status == "error" {
            return (id, status);
        }
        assert!(Instant::now() < deadline, "volume {id} stays {status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn message_of(app: &TestApp, volume: &str) -> Value {
    app.message_about(volume).await
}

/// The image is refused: `error`, Cinder's message (`detail`), nothing left behind; the
/// volume's id.
async fn assert_refused(
    bed: &Bed,
    what: &str,
    disk_format: &str,
    data: Vec<u8>,
    detail: &str,
) -> String {
    let image = bed.glance.serve(disk_format, data);
    let (volume, status) = volume_of(bed, &image).await;
    assert_eq!(status, "error", "{what} was taken");
    assert!(
        !bed.app.volume_file(&volume).exists(),
        "{what}: a volume file is left"
    );
    let message = message_of(&bed.app, &volume).await;
    assert_eq!(
        message["event_id"],
        format!("VOLUME_VOLUME_005_{detail}"),
        "{what}"
    );
    let text = message["user_message"].as_str().unwrap();
    assert!(text.starts_with("copy image to volume: "), "{what}: {text}");
    assert!(
        !text.contains('/'),
        "{what}: a path in the user message: {text}"
    );
    let left: Vec<_> = std::fs::read_dir(&bed.conversion)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name != "secret")
        .collect();
    assert!(left.is_empty(), "{what}: scratch files left: {left:?}");
    volume
}

/// Deletes a volume (the project's quota holds ten).
async fn delete(app: &TestApp, volume: &str) {
    let path = format!("/v3/p1/volumes/{volume}");
    let deleted = app
        .request(axum::http::Method::DELETE, &path)
        .version("3.71")
        .send()
        .await;
    assert_eq!(deleted.status, 202, "{}", deleted.text);
}

/// No volume file of the backend holds the host file's bytes.
fn assert_no_volume_holds_the_secret(app: &TestApp) {
    let Ok(entries) = std::fs::read_dir(&app.volumes_dir) else {
        return;
    };
    for entry in entries {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(
            !bytes.windows(9).any(|w| w == b"TOPSECRET"),
            "a volume holds the host file"
        );
    }
}

/// The volume's first MiB is the pattern the image was made of.
fn assert_holds_pattern(app: &TestApp, volume: &str) {
    let bytes = std::fs::read(app.volume_file(volume)).unwrap();
    assert_eq!(bytes.len(), 1 << 30);
    assert!(
        bytes[..1 << 20].iter().all(|b| *b == PATTERN),
        "the image's data"
    );
    assert!(bytes[1 << 20..(2 << 20)].iter().all(|b| *b == 0));
}

async fn images_naming_host_files_are_refused_before_qemu_img_reads_them(app: TestApp) {
    let bed = bed(app, ImageRules::default()).await;
    let secret = bed.host.join("secret");
    let secret = secret.to_str().unwrap();
    // A relative extent resolves in the conversion directory, where other volumes'
    // images and LUKS passphrases are written.
    std::fs::write(bed.conversion.join("secret"), SECRET).unwrap();
    let flat = |path: &str| descriptor("monolithicFlat", &format!("RW 2048 FLAT \"{path}\" 0"));
    let cases: Vec<(&str, &str, Vec<u8>)> = vec![
        ("a descriptor-only VMDK", "vmdk", flat(secret).into_bytes()),
        (
            "a relative descriptor-only VMDK",
            "vmdk",
            flat("secret").into_bytes(),
        ),
        (
            "a sparse header handing qemu its extents",
            "vmdk",
            kdmv(0, &flat("secret")),
        ),
        (
            "a flat create type in a sparse header",
            "vmdk",
            kdmv(2048, &flat(secret)),
        ),
        (
            "a twoGbMaxExtentFlat VMDK",
            "vmdk",
            kdmv(
                2048,
                &descriptor("twoGbMaxExtentFlat", "RW 2048 FLAT \"secret\" 0"),
            ),
        ),
        (
            "a sparse VMDK naming a parent",
            "vmdk",
            kdmv(
                2048,
                &format!(
                    "{}parentFileNameHint=\"{secret}\"\n",
                    descriptor("monolithicSparse", "RW 2048 SPARSE \"x.vmdk\"")
                ),
            ),
        ),
        (
            "a qcow2 with a backing file",
            "qcow2",
            image_of(&bed.host, "qcow2", &["-F", "raw", "-B", secret]),
        ),
        (
            "a qcow2 with an external data file",
            "qcow2",
            image_of(
                &bed.host,
                "qcow2",
                &[
                    "-o",
                    &format!("data_file={}", bed.host.join("data").display()),
                ],
            ),
        ),
        (
            "a qcow2 called raw",
            "raw",
            image_of(&bed.host, "qcow2", &[]),
        ),
        (
            "a qcow2 called vmdk",
            "vmdk",
            image_of(&bed.host, "qcow2", &[]),
        ),
        ("raw bytes called qcow2", "qcow2", SECRET.to_vec()),
        ("a QED image", "raw", image_of(&bed.host, "qed", &[])),
        ("a VMDK called raw", "raw", image_of(&bed.host, "vmdk", &[])),
        ("an AMI image no inspector reads", "ami", vec![0; 4096]),
        ("a ploop image no inspector reads", "ploop", vec![0; 4096]),
    ];
    for (what, disk_format, data) in cases {
        let volume = assert_refused(&bed, what, disk_format, data, "001").await;
        delete(&bed.app, &volume).await;
    }
    assert_no_volume_holds_the_secret(&bed.app);
    assert_eq!(std::fs::read(bed.host.join("secret")).unwrap(), SECRET);

    // Safe images of the same formats still become volumes, byte for byte.
    for (disk_format, options) in [
        ("qcow2", vec![]),
        ("vmdk", vec!["-o", "subformat=streamOptimized"]),
        ("vmdk", vec!["-o", "subformat=monolithicSparse"]),
        ("vpc", vec![]),
        ("vdi", vec![]),
    ] {
        let data = image_of(&bed.host, disk_format, &options);
        let glance_format = if disk_format == "vpc" {
            "vhd"
        } else {
            disk_format
        };
        let image = bed.glance.serve(glance_format, data);
        let (volume, status) = volume_of(&bed, &image).await;
        let why = bed
            .app
            .get("/v3/p1/messages")
            .version("3.3")
            .send()
            .await
            .text;
        assert_eq!(status, "available", "{disk_format} {options:?}: {why}");
        assert_holds_pattern(&bed.app, &volume);
        delete(&bed.app, &volume).await;
    }
    let raw = bed.glance.serve("raw", vec![PATTERN; 1 << 20]);
    let (volume, status) = volume_of(&bed, &raw).await;
    assert_eq!(status, "available");
    assert_holds_pattern(&bed.app, &volume);
    // A raw image shorter than the bytes held back for its inspection.
    let tiny = bed.glance.serve("raw", vec![PATTERN; 100]);
    assert_eq!(volume_of(&bed, &tiny).await.1, "available");
    // An extent of the image itself, named without a path: qemu-img reads only the
    // image (never the host file of that name), or nothing is made.
    let own = kdmv(
        2048,
        &descriptor("monolithicSparse", "RW 2048 FLAT \"secret\" 0"),
    );
    let image = bed.glance.serve("vmdk", own);
    volume_of(&bed, &image).await;
    assert_no_volume_holds_the_secret(&bed.app);
    std::fs::remove_dir_all(&bed.conversion).unwrap();
    std::fs::remove_dir_all(&bed.host).unwrap();
}

async fn disabled_conversion_takes_only_raw_images(app: TestApp) {
    let rules = ImageRules {
        conversion_disabled: true,
        ..ImageRules::default()
    };
    let bed = bed(app, rules).await;
    let qcow2 = image_of(&bed.host, "qcow2", &[]);
    let refused = assert_refused(
        &bed,
        "a qcow2 while conversion is off",
        "qcow2",
        qcow2,
        "029",
    );
    let message = message_of(&bed.app, &refused.await).await;
    assert_eq!(
        message["user_message"],
        "copy image to volume: The image disk format must be the same as the volume format \
         for the volume type you are requesting."
    );
    let raw = bed.glance.serve("raw", vec![PATTERN; 1 << 20]);
    let (volume, status) = volume_of(&bed, &raw).await;
    assert_eq!(status, "available");
    assert_holds_pattern(&bed.app, &volume);
    // An upload in another format fails too, leaving the volume as it was.
    let message = failed_qcow2_upload(&bed, &volume, "converted").await;
    assert_eq!(message["event_id"], "VOLUME_VOLUME_003_004");
    std::fs::remove_dir_all(&bed.conversion).unwrap();
    std::fs::remove_dir_all(&bed.host).unwrap();
}

/// A qcow2 upload that fails: accepted, the volume back to `available`, the image
/// deleted from Glance; the user message about it.
async fn failed_qcow2_upload(bed: &Bed, volume: &str, name: &str) -> Value {
    let upload = json!({"os-volume_upload_image": {
        "image_name": name, "disk_format": "qcow2", "container_format": "bare"}});
    let started = bed.app.volume_action(volume, upload).await;
    assert_eq!(started.status, 202, "{}", started.text);
    let image = str_of(&started.json["os-volume_upload_image"], "image_id");
    bed.app.wait_for_status(volume, "available").await;
    assert_eq!(
        bed.glance.record(&image),
        None,
        "the failed image is deleted"
    );
    message_of(&bed.app, volume).await
}

async fn reserved_image_properties_stay_the_services(app: TestApp) {
    let bed = bed(app, ImageRules::default()).await;
    let volume = str_of(&bed.app.create_volume(json!({"size": 1})).await, "id");
    let set = |metadata: Value| json!({"os-set_image_metadata": {"metadata": metadata}});
    // A member may not name a key, claim a signature or write Glance's own namespace.
    for key in [
        "cinder_encryption_key_id",
        "cinder_encryption_key_deletion_policy",
        "signature_verified",
        "img_signature",
        "os_glance_importing_to_stores",
    ] {
        let refused = bed
            .app
            .request(
                axum::http::Method::POST,
                &format!("/v3/p1/volumes/{volume}/action"),
            )
            .token("bob:p1:member,reader")
            .version("3.71")
            .json(&set(json!({"hw_disk_bus": "scsi", key: "x"})))
            .send()
            .await;
        assert_eq!(refused.status, 400, "{key}: {}", refused.text);
        assert!(refused.text.contains(key), "{}", refused.text);
    }
    let shown = bed
        .app
        .volume_action(&volume, json!({"os-show_image_metadata": null}))
        .await;
    assert_eq!(shown.json, json!({"metadata": {}}), "nothing was written");
    // An admin may (a volume made from an encrypted image holds them); an upload never
    // copies them onto the new image.
    let written = bed
        .app
        .volume_action(
            &volume,
            set(
                json!({"hw_disk_bus": "scsi", "cinder_encryption_key_id": "someone-elses",
                       "cinder_encryption_key_deletion_policy": "on_image_deletion",
                       "signature_verified": "True", "img_signature": "forged"}),
            ),
        )
        .await;
    assert_eq!(written.status, 200, "{}", written.text);
    let upload = json!({"os-volume_upload_image": {
        "image_name": "copy", "disk_format": "qcow2", "container_format": "bare"}});
    let started = bed.app.volume_action(&volume, upload).await;
    assert_eq!(started.status, 202, "{}", started.text);
    let image = str_of(&started.json["os-volume_upload_image"], "image_id");
    bed.app.wait_for_status(&volume, "available").await;
    let record = bed.glance.record(&image).expect("the image");
    assert_eq!(record["status"], "active", "{record}");
    assert_eq!(record["hw_disk_bus"], "scsi");
    for key in [
        "cinder_encryption_key_id",
        "cinder_encryption_key_deletion_policy",
        "signature_verified",
        "img_signature",
    ] {
        assert!(record.get(key).is_none(), "{key} copied: {record}");
    }
    std::fs::remove_dir_all(&bed.conversion).unwrap();
    std::fs::remove_dir_all(&bed.host).unwrap();
}

async fn a_volume_holding_an_unsafe_image_is_not_converted_on_upload(app: TestApp) {
    let bed = bed(app, ImageRules::default()).await;
    let volume = str_of(&bed.app.create_volume(json!({"size": 1})).await, "id");
    // What a guest wrote: a qcow2 header naming a host file as its backing file.
    let secret = bed.host.join("secret");
    let header = image_of(
        &bed.host,
        "qcow2",
        &["-F", "raw", "-B", secret.to_str().unwrap()],
    );
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(bed.app.volume_file(&volume))
        .unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, &header, 0).unwrap();
    let message = failed_qcow2_upload(&bed, &volume, "leak").await;
    assert_eq!(
        message["user_message"],
        "copy volume to image: Failed to upload volume to image at backend."
    );
    std::fs::remove_dir_all(&bed.conversion).unwrap();
    std::fs::remove_dir_all(&bed.host).unwrap();
}

backend_tests!(
    images_naming_host_files_are_refused_before_qemu_img_reads_them,
    disabled_conversion_takes_only_raw_images,
    reserved_image_properties_stay_the_services,
    a_volume_holding_an_unsafe_image_is_not_converted_on_upload,
);

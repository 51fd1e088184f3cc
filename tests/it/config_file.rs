//! `--config-file`: the service started from a Cinder `cinder.conf` (the reference Cinder's
//! own file, and a minimal one) on both stores; broken values stop it with the file,
//! section and option named.

use std::process::Command;

use serde_json::json;

use crate::support::process::{http, ServerProcess};
use crate::support::{Backend, TestDb};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn temp_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("cinder-attach-conf-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The test database as SQLAlchemy names it in a `cinder.conf`.
fn sqlalchemy_url(db: &TestDb) -> String {
    match db.url.strip_prefix("sqlite://") {
        // Ours is `sqlite:///absolute`; SQLAlchemy's is `sqlite:////absolute`.
        Some(path) => format!("sqlite:///{path}"),
        None => db.url.replacen("postgres://", "postgresql+psycopg2://", 1),
    }
}

/// A policy nobody passes for listing volumes: proof the file's policy is in force.
const POLICY: &str = "\"volume:get_all\": \"!\"\n";

fn started(dir: &std::path::Path, conf: &str) -> ServerProcess {
    let path = dir.join("cinder.conf");
    std::fs::write(&path, conf).expect("conf written");
    ServerProcess::start_args(&["serve", "--config-file", path.to_str().expect("utf-8")])
}

/// The service listens where the file says, keeps volumes in the file's database and
/// enforces the file's policy.
fn assert_configured(server: &ServerProcess, port: u16) {
    assert_eq!(server.addr, format!("127.0.0.1:{port}"));
    let (status, body) = http(
        &server.addr,
        "POST",
        "/v3/p1/volumes",
        Some(&json!({"volume": {"size": 1}})),
    );
    assert_eq!(status, 202, "{body}");
    let (status, body) = http(&server.addr, "GET", "/v3/p1/volumes", None);
    assert_eq!(status, 403, "the file's policy: {body}");
}

async fn a_minimal_cinder_conf(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let dir = temp_dir();
    std::fs::write(dir.join("policy.yaml"), POLICY).unwrap();
    let port = free_port();
    let conf = format!(
        "[DEFAULT]\nosapi_volume_listen_port = {port}\nhost = test-host\n\
         enabled_backends = files\n[files]\nvolume_driver = file\ndir = {volumes}\n\
         [database]\nconnection = {url}\n[oslo_policy]\npolicy_file = policy.yaml\n",
        volumes = dir.join("volumes").display(),
        url = sqlalchemy_url(&db),
    );
    let server = started(&dir, &conf);
    assert_configured(&server, port);
    assert_eq!(
        db.column("select cast(count(*) as text) from volumes where deleted = false")
            .await,
        ["1"]
    );
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

/// The reference Cinder's own `cinder.conf.in` (tests/config), with its placeholders
/// filled and its test driver replaced by ours: every other key stays as Cinder has it.
async fn the_reference_cinder_conf(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let dir = temp_dir();
    std::fs::create_dir_all(dir.join("etc")).unwrap();
    std::fs::write(dir.join("etc/policy.yaml"), POLICY).unwrap();
    let port = free_port();
    let reference = include_str!("../config/reference-cinder.conf.in");
    let conf = reference
        .replace("@HERE@", dir.to_str().unwrap())
        .replace(
            "osapi_volume_listen_port = 8776",
            &format!("osapi_volume_listen_port = {port}"),
        )
        .replace(
            "volume_driver = cinder_anchor_fake.AnchorFakeMultiattachDriver",
            &format!(
                "volume_driver = file\ndir = {}",
                dir.join("volumes").display()
            ),
        )
        .replace(
            "postgresql+psycopg2://cinder_anchor:cinder_anchor@127.0.0.1:5432/cinder_anchor",
            &sqlalchemy_url(&db),
        );
    let server = started(&dir, &conf);
    assert_configured(&server, port);
    // `host = anchor` and `enabled_backends = fake` name the volume's home.
    assert_eq!(
        db.column("select host from volumes").await,
        ["anchor@fake#fake"]
    );
    // Its `quota_* = -1` lines are the quota defaults.
    let (status, body) = http(&server.addr, "GET", "/v3/p1/os-quota-sets/p1", None);
    assert_eq!(status, 200, "{body}");
    for resource in ["volumes", "gigabytes", "snapshots", "per_volume_gigabytes"] {
        assert_eq!(body["quota_set"][resource], -1, "{resource}: {body}");
    }
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

process_tests!(a_minimal_cinder_conf, the_reference_cinder_conf);

#[test]
fn a_broken_value_stops_start_up_naming_it() {
    let dir = temp_dir();
    let path = dir.join("cinder.conf");
    std::fs::write(&path, "[DEFAULT]\nosapi_volume_listen_port = http\n").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_cinder-attach"))
        .args(["serve", "--config-file", path.to_str().unwrap()])
        .env_remove("CINDER_ATTACH_CONFIG_FILE")
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "{}: [DEFAULT] osapi_volume_listen_port: 'http' is not a port number",
            path.display()
        )),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn config_prints_the_effective_settings_and_their_sources() {
    let dir = temp_dir();
    let path = dir.join("cinder.conf");
    std::fs::write(
        &path,
        "[DEFAULT]\nhost = from-file\nquota_volumes = -1\n[keystone_authtoken]\npassword = s3cret\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_cinder-attach"))
        .args(["config", "--config-file", path.to_str().unwrap()])
        .env_remove("CINDER_ATTACH_CONFIG_FILE")
        .env("CINDER_ATTACH_LISTEN", "127.0.0.1:9999")
        .output()
        .expect("runs");
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!(
            "--host = from-file    ({} [DEFAULT] host)",
            path.display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("--listen = 127.0.0.1:9999    (environment CINDER_ATTACH_LISTEN)"),
        "{stdout}"
    );
    assert!(stdout.contains("--keystone-password = ***"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "--quota-volumes = -1    ({} [DEFAULT] quota_volumes)",
            path.display()
        )),
        "{stdout}"
    );
    assert!(!stdout.contains("s3cret"), "{stdout}");
    let _ = std::fs::remove_dir_all(dir);
}

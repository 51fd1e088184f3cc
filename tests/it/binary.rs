//! The real binary: start-up defaults, the noauth guard, the migrate subcommand, and a
//! request over a real socket.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn binary() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cinder-attach"));
    // Start from a clean environment so a developer's CINDER_ATTACH_* cannot leak in.
    for (key, _) in std::env::vars() {
        if key.starts_with("CINDER_ATTACH_") {
            command.env_remove(key);
        }
    }
    command.env("RUST_LOG", "info");
    command
}

fn temp_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("cinder-attach-bin-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A raw HTTP/1.1 GET, enough for a smoke test without a client library.
fn http_get(addr: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// Sends a signal (`-TERM`, `-HUP`) with kill(1), which must succeed.
fn send_signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .arg(signal)
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success(), "kill {signal} {pid}: {status}");
}

#[test]
fn serves_with_no_configuration_and_stops_on_sigterm() {
    let dir = temp_dir();
    let mut child = binary()
        .current_dir(&dir)
        .env("CINDER_ATTACH_LISTEN", "127.0.0.1:0")
        // Piped, not a terminal: no colour even without NO_COLOR.
        .env_remove("NO_COLOR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary starts");
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut addr = None;
    for line in stdout.lines() {
        let line = line.unwrap();
        assert!(
            !line.contains('\u{1b}'),
            "escape codes in a piped log: {line:?}"
        );
        if let Some(rest) = line.split("address=").nth(1) {
            addr = Some(rest.split_whitespace().next().unwrap().to_owned());
            break;
        }
        assert!(Instant::now() < deadline, "no listening line");
    }
    let addr = addr.expect("the service reports where it listens");
    let response = http_get(&addr, "/");
    assert!(response.starts_with("HTTP/1.1 300"), "{response}");
    assert!(response.contains("\"version\":\"3.71\""));
    assert!(
        dir.join("data/cinder-attach.db").exists(),
        "embedded SQLite under ./data/"
    );

    send_signal(child.id(), "-TERM");
    let exit = child.wait().unwrap();
    assert!(exit.success(), "graceful stop exits 0: {exit:?}");
    let _ = std::fs::remove_dir_all(dir);
}

/// A supervisor may stop the service the moment it logs where it listens; the stop must
/// still be graceful (exit 0, "stopped" logged), each of several tries.
#[test]
fn a_sigterm_sent_as_soon_as_it_listens_is_a_graceful_stop() {
    for _ in 0..5 {
        let dir = temp_dir();
        let mut child = binary()
            .current_dir(&dir)
            .env("CINDER_ATTACH_LISTEN", "127.0.0.1:0")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("binary starts");
        let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let listening = stdout
            .by_ref()
            .map(Result::unwrap)
            .find(|l| l.contains("listening"));
        assert!(listening.is_some(), "no listening line");
        send_signal(child.id(), "-TERM");
        let rest: Vec<String> = stdout.map(Result::unwrap).collect();
        let exit = child.wait().unwrap();
        assert!(exit.success(), "graceful stop exits 0: {exit:?}");
        assert!(rest.iter().any(|l| l.contains("stopped")), "{rest:?}");
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn noauth_refuses_a_public_address() {
    let dir = temp_dir();
    let output = binary()
        .current_dir(&dir)
        .args(["serve", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("refusing to serve noauth"), "{stderr}");
    assert!(
        !dir.join("data").exists(),
        "nothing created before refusing"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn migrate_subcommand_creates_the_schema() {
    let dir = temp_dir();
    let url = format!("sqlite://{}", dir.join("m.db").display());
    let output = binary()
        .args(["migrate", "--database-url", &url])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(dir.join("m.db").exists());
    let bad = binary()
        .args(["migrate", "--database-url", "mysql://x"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unsupported database URL"));
    // `purge` on the migrated database: nothing deleted yet, one line per table.
    let purged = binary()
        .args(["purge", "--older-than", "30", "--database-url", &url])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&purged.stdout);
    assert!(
        purged.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&purged.stderr)
    );
    assert!(out.contains("volumes: 0 rows purged"), "{out}");
    assert!(out.contains("0 rows deleted before"), "{out}");
    let missing = binary()
        .args(["purge", "--database-url", &url])
        .output()
        .unwrap();
    assert!(!missing.status.success(), "--older-than is required");
    let _ = std::fs::remove_dir_all(dir);
}

fn policy_file(text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!(
        "cinder-attach-policy-{}.yaml",
        uuid::Uuid::new_v4()
    ));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn policy_subcommand_prints_the_effective_rules() {
    let file = policy_file("\"volume:multiattach\": \"role:admin\"\n");
    let output = binary()
        .args(["policy", "--policy-file"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("\"volume:multiattach\": \"role:admin\""),
        "{text}"
    );
    assert!(text.contains("\"volume:create\": \"rule:xena_system_admin_or_project_member\""));
    let _ = std::fs::remove_file(file);
}

#[test]
fn a_broken_policy_file_stops_start_up_at_its_line() {
    let file = policy_file("# ok\n\"volume:create\": \"rule:missing_rule\"\n");
    let output = binary()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--database-url",
            "sqlite::memory:",
            "--policy-file",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("{}:2:", file.display())),
        "{stderr}"
    );
    assert!(stderr.contains("missing_rule"), "{stderr}");
    let _ = std::fs::remove_file(file);
}

fn hang_up(server: &crate::support::process::ServerProcess) {
    send_signal(server.child.id(), "-HUP");
}

#[test]
fn sighup_reloads_the_policy_file() {
    use crate::support::process::{http_as, ServerProcess};
    let dir = temp_dir();
    let file = policy_file("\"volume:create\": \"role:admin\"\n");
    let url = format!("sqlite://{}", dir.join("p.db").display());
    let server = ServerProcess::start_with(
        &url,
        &dir.join("vols"),
        &["--policy-file", file.to_str().unwrap()],
    );
    let body = serde_json::json!({"volume": {"size": 1}});
    let create = || {
        http_as(
            &server.addr,
            "bob:p1:member,reader",
            "POST",
            "/v3/p1/volumes",
            Some(&body),
        )
        .0
    };
    assert_eq!(create(), 403, "members may not create under the file");
    std::fs::write(&file, "\"volume:create\": \"@\"\n").unwrap();
    hang_up(&server);
    let deadline = Instant::now() + Duration::from_secs(10);
    while create() != 202 {
        assert!(Instant::now() < deadline, "policy was not reloaded");
        std::thread::sleep(Duration::from_millis(100));
    }
    // A file nested 3,000 deep used to overflow the stack on reload and kill the
    // process; now it is refused and the rules in force stay.
    let deep = format!(
        "\"volume:create\": \"{}role:admin{}\"\n",
        "(".repeat(3_000),
        ")".repeat(3_000)
    );
    std::fs::write(&file, deep).unwrap();
    hang_up(&server);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let refused = server
            .log
            .lock()
            .unwrap()
            .iter()
            .any(|event| event.to_string().contains("nested deeper than 32"));
        if refused {
            break;
        }
        assert!(Instant::now() < deadline, "the deep file was not refused");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(create(), 202, "the rules in force stayed");
    drop(server);
    let _ = std::fs::remove_file(file);
    let _ = std::fs::remove_dir_all(dir);
}

/// Metrics are served on their own address only, and JSON log lines carry the request id.
#[test]
fn metrics_listener_and_json_logs() {
    let dir = temp_dir();
    let server = crate::support::process::ServerProcess::start_with(
        &format!("sqlite://{}", dir.join("db.sqlite").display()),
        &dir.join("volumes"),
        &["--metrics-listen", "127.0.0.1:0"],
    );
    let metrics_addr = server
        .startup_log
        .iter()
        .find(|e| e["message"] == "metrics listening")
        .and_then(|e| e["address"].as_str())
        .expect("the metrics address is logged")
        .to_owned();
    let mut stream = TcpStream::connect(&server.addr).expect("connect");
    write!(
        stream,
        "GET /v3/p1/volumes/{} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         X-Auth-Token: admin:p1\r\n\r\n",
        uuid::Uuid::new_v4()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 404"), "{response}");
    let request_id = response
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("x-openstack-request-id: ")
                .map(str::to_owned)
        })
        .expect("a request id header");

    let scraped = http_get(&metrics_addr, "/metrics");
    assert!(scraped.starts_with("HTTP/1.1 200"), "{scraped}");
    assert!(scraped.contains(r#"route="/v3/{project_id}/volumes/{volume_id}",status="404""#));
    assert!(http_get(&server.addr, "/metrics").starts_with("HTTP/1.1 404"));

    // The 404 is logged once, as JSON, inside the request's span.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let found = server.log.lock().unwrap().iter().any(|event| {
            event["span"]["request_id"] == request_id.as_str() && event["status"] == 404
        });
        if found {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no log line carries the request id: {:?}",
            server.log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn healthcheck_asks_a_running_service() {
    let dir = temp_dir();
    let db = format!("sqlite://{}", dir.join("h.db").display());
    let server = crate::support::process::ServerProcess::start(&db, &dir.join("volumes"));
    let ask = |extra: &[&str]| {
        binary()
            .args(["healthcheck", "--listen", &server.addr])
            .args(extra)
            .output()
            .unwrap()
    };
    let plain = ask(&[]);
    assert!(plain.status.success(), "{plain:?}");
    assert_eq!(String::from_utf8_lossy(&plain.stdout).trim(), "OK");
    let detailed = ask(&["--detailed"]);
    assert!(detailed.status.success(), "{detailed:?}");
    assert!(String::from_utf8_lossy(&detailed.stdout).contains("\"database\":\"OK\""));
    drop(server);
    let closed = binary()
        .args(["healthcheck", "--listen", "127.0.0.1:9", "--timeout", "3"])
        .output()
        .unwrap();
    assert_eq!(closed.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&closed.stderr).contains("127.0.0.1:9/healthcheck"));
    let _ = std::fs::remove_dir_all(dir);
}

/// The systemd unit in deploy/ passes `systemd-analyze verify` without a warning (where
/// that program exists), with its ExecStart pointed at the binary under test.
#[test]
fn the_systemd_unit_verifies() {
    let Ok(version) = Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!("note: no systemd-analyze here; the unit is not verified");
        return;
    };
    assert!(version.status.success());
    let unit = include_str!("../../deploy/cinder-attach.service").replace(
        "/usr/local/bin/cinder-attach",
        env!("CARGO_BIN_EXE_cinder-attach"),
    );
    let dir = temp_dir();
    let path = dir.join("cinder-attach.service");
    std::fs::write(&path, unit).unwrap();
    let verified = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&verified.stderr);
    assert!(verified.status.success(), "{stderr}");
    assert!(stderr.trim().is_empty(), "warnings: {stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

/// `--version` names the release (the newest entry of CHANGELOG.md) and, built from a
/// checkout, the commit.
#[test]
fn the_version_names_its_changelog_entry_and_commit() {
    let out = binary().arg("--version").output().expect("runs");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    let commit = text
        .trim()
        .strip_prefix(&format!("cinder-attach {version} (commit "))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{text:?}"));
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    if manifest.join(".git").exists() {
        assert!(
            commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit()),
            "{text:?}"
        );
    }
    let changelog = std::fs::read_to_string(manifest.join("CHANGELOG.md")).unwrap();
    let newest = changelog
        .lines()
        .find_map(|line| line.strip_prefix("## "))
        .expect("a version in CHANGELOG.md");
    assert!(
        newest.starts_with(&format!("{version} ")),
        "CHANGELOG.md's newest entry is {newest:?}, the binary's version {version}"
    );
}

//! A backup survives its service being killed: the process is killed with SIGKILL while
//! it writes a backup; once it is back, the backup ends `error` with a message for the
//! user, its source volume is `available` again, nothing half-written is left in the
//! repository, and the next backup of the volume succeeds.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use uuid::Uuid;

use crate::support::process::ServerProcess;
use crate::support::{Backend, TestDb};

/// One MiB that does not compress, written 256 times: a quarter GiB to back up.
fn fill(path: &Path) {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let block: Vec<u8> = (0..1 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    for _ in 0..256 {
        file.write_all(&block).unwrap();
    }
    file.sync_all().unwrap();
}

fn wait_for(server: &ServerProcess, path: &str, what: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, shown) = server.send("GET", path, None);
        if status == 200 && what(&shown) {
            return shown;
        }
        assert!(Instant::now() < deadline, "{path} never got there: {shown}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Files of the repository whose name holds `text`.
fn objects_named(dir: &Path, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(dir).unwrap().map_while(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.to_string_lossy().contains(text) {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

async fn a_killed_backup_ends_in_error_and_the_next_one_works(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    db.store().await.close().await;
    let root = std::env::temp_dir().join(format!("cinder-attach-backup-crash-{}", Uuid::new_v4()));
    let (volumes, backups) = (root.join("volumes"), root.join("backups"));
    std::fs::create_dir_all(&volumes).unwrap();
    std::fs::create_dir_all(&backups).unwrap();
    let backups_arg = backups.display().to_string();
    let extra = [
        "--backup-posix-path",
        &backups_arg,
        "--backup-stale-after",
        "2",
    ];
    let mut server = ServerProcess::start_with(&db.url, &volumes, &extra);
    let (status, made) = server.send(
        "POST",
        "/v3/p1/volumes",
        Some(&json!({"volume": {"size": 1}})),
    );
    assert_eq!(status, 202, "{made}");
    let volume = made["volume"]["id"].as_str().unwrap().to_owned();
    fill(&volumes.join(format!("volume-{volume}")));

    let body = json!({"backup": {"volume_id": volume, "name": "cut short"}});
    let (status, made) = server.send("POST", "/v3/p1/backups", Some(&body));
    assert_eq!(status, 202, "{made}");
    let backup = made["backup"]["id"].as_str().unwrap().to_owned();
    std::thread::sleep(Duration::from_millis(300));
    let (_, shown) = server.send("GET", &format!("/v3/p1/backups/{backup}"), None);
    assert_eq!(
        shown["backup"]["status"], "creating",
        "still writing when killed"
    );
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    drop(server);

    let server = ServerProcess::start_with(&db.url, &volumes, &extra);
    let path = format!("/v3/p1/backups/{backup}");
    let ended = wait_for(&server, &path, |b| b["backup"]["status"] == "error");
    let reason = ended["backup"]["fail_reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("stopped while the backup was being written"),
        "{ended}"
    );
    let path = format!("/v3/p1/volumes/{volume}");
    wait_for(&server, &path, |v| v["volume"]["status"] == "available");
    assert_eq!(objects_named(&backups, &backup), Vec::<String>::new());

    let body = json!({"backup": {"volume_id": volume}});
    let (status, made) = server.send("POST", "/v3/p1/backups", Some(&body));
    assert_eq!(status, 202, "{made}");
    let next = made["backup"]["id"].as_str().unwrap().to_owned();
    let path = format!("/v3/p1/backups/{next}");
    let done = wait_for(&server, &path, |b| b["backup"]["status"] == "available");
    assert_eq!(done["backup"]["fail_reason"], Value::Null);
    let (status, _) = server.send("DELETE", &format!("/v3/p1/backups/{backup}"), None);
    assert_eq!(status, 202, "a backup that ended in error can be deleted");
    drop(server);
    let _ = std::fs::remove_dir_all(&root);
}

process_tests!(a_killed_backup_ends_in_error_and_the_next_one_works);

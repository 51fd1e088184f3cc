//! Graceful shutdown of the real binary: SIGTERM closes the listener at once, lets a
//! request that is already running finish, and exits; a request that outlives
//! `--shutdown-grace` is cut off without leaving anything half-written.

use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use uuid::Uuid;

use crate::support::lock::VolumeLock;
use crate::support::process::{http, ServerProcess};
use crate::support::{Backend, TestDb};

fn terminate(server: &ServerProcess) {
    let sent = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
}

fn wait_exit(server: &mut ServerProcess, limit: Duration) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = server.child.try_wait().expect("wait") {
            return status;
        }
        assert!(
            started.elapsed() < limit,
            "the server did not exit within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn new_volume(server: &ServerProcess) -> String {
    let (status, body) = server.send(
        "POST",
        "/v3/p1/volumes",
        Some(&json!({"volume": {"size": 1}})),
    );
    assert_eq!(status, 202, "{body}");
    body["volume"]["id"].as_str().expect("id").to_owned()
}

fn attach_in_background(
    server: &ServerProcess,
    volume: &str,
) -> std::thread::JoinHandle<(u16, serde_json::Value)> {
    let (addr, body) = (
        server.addr.clone(),
        json!({"attachment": {"volume_uuid": volume, "instance_uuid": Uuid::new_v4().to_string()}}),
    );
    std::thread::spawn(move || http(&addr, "POST", "/v3/p1/attachments", Some(&body)))
}

async fn in_flight_request_finishes(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let volumes = std::env::temp_dir().join(format!("cinder-attach-stop-{}", Uuid::new_v4()));
    let mut server = ServerProcess::start(&db.url, &volumes);
    let volume = new_volume(&server);
    let lock = VolumeLock::take(&db, &volume).await;
    let request = attach_in_background(&server, &volume);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !request.is_finished(),
        "the attach should wait for the lock"
    );

    terminate(&server);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        TcpStream::connect(&server.addr).is_err(),
        "the listener must close on SIGTERM"
    );
    assert!(
        server.child.try_wait().expect("wait").is_none(),
        "exited with a request in flight"
    );

    lock.release().await;
    let (status, body) = tokio::task::spawn_blocking(move || request.join().expect("answered"))
        .await
        .expect("joined");
    assert_eq!(status, 200, "{body}");
    let exit = tokio::task::block_in_place(|| wait_exit(&mut server, Duration::from_secs(10)));
    assert!(exit.success(), "{exit}");
    let stored = db
        .column(&format!(
            "select attach_status from volume_attachment where volume_id = '{volume}' and deleted = false"
        ))
        .await;
    assert_eq!(stored, ["reserved"]);
    assert_eq!(
        db.column(&format!("select status from volumes where id = '{volume}'"))
            .await,
        ["reserved"]
    );
    let _ = std::fs::remove_dir_all(&volumes);
}

/// The grace period bounds the wait: a request stuck behind a lock is cut off, its
/// transaction rolled back.
async fn stuck_request_is_cut_off_after_the_grace(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let volumes = std::env::temp_dir().join(format!("cinder-attach-stop-{}", Uuid::new_v4()));
    let mut server = ServerProcess::start_with(&db.url, &volumes, &["--shutdown-grace", "1"]);
    let volume = new_volume(&server);
    let lock = VolumeLock::take(&db, &volume).await;
    let request = attach_in_background(&server, &volume);
    tokio::time::sleep(Duration::from_millis(300)).await;

    let stopped = Instant::now();
    terminate(&server);
    let exit = tokio::task::block_in_place(|| wait_exit(&mut server, Duration::from_secs(4)));
    assert!(exit.success(), "{exit}");
    assert!(
        stopped.elapsed() >= Duration::from_millis(900),
        "the grace period was skipped"
    );
    assert!(
        tokio::task::spawn_blocking(move || request.join())
            .await
            .expect("joined")
            .is_err(),
        "the stuck request cannot have been answered"
    );
    lock.release().await;
    assert_eq!(
        db.column(&format!(
            "select id from volume_attachment where volume_id = '{volume}'"
        ))
        .await,
        Vec::<String>::new()
    );
    assert_eq!(
        db.column(&format!("select status from volumes where id = '{volume}'"))
            .await,
        ["available"]
    );
    let _ = std::fs::remove_dir_all(&volumes);
}

mod in_flight_request_finishes {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::in_flight_request_finishes(crate::support::Backend::Sqlite).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        super::in_flight_request_finishes(crate::support::Backend::Postgres).await;
    }
}

mod stuck_request_is_cut_off_after_the_grace {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        super::stuck_request_is_cut_off_after_the_grace(crate::support::Backend::Postgres).await;
    }
}

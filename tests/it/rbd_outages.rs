//! Outages of a per-attachment `rbd` backend while hosts attach and detach:
//! - the cluster's monitor killed and restarted. The case runs on a cluster of its own
//!   (the other rbd tests share one and must not see its monitor go), once per store, one
//!   store after the other: every request answers within bounds (an error while the
//!   monitor is away says so), work goes on once it is back, and the cluster ends up
//!   holding exactly what the database does;
//! - the service killed (SIGKILL) between decisions in the database and their changes
//!   on the cluster (detaches decided while the monitor is stopped, so their changes
//!   wait): the process started next puts the cluster back to what the database holds
//!   before it serves.

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::rbd::{admin, ceph_conf, host_of, image};
use crate::support::helpers::{conn_for, str_of};
use crate::support::process::ServerProcess;
use crate::support::{Backend, TestDb};

/// A single-node cluster started by `scripts/start-ceph` for this test alone, stopped
/// and removed on drop.
struct OwnCluster {
    conf: String,
    work: String,
    /// The monitor the script started, until it is killed.
    mon: u32,
    mon_killed: bool,
    others: Vec<u32>,
    restarted_mon: Option<Child>,
}

impl OwnCluster {
    fn start() -> OwnCluster {
        let script = concat!(
            r#"eval "$(scripts/start-ceph)" && "#,
            r#"printf '%s\n%s\n%s\n' "$CEPH_CONF" "$CEPH_WORK" "$CEPH_PIDS""#
        );
        let out = Command::new("bash")
            .args(["-c", script])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stderr(Stdio::inherit())
            .output()
            .expect("scripts/start-ceph runs");
        assert!(out.status.success(), "scripts/start-ceph failed");
        let text = String::from_utf8(out.stdout).unwrap();
        let mut lines = text.lines();
        let (conf, work) = (lines.next().unwrap(), lines.next().unwrap());
        // The mon is started first.
        let mut pids = lines.next().unwrap().split(' ').map(|p| p.parse().unwrap());
        OwnCluster {
            conf: conf.to_owned(),
            work: work.to_owned(),
            mon: pids.next().unwrap(),
            mon_killed: false,
            others: pids.collect(),
            restarted_mon: None,
        }
    }

    /// SIGKILL to the monitor, wherever it was started from.
    fn kill_mon(&mut self) {
        if let Some(mut mon) = self.restarted_mon.take() {
            mon.kill().unwrap();
            mon.wait().unwrap();
            return;
        }
        let status = Command::new("kill")
            .args(["-9", &self.mon.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        self.mon_killed = true;
    }

    /// Sends `kill <signal>` to the running monitor.
    fn signal_mon(&self, signal: &str) {
        let pid = match &self.restarted_mon {
            Some(mon) => mon.id(),
            None => self.mon,
        };
        let status = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Starts the monitor again on its store and address, as the script did.
    fn restart_mon(&mut self) {
        let log = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(format!("{}/log/mon.a.out", self.work))
            .unwrap();
        let child = Command::new("ceph-mon")
            .args(["-c", &self.conf, "-f", "-i", "a"])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("ceph-mon starts");
        self.restarted_mon = Some(child);
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        if let Some(mut mon) = self.restarted_mon.take() {
            let _ = mon.kill();
            let _ = mon.wait();
        }
        let mon = (!self.mon_killed).then_some(self.mon);
        for pid in mon.into_iter().chain(self.others.iter().copied()) {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
        std::thread::sleep(Duration::from_secs(1));
        let _ = std::fs::remove_dir_all(&self.work);
    }
}

/// What one host saw of one request.
struct Answer {
    status: u16,
    body: Value,
    took: Duration,
    at: Instant,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_monitor_restarted_and_the_service_killed_mid_change() {
    // Runs where the shared cluster does (and must, in CI).
    if ceph_conf().is_none() {
        return;
    }
    let mut cluster = OwnCluster::start();
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let Some(db) = TestDb::create(backend).await else {
            continue;
        };
        db.store().await.close().await;
        under_load(&mut cluster, &db.url);
    }
}

fn under_load(cluster: &mut OwnCluster, database_url: &str) {
    let name = format!("c{}", &uuid::Uuid::new_v4().simple().to_string()[..10]);
    let spec = format!(
        "{name}=rbd,conf={},pool=volumes,capacity_gb=1000,credentials=per-attachment,\
         connect_timeout=2",
        cluster.conf
    );
    let start = || ServerProcess::start_with_backend("127.0.0.1:0", database_url, &spec, &[]);
    let server = Arc::new(start());
    let volumes: Vec<String> = (0..4)
        .map(|_| {
            let (status, created) = server.send(
                "POST",
                "/v3/p1/volumes",
                Some(&json!({"volume": {"size": 1}})),
            );
            assert_eq!(status, 202, "{created}");
            str_of(&created["volume"], "id")
        })
        .collect();
    for volume in &volumes {
        wait_for_status(&server, volume, "available");
    }

    // Each host attaches its volume and detaches it again, over and over; a detach
    // that fails is tried again before the next attach.
    let stop = Arc::new(AtomicBool::new(false));
    let answers = Arc::new(Mutex::new(Vec::new()));
    let hosts: Vec<_> = volumes
        .iter()
        .enumerate()
        .map(|(n, volume)| {
            let (server, stop, answers) = (server.clone(), stop.clone(), answers.clone());
            let volume = volume.clone();
            std::thread::spawn(move || {
                let mut live: Option<String> = None;
                while !stop.load(Ordering::Relaxed) {
                    let started = Instant::now();
                    let (status, body) = match &live {
                        Some(id) => {
                            server.send("DELETE", &format!("/v3/p1/attachments/{id}"), None)
                        }
                        None => server.send(
                            "POST",
                            "/v3/p1/attachments",
                            Some(&json!({"attachment": {
                                "volume_uuid": volume,
                                "instance_uuid": uuid::Uuid::new_v4().to_string(),
                                "connector": conn_for(&format!("node-{n}"), "/dev/vdb")}})),
                        ),
                    };
                    match (&live, status) {
                        (Some(_), 200) => live = None,
                        (None, 200) => live = Some(str_of(&body["attachment"], "id")),
                        _ => std::thread::sleep(Duration::from_millis(100)),
                    }
                    answers.lock().unwrap().push(Answer {
                        status,
                        body,
                        took: started.elapsed(),
                        at: Instant::now(),
                    });
                }
                live
            })
        })
        .collect();

    // Away longer than the backend waits for a monitor (2 s): requests meanwhile fail.
    std::thread::sleep(Duration::from_secs(2));
    cluster.kill_mon();
    std::thread::sleep(Duration::from_secs(5));
    cluster.restart_mon();
    let back = Instant::now();
    // A client hunting for a monitor tries again at growing intervals (3 s, then 1.5
    // times that): give it time to find the restarted one, then time to work.
    std::thread::sleep(Duration::from_secs(15));
    stop.store(true, Ordering::Relaxed);
    let left: Vec<String> = hosts
        .into_iter()
        .filter_map(|h| h.join().expect("a host's thread"))
        .collect();

    let answers = answers.lock().unwrap();
    let failed = answers.iter().filter(|a| a.status != 200).count();
    let slowest = answers.iter().map(|a| a.took).max().unwrap_or_default();
    let first_error = answers.iter().find(|a| a.status != 200);
    eprintln!(
        "mon restart: {} answers, {failed} errors, slowest {slowest:?}; first error {:?}",
        answers.len(),
        first_error.map(|a| (a.status, a.body.to_string()))
    );
    assert!(failed > 0, "no request met the monitor's absence");
    for answer in answers.iter() {
        assert!(
            answer.took < Duration::from_secs(15),
            "a request took {:?}",
            answer.took
        );
        if answer.status != 200 {
            assert!(answer.status >= 400, "{}: {}", answer.status, answer.body);
            let text = answer.body.to_string();
            assert!(
                text.contains("message"),
                "an error without a message: {text}"
            );
        }
    }
    let settled = back + Duration::from_secs(8);
    assert!(
        answers
            .iter()
            .filter(|a| a.at > settled && a.status == 200)
            .count()
            >= 4,
        "attaches and detaches go on once the monitor is back"
    );

    // Whatever was left attached goes; then the cluster holds no identity of this
    // backend, whichever requests failed on the way (reconciliation removes strays).
    for id in left {
        let (status, body) = server.send("DELETE", &format!("/v3/p1/attachments/{id}"), None);
        assert_eq!(status, 200, "{body}");
    }
    for volume in &volumes {
        wait_for_status(&server, volume, "available");
    }
    let prefix = format!("client.ca.{name}.");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let strays = identities_with_prefix(&cluster.conf, &prefix);
        if strays.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "identities no attachment backs: {strays:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }

    // And a host attached now reads and writes with its key.
    let (status, attached) = server.send(
        "POST",
        "/v3/p1/attachments",
        Some(&json!({"attachment": {"volume_uuid": volumes[0],
            "instance_uuid": uuid::Uuid::new_v4().to_string(),
            "connector": conn_for("node-after", "/dev/vdb")}})),
    );
    assert_eq!(status, 200, "{attached}");
    let info = &attached["attachment"]["connection_info"];
    let host = host_of(info).expect("the host connects with its key");
    let io = host.io("volumes", None).unwrap();
    let opened = io.open(&image(info), None, false).unwrap();
    opened.write(0, b"after").unwrap();
    opened.flush().unwrap();
    drop(opened);
    let id = str_of(&attached["attachment"], "id");
    let (status, body) = server.send("DELETE", &format!("/v3/p1/attachments/{id}"), None);
    assert_eq!(status, 200, "{body}");

    // Every host attached again; then the monitor stops (SIGSTOP), and the detaches
    // are decided in the database while their changes wait for it. The service is
    // killed right then: the cluster still lets the hosts in.
    let attached: Vec<String> = volumes
        .iter()
        .enumerate()
        .map(|(n, volume)| {
            let (status, body) = server.send(
                "POST",
                "/v3/p1/attachments",
                Some(&json!({"attachment": {"volume_uuid": volume,
                    "instance_uuid": uuid::Uuid::new_v4().to_string(),
                    "connector": conn_for(&format!("node-{n}"), "/dev/vdb")}})),
            );
            assert_eq!(status, 200, "{body}");
            str_of(&body["attachment"], "id")
        })
        .collect();
    assert_eq!(identities_with_prefix(&cluster.conf, &prefix).len(), 4);
    cluster.signal_mon("-STOP");
    let detaches: Vec<_> = attached
        .into_iter()
        .map(|id| {
            let addr = server.addr.clone();
            // Ends with the service (its answer never comes).
            std::thread::spawn(move || {
                crate::support::process::http(
                    &addr,
                    "DELETE",
                    &format!("/v3/p1/attachments/{id}"),
                    None,
                )
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, listed) = server.send("GET", "/v3/p1/attachments", None);
        if listed["attachments"].as_array().is_some_and(Vec::is_empty) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the detaches were not decided: {listed}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(server_for_kill(server));
    for detach in detaches {
        let _ = detach.join();
    }
    cluster.signal_mon("-CONT");
    assert_eq!(
        identities_with_prefix(&cluster.conf, &prefix).len(),
        4,
        "the killed process's changes never reached the cluster"
    );
    // The next process puts the cluster right before it serves.
    let next = start();
    let strays = identities_with_prefix(&cluster.conf, &prefix);
    assert!(strays.is_empty(), "left after the restart: {strays:?}");
    drop(next);
}

/// The one handle left on the server, to kill it (SIGKILL on drop).
fn server_for_kill(server: Arc<ServerProcess>) -> ServerProcess {
    Arc::into_inner(server).expect("no host thread holds the server")
}

fn wait_for_status(server: &ServerProcess, volume: &str, wanted: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, shown) = server.send("GET", &format!("/v3/p1/volumes/{volume}"), None);
        let status = shown["volume"]["status"].as_str().unwrap_or_default();
        if status == wanted {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "volume {volume} is {status}, not {wanted}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The cluster's entities whose names start with `prefix`.
fn identities_with_prefix(conf: &str, prefix: &str) -> Vec<String> {
    let (out, _) = admin(conf)
        .mon_command(&json!({"prefix": "auth ls", "format": "json"}), None)
        .expect("auth ls");
    let listed: Value = serde_json::from_slice(&out).unwrap();
    listed["auth_dump"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["entity"].as_str())
        .filter(|e| e.starts_with(prefix))
        .map(str::to_owned)
        .collect()
}

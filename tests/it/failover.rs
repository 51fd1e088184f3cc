//! Failover on a replicated PostgreSQL cluster (`scripts/patroni-cluster`: Patroni with
//! synchronous replication, HAProxy routing to the primary). Under load, one after the
//! other: a planned switchover, the primary's PostgreSQL killed (SIGKILL; Patroni brings
//! it back), and the primary's whole node lost (Patroni and PostgreSQL SIGKILLed; the
//! standby takes over once the leader lock expires). Through all of it requests are
//! answered (503 `serviceUnavailable` while there is no primary, or 504 when a commit
//! was lost on the way and its outcome is not known in time; never a 500, never a
//! hang), the service resumes without a restart, every acknowledged change is on the
//! primary at the end, and the checker finds nothing. The time without service of each
//! is measured by a writer probing every 50 ms, and printed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use uuid::Uuid;

use crate::crash::verify_journal;
use crate::support::journal::Outcome;
use crate::support::load::{
    assert_answered_or_unavailable, journal_entries, outage_server, run_checker, start_bench,
    wait_for_journal,
};
use crate::support::patroni::Patroni;
use crate::support::process::{http, ServerProcess};

/// Seconds a request may take (`--request-timeout`); a pooled connection is waited for
/// one second (`--db-acquire-timeout`).
const REQUEST_TIMEOUT_S: u64 = 5;

/// A write every 50 ms (a volume's metadata), and when each was answered how.
struct Probe {
    stop: Arc<AtomicBool>,
    answers: Arc<Mutex<Vec<(Instant, u16)>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Probe {
    fn start(addr: &str, volume: &str) -> Probe {
        let stop = Arc::new(AtomicBool::new(false));
        let answers = Arc::new(Mutex::new(Vec::new()));
        let (addr, path) = (addr.to_owned(), format!("/v3/p1/volumes/{volume}/metadata"));
        let (running, log) = (stop.clone(), answers.clone());
        let thread = std::thread::spawn(move || {
            let mut n = 0;
            while !running.load(Ordering::Relaxed) {
                n += 1;
                let body = json!({"metadata": {"probe": n.to_string()}});
                let (status, _) = http(&addr, "POST", &path, Some(&body));
                log.lock()
                    .expect("probe log")
                    .push((Instant::now(), status));
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        Probe {
            stop,
            answers,
            thread: Some(thread),
        }
    }

    /// From the first failed write after `since` to the next one that succeeded; zero
    /// when none failed. Waits (up to `within`) for writes to succeed again.
    fn outage_after(&self, since: Instant, within: Duration) -> Duration {
        let deadline = Instant::now() + within;
        loop {
            let answers = self.answers.lock().expect("probe log").clone();
            let after: Vec<_> = answers.into_iter().filter(|(at, _)| *at >= since).collect();
            let first_failure = after.iter().position(|(_, status)| *status != 200);
            match first_failure {
                None if after.len() >= 40 => return Duration::ZERO,
                Some(failed) => {
                    if let Some((back, _)) = after[failed..].iter().find(|(_, s)| *s == 200) {
                        return *back - after[failed].0;
                    }
                }
                None => {}
            }
            assert!(
                Instant::now() < deadline,
                "writes did not succeed again within {within:?} (last: {:?})",
                after.last()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn statuses(&self) -> Vec<u16> {
        let answers = self.answers.lock().expect("probe log");
        answers.iter().map(|(_, status)| *status).collect()
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn failover_under_load() {
    let Some(cluster) = Patroni::start(2) else {
        return;
    };
    let (server, volumes, journal) =
        outage_server(&cluster.router_url, "failover", REQUEST_TIMEOUT_S);
    let (status, created) = server.send(
        "POST",
        "/v3/p1/volumes",
        Some(&json!({"volume": {"size": 1}})),
    );
    assert_eq!(status, 202, "{created}");
    let probe = Probe::start(&server.addr, created["volume"]["id"].as_str().unwrap());
    let mut bench = start_bench(&server.addr, &journal, 60.0);
    wait_for_journal(&journal, 1);
    std::thread::sleep(Duration::from_secs(2));

    let first = cluster.leader(Duration::from_secs(10));
    let other = 1 - first;
    let started = Instant::now();
    cluster.switchover(first, other);
    let switchover = probe.outage_after(started, Duration::from_secs(30));
    assert_eq!(
        cluster.leader(Duration::from_secs(10)),
        other,
        "the switchover moved the primary"
    );
    std::thread::sleep(Duration::from_secs(2));

    let started = Instant::now();
    cluster.kill_postgres(other);
    let postgres_killed = probe.outage_after(started, Duration::from_secs(60));
    cluster.wait_healthy(Duration::from_secs(60));

    let leader = cluster.leader(Duration::from_secs(30));
    let started = Instant::now();
    cluster.kill_node(leader);
    let node_lost = probe.outage_after(started, Duration::from_secs(90));
    let survivor = cluster.leader(Duration::from_secs(10));
    assert_ne!(survivor, leader, "the standby took over");

    let finished = bench.wait().expect("bench ends");
    let entries = journal_entries(&journal);
    assert_answered_or_unavailable(&entries, REQUEST_TIMEOUT_S);
    let statuses = probe.statuses();
    assert!(
        statuses.iter().all(|s| [200, 503, 504].contains(s)),
        "the probe saw other answers than 200, 503 and 504: {statuses:?}"
    );
    drop(probe);
    let acknowledged = entries.iter().filter(|e| e.outcome == Outcome::Ok).count();
    let unavailable = entries.iter().filter(|e| e.status == Some(503)).count();
    let in_doubt = entries.iter().filter(|e| e.status == Some(504)).count();
    let checked = verify_journal(&server.addr, &entries);
    let report = run_checker(&cluster.router_url, &volumes);
    eprintln!(
        "failover test: time without writes: switchover {switchover:?}, PostgreSQL killed \
         {postgres_killed:?}, node lost {node_lost:?}; {acknowledged} acknowledged and \
         {unavailable} 503 and {in_doubt} 504 requests, {checked} attachments verified on the \
         new primary, checker: {report}, bench {finished}"
    );
    assert!(acknowledged > 50, "too little load to mean anything");
    assert!(
        switchover < Duration::from_secs(15),
        "switchover took {switchover:?}"
    );
    let _ = std::fs::remove_dir_all(&volumes);
}

/// No HAProxy: the service is given every node in one libpq URL, the standby first. It
/// passes over the standby, and after a switchover follows the new primary by itself.
fn a_cluster_needs_no_router() {
    let Some(cluster) = Patroni::start(2) else {
        return;
    };
    let first = cluster.leader(Duration::from_secs(10));
    let other = 1 - first;
    let url = cluster.multi_host_url(&[other, first]);
    let (server, volumes, _journal) = outage_server(&url, "no-router", REQUEST_TIMEOUT_S);
    let (status, created) = server.send(
        "POST",
        "/v3/p1/volumes",
        Some(&json!({"volume": {"size": 1}})),
    );
    assert_eq!(status, 202, "{created}");
    let volume = created["volume"]["id"].as_str().unwrap().to_owned();
    let probe = Probe::start(&server.addr, &volume);
    // Only a synchronous standby may take over.
    cluster.wait_healthy(Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(1));
    let started = Instant::now();
    cluster.switchover(first, other);
    let switchover = probe.outage_after(started, Duration::from_secs(30));
    assert_eq!(cluster.leader(Duration::from_secs(10)), other);
    std::thread::sleep(Duration::from_secs(1));
    let statuses = probe.statuses();
    drop(probe);
    assert!(
        statuses.iter().all(|s| [200, 503, 504].contains(s)),
        "the probe saw other answers than 200, 503 and 504: {statuses:?}"
    );
    // The write went to the new primary, read there without the service.
    let primary = cluster.multi_host_url(&[other]);
    let mut on_primary = String::new();
    for _ in 0..20 {
        on_primary = psql_value(
            &primary.replace("?target_session_attrs=read-write", ""),
            &format!("select count(*) from volumes where id = '{volume}'"),
        );
        if on_primary == "1" {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(on_primary, "1");
    eprintln!("no-router test: time without writes over a switchover: {switchover:?}");
    assert!(
        switchover < Duration::from_secs(15),
        "switchover took {switchover:?}"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&volumes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replicated_cluster_needs_no_router_postgres() {
    tokio::task::block_in_place(a_cluster_needs_no_router);
}

fn psql_value(url: &str, sql: &str) -> String {
    let done = std::process::Command::new("psql")
        .args([url, "-qAtc", sql])
        .output()
        .expect("psql runs");
    String::from_utf8_lossy(&done.stdout).trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_acknowledged_is_lost_in_failovers_postgres() {
    tokio::task::block_in_place(failover_under_load);
}

fn psql(url: &str, sql: &str) {
    let done = std::process::Command::new("psql")
        .args([url, "-qAtc", sql])
        .output()
        .expect("psql runs");
    assert!(
        done.status.success(),
        "{sql}: {}",
        String::from_utf8_lossy(&done.stderr)
    );
}

/// A server that turns read-only under the service (what a demoted primary is): writes
/// get 503 `serviceUnavailable`, not 500, and succeed again without a restart once it is
/// writable, because the service replaces the connections that were refused.
async fn read_only_database_is_unavailable_not_broken(db: crate::support::TestDb) {
    let volumes = std::env::temp_dir().join(format!("cinder-attach-ro-{}", Uuid::new_v4()));
    let url = db.url.clone();
    tokio::task::block_in_place(|| {
        let server = ServerProcess::start_with(&url, &volumes, &["--db-acquire-timeout", "1"]);
        let name = url.rsplit('/').next().unwrap().to_owned();
        // Changed from the server's own database: this one is about to refuse writes.
        let admin = format!("{}/postgres", url.rsplit_once('/').unwrap().0);
        let every_session = format!(
            "select pg_terminate_backend(pid) from pg_stat_activity \
             where datname = '{name}' and pid <> pg_backend_pid()"
        );
        let create = json!({"volume": {"size": 1}});
        assert_eq!(server.send("POST", "/v3/p1/volumes", Some(&create)).0, 202);

        psql(
            &admin,
            &format!("alter database \"{name}\" set default_transaction_read_only = on"),
        );
        psql(&admin, &every_session);
        let mut refused = None;
        for _ in 0..20 {
            let (status, body) = server.send("POST", "/v3/p1/volumes", Some(&create));
            if status != 202 {
                refused = Some((status, body));
                break;
            }
        }
        let (status, body) = refused.expect("writes to a read-only server are refused");
        assert_eq!(status, 503, "{body}");
        assert!(body["serviceUnavailable"]["message"].is_string(), "{body}");

        psql(
            &admin,
            &format!("alter database \"{name}\" reset default_transaction_read_only"),
        );
        // No help from outside this time: the connections that were refused are closed
        // and new ones opened by the service itself.
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let (status, _) = server.send("POST", "/v3/p1/volumes", Some(&create));
            if status == 202 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "writes did not come back: {status}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let _ = std::fs::remove_dir_all(&volumes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_database_is_unavailable_not_broken_postgres() {
    if let Some(db) = crate::support::TestDb::create(crate::support::Backend::Postgres).await {
        read_only_database_is_unavailable_not_broken(db).await;
    }
}

//! Failover on a replicated PostgreSQL cluster (`scripts/patroni-cluster`: three nodes,
//! Patroni with synchronous replication, HAProxy routing to the primary). Under load, each
//! on a fresh cluster of its own: a planned switchover, the primary's PostgreSQL killed
//! (SIGKILL; Patroni brings it back), and the primary's whole node lost (Patroni and
//! PostgreSQL SIGKILLed; a standby takes over once the leader lock expires); then a
//! switchover with no router, the service given every node in one libpq URL. Through all
//! of it requests are answered (503 `serviceUnavailable` while there is no primary, or 504
//! when a commit was lost on the way and its outcome is not known in time; never a 500,
//! never a hang), the service resumes without a restart, every acknowledged change is on
//! the primary at the end, and the checker finds nothing. The time without service of
//! each is measured by a writer probing every 50 ms, and printed.

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

/// One failure of a replicated cluster, each on a cluster of its own.
#[derive(Debug, Clone, Copy)]
enum Failure {
    /// A planned switchover to the synchronous standby.
    Switchover,
    /// SIGKILL to the primary's PostgreSQL; Patroni brings it back or fails over.
    PostgresKilled,
    /// The primary's whole node dies (Patroni and PostgreSQL SIGKILLed): the standby takes
    /// over once the leader lock expires.
    NodeLost,
}

impl Failure {
    /// Seconds of load around it: long enough for the cluster to be back under it.
    fn load_seconds(self) -> f64 {
        match self {
            Failure::Switchover => 20.0,
            Failure::PostgresKilled => 35.0,
            Failure::NodeLost => 60.0,
        }
    }
}

/// `failure` under load on a fresh three-node cluster (HAProxy in front): every request
/// answered, writes back without a restart, every acknowledged change on the primary
/// afterwards and nothing for the checker. The time without writes is returned.
fn failover_under_load(failure: Failure) -> Duration {
    let Some(cluster) = Patroni::start(3) else {
        return Duration::ZERO;
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
    let mut bench = start_bench(&server.addr, &journal, failure.load_seconds());
    wait_for_journal(&journal, 1);
    // Only a synchronous standby may take over; the failure comes once there is one.
    cluster.wait_healthy(Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(2));

    let leader = cluster.leader(Duration::from_secs(10));
    let started = Instant::now();
    let downtime = match failure {
        Failure::Switchover => {
            let candidate = cluster.sync_standby(Duration::from_secs(10));
            cluster.switchover(leader, candidate);
            let downtime = probe.outage_after(started, Duration::from_secs(30));
            assert_eq!(
                cluster.leader(Duration::from_secs(10)),
                candidate,
                "the switchover moved the primary"
            );
            downtime
        }
        Failure::PostgresKilled => {
            cluster.kill_postgres(leader);
            probe.outage_after(started, Duration::from_secs(60))
        }
        Failure::NodeLost => {
            cluster.kill_node(leader);
            let downtime = probe.outage_after(started, Duration::from_secs(90));
            let survivor = cluster.leader(Duration::from_secs(10));
            assert_ne!(survivor, leader, "a standby took over");
            downtime
        }
    };

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
        "failover test ({failure:?}, 3 nodes): time without writes {downtime:?}; \
         {acknowledged} acknowledged and {unavailable} 503 and {in_doubt} 504 requests, \
         {checked} attachments verified on the new primary, checker: {report}, bench {finished}"
    );
    assert!(acknowledged > 20, "too little load to mean anything");
    drop(server);
    let _ = std::fs::remove_dir_all(&volumes);
    downtime
}

/// Each failure in a run of its own, one after the other (two clusters at once would
/// share two cores and measure each other): a switchover, the primary's PostgreSQL
/// killed, the primary's node lost, and a switchover with no router in front.
fn failovers_one_cluster_each() {
    let switchover = failover_under_load(Failure::Switchover);
    assert!(
        switchover < Duration::from_secs(15),
        "switchover took {switchover:?}"
    );
    failover_under_load(Failure::PostgresKilled);
    failover_under_load(Failure::NodeLost);
    a_cluster_needs_no_router();
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

fn psql_value(url: &str, sql: &str) -> String {
    let done = std::process::Command::new("psql")
        .args([url, "-qAtc", sql])
        .output()
        .expect("psql runs");
    String::from_utf8_lossy(&done.stdout).trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_acknowledged_is_lost_in_failovers_postgres() {
    tokio::task::block_in_place(failovers_one_cluster_each);
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

//! A database outage under load, on a private PostgreSQL cluster: while it is down every
//! request is answered promptly with a `503 serviceUnavailable` fault (never a 500, never
//! a hang); when it is back, service resumes within seconds without restarting
//! cinder-attach, and the checker finds nothing.

use std::time::{Duration, Instant};

use crate::support::journal::Outcome;
use crate::support::load::{
    assert_answered_or_unavailable, journal_entries, outage_server, run_checker, start_bench,
    wait_for_journal,
};
use crate::support::pg_cluster::PgCluster;
use crate::support::process::http;

/// Seconds a request may take (`--request-timeout`); a pooled connection is waited for
/// one second (`--db-acquire-timeout`).
const REQUEST_TIMEOUT_S: u64 = 5;

fn outage_under_load() {
    let Some(cluster) = PgCluster::start() else {
        return;
    };
    let (server, volumes, journal) = outage_server(&cluster.url(), "outage", REQUEST_TIMEOUT_S);
    let mut bench = start_bench(&server.addr, &journal, 9.0);
    wait_for_journal(&journal, 1);
    std::thread::sleep(Duration::from_millis(700));

    cluster.stop();
    std::thread::sleep(Duration::from_millis(2500));
    let during = journal_entries(&journal);
    cluster.resume();
    let resumed = Instant::now();
    let recovered_after = loop {
        let (status, _) = http(&server.addr, "GET", "/v3/p1/volumes", None);
        if status == 200 {
            break resumed.elapsed();
        }
        assert!(
            resumed.elapsed() < Duration::from_secs(15),
            "no full service 15 s after the database came back (last status {status})"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    bench.wait().expect("bench ends");
    let entries = journal_entries(&journal);

    let unavailable: Vec<_> = during.iter().filter(|e| e.status == Some(503)).collect();
    assert!(
        !unavailable.is_empty(),
        "no 503 while the database was down"
    );
    assert_answered_or_unavailable(&entries, REQUEST_TIMEOUT_S);
    let after = &entries[during.len()..];
    let served_after = after.iter().filter(|e| e.outcome == Outcome::Ok).count();
    assert!(
        served_after > 20,
        "too few requests served after recovery: {served_after}"
    );
    let report = run_checker(&cluster.url(), &volumes);
    eprintln!(
        "outage test: {} requests, {} answered 503 during the outage, full service {:?} after \
         the database came back, {served_after} successes after; checker: {report}",
        entries.len(),
        unavailable.len(),
        recovered_after
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&volumes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn database_outage_under_load() {
    cinder_attach::telemetry::init_for_test();
    tokio::task::block_in_place(outage_under_load);
}

/// Started while its database is down, with a URL naming a dead server first (libpq's
/// several hosts): the service waits, trying again every second as
/// `--db-retry-interval` says, and serves once the database is up.
fn started_before_its_database() {
    let Some(cluster) = PgCluster::start() else {
        return;
    };
    cluster.stop();
    let dead = crate::support::load::free_port();
    let url = format!(
        "postgres://postgres@127.0.0.1:{dead},127.0.0.1:{}/postgres?target_session_attrs=read-write",
        cluster.port
    );
    let volumes =
        std::env::temp_dir().join(format!("cinder-attach-late-db-{}", uuid::Uuid::new_v4()));
    let started = Instant::now();
    let resumer = std::thread::scope(|scope| {
        let resumer = scope.spawn(|| {
            std::thread::sleep(Duration::from_secs(3));
            cluster.resume();
            started.elapsed()
        });
        let server = crate::support::process::ServerProcess::start_with(
            &url,
            &volumes,
            &[
                "--db-acquire-timeout",
                "1",
                "--db-retry-interval",
                "1",
                "--db-max-retries",
                "30",
            ],
        );
        let waits = server
            .startup_log
            .iter()
            .filter(|e| {
                e["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("no primary database server answers yet"))
            })
            .count();
        assert!(waits >= 2, "it waited, saying so: {:?}", server.startup_log);
        let (status, body) = server.send(
            "POST",
            "/v3/p1/volumes",
            Some(&serde_json::json!({"volume": {"size": 1}})),
        );
        assert_eq!(status, 202, "{body}");
        resumer.join().expect("resumed")
    });
    assert!(
        started.elapsed() >= resumer,
        "it served only once the database was up"
    );
    let _ = std::fs::remove_dir_all(&volumes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_starts_before_its_database() {
    tokio::task::block_in_place(started_before_its_database);
}

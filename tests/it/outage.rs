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

//! Crash safety: the load generator runs attach cycles while the server is killed with
//! SIGKILL at random moments and restarted on the same port. Afterwards the checker finds
//! nothing, and every request the server acknowledged is what the database holds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cinder_attach::bench::journal::{Entry, Outcome};
use uuid::Uuid;

use crate::support::load::{journal_entries, run_checker, start_bench, wait_for_journal};
use crate::support::process::{http_as, ServerProcess};
use crate::support::{Backend, TestDb};

const PROJECT: &str = "b5e0c5a1d7f94c35a3c0d4e0b6f1a2c3";
const TOKEN: &str = "bench:b5e0c5a1d7f94c35a3c0d4e0b6f1a2c3";

/// A pseudo-random number in `range` (milliseconds), without a random-number crate.
fn random_ms(range: std::ops::Range<u64>) -> u64 {
    let bits = Uuid::new_v4().as_u128() as u64;
    range.start + bits % (range.end - range.start)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// What an acknowledged (or possibly applied) operation leaves in the database.
fn state_after(op: &str) -> &'static [&'static str] {
    match op {
        "create" => &["reserved", "attaching"],
        "complete" => &["attached"],
        _ => &["gone"],
    }
}

/// Every attachment in the journal is in a state its acknowledged requests allow: the
/// last acknowledged one, or one that a later unanswered request may have brought.
fn verify_journal(addr: &str, entries: &[Entry]) -> usize {
    let mut by_attachment: BTreeMap<&str, Vec<&Entry>> = BTreeMap::new();
    for entry in entries {
        if let Some(id) = entry.attachment.as_deref() {
            by_attachment.entry(id).or_default().push(entry);
        }
    }
    let mut checked = 0;
    for (id, history) in by_attachment {
        let Some(last_ok) = history.iter().rposition(|e| e.outcome == Outcome::Ok) else {
            continue;
        };
        let mut allowed: Vec<&str> = state_after(&history[last_ok].op).to_vec();
        for later in &history[last_ok + 1..] {
            if later.outcome == Outcome::Unknown {
                allowed.extend(state_after(&later.op));
            }
        }
        let (status, body) = http_as(
            addr,
            TOKEN,
            "GET",
            &format!("/v3/{PROJECT}/attachments/{id}"),
            None,
        );
        let actual = match status {
            404 => "gone".to_owned(),
            200 => body["attachment"]["status"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            other => panic!("attachment {id}: show answered {other}: {body}"),
        };
        assert!(
            allowed.contains(&actual.as_str()),
            "attachment {id} is {actual}, but the journal allows {allowed:?}: {history:#?}"
        );
        checked += 1;
    }
    checked
}

fn crash_under_load(db: &TestDb, volumes: &Path, extra: &[&str]) {
    let listen = format!("127.0.0.1:{}", free_port());
    let journal: PathBuf = volumes.join("journal.jsonl");
    std::fs::create_dir_all(volumes).expect("volumes dir");
    let mut server = ServerProcess::start_on(&listen, &db.url, volumes, extra);
    let mut bench = start_bench(&server.addr, &journal, 6.0);
    wait_for_journal(&journal, 1);
    let mut kills = 0;
    while bench.try_wait().expect("bench status").is_none() && kills < 4 {
        std::thread::sleep(Duration::from_millis(random_ms(150..900)));
        drop(server); // SIGKILL
        kills += 1;
        std::thread::sleep(Duration::from_millis(random_ms(20..300)));
        server = ServerProcess::start_on(&listen, &db.url, volumes, extra);
    }
    let finished = bench.wait().expect("bench ends");
    assert!(kills >= 2, "the load generator ended before the kills");
    let entries = journal_entries(&journal);
    let acknowledged = entries.iter().filter(|e| e.outcome == Outcome::Ok).count();
    let unanswered = entries
        .iter()
        .filter(|e| e.outcome == Outcome::Unknown)
        .count();
    let checked = verify_journal(&server.addr, &entries);
    let report = run_checker(&db.url, volumes);
    eprintln!(
        "crash test: {kills} kills, {acknowledged} acknowledged and {unanswered} unanswered \
         requests, {checked} attachments verified, checker: {report}, bench exit {finished}"
    );
    assert!(acknowledged > 50, "too little load to mean anything");
    assert!(unanswered > 0, "no request was ever cut off by a kill");
}

async fn crash_test(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    db.store().await.close().await;
    let volumes = std::env::temp_dir().join(format!("cinder-attach-crash-{}", Uuid::new_v4()));
    tokio::task::block_in_place(|| crash_under_load(&db, &volumes, &[]));
    let _ = std::fs::remove_dir_all(&volumes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_under_load_loses_nothing_sqlite() {
    crash_test(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_under_load_loses_nothing_postgres() {
    crash_test(Backend::Postgres).await;
}

//! Crash safety: the load generator runs attach cycles while the server is killed with
//! SIGKILL at random moments and restarted on the same port. Afterwards the checker finds
//! nothing, and every request the server acknowledged is what the database holds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::journal::{Entry, Outcome};
use uuid::Uuid;

use crate::support::load::{
    free_port, journal_entries, run_checker, start_bench, wait_for_journal,
};
use crate::support::process::{http_as, ServerProcess};
use crate::support::{Backend, TestDb};

const PROJECT: &str = "b5e0c5a1d7f94c35a3c0d4e0b6f1a2c3";
const TOKEN: &str = "bench:b5e0c5a1d7f94c35a3c0d4e0b6f1a2c3";

/// A pseudo-random number in `range` (milliseconds), without a random-number crate.
fn random_ms(range: std::ops::Range<u64>) -> u64 {
    let bits = Uuid::new_v4().as_u128() as u64;
    range.start + bits % (range.end - range.start)
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
pub(crate) fn verify_journal(addr: &str, entries: &[Entry]) -> usize {
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

fn ok_count(journal: &Path) -> usize {
    journal_entries(journal)
        .iter()
        .filter(|e| e.outcome == Outcome::Ok)
        .count()
}

/// Runs the load generator against one address served by `processes` servers (several
/// share the port with `--reuse-port`), and kills the first of them again and again.
/// With a second process, requests keep succeeding while the first is down.
fn crash_under_load(db: &TestDb, volumes: &Path, processes: usize) {
    let listen = format!("127.0.0.1:{}", free_port());
    let journal: PathBuf = volumes.join("journal.jsonl");
    std::fs::create_dir_all(volumes).expect("volumes dir");
    let extra: &[&str] = if processes > 1 {
        &["--reuse-port"]
    } else {
        &[]
    };
    let start = || ServerProcess::start_on(&listen, &db.url, volumes, extra);
    let mut victim = start();
    let survivors: Vec<ServerProcess> = (1..processes).map(|_| start()).collect();
    let mut bench = start_bench(&listen, &journal, 6.0);
    wait_for_journal(&journal, 1);
    let mut kills = 0;
    while bench.try_wait().expect("bench status").is_none() && kills < 4 {
        std::thread::sleep(Duration::from_millis(random_ms(150..900)));
        drop(victim); // SIGKILL
        kills += 1;
        let before = ok_count(&journal);
        std::thread::sleep(Duration::from_millis(random_ms(200..400)));
        if !survivors.is_empty() {
            assert!(
                ok_count(&journal) > before,
                "nothing was served while one of {processes} processes was down"
            );
        }
        victim = start();
    }
    let finished = bench.wait().expect("bench ends");
    assert!(kills >= 2, "the load generator ended before the kills");
    let entries = journal_entries(&journal);
    let acknowledged = entries.iter().filter(|e| e.outcome == Outcome::Ok).count();
    let unanswered = entries
        .iter()
        .filter(|e| e.outcome == Outcome::Unknown)
        .count();
    let checked = verify_journal(&victim.addr, &entries);
    let report = run_checker(&db.url, volumes);
    eprintln!(
        "crash test ({processes} processes): {kills} kills, {acknowledged} acknowledged and \
         {unanswered} unanswered requests, {checked} attachments verified, checker: {report}, \
         bench {finished}"
    );
    assert!(acknowledged > 50, "too little load to mean anything");
    if processes == 1 {
        assert!(unanswered > 0, "no request was ever cut off by a kill");
    }
}

async fn crash_test(backend: Backend, processes: usize) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    db.store().await.close().await;
    let volumes = std::env::temp_dir().join(format!("cinder-attach-crash-{}", Uuid::new_v4()));
    tokio::task::block_in_place(|| crash_under_load(&db, &volumes, processes));
    let _ = std::fs::remove_dir_all(&volumes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_under_load_loses_nothing_sqlite() {
    crash_test(Backend::Sqlite, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_under_load_loses_nothing_postgres() {
    crash_test(Backend::Postgres, 1).await;
}

/// Scale-out: two processes behind one address on one database; one is killed again
/// and again while the other keeps serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_of_two_processes_killed_postgres() {
    crash_test(Backend::Postgres, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_of_two_processes_killed_sqlite() {
    crash_test(Backend::Sqlite, 2).await;
}

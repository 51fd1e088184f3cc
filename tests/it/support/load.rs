//! The load generator and the checker as the crash and outage tests drive them: real
//! binaries, talking to the server over sockets.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::journal::Entry;
use super::process::ServerProcess;

/// A server on database `url` for a run through a database outage: it waits one second
/// for a pooled connection (`--db-acquire-timeout`) and `request_timeout_s` for a request.
/// Its volume files go to a fresh directory named after `name`, which also holds the load
/// generator's journal. The server, that directory and the journal's path.
pub fn outage_server(
    url: &str,
    name: &str,
    request_timeout_s: u64,
) -> (ServerProcess, PathBuf, PathBuf) {
    let volumes =
        std::env::temp_dir().join(format!("cinder-attach-{name}-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&volumes).expect("volumes dir");
    let journal = volumes.join("journal.jsonl");
    let timeout = request_timeout_s.to_string();
    let server = ServerProcess::start_with(
        url,
        &volumes,
        &["--db-acquire-timeout", "1", "--request-timeout", &timeout],
    );
    (server, volumes, journal)
}

/// A port free on 127.0.0.1 right now (for a server that must come back on it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `cinder-attach-bench` in `own` mode with 4 clients for `seconds`, journalling.
pub fn start_bench(addr: &str, journal: &Path, seconds: f64) -> Child {
    Command::new(env!("CARGO_BIN_EXE_cinder-attach-bench"))
        .args(["--mode", "own", "--clients", "4"])
        .args(["--endpoint", &format!("http://{addr}")])
        .args(["--duration", &seconds.to_string()])
        .arg("--journal")
        .arg(journal)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("load generator starts")
}

pub fn journal_entries(path: &Path) -> Vec<Entry> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Runs `cinder-attach check --json` with the test backend: exit code, JSON report
/// (Null when there is none) and what it wrote to stderr.
pub fn checker(database_url: &str, volumes_dir: &Path) -> (i32, serde_json::Value, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_cinder-attach"))
        .args(["check", "--json", "--host", "test-host"])
        .args(["--database-url", database_url])
        .arg("--backend")
        .arg(format!("file=file,dir={}", volumes_dir.display()))
        .env_remove("CINDER_ATTACH_BACKENDS")
        .output()
        .expect("checker runs");
    (
        output.status.code().unwrap_or(-1),
        serde_json::from_slice(&output.stdout).unwrap_or_default(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs the checker and expects no findings.
pub fn run_checker(database_url: &str, volumes_dir: &Path) -> serde_json::Value {
    let (code, report, stderr) = checker(database_url, volumes_dir);
    assert_eq!(
        code, 0,
        "the checker found violations: {report:#}\n{stderr}"
    );
    report
}

pub fn wait_for_journal(path: &Path, lines: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while journal_entries(path).len() < lines {
        assert!(
            Instant::now() < deadline,
            "the load generator never got going"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// While the database is away, every request is still answered, promptly (within the
/// request timeout and a second), and a failure is only ever 503 `serviceUnavailable`
/// (nothing changed) or, for a request whose commit was on the way when the database
/// went, 504 (the change may be stored).
pub fn assert_answered_or_unavailable(entries: &[Entry], request_timeout_s: u64) {
    for entry in entries {
        let Some(status) = entry.status else {
            panic!("a request got no answer: {entry:?}");
        };
        let fault = match status {
            0..=499 => None,
            503 => Some("serviceUnavailable"),
            504 => Some("computeFault"),
            _ => panic!("only 503 and 504 may report the database away: {entry:?}"),
        };
        if fault.is_some() {
            assert_eq!(entry.fault.as_deref(), fault, "{entry:?}");
        }
        assert!(
            entry.elapsed_ms < (request_timeout_s + 1) * 1000,
            "a request hung beyond the timeout: {entry:?}"
        );
    }
}

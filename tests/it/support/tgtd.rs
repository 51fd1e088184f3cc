//! A real tgtd per test (its own control port and loopback portal), and a real iSCSI
//! initiator (libiscsi through `tests/iscsi/initiator.py`) that logs in with what an
//! attachment's `connection_info` gives.

use std::net::TcpListener;
use std::process::Stdio;
use std::time::Duration;

use cinder_attach::backend::tgt::Control;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// A running tgtd, killed (SIGKILL) on drop.
pub struct Tgtd {
    pub control_port: u16,
    pub portal: String,
    child: Option<Child>,
}

/// Why tgtd cannot run here, if it cannot: the tests then say so in one line (and fail
/// in CI, where it must run).
fn unavailable() -> Option<String> {
    if std::process::Command::new("tgtd")
        .arg("--help")
        .output()
        .is_err()
    {
        return Some("tgtd is not installed (apt-get install tgt libiscsi-bin)".into());
    }
    let uid = std::process::Command::new("id").arg("-u").output();
    if uid.map(|o| o.stdout.trim_ascii() != b"0").unwrap_or(true) {
        return Some("tgtd needs root".into());
    }
    if std::process::Command::new("python3")
        .args(["-c", "import ctypes; ctypes.CDLL('libiscsi.so.7')"])
        .output()
        .map(|o| !o.status.success())
        .unwrap_or(true)
    {
        return Some("libiscsi.so.7 is missing (apt-get install libiscsi7)".into());
    }
    None
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Tgtd {
    /// A fresh tgtd, or `None` (with a line saying why) where it cannot run outside CI.
    pub async fn start(test: &str) -> Option<Tgtd> {
        if let Some(why) = unavailable() {
            assert!(
                std::env::var("CI").is_err(),
                "{test}: the tgt tests must run in CI: {why}"
            );
            eprintln!("{test}: skipped, {why}");
            return None;
        }
        // Control ports are per machine (and a C short): pick one no tgtd answers on.
        let control_port = loop {
            let candidate = 1_000 + (rand_u16() % 31_000);
            if !std::path::Path::new(&format!("/var/run/tgtd/socket.{candidate}")).exists() {
                break candidate;
            }
        };
        let mut tgtd = Tgtd {
            control_port,
            portal: format!("127.0.0.1:{}", free_port()),
            child: None,
        };
        tgtd.run().await;
        Some(tgtd)
    }

    /// tgtd's stderr, read when it does not start; removed with the daemon.
    fn log_path(&self) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("tgtd-{}.log", self.control_port))
    }

    async fn run(&mut self) {
        let log = self.log_path();
        let child = Command::new("tgtd")
            .args(["-f", "-C", &self.control_port.to_string()])
            .args(["--iscsi", &format!("portal={}", self.portal)])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .kill_on_drop(true)
            .spawn()
            .expect("tgtd starts");
        self.child = Some(child);
        let control = self.control();
        let mut last = None;
        for _ in 0..200 {
            match control.show_targets().await {
                Ok(_) => return,
                Err(err) => last = Some(err),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "tgtd did not answer on control port {}: {last:?}; its log: {}",
            self.control_port,
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    pub fn control(&self) -> Control {
        Control::new("/var/run/tgtd/socket", self.control_port)
    }

    /// The `--backend` spec of a `tgt` backend on this tgtd.
    pub fn backend_spec(&self, name: &str, dir: &std::path::Path) -> String {
        format!(
            "{name}=tgt,dir={},portal={},control_port={},iqn_prefix=iqn.2010-10.org.test,reconcile_seconds=1",
            dir.display(),
            self.portal,
            self.control_port
        )
    }

    /// SIGKILL: everything tgtd held in memory is gone.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// Killed and started again on the same ports, empty.
    pub async fn restart(&mut self) {
        self.kill().await;
        self.run().await;
    }

    /// Every target's ACL, as `(iqn, initiators)`, sorted.
    pub async fn acls(&self) -> Vec<(String, Vec<String>)> {
        let text = self.control().show_targets().await.expect("tgtd answers");
        let mut acls = Vec::new();
        let mut current: Option<(String, Vec<String>)> = None;
        let mut in_acl = false;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("Target ") {
                acls.extend(current.take());
                let iqn = rest.split_once(": ").map(|(_, iqn)| iqn).unwrap_or(rest);
                current = Some((iqn.to_owned(), Vec::new()));
                in_acl = false;
            } else if line.starts_with("    ") && !line.starts_with("     ") {
                in_acl = line.trim() == "ACL information:";
            } else if in_acl {
                if let Some((_, list)) = current.as_mut() {
                    list.push(line.trim().to_owned());
                }
            }
        }
        acls.extend(current);
        for (_, list) in &mut acls {
            list.sort();
        }
        acls.sort();
        acls
    }

    /// How many CHAP accounts tgtd has.
    pub async fn account_count(&self) -> usize {
        let text = self.control().show_accounts().await.expect("tgtd answers");
        text.lines()
            .skip(1)
            .filter(|l| !l.trim().is_empty())
            .count()
    }
}

fn rand_u16() -> u16 {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    u16::from_ne_bytes([bytes[0], bytes[1]])
}

/// A logged-in initiator.
pub struct Session {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Session {
    /// Logs in as `initiator` with `info` (an attachment's `connection_info`), or to
    /// another target than its own with `target`. `Err` carries the initiator's reason.
    pub async fn login(info: &Value, initiator: &str) -> Result<Session, String> {
        let target = info["target_iqn"].as_str().unwrap_or_default().to_owned();
        Self::login_to(info, &target, initiator).await
    }

    pub async fn login_to(info: &Value, target: &str, initiator: &str) -> Result<Session, String> {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/iscsi/initiator.py");
        let mut command = Command::new("python3");
        command
            .arg(script)
            .args([
                "--portal",
                info["target_portal"].as_str().unwrap_or_default(),
            ])
            .args(["--target", target])
            .args(["--lun", &info["target_lun"].to_string()])
            .args(["--initiator", initiator]);
        if let (Some(user), Some(password)) = (
            info["auth_username"].as_str(),
            info["auth_password"].as_str(),
        ) {
            command.args(["--username", user, "--password", password]);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 runs");
        let stdin = child.stdin.take().expect("stdin");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let first = next_json(&mut lines).await;
        if first["login"] != json!(true) {
            return Err(first["error"].as_str().unwrap_or("no answer").to_owned());
        }
        Ok(Session {
            child,
            stdin,
            lines,
        })
    }

    async fn ask(&mut self, command: String) -> Value {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .await
            .expect("initiator reads");
        next_json(&mut self.lines).await
    }

    /// `{"ok": true}` or the failure (with `sense_key` 7 for a write-protected LU).
    pub async fn write(&mut self, lba: u64, text: &str) -> Value {
        self.ask(format!("write {lba} {text}")).await
    }

    pub async fn read(&mut self, lba: u64) -> Value {
        self.ask(format!("read {lba} 1")).await
    }

    pub async fn capacity(&mut self) -> Value {
        self.ask("capacity".to_owned()).await
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

async fn next_json(lines: &mut Lines<BufReader<ChildStdout>>) -> Value {
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the initiator answers within 30 s")
        .expect("readable")
        .unwrap_or_default();
    serde_json::from_str(&line).unwrap_or_else(|_| json!({"ok": false, "error": line}))
}

/// Whether `initiator` can log in with `info` at all.
pub async fn can_log_in(info: &Value, initiator: &str) -> bool {
    Session::login(info, initiator).await.is_ok()
}

impl Drop for Tgtd {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
        let _ = std::fs::remove_file(self.log_path());
    }
}

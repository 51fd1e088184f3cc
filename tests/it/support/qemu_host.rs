//! QEMU's own block layer as the host: `qemu-io` (Debian's qemu-utils, with the rbd and
//! iscsi drivers of qemu-block-extra) opens a volume from what an attachment's
//! `connection_info` says, the code a hypervisor runs, and keeps it open while a test
//! sends it commands. Each simulated host connects from an address of its own
//! (127.0.0.2, 127.0.0.3, ...): Ceph's clients do not bind their sockets to
//! `public_addr` (`ms_bind_before_connect` binds to the client's own address, which is
//! blank until a monitor tells it), so a small preloaded library
//! (`source_address.c`) binds each outgoing connection of the process to the host's
//! address first.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Where QEMU keeps its block drivers on Debian.
const QEMU_MODULES: &str = "/usr/lib/x86_64-linux-gnu/qemu";

/// Why QEMU cannot be the host here, if it cannot (then a test says so in one line, and
/// fails in CI, where it must run).
pub fn unavailable() -> Option<String> {
    let unavailable = if std::process::Command::new("qemu-io")
        .arg("--version")
        .output()
        .is_err()
    {
        Some("qemu-io is not installed (apt-get install qemu-utils qemu-block-extra)".to_owned())
    } else if !Path::new(QEMU_MODULES).join("block-rbd.so").exists() {
        Some(
            "QEMU's rbd and iscsi drivers are not installed (apt-get install qemu-block-extra)"
                .into(),
        )
    } else {
        shim().err()
    };
    if let Some(why) = &unavailable {
        if std::env::var_os("CI").is_some() {
            panic!("CI is set but QEMU cannot be the host: {why}");
        }
        eprintln!("note: skipping the QEMU host tests: {why}");
    }
    unavailable
}

/// The preloaded library that gives a host its source address, built once per run.
fn shim() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let source =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/source_address.c");
            let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("source_address.{}.so", std::process::id()));
            let built = std::process::Command::new("cc")
                .args(["-shared", "-fPIC", "-O2", "-o"])
                .arg(&out)
                .arg(&source)
                .arg("-ldl")
                .output()
                .map_err(|e| format!("cannot run cc: {e}"))?;
            if !built.status.success() {
                return Err(format!(
                    "cc could not build {}: {}",
                    source.display(),
                    String::from_utf8_lossy(&built.stderr)
                ));
            }
            Ok(out)
        })
        .clone()
}

/// How a host opens the volume, from its attachment's `connection_info`.
pub enum Disk {
    /// `rbd`: the monitors and user of the connection info, with `keyring` the file
    /// holding that user's key (on a hypervisor: the libvirt secret).
    Rbd { info: Value, keyring: PathBuf },
    /// `iscsi` with CHAP, logging in as `initiator`.
    Iscsi { info: Value, initiator: String },
}

/// One `qemu-io` holding a volume open, as a hypervisor's disk would.
pub struct QemuHost {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    /// How long a command may take to answer.
    patience: Duration,
    /// The host's own files (its ceph.conf), removed with it.
    scratch: PathBuf,
}

impl Drop for QemuHost {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// What a command answered: its lines, and whether it succeeded.
#[derive(Debug)]
pub struct Answer {
    pub ok: bool,
    pub text: String,
}

impl QemuHost {
    /// Opens `disk` from `source_ip` (read-only when `read_only`); the error is what
    /// QEMU said when it could not.
    pub async fn open(disk: &Disk, source_ip: &str, read_only: bool) -> Result<QemuHost, String> {
        let scratch =
            std::env::temp_dir().join(format!("cinder-attach-qemu-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&scratch).unwrap();
        let mut args: Vec<String> = vec!["-f".into(), "raw".into()];
        if read_only {
            args.push("-r".into());
        }
        match disk {
            Disk::Rbd { info, keyring } => {
                let conf = scratch.join("ceph.conf");
                let mon = format!(
                    "{}:{}",
                    info["hosts"][0].as_str().unwrap(),
                    info["ports"][0].as_str().unwrap()
                );
                std::fs::write(&conf, format!("[global]\nmon host = {mon}\n")).unwrap();
                args.push(format!(
                    "rbd:{}:id={}:conf={}:keyring={}",
                    info["name"].as_str().unwrap(),
                    info["auth_username"].as_str().unwrap(),
                    conf.display(),
                    keyring.display()
                ));
            }
            Disk::Iscsi { info, initiator } => {
                args.retain(|a| a != "-f" && a != "raw");
                args.push("--object".into());
                args.push(format!(
                    "secret,id=chap,data={}",
                    info["auth_password"].as_str().unwrap()
                ));
                args.push("--image-opts".into());
                args.push(format!(
                    "driver=raw,file.driver=iscsi,file.transport=tcp,file.portal={},\
                     file.target={},file.lun={},file.user={},file.password-secret=chap,\
                     file.initiator-name={initiator}",
                    info["target_portal"].as_str().unwrap(),
                    info["target_iqn"].as_str().unwrap(),
                    info["target_lun"],
                    info["auth_username"].as_str().unwrap(),
                ));
            }
        }
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("exec qemu-io \"$@\" 2>&1")
            .arg("qemu-io")
            .args(&args)
            .env("LD_PRELOAD", shim()?)
            .env("CINDER_ATTACH_SOURCE_ADDRESS", source_ip)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start qemu-io: {e}"))?;
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut host = QemuHost {
            child,
            stdin,
            stdout,
            patience: Duration::from_secs(30),
            scratch,
        };
        // The first prompt comes once the image is open, after what went wrong if not.
        let opened = host.answer().await;
        if !opened.ok {
            return Err(opened.text);
        }
        Ok(host)
    }

    /// Runs one qemu-io command and reads what it answered. One command at a time:
    /// qemu-io reads its input with stdio but waits for the descriptor, so a second line
    /// sent along would sit in its buffer unseen.
    pub async fn run(&mut self, command: &str) -> Answer {
        if let Err(e) = self
            .stdin
            .write_all(format!("{command}\n").as_bytes())
            .await
        {
            return Answer {
                ok: false,
                text: format!("qemu-io is gone: {e}"),
            };
        }
        self.answer().await
    }

    /// What qemu-io prints up to its next prompt (it prompts when it waits for input).
    async fn answer(&mut self) -> Answer {
        let mut out = Vec::new();
        let mut chunk = [0u8; 4096];
        let read = tokio::time::timeout(self.patience, async {
            loop {
                match self.stdout.read(&mut chunk).await {
                    Ok(0) | Err(_) => return false,
                    Ok(n) => out.extend_from_slice(&chunk[..n]),
                }
                if out.ends_with(PROMPT.as_bytes()) {
                    return true;
                }
            }
        })
        .await;
        let prompted = matches!(read, Ok(true));
        let text = String::from_utf8_lossy(&out).replace(PROMPT, "");
        let failed = ["failed", "error", "can't open", "no file open", "Could not"]
            .iter()
            .any(|word| text.contains(word));
        Answer {
            ok: prompted && !failed,
            text: if prompted {
                text
            } else {
                format!("{text}(qemu-io gave no prompt)")
            },
        }
    }

    /// How long each command may take to answer from now on.
    pub fn patience(&mut self, patience: Duration) {
        self.patience = patience;
    }

    /// Writes `pattern` over `len` bytes at `offset` and flushes it to the cluster.
    pub async fn write(&mut self, pattern: u8, offset: u64, len: u64) -> Answer {
        let wrote = self
            .run(&format!("write -P 0x{pattern:02x} {offset} {len}"))
            .await;
        if !wrote.ok {
            return wrote;
        }
        self.run("flush").await
    }

    /// Reads `len` bytes at `offset`, checking each is `pattern`.
    pub async fn read(&mut self, pattern: u8, offset: u64, len: u64) -> Answer {
        self.run(&format!("read -P 0x{pattern:02x} {offset} {len}"))
            .await
    }

    pub async fn close(mut self) {
        let _ = self.stdin.write_all(b"quit\n").await;
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
    }

    /// Writes `pattern` every 100 ms until a write fails: how long after `since` that
    /// was (`None` when every write for `within` succeeded).
    pub async fn first_failed_write(
        &mut self,
        pattern: u8,
        since: std::time::Instant,
        within: Duration,
    ) -> Option<Duration> {
        while since.elapsed() < within {
            let wrote = self.write(pattern, 0, 4096).await;
            if !wrote.ok {
                println!("write refused after {:?}: {}", since.elapsed(), wrote.text);
                return Some(since.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        None
    }
}

/// What qemu-io prints when it waits for a command.
const PROMPT: &str = "qemu-io> ";

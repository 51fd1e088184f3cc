//! The real binary as a separate process, and a minimal blocking HTTP client for it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A running `cinder-attach serve`, killed on drop.
pub struct ServerProcess {
    pub child: Child,
    pub addr: String,
    /// The JSON log events up to "cinder-attach listening".
    pub startup_log: Vec<serde_json::Value>,
    /// Every JSON log event after that, as it arrives.
    pub log: Arc<Mutex<Vec<serde_json::Value>>>,
}

impl ServerProcess {
    /// Starts the binary on 127.0.0.1 (random port) against `database_url`, with one
    /// `file` backend in `volumes_dir`, and waits until it listens.
    pub fn start(database_url: &str, volumes_dir: &std::path::Path) -> ServerProcess {
        Self::start_with(database_url, volumes_dir, &[])
    }

    /// As `start`, with more command-line arguments.
    pub fn start_with(
        database_url: &str,
        volumes_dir: &std::path::Path,
        extra: &[&str],
    ) -> ServerProcess {
        Self::start_on("127.0.0.1:0", database_url, volumes_dir, extra)
    }

    /// As `start_with`, listening on `listen` (to come back on the same port).
    pub fn start_on(
        listen: &str,
        database_url: &str,
        volumes_dir: &std::path::Path,
        extra: &[&str],
    ) -> ServerProcess {
        let backend = format!("file=file,dir={}", volumes_dir.display());
        Self::start_with_backend(listen, database_url, &backend, extra)
    }

    /// As `start_on`, with the one backend `backend` (a `--backend` spec).
    pub fn start_with_backend(
        listen: &str,
        database_url: &str,
        backend: &str,
        extra: &[&str],
    ) -> ServerProcess {
        let mut args = vec![
            "serve",
            "--listen",
            listen,
            "--host",
            "test-host",
            "--database-url",
            database_url,
            "--backend",
            backend,
        ];
        args.extend_from_slice(extra);
        Self::start_args(&args)
    }

    /// The binary with exactly `args` (and JSON logs), waiting until it listens.
    pub fn start_args(args: &[&str]) -> ServerProcess {
        let mut command = Command::new(env!("CARGO_BIN_EXE_cinder-attach"));
        for (key, _) in std::env::vars() {
            if key.starts_with("CINDER_ATTACH_") {
                command.env_remove(key);
            }
        }
        let mut child = command
            .args(args)
            .args(["--log-format", "json"])
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("binary starts");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut addr = None;
        let mut startup_log = Vec::new();
        let mut lines = stdout.lines();
        for line in lines.by_ref() {
            let line = line.expect("log line");
            let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            let listening = event["message"] == "cinder-attach listening";
            if listening {
                addr = event["address"].as_str().map(str::to_owned);
            }
            startup_log.push(event);
            if listening {
                break;
            }
        }
        // Keep draining the log so the server never blocks on a full pipe.
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Ok(event) = serde_json::from_str(&line) {
                    sink.lock().expect("log lock").push(event);
                }
            }
        });
        ServerProcess {
            child,
            addr: addr.expect("the server reports its address"),
            startup_log,
            log,
        }
    }

    pub fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> (u16, serde_json::Value) {
        http(&self.addr, method, path, body)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request as the admin of project `p1` at microversion 3.44.
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> (u16, serde_json::Value) {
    http_as(addr, "admin:p1", method, path, body)
}

/// One HTTP/1.1 request with the given noauth token.
pub fn http_as(
    addr: &str,
    token: &str,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> (u16, serde_json::Value) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let payload = body.map(|b| b.to_string()).unwrap_or_default();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nX-Auth-Token: {token}\r\n\
         OpenStack-API-Version: volume 3.44\r\nContent-Length: {}\r\n",
        payload.len()
    );
    if body.is_some() {
        request.push_str("Content-Type: application/json\r\n");
    }
    request.push_str("\r\n");
    request.push_str(&payload);
    stream.write_all(request.as_bytes()).expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {response}"));
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .unwrap_or("");
    (
        status,
        serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
    )
}

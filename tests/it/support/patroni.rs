//! A replicated PostgreSQL cluster for the failover tests, built by the project's own
//! `scripts/patroni-cluster` (etcd, Patroni-managed PostgreSQL nodes with synchronous
//! replication, HAProxy routing to the primary), and the ways to hurt it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use super::process::http;

pub struct Patroni {
    dir: PathBuf,
    /// The database URL through HAProxy: always the primary, whichever node that is.
    pub router_url: String,
    /// Each node's Patroni REST address.
    apis: Vec<String>,
    /// Each node's PostgreSQL port (the router's URL reaches them with it).
    pub node_ports: Vec<u16>,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/patroni-cluster")
}

impl Patroni {
    /// Starts a cluster of `nodes`; `None` (skip) outside CI when Patroni, etcd or HAProxy
    /// is not installed (`scripts/test` installs them).
    pub fn start(nodes: usize) -> Option<Patroni> {
        let installed = ["patroni", "etcd", "haproxy"].iter().all(|tool| {
            Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .is_ok_and(|o| o.status.success())
        });
        if !installed {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set but patroni, etcd or haproxy is missing (scripts/test installs them)"
            );
            eprintln!("note: patroni, etcd or haproxy is not installed; skipping");
            return None;
        }
        let dir = std::env::temp_dir().join(format!("patroni-{}", uuid::Uuid::new_v4().simple()));
        let output = Command::new(script())
            .arg("start")
            .arg(&dir)
            .arg(nodes.to_string())
            .output()
            .expect("scripts/patroni-cluster runs");
        assert!(
            output.status.success(),
            "the cluster did not start: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let env: HashMap<String, String> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| line.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Some(Patroni {
            router_url: env["ROUTER_URL"].clone(),
            apis: (0..nodes)
                .map(|i| format!("127.0.0.1:{}", env[&format!("NODE{i}_API")]))
                .collect(),
            node_ports: (0..nodes)
                .map(|i| env[&format!("NODE{i}_PG")].parse().expect("a port"))
                .collect(),
            dir,
        })
    }

    /// Whether `node`'s Patroni answers 200 at `path` (`/primary`, `/sync`).
    fn says_yes(&self, node: usize, path: &str) -> bool {
        let api = &self.apis[node];
        reachable(api) && http(api, "GET", path, None).0 == 200
    }

    /// The nodes' PostgreSQL servers in one libpq URL, `order` giving which come first,
    /// with no router: the client finds the primary itself.
    pub fn multi_host_url(&self, order: &[usize]) -> String {
        let hosts: Vec<String> = order
            .iter()
            .map(|&n| format!("127.0.0.1:{}", self.node_ports[n]))
            .collect();
        let (before, after) = self.router_url.split_once("@").expect("user@host");
        let path = after.split_once('/').map_or("", |(_, path)| path);
        format!(
            "{before}@{}/{path}?target_session_attrs=read-write",
            hosts.join(",")
        )
    }

    /// The node Patroni calls the primary, once there is one (waits up to `within`).
    pub fn leader(&self, within: Duration) -> usize {
        let deadline = Instant::now() + within;
        loop {
            if let Some(node) = (0..self.apis.len()).find(|&n| self.says_yes(n, "/primary")) {
                return node;
            }
            assert!(Instant::now() < deadline, "no primary within {within:?}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The node Patroni calls the synchronous standby, once there is one.
    pub fn sync_standby(&self, within: Duration) -> usize {
        let deadline = Instant::now() + within;
        loop {
            if let Some(node) = (0..self.apis.len()).find(|&n| self.says_yes(n, "/sync")) {
                return node;
            }
            assert!(
                Instant::now() < deadline,
                "no synchronous standby within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Waits (up to `within`) until there is a primary and a synchronous standby again:
    /// in synchronous mode only that standby may take over, so the next failure needs it.
    pub fn wait_healthy(&self, within: Duration) {
        let deadline = Instant::now() + within;
        let answers = |path: &str| (0..self.apis.len()).any(|n| self.says_yes(n, path));
        while !(answers("/primary") && answers("/sync")) {
            assert!(
                Instant::now() < deadline,
                "the cluster is not healthy after {within:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// A planned switchover from the current leader to `candidate`.
    pub fn switchover(&self, leader: usize, candidate: usize) {
        let body = serde_json::json!({"leader": format!("pg{leader}"), "candidate": format!("pg{candidate}")});
        let (status, answer) = http(&self.apis[leader], "POST", "/switchover", Some(&body));
        assert_eq!(status, 200, "switchover refused: {answer}");
    }

    /// SIGKILL to the node's PostgreSQL server (its Patroni lives on).
    pub fn kill_postgres(&self, node: usize) {
        let pid = std::fs::read_to_string(self.dir.join(format!("pg{node}/postmaster.pid")))
            .expect("postmaster.pid");
        kill(pid.lines().next().unwrap_or_default());
    }

    /// The whole node dies: SIGKILL to its Patroni, then to its PostgreSQL server.
    pub fn kill_node(&self, node: usize) {
        let patroni = std::fs::read_to_string(self.dir.join(format!("patroni{node}.pid")))
            .expect("patroni pid");
        kill(patroni.trim());
        self.kill_postgres(node);
    }
}

fn reachable(addr: &str) -> bool {
    let addr = addr.parse().expect("an address");
    std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_ok()
}

fn kill(pid: &str) {
    let killed = Command::new("kill")
        .args(["-9", pid])
        .status()
        .expect("kill runs");
    assert!(killed.success(), "kill -9 {pid} failed");
}

impl Drop for Patroni {
    fn drop(&mut self) {
        let _ = Command::new(script()).arg("stop").arg(&self.dir).status();
    }
}

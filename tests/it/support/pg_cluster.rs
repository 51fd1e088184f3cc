//! A private PostgreSQL cluster for tests that stop and start the database: its own data
//! directory, port and socket directory, never the shared server. As root the server
//! programs run as the `postgres` user (PostgreSQL refuses to run as root).

use std::path::PathBuf;
use std::process::Command;

pub struct PgCluster {
    bin: PathBuf,
    dir: PathBuf,
    pub port: u16,
    as_postgres: bool,
}

/// The directory holding `initdb` and `pg_ctl`: `PG_BIN`, else the newest
/// `/usr/lib/postgresql/*/bin`.
fn find_bin() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|bin| bin.join("initdb").exists())
        .collect();
    found.sort();
    found.pop()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

impl PgCluster {
    /// Creates and starts a cluster; `None` (skip) outside CI when PostgreSQL's server
    /// programs are not installed.
    pub fn start() -> Option<PgCluster> {
        let Some(bin) = find_bin() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set but PostgreSQL's initdb was not found (set PG_BIN)"
            );
            eprintln!("note: initdb not found; skipping the private-cluster test");
            return None;
        };
        let port = super::load::free_port();
        let dir = std::env::temp_dir().join(format!("cinder-attach-pg-{}", uuid::Uuid::new_v4()));
        let cluster = PgCluster {
            bin,
            dir,
            port,
            as_postgres: is_root(),
        };
        cluster.run("mkdir", &["-p", &cluster.path("data")]);
        cluster.run(
            &cluster.tool("initdb"),
            &[
                "-D",
                &cluster.path("data"),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
            ],
        );
        cluster.resume();
        Some(cluster)
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    fn tool(&self, name: &str) -> String {
        self.bin.join(name).display().to_string()
    }

    /// `program`, as the `postgres` user when we are root.
    fn command(&self, program: &str) -> Command {
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--", program]);
            c
        } else {
            Command::new(program)
        }
    }

    fn run(&self, program: &str, args: &[&str]) {
        let output = self.command(program).args(args).output().expect("runs");
        assert!(
            output.status.success(),
            "{program} {args:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Starts the server and waits until it accepts connections.
    pub fn resume(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.path("")
        );
        self.run(
            &self.tool("pg_ctl"),
            &[
                "-D",
                &self.path("data"),
                "-l",
                &self.path("server.log"),
                "-o",
                &options,
                "-w",
                "start",
            ],
        );
    }

    /// Stops the server the hard way, as a crash or a network cut would look to clients.
    pub fn stop(&self) {
        self.run(
            &self.tool("pg_ctl"),
            &["-D", &self.path("data"), "-m", "immediate", "-w", "stop"],
        );
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let _ = self
            .command(&self.tool("pg_ctl"))
            .args(["-D", &self.path("data"), "-m", "immediate", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

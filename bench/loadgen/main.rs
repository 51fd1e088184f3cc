//! `cinder-attach-bench`: a load generator for any Cinder-compatible endpoint.
//!
//! N clients run attach cycles (create attachment with a connector → `os-complete` →
//! delete) for a fixed time or count, each on its own volume (`own`) or all on one
//! multiattach volume (`shared`: Cinder's rules refuse overlapping attaches there,
//! cinder-attach's do not; refusals are counted apart from errors), a read mix (`reads`),
//! or volume and snapshot create/delete cycles (`volumes`, `snapshots`). It reports
//! cycles/s, requests/s, latency percentiles per operation and the server's peak RSS.
//! `--replay-sqlite` measures the SQLite store's ceiling instead (`sqlite_replay`).
//! It is its own binary: nothing of it is compiled into the service.

mod client;
mod cpu;
mod journal;
mod lifecycle;
mod report;
mod run;
mod sqlite_replay;
mod stats;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BenchMode {
    /// Every client attaches and detaches its own volume.
    Own,
    /// All clients attach one multiattach volume at once.
    Shared,
    /// Show volume, list attachments by volume, show attachment.
    Reads,
    /// Create a volume, wait for it, delete it (placement, quotas, events).
    Volumes,
    /// Take a snapshot of the client's own volume, wait for it, delete it.
    Snapshots,
}

/// Runs attach cycles against a Cinder-compatible endpoint and reports their speed.
#[derive(Debug, Clone, Parser)]
#[command(name = "cinder-attach-bench", version)]
pub struct BenchArgs {
    /// The service's base URL (no `/v3`).
    #[arg(long, default_value = "http://127.0.0.1:8776")]
    pub endpoint: String,
    /// Project id used in URLs and the noauth token (hex, for the reference Cinder).
    #[arg(long, default_value = "b5e0c5a1d7f94c35a3c0d4e0b6f1a2c3")]
    pub project: String,
    /// `X-Auth-Token`; default `bench:<project>` (noauth admin).
    #[arg(long)]
    pub token: Option<String>,
    /// Give each client a project of its own (`<project>-<n>`, noauth tokens), so that
    /// creates do not queue on one project's quota lock (not with --mode shared).
    #[arg(long, conflicts_with = "token")]
    pub project_per_client: bool,
    /// Concurrent clients.
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// Seconds to run (ignored with --cycles).
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Stop after this many cycles in total instead of after --duration.
    #[arg(long)]
    pub cycles: Option<u64>,
    #[arg(long, value_enum, default_value_t = BenchMode::Own)]
    pub mode: BenchMode,
    /// The server's process id, to sample its resident memory and CPU time.
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// The database's process name, to add up its CPU time per cycle (`postgres` for a
    /// local PostgreSQL; leave out for SQLite, which runs inside the server).
    #[arg(long)]
    pub database_process: Option<String>,
    /// Also write the report as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Send `X-Service-Roles: service` (the reference Cinder then skips its Nova check).
    #[arg(long)]
    pub service_role: bool,
    /// Write every attachment request and its outcome here, one JSON line each (for
    /// crash tests: what the server acknowledged).
    #[arg(long)]
    pub journal: Option<PathBuf>,
    /// Fail (exit 1) when more attaches than this were refused (cinder-attach refuses
    /// none on a multiattach volume; Cinder refuses overlapping ones).
    #[arg(long)]
    pub max_refusals: Option<u64>,
    /// Instead of calling an endpoint: replay this file of the SQLite store's statements
    /// for one cycle (bench/cycle-sqlite.sql) from --clients threads on --database, for
    /// --duration seconds, and report cycles/s.
    #[arg(long, requires = "database")]
    pub replay_sqlite: Option<PathBuf>,
    /// The SQLite file of --replay-sqlite, made by `cinder-attach migrate`.
    #[arg(long)]
    pub database: Option<PathBuf>,
}

fn replay(args: &BenchArgs, file: &std::path::Path, database: &std::path::Path) -> ExitCode {
    let duration = std::time::Duration::from_secs_f64(args.duration);
    match sqlite_replay::run(file, database, args.clients, duration) {
        Ok(report) => {
            println!(
                "replay {:.1} cycles/s ({} cycles, {} clients, {:.1} s, {} statements per cycle), \
                 CPU {:.3} ms/cycle",
                report.cycles_per_s,
                report.cycles,
                report.clients,
                report.seconds,
                report.statements_per_cycle,
                report.cpu_ms_per_cycle
            );
            if let Some(path) = &args.json {
                let text = serde_json::to_string_pretty(&report).unwrap_or_default();
                if let Err(err) = std::fs::write(path, text) {
                    eprintln!(
                        "cinder-attach-bench: cannot write {}: {err}",
                        path.display()
                    );
                    return ExitCode::FAILURE;
                }
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("cinder-attach-bench: the replay failed: {err}");
            ExitCode::FAILURE
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = BenchArgs::parse();
    if let (Some(file), Some(database)) = (&args.replay_sqlite, &args.database) {
        return replay(&args, file, database);
    }
    let json_path = args.json.clone();
    let max_refusals = args.max_refusals;
    let report = match run::run(args).await {
        Ok(report) => report,
        Err(err) => {
            eprintln!("cinder-attach-bench: {err}");
            return ExitCode::FAILURE;
        }
    };
    print!("{}", report::render(&report));
    if let Some(path) = json_path {
        let text = serde_json::to_string_pretty(&report).unwrap_or_default();
        if let Err(err) = std::fs::write(&path, text) {
            eprintln!(
                "cinder-attach-bench: cannot write {}: {err}",
                path.display()
            );
            return ExitCode::FAILURE;
        }
    }
    if report.errors > 0 {
        eprintln!("cinder-attach-bench: {} requests failed", report.errors);
        return ExitCode::FAILURE;
    }
    if let Some(max) = max_refusals.filter(|max| report.refusals > *max) {
        eprintln!(
            "cinder-attach-bench: {} attaches refused (at most {max} allowed)",
            report.refusals
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

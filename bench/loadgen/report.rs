//! What a run measured, and its text form.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::cpu::CpuPerCycle;
use crate::BenchMode;

#[derive(Debug, Serialize)]
pub struct OpReport {
    pub count: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub mode: BenchMode,
    pub clients: usize,
    pub seconds: f64,
    pub cycles: u64,
    pub cycles_per_s: f64,
    pub requests: usize,
    pub requests_per_s: f64,
    pub refusals: u64,
    pub errors: u64,
    /// Errors that got no answer at all (connection refused or cut).
    pub unanswered: u64,
    pub error_samples: Vec<String>,
    pub operations: BTreeMap<String, OpReport>,
    pub peak_rss_mib: Option<f64>,
    /// CPU milliseconds per cycle by process (`--server-pid`, `--database-process`).
    pub cpu_per_cycle: Option<CpuPerCycle>,
}

pub fn render(report: &Report) -> String {
    let mut out = format!(
        "mode {:?}, {} clients, {:.1} s: {} cycles ({:.1}/s), {} requests ({:.1}/s), {} refusals, {} errors ({} unanswered)\n",
        report.mode, report.clients, report.seconds, report.cycles, report.cycles_per_s, report.requests,
        report.requests_per_s, report.refusals, report.errors, report.unanswered
    );
    out.push_str(&format!(
        "{:<20} {:>8} {:>9} {:>9} {:>9} {:>9}\n",
        "operation", "count", "p50 ms", "p95 ms", "p99 ms", "max ms"
    ));
    for (op, r) in &report.operations {
        out.push_str(&format!(
            "{op:<20} {:>8} {:>9.2} {:>9.2} {:>9.2} {:>9.2}\n",
            r.count, r.p50_ms, r.p95_ms, r.p99_ms, r.max_ms
        ));
    }
    if let Some(rss) = report.peak_rss_mib {
        out.push_str(&format!("server peak RSS: {rss:.1} MiB\n"));
    }
    if let Some(cpu) = &report.cpu_per_cycle {
        let part = |name: &str, ms: Option<f64>| ms.map(|ms| format!("{name} {ms:.3}"));
        let parts: Vec<String> = [
            part("server", cpu.server_ms),
            part("database", cpu.database_ms),
            part("load generator", cpu.load_generator_ms),
        ]
        .into_iter()
        .flatten()
        .collect();
        out.push_str(&format!("CPU ms per cycle: {}\n", parts.join(", ")));
    }
    for sample in &report.error_samples {
        out.push_str(&format!("error: {sample}\n"));
    }
    out
}

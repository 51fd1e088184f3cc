//! CPU time by process over a run, read from `/proc` (Linux): the server (its pid), the
//! database's processes (every process with the given name, e.g. PostgreSQL's backends)
//! and this load generator, so a change shows where it moved the cost of a cycle.

use std::collections::BTreeMap;

use serde::Serialize;

/// `/proc` counts CPU time in clock ticks of 1/100 s on Linux (USER_HZ).
const TICKS_PER_SECOND: f64 = 100.0;

/// User plus system CPU ticks of one process (`/proc/PID/stat` fields 14 and 15).
fn ticks(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; the fields after it start past ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let user: u64 = fields.get(11)?.parse().ok()?;
    let system: u64 = fields.get(12)?.parse().ok()?;
    Some(user + system)
}

/// This process's CPU time so far, in seconds.
pub fn own_seconds() -> f64 {
    ticks("self").unwrap_or(0) as f64 / TICKS_PER_SECOND
}

/// Ticks of every process named `name`, by pid.
fn ticks_of_named(name: &str) -> BTreeMap<String, u64> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return BTreeMap::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|comm| comm.trim() == name)
        })
        .filter_map(|pid| ticks(&pid).map(|t| (pid, t)))
        .collect()
}

/// What the processes had used when a run started.
pub struct CpuStart {
    server: Option<u64>,
    database: BTreeMap<String, u64>,
    this: Option<u64>,
}

/// CPU milliseconds per completed cycle, by process.
#[derive(Debug, Clone, Serialize)]
pub struct CpuPerCycle {
    pub server_ms: Option<f64>,
    /// Summed over the database's processes; processes that ended during the run are
    /// missed (PostgreSQL's pooled backends live through it).
    pub database_ms: Option<f64>,
    pub load_generator_ms: Option<f64>,
}

pub fn start(server_pid: Option<u32>, database_process: Option<&str>) -> CpuStart {
    CpuStart {
        server: server_pid.and_then(|pid| ticks(&pid.to_string())),
        database: database_process.map(ticks_of_named).unwrap_or_default(),
        this: ticks("self"),
    }
}

impl CpuStart {
    pub fn per_cycle(
        &self,
        server_pid: Option<u32>,
        database_process: Option<&str>,
        cycles: u64,
    ) -> Option<CpuPerCycle> {
        if cycles == 0 {
            return None;
        }
        let ms = |ticks: u64| ticks as f64 * 1000.0 / TICKS_PER_SECOND / cycles as f64;
        let server = server_pid
            .and_then(|pid| ticks(&pid.to_string()))
            .zip(self.server)
            .map(|(end, start)| ms(end.saturating_sub(start)));
        let database = database_process.map(|name| {
            let used: u64 = ticks_of_named(name)
                .iter()
                .map(|(pid, end)| end.saturating_sub(*self.database.get(pid).unwrap_or(&0)))
                .sum();
            ms(used)
        });
        let this = ticks("self")
            .zip(self.this)
            .map(|(end, start)| ms(end.saturating_sub(start)));
        Some(CpuPerCycle {
            server_ms: server,
            database_ms: database.filter(|_| !self.database.is_empty()),
            load_generator_ms: this,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_measured() {
        let started = start(Some(std::process::id()), Some("no-such-process-name"));
        let mut x = 0u64;
        let until = std::time::Instant::now() + std::time::Duration::from_millis(60);
        while std::time::Instant::now() < until {
            x = x.wrapping_add(1);
        }
        assert!(x > 0);
        let used = started
            .per_cycle(Some(std::process::id()), Some("no-such-process-name"), 1)
            .unwrap();
        assert!(used.load_generator_ms.unwrap() >= 10.0, "{used:?}");
        assert!(used.server_ms.unwrap() >= 10.0);
        assert_eq!(used.database_ms, None, "no such processes at the start");
    }
}

//! Prometheus metrics in the text exposition format, served on their own listener
//! (`--metrics-listen`) so that they are never reachable through the public API port.
//! Request counters and latency histograms are kept in memory; attachment and volume
//! counts and pool use are read when scraped.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

use crate::store::{PoolUse, Store};

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct RequestKey {
    method: String,
    route: String,
    status: u16,
}

#[derive(Debug, Default, Clone)]
struct Histogram {
    /// Count per bucket (not cumulative); the last slot is `+Inf`.
    buckets: [u64; BUCKETS.len() + 1],
    sum_seconds: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        let slot = BUCKETS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(BUCKETS.len());
        self.buckets[slot] += 1;
        self.sum_seconds += seconds;
        self.count += 1;
    }
}

#[derive(Debug, Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<RequestKey, Histogram>>,
}

/// Escapes a label value (`\`, `"` and newlines).
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Metrics {
    /// Records one answered request. `route` is the matched route template (low
    /// cardinality), never the raw path.
    pub fn record_request(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        let key = RequestKey {
            method: method.to_owned(),
            route: route.to_owned(),
            status,
        };
        if let Ok(mut requests) = self.requests.lock() {
            requests
                .entry(key)
                .or_default()
                .observe(elapsed.as_secs_f64());
        }
    }

    fn render_requests(&self, out: &mut String) {
        let requests = match self.requests.lock() {
            Ok(requests) => requests.clone(),
            Err(_) => return,
        };
        out.push_str("# HELP cinder_attach_http_requests_total Requests answered, by method, route and status.\n");
        out.push_str("# TYPE cinder_attach_http_requests_total counter\n");
        for (key, histogram) in &requests {
            let _ = writeln!(
                out,
                "cinder_attach_http_requests_total{{method=\"{}\",route=\"{}\",status=\"{}\"}} {}",
                label(&key.method),
                label(&key.route),
                key.status,
                histogram.count
            );
        }
        out.push_str(
            "# HELP cinder_attach_http_request_duration_seconds Time to answer a request.\n",
        );
        out.push_str("# TYPE cinder_attach_http_request_duration_seconds histogram\n");
        for (key, histogram) in &requests {
            let labels = format!(
                "method=\"{}\",route=\"{}\",status=\"{}\"",
                label(&key.method),
                label(&key.route),
                key.status
            );
            let mut cumulative = 0;
            for (i, bound) in BUCKETS.iter().enumerate() {
                cumulative += histogram.buckets[i];
                let _ = writeln!(
                    out,
                    "cinder_attach_http_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                out,
                "cinder_attach_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
                histogram.count
            );
            let _ = writeln!(
                out,
                "cinder_attach_http_request_duration_seconds_sum{{{labels}}} {}",
                histogram.sum_seconds
            );
            let _ = writeln!(
                out,
                "cinder_attach_http_request_duration_seconds_count{{{labels}}} {}",
                histogram.count
            );
        }
    }

    /// The whole exposition: request metrics, then what the store reports. A database
    /// that cannot be read leaves its gauges out and sets `cinder_attach_database_up` 0.
    pub async fn render(&self, store: &dyn Store) -> String {
        let mut out = String::new();
        self.render_requests(&mut out);
        let counts = store.status_counts().await;
        out.push_str(
            "# HELP cinder_attach_database_up Whether the last scrape could read the database.\n",
        );
        out.push_str("# TYPE cinder_attach_database_up gauge\n");
        let _ = writeln!(
            out,
            "cinder_attach_database_up {}",
            u8::from(counts.is_ok())
        );
        if let Ok(counts) = counts {
            out.push_str("# HELP cinder_attach_attachments Live attachments by status.\n");
            out.push_str("# TYPE cinder_attach_attachments gauge\n");
            for (status, count) in &counts.attachments {
                let _ = writeln!(
                    out,
                    "cinder_attach_attachments{{status=\"{}\"}} {count}",
                    label(status)
                );
            }
            out.push_str("# HELP cinder_attach_volumes Live volumes by status.\n");
            out.push_str("# TYPE cinder_attach_volumes gauge\n");
            for (status, count) in &counts.volumes {
                let _ = writeln!(
                    out,
                    "cinder_attach_volumes{{status=\"{}\"}} {count}",
                    label(status)
                );
            }
        }
        out.push_str(
            "# HELP cinder_attach_db_pool_connections Database connections by pool and state.\n",
        );
        out.push_str("# TYPE cinder_attach_db_pool_connections gauge\n");
        for PoolUse {
            pool,
            open,
            idle,
            max,
        } in store.pool_use()
        {
            for (state, value) in [
                ("open", open),
                ("idle", idle),
                ("in_use", open.saturating_sub(idle)),
                ("max", max),
            ] {
                let _ = writeln!(
                    out,
                    "cinder_attach_db_pool_connections{{pool=\"{pool}\",state=\"{state}\"}} {value}"
                );
            }
        }
        if let Some(bytes) = resident_bytes() {
            out.push_str("# HELP process_resident_memory_bytes Resident memory size in bytes.\n");
            out.push_str("# TYPE process_resident_memory_bytes gauge\n");
            let _ = writeln!(out, "process_resident_memory_bytes {bytes}");
        }
        out
    }
}

/// This process's resident set, from `/proc` (Linux only).
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative_in_the_output() {
        let metrics = Metrics::default();
        for ms in [0.5, 3.0, 3.0, 40.0, 20_000.0] {
            metrics.record_request(
                "GET",
                "/v3/{project_id}/volumes",
                200,
                Duration::from_secs_f64(ms / 1000.0),
            );
        }
        let mut out = String::new();
        metrics.render_requests(&mut out);
        let line = |le: &str| {
            out.lines()
                .find(|l| l.contains(&format!("le=\"{le}\"")))
                .map(|l| l.rsplit(' ').next().unwrap_or_default().to_owned())
        };
        assert_eq!(line("0.001").as_deref(), Some("1"));
        assert_eq!(line("0.005").as_deref(), Some("3"));
        assert_eq!(line("0.05").as_deref(), Some("4"));
        assert_eq!(line("10").as_deref(), Some("4"));
        assert_eq!(line("+Inf").as_deref(), Some("5"));
        assert!(out.contains(
            "cinder_attach_http_requests_total{method=\"GET\",route=\"/v3/{project_id}/volumes\",status=\"200\"} 5"
        ));
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}

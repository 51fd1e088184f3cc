//! Prometheus metrics, kept and written by `prometheus-client`, served on their own
//! listener (`--metrics-listen`) so that they are never reachable through the public API
//! port. Request counters and latency histograms are labelled from closed sets only (the
//! known HTTP methods or `other`, the matched route template or `unmatched`, the status
//! code), so no client can add series; attachment and volume counts and pool use are
//! read when scraped.

use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::store::{PoolUse, Store};

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// The methods counted by name; any other is `other`.
const KNOWN_METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    route: String,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    status: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabels {
    pool: &'static str,
    state: &'static str,
}

fn latency_histogram() -> Histogram {
    Histogram::new(BUCKETS)
}

/// The label for `method`: its name when known, else `other`.
pub fn method_label(method: &str) -> &'static str {
    KNOWN_METHODS
        .iter()
        .find(|known| **known == method)
        .copied()
        .unwrap_or("other")
}

pub struct Metrics {
    requests: Family<RequestLabels, Counter>,
    durations: Family<RequestLabels, Histogram, fn() -> Histogram>,
    database_up: Gauge,
    attachments: Family<StatusLabels, Gauge>,
    volumes: Family<StatusLabels, Gauge>,
    compute_calls: Family<StatusLabels, Gauge>,
    host_fences: Family<StatusLabels, Gauge>,
    pool: Family<PoolLabels, Gauge>,
    resident_memory: Gauge,
    /// Scrapes set the gauges, then encode: one at a time.
    registry: Mutex<Registry>,
}

impl Default for Metrics {
    fn default() -> Self {
        let requests = Family::<RequestLabels, Counter>::default();
        let durations = Family::new_with_constructor(latency_histogram as fn() -> Histogram);
        let database_up = Gauge::default();
        let attachments = Family::<StatusLabels, Gauge>::default();
        let volumes = Family::<StatusLabels, Gauge>::default();
        let compute_calls = Family::<StatusLabels, Gauge>::default();
        let host_fences = Family::<StatusLabels, Gauge>::default();
        let pool = Family::<PoolLabels, Gauge>::default();
        let resident_memory = Gauge::default();
        let mut registry = Registry::default();
        registry.register(
            "cinder_attach_http_requests",
            "Requests answered, by method, route and status",
            requests.clone(),
        );
        registry.register(
            "cinder_attach_http_request_duration_seconds",
            "Time to answer a request",
            durations.clone(),
        );
        registry.register(
            "cinder_attach_database_up",
            "Whether the last scrape could read the database",
            database_up.clone(),
        );
        registry.register(
            "cinder_attach_attachments",
            "Live attachments by status",
            attachments.clone(),
        );
        registry.register(
            "cinder_attach_volumes",
            "Live volumes by status",
            volumes.clone(),
        );
        registry.register(
            "cinder_attach_compute_calls",
            "Calls owed to Nova by status (pending ones not sent yet; sent and failed ones until purged)",
            compute_calls.clone(),
        );
        registry.register(
            "cinder_attach_host_fences",
            "Fences of detached hosts on backends with shared credentials, by outcome (fenced, kept, failed; until purged)",
            host_fences.clone(),
        );
        registry.register(
            "cinder_attach_db_pool_connections",
            "Database connections by pool and state",
            pool.clone(),
        );
        registry.register(
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            resident_memory.clone(),
        );
        Metrics {
            requests,
            durations,
            database_up,
            attachments,
            volumes,
            compute_calls,
            host_fences,
            pool,
            resident_memory,
            registry: Mutex::new(registry),
        }
    }
}

impl Metrics {
    /// Records one answered request. `route` is the matched route template (low
    /// cardinality), never the raw path; `method` is reduced to a known name or `other`.
    pub fn record_request(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        let labels = RequestLabels {
            method: method_label(method),
            route: route.to_owned(),
            status,
        };
        self.durations
            .get_or_create(&labels)
            .observe(elapsed.as_secs_f64());
        self.requests.get_or_create(&labels).inc();
    }

    /// The whole exposition (OpenMetrics text): request metrics, then what the store
    /// reports. A database that cannot be read leaves its gauges empty and sets
    /// `cinder_attach_database_up` 0.
    pub async fn render(&self, store: &dyn Store) -> String {
        let counts = store.status_counts().await;
        let pools = store.pool_use();
        let registry = match self.registry.lock() {
            Ok(registry) => registry,
            Err(poisoned) => poisoned.into_inner(),
        };
        self.database_up.set(i64::from(counts.is_ok()));
        self.attachments.clear();
        self.volumes.clear();
        self.compute_calls.clear();
        self.host_fences.clear();
        if let Ok(counts) = &counts {
            for (family, rows) in [
                (&self.attachments, &counts.attachments),
                (&self.volumes, &counts.volumes),
                (&self.compute_calls, &counts.compute_calls),
                (&self.host_fences, &counts.host_fences),
            ] {
                for (status, count) in rows {
                    let labels = StatusLabels {
                        status: status.clone(),
                    };
                    family.get_or_create(&labels).set(*count);
                }
            }
        }
        self.pool.clear();
        for PoolUse {
            pool,
            open,
            idle,
            max,
        } in pools
        {
            for (state, value) in [
                ("open", open),
                ("idle", idle),
                ("in_use", open.saturating_sub(idle)),
                ("max", max),
            ] {
                let labels = PoolLabels { pool, state };
                self.pool.get_or_create(&labels).set(i64::from(value));
            }
        }
        if let Some(bytes) = resident_bytes() {
            self.resident_memory
                .set(i64::try_from(bytes).unwrap_or(i64::MAX));
        }
        let mut out = String::new();
        if let Err(err) = encode(&mut out, &registry) {
            tracing::warn!(error = %err, "could not encode the metrics");
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

    fn requests_only(metrics: &Metrics) -> String {
        let mut out = String::new();
        encode(&mut out, &metrics.registry.lock().unwrap()).unwrap();
        out
    }

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
        let out = requests_only(&metrics);
        let line = |le: &str| {
            out.lines()
                .find(|l| l.contains(&format!("le=\"{le}\"")))
                .map(|l| l.rsplit(' ').next().unwrap_or_default().to_owned())
        };
        assert_eq!(line("0.001").as_deref(), Some("1"), "{out}");
        assert_eq!(line("0.005").as_deref(), Some("3"));
        assert_eq!(line("0.05").as_deref(), Some("4"));
        assert_eq!(line("10.0").as_deref(), Some("4"));
        assert_eq!(line("+Inf").as_deref(), Some("5"));
        assert!(out.contains(
            "cinder_attach_http_requests_total{method=\"GET\",route=\"/v3/{project_id}/volumes\",status=\"200\"} 5"
        ));
    }

    #[test]
    fn unknown_methods_add_no_series() {
        let metrics = Metrics::default();
        metrics.record_request("GET", "unmatched", 404, Duration::from_millis(1));
        let before = requests_only(&metrics).lines().count();
        for i in 0..5_000 {
            let method = format!("X{i:05}");
            metrics.record_request(&method, "unmatched", 405, Duration::from_millis(1));
        }
        let out = requests_only(&metrics);
        assert!(!out.contains("X0"), "no method name of a client's");
        assert!(out.contains(
            "cinder_attach_http_requests_total{method=\"other\",route=\"unmatched\",status=\"405\"} 5000"
        ));
        // One new series (other, 405) for the counter and the histogram, nothing more.
        assert_eq!(out.lines().count(), before + 1 + BUCKETS.len() + 3);
        assert_eq!(method_label("DELETE"), "DELETE");
        assert_eq!(
            method_label("delete"),
            "other",
            "methods are case-sensitive"
        );
    }
}

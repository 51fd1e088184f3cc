//! The services a deployment runs, as `os-services` and `os-hosts` show them: one
//! `cinder-scheduler` and one `cinder-backup` per host name (this process places volumes
//! and keeps backups) and one `cinder-volume` per configured backend (`host@backend`).

use chrono::{DateTime, Utc};

use super::ids::ServiceId;

pub const SCHEDULER_BINARY: &str = "cinder-scheduler";
pub const VOLUME_BINARY: &str = "cinder-volume";
pub const BACKUP_BINARY: &str = "cinder-backup";

/// Seconds without a heartbeat after which a service is `down` (Cinder's
/// `service_down_time`).
pub const SERVICE_DOWN_SECONDS: i64 = 60;

#[derive(Debug, Clone, PartialEq)]
pub struct ServiceRecord {
    pub uuid: ServiceId,
    pub host: String,
    pub binary: String,
    pub availability_zone: String,
    pub disabled: bool,
    pub disabled_reason: Option<String>,
    pub frozen: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

impl ServiceRecord {
    /// Whether the service reported within `SERVICE_DOWN_SECONDS` of `now`.
    pub fn is_up(&self, now: DateTime<Utc>) -> bool {
        let seen = self.updated_at.unwrap_or(self.created_at);
        (now - seen).num_seconds().abs() <= SERVICE_DOWN_SECONDS
    }
}

/// Cinder's host filter (`_filter_host`): the host itself, or a backend (`host@...`) or
/// pool (`...#pool`) below it.
pub fn host_matches(host: &str, wanted: &str) -> bool {
    host == wanted
        || (!wanted.contains('@') && host.starts_with(&format!("{wanted}@")))
        || (!wanted.contains('#') && host.starts_with(&format!("{wanted}#")))
}

/// Volumes and snapshots of one project on one backend (`GET /os-hosts/{host}`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectUsage {
    pub project_id: String,
    pub volume_count: i64,
    pub volume_gb: i64,
    pub snapshot_count: i64,
    pub snapshot_gb: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_filters() {
        assert!(host_matches("node", "node"));
        assert!(host_matches("node@file", "node"));
        assert!(host_matches("node@file", "node@file"));
        assert!(host_matches("node@file#pool", "node@file"));
        assert!(!host_matches("node2@file", "node"));
        assert!(!host_matches("node@file2", "node@file"));
    }
}

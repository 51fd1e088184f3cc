//! What the cluster tells the service about itself, read from the monitors' JSON: where
//! the monitors are (for connection info) and how big the pool is (for placement).

use std::sync::Arc;

use serde_json::{json, Value};

use crate::backend::BackendError;

/// The monitors as connection info gives them to hosts, and their names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Monitors {
    pub hosts: Vec<String>,
    pub ports: Vec<String>,
    pub names: Vec<String>,
}

/// A deterministic libvirt secret uuid for an identity (a hypervisor agent defines the
/// secret under it from the keyring).
pub(super) fn secret_uuid_of(identity: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, identity.as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest.as_ref()[..16]);
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .to_string()
}

/// The cluster's id in `fsid`'s JSON (empty when it cannot be read: then no image is
/// taken for one of this cluster's).
pub(super) fn fsid(out: &[u8]) -> String {
    serde_json::from_slice::<Value>(out)
        .ok()
        .and_then(|v| v["fsid"].as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// `stored + max_avail` of `pool` in `ceph df`'s JSON, in GiB.
pub(super) fn pool_capacity_gb(df: &[u8], pool: &str) -> Option<f64> {
    let df: Value = serde_json::from_slice(df).ok()?;
    let stats = df["pools"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == pool)?
        .get("stats")?;
    let bytes = stats["stored"].as_f64()? + stats["max_avail"].as_f64()?;
    Some(bytes / super::GIB as f64)
}

/// The monitors in `mon dump`'s JSON: their names, and their legacy `addr` as Cinder
/// reads it (`host:port/nonce`, IPv6 hosts in brackets) split into hosts and ports.
pub(super) fn monitor_addresses(dump: &[u8]) -> Option<Monitors> {
    let dump: Value = serde_json::from_slice(dump).ok()?;
    let mut read = Monitors {
        hosts: Vec::new(),
        ports: Vec::new(),
        names: Vec::new(),
    };
    for mon in dump["mons"].as_array()? {
        let addr = mon["addr"].as_str()?;
        let host_port = addr.rsplit_once('/').map_or(addr, |(hp, _)| hp);
        let (host, port) = host_port.rsplit_once(':')?;
        read.hosts.push(host.trim_matches(['[', ']']).to_owned());
        read.ports.push(port.to_owned());
        read.names
            .push(mon["name"].as_str().unwrap_or_default().to_owned());
    }
    (!read.hosts.is_empty()).then_some(read)
}

impl super::RbdBackend {
    /// The monitors (Cinder's `_get_mon_addrs`), as last read: read on first use and
    /// again by every reconciliation pass (they change rarely, and every attach asks).
    pub(super) async fn monitors(&self) -> Result<Arc<Monitors>, BackendError> {
        if let Some(known) = self.monitors.lock().ok().and_then(|m| m.clone()) {
            return Ok(known);
        }
        self.refresh_monitors().await
    }

    pub(super) async fn refresh_monitors(&self) -> Result<Arc<Monitors>, BackendError> {
        let cluster = self.cluster().await?;
        let dump = tokio::task::spawn_blocking(move || {
            cluster.mon_command(&json!({"prefix": "mon dump", "format": "json"}), None)
        })
        .await
        .map_err(|e| self.failed("read the monitors", e))?
        .map_err(|e| self.failed("read the monitors", e))?;
        let read = monitor_addresses(&dump.0)
            .ok_or_else(|| self.failed("read the monitors", "no monitors"))?;
        let read = Arc::new(read);
        if let Ok(mut known) = self.monitors.lock() {
            *known = Some(read.clone());
        }
        Ok(read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monitors_are_read_as_cinder_reads_them() {
        let dump = br#"{"mons": [{"name": "a", "addr": "127.0.0.1:6789/0"},
                                  {"name": "b", "addr": "[::1]:3300/0"}]}"#;
        assert_eq!(
            monitor_addresses(dump),
            Some(Monitors {
                hosts: vec!["127.0.0.1".to_owned(), "::1".to_owned()],
                ports: vec!["6789".to_owned(), "3300".to_owned()],
                names: vec!["a".to_owned(), "b".to_owned()],
            })
        );
        assert_eq!(monitor_addresses(br#"{"mons": []}"#), None);
    }

    #[test]
    fn capacity_is_what_the_pool_stores_and_may_still_take() {
        let df = br#"{"pools": [{"name": "other", "stats": {"stored": 1, "max_avail": 1}},
                                 {"name": "volumes", "stats": {"stored": 1073741824,
                                                               "max_avail": 9663676416}}]}"#;
        assert_eq!(pool_capacity_gb(df, "volumes"), Some(10.0));
        assert_eq!(pool_capacity_gb(df, "missing"), None);
    }
}

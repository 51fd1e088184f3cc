//! The scheduler's view of the backends: what each reports (Cinder's pool
//! capabilities, with free space counted from the database) and where a new volume goes.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::Service;
use crate::backend::ConfiguredBackend;
use crate::domain::ids::ServiceId;
use crate::domain::placement::{self, Candidate};
use crate::domain::service_record::{ServiceRecord, VOLUME_BINARY};
use crate::domain::time::format_timestamp;
use crate::domain::volume_type::VolumeType;
use crate::domain::DomainError;

/// One backend's pool as the scheduler sees it.
#[derive(Debug, Clone)]
pub struct Pool {
    /// Index among the configured backends.
    pub index: usize,
    /// `host@backend#pool`.
    pub name: String,
    pub capabilities: Map<String, Value>,
    pub record: Option<ServiceRecord>,
}

/// What a new volume asks of its backend.
pub struct Placement<'a> {
    pub size_gb: i64,
    pub availability_zone: Option<&'a str>,
    pub volume_type: &'a VolumeType,
}

impl Service {
    /// Every configured backend's pool, with what it reports now.
    pub async fn pools(&self) -> Result<Vec<Pool>, DomainError> {
        let records = self.store.list_services(None, Some(VOLUME_BINARY)).await?;
        let allocated: BTreeMap<ServiceId, i64> =
            self.store.allocated_gb().await?.into_iter().collect();
        Ok(self
            .backends
            .iter()
            .enumerate()
            .map(|(index, backend)| {
                let record = records.iter().find(|r| r.host == backend.host).cloned();
                let used = allocated.get(&backend.service_uuid).copied().unwrap_or(0);
                Pool {
                    index,
                    name: backend.volume_host(),
                    capabilities: pool_capabilities(backend, used, record.as_ref()),
                    record,
                }
            })
            .collect())
    }

    /// The backends that can take the volume, best first (Cinder's filters and capacity
    /// weigher), leaving out those in `tried`.
    pub(super) async fn candidates(
        &self,
        placement: &Placement<'_>,
        tried: &[usize],
    ) -> Result<Vec<usize>, DomainError> {
        let specs = specs_of(placement.volume_type);
        let request = placement::Request {
            size_gb: placement.size_gb,
            availability_zone: placement.availability_zone,
            extra_specs: &specs,
        };
        self.passing(&request, tried).await
    }

    /// The backends that can hold a group: each passes the filters of every one of the
    /// group's volume types with the group type's specs added (Cinder's scheduler checks
    /// both), best first by the first type's weighing.
    pub(super) async fn group_candidates(
        &self,
        volume_types: &[VolumeType],
        group_specs: &BTreeMap<String, String>,
        availability_zone: Option<&str>,
    ) -> Result<Vec<usize>, DomainError> {
        let mut found: Option<Vec<usize>> = None;
        for volume_type in volume_types {
            let mut specs = specs_of(volume_type);
            specs.extend(group_specs.iter().map(|(k, v)| (k.clone(), v.clone())));
            let request = placement::Request {
                size_gb: 0,
                availability_zone,
                extra_specs: &specs,
            };
            let passing = self.passing(&request, &[]).await?;
            found = Some(match found {
                None => passing,
                Some(so_far) => so_far.into_iter().filter(|i| passing.contains(i)).collect(),
            });
        }
        Ok(found.unwrap_or_default())
    }

    async fn passing(
        &self,
        request: &placement::Request<'_>,
        tried: &[usize],
    ) -> Result<Vec<usize>, DomainError> {
        let pools = self.pools().await?;
        let candidates: Vec<Candidate> = pools
            .iter()
            .map(|pool| Candidate {
                availability_zone: self
                    .backends
                    .get(pool.index)
                    .map(|b| b.availability_zone.clone())
                    .unwrap_or_default(),
                disabled: tried.contains(&pool.index)
                    || pool.record.as_ref().is_some_and(|r| r.disabled),
                capabilities: pool.capabilities.clone(),
            })
            .collect();
        Ok(placement::choose(&candidates, request)
            .into_iter()
            .map(|i| pools[i].index)
            .collect())
    }
}

impl Service {
    /// Whether the volume's backend reports what `volume_type`'s extra specs ask for
    /// (Cinder's retype keeps a volume in place only then).
    pub(super) async fn backend_suits(
        &self,
        volume: &crate::domain::volume::Volume,
        volume_type: &VolumeType,
    ) -> Result<bool, DomainError> {
        let pools = self.pools().await?;
        let host = volume.host.as_deref().unwrap_or_default();
        let backend = host.split('#').next().unwrap_or_default();
        let Some(pool) = pools
            .iter()
            .find(|p| p.name.split('#').next() == Some(backend))
        else {
            return Ok(false);
        };
        Ok(placement::satisfies(
            &pool.capabilities,
            &specs_of(volume_type),
        ))
    }
}

/// A type's extra specs with a value (a spec without one asks for nothing here).
pub(super) fn specs_of(volume_type: &VolumeType) -> BTreeMap<String, String> {
    volume_type
        .extra_specs
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.clone()?)))
        .collect()
}

/// What a backend reports to the scheduler, in Cinder's names: its identity, the driver's
/// capabilities, and its space (`allocated_gb` live volumes; unlimited pools report
/// `infinite`). The operator's extra capabilities come last and may add keys.
pub fn pool_capabilities(
    backend: &ConfiguredBackend,
    allocated_gb: i64,
    record: Option<&ServiceRecord>,
) -> Map<String, Value> {
    let driver = backend.driver.capabilities();
    let (total, free) = match driver.total_capacity_gb {
        Some(total) => (json!(total), json!((total - allocated_gb as f64).max(0.0))),
        None => (json!("infinite"), json!("infinite")),
    };
    let reported = record.and_then(|r| r.updated_at.or(Some(r.created_at)));
    let mut capabilities = json!({
        "volume_backend_name": backend.identity.volume_backend_name,
        "vendor_name": backend.identity.vendor_name,
        "driver_version": env!("CARGO_PKG_VERSION"),
        "storage_protocol": driver.storage_protocol,
        "pool_name": driver.pool_name,
        "total_capacity_gb": total,
        "free_capacity_gb": free,
        "allocated_capacity_gb": allocated_gb,
        "provisioned_capacity_gb": allocated_gb,
        "reserved_percentage": 0,
        "max_over_subscription_ratio": "1.0",
        "thin_provisioning_support": driver.thin_provisioning,
        "thick_provisioning_support": !driver.thin_provisioning,
        "QoS_support": true,
        "multiattach": driver.multiattach,
        "online_extend_support": true,
        "backend_state": "up",
        "timestamp": reported.map(|at| format_timestamp(&at)),
    });
    if backend.driver.consistent_group_snapshots() {
        capabilities["consistent_group_snapshot_enabled"] = json!(true);
    }
    if let Some(shared) = driver.shared_targets {
        capabilities["shared_targets"] = json!(shared);
    }
    let mut map = match capabilities {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    for (key, value) in &backend.identity.extra {
        map.insert(key.clone(), json!(value));
    }
    map
}

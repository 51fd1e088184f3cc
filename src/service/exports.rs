//! The database side of backends that enforce access (`backend::AccessRecords`), over
//! the store, for one backend host; and the loop that keeps such backends reconciled.

use std::sync::Arc;

use async_trait::async_trait;

use crate::backend::{AccessRecords, AccessTurn, Backends};
use crate::clock::Clock;
use crate::domain::export::{AccessGrant, HostGrant, TargetExport};
use crate::domain::host_fence::{FenceReport, HostFence};
use crate::domain::ids::VolumeId;
use crate::store::{NewExport, Store};

pub struct StoreRecords {
    store: Arc<dyn Store>,
    backend_host: String,
    clock: Arc<dyn Clock>,
    /// Turns taken in this process where the database has none to share (SQLite).
    local_turns: Vec<Arc<tokio::sync::Mutex<()>>>,
}

/// Volumes share local turns by hash; two volumes sharing one only wait for each other.
const LOCAL_TURN_STRIPES: usize = 64;

impl StoreRecords {
    pub fn new(store: Arc<dyn Store>, backend_host: String, clock: Arc<dyn Clock>) -> Self {
        StoreRecords {
            store,
            backend_host,
            clock,
            local_turns: (0..LOCAL_TURN_STRIPES).map(|_| Arc::default()).collect(),
        }
    }
}

#[async_trait]
impl AccessRecords for StoreRecords {
    async fn record_export(
        &self,
        volume_id: VolumeId,
        auth_username: &str,
        auth_password: &str,
    ) -> Result<TargetExport, String> {
        let new = NewExport {
            volume_id,
            backend_host: &self.backend_host,
            auth_username,
            auth_password,
            now: self.clock.now(),
        };
        self.store
            .record_export(&new)
            .await
            .map_err(|e| e.to_string())
    }

    async fn export_of(&self, volume_id: VolumeId) -> Result<Option<TargetExport>, String> {
        self.store
            .export_of(volume_id)
            .await
            .map_err(|e| e.to_string())
    }

    async fn export_with_grants(
        &self,
        volume_id: VolumeId,
    ) -> Result<Option<(TargetExport, Vec<AccessGrant>)>, String> {
        self.store
            .export_with_grants(volume_id)
            .await
            .map_err(|e| e.to_string())
    }

    async fn exports(&self) -> Result<Vec<TargetExport>, String> {
        self.store
            .exports_of_backend(&self.backend_host)
            .await
            .map_err(|e| e.to_string())
    }

    async fn forget_export(&self, volume_id: VolumeId) -> Result<(), String> {
        self.store
            .forget_export(volume_id)
            .await
            .map_err(|e| e.to_string())
    }

    async fn grants(&self) -> Result<Vec<AccessGrant>, String> {
        self.store
            .access_grants(&self.backend_host)
            .await
            .map_err(|e| e.to_string())
    }
    async fn host_grants(&self, volume: Option<VolumeId>) -> Result<Vec<HostGrant>, String> {
        self.store
            .host_grants(&self.backend_host, volume)
            .await
            .map_err(|e| e.to_string())
    }

    async fn access_turn(&self, volume: VolumeId) -> Result<AccessTurn, String> {
        if let Some(held) = self
            .store
            .access_turn(volume)
            .await
            .map_err(|e| e.to_string())?
        {
            return Ok(AccessTurn::new(held));
        }
        let stripe = (volume.uuid().as_u128() % LOCAL_TURN_STRIPES as u128) as usize;
        let held = Arc::clone(&self.local_turns[stripe]).lock_owned().await;
        Ok(AccessTurn::new(held))
    }

    async fn connected_ips(&self, volume: VolumeId) -> Result<Vec<String>, String> {
        self.store
            .connected_ips(volume)
            .await
            .map_err(|e| e.to_string())
    }

    async fn record_fence(&self, report: FenceReport) -> Result<(), String> {
        let fence = HostFence {
            id: uuid::Uuid::new_v4(),
            volume_id: report.volume_id,
            backend_host: self.backend_host.clone(),
            host_ip: report.host_ip,
            addresses: report.addresses,
            outcome: report.outcome,
            reason: report.reason,
            created_at: self.clock.now(),
        };
        self.store
            .record_fence(&fence)
            .await
            .map_err(|e| e.to_string())
    }

    async fn failed_fences(&self) -> Result<Vec<HostFence>, String> {
        self.store
            .failed_fences(&self.backend_host)
            .await
            .map_err(|e| e.to_string())
    }

    async fn settle_fence(&self, id: uuid::Uuid) -> Result<(), String> {
        self.store
            .settle_fence(id, self.clock.now())
            .await
            .map_err(|e| e.to_string())
    }
}

/// Reconciles, once, every backend that asks for it (at start, before serving).
pub async fn reconcile_once(backends: &Backends) {
    for backend in backends.iter() {
        if backend.driver.reconcile_interval().is_some() {
            reconcile_backend(backend).await;
        }
    }
}

/// Keeps reconciling each backend at its interval, for as long as the process runs; what
/// had to be repaired is logged (a restarted tgtd shows up as its exports put back).
pub fn keep_reconciled(backends: Arc<Backends>) {
    for index in 0..backends.iter().count() {
        let backends = backends.clone();
        tokio::spawn(async move {
            let Some(backend) = backends.iter().nth(index) else {
                return;
            };
            let Some(every) = backend.driver.reconcile_interval() else {
                return;
            };
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                reconcile_backend(backend).await;
            }
        });
    }
}

async fn reconcile_backend(backend: &crate::backend::ConfiguredBackend) {
    match backend.driver.reconcile(true).await {
        Ok(repaired) if repaired.is_empty() => {}
        Ok(repaired) => tracing::warn!(
            backend = %backend.name,
            changes = repaired.len(),
            first = %repaired[0],
            "backend drifted from the database; put back what the database holds"
        ),
        Err(err) => {
            tracing::warn!(backend = %backend.name, error = %err, "could not reconcile the backend")
        }
    }
}

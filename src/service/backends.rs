//! Start-up: the configured backends, built and recorded as services.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::exports::StoreRecords;
use crate::backend::{BackendSpec, Backends, ConfiguredBackend};
use crate::clock::Clock;
use crate::domain::ids::ServiceId;
use crate::domain::service_record::{BACKUP_BINARY, SCHEDULER_BINARY, VOLUME_BINARY};
use crate::store::{ServiceRegistration, Store, StoreError};

/// How often the services of this process report that they are alive (Cinder's
/// `report_interval`).
pub const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    #[error("{0}")]
    Config(String),
    #[error("cannot record the backends: {0}")]
    Store(#[from] StoreError),
}

/// Builds every configured backend, recording nothing: each has a nil service uuid
/// until `register_backends` records it (what a dry run uses).
pub fn build_backends(
    store: &Arc<dyn Store>,
    specs: &[BackendSpec],
    host_name: &str,
    clock: &Arc<dyn Clock>,
) -> Result<Vec<ConfiguredBackend>, RegisterError> {
    let mut configured: Vec<ConfiguredBackend> = Vec::new();
    for spec in specs {
        let host = format!("{host_name}@{}", spec.name);
        let records = StoreRecords::new(store.clone(), host.clone(), clock.clone());
        let (driver, availability_zone) = spec
            .build(Arc::new(records))
            .map_err(RegisterError::Config)?;
        if configured.iter().any(|b| b.name == spec.name) {
            return Err(RegisterError::Config(format!(
                "backend {} is configured twice",
                spec.name
            )));
        }
        configured.push(ConfiguredBackend {
            name: spec.name.clone(),
            host,
            service_uuid: ServiceId::from(uuid::Uuid::nil()),
            availability_zone,
            identity: spec.identity(),
            driver,
        });
    }
    Ok(configured)
}

/// Builds every configured backend and records it as a `cinder-volume` service (stable
/// uuid per host); the process itself is the host's `cinder-scheduler` and its
/// `cinder-backup` (it keeps the backups).
pub async fn register_backends(
    store: &Arc<dyn Store>,
    specs: &[BackendSpec],
    host_name: &str,
    clock: &Arc<dyn Clock>,
) -> Result<Backends, RegisterError> {
    let mut configured = build_backends(store, specs, host_name, clock)?;
    for (backend, spec) in configured.iter_mut().zip(specs) {
        let capabilities = serde_json::to_value(backend.driver.capabilities()).unwrap_or_default();
        backend.service_uuid = store
            .register_service(&ServiceRegistration {
                new_uuid: ServiceId::generate(),
                host: backend.host.clone(),
                binary: VOLUME_BINARY,
                backend_name: spec.name.clone(),
                driver: spec.driver.name().to_owned(),
                availability_zone: backend.availability_zone.clone(),
                capabilities,
                now: clock.now(),
            })
            .await?;
    }
    let zone = configured
        .first()
        .map_or_else(|| "nova".to_owned(), |b| b.availability_zone.clone());
    for binary in [SCHEDULER_BINARY, BACKUP_BINARY] {
        store
            .register_service(&ServiceRegistration {
                new_uuid: ServiceId::generate(),
                host: host_name.to_owned(),
                binary,
                backend_name: String::new(),
                driver: String::new(),
                availability_zone: zone.clone(),
                capabilities: serde_json::Value::Null,
                now: clock.now(),
            })
            .await?;
    }
    Ok(Backends::new(configured).with_scheduler_host(host_name.to_owned()))
}

/// Reports the services of this process alive every `HEARTBEAT`, for good; its
/// `cinder-backup` only once `backups_ready` (as Cinder's backup service reports nothing
/// while its driver is not set up, so it shows `down`).
pub fn keep_reporting(
    store: Arc<dyn Store>,
    backends: Arc<Backends>,
    clock: Arc<dyn Clock>,
    backups_ready: Arc<AtomicBool>,
) {
    let hosts = backends.service_hosts();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(HEARTBEAT);
        loop {
            every.tick().await;
            let silent = (!backups_ready.load(Ordering::Acquire)).then_some(BACKUP_BINARY);
            if let Err(err) = store.heartbeat(&hosts, silent, clock.now()).await {
                tracing::warn!(error = %err, "could not report the services alive");
            }
        }
    });
}

//! Start-up: the configured backends, built and recorded as services.

use std::sync::Arc;

use super::exports::StoreRecords;
use crate::backend::{BackendSpec, Backends, ConfiguredBackend};
use crate::clock::Clock;
use crate::domain::ids::ServiceId;
use crate::store::{ServiceRegistration, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    #[error("{0}")]
    Config(String),
    #[error("cannot record the backends: {0}")]
    Store(#[from] StoreError),
}

/// Builds every configured backend and records it as a service (stable uuid per host).
pub async fn register_backends(
    store: &Arc<dyn Store>,
    specs: &[BackendSpec],
    host_name: &str,
    clock: &Arc<dyn Clock>,
) -> Result<Backends, RegisterError> {
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
        let capabilities = serde_json::to_value(driver.capabilities()).unwrap_or_default();
        let service_uuid = store
            .register_service(&ServiceRegistration {
                new_uuid: ServiceId::generate(),
                host: host.clone(),
                backend_name: spec.name.clone(),
                driver: spec.driver.name().to_owned(),
                availability_zone: availability_zone.clone(),
                capabilities,
                now: clock.now(),
            })
            .await?;
        configured.push(ConfiguredBackend {
            name: spec.name.clone(),
            host,
            service_uuid,
            availability_zone,
            driver,
        });
    }
    Ok(Backends::new(configured))
}

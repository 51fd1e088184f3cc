//! The operator's views of the deployment, admin-only as in Cinder: the services
//! (`os-services`), the scheduler's pools (`scheduler-stats/get_pools`), one backend's
//! capabilities (`capabilities/{host}`) and the hosts (`os-hosts`).

use serde_json::{Map, Value};

use super::placement::{specs_of, Pool};
use super::Service;
use crate::domain::placement::{self, PoolFilters};
use crate::domain::service_record::{host_matches, ProjectUsage, ServiceRecord, VOLUME_BINARY};
use crate::domain::volume::Volume;
use crate::domain::{DomainError, RequestContext};
use crate::policy::{rules, Target};

impl Service {
    fn enforce_admin_view(
        &self,
        caller: &RequestContext,
        rule: &'static str,
    ) -> Result<(), DomainError> {
        self.policy.enforce(rule, caller, &Target::caller(caller))?;
        Ok(())
    }

    pub async fn list_services(
        &self,
        caller: &RequestContext,
        host: Option<&str>,
        binary: Option<&str>,
    ) -> Result<Vec<ServiceRecord>, DomainError> {
        self.enforce_admin_view(caller, rules::SERVICES_INDEX)?;
        Ok(self.store.list_services(host, binary).await?)
    }

    /// Enables or disables a service; a disabled backend takes no new volume, and its
    /// volumes keep working.
    pub async fn set_service_enabled(
        &self,
        caller: &RequestContext,
        host: &str,
        binary: &str,
        enabled: bool,
        reason: Option<&str>,
    ) -> Result<ServiceRecord, DomainError> {
        self.enforce_admin_view(caller, rules::SERVICES_UPDATE)?;
        self.store
            .set_service_disabled(host, binary, !enabled, reason, self.clock.now())
            .await?
            .ok_or_else(|| DomainError::ServiceNotFound {
                host: host.to_owned(),
                binary: binary.to_owned(),
            })
    }

    /// `os-services/freeze` and `/thaw`: marks the volume services on `host` frozen.
    pub async fn set_frozen(
        &self,
        caller: &RequestContext,
        host: &str,
        frozen: bool,
    ) -> Result<(), DomainError> {
        let rule = if frozen {
            rules::FREEZE_HOST
        } else {
            rules::THAW_HOST
        };
        self.enforce_admin_view(caller, rule)?;
        match self.store.set_frozen(host, frozen).await? {
            0 => Err(DomainError::NoVolumeServiceOn(host.to_owned())),
            _ => Ok(()),
        }
    }

    /// Cinder's `assert_not_frozen`: no delete or snapshot on a frozen backend.
    pub(super) async fn ensure_not_frozen(&self, volume: &Volume) -> Result<(), DomainError> {
        match volume.service_uuid {
            Some(service) if self.store.is_frozen(service).await? => {
                Err(DomainError::BackendFrozen)
            }
            _ => Ok(()),
        }
    }

    /// The pools `filters` let through and, with `volume_type`, whose capabilities
    /// satisfy that type's extra specs (as placement asks them).
    pub async fn scheduler_pools(
        &self,
        caller: &RequestContext,
        filters: &PoolFilters,
        volume_type: Option<&str>,
    ) -> Result<Vec<Pool>, DomainError> {
        self.enforce_admin_view(caller, rules::GET_POOLS)?;
        let specs = match volume_type {
            Some(name_or_id) => Some(specs_of(
                &self.resolve_volume_type(caller, name_or_id).await?,
            )),
            None => None,
        };
        let mut pools = self.pools().await?;
        pools.retain(|pool| {
            placement::pool_matches(&pool.name, &pool.capabilities, filters)
                && specs
                    .as_ref()
                    .is_none_or(|specs| placement::satisfies(&pool.capabilities, specs))
        });
        Ok(pools)
    }

    /// The capabilities of the backend (or pool) named `host`.
    pub async fn backend_capabilities(
        &self,
        caller: &RequestContext,
        host: &str,
    ) -> Result<(String, Map<String, Value>), DomainError> {
        self.enforce_admin_view(caller, rules::CAPABILITIES)?;
        let pools = self.pools().await?;
        pools
            .into_iter()
            .find(|pool| host_matches(&pool.name, host))
            .map(|pool| {
                let backend = pool.name.split('#').next().unwrap_or_default().to_owned();
                (backend, pool.capabilities)
            })
            .ok_or_else(|| DomainError::CapabilitiesNotFound(host.to_owned()))
    }

    /// `os-hosts`: the enabled services, in `zone` when one is given.
    pub async fn list_hosts(
        &self,
        caller: &RequestContext,
        zone: Option<&str>,
    ) -> Result<Vec<ServiceRecord>, DomainError> {
        self.enforce_admin_view(caller, rules::HOSTS)?;
        let services = self.store.list_services(None, None).await?;
        Ok(services
            .into_iter()
            .filter(|s| !s.disabled)
            .filter(|s| zone.is_none_or(|z| s.availability_zone == z))
            .collect())
    }

    /// `os-hosts/{host}`: what each project keeps on the volume service `host`.
    /// `PUT /os-hosts/{host}` with a status: the volume service on `host` takes new
    /// volumes again, or no longer (as `os-services/enable` and `disable` do).
    pub async fn set_host_enabled(
        &self,
        caller: &RequestContext,
        host: &str,
        enabled: bool,
    ) -> Result<ServiceRecord, DomainError> {
        self.enforce_admin_view(caller, rules::HOSTS)?;
        self.store
            .set_service_disabled(host, VOLUME_BINARY, !enabled, None, self.clock.now())
            .await?
            .ok_or_else(|| DomainError::HostNotFound(host.to_owned()))
    }

    pub async fn host_usage(
        &self,
        caller: &RequestContext,
        host: &str,
    ) -> Result<Vec<ProjectUsage>, DomainError> {
        self.enforce_admin_view(caller, rules::HOSTS)?;
        let services = self.store.list_services(None, Some(VOLUME_BINARY)).await?;
        let service = services
            .into_iter()
            .find(|s| s.host == host)
            .ok_or_else(|| DomainError::HostNotFound(host.to_owned()))?;
        Ok(self.store.usage_on_backend(service.uuid).await?)
    }
}

//! `workers/cleanup` (3.24): an admin asks for the work that stopped half-way on some
//! services to be finished, as a restart of those services would. The services a process
//! runs are cleaned in the background (202 at once, as Cinder's cast); the rest are
//! reported `unavailable` (`domain::cleanup`).

use uuid::Uuid;

use super::volumes::INTERRUPTIBLE;
use super::Service;
use crate::domain::cleanup::{split_for_cleanup, CleanableType, ServiceSelection};
use crate::domain::ids::VolumeId;
use crate::domain::service_record::{ServiceRecord, SCHEDULER_BINARY};
use crate::domain::volume::Volume;
use crate::domain::{DomainError, RequestContext};
use crate::policy::{rules, Target};

/// A cleanup as the API received it.
#[derive(Debug, Clone, Default)]
pub struct CleanupRequest {
    pub services: ServiceSelection,
    pub resource_type: Option<CleanableType>,
    pub resource_id: Option<Uuid>,
}

/// The services cleaned for, and those nobody here can clean for.
#[derive(Debug, Clone, Default)]
pub struct CleanupAnswer {
    pub cleaning: Vec<ServiceRecord>,
    pub unavailable: Vec<ServiceRecord>,
}

impl Service {
    pub async fn cleanup_workers(
        &self,
        caller: &RequestContext,
        mut request: CleanupRequest,
    ) -> Result<CleanupAnswer, DomainError> {
        self.policy
            .enforce(rules::WORKERS_CLEANUP, caller, &Target::caller(caller))?;
        // One resource, without saying where: it is looked up, and its service named.
        let mut only: Option<VolumeId> = None;
        if let Some(id) = request.resource_id {
            let located = request.services.host.is_some()
                || request.services.service_id.is_some()
                || request.services.cluster_name.is_some();
            let pending = self
                .volume_pending_cleanup(request.resource_type, id)
                .await?;
            match (pending, located) {
                (Some(volume), false) => {
                    match volume.host.as_deref() {
                        Some(host) => {
                            let backend = host.split('#').next().unwrap_or(host);
                            request.services.host = Some(backend.to_owned());
                        }
                        // Not placed yet: the scheduler's work.
                        None => request.services.binary = Some(SCHEDULER_BINARY.to_owned()),
                    }
                }
                (None, false) => return Err(DomainError::NothingPendingCleanup(id)),
                _ => {}
            }
            only = Some(VolumeId::from(id));
        }
        let now = self.clock.now();
        let selected: Vec<ServiceRecord> = self
            .store
            .list_services(None, None)
            .await?
            .into_iter()
            .filter(|s| request.services.selects(s, now))
            .collect();
        let (cleaning, unavailable) =
            split_for_cleanup(selected, |host| self.backends.for_host(host).is_some());
        if request.resource_type != Some(CleanableType::Snapshot) {
            self.clean_in_background(&cleaning, only);
        }
        Ok(CleanupAnswer {
            cleaning,
            unavailable,
        })
    }

    /// The volume `id` when it is in a status a cleanup finishes.
    async fn volume_pending_cleanup(
        &self,
        resource_type: Option<CleanableType>,
        id: Uuid,
    ) -> Result<Option<Volume>, DomainError> {
        // Snapshots here never wait for a cleanup: theirs is done in one step.
        if resource_type == Some(CleanableType::Snapshot) {
            return Ok(None);
        }
        let found = self.store.get_volume(VolumeId::from(id)).await?;
        Ok(found.filter(|v| INTERRUPTIBLE.contains(&v.status)))
    }

    /// Finishes the interrupted work of `services`' volumes (the scheduler's: those on no
    /// backend), all of it or one volume's, with the grace a restart uses: work a request
    /// of this process may still be doing is left alone.
    fn clean_in_background(&self, services: &[ServiceRecord], only: Option<VolumeId>) {
        if services.is_empty() {
            return;
        }
        let hosts: Vec<String> = services
            .iter()
            .filter(|s| s.binary != SCHEDULER_BINARY)
            .map(|s| s.host.clone())
            .collect();
        let unplaced = services.iter().any(|s| s.binary == SCHEDULER_BINARY);
        let service = self.clone();
        let grace = self.settings.interrupted_after;
        tokio::spawn(async move {
            let which = move |v: &Volume| {
                only.is_none_or(|id| v.id == id)
                    && match v.host.as_deref() {
                        None => unplaced,
                        Some(host) => {
                            let backend = host.split('#').next().unwrap_or(host);
                            hosts.iter().any(|h| h == backend)
                        }
                    }
            };
            match service.recover_interrupted_volumes(grace, &which).await {
                Ok(n) => tracing::info!(volumes = n, "workers cleanup done"),
                Err(err) => tracing::error!(error = %err, "workers cleanup failed"),
            }
        });
    }
}

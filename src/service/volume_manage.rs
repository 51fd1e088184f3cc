//! Adoption of storage that is already on a backend (Cinder's `manage`/`unmanage`): the
//! storage objects of a backend that no volume is, one of them taken as a new volume
//! (renamed to the volume's name, its data kept), and a volume let go without its data
//! being removed.

use std::collections::{BTreeMap, BTreeSet};

use super::Service;
use crate::backend::manage::whole_gib;
use crate::backend::Manageable;
use crate::domain::error::ManageError;
use crate::domain::ids::VolumeId;
use crate::domain::quota::QuotaOwner;
use crate::domain::volume::{NewVolume, Volume, VolumeStatus};
use crate::domain::{DomainError, RequestContext};
use crate::policy::{rules, Target};

/// What `POST /os-volume-manage` asks for.
#[derive(Debug, Clone, Default)]
pub struct ManageVolume {
    /// The backend's host (`host@backend[#pool]`).
    pub host: String,
    /// The storage object's `source-name`.
    pub source_name: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub volume_type: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub availability_zone: Option<String>,
    pub bootable: bool,
}

/// One storage object as the manageable listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManageableVolume {
    pub source_name: String,
    pub size_gib: u64,
    /// The volume it already is, when it is one.
    pub cinder_id: Option<VolumeId>,
}

/// The volume id a storage object's name (`volume-<id>`) names.
fn volume_id_in(name: &str) -> Option<VolumeId> {
    name.strip_prefix("volume-").and_then(VolumeId::parse)
}

fn invalid_input(reason: impl Into<String>) -> DomainError {
    ManageError::InvalidInput(reason.into()).into()
}

/// Cinder's `ManageExistingInvalidReference`.
pub(super) fn invalid_reference(name: &str, reason: &str) -> DomainError {
    invalid_input(format!(
        "Manage existing volume failed due to invalid backend reference \
         {{'source-name': '{name}'}}: {reason}"
    ))
}

impl Service {
    pub(super) fn backend_at_host(
        &self,
        host: &str,
    ) -> Result<&crate::backend::ConfiguredBackend, DomainError> {
        self.backends
            .for_host(host)
            .ok_or_else(|| invalid_input(format!("Host '{host}' not found")))
    }

    /// The live volume storage `name` names (`volume-<id>`, `id` its storage id), if any.
    pub(super) async fn volume_named(&self, name: &str) -> Result<Option<VolumeId>, DomainError> {
        let Some(id) = volume_id_in(name) else {
            return Ok(None);
        };
        Ok(self.store.live_volume_ids(&[id]).await?.into_iter().next())
    }

    /// The storage objects of the backend at `host` (admins), as Cinder's
    /// `get_manageable_volumes` lists them: each with whether it is a volume already.
    pub async fn manageable_volumes(
        &self,
        caller: &RequestContext,
        host: &str,
    ) -> Result<Vec<ManageableVolume>, DomainError> {
        let target = Target::caller(caller);
        self.policy
            .enforce(rules::VOLUME_LIST_MANAGEABLE, caller, &target)?;
        let backend = self.backend_at_host(host)?;
        let found: Vec<Manageable> = backend
            .driver
            .manageable_volumes()
            .await
            .map_err(|e| ManageError::BackendFailed(e.to_string()))?;
        let named: Vec<VolumeId> = found.iter().filter_map(|o| volume_id_in(&o.name)).collect();
        let live: BTreeSet<VolumeId> = self
            .store
            .live_volume_ids(&named)
            .await?
            .into_iter()
            .collect();
        Ok(found
            .into_iter()
            .map(|object| ManageableVolume {
                cinder_id: volume_id_in(&object.name).filter(|id| live.contains(id)),
                size_gib: whole_gib(object.size_bytes),
                source_name: object.name,
            })
            .collect())
    }

    /// Takes a storage object of a backend as a new volume (admins): checked, recorded
    /// on that backend (counted against the caller's quota), then renamed to the
    /// volume's name by the backend; the volume is `available`, or `error` when the
    /// backend could not take it.
    pub async fn manage_volume(
        &self,
        caller: &RequestContext,
        request: ManageVolume,
    ) -> Result<Volume, DomainError> {
        let target = Target::caller(caller);
        self.policy.enforce(rules::VOLUME_MANAGE, caller, &target)?;
        let name = request.source_name.as_str();
        if self.volume_named(name).await?.is_some() {
            return Err(ManageError::InvalidVolume(
                "Unable to manage existing volume. The volume is already managed".to_owned(),
            )
            .into());
        }
        let volume_type = match request.volume_type.as_deref().filter(|t| !t.is_empty()) {
            Some(name_or_id) => {
                self.resolve_volume_type(caller, name_or_id)
                    .await
                    .map_err(|_| {
                        ManageError::InvalidVolumeType(format!(
                            "Cannot find requested '{name_or_id}' volume type"
                        ))
                    })?
            }
            None => self.default_volume_type(&caller.project_id).await?,
        };
        if self.store.get_encryption(volume_type.id).await?.is_some() {
            return Err(ManageError::InvalidVolumeType(
                "Managing to an encrypted volume type is not supported.".to_owned(),
            )
            .into());
        }
        let backend = self.backend_at_host(&request.host)?;
        let zone = request.availability_zone.filter(|z| !z.is_empty());
        if zone
            .as_ref()
            .is_some_and(|z| *z != backend.availability_zone)
        {
            let zone = zone.unwrap_or_default();
            return Err(DomainError::InvalidAvailabilityZone(zone));
        }
        let size = match backend.driver.existing_volume_size(name).await {
            Ok(Some(bytes)) => whole_gib(bytes),
            Ok(None) => return Err(invalid_reference(name, "the backend has no such object.")),
            Err(err) => return Err(invalid_reference(name, &err.to_string())),
        };
        super::volume_metadata::metadata_fits(&request.metadata)?;
        let now = self.clock.now();
        let mut new = NewVolume {
            id: VolumeId::generate(),
            user_id: caller.user_id.clone(),
            project_id: caller.project_id.clone(),
            host: None,
            status: VolumeStatus::Creating,
            size: size as i64,
            availability_zone: backend.availability_zone.clone(),
            name: request.name,
            description: request.description,
            volume_type_id: volume_type.id,
            snapshot_id: None,
            source_volid: None,
            multiattach: volume_type.is_multiattach(),
            service_uuid: None,
            backend_capacity_gb: None,
            shared_targets: None,
            metadata: request.metadata,
            encryption_key_id: None,
            group_id: None,
            bootable: request.bootable,
            created_at: now,
        };
        let owner = QuotaOwner {
            project_id: new.project_id.clone(),
            type_name: volume_type.name.clone(),
            defaults: self.settings.quota_defaults.clone(),
        };
        if !self.record_on(&mut new, &owner, Some(backend)).await? {
            return Err(ManageError::InvalidVolume(format!(
                "The backend {} has no room for {size} GiB more.",
                backend.host
            ))
            .into());
        }
        let taken = backend.driver.manage_volume(new.id, name, size).await;
        let result = taken.map_err(|e| e.to_string());
        if let Err(why) = &result {
            tracing::warn!(volume_id = %new.id, error = %why, "the backend could not manage the object");
        }
        let (from, failed) = (VolumeStatus::Creating, VolumeStatus::Error);
        if self
            .settle(new.id, result, (from, failed), "manage")
            .await?
        {
            let available = VolumeStatus::Available;
            self.store
                .transition_volume(new.id, from, available, self.clock.now())
                .await?;
        }
        self.get_volume(caller, new.id).await
    }

    /// `os-unmanage` (admins): the volume leaves the service as a delete would (Cinder's
    /// rules: not attached, no snapshots, ...), its storage renamed
    /// `unmanaged-volume-<id>` and kept, its key kept.
    pub async fn unmanage_volume(
        &self,
        caller: &RequestContext,
        id: VolumeId,
    ) -> Result<(), DomainError> {
        let volume = self
            .volume_with_rule(caller, id, rules::VOLUME_UNMANAGE)
            .await?;
        self.begin_delete(&volume, false, false).await?;
        let result = match self.backend_of(&volume) {
            _ if volume.host.is_none() => Ok(()),
            Ok(backend) => backend
                .driver
                .unmanage_volume(volume.storage_id())
                .await
                .map_err(|e| e.to_string()),
            Err(err) => Err(err.to_string()),
        };
        let failed = (VolumeStatus::Deleting, VolumeStatus::ErrorDeleting);
        if self.settle(id, result, failed, "unmanage").await? {
            self.store
                .finish_volume_delete(id, self.clock.now())
                .await?;
        }
        Ok(())
    }
}

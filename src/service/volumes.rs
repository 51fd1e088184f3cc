//! Volume use cases: lookups, and create, which runs synchronously through the volume's
//! backend (`volume_actions.rs` has the changes to an existing volume).

use std::collections::BTreeMap;

use super::placement::Placement;
use super::volume_not_found;
use super::volume_sources::Origin;
use super::Service;
use crate::backend::{ConfiguredBackend, DataSource};
use crate::domain::error::GroupError;
use crate::domain::group::Group;
use crate::domain::ids::VolumeId;
use crate::domain::message::{action, detail, Detail, Message};
use crate::domain::paging::Page;
use crate::domain::quota::QuotaOwner;
use crate::domain::refusal::VolumeCreateRefusal;
use crate::domain::volume::{
    NewVolume, Volume, VolumeFilters, VolumeSortKey, VolumeStatus, VolumeSummary,
};
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::policy::{rules, Target};

/// A volume create as the API received it.
#[derive(Debug, Clone, Default)]
pub struct CreateVolume {
    pub size: Option<i64>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub volume_type: Option<String>,
    pub availability_zone: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub snapshot_id: Option<String>,
    pub source_volid: Option<String>,
    /// `imageRef`: a Glance image's id, name or URL.
    pub image_ref: Option<String>,
    /// The caller's token, for Glance.
    pub auth_token: Option<String>,
    /// The group to create the volume in (3.13+).
    pub group_id: Option<String>,
    /// The backup to restore into the new volume (3.47+).
    pub backup_id: Option<String>,
}

/// What the caller may see of a volume (admin-only and policy-guarded fields).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VolumeViewRights {
    pub is_admin: bool,
    pub host_attribute: bool,
    pub tenant_attribute: bool,
    pub migration_attribute: bool,
    /// Attachment `host_name` is shown to admins and the `service` role.
    pub attachment_host: bool,
    /// `volume_image_metadata` (Cinder's os-vol-image-meta extension, show and list).
    pub image_metadata: bool,
}

impl VolumeViewRights {
    /// Cinder adds the `os-vol-*` extension attributes to show and list answers only,
    /// not to what create and update return.
    pub fn without_extension_attributes(self) -> Self {
        VolumeViewRights {
            host_attribute: false,
            tenant_attribute: false,
            migration_attribute: false,
            image_metadata: false,
            ..self
        }
    }
}

/// Cinder's `check_exclusive_options` for a volume's sources.
/// Statuses a volume is left in when the work on it stops half-way.
pub(super) const INTERRUPTIBLE: [VolumeStatus; 4] = [
    VolumeStatus::Creating,
    VolumeStatus::Deleting,
    VolumeStatus::Downloading,
    VolumeStatus::Uploading,
];

pub(super) const ONE_SOURCE: &str =
    "Invalid input received: May specify only one of backup, imageRef, snapshot, source volume";

/// A user message saying that creating volume `id` failed (`detail`: how, in Cinder's
/// fixed words; the backend's own are logged).
fn creation_failed(
    id: VolumeId,
    project_id: String,
    request_id: Option<String>,
    detail: Detail,
    now: chrono::DateTime<chrono::Utc>,
) -> Message {
    let why = (action::CREATE_VOLUME_FROM_BACKEND, detail);
    Message::volume_error(id, project_id, request_id, why, now)
}

impl Service {
    pub fn volume_view_rights(&self, caller: &RequestContext, volume: &Volume) -> VolumeViewRights {
        let target = Target::project(&volume.project_id);
        VolumeViewRights {
            is_admin: caller.is_admin,
            host_attribute: self.policy.allows(rules::HOST_ATTRIBUTE, caller, &target),
            tenant_attribute: self.policy.allows(rules::TENANT_ATTRIBUTE, caller, &target),
            migration_attribute: self
                .policy
                .allows(rules::MIGRATION_ATTRIBUTE, caller, &target),
            attachment_host: caller.is_admin || caller.has_role("service"),
            image_metadata: self
                .policy
                .allows(rules::IMAGE_METADATA_SHOW, caller, &target),
        }
    }

    /// The zones the configured backends serve, sorted, each once.
    pub fn availability_zones(&self) -> Vec<String> {
        let zones: std::collections::BTreeSet<String> = self
            .backends
            .iter()
            .map(|b| b.availability_zone.clone())
            .collect();
        zones.into_iter().collect()
    }

    /// A volume the caller may see (brief: no side tables), once `rule` allows the caller
    /// to act on it.
    pub(super) async fn volume_under_rule(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        rule: &'static str,
    ) -> Result<Volume, DomainError> {
        let volume = self.get_volume_brief(caller, id).await?;
        self.policy
            .enforce(rule, caller, &Target::project(&volume.project_id))?;
        Ok(volume)
    }

    /// A volume the caller may see (with its side tables), once `rule` allows the caller
    /// to act on it.
    pub(super) async fn volume_with_rule(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        rule: &'static str,
    ) -> Result<Volume, DomainError> {
        let volume = self.get_volume(caller, id).await?;
        self.policy
            .enforce(rule, caller, &Target::project(&volume.project_id))?;
        Ok(volume)
    }

    /// A volume the caller may see: other projects' volumes do not exist for non-admins.
    pub async fn get_volume(
        &self,
        caller: &RequestContext,
        id: VolumeId,
    ) -> Result<Volume, DomainError> {
        let volume = self.store.get_volume(id).await?;
        self.visible(caller, id, volume)
    }

    /// Like `get_volume`, without user metadata and attachments (the attach paths).
    pub async fn get_volume_brief(
        &self,
        caller: &RequestContext,
        id: VolumeId,
    ) -> Result<Volume, DomainError> {
        let volume = self.store.get_volume_brief(id).await?;
        self.visible(caller, id, volume)
    }

    fn visible(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        volume: Option<Volume>,
    ) -> Result<Volume, DomainError> {
        let volume = volume.ok_or_else(|| volume_not_found(id))?;
        if caller.is_project_scoped() && volume.project_id != caller.project_id {
            return Err(volume_not_found(id));
        }
        // Cinder turns a refused `volume:get` into "not found" as well.
        self.policy
            .enforce(
                rules::VOLUME_GET,
                caller,
                &Target::project(&volume.project_id),
            )
            .map_err(|_| volume_not_found(id))?;
        Ok(volume)
    }

    pub async fn list_volumes(
        &self,
        caller: &RequestContext,
        mut filters: VolumeFilters,
        all_tenants: bool,
        page: &Page<VolumeSortKey>,
    ) -> Result<Vec<Volume>, DomainError> {
        self.policy
            .enforce(rules::VOLUME_GET_ALL, caller, &Target::caller(caller))?;
        filters.project_id = caller.listing_project(all_tenants, filters.project_id.take());
        if let Some(marker) = page.marker {
            let found = self.store.get_volume(marker.into()).await?;
            let owner = found.as_ref().map(|v| v.project_id.as_str());
            super::check_marker(marker, owner, filters.project_id.as_ref())?;
        }
        Ok(self.store.list_volumes(&filters, page).await?)
    }

    pub async fn count_volumes(
        &self,
        caller: &RequestContext,
        mut filters: VolumeFilters,
        all_tenants: bool,
    ) -> Result<i64, DomainError> {
        filters.project_id = caller.listing_project(all_tenants, filters.project_id.take());
        Ok(self.store.count_volumes(&filters).await?)
    }

    pub async fn summarize_volumes(
        &self,
        caller: &RequestContext,
        mut filters: VolumeFilters,
        all_tenants: bool,
    ) -> Result<VolumeSummary, DomainError> {
        self.policy
            .enforce(rules::VOLUME_GET_ALL, caller, &Target::caller(caller))?;
        filters.project_id = caller.listing_project(all_tenants, filters.project_id.take());
        Ok(self.store.summarize_volumes(&filters).await?)
    }

    /// Creates a volume on a backend that fits its type. Refusals (policy, size, type,
    /// no backend) change nothing; a backend failure leaves the volume in `error` with a
    /// user message saying why. Either way the volume is returned.
    pub async fn create_volume(
        &self,
        caller: &RequestContext,
        request: CreateVolume,
        request_id: Option<String>,
    ) -> Result<Volume, DomainError> {
        self.policy
            .enforce(rules::VOLUME_CREATE, caller, &Target::caller(caller))?;
        if let Some(backup_id) = request.backup_id.clone() {
            let from = self.create_volume_from_backup(caller, request, &backup_id, request_id);
            return from.await;
        }
        let origin = self
            .resolve_origin(
                caller,
                request.snapshot_id.as_deref(),
                request.source_volid.as_deref(),
            )
            .await?;
        let image = match &request.image_ref {
            Some(_) if origin.is_some() => {
                return Err(DomainError::ImageRefused(ONE_SOURCE.to_owned()))
            }
            Some(image_ref) => Some(
                self.resolve_image(request.auth_token.as_deref(), image_ref)
                    .await?,
            ),
            None => None,
        };
        let volume_type = match (&request.volume_type, &origin) {
            (Some(name_or_id), _) if !name_or_id.is_empty() => {
                self.resolve_volume_type(caller, name_or_id).await?
            }
            // From a source, the source's type.
            (_, Some(origin)) => self
                .store
                .get_volume_type(origin.volume.volume_type_id)
                .await?
                .ok_or_else(|| {
                    DomainError::VolumeTypeNotFound(origin.volume.volume_type_id.to_string())
                })?,
            _ => self.default_volume_type(&caller.project_id).await?,
        };
        let group = match request.group_id.as_deref().filter(|g| !g.is_empty()) {
            Some(group_id) => {
                let named = request
                    .volume_type
                    .as_deref()
                    .is_some_and(|t| !t.is_empty());
                if !named && origin.is_none() {
                    return Err(GroupError::InvalidInput(
                        "volume_type must be provided when creating a volume in a group.".into(),
                    )
                    .into());
                }
                Some(
                    self.group_for_new_volume(caller, group_id, &volume_type)
                        .await?,
                )
            }
            None => None,
        };
        super::volume_metadata::metadata_fits(&request.metadata)?;
        let size = match (request.size, &origin) {
            (None, Some(origin)) => origin.size,
            (Some(size), _) if size > 0 => size,
            (other, _) => return Err(DomainError::InvalidSize(other)),
        };
        if let Some(origin) = &origin {
            origin.check_size(size)?;
        }
        if let Some(image) = &image {
            super::image_download::check_image_fits(image, size)?;
        }
        let multiattach = volume_type.is_multiattach();
        let encryption = self.encryption_of_new(&volume_type, multiattach).await?;
        if multiattach {
            self.policy
                .enforce(rules::MULTIATTACH, caller, &Target::caller(caller))?;
        }
        // A volume in a group goes to the group's zone (Cinder's create flow).
        let zone = request
            .availability_zone
            .as_deref()
            .filter(|z| !z.is_empty())
            .or(group.as_ref().map(|g| g.availability_zone.as_str()));
        if let Some(zone) = zone {
            if !self.backends.iter().any(|b| b.availability_zone == zone) {
                return Err(DomainError::InvalidAvailabilityZone(zone.to_owned()));
            }
        }
        let now = self.clock.now();
        let mut new = NewVolume {
            id: VolumeId::generate(),
            user_id: caller.user_id.clone(),
            project_id: caller.project_id.clone(),
            host: None,
            status: VolumeStatus::Error,
            size,
            availability_zone: zone
                .map(str::to_owned)
                .or_else(|| {
                    self.backends
                        .iter()
                        .next()
                        .map(|b| b.availability_zone.clone())
                })
                .unwrap_or_else(|| "nova".to_owned()),
            name: request.name,
            description: request.description,
            volume_type_id: volume_type.id,
            snapshot_id: match origin.as_ref().map(|o| o.source) {
                Some(DataSource::Snapshot(id, _)) => Some(id),
                _ => None,
            },
            source_volid: origin
                .as_ref()
                .filter(|o| !o.is_snapshot())
                .map(|o| o.volume.id),
            multiattach,
            service_uuid: None,
            backend_capacity_gb: None,
            shared_targets: None,
            metadata: request.metadata,
            encryption_key_id: None,
            group_id: group.as_ref().map(|g| g.id),
            bootable: origin.as_ref().is_some_and(|o| o.volume.bootable),
            created_at: now,
        };
        let owner = QuotaOwner {
            project_id: new.project_id.clone(),
            type_name: volume_type.name.clone(),
            defaults: self.settings.quota_defaults.clone(),
        };
        let placement = Placement {
            size_gb: size,
            availability_zone: zone,
            volume_type: &volume_type,
        };
        if let Some(specs) = &encryption {
            let source_key = match (&origin, &image) {
                (Some(origin), _) => origin.volume.encryption_key_id.as_deref(),
                (None, Some(image)) => image.encryption_key_id(),
                (None, None) => None,
            };
            let key = self.new_volume_key(caller, specs, source_key).await?;
            new.encryption_key_id = Some(key);
        }
        let placed = match self
            .record_new(
                &mut new,
                &owner,
                &placement,
                origin.as_ref(),
                group.as_ref(),
            )
            .await
        {
            Ok(placed) => placed,
            Err(err) => {
                let token = caller.auth_token.as_deref();
                self.forget_key(token, new.encryption_key_id.as_deref())
                    .await;
                return Err(err);
            }
        };
        if !placed {
            // No backend could take it: Cinder's scheduler leaves the volume in `error`
            // with a user message saying so.
            let project = new.project_id.clone();
            let why = (
                action::SCHEDULE_ALLOCATE_VOLUME,
                detail::NO_BACKEND_AVAILABLE,
            );
            let message = Message::volume_error(new.id, project, request_id, why, now);
            self.store.insert_message(&message).await?;
            tracing::warn!(volume_id = %new.id, "no backend can take the volume");
            return self
                .store
                .get_volume(new.id)
                .await?
                .ok_or_else(|| volume_not_found(new.id));
        }
        let (id, project) = (new.id, new.project_id.clone());
        if let Some(image) = image {
            // The image's data may take long: the caller gets the volume `creating` and
            // watches it become `downloading`, then `available` (or `error`).
            let service = self.clone();
            let token = request.auth_token;
            crate::origin::spawn(async move {
                service
                    .fill_from_image(id, size, image, token, project, request_id)
                    .await
            });
            return self
                .store
                .get_volume(id)
                .await?
                .ok_or_else(|| volume_not_found(id));
        }
        // The backend work runs to its end even if the client goes away, so the volume
        // never stays `creating`.
        let service = self.clone();
        let source = origin.map(|o| o.source);
        crate::origin::spawn(async move {
            service
                .provision(id, size, source, project, request_id)
                .await
        })
        .await
        .map_err(|e| DomainError::Interrupted {
            what: "volume creation",
            detail: e.to_string(),
        })??;
        self.store
            .get_volume(id)
            .await?
            .ok_or_else(|| volume_not_found(id))
    }

    /// Records a new volume: beside its source's data when it has one (if that backend
    /// passes the scheduler's filters for it), else on the best backend. `false`: no
    /// backend could take it, and it is recorded in `error`.
    async fn record_new(
        &self,
        new: &mut NewVolume,
        owner: &QuotaOwner,
        placement: &Placement<'_>,
        origin: Option<&Origin>,
        group: Option<&Group>,
    ) -> Result<bool, DomainError> {
        if let Some(group) = group {
            return self
                .record_in_group(new, owner, placement, origin, group)
                .await;
        }
        let Some(origin) = origin else {
            return self.record_placed(new, owner, placement).await;
        };
        origin.check_zone(placement.availability_zone)?;
        let backend = self.backend_of(&origin.volume)?;
        let index = self
            .backends
            .iter()
            .position(|b| b.service_uuid == backend.service_uuid);
        let fits = self.candidates(placement, &[]).await?;
        let backend = index.filter(|i| fits.contains(i)).map(|_| backend);
        self.record_on(new, owner, backend).await
    }

    /// Records the volume on the best backend that can take it, trying the next one when
    /// another create took the last space of the first. `false`: no backend can; the
    /// volume is recorded in `error`, on none.
    async fn record_placed(
        &self,
        new: &mut NewVolume,
        owner: &QuotaOwner,
        placement: &Placement<'_>,
    ) -> Result<bool, DomainError> {
        let mut tried = Vec::new();
        loop {
            let best = self.candidates(placement, &tried).await?.first().copied();
            let backend = best.and_then(|i| self.backends.get(i));
            if self.record_on(new, owner, backend).await? || backend.is_none() {
                return Ok(backend.is_some());
            }
            tried.extend(best);
        }
    }

    /// Records the volume on `backend` (`creating`), or in `error` on none. Whether it
    /// was recorded on a backend (`false`: the backend had no room left, or there was
    /// none).
    pub(super) async fn record_on(
        &self,
        new: &mut NewVolume,
        owner: &QuotaOwner,
        backend: Option<&ConfiguredBackend>,
    ) -> Result<bool, DomainError> {
        match backend {
            Some(backend) => {
                let capabilities = backend.driver.capabilities();
                new.status = VolumeStatus::Creating;
                new.host = Some(backend.volume_host());
                new.availability_zone = backend.availability_zone.clone();
                new.service_uuid = Some(backend.service_uuid);
                new.backend_capacity_gb = capabilities.total_capacity_gb;
                new.shared_targets = capabilities.shared_targets;
            }
            None => {
                new.status = VolumeStatus::Error;
                new.host = None;
                new.service_uuid = None;
                new.backend_capacity_gb = None;
                new.shared_targets = None;
            }
        }
        match self.store.insert_volume(new, owner).await? {
            Outcome::Done(()) => Ok(backend.is_some()),
            Outcome::Refused(VolumeCreateRefusal::NoCapacity) => Ok(false),
            Outcome::Refused(VolumeCreateRefusal::OverQuota(over)) => {
                Err(DomainError::OverQuota(over))
            }
            // The source went (or began to go) after it was checked.
            Outcome::Refused(VolumeCreateRefusal::SourceUnavailable)
                if new.snapshot_id.is_some() =>
            {
                Err(DomainError::SourceSnapshotUnavailable)
            }
            Outcome::Refused(VolumeCreateRefusal::SourceUnavailable) => {
                Err(DomainError::SourceVolumeUnavailable)
            }
            Outcome::Refused(VolumeCreateRefusal::EncryptionChanged) => {
                Err(DomainError::EncryptionChangedDuringCreate)
            }
            Outcome::Refused(VolumeCreateRefusal::GroupUnavailable(Some(_))) => {
                Err(super::group_members::unavailable_for_volumes())
            }
            Outcome::Refused(VolumeCreateRefusal::GroupUnavailable(None)) => {
                let id = new.group_id.map(|g| g.to_string()).unwrap_or_default();
                Err(super::group_members::group_not_found(&id))
            }
            Outcome::Gone => Err(volume_not_found(new.id)),
        }
    }

    async fn provision(
        &self,
        id: VolumeId,
        size: i64,
        source: Option<DataSource>,
        project_id: String,
        request_id: Option<String>,
    ) -> Result<(), DomainError> {
        let volume = self
            .store
            .get_volume(id)
            .await?
            .ok_or_else(|| volume_not_found(id))?;
        let backend = self.backend_of(&volume)?;
        let result = match source {
            Some(source) => {
                backend
                    .driver
                    .create_volume_from(id, source, size as u64)
                    .await
            }
            None => backend.driver.create_volume(id, size as u64).await,
        };
        let now = self.clock.now();
        match result {
            Ok(()) => {
                let (creating, available) = (VolumeStatus::Creating, VolumeStatus::Available);
                self.store
                    .transition_volume(id, creating, available, now)
                    .await?;
            }
            Err(err) => {
                tracing::warn!(volume_id = %id, error = %err, "backend could not create the volume");
                let failed = detail::DRIVER_FAILED_CREATE;
                let message = creation_failed(id, project_id, request_id, failed, now);
                self.store.fail_volume_creation(id, &message).await?;
            }
        }
        Ok(())
    }

    pub(super) fn backend_of(&self, volume: &Volume) -> Result<&ConfiguredBackend, DomainError> {
        self.backend_at(volume.host.as_deref(), volume.id)
    }

    /// The configured backend behind a volume's `host`.
    pub(super) fn backend_at(
        &self,
        host: Option<&str>,
        volume: VolumeId,
    ) -> Result<&ConfiguredBackend, DomainError> {
        let host = host.unwrap_or_default();
        self.backends
            .for_host(host)
            .ok_or_else(|| DomainError::BackendNotConfigured {
                host: host.to_owned(),
                volume,
            })
    }

    /// After a restart: volumes this process's backends were creating, downloading,
    /// uploading or deleting when the service stopped (unchanged for longer than `grace`,
    /// so that the work of other processes still running is left alone) are finished as
    /// Cinder's volume service does at start-up: a create becomes `error` with a user
    /// message (a half-written image removed), an upload gives the volume back, a delete
    /// is carried out.
    /// Returns how many volumes were handled.
    pub async fn recover_interrupted_work(
        &self,
        grace: chrono::Duration,
    ) -> Result<usize, DomainError> {
        let handled = self.recover_interrupted_volumes(grace, &|_| true).await?;
        Ok(handled
            + self
                .end_interrupted_migrations(self.clock.now() - grace)
                .await?)
    }

    /// The volume part of `recover_interrupted_work`, for the volumes `which` picks
    /// (`workers/cleanup` narrows it to one backend, the unplaced ones, or one volume).
    pub(super) async fn recover_interrupted_volumes(
        &self,
        grace: chrono::Duration,
        which: &(dyn Fn(&Volume) -> bool + Send + Sync),
    ) -> Result<usize, DomainError> {
        let before = self.clock.now() - grace;
        let stuck = self.store.volumes_stuck_in(&INTERRUPTIBLE, before).await?;
        let mut handled = 0;
        for volume in stuck.into_iter().filter(|v| which(v)) {
            if volume.host.is_some() && self.backend_of(&volume).is_err() {
                continue; // another host's volume (a volume on no host is anyone's)
            }
            let now = self.clock.now();
            if volume.status == VolumeStatus::Deleting {
                tracing::warn!(volume_id = %volume.id, "volume deletion was interrupted; finishing it");
                self.remove_from_backend(volume, None).await?;
                handled += 1;
                continue;
            }
            if volume.status == VolumeStatus::Uploading {
                handled += usize::from(self.upload_interrupted(&volume).await?);
                continue;
            }
            if volume.status == VolumeStatus::Downloading {
                // Half an image is no volume: its data goes before it becomes `error`.
                let backend = self.backend_of(&volume)?;
                if let Err(err) = backend.driver.delete_volume(volume.storage_id()).await {
                    tracing::warn!(volume_id = %volume.id, error = %err, "could not remove a half-written volume");
                }
            }
            let project = volume.project_id.clone();
            let message = creation_failed(volume.id, project, None, detail::UNKNOWN_ERROR, now);
            if self.store.fail_volume_creation(volume.id, &message).await? == Outcome::Done(()) {
                tracing::warn!(volume_id = %volume.id, "volume creation was interrupted; volume set to error");
                handled += 1;
            }
        }
        Ok(handled)
    }
}

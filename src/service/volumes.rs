//! Volume use cases: create and delete run synchronously through the volume's backend.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::Service;
use crate::backend::ConfiguredBackend;
use crate::domain::legacy_attach::{LegacyAction, LegacyOutcome};
use crate::domain::message::{
    Message, ACTION_CREATE_VOLUME_FROM_BACKEND, EVENT_CREATE_VOLUME_FROM_BACKEND,
};
use crate::domain::paging::Page;
use crate::domain::volume::{
    delete_refusal, may_delete, ExtendStart, NewVolume, Volume, VolumeFilters, VolumeSortKey,
    VolumeStatus, VolumeSummary, RETYPE_REFUSAL,
};
use crate::domain::{DomainError, RequestContext};
use crate::policy::{rules, Target};
use crate::store::{Retype, StatusReset};

pub fn volume_not_found(id: impl std::fmt::Display) -> DomainError {
    DomainError::NotFound(format!("Volume {id} could not be found."))
}

fn multiattach_retype_refusal(status: VolumeStatus) -> DomainError {
    DomainError::InvalidInput(format!(
        "Invalid volume_type passed, retypes affecting multiattach are only allowed on available \
         volumes, the specified volume however currently has a status of: {status}."
    ))
}

/// A volume create as the API received it.
#[derive(Debug, Clone, Default)]
pub struct CreateVolume {
    pub size: Option<i64>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub volume_type: Option<String>,
    pub availability_zone: Option<String>,
    pub metadata: BTreeMap<String, String>,
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
}

impl VolumeViewRights {
    /// Cinder adds the `os-vol-*` extension attributes to show and list answers only,
    /// not to what create and update return.
    pub fn without_extension_attributes(self) -> Self {
        VolumeViewRights {
            host_attribute: false,
            tenant_attribute: false,
            migration_attribute: false,
            ..self
        }
    }
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
        id: Uuid,
        rule: &'static str,
    ) -> Result<Volume, DomainError> {
        let volume = self.get_volume_brief(caller, id).await?;
        self.policy
            .enforce(rule, caller, &Target::project(&volume.project_id))?;
        Ok(volume)
    }

    /// A volume the caller may see: other projects' volumes do not exist for non-admins.
    pub async fn get_volume(
        &self,
        caller: &RequestContext,
        id: Uuid,
    ) -> Result<Volume, DomainError> {
        let volume = self.store.get_volume(id).await?;
        self.visible(caller, id, volume)
    }

    /// Like `get_volume`, without user metadata and attachments (the attach paths).
    pub async fn get_volume_brief(
        &self,
        caller: &RequestContext,
        id: Uuid,
    ) -> Result<Volume, DomainError> {
        let volume = self.store.get_volume_brief(id).await?;
        self.visible(caller, id, volume)
    }

    fn visible(
        &self,
        caller: &RequestContext,
        id: Uuid,
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
            let visible = self.store.get_volume(marker).await?.filter(|v| {
                filters
                    .project_id
                    .as_ref()
                    .is_none_or(|p| *p == v.project_id)
            });
            if visible.is_none() {
                return Err(DomainError::NotFound(format!(
                    "Marker {marker} could not be found."
                )));
            }
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
        let volume_type = match &request.volume_type {
            Some(name_or_id) if !name_or_id.is_empty() => {
                self.resolve_volume_type(caller, name_or_id).await?
            }
            _ => self.default_volume_type().await?,
        };
        let size = match request.size {
            Some(size) if size > 0 => size,
            other => {
                let shown = other
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "None".to_owned());
                return Err(DomainError::InvalidInput(format!(
                    "Volume size '{shown}' must be an integer and greater than 0"
                )));
            }
        };
        let multiattach = volume_type.is_multiattach();
        if multiattach {
            self.policy
                .enforce(rules::MULTIATTACH, caller, &Target::caller(caller))?;
        }
        let zone = request
            .availability_zone
            .as_deref()
            .filter(|z| !z.is_empty());
        if let Some(zone) = zone {
            if !self.backends.iter().any(|b| b.availability_zone == zone) {
                return Err(DomainError::InvalidInput(format!(
                    "Availability zone '{zone}' is invalid."
                )));
            }
        }
        let backend = self
            .backends
            .schedule(multiattach, zone)
            .map_err(DomainError::InvalidRequest)?;
        let capabilities = backend.driver.capabilities();
        let now = self.clock.now();
        let new = NewVolume {
            id: Uuid::new_v4(),
            user_id: caller.user_id.clone(),
            project_id: caller.project_id.clone(),
            host: backend.volume_host(),
            size,
            availability_zone: backend.availability_zone.clone(),
            name: request.name,
            description: request.description,
            volume_type_id: volume_type.id,
            multiattach,
            service_uuid: backend.service_uuid,
            shared_targets: capabilities.shared_targets,
            metadata: request.metadata,
            created_at: now,
        };
        self.store.insert_volume(&new).await?;
        // The backend work runs to its end even if the client goes away, so the volume
        // never stays `creating`.
        let service = self.clone();
        let (id, project) = (new.id, new.project_id.clone());
        let outcome =
            tokio::spawn(async move { service.provision(id, size, project, request_id).await })
                .await
                .map_err(|e| {
                    DomainError::Failed(format!("volume creation was interrupted: {e}"))
                })?;
        outcome?;
        self.store
            .get_volume(id)
            .await?
            .ok_or_else(|| volume_not_found(id))
    }

    async fn provision(
        &self,
        id: Uuid,
        size: i64,
        project_id: String,
        request_id: Option<String>,
    ) -> Result<(), DomainError> {
        let volume = self
            .store
            .get_volume(id)
            .await?
            .ok_or_else(|| volume_not_found(id))?;
        let backend = self.backend_of(&volume)?;
        let result = backend.driver.create_volume(id, size as u64).await;
        let now = self.clock.now();
        match result {
            Ok(()) => {
                self.store
                    .transition_volume(id, VolumeStatus::Creating, VolumeStatus::Available, now)
                    .await?;
            }
            Err(err) => {
                tracing::warn!(volume_id = %id, error = %err, "backend could not create the volume");
                self.store
                    .transition_volume(id, VolumeStatus::Creating, VolumeStatus::Error, now)
                    .await?;
                self.store
                    .insert_message(&Message {
                        id: Uuid::new_v4(),
                        project_id,
                        request_id,
                        resource_type: "VOLUME".to_owned(),
                        resource_uuid: Some(id.to_string()),
                        event_id: EVENT_CREATE_VOLUME_FROM_BACKEND.to_owned(),
                        message_level: "ERROR".to_owned(),
                        user_message: format!("{ACTION_CREATE_VOLUME_FROM_BACKEND}: {err}"),
                        created_at: now,
                        expires_at: Some(now + chrono::Duration::days(30)),
                    })
                    .await?;
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
        volume_id: Uuid,
    ) -> Result<&ConfiguredBackend, DomainError> {
        let host = host.unwrap_or_default();
        self.backends.for_host(host).ok_or_else(|| {
            DomainError::Failed(format!(
                "The backend {host} of volume {volume_id} is not configured here."
            ))
        })
    }

    /// Deletes a volume and its data. With `force` (admins) any status but attached.
    pub async fn delete_volume(
        &self,
        caller: &RequestContext,
        id: Uuid,
        force: bool,
    ) -> Result<(), DomainError> {
        let volume = self.get_volume(caller, id).await?;
        let target = Target::project(&volume.project_id);
        if force {
            self.policy
                .enforce(rules::VOLUME_FORCE_DELETE, caller, &target)?;
        }
        self.policy.enforce(rules::VOLUME_DELETE, caller, &target)?;
        self.delete_checked(volume, force).await
    }

    /// `os-force_delete`: like `DELETE ?force=true`, under the admin-action rule.
    pub async fn force_delete_volume(
        &self,
        caller: &RequestContext,
        id: Uuid,
    ) -> Result<(), DomainError> {
        let volume = self.get_volume(caller, id).await?;
        self.policy.enforce(
            rules::ADMIN_FORCE_DELETE,
            caller,
            &Target::project(&volume.project_id),
        )?;
        self.delete_checked(volume, true).await
    }

    async fn delete_checked(&self, volume: Volume, force: bool) -> Result<(), DomainError> {
        let id = volume.id;
        if !may_delete(&volume, force)
            || !self
                .store
                .begin_volume_delete(id, force, self.clock.now())
                .await?
        {
            return Err(DomainError::InvalidVolume(delete_refusal(force)));
        }
        let service = self.clone();
        tokio::spawn(async move { service.remove_from_backend(volume).await })
            .await
            .map_err(|e| DomainError::Failed(format!("volume deletion was interrupted: {e}")))?
    }

    async fn remove_from_backend(&self, volume: Volume) -> Result<(), DomainError> {
        let result = match self.backend_of(&volume) {
            Ok(backend) => backend
                .driver
                .delete_volume(volume.id)
                .await
                .map_err(|e| e.to_string()),
            Err(err) => Err(err.to_string()),
        };
        let now = self.clock.now();
        match result {
            Ok(()) => Ok(self.store.finish_volume_delete(volume.id, now).await?),
            Err(reason) => {
                tracing::warn!(volume_id = %volume.id, error = %reason, "backend could not delete the volume");
                self.store
                    .transition_volume(
                        volume.id,
                        VolumeStatus::Deleting,
                        VolumeStatus::ErrorDeleting,
                        now,
                    )
                    .await?;
                Ok(())
            }
        }
    }

    /// After a restart: volumes this process's backends were creating or deleting when
    /// the service stopped (unchanged for longer than `grace`, so that the work of other
    /// processes still running is left alone) are finished as Cinder's volume service does
    /// at start-up: a create becomes `error` with a user message, a delete is carried out.
    /// Returns how many volumes were handled.
    pub async fn recover_interrupted_work(
        &self,
        grace: chrono::Duration,
    ) -> Result<usize, DomainError> {
        let before = self.clock.now() - grace;
        let stuck = self
            .store
            .volumes_stuck_in(&[VolumeStatus::Creating, VolumeStatus::Deleting], before)
            .await?;
        let mut handled = 0;
        for volume in stuck {
            if self.backend_of(&volume).is_err() {
                continue; // another host's volume
            }
            let now = self.clock.now();
            match volume.status {
                VolumeStatus::Creating => {
                    if self
                        .store
                        .transition_volume(
                            volume.id,
                            VolumeStatus::Creating,
                            VolumeStatus::Error,
                            now,
                        )
                        .await?
                    {
                        tracing::warn!(volume_id = %volume.id, "volume creation was interrupted; volume set to error");
                        self.store
                            .insert_message(&Message {
                                id: Uuid::new_v4(),
                                project_id: volume.project_id.clone(),
                                request_id: None,
                                resource_type: "VOLUME".to_owned(),
                                resource_uuid: Some(volume.id.to_string()),
                                event_id: EVENT_CREATE_VOLUME_FROM_BACKEND.to_owned(),
                                message_level: "ERROR".to_owned(),
                                user_message: format!(
                                    "{ACTION_CREATE_VOLUME_FROM_BACKEND}: the service stopped while the volume was being created."
                                ),
                                created_at: now,
                                expires_at: Some(now + chrono::Duration::days(30)),
                            })
                            .await?;
                        handled += 1;
                    }
                }
                _ => {
                    tracing::warn!(volume_id = %volume.id, "volume deletion was interrupted; finishing it");
                    self.remove_from_backend(volume).await?;
                    handled += 1;
                }
            }
        }
        Ok(handled)
    }

    /// `os-extend`: grows an `available` volume through its backend. A backend failure
    /// leaves the volume `error_extending`, as in Cinder.
    pub async fn extend_volume(
        &self,
        caller: &RequestContext,
        id: Uuid,
        new_size: i64,
    ) -> Result<(), DomainError> {
        let volume = self.volume_under_rule(caller, id, rules::EXTEND).await?;
        match self
            .store
            .begin_extend(id, new_size, self.clock.now())
            .await?
        {
            None => return Err(volume_not_found(id)),
            Some(ExtendStart::TooSmall { current }) => {
                return Err(DomainError::InvalidInput(format!(
                    "New size for extend must be greater than current size. \
                     (current: {current}, extended: {new_size})."
                )))
            }
            Some(ExtendStart::WrongStatus(status)) => {
                return Err(DomainError::InvalidVolume(format!(
                    "Volume {id} status must be 'available' to extend, currently {status}."
                )))
            }
            Some(ExtendStart::Started) => {}
        }
        let service = self.clone();
        tokio::spawn(async move { service.extend_on_backend(volume, new_size).await })
            .await
            .map_err(|e| DomainError::Failed(format!("volume extend was interrupted: {e}")))?
    }

    async fn extend_on_backend(&self, volume: Volume, new_size: i64) -> Result<(), DomainError> {
        let result = match self.backend_of(&volume) {
            Ok(backend) => backend
                .driver
                .extend_volume(volume.id, new_size as u64)
                .await
                .map_err(|e| e.to_string()),
            Err(err) => Err(err.to_string()),
        };
        let now = self.clock.now();
        match result {
            Ok(()) => {
                self.store.finish_extend(volume.id, new_size, now).await?;
            }
            Err(reason) => {
                tracing::warn!(volume_id = %volume.id, error = %reason, "backend could not extend the volume");
                self.store
                    .transition_volume(
                        volume.id,
                        VolumeStatus::Extending,
                        VolumeStatus::ErrorExtending,
                        now,
                    )
                    .await?;
            }
        }
        Ok(())
    }

    /// `os-reserve`, `os-unreserve`, `os-begin_detaching`, `os-roll_detaching`.
    pub async fn legacy_attach(
        &self,
        caller: &RequestContext,
        id: Uuid,
        action: LegacyAction,
    ) -> Result<(), DomainError> {
        let rule = match action {
            LegacyAction::Reserve => rules::LEGACY_RESERVE,
            LegacyAction::Unreserve => rules::LEGACY_UNRESERVE,
            LegacyAction::BeginDetaching => rules::LEGACY_BEGIN_DETACHING,
            LegacyAction::RollDetaching => rules::LEGACY_ROLL_DETACHING,
        };
        self.volume_under_rule(caller, id, rule).await?;
        match self
            .store
            .legacy_attach_action(id, action, self.clock.now())
            .await?
        {
            None => Err(volume_not_found(id)),
            Some(LegacyOutcome::Refused(reason)) => Err(DomainError::InvalidVolume(reason)),
            Some(LegacyOutcome::Set(_) | LegacyOutcome::Unchanged) => Ok(()),
        }
    }

    pub async fn set_bootable(
        &self,
        caller: &RequestContext,
        id: Uuid,
        bootable: bool,
    ) -> Result<(), DomainError> {
        let volume = self.get_volume(caller, id).await?;
        self.policy.enforce(
            rules::VOLUME_UPDATE,
            caller,
            &Target::project(&volume.project_id),
        )?;
        if !self
            .store
            .set_bootable(id, bootable, self.clock.now())
            .await?
        {
            return Err(volume_not_found(id));
        }
        Ok(())
    }

    pub async fn update_readonly_flag(
        &self,
        caller: &RequestContext,
        id: Uuid,
        readonly: bool,
    ) -> Result<(), DomainError> {
        let volume = self.get_volume(caller, id).await?;
        self.policy.enforce(
            rules::UPDATE_READONLY,
            caller,
            &Target::project(&volume.project_id),
        )?;
        if !self
            .store
            .set_readonly(id, readonly, self.clock.now())
            .await?
        {
            let current = self
                .store
                .get_volume(id)
                .await?
                .ok_or_else(|| volume_not_found(id))?;
            return Err(DomainError::InvalidVolume(format!(
                "Volume {id} status must be available to update readonly flag, but current status is: {}.",
                current.status
            )));
        }
        Ok(())
    }

    pub async fn reset_status(
        &self,
        caller: &RequestContext,
        id: Uuid,
        reset: StatusReset,
    ) -> Result<(), DomainError> {
        let volume = self.get_volume(caller, id).await?;
        self.policy.enforce(
            rules::RESET_STATUS,
            caller,
            &Target::project(&volume.project_id),
        )?;
        if reset.status == Some(VolumeStatus::Deleting) {
            return Err(DomainError::InvalidRequest(
                "Cannot reset-state to deleting".to_owned(),
            ));
        }
        if reset.status == Some(VolumeStatus::InUse) && volume.attachments.is_empty() {
            return Err(DomainError::InvalidRequest(
                "Cannot reset-state to in-use because volume does not have any attachments."
                    .to_owned(),
            ));
        }
        if reset.attach_status == Some(crate::domain::attachment::AttachStatus::Detached) {
            // Cinder detaches every attachment when told the volume is detached.
            for attachment in &volume.attachments {
                self.store
                    .delete_attachment(attachment.id, self.clock.now())
                    .await?;
            }
        }
        if !self
            .store
            .reset_status(id, &reset, self.clock.now())
            .await?
        {
            return Err(volume_not_found(id));
        }
        Ok(())
    }

    /// Changes a volume's type. A change of multiattach-ness needs an `available`
    /// volume and, towards multiattach, the `volume:multiattach` rule.
    pub async fn retype_volume(
        &self,
        caller: &RequestContext,
        id: Uuid,
        new_type: &str,
    ) -> Result<(), DomainError> {
        let volume = self.get_volume(caller, id).await?;
        let target = Target::project(&volume.project_id);
        self.policy.enforce(rules::RETYPE, caller, &target)?;
        let new_type = self.resolve_volume_type(caller, new_type).await?;
        let wanted = new_type.is_multiattach();
        if wanted != volume.multiattach {
            if volume.status != VolumeStatus::Available {
                return Err(multiattach_retype_refusal(volume.status));
            }
            if wanted {
                self.policy.enforce(rules::MULTIATTACH, caller, &target)?;
            }
        }
        let retype = Retype {
            volume_id: id,
            new_type_id: new_type.id,
            expected_multiattach: volume.multiattach,
            new_multiattach: wanted,
        };
        if self.store.retype_volume(&retype, self.clock.now()).await? {
            return Ok(());
        }
        // The swap failed: say why, from what the volume looks like now.
        let now = self
            .store
            .get_volume(id)
            .await?
            .ok_or_else(|| volume_not_found(id))?;
        if wanted != now.multiattach && now.status != VolumeStatus::Available {
            return Err(multiattach_retype_refusal(now.status));
        }
        Err(DomainError::InvalidVolume(RETYPE_REFUSAL.to_owned()))
    }
}

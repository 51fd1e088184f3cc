//! Changes to an existing volume: delete, extend, the legacy attach actions, flags,
//! `os-reset_status` and retype. The rules are decided in the store's transaction, under
//! the volume's lock; backend work happens outside it.

use super::volume_not_found;
use super::Service;
use crate::backend::{BackendError, ConfiguredBackend};
use crate::domain::ids::{QosSpecsId, VolumeId};
use crate::domain::legacy_attach::LegacyAction;
use crate::domain::qos::Consumer;
use crate::domain::quota::QuotaOwner;
use crate::domain::refusal::{
    ExtendRefusal, LegacyActionRefusal, RetypeRefusal, VolumeDeleteRefusal, VolumeStatusRefusal,
};
use crate::domain::volume::{Retype, StatusReset, Volume, VolumeStatus};
use crate::domain::volume_type::VolumeType;
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::policy::{rules, Target};
use crate::store::MigratingRetype;

impl Service {
    /// Deletes a volume and its data. With `force` (admins) any status but attached; with
    /// `cascade` its snapshots first.
    pub async fn delete_volume(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        force: bool,
        cascade: bool,
    ) -> Result<(), DomainError> {
        let volume = self.get_volume(caller, id).await?;
        let target = Target::project(&volume.project_id);
        if force {
            self.policy
                .enforce(rules::VOLUME_FORCE_DELETE, caller, &target)?;
        }
        self.policy.enforce(rules::VOLUME_DELETE, caller, &target)?;
        let token = caller.auth_token.as_deref();
        self.delete_checked(volume, force, cascade, token).await
    }

    /// `os-force_delete`: like `DELETE ?force=true`, under the admin-action rule.
    pub async fn force_delete_volume(
        &self,
        caller: &RequestContext,
        id: VolumeId,
    ) -> Result<(), DomainError> {
        let volume = self
            .volume_with_rule(caller, id, rules::ADMIN_FORCE_DELETE)
            .await?;
        let token = caller.auth_token.as_deref();
        self.delete_checked(volume, true, false, token).await
    }

    async fn delete_checked(
        &self,
        volume: Volume,
        force: bool,
        cascade: bool,
        token: Option<&str>,
    ) -> Result<(), DomainError> {
        let snapshots = self.begin_delete(&volume, force, cascade).await?;
        let service = self.clone();
        let token = token.map(str::to_owned);
        crate::origin::spawn(async move {
            // Snapshots first (`cascade`): the volume goes only once they are gone.
            for snapshot in snapshots {
                if !service.remove_snapshot_data(&volume, snapshot).await? {
                    let failed = (VolumeStatus::Deleting, VolumeStatus::ErrorDeleting);
                    let why = Err("a snapshot could not be deleted".to_owned());
                    service.settle(volume.id, why, failed, "delete").await?;
                    return Ok(());
                }
            }
            service.remove_from_backend(volume, token.as_deref()).await
        })
        .await
        .map_err(|e| DomainError::Interrupted {
            what: "volume deletion",
            detail: e.to_string(),
        })?
    }

    /// A volume becomes `deleting` if Cinder's rules let it go (and, with `cascade`, its
    /// snapshots too); the snapshots to remove first.
    pub(super) async fn begin_delete(
        &self,
        volume: &Volume,
        force: bool,
        cascade: bool,
    ) -> Result<Vec<crate::domain::ids::SnapshotId>, DomainError> {
        let id = volume.id;
        self.ensure_not_frozen(volume).await?;
        let now = self.clock.now();
        match self
            .store
            .begin_volume_delete(id, force, cascade, now)
            .await?
        {
            Outcome::Done(snapshots) => Ok(snapshots),
            Outcome::Gone => Err(volume_not_found(id)),
            Outcome::Refused(VolumeDeleteRefusal::SourceOfCreating(creating)) => {
                Err(DomainError::SourceOfCreatingVolume {
                    snapshot: None,
                    volume: id,
                    creating,
                })
            }
            Outcome::Refused(VolumeDeleteRefusal::Undeletable) => {
                Err(DomainError::DeleteRefused { force })
            }
        }
    }

    /// Removes a `deleting` volume's data, then its key (Cinder deletes the key as the
    /// delete starts; here a volume kept for its clones keeps its key too), then its
    /// record. `token`: the caller's, for the key manager (else the service's own).
    pub(super) async fn remove_from_backend(
        &self,
        volume: Volume,
        token: Option<&str>,
    ) -> Result<(), DomainError> {
        let result = match self.backend_of(&volume) {
            // A volume no backend took has no storage: only its record goes, as Cinder's
            // "volume has no host" delete.
            _ if volume.host.is_none() => Ok(()),
            Ok(backend) => match backend.driver.delete_volume(volume.storage_id()).await {
                // Still needed on the backend (clones of it exist): nothing was removed,
                // and the volume is `available` again, as Cinder's manager leaves it.
                Err(BackendError::Busy(why)) => {
                    tracing::warn!(volume_id = %volume.id, error = %why, "the volume is busy; not deleted");
                    let (from, to) = (VolumeStatus::Deleting, VolumeStatus::Available);
                    self.store
                        .transition_volume(volume.id, from, to, self.clock.now())
                        .await?;
                    return Ok(());
                }
                other => other.map_err(|e| e.to_string()),
            },
            Err(err) => Err(err.to_string()),
        };
        let result = match (result, &volume.encryption_key_id) {
            (Ok(()), Some(key)) => {
                let deleted = self.settings.key_manager.delete_key(token, key).await;
                deleted.map_err(|e| format!("Unable to delete encryption key for volume: {e}"))
            }
            (other, _) => other,
        };
        let failed = (VolumeStatus::Deleting, VolumeStatus::ErrorDeleting);
        if self.settle(volume.id, result, failed, "delete").await? {
            // Gone already is fine: a concurrent delete finished first.
            self.store
                .finish_volume_delete(volume.id, self.clock.now())
                .await?;
        }
        Ok(())
    }

    /// How backend work on a volume ended: on failure the reason is logged and the
    /// volume moves from its busy status to its error status (`failed`), as in Cinder.
    /// Whether the work succeeded.
    pub(super) async fn settle(
        &self,
        volume: VolumeId,
        result: Result<(), String>,
        failed: (VolumeStatus, VolumeStatus),
        what: &'static str,
    ) -> Result<bool, DomainError> {
        let Err(reason) = result else {
            return Ok(true);
        };
        tracing::warn!(volume_id = %volume, error = %reason, "backend could not {what} the volume");
        let (from, to) = failed;
        self.store
            .transition_volume(volume, from, to, self.clock.now())
            .await?;
        Ok(false)
    }

    /// `os-extend`: grows an `available` volume through its backend, or an `in-use` one
    /// when the request may (3.42+) under `volume:extend_attached_volume`; every
    /// attachment stays, and the volume returns to `in-use`. A backend failure leaves the
    /// volume `error_extending`, as in Cinder.
    pub async fn extend_volume(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        new_size: i64,
        attached_allowed: bool,
    ) -> Result<(), DomainError> {
        let seen = self.get_volume_brief(caller, id).await?;
        let attached = attached_allowed && seen.status == VolumeStatus::InUse;
        let rule = if attached {
            rules::EXTEND_ATTACHED
        } else {
            rules::EXTEND
        };
        let volume = self.volume_under_rule(caller, id, rule).await?;
        let owner = QuotaOwner {
            project_id: volume.project_id.clone(),
            type_name: volume.volume_type_name.clone().unwrap_or_default(),
            defaults: self.settings.quota_defaults.clone(),
        };
        match self
            .store
            .begin_extend(id, new_size, attached, &owner, self.clock.now())
            .await?
        {
            Outcome::Refused(ExtendRefusal::OverQuota(over)) => {
                return Err(DomainError::OverQuota(over))
            }
            Outcome::Done(()) => {}
            Outcome::Gone => return Err(volume_not_found(id)),
            Outcome::Refused(ExtendRefusal::NotLarger { current }) => {
                return Err(DomainError::ExtendNotLarger {
                    current,
                    requested: new_size,
                })
            }
            Outcome::Refused(ExtendRefusal::Status(status)) => {
                return Err(DomainError::ExtendRefused {
                    volume: id,
                    status,
                    attached,
                })
            }
        }
        let service = self.clone();
        crate::origin::spawn(async move { service.extend_on_backend(volume, new_size).await })
            .await
            .map_err(|e| DomainError::Interrupted {
                what: "volume extend",
                detail: e.to_string(),
            })?
    }

    /// `os-extend_volume_completion` (3.71, admins): Cinder's answer to a driver that left
    /// an extend for Nova to finish. No backend here does: a volume being extended has
    /// nothing stored for the completion, which Cinder refuses as malformed.
    pub async fn complete_volume_extend(
        &self,
        caller: &RequestContext,
        id: VolumeId,
    ) -> Result<(), DomainError> {
        let volume = self
            .volume_under_rule(caller, id, rules::EXTEND_COMPLETE)
            .await?;
        Err(DomainError::ExtendCompletionRefused {
            extending: volume.status == VolumeStatus::Extending,
        })
    }

    async fn extend_on_backend(&self, volume: Volume, new_size: i64) -> Result<(), DomainError> {
        let result = match self.backend_of(&volume) {
            Ok(backend) => backend
                .driver
                .extend_volume(volume.storage_id(), new_size as u64)
                .await
                .map_err(|e| e.to_string()),
            Err(err) => Err(err.to_string()),
        };
        let failed = (VolumeStatus::Extending, VolumeStatus::ErrorExtending);
        if self.settle(volume.id, result, failed, "extend").await? {
            self.store
                .finish_extend(
                    volume.id,
                    new_size,
                    self.nova_owed(&volume),
                    self.clock.now(),
                )
                .await?;
        }
        Ok(())
    }

    /// `os-reserve`, `os-unreserve`, `os-begin_detaching`, `os-roll_detaching`.
    pub async fn legacy_attach(
        &self,
        caller: &RequestContext,
        id: VolumeId,
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
            Outcome::Done(()) => Ok(()),
            Outcome::Gone => Err(volume_not_found(id)),
            Outcome::Refused(LegacyActionRefusal::Reserve {
                status,
                multiattach,
            }) => Err(DomainError::LegacyReserveRefused {
                status,
                multiattach,
            }),
            Outcome::Refused(LegacyActionRefusal::NotAttached) => Err(DomainError::NotAttached),
        }
    }

    pub async fn set_bootable(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        bootable: bool,
    ) -> Result<(), DomainError> {
        self.volume_with_rule(caller, id, rules::VOLUME_UPDATE)
            .await?;
        self.store
            .set_bootable(id, bootable, self.clock.now())
            .await?
            .found()
            .ok_or_else(|| volume_not_found(id))
    }

    pub async fn update_readonly_flag(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        readonly: bool,
    ) -> Result<(), DomainError> {
        self.volume_with_rule(caller, id, rules::UPDATE_READONLY)
            .await?;
        match self
            .store
            .set_readonly(id, readonly, self.clock.now())
            .await?
        {
            Outcome::Done(()) => Ok(()),
            Outcome::Gone => Err(volume_not_found(id)),
            Outcome::Refused(VolumeStatusRefusal(status)) => {
                Err(DomainError::ReadonlyRefused { volume: id, status })
            }
        }
    }

    /// `os-reset_status`. With `attach_status = detached` every attachment is detached in
    /// the same transaction, and the backend's exports for them are ended.
    pub async fn reset_status(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        reset: StatusReset,
    ) -> Result<(), DomainError> {
        let volume = self
            .volume_with_rule(caller, id, rules::RESET_STATUS)
            .await?;
        if reset.status == Some(VolumeStatus::Deleting) {
            return Err(DomainError::ResetToDeleting);
        }
        if reset.status == Some(VolumeStatus::InUse) && volume.attachments.is_empty() {
            return Err(DomainError::ResetToInUseWithoutAttachments);
        }
        // Recorded first, then every removed attachment's export withdrawn, in the
        // volume's access turn (see `delete_attachment`).
        let access = self
            .access_turn(volume.storage_id(), volume.host.as_deref())
            .await;
        let detached = self
            .store
            .reset_status(id, &reset, self.clock.now())
            .await?
            .found()
            .ok_or_else(|| volume_not_found(id))?;
        self.withdraw_all(volume.storage_id(), volume.host.as_deref(), &detached)
            .await;
        drop(access);
        Ok(())
    }

    /// Cinder's rule: a volume that is not `available` keeps its front-end QoS through a
    /// retype (the host applies those specs and cannot be told of new ones), so neither the
    /// old nor the new type may have specs other than `back-end` when they differ.
    async fn front_end_qos_stays(
        &self,
        volume: &Volume,
        new_qos: Option<QosSpecsId>,
    ) -> Result<(), DomainError> {
        let old_qos = volume.volume_type_qos_specs_id;
        if volume.status == VolumeStatus::Available || old_qos == new_qos {
            return Ok(());
        }
        for id in [old_qos, new_qos].into_iter().flatten() {
            let specs = self.store.get_qos_specs(id).await?;
            if specs.is_some_and(|s| s.consumer != Consumer::BackEnd) {
                return Err(DomainError::RetypeChangesFrontEndQos(volume.id));
            }
        }
        Ok(())
    }

    /// Changes a volume's type. A change of multiattach-ness needs an `available`
    /// volume and, towards multiattach, the `volume:multiattach` rule. A new type the
    /// volume's backend does not suit moves the volume to a backend that does, with
    /// `migration_policy: on-demand` (Cinder's `never`, the default, refuses).
    pub async fn retype_volume(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        new_type: &str,
        migrate: bool,
    ) -> Result<(), DomainError> {
        let volume = self.get_volume(caller, id).await?;
        let target = Target::project(&volume.project_id);
        self.policy.enforce(rules::RETYPE, caller, &target)?;
        let new_type = self.resolve_volume_type(caller, new_type).await?;
        let wanted = new_type.is_multiattach();
        if wanted != volume.multiattach {
            if volume.status != VolumeStatus::Available {
                return Err(DomainError::MultiattachRetypeRefused(volume.status));
            }
            if wanted {
                self.policy.enforce(rules::MULTIATTACH, caller, &target)?;
            }
        }
        self.front_end_qos_stays(&volume, new_type.qos_specs_id)
            .await?;
        self.encryption_stays(&volume, &new_type, wanted).await?;
        let retype = Retype {
            volume_id: id,
            new_type_id: new_type.id,
            expected_multiattach: volume.multiattach,
            new_multiattach: wanted,
            new_single_writer: new_type.is_single_writer(),
        };
        // The new type's own quotas take the volume, as Cinder's retype reserves them.
        let owner = QuotaOwner {
            project_id: volume.project_id.clone(),
            type_name: new_type.name.clone(),
            defaults: self.settings.quota_defaults.clone(),
        };
        if volume.host.is_some() && !self.backend_suits(&volume, &new_type).await? {
            if !migrate {
                return Err(DomainError::RetypeNeedsMigration);
            }
            let target = self.backend_for_retype(&volume, &new_type).await?;
            let retype = MigratingRetype { retype, owner };
            return self
                .start_migration(volume, target, false, Some(retype))
                .await;
        }
        let now = self.clock.now();
        match self.store.retype_volume(&retype, &owner, now).await? {
            Outcome::Done(()) => Ok(()),
            Outcome::Gone => Err(volume_not_found(id)),
            Outcome::Refused(refusal) => Err(retype_refused(refusal)),
        }
    }

    /// The best backend of this process for `volume` under `new_type`, its own aside.
    async fn backend_for_retype(
        &self,
        volume: &Volume,
        new_type: &VolumeType,
    ) -> Result<&ConfiguredBackend, DomainError> {
        let current = self.backend_of(volume)?;
        let own: Vec<usize> = self
            .backends
            .iter()
            .enumerate()
            .filter(|(_, b)| b.host == current.host)
            .map(|(i, _)| i)
            .collect();
        let placement = super::placement::Placement {
            size_gb: volume.size,
            availability_zone: Some(&volume.availability_zone),
            volume_type: new_type,
        };
        let best = self.candidates(&placement, &own).await?;
        best.first()
            .and_then(|i| self.backends.get(*i))
            .ok_or(DomainError::RetypeNeedsMigration)
    }
}

/// A retype refused, in the domain's terms.
pub(super) fn retype_refused(refusal: RetypeRefusal) -> DomainError {
    match refusal {
        RetypeRefusal::OverQuota(over) => DomainError::OverQuota(over),
        RetypeRefusal::Multiattach(status) => DomainError::MultiattachRetypeRefused(status),
        RetypeRefusal::SingleWriter(status) => DomainError::SingleWriterRetypeRefused(status),
        RetypeRefusal::Unretypable => DomainError::RetypeRefused,
        RetypeRefusal::EncryptionChanges => DomainError::RetypeChangesEncryption,
        RetypeRefusal::EncryptedMultiattach => DomainError::EncryptedMultiattachRetype,
    }
}

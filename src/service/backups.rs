//! Backups (`/backups`), as Cinder's `backup/api.py` runs them: the checks and the
//! record in one transaction, then the data written or read in the background
//! (`backup_work`), so a request never waits for a volume's data.

use std::collections::BTreeMap;

use super::{BackupSettings, Service};
use crate::domain::backup::{
    self, Backup, BackupFilters, BackupSortKey, BackupStatus, CreateRefusal, NewBackup,
    RestoreRefusal,
};
use crate::domain::error::BackupError;
use crate::domain::ids::{BackupId, VolumeId};
use crate::domain::paging::Page;
use crate::domain::quota::QuotaOwner;
use crate::domain::service_record::BACKUP_BINARY;
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::policy::{rules, Target};
use crate::store::{BackupRefusal, RestoreBlock};

pub(super) fn backup_not_found(id: &str) -> DomainError {
    BackupError::NotFound(id.to_owned()).into()
}

fn source_refused(refusal: CreateRefusal) -> DomainError {
    let reason = refusal.reason();
    match refusal {
        CreateRefusal::VolumeStatus(_) | CreateRefusal::InUseWithoutForce => {
            BackupError::InvalidVolume(reason).into()
        }
        CreateRefusal::SnapshotStatus(_) => BackupError::InvalidSnapshot(reason).into(),
        CreateRefusal::NoParent => BackupError::Invalid(reason).into(),
    }
}

/// Refuses `action` ("Restore backup", ...) on a backup the configured repository's
/// driver did not make, as Cinder's backup manager does: it could not read it.
pub(super) fn check_ours(
    settings: &BackupSettings,
    found: &Backup,
    action: &str,
) -> Result<(), DomainError> {
    let driver = settings.repository.driver();
    let service = found.service.as_deref();
    match backup::is_our_backup(driver, service) {
        true => Ok(()),
        false => Err(BackupError::Invalid(backup::not_our_backup(action, driver, service)).into()),
    }
}

fn restore_refused(refusal: RestoreRefusal) -> DomainError {
    let reason = refusal.reason();
    match refusal {
        RestoreRefusal::BackupStatus => BackupError::Invalid(reason).into(),
        _ => BackupError::InvalidVolume(reason).into(),
    }
}

/// What `POST /backups` asks for.
#[derive(Debug, Clone, Default)]
pub struct CreateBackup {
    pub volume_id: String,
    pub snapshot_id: Option<String>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub container: Option<String>,
    pub incremental: bool,
    pub force: bool,
    pub metadata: BTreeMap<String, String>,
    pub availability_zone: Option<String>,
}

/// What a restore answers (Cinder's `restore_summary`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreStarted {
    pub backup_id: BackupId,
    pub volume_id: VolumeId,
    pub volume_name: Option<String>,
}

impl Service {
    pub(super) fn backup_settings(&self) -> Result<&BackupSettings, DomainError> {
        self.settings
            .backups
            .as_ref()
            .ok_or_else(|| BackupError::NoService.into())
    }

    /// The backup service, for a request: as Cinder, none (503) while its repository
    /// has not been set up (Cinder's uninitialised backup driver) or an admin keeps this
    /// host's `cinder-backup` disabled (`os-services/disable`).
    pub(super) async fn backup_service(&self) -> Result<&BackupSettings, DomainError> {
        let settings = self.backup_settings()?;
        if !settings.ready.load(std::sync::atomic::Ordering::Acquire) {
            return Err(BackupError::NoService.into());
        }
        let rows = self
            .store
            .list_services(Some(&settings.host), Some(BACKUP_BINARY))
            .await?;
        if rows.iter().any(|s| s.host == settings.host && s.disabled) {
            return Err(BackupError::NoService.into());
        }
        Ok(settings)
    }

    /// A backup the caller may see: another project's is "not found" to non-admins.
    pub async fn get_backup(
        &self,
        caller: &RequestContext,
        id: &str,
    ) -> Result<Backup, DomainError> {
        let uuid = BackupId::parse(id).ok_or_else(|| backup_not_found(id))?;
        let found = self.store.get_backup(uuid).await?;
        let found = found
            .filter(|b| !caller.is_project_scoped() || b.project_id == caller.project_id)
            .ok_or_else(|| backup_not_found(id))?;
        let target = Target::project(&found.project_id);
        self.policy.enforce(rules::BACKUP_GET, caller, &target)?;
        Ok(found)
    }

    /// Whether the caller sees a backup's project and user (3.18+, 3.56+).
    pub fn may_see_backup_project(&self, caller: &RequestContext) -> bool {
        let target = Target::caller(caller);
        self.policy
            .allows(rules::BACKUP_PROJECT_ATTRIBUTE, caller, &target)
    }

    /// A page of the backups the caller may list, and their count when asked.
    pub async fn list_backups(
        &self,
        caller: &RequestContext,
        mut filters: BackupFilters,
        all_tenants: bool,
        page: &Page<BackupSortKey>,
        with_count: bool,
    ) -> Result<(Vec<Backup>, Option<i64>), DomainError> {
        let target = Target::caller(caller);
        self.policy
            .enforce(rules::BACKUP_GET_ALL, caller, &target)?;
        filters.project_id = caller.listing_project(all_tenants, filters.project_id.take());
        if let Some(marker) = page.marker {
            let found = self.store.get_backup(marker.into()).await?;
            let owner = found.as_ref().map(|b| b.project_id.as_str());
            super::check_marker(marker, owner, filters.project_id.as_ref())?;
        }
        let found = self.store.list_backups(&filters, page).await?;
        let count = match with_count {
            true => Some(self.store.count_backups(&filters).await?),
            false => None,
        };
        Ok((found, count))
    }

    /// Starts a backup: checked and recorded `creating` (its source held `backing-up`),
    /// then written in the background.
    pub async fn create_backup(
        &self,
        caller: &RequestContext,
        request: CreateBackup,
    ) -> Result<Backup, DomainError> {
        let volume_id = VolumeId::parse(&request.volume_id)
            .ok_or_else(|| DomainError::VolumeNotFound(request.volume_id.clone()))?;
        let volume = self.get_volume(caller, volume_id).await?;
        let target = Target::project(&volume.project_id);
        self.policy.enforce(rules::BACKUP_CREATE, caller, &target)?;
        let snapshot_id = match &request.snapshot_id {
            Some(id) => {
                let snapshot = self.get_snapshot(caller, id).await?;
                if snapshot.volume_id != volume.id {
                    return Err(BackupError::InvalidVolume(format!(
                        "Volume {} does not match with snapshot.volume_id {}.",
                        volume.id, snapshot.volume_id
                    ))
                    .into());
                }
                Some(snapshot.id)
            }
            None => None,
        };
        let settings = self.backup_service().await?;
        let repository = &settings.repository;
        let container = match request.container.filter(|c| !c.is_empty()) {
            Some(container) => {
                (repository.check_container(&container)).map_err(BackupError::InvalidInput)?;
                container
            }
            None => repository.default_container(volume.id),
        };
        // The backup keeps a copy of an encrypted volume's key (Cinder's backup manager
        // clones it first), so it can be restored after the volume and its key are gone.
        let token = caller.auth_token.as_deref();
        let encryption_key_id = match &volume.encryption_key_id {
            Some(key) => Some(self.copy_key(token, key).await?),
            None => None,
        };
        let new = NewBackup {
            id: BackupId::generate(),
            volume_id: volume.id,
            snapshot_id,
            user_id: caller.user_id.clone(),
            project_id: caller.project_id.clone(),
            host: settings.host.clone(),
            availability_zone: request
                .availability_zone
                .or_else(|| Some(volume.availability_zone.clone())),
            name: request.name,
            description: request.description,
            container,
            service: repository.driver(),
            incremental: request.incremental,
            force: request.force,
            metadata: request.metadata,
            encryption_key_id,
            created_at: self.clock.now(),
        };
        let owner = QuotaOwner {
            project_id: caller.project_id.clone(),
            type_name: String::new(),
            defaults: self.settings.quota_defaults.clone(),
        };
        let made = self.store.begin_backup(&new, &owner).await;
        if !matches!(made, Ok(Outcome::Done(_))) {
            self.forget_key(token, new.encryption_key_id.as_deref())
                .await;
        }
        let made = match made? {
            Outcome::Done(made) => made,
            Outcome::Gone => return Err(super::volume_not_found(volume.id)),
            Outcome::Refused(BackupRefusal::Source(refusal)) => {
                return Err(source_refused(refusal))
            }
            Outcome::Refused(BackupRefusal::OverQuota(over)) => {
                return Err(DomainError::OverQuota(over))
            }
        };
        self.start_backup_writing(made.clone(), volume);
        Ok(made)
    }

    /// Sets a backup's name, description and (3.43+) metadata.
    pub async fn update_backup(
        &self,
        caller: &RequestContext,
        id: &str,
        name: Option<Option<String>>,
        description: Option<Option<String>>,
        metadata: Option<BTreeMap<String, String>>,
    ) -> Result<Backup, DomainError> {
        let found = self.get_backup(caller, id).await?;
        let target = Target::project(&found.project_id);
        self.policy.enforce(rules::BACKUP_UPDATE, caller, &target)?;
        let now = self.clock.now();
        let updated = self
            .store
            .update_backup(found.id, name, description, metadata, now)
            .await?;
        if updated == Outcome::Gone {
            return Err(backup_not_found(id));
        }
        self.get_backup(caller, id).await
    }

    /// `os-reset_status` (admins): `available` or `error`, whatever the backup does.
    pub async fn reset_backup_status(
        &self,
        caller: &RequestContext,
        id: &str,
        status: BackupStatus,
    ) -> Result<(), DomainError> {
        let found = self.get_backup(caller, id).await?;
        let target = Target::project(&found.project_id);
        self.policy
            .enforce(rules::BACKUP_RESET_STATUS, caller, &target)?;
        let settings = self.backup_service().await?;
        check_ours(settings, &found, "Reset backup status")?;
        let now = self.clock.now();
        match self
            .store
            .reset_backup_status(found.id, status, now)
            .await?
        {
            Outcome::Gone => Err(backup_not_found(id)),
            _ => Ok(()),
        }
    }

    /// Deletes a backup (`force`, admins: whatever its status): recorded `deleting`,
    /// then its data removed and its record deleted.
    pub async fn delete_backup(
        &self,
        caller: &RequestContext,
        id: &str,
        force: bool,
    ) -> Result<(), DomainError> {
        let found = self.get_backup(caller, id).await?;
        let rule = match force {
            true => rules::BACKUP_FORCE_DELETE,
            false => rules::BACKUP_DELETE,
        };
        let target = Target::project(&found.project_id);
        self.policy.enforce(rule, caller, &target)?;
        let settings = self.backup_service().await?;
        check_ours(settings, &found, "Delete backup")?;
        let now = self.clock.now();
        let (found, before) = match self.store.begin_backup_delete(found.id, force, now).await? {
            Outcome::Done(done) => done,
            Outcome::Gone => return Err(backup_not_found(id)),
            Outcome::Refused(refusal) => {
                return Err(BackupError::Invalid(refusal.reason().to_owned()).into())
            }
        };
        // A backup still being written or restored is removed by that work when it
        // stops; any other's objects go now (two files), before the answer.
        let key = found.encryption_key_id.clone();
        let removed = match before {
            BackupStatus::Creating | BackupStatus::Restoring => true,
            _ => self.remove_backup_now(found).await?,
        };
        // Its copy of a volume's key goes with it, with the caller's token as Cinder's
        // does (a delete taken up again after a restart has none); one whose data could
        // not be removed (`error_deleting`) keeps its key.
        if removed {
            self.forget_key(caller.auth_token.as_deref(), key.as_deref())
                .await;
        }
        Ok(())
    }

    /// Restores a backup onto `volume_id`, or onto a new volume of the backup's size
    /// (named `name`); the data is written in the background.
    pub async fn restore_backup(
        &self,
        caller: &RequestContext,
        id: &str,
        volume_id: Option<String>,
        name: Option<String>,
        request_id: Option<String>,
    ) -> Result<RestoreStarted, DomainError> {
        let found = self.get_backup(caller, id).await?;
        let target = Target::project(&found.project_id);
        self.policy
            .enforce(rules::BACKUP_RESTORE, caller, &target)?;
        if found.status != BackupStatus::Available {
            return Err(restore_refused(RestoreRefusal::BackupStatus));
        }
        let settings = self.backup_service().await?;
        check_ours(settings, &found, "Restore backup")?;
        let source_type = self.encrypted_backup_type(&found).await?;
        let (volume, is_new) = match volume_id {
            Some(volume_id) => {
                let uuid = VolumeId::parse(&volume_id)
                    .ok_or_else(|| DomainError::VolumeNotFound(volume_id.clone()))?;
                let volume = self.get_volume(caller, uuid).await?;
                Self::check_restore_target(source_type.as_deref(), &volume)?;
                (volume, false)
            }
            None => {
                let name = name.unwrap_or_else(|| backup::restore_volume_name(found.id));
                let volume_type = self
                    .restore_type_for_new(caller, source_type.as_deref(), None)
                    .await?;
                let made = self
                    .volume_for_restore(caller, &found, name, volume_type, request_id)
                    .await?;
                (made, true)
            }
        };
        self.restore_onto(caller, &found, &volume, is_new).await?;
        Ok(RestoreStarted {
            backup_id: found.id,
            volume_id: volume.id,
            volume_name: volume.name,
        })
    }

    /// `POST /volumes` with `backup_id` (3.47+): a volume of the backup's size (or the
    /// size asked, not less), made empty and then restored from the backup in the
    /// background (`restoring-backup`, then `available`).
    pub(super) async fn create_volume_from_backup(
        &self,
        caller: &RequestContext,
        mut request: super::volumes::CreateVolume,
        backup_id: &str,
        request_id: Option<String>,
    ) -> Result<crate::domain::volume::Volume, DomainError> {
        let sources = [
            &request.snapshot_id,
            &request.source_volid,
            &request.image_ref,
        ];
        if sources.iter().any(|s| s.is_some()) {
            let one = super::volumes::ONE_SOURCE.to_owned();
            return Err(DomainError::ImageRefused(one));
        }
        let found = self.get_backup(caller, backup_id).await?;
        if found.status != BackupStatus::Available {
            return Err(BackupError::Invalid(
                "Originating backup status must be one of 'available' values".to_owned(),
            )
            .into());
        }
        let size = request.size.unwrap_or(found.size);
        if size < found.size {
            return Err(BackupError::InvalidInput(format!(
                "Volume size {size}GB cannot be smaller than the backup size {}GB. It must be \
                 >= backup size.",
                found.size
            ))
            .into());
        }
        let settings = self.backup_service().await?;
        check_ours(settings, &found, "Restore backup")?;
        let source_type = self.encrypted_backup_type(&found).await?;
        request.volume_type = self
            .restore_type_for_new(caller, source_type.as_deref(), request.volume_type)
            .await?;
        request.size = Some(size);
        request.backup_id = None;
        // Boxed: `create_volume` is what called this (an async fn cannot hold itself).
        let made = Box::pin(self.create_volume(caller, request, request_id)).await?;
        let volume = self.settled(caller, &found, made).await?;
        self.restore_onto(caller, &found, &volume, true).await?;
        self.get_volume(caller, volume.id).await
    }

    /// Holds `found` `restoring` and `volume` `restoring-backup`, then restores in the
    /// background; an encrypted backup's key is copied for the volume first.
    async fn restore_onto(
        &self,
        caller: &RequestContext,
        found: &Backup,
        volume: &crate::domain::volume::Volume,
        is_new: bool,
    ) -> Result<(), DomainError> {
        let key = self.restore_key(caller, found).await?;
        let now = self.clock.now();
        let begun = self.store.begin_restore(found.id, volume.id, now).await;
        let refused = match begun {
            Ok(Outcome::Done(held)) => {
                self.start_restore(held, volume.clone(), is_new, key);
                return Ok(());
            }
            Ok(Outcome::Gone) => backup_not_found(&found.id.to_string()),
            Ok(Outcome::Refused(RestoreBlock::VolumeGone)) => super::volume_not_found(volume.id),
            Ok(Outcome::Refused(RestoreBlock::Refused(refusal))) => restore_refused(refusal),
            Err(err) => err.into(),
        };
        self.settle_restore_key(volume, key, false).await;
        Err(refused)
    }

    /// A new volume of the backup's size to restore it onto, once it is made.
    async fn volume_for_restore(
        &self,
        caller: &RequestContext,
        found: &Backup,
        name: String,
        volume_type: Option<String>,
        request_id: Option<String>,
    ) -> Result<crate::domain::volume::Volume, DomainError> {
        let request = super::volumes::CreateVolume {
            size: Some(found.size),
            name: Some(name),
            volume_type,
            description: Some(backup::RESTORE_VOLUME_DESCRIPTION.to_owned()),
            ..Default::default()
        };
        let made = self.create_volume(caller, request, request_id).await?;
        self.settled(caller, found, made).await
    }

    /// The new volume `made` for a restore of `found`, once it is no longer `creating`.
    async fn settled(
        &self,
        caller: &RequestContext,
        found: &Backup,
        made: crate::domain::volume::Volume,
    ) -> Result<crate::domain::volume::Volume, DomainError> {
        let mut volume = made;
        for _ in 0..600 {
            if volume.status != crate::domain::volume::VolumeStatus::Creating {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            volume = self.get_volume(caller, volume.id).await?;
        }
        if volume.status == crate::domain::volume::VolumeStatus::Error {
            return Err(BackupError::InvalidVolume(format!(
                "Error while creating volume {} for restoring backup {}.",
                volume.id, found.id
            ))
            .into());
        }
        Ok(volume)
    }
}

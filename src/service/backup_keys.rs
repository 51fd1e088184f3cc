//! Backups of encrypted volumes, kept as Cinder keeps them. The data is the LUKS container
//! the host wrote, copied as it is: nothing is decrypted on the way. What needs care is
//! the key: a backup holds a copy of its own of the volume's key (made when it starts,
//! deleted with it), so it outlives the volume; it goes back only onto a volume of the
//! backed-up volume's type, which gets a copy of its own of the backup's key in place of
//! the one it had.

use super::backup_work::{location_of, RestoreKey};
use super::Service;
use crate::domain::backup::Backup;
use crate::domain::error::BackupError;
use crate::domain::volume::Volume;
use crate::domain::{DomainError, RequestContext};

fn different_type(source: &str, target: &str) -> DomainError {
    BackupError::InvalidVolume(format!(
        "The source volume type '{source}' is different than the destination volume type \
         '{target}'."
    ))
    .into()
}

impl Service {
    /// The type of the volume an encrypted backup was taken of (kept with its data, as
    /// Cinder keeps it in the backup's metadata); `None` for a backup of a plain volume.
    pub(super) async fn encrypted_backup_type(
        &self,
        found: &Backup,
    ) -> Result<Option<String>, DomainError> {
        if found.encryption_key_id.is_none() {
            return Ok(None);
        }
        let settings = self.backup_settings()?;
        let manifest = settings.repository.manifest(location_of(found)).await;
        let manifest = manifest
            .map_err(|e| BackupError::Invalid(format!("The backup's data cannot be read: {e}")))?;
        let volume_type = manifest.volume.volume_type_id.ok_or_else(|| {
            BackupError::Invalid("The backup does not say what type its volume was.".to_owned())
        })?;
        Ok(Some(volume_type))
    }

    /// Cinder's `_restore_vol_encryption_meta`, checked before the restore starts instead
    /// of failing it later: an encrypted backup goes only onto a volume of its type.
    pub(super) fn check_restore_target(
        source_type: Option<&str>,
        target: &Volume,
    ) -> Result<(), DomainError> {
        let target_type = target.volume_type_id.to_string();
        match source_type {
            Some(source) if source != target_type => Err(different_type(source, &target_type)),
            _ => Ok(()),
        }
    }

    /// The type of a new volume made to restore a backup onto: for an encrypted backup the
    /// backed-up volume's type (Cinder gives its restore's new volume that type), which
    /// must still exist and may not differ from one asked for; else what was asked.
    pub(super) async fn restore_type_for_new(
        &self,
        caller: &RequestContext,
        source_type: Option<&str>,
        asked: Option<String>,
    ) -> Result<Option<String>, DomainError> {
        let Some(source) = source_type else {
            return Ok(asked);
        };
        let Some(asked) = asked else {
            self.resolve_volume_type(caller, source)
                .await
                .map_err(|err| match err {
                    DomainError::VolumeTypeNotFound(_) => BackupError::InvalidVolume(format!(
                        "The source volume type '{source}' is not available."
                    ))
                    .into(),
                    other => other,
                })?;
            return Ok(Some(source.to_owned()));
        };
        let found = self.resolve_volume_type(caller, &asked).await?;
        let target = found.id.to_string();
        if target != source {
            return Err(different_type(source, &target));
        }
        Ok(Some(target))
    }

    /// The copy of an encrypted backup's key the volume it is restored onto will hold,
    /// made with the caller's token.
    pub(super) async fn restore_key(
        &self,
        caller: &RequestContext,
        found: &Backup,
    ) -> Result<RestoreKey, DomainError> {
        let token = caller.auth_token.clone();
        let copy = match &found.encryption_key_id {
            Some(key) => Some(self.copy_key(token.as_deref(), key).await?),
            None => None,
        };
        Ok(RestoreKey { copy, token })
    }

    /// After a restore: the volume's former key deleted once it holds its copy of the
    /// backup's (`taken`), else the copy, which nothing holds.
    pub(super) async fn settle_restore_key(&self, volume: &Volume, key: RestoreKey, taken: bool) {
        let Some(copy) = key.copy else { return };
        let token = key.token.as_deref();
        let unused = match taken {
            true => volume.encryption_key_id.as_deref(),
            false => Some(copy.as_str()),
        };
        self.forget_key(token, unused).await;
    }
}

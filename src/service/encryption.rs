//! Volume type encryption (`/types/{id}/encryption`, admin only), what a volume's host
//! reads of it (`/volumes/{id}/encryption`), and the key id a new volume of an encrypted
//! type gets.

use super::Service;
use crate::domain::encryption::{EncryptionChange, EncryptionSpecs, EncryptionType};
use crate::domain::ids::{VolumeId, VolumeTypeId};
use crate::domain::refusal::EncryptionRefusal;
use crate::domain::volume_type::VolumeType;
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::policy::{rules, Target};

/// What `GET /volumes/{id}/encryption` answers: the volume's key id and, when its type
/// is encrypted, the type's specs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeEncryption {
    pub encryption_key_id: Option<String>,
    pub specs: Option<EncryptionSpecs>,
}

fn type_id(raw: &str) -> Result<VolumeTypeId, DomainError> {
    VolumeTypeId::parse(raw).ok_or_else(|| DomainError::VolumeTypeNotFound(raw.to_owned()))
}

fn refused(refusal: EncryptionRefusal, action: &'static str, type_id: &str) -> DomainError {
    match refusal {
        EncryptionRefusal::TypeInUse => DomainError::EncryptionTypeInUse(action),
        EncryptionRefusal::Exists => DomainError::EncryptionExists(type_id.to_owned()),
        EncryptionRefusal::NotFound => DomainError::EncryptionNotFound(type_id.to_owned()),
    }
}

impl Service {
    fn may_encryption(
        &self,
        caller: &RequestContext,
        rule: &'static str,
    ) -> Result<(), DomainError> {
        self.policy.enforce(rule, caller, &Target::caller(caller))
    }

    /// The type's encryption (`None`: it has none); 404 when the type does not exist.
    pub async fn type_encryption(
        &self,
        caller: &RequestContext,
        raw_type_id: &str,
    ) -> Result<Option<EncryptionType>, DomainError> {
        self.may_encryption(caller, rules::ENCRYPTION_GET)?;
        let id = type_id(raw_type_id)?;
        if self.store.get_volume_type(id).await?.is_none() {
            return Err(DomainError::VolumeTypeNotFound(raw_type_id.to_owned()));
        }
        Ok(self.store.get_encryption(id).await?)
    }

    pub async fn create_type_encryption(
        &self,
        caller: &RequestContext,
        raw_type_id: &str,
        specs: &EncryptionSpecs,
    ) -> Result<EncryptionType, DomainError> {
        self.may_encryption(caller, rules::ENCRYPTION_CREATE)?;
        let id = type_id(raw_type_id)?;
        match self
            .store
            .create_encryption(id, specs, self.clock.now())
            .await?
        {
            Outcome::Done(created) => Ok(created),
            Outcome::Refused(refusal) => Err(refused(refusal, "create", raw_type_id)),
            Outcome::Gone => Err(DomainError::VolumeTypeNotFound(raw_type_id.to_owned())),
        }
    }

    pub async fn update_type_encryption(
        &self,
        caller: &RequestContext,
        raw_type_id: &str,
        change: &EncryptionChange,
    ) -> Result<(), DomainError> {
        self.may_encryption(caller, rules::ENCRYPTION_UPDATE)?;
        let id = type_id(raw_type_id)?;
        match self
            .store
            .update_encryption(id, change, self.clock.now())
            .await?
        {
            Outcome::Done(()) => Ok(()),
            Outcome::Refused(refusal) => Err(refused(refusal, "update", raw_type_id)),
            Outcome::Gone => Err(DomainError::VolumeTypeNotFound(raw_type_id.to_owned())),
        }
    }

    pub async fn delete_type_encryption(
        &self,
        caller: &RequestContext,
        raw_type_id: &str,
    ) -> Result<(), DomainError> {
        self.may_encryption(caller, rules::ENCRYPTION_DELETE)?;
        let not_found = || DomainError::EncryptionNotFound(raw_type_id.to_owned());
        let id = VolumeTypeId::parse(raw_type_id).ok_or_else(not_found)?;
        match self.store.delete_encryption(id, self.clock.now()).await? {
            Outcome::Done(()) => Ok(()),
            Outcome::Refused(refusal) => Err(refused(refusal, "delete", raw_type_id)),
            Outcome::Gone => Err(not_found()),
        }
    }

    /// `GET /volumes/{id}/encryption`: what the volume's host needs to open it.
    pub async fn volume_encryption(
        &self,
        caller: &RequestContext,
        id: VolumeId,
    ) -> Result<VolumeEncryption, DomainError> {
        let volume = self
            .volume_with_rule(caller, id, rules::VOLUME_ENCRYPTION_METADATA)
            .await?;
        let specs = self.store.get_encryption(volume.volume_type_id).await?;
        Ok(VolumeEncryption {
            encryption_key_id: volume.encryption_key_id,
            specs: specs.map(|e| e.specs),
        })
    }

    /// A retype keeps a volume's encryption as it is: the data would have to be
    /// re-encrypted (Cinder migrates it; nothing migrates here). And, as Cinder, a type
    /// both encrypted and multi-attach is refused.
    pub(super) async fn encryption_stays(
        &self,
        volume: &crate::domain::volume::Volume,
        new_type: &VolumeType,
        multiattach: bool,
    ) -> Result<(), DomainError> {
        let wanted = self.store.get_encryption(new_type.id).await?;
        if multiattach && wanted.is_some() {
            return Err(DomainError::EncryptedMultiattachRetype);
        }
        let current = self.store.get_encryption(volume.volume_type_id).await?;
        if current.map(|e| e.specs) != wanted.map(|e| e.specs) {
            return Err(DomainError::RetypeChangesEncryption);
        }
        Ok(())
    }

    /// The encryption a new volume of `volume_type` gets: none for a type without it;
    /// refused when no key manager can give it a key, or (as Cinder) when the type also
    /// allows multi-attach.
    pub(super) async fn encryption_of_new(
        &self,
        volume_type: &VolumeType,
        multiattach: bool,
    ) -> Result<Option<EncryptionSpecs>, DomainError> {
        let Some(encryption) = self.store.get_encryption(volume_type.id).await? else {
            return Ok(None);
        };
        if !self.settings.key_manager.is_configured() {
            return Err(DomainError::NoKeyManager(volume_type.name.clone()));
        }
        if multiattach {
            return Err(DomainError::EncryptedMultiattach);
        }
        Ok(Some(encryption.specs))
    }

    /// The key of a new encrypted volume (Cinder's `_get_encryption_key_id`): a copy of
    /// its source's key (a volume, a snapshot, or an image uploaded from an encrypted
    /// volume), else a new key of the type's algorithm and size, made with the caller's
    /// token so it belongs to the caller's project.
    pub(super) async fn new_volume_key(
        &self,
        caller: &RequestContext,
        specs: &EncryptionSpecs,
        source_key: Option<&str>,
    ) -> Result<String, DomainError> {
        let keys = &self.settings.key_manager;
        let token = caller.auth_token.as_deref();
        if let Some(source) = source_key {
            return self.copy_key(token, source).await;
        }
        let algorithm = specs
            .key_algorithm()
            .ok_or(DomainError::InvalidEncryptionSpec)?;
        let made = keys.create_key(token, algorithm, specs.key_size).await;
        made.map_err(|err| {
            // As Cinder, the caller hears only that the key manager failed.
            tracing::error!(error = %err, "the key manager could not make a new volume's key");
            DomainError::KeyManagerFailed
        })
    }

    /// A key of its own with `key`'s bytes (Cinder's `clone_encryption_key`), made with
    /// `token` (else the service's own).
    pub(super) async fn copy_key(
        &self,
        token: Option<&str>,
        key: &str,
    ) -> Result<String, DomainError> {
        let made = self.settings.key_manager.clone_key(token, key).await;
        made.map_err(|err| {
            tracing::error!(error = %err, key_id = key, "the key manager could not copy a key");
            DomainError::KeyManagerFailed
        })
    }

    /// Deletes a key made for a volume or an image that did not come to be.
    pub(super) async fn forget_key(&self, token: Option<&str>, key: Option<&str>) {
        let Some(key) = key else { return };
        if let Err(err) = self.settings.key_manager.delete_key(token, key).await {
            tracing::warn!(error = %err, key_id = key, "could not delete an unused key");
        }
    }
}

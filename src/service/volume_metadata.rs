//! Volume update (`PUT /volumes/{id}`) and user metadata. Cinder refuses these changes
//! in some statuses; the store decides that under the volume's lock.

use std::collections::BTreeMap;

use super::volume_not_found;
use super::Service;
use crate::domain::ids::VolumeId;
use crate::domain::image_properties::is_reserved_property;
use crate::domain::refusal::{MetadataRefusal, VolumeUpdateRefusal};
use crate::domain::volume::{MetadataChange, Volume, VolumeUpdate};
use crate::domain::volume_rules::check_metadata_count;
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::policy::{rules, Target};

/// Refuses more metadata items than a volume may hold before the store is asked.
pub(super) fn metadata_fits(metadata: &BTreeMap<String, String>) -> Result<(), DomainError> {
    check_metadata_count(metadata.len())
        .map_err(|_| DomainError::TooManyMetadataItems(metadata.len()))
}

impl Service {
    /// Renames, re-describes and (with `metadata`) replaces the user metadata.
    pub async fn update_volume(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        update: VolumeUpdate,
    ) -> Result<Volume, DomainError> {
        self.volume_under_rule(caller, id, rules::VOLUME_UPDATE)
            .await?;
        if let Some(metadata) = &update.metadata {
            metadata_fits(metadata)?;
        }
        match self
            .store
            .update_volume(id, &update, self.clock.now())
            .await?
        {
            Outcome::Done(()) => self.get_volume(caller, id).await,
            Outcome::Refused(VolumeUpdateRefusal::Status(_)) => {
                Err(DomainError::UpdateDuringMaintenance)
            }
            Outcome::Refused(VolumeUpdateRefusal::Metadata(refusal)) => {
                Err(metadata_refused(refusal, id))
            }
            Outcome::Gone => Err(volume_not_found(id)),
        }
    }

    pub async fn volume_metadata(
        &self,
        caller: &RequestContext,
        id: VolumeId,
    ) -> Result<BTreeMap<String, String>, DomainError> {
        self.volume_under_rule(caller, id, rules::VOLUME_METADATA_GET)
            .await?;
        self.store
            .volume_metadata(id)
            .await?
            .ok_or_else(|| volume_not_found(id))
    }

    /// One key of the user metadata; a missing key is 404.
    pub async fn volume_metadata_item(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        key: &str,
    ) -> Result<String, DomainError> {
        self.volume_metadata(caller, id)
            .await?
            .remove(key)
            .ok_or_else(|| DomainError::MetadataKeyNotFound {
                volume: id,
                key: key.to_owned(),
            })
    }

    /// Merges, replaces or removes user metadata; returns the metadata afterwards.
    pub async fn change_volume_metadata(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        change: MetadataChange,
    ) -> Result<BTreeMap<String, String>, DomainError> {
        let rule = match change {
            MetadataChange::Merge(_) => rules::VOLUME_METADATA_CREATE,
            MetadataChange::Replace(_) => rules::VOLUME_METADATA_UPDATE,
            MetadataChange::Remove(_) => rules::VOLUME_METADATA_DELETE,
        };
        self.volume_under_rule(caller, id, rule).await?;
        if let MetadataChange::Merge(metadata) | MetadataChange::Replace(metadata) = &change {
            metadata_fits(metadata)?;
        }
        match self
            .store
            .change_volume_metadata(id, &change, self.clock.now())
            .await?
        {
            Outcome::Done(metadata) => Ok(metadata),
            Outcome::Gone => Err(volume_not_found(id)),
            Outcome::Refused(VolumeUpdateRefusal::Status(status)) => {
                Err(DomainError::MetadataChangeRefused {
                    removing: matches!(change, MetadataChange::Remove(_)),
                    status,
                })
            }
            Outcome::Refused(VolumeUpdateRefusal::Metadata(refusal)) => {
                Err(metadata_refused(refusal, id))
            }
        }
    }
}

impl Service {
    /// `os-show_image_metadata`: the image metadata of a volume the caller may see.
    pub async fn image_metadata(
        &self,
        caller: &RequestContext,
        id: VolumeId,
    ) -> Result<BTreeMap<String, String>, DomainError> {
        self.volume_under_rule(caller, id, rules::IMAGE_METADATA_SHOW)
            .await?;
        self.store
            .image_metadata(id)
            .await?
            .ok_or_else(|| volume_not_found(id))
    }

    /// `os-set_image_metadata` (a merge) and `os-unset_image_metadata` (one key, 404
    /// when it is not there): Cinder checks both the image-metadata rule and the volume
    /// metadata rule. Returns the image metadata afterwards.
    pub async fn change_image_metadata(
        &self,
        caller: &RequestContext,
        id: VolumeId,
        change: MetadataChange,
    ) -> Result<BTreeMap<String, String>, DomainError> {
        let removing = matches!(change, MetadataChange::Remove(_));
        let (image_rule, metadata_rule) = if removing {
            (rules::IMAGE_METADATA_REMOVE, rules::VOLUME_METADATA_DELETE)
        } else {
            (rules::IMAGE_METADATA_SET, rules::VOLUME_METADATA_UPDATE)
        };
        let volume = self.volume_under_rule(caller, id, image_rule).await?;
        self.policy
            .enforce(metadata_rule, caller, &Target::project(&volume.project_id))?;
        if let MetadataChange::Merge(keys) | MetadataChange::Replace(keys) = &change {
            let extra = &self.settings.image_rules.reserved_namespaces;
            let reserved = keys.keys().find(|k| is_reserved_property(k, extra));
            if let (Some(key), false) = (reserved, caller.is_admin) {
                return Err(DomainError::ReservedImageProperty(key.clone()));
            }
        }
        match self
            .store
            .change_image_metadata(id, &change, self.clock.now())
            .await?
        {
            Outcome::Done(metadata) => Ok(metadata),
            Outcome::Gone => Err(volume_not_found(id)),
            Outcome::Refused(VolumeUpdateRefusal::Status(status)) => {
                Err(DomainError::MetadataChangeRefused { removing, status })
            }
            Outcome::Refused(VolumeUpdateRefusal::Metadata(MetadataRefusal::NoSuchKey(_))) => {
                Err(DomainError::ImageMetadataNotFound(id))
            }
            Outcome::Refused(VolumeUpdateRefusal::Metadata(refusal)) => {
                Err(metadata_refused(refusal, id))
            }
        }
    }
}

fn metadata_refused(refusal: MetadataRefusal, volume: VolumeId) -> DomainError {
    match refusal {
        MetadataRefusal::TooManyItems(count) => DomainError::TooManyMetadataItems(count),
        MetadataRefusal::NoSuchKey(key) => DomainError::MetadataKeyNotFound { volume, key },
    }
}

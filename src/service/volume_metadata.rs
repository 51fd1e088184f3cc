//! Volume update (`PUT /volumes/{id}`) and user metadata: each write is one transaction
//! that first checks the volume's status, as Cinder refuses changes during maintenance.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::volumes::volume_not_found;
use super::Service;
use crate::domain::volume::{
    MetadataChange, Volume, VolumeStatus, VolumeUpdate, VolumeWrite, METADATA_CHANGE_REFUSED,
    UPDATE_REFUSED,
};
use crate::domain::{DomainError, RequestContext};
use crate::policy::rules;

fn metadata_refusal(change: &MetadataChange, status: VolumeStatus) -> DomainError {
    let verb = match change {
        MetadataChange::Remove(_) => "Deleting",
        _ => "Updating",
    };
    DomainError::InvalidVolume(format!(
        "{verb} volume metadata is not allowed for volumes in {status} status."
    ))
}

pub fn metadata_key_not_found(volume_id: Uuid, key: &str) -> DomainError {
    DomainError::NotFound(format!(
        "Volume {volume_id} has no metadata with key {key}."
    ))
}

impl Service {
    /// Renames, re-describes and (with `metadata`) replaces the user metadata.
    pub async fn update_volume(
        &self,
        caller: &RequestContext,
        id: Uuid,
        update: VolumeUpdate,
    ) -> Result<Volume, DomainError> {
        self.volume_under_rule(caller, id, rules::VOLUME_UPDATE)
            .await?;
        match self
            .store
            .update_volume(id, &update, UPDATE_REFUSED, self.clock.now())
            .await?
        {
            VolumeWrite::Done(()) => self.get_volume(caller, id).await,
            VolumeWrite::Refused(_) => Err(DomainError::InvalidVolume(
                "The volume cannot be updated during maintenance.".to_owned(),
            )),
            VolumeWrite::VolumeNotFound | VolumeWrite::KeyNotFound => Err(volume_not_found(id)),
        }
    }

    pub async fn volume_metadata(
        &self,
        caller: &RequestContext,
        id: Uuid,
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
        id: Uuid,
        key: &str,
    ) -> Result<String, DomainError> {
        self.volume_metadata(caller, id)
            .await?
            .remove(key)
            .ok_or_else(|| metadata_key_not_found(id, key))
    }

    /// Merges, replaces or removes user metadata; returns the metadata afterwards.
    pub async fn change_volume_metadata(
        &self,
        caller: &RequestContext,
        id: Uuid,
        change: MetadataChange,
    ) -> Result<BTreeMap<String, String>, DomainError> {
        let rule = match change {
            MetadataChange::Merge(_) => rules::VOLUME_METADATA_CREATE,
            MetadataChange::Replace(_) => rules::VOLUME_METADATA_UPDATE,
            MetadataChange::Remove(_) => rules::VOLUME_METADATA_DELETE,
        };
        self.volume_under_rule(caller, id, rule).await?;
        match self
            .store
            .change_volume_metadata(id, &change, METADATA_CHANGE_REFUSED, self.clock.now())
            .await?
        {
            VolumeWrite::Done(metadata) => Ok(metadata),
            VolumeWrite::Refused(status) => Err(metadata_refusal(&change, status)),
            VolumeWrite::VolumeNotFound => Err(volume_not_found(id)),
            VolumeWrite::KeyNotFound => match &change {
                MetadataChange::Remove(key) => Err(metadata_key_not_found(id, key)),
                _ => Err(volume_not_found(id)),
            },
        }
    }
}

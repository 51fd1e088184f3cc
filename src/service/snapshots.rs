//! Snapshot use cases: take one (synchronously through the volume's backend, like a
//! volume create), look them up, rename, delete, reset status, metadata.

use std::collections::BTreeMap;

use super::Service;
use crate::backend::BackendError;
use crate::domain::ids::{SnapshotId, VolumeId};
use crate::domain::message::{action, detail, Action, Detail, Message, Resource};
use crate::domain::paging::Page;
use crate::domain::quota::{QuotaDefaults, QuotaOwner};
use crate::domain::refusal::{
    MetadataRefusal, SnapshotCreateRefusal, SnapshotDeleteRefusal, SnapshotStatusRefusal,
};
use crate::domain::snapshot::SnapshotFilters;
use crate::domain::snapshot::{NewSnapshot, Snapshot, SnapshotSortKey, SnapshotStatus};
use crate::domain::volume::{MetadataChange, Volume};
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::policy::{rules, Target};

/// A snapshot create as the API received it.
#[derive(Debug, Clone, Default)]
pub struct CreateSnapshot {
    pub volume_id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub metadata: BTreeMap<String, String>,
    /// `force`, or 3.66+: an `in-use` volume may be snapshotted.
    pub in_use_allowed: bool,
}

/// What ending a snapshot does to its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Removal {
    Delete,
    /// Kept, renamed `unmanaged-snapshot-<id>` (`os-unmanage`).
    Unmanage,
}

pub(super) fn snapshot_not_found(id: impl std::fmt::Display) -> DomainError {
    DomainError::SnapshotNotFound(id.to_string())
}

fn quota_owner(volume: &Volume, defaults: &QuotaDefaults) -> QuotaOwner {
    QuotaOwner {
        project_id: volume.project_id.clone(),
        type_name: volume.volume_type_name.clone().unwrap_or_default(),
        defaults: defaults.clone(),
    }
}

impl Service {
    pub async fn create_snapshot(
        &self,
        caller: &RequestContext,
        request: CreateSnapshot,
    ) -> Result<Snapshot, DomainError> {
        let volume = self
            .volume_to_snapshot(caller, &request.volume_id, rules::SNAPSHOT_CREATE)
            .await?;
        let new = self.new_snapshot(
            caller,
            &volume,
            (request.name, request.description),
            request.metadata,
            request.in_use_allowed,
        )?;
        self.record_snapshot(&new, &volume).await?;
        // The backend work runs to its end even if the client goes away.
        let service = self.clone();
        let id = new.id;
        crate::origin::spawn(async move { service.take_snapshot(volume, id).await })
            .await
            .map_err(|e| DomainError::Interrupted {
                what: "snapshot creation",
                detail: e.to_string(),
            })??;
        self.store
            .get_snapshot(id)
            .await?
            .ok_or_else(|| snapshot_not_found(id))
    }

    /// The volume a new snapshot is to be of (`volume_id` as the caller wrote it), once
    /// `rule` allows the caller and its backend is not frozen.
    pub(super) async fn volume_to_snapshot(
        &self,
        caller: &RequestContext,
        volume_id: &str,
        rule: &'static str,
    ) -> Result<Volume, DomainError> {
        let id = VolumeId::parse(volume_id)
            .ok_or_else(|| DomainError::VolumeNotFound(volume_id.to_owned()))?;
        let volume = self.volume_under_rule(caller, id, rule).await?;
        self.ensure_not_frozen(&volume).await?;
        Ok(volume)
    }

    /// A new snapshot of `volume` by `caller` (a create or a manage), its metadata
    /// checked; `text` is its name and description.
    pub(super) fn new_snapshot(
        &self,
        caller: &RequestContext,
        volume: &Volume,
        text: (Option<String>, Option<String>),
        metadata: BTreeMap<String, String>,
        in_use_allowed: bool,
    ) -> Result<NewSnapshot, DomainError> {
        super::volume_metadata::metadata_fits(&metadata)?;
        let (name, description) = text;
        Ok(NewSnapshot {
            id: SnapshotId::generate(),
            volume_id: volume.id,
            user_id: caller.user_id.clone(),
            project_id: volume.project_id.clone(),
            name,
            description,
            metadata,
            in_use_allowed,
            created_at: self.clock.now(),
        })
    }

    /// Records a new snapshot `creating` (quota checked), or says why not.
    pub(super) async fn record_snapshot(
        &self,
        new: &NewSnapshot,
        volume: &Volume,
    ) -> Result<(), DomainError> {
        let owner = quota_owner(volume, &self.settings.quota_defaults);
        match self.store.insert_snapshot(new, &owner).await? {
            Outcome::Done(()) => Ok(()),
            Outcome::Gone => Err(DomainError::VolumeNotFound(volume.id.to_string())),
            Outcome::Refused(SnapshotCreateRefusal::VolumeStatus(status)) => {
                Err(DomainError::SnapshotRefused {
                    volume: volume.id,
                    status,
                    in_use_allowed: new.in_use_allowed,
                })
            }
            Outcome::Refused(SnapshotCreateRefusal::OverQuota(over)) => {
                Err(DomainError::OverQuota(over))
            }
        }
    }

    pub(super) async fn take_snapshot(
        &self,
        volume: Volume,
        id: SnapshotId,
    ) -> Result<(), DomainError> {
        let backend = self.backend_of(&volume)?;
        let result = backend
            .driver
            .create_snapshot(volume.storage_id(), id)
            .await;
        let now = self.clock.now();
        let to = match result {
            Ok(()) => SnapshotStatus::Available,
            Err(err) => {
                tracing::warn!(snapshot_id = %id, error = %err, "backend could not take the snapshot");
                SnapshotStatus::Error
            }
        };
        self.store
            .transition_snapshot(id, SnapshotStatus::Creating, to, now)
            .await?;
        if to == SnapshotStatus::Error {
            let why = (action::SNAPSHOT_CREATE, detail::SNAPSHOT_CREATE_ERROR);
            self.tell_owner(id, why).await?;
        }
        Ok(())
    }

    /// Leaves a user message about snapshot `id` for its project.
    async fn tell_owner(&self, id: SnapshotId, why: (Action, Detail)) -> Result<(), DomainError> {
        if let Some(snapshot) = self.store.get_snapshot(id).await? {
            let about = (Resource::Snapshot, &snapshot.id as &dyn std::fmt::Display);
            let project = snapshot.project_id.clone();
            let message = Message::error(about, project, None, why, self.clock.now());
            self.store.insert_message(&message).await?;
        }
        Ok(())
    }

    /// A snapshot the caller may see (other projects' do not exist for non-admins).
    pub async fn get_snapshot(
        &self,
        caller: &RequestContext,
        id: &str,
    ) -> Result<Snapshot, DomainError> {
        let uuid = SnapshotId::parse(id).ok_or_else(|| snapshot_not_found(id))?;
        let found = self
            .store
            .get_snapshot(uuid)
            .await?
            .ok_or_else(|| snapshot_not_found(id))?;
        if caller.is_project_scoped() && found.project_id != caller.project_id {
            return Err(snapshot_not_found(id));
        }
        self.policy
            .enforce(
                rules::SNAPSHOT_GET,
                caller,
                &Target::project(&found.project_id),
            )
            .map_err(|_| snapshot_not_found(id))?;
        Ok(found)
    }

    async fn snapshot_under_rule(
        &self,
        caller: &RequestContext,
        id: &str,
        rule: &'static str,
    ) -> Result<Snapshot, DomainError> {
        let found = self.get_snapshot(caller, id).await?;
        self.policy
            .enforce(rule, caller, &Target::project(&found.project_id))?;
        Ok(found)
    }

    pub async fn list_snapshots(
        &self,
        caller: &RequestContext,
        mut filters: SnapshotFilters,
        all_tenants: bool,
        page: &Page<SnapshotSortKey>,
    ) -> Result<Vec<Snapshot>, DomainError> {
        self.policy
            .enforce(rules::SNAPSHOT_GET_ALL, caller, &Target::caller(caller))?;
        filters.project_id = caller.listing_project(all_tenants, filters.project_id.take());
        if let Some(marker) = page.marker {
            let found = self.store.get_snapshot(marker.into()).await?;
            let owner = found.as_ref().map(|s| s.project_id.as_str());
            super::check_marker(marker, owner, filters.project_id.as_ref())?;
        }
        Ok(self.store.list_snapshots(&filters, page).await?)
    }

    /// How many snapshots a listing with these filters holds over all its pages.
    pub async fn count_snapshots(
        &self,
        caller: &RequestContext,
        mut filters: SnapshotFilters,
        all_tenants: bool,
    ) -> Result<i64, DomainError> {
        self.policy
            .enforce(rules::SNAPSHOT_GET_ALL, caller, &Target::caller(caller))?;
        filters.project_id = caller.listing_project(all_tenants, filters.project_id.take());
        Ok(self.store.count_snapshots(&filters).await?)
    }

    /// Whether the caller may see the project ids of snapshots (the extended attributes).
    pub fn may_see_snapshot_project(&self, caller: &RequestContext) -> bool {
        self.policy
            .allows(rules::SNAPSHOT_ATTRIBUTES, caller, &Target::caller(caller))
    }

    pub async fn update_snapshot(
        &self,
        caller: &RequestContext,
        id: &str,
        name: Option<String>,
        description: Option<String>,
    ) -> Result<Snapshot, DomainError> {
        let found = self
            .snapshot_under_rule(caller, id, rules::SNAPSHOT_UPDATE)
            .await?;
        let now = self.clock.now();
        self.store
            .update_snapshot(found.id, name.as_deref(), description.as_deref(), now)
            .await?
            .found()
            .ok_or_else(|| snapshot_not_found(id))?;
        self.store
            .get_snapshot(found.id)
            .await?
            .ok_or_else(|| snapshot_not_found(id))
    }

    /// Deletes a snapshot and its data (`force`: the admin's `os-force_delete`, any
    /// status). A backend failure leaves it `error_deleting`.
    pub async fn delete_snapshot(
        &self,
        caller: &RequestContext,
        id: &str,
        force: bool,
    ) -> Result<(), DomainError> {
        let rule = if force {
            rules::SNAPSHOT_FORCE_DELETE
        } else {
            rules::SNAPSHOT_DELETE
        };
        self.end_snapshot(caller, id, rule, force, Removal::Delete)
            .await
    }

    /// A delete, or an unmanage (`removal`): the same rules, then the backend removes
    /// the data or lets it go.
    pub(super) async fn end_snapshot(
        &self,
        caller: &RequestContext,
        id: &str,
        rule: &'static str,
        force: bool,
        removal: Removal,
    ) -> Result<(), DomainError> {
        let found = self.snapshot_under_rule(caller, id, rule).await?;
        let volume = self
            .store
            .get_volume_brief(found.volume_id)
            .await?
            .ok_or_else(|| DomainError::VolumeNotFound(found.volume_id.to_string()))?;
        self.ensure_not_frozen(&volume).await?;
        if found.group_snapshot_id.is_some() {
            // Cinder's condition: a group snapshot's snapshots go only with it.
            return Err(DomainError::SnapshotDeleteRefused);
        }
        match self
            .store
            .begin_snapshot_delete(found.id, force, self.clock.now())
            .await?
        {
            Outcome::Done(()) => {}
            Outcome::Gone => return Err(snapshot_not_found(id)),
            Outcome::Refused(SnapshotDeleteRefusal::SourceOfCreating(creating)) => {
                return Err(DomainError::SourceOfCreatingVolume {
                    snapshot: Some(found.id),
                    volume: found.volume_id,
                    creating,
                })
            }
            Outcome::Refused(SnapshotDeleteRefusal::Status(_)) => {
                return Err(DomainError::SnapshotDeleteRefused)
            }
        }
        let service = self.clone();
        let id = found.id;
        crate::origin::spawn(async move { service.end_snapshot_data(&volume, id, removal).await })
            .await
            .map_err(|e| DomainError::Interrupted {
                what: "snapshot deletion",
                detail: e.to_string(),
            })??;
        Ok(())
    }

    /// Removes a `deleting` snapshot's data, then its record; whether it is gone (a
    /// backend failure leaves it `error_deleting`; a snapshot the backend still needs,
    /// such as one with clones, goes back to `available`, as in Cinder).
    pub(super) async fn remove_snapshot_data(
        &self,
        volume: &Volume,
        id: SnapshotId,
    ) -> Result<bool, DomainError> {
        self.end_snapshot_data(volume, id, Removal::Delete).await
    }

    async fn end_snapshot_data(
        &self,
        volume: &Volume,
        id: SnapshotId,
        removal: Removal,
    ) -> Result<bool, DomainError> {
        let result = match (self.backend_of(volume), removal) {
            (Ok(backend), Removal::Delete) => {
                backend
                    .driver
                    .delete_snapshot(volume.storage_id(), id)
                    .await
            }
            (Ok(backend), Removal::Unmanage) => {
                backend
                    .driver
                    .unmanage_snapshot(volume.storage_id(), id)
                    .await
            }
            (Err(err), _) => Err(BackendError::Failed(err.to_string())),
        };
        let now = self.clock.now();
        if let Err(BackendError::Busy(reason)) = &result {
            tracing::warn!(snapshot_id = %id, error = %reason, "the snapshot is busy; not deleted");
            let (from, to) = (SnapshotStatus::Deleting, SnapshotStatus::Available);
            self.store.transition_snapshot(id, from, to, now).await?;
            let why = (action::SNAPSHOT_DELETE, detail::SNAPSHOT_IS_BUSY);
            self.tell_owner(id, why).await?;
            return Ok(false);
        }
        if let Err(reason) = result {
            tracing::warn!(snapshot_id = %id, error = %reason, "backend could not delete the snapshot");
            let (from, to) = (SnapshotStatus::Deleting, SnapshotStatus::ErrorDeleting);
            self.store.transition_snapshot(id, from, to, now).await?;
            let why = (action::SNAPSHOT_DELETE, detail::SNAPSHOT_DELETE_ERROR);
            self.tell_owner(id, why).await?;
            return Ok(false);
        }
        self.store.finish_snapshot_delete(id, now).await?;
        Ok(true)
    }

    /// `os-reset_status` (admins).
    pub async fn reset_snapshot_status(
        &self,
        caller: &RequestContext,
        id: &str,
        status: SnapshotStatus,
    ) -> Result<(), DomainError> {
        let found = self
            .snapshot_under_rule(caller, id, rules::SNAPSHOT_RESET_STATUS)
            .await?;
        self.store
            .reset_snapshot_status(found.id, status, self.clock.now())
            .await?
            .found()
            .ok_or_else(|| snapshot_not_found(id))
    }

    /// `os-update_snapshot_status`.
    pub async fn update_snapshot_status(
        &self,
        caller: &RequestContext,
        id: &str,
        status: SnapshotStatus,
        progress: Option<String>,
    ) -> Result<(), DomainError> {
        let found = self
            .snapshot_under_rule(caller, id, rules::SNAPSHOT_UPDATE_STATUS)
            .await?;
        match self
            .store
            .update_snapshot_status(found.id, status, progress, self.clock.now())
            .await?
        {
            Outcome::Done(()) => Ok(()),
            Outcome::Gone => Err(snapshot_not_found(id)),
            Outcome::Refused(SnapshotStatusRefusal::Status(current)) => {
                Err(DomainError::SnapshotStatusUpdate {
                    current,
                    requested: None,
                })
            }
            Outcome::Refused(SnapshotStatusRefusal::Change { current, requested }) => {
                Err(DomainError::SnapshotStatusUpdate {
                    current,
                    requested: Some(requested),
                })
            }
        }
    }

    pub async fn snapshot_metadata(
        &self,
        caller: &RequestContext,
        id: &str,
    ) -> Result<BTreeMap<String, String>, DomainError> {
        let found = self
            .snapshot_under_rule(caller, id, rules::SNAPSHOT_METADATA_GET)
            .await?;
        Ok(found.metadata)
    }

    /// One key of the snapshot's metadata; a missing key is 404.
    pub async fn snapshot_metadata_item(
        &self,
        caller: &RequestContext,
        id: &str,
        key: &str,
    ) -> Result<String, DomainError> {
        let mut found = self
            .snapshot_under_rule(caller, id, rules::SNAPSHOT_METADATA_GET)
            .await?;
        found
            .metadata
            .remove(key)
            .ok_or_else(|| DomainError::SnapshotMetadataKeyNotFound {
                snapshot: found.id,
                key: key.to_owned(),
            })
    }

    pub async fn change_snapshot_metadata(
        &self,
        caller: &RequestContext,
        id: &str,
        change: MetadataChange,
    ) -> Result<BTreeMap<String, String>, DomainError> {
        let rule = match change {
            MetadataChange::Remove(_) => rules::SNAPSHOT_METADATA_DELETE,
            _ => rules::SNAPSHOT_METADATA_UPDATE,
        };
        let found = self.snapshot_under_rule(caller, id, rule).await?;
        if let MetadataChange::Merge(items) | MetadataChange::Replace(items) = &change {
            super::volume_metadata::metadata_fits(items)?;
        }
        match self
            .store
            .change_snapshot_metadata(found.id, &change, self.clock.now())
            .await?
        {
            Outcome::Done(metadata) => Ok(metadata),
            Outcome::Gone => Err(snapshot_not_found(id)),
            Outcome::Refused(MetadataRefusal::TooManyItems(count)) => {
                Err(DomainError::TooManyMetadataItems(count))
            }
            Outcome::Refused(MetadataRefusal::NoSuchKey(key)) => {
                Err(DomainError::SnapshotMetadataKeyNotFound {
                    snapshot: found.id,
                    key,
                })
            }
        }
    }
}

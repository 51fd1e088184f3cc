//! Group snapshots (`/group_snapshots`, 3.14+), as Cinder's `group/api.py` runs them: a
//! snapshot of every member recorded at once (one quota check for them all), then taken
//! through the backend member after member; a group snapshot is deleted with its
//! snapshots, and its snapshots only with it.

use super::group_members::group_not_found;
use super::Service;
use crate::domain::error::GroupError;
use crate::domain::group::GroupSortKey;
use crate::domain::group_snapshot::{
    self, GroupSnapshot, GroupSnapshotFilters, GroupSnapshotStatus, MemberSnapshot,
    NewGroupSnapshot,
};
use crate::domain::ids::GroupSnapshotId;
use crate::domain::paging::Page;
use crate::domain::quota::QuotaOwner;
use crate::domain::snapshot::SnapshotStatus;
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::policy::{rules, Target};
use crate::store::GroupSnapshotRefusal;

pub(super) fn group_snapshot_not_found(id: &str) -> DomainError {
    GroupError::SnapshotNotFound(id.to_owned()).into()
}

impl Service {
    /// A group snapshot the caller may see: another project's is "not found" to
    /// non-admins.
    pub async fn get_group_snapshot(
        &self,
        caller: &RequestContext,
        id: &str,
    ) -> Result<GroupSnapshot, DomainError> {
        let uuid = GroupSnapshotId::parse(id).ok_or_else(|| group_snapshot_not_found(id))?;
        let found = self.store.get_group_snapshot(uuid).await?;
        let found = found
            .filter(|g| !caller.is_project_scoped() || g.project_id == caller.project_id)
            .ok_or_else(|| group_snapshot_not_found(id))?;
        let target = Target::project(&found.project_id);
        self.policy
            .enforce(rules::GROUP_SNAPSHOT_GET, caller, &target)?;
        Ok(found)
    }

    /// Whether the caller sees a group snapshot's `project_id` (3.58+).
    pub fn may_see_group_snapshot_project(&self, caller: &RequestContext) -> bool {
        let target = Target::caller(caller);
        self.policy
            .allows(rules::GROUP_SNAPSHOT_PROJECT_ATTRIBUTE, caller, &target)
    }

    pub async fn list_group_snapshots(
        &self,
        caller: &RequestContext,
        mut filters: GroupSnapshotFilters,
        all_tenants: bool,
        page: &Page<GroupSortKey>,
    ) -> Result<Vec<GroupSnapshot>, DomainError> {
        let target = Target::caller(caller);
        self.policy
            .enforce(rules::GROUP_SNAPSHOT_GET_ALL, caller, &target)?;
        filters.project_id = caller.listing_project(all_tenants, filters.project_id.take());
        if let Some(marker) = page.marker {
            let found = self.store.get_group_snapshot(marker.into()).await?;
            let owner = found.as_ref().map(|g| g.project_id.as_str());
            super::check_marker(marker, owner, filters.project_id.as_ref())?;
        }
        Ok(self.store.list_group_snapshots(&filters, page).await?)
    }

    /// Snapshots every member of a group: all recorded `creating` (if each member can
    /// be snapshotted and the quota has room for all), then taken one after another
    /// through the backend; the group snapshot ends `available`, or `error` when a
    /// member's snapshot failed.
    pub async fn create_group_snapshot(
        &self,
        caller: &RequestContext,
        group_id: &str,
        name: Option<String>,
        description: Option<String>,
    ) -> Result<GroupSnapshot, DomainError> {
        let group = self.get_group(caller, group_id).await?;
        let target = Target::project(&group.project_id);
        self.policy
            .enforce(rules::GROUP_SNAPSHOT_CREATE, caller, &target)?;
        let new = NewGroupSnapshot {
            id: GroupSnapshotId::generate(),
            group_id: group.id,
            user_id: caller.user_id.clone(),
            project_id: caller.project_id.clone(),
            name,
            description,
            created_at: self.clock.now(),
        };
        let owner = QuotaOwner {
            project_id: group.project_id.clone(),
            type_name: String::new(),
            defaults: self.settings.quota_defaults.clone(),
        };
        let members = match self.store.insert_group_snapshot(&new, &owner).await? {
            Outcome::Done(members) => members,
            Outcome::Gone => return Err(group_not_found(group_id)),
            Outcome::Refused(GroupSnapshotRefusal::Group(reason)) => {
                return Err(GroupError::Invalid(reason).into())
            }
            Outcome::Refused(GroupSnapshotRefusal::Member(reason)) => {
                return Err(GroupError::InvalidMember(reason).into())
            }
            Outcome::Refused(GroupSnapshotRefusal::OverQuota(over)) => {
                return Err(DomainError::OverQuota(over))
            }
        };
        // The backend work runs to its end even if the client goes away.
        let service = self.clone();
        let id = new.id;
        let host = group.host.clone();
        crate::origin::spawn(async move {
            let all_taken = service.take_member_snapshots(host, &members).await?;
            let status = if all_taken {
                GroupSnapshotStatus::Available
            } else {
                GroupSnapshotStatus::Error
            };
            let now = service.clock.now();
            service
                .store
                .finish_group_snapshot_create(id, status, now)
                .await?;
            Ok::<(), DomainError>(())
        })
        .await
        .map_err(|e| DomainError::Interrupted {
            what: "group snapshot",
            detail: e.to_string(),
        })??;
        let id = new.id.to_string();
        self.get_group_snapshot(caller, &id).await
    }

    /// Takes the member snapshots recorded `creating`: together, holding the members'
    /// writes, where the group's backend can (`consistent_group_snapshots`), else one
    /// after another. Whether every one was taken.
    async fn take_member_snapshots(
        &self,
        host: Option<String>,
        members: &[MemberSnapshot],
    ) -> Result<bool, DomainError> {
        let together = members.first().and_then(|first| {
            let backend = self.backend_at(host.as_deref(), first.volume).ok()?;
            backend
                .driver
                .consistent_group_snapshots()
                .then_some(backend)
        });
        if let Some(backend) = together {
            // The backend names each member by its storage id.
            let mut pairs = Vec::with_capacity(members.len());
            for member in members {
                let volume = self.store.get_volume_brief(member.volume).await?;
                let storage = volume.map_or(member.volume, |v| v.storage_id());
                pairs.push((storage, member.snapshot));
            }
            let result = backend.driver.create_consistent_snapshots(&pairs).await;
            if let Err(err) = &result {
                tracing::warn!(error = %err, "backend could not take the group snapshot");
            }
            let to = match result {
                Ok(()) => SnapshotStatus::Available,
                Err(_) => SnapshotStatus::Error,
            };
            let now = self.clock.now();
            for member in members {
                let (from, id) = (SnapshotStatus::Creating, member.snapshot);
                self.store.transition_snapshot(id, from, to, now).await?;
            }
            return Ok(to == SnapshotStatus::Available);
        }
        let mut all_taken = true;
        for member in members {
            let Some(volume) = self.store.get_volume_brief(member.volume).await? else {
                all_taken = false;
                continue;
            };
            self.take_snapshot(volume, member.snapshot).await?;
            let taken = self.store.get_snapshot(member.snapshot).await?;
            all_taken &= taken.is_some_and(|s| s.status == SnapshotStatus::Available);
        }
        Ok(all_taken)
    }

    /// Deletes an `available` or `error` group snapshot with its snapshots (each through
    /// its backend); one that stays leaves the group snapshot `error_deleting`.
    pub async fn delete_group_snapshot(
        &self,
        caller: &RequestContext,
        id: &str,
    ) -> Result<(), DomainError> {
        let found = self.get_group_snapshot(caller, id).await?;
        let target = Target::project(&found.project_id);
        self.policy
            .enforce(rules::GROUP_SNAPSHOT_DELETE, caller, &target)?;
        let now = self.clock.now();
        let members = match self
            .store
            .begin_group_snapshot_delete(found.id, now)
            .await?
        {
            Outcome::Done(members) => members,
            Outcome::Gone => return Err(group_snapshot_not_found(id)),
            Outcome::Refused(()) => {
                let reason = group_snapshot::DELETE_REFUSED.to_owned();
                return Err(GroupError::InvalidSnapshot(reason).into());
            }
        };
        let service = self.clone();
        crate::origin::spawn(async move {
            let mut all_gone = true;
            for member in members {
                let Some(volume) = service.store.get_volume_brief(member.volume).await? else {
                    continue;
                };
                all_gone &= service
                    .remove_snapshot_data(&volume, member.snapshot)
                    .await?;
            }
            let now = service.clock.now();
            if all_gone {
                service
                    .store
                    .finish_group_snapshot_delete(found.id, now)
                    .await?;
            } else {
                let status = GroupSnapshotStatus::ErrorDeleting;
                service
                    .store
                    .set_group_snapshot_status(found.id, status, now)
                    .await?;
            }
            Ok::<(), DomainError>(())
        })
        .await
        .map_err(|e| DomainError::Interrupted {
            what: "group snapshot deletion",
            detail: e.to_string(),
        })?
    }

    /// An admin's `reset_status` (3.19+).
    pub async fn reset_group_snapshot_status(
        &self,
        caller: &RequestContext,
        id: &str,
        status: GroupSnapshotStatus,
    ) -> Result<(), DomainError> {
        let found = self.get_group_snapshot(caller, id).await?;
        let target = Target::project(&found.project_id);
        self.policy
            .enforce(rules::GROUP_SNAPSHOT_RESET_STATUS, caller, &target)?;
        let now = self.clock.now();
        match self
            .store
            .set_group_snapshot_status(found.id, status, now)
            .await?
        {
            Outcome::Done(()) => Ok(()),
            Outcome::Gone => Err(group_snapshot_not_found(id)),
            Outcome::Refused(never) => match never {},
        }
    }
}

//! `create-from-src` (3.14+): a new group made from another group (each member cloned)
//! or from a group snapshot (a volume from each snapshot), as Cinder's `group/api.py`
//! does it: the source's type, volume types and backend; `creating` while the members
//! are made, then `available` (or `error` when a backend failed one). A member refused
//! (quota, status) takes the new group and the members made so far away again.

use super::Service;
use crate::domain::error::GroupError;
use crate::domain::group::{Group, GroupStatus, NewGroup};
use crate::domain::group_snapshot::MemberSnapshot;
use crate::domain::ids::{GroupId, VolumeId};
use crate::domain::volume::VolumeStatus;
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::policy::{rules, Target};
use crate::service::volumes::CreateVolume;

/// What a new group is made from (ids as the caller wrote them).
#[derive(Debug, Clone)]
pub enum GroupSource {
    Group(String),
    Snapshot(String),
}

/// One member to make in the new group.
#[derive(Debug, Clone, Copy)]
enum MemberSource {
    Clone(VolumeId),
    FromSnapshot(MemberSnapshot),
}

impl Service {
    pub async fn create_group_from_source(
        &self,
        caller: &RequestContext,
        name: Option<String>,
        description: Option<String>,
        source: GroupSource,
    ) -> Result<Group, DomainError> {
        self.policy
            .enforce(rules::GROUP_CREATE, caller, &Target::caller(caller))?;
        let (origin, members, snapshot_id) = match &source {
            GroupSource::Group(id) => {
                let origin = self.get_group(caller, id).await?;
                let members = self.store.group_volumes(origin.id).await?;
                let members: Vec<MemberSource> =
                    members.into_iter().map(MemberSource::Clone).collect();
                (origin, members, None)
            }
            GroupSource::Snapshot(id) => {
                let snapshot = self.get_group_snapshot(caller, id).await?;
                let origin = self
                    .get_group(caller, &snapshot.group_id.to_string())
                    .await?;
                let members = self.store.group_snapshot_members(snapshot.id).await?;
                let members: Vec<MemberSource> = members
                    .into_iter()
                    .map(MemberSource::FromSnapshot)
                    .collect();
                (origin, members, Some(snapshot.id))
            }
        };
        if members.is_empty() {
            let reason = match source {
                GroupSource::Group(_) => "Source Group is empty. No group will be created.",
                GroupSource::Snapshot(_) => "Group snapshot is empty. No group will be created.",
            };
            return Err(GroupError::Invalid(reason.to_owned()).into());
        }
        let new = NewGroup {
            id: GroupId::generate(),
            user_id: caller.user_id.clone(),
            project_id: caller.project_id.clone(),
            host: origin.host.clone(),
            availability_zone: origin.availability_zone.clone(),
            status: GroupStatus::Creating,
            name,
            description,
            group_type_id: origin.group_type_id,
            volume_type_ids: origin.volume_type_ids.clone(),
            source_group_id: snapshot_id.is_none().then_some(origin.id),
            group_snapshot_id: snapshot_id,
            created_at: self.clock.now(),
        };
        if new.host.is_none() {
            let reason = format!("No valid host to create group {}.", new.id);
            return Err(GroupError::Invalid(reason).into());
        }
        let group = self.record_group(&new).await?;
        let mut all_made = true;
        for member in members {
            match self.make_member(caller, member, &group).await {
                Ok(made) => all_made &= made,
                Err(err) => {
                    let token = caller.auth_token.as_deref();
                    self.take_back_group(group.id, token).await?;
                    return Err(err);
                }
            }
        }
        let status = if all_made {
            GroupStatus::Available
        } else {
            GroupStatus::Error
        };
        let now = self.clock.now();
        self.store
            .finish_group_create(group.id, status, now)
            .await?;
        Ok(group)
    }

    /// Makes one member of `group` from its source: whether the backend made it.
    async fn make_member(
        &self,
        caller: &RequestContext,
        member: MemberSource,
        group: &Group,
    ) -> Result<bool, DomainError> {
        let volume = match member {
            MemberSource::Clone(volume) => volume,
            MemberSource::FromSnapshot(taken) => taken.volume,
        };
        let Some(source) = self.store.get_volume_brief(volume).await? else {
            return Err(crate::service::volume_not_found(volume));
        };
        let mut request = CreateVolume {
            name: source.name.clone(),
            description: source.description.clone(),
            volume_type: Some(source.volume_type_id.to_string()),
            availability_zone: Some(group.availability_zone.clone()),
            group_id: Some(group.id.to_string()),
            auth_token: caller.auth_token.clone(),
            ..CreateVolume::default()
        };
        match member {
            MemberSource::Clone(volume) => {
                request.size = Some(source.size);
                request.source_volid = Some(volume.to_string());
            }
            MemberSource::FromSnapshot(taken) => {
                request.snapshot_id = Some(taken.snapshot.to_string());
            }
        }
        let made = self.create_volume(caller, request, None).await?;
        Ok(made.status != VolumeStatus::Error)
    }

    /// Undoes a group being made: its volumes and its record go.
    async fn take_back_group(&self, id: GroupId, token: Option<&str>) -> Result<(), DomainError> {
        let now = self.clock.now();
        if let Outcome::Done(members) = self.store.begin_group_delete(id, true, now).await? {
            self.remove_group_members(id, members, token).await?;
        }
        Ok(())
    }
}

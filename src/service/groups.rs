//! Generic volume groups (`/groups`, 3.13+), as Cinder's `group/api.py` runs them: a
//! group is placed on one backend serving all its volume types (or ends in `error` when
//! none does), counts against the project's `groups` quota, changes its members all at
//! once, and is deleted with its volumes only when asked to (`delete-volumes`).

use std::collections::BTreeMap;

use super::group_members::group_not_found;
use super::Service;
use crate::domain::error::GroupError;
use crate::domain::group::{
    self, Group, GroupFilters, GroupSortKey, GroupStatus, MembershipRefusal, NewGroup,
};
use crate::domain::group_type::GroupType;
use crate::domain::ids::{GroupId, GroupTypeId, VolumeId, VolumeTypeId};
use crate::domain::paging::Page;
use crate::domain::quota::QuotaOwner;
use crate::domain::volume_type::VolumeType;
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::policy::{rules, Target};
use crate::store::{GroupChange, GroupUpdateRefusal};

/// A new group as asked for.
#[derive(Debug, Clone)]
pub struct CreateGroup {
    pub name: Option<String>,
    pub description: Option<String>,
    /// A group type's id or name.
    pub group_type: String,
    /// Volume types' ids or names.
    pub volume_types: Vec<String>,
    pub availability_zone: Option<String>,
}

/// A change of a group as asked for (`add_volumes`, `remove_volumes`: comma lists).
#[derive(Debug, Clone, Default)]
pub struct UpdateGroup {
    pub name: Option<String>,
    pub description: Option<String>,
    pub add_volumes: Option<String>,
    pub remove_volumes: Option<String>,
}

/// A type spec's value that asks for something (as `specs_of` keeps them).
fn asking(specs: &crate::domain::group_type::GroupSpecs) -> BTreeMap<String, String> {
    specs
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.clone()?)))
        .collect()
}

impl Service {
    /// Whether the caller sees a group's `project_id` (3.58+).
    pub fn may_see_group_project(&self, caller: &RequestContext, group: &Group) -> bool {
        let target = Target::project(&group.project_id);
        self.policy
            .allows(rules::GROUP_PROJECT_ATTRIBUTE, caller, &target)
    }

    pub async fn list_groups(
        &self,
        caller: &RequestContext,
        mut filters: GroupFilters,
        all_tenants: bool,
        page: &Page<GroupSortKey>,
    ) -> Result<Vec<Group>, DomainError> {
        self.policy
            .enforce(rules::GROUP_GET_ALL, caller, &Target::caller(caller))?;
        filters.project_id = caller.listing_project(all_tenants, filters.project_id.take());
        if let Some(marker) = page.marker {
            let found = self.store.get_group(marker.into()).await?;
            let owner = found.as_ref().map(|g| g.project_id.as_str());
            super::check_marker(marker, owner, filters.project_id.as_ref())?;
        }
        Ok(self.store.list_groups(&filters, page).await?)
    }

    /// The ids of a group's live volumes (`list_volume`).
    pub async fn group_member_ids(&self, group: &Group) -> Result<Vec<VolumeId>, DomainError> {
        Ok(self.store.group_volumes(group.id).await?)
    }

    /// A group type by id or else name, as Cinder's group create looks it up (any
    /// type, public or not).
    async fn group_type_named(&self, name_or_id: &str) -> Result<GroupType, DomainError> {
        if let Some(id) = GroupTypeId::parse(name_or_id) {
            if let Some(found) = self.store.get_group_type(id).await? {
                return Ok(found);
            }
        }
        let by_name = self.store.get_group_type_by_name(name_or_id).await?;
        by_name.ok_or_else(|| {
            let name = name_or_id.to_owned();
            match GroupTypeId::parse(name_or_id) {
                Some(_) => GroupError::TypeNotFound(name).into(),
                None => GroupError::TypeNameNotFound(name).into(),
            }
        })
    }

    /// Volume types by id or else name, any of them (Cinder reads them elevated).
    async fn volume_types_named(&self, names: &[String]) -> Result<Vec<VolumeType>, DomainError> {
        let mut found = Vec::with_capacity(names.len());
        for name in names {
            let by_id = match VolumeTypeId::parse(name) {
                Some(id) => self.store.get_volume_type(id).await?,
                None => None,
            };
            let volume_type = match by_id {
                Some(t) => t,
                None => match self.store.get_volume_type_by_name(name).await? {
                    Some(t) => t,
                    None if VolumeTypeId::parse(name).is_some() => {
                        return Err(DomainError::VolumeTypeNotFound(name.clone()))
                    }
                    None => return Err(DomainError::VolumeTypeNameNotFound(name.clone())),
                },
            };
            found.push(volume_type);
        }
        Ok(found)
    }

    /// Creates a group on a backend that serves all its volume types, `available`; or
    /// in `error` on none when no backend does (as Cinder's scheduler leaves it).
    pub async fn create_group(
        &self,
        caller: &RequestContext,
        request: CreateGroup,
    ) -> Result<Group, DomainError> {
        self.policy
            .enforce(rules::GROUP_CREATE, caller, &Target::caller(caller))?;
        let volume_types = self.volume_types_named(&request.volume_types).await?;
        let group_type = self.group_type_named(&request.group_type).await?;
        let zone = request
            .availability_zone
            .as_deref()
            .filter(|z| !z.is_empty());
        if let Some(zone) = zone {
            if !self.backends.iter().any(|b| b.availability_zone == zone) {
                return Err(DomainError::InvalidAvailabilityZone(zone.to_owned()));
            }
        }
        let specs = asking(&group_type.group_specs);
        let fits = self.group_candidates(&volume_types, &specs, zone).await?;
        let backend = fits.first().and_then(|i| self.backends.get(*i));
        let availability_zone = zone
            .map(str::to_owned)
            .or_else(|| backend.map(|b| b.availability_zone.clone()))
            .or_else(|| self.availability_zones().into_iter().next())
            .unwrap_or_else(|| "nova".to_owned());
        let new = NewGroup {
            id: GroupId::generate(),
            user_id: caller.user_id.clone(),
            project_id: caller.project_id.clone(),
            host: backend.map(|b| b.volume_host()),
            availability_zone,
            status: match backend {
                Some(_) => GroupStatus::Available,
                None => GroupStatus::Error,
            },
            name: request.name,
            description: request.description,
            group_type_id: group_type.id,
            volume_type_ids: volume_types.iter().map(|t| t.id).collect(),
            source_group_id: None,
            group_snapshot_id: None,
            created_at: self.clock.now(),
        };
        if backend.is_none() {
            tracing::warn!(group_id = %new.id, "no backend can hold the group");
        }
        self.record_group(&new).await
    }

    /// Records a new group under the project's `groups` quota; the group as stored.
    pub(super) async fn record_group(&self, new: &NewGroup) -> Result<Group, DomainError> {
        let owner = QuotaOwner {
            project_id: new.project_id.clone(),
            type_name: String::new(),
            defaults: self.settings.quota_defaults.clone(),
        };
        match self.store.insert_group(new, &owner).await? {
            Outcome::Done(()) => {}
            Outcome::Refused(over) => return Err(DomainError::OverQuota(over)),
            Outcome::Gone => {
                return Err(GroupError::TypeNotFound(new.group_type_id.to_string()).into())
            }
        }
        let id = new.id.to_string();
        self.store
            .get_group(new.id)
            .await?
            .ok_or_else(|| group_not_found(&id))
    }

    /// Renames, re-describes, and adds or removes members (Cinder's rules, in its
    /// order); the group ends `available`.
    pub async fn update_group(
        &self,
        caller: &RequestContext,
        id: &str,
        request: UpdateGroup,
    ) -> Result<(), DomainError> {
        let found = self.get_group(caller, id).await?;
        let target = Target::project(&found.project_id);
        self.policy.enforce(rules::GROUP_UPDATE, caller, &target)?;
        let change = GroupChange {
            name: request.name,
            description: request.description,
            add: group::id_list(request.add_volumes.as_deref()),
            remove: group::id_list(request.remove_volumes.as_deref()),
        };
        let now = self.clock.now();
        match self.store.update_group(found.id, &change, now).await? {
            Outcome::Done(()) => Ok(()),
            Outcome::Gone => Err(group_not_found(id)),
            Outcome::Refused(GroupUpdateRefusal::Membership(refusal)) => {
                Err(membership_error(&refusal, found.id))
            }
            Outcome::Refused(GroupUpdateRefusal::NothingToChange) => {
                Err(GroupError::Invalid(format!(
                    "Cannot update group {} because no valid name, description, add_volumes, \
                     or remove_volumes were provided.",
                    found.id
                ))
                .into())
            }
            Outcome::Refused(GroupUpdateRefusal::NotAvailable) => {
                Err(GroupError::Invalid("Group status must be available.".to_owned()).into())
            }
        }
    }

    /// An admin's `reset_status` (3.20+): any of Cinder's group statuses.
    pub async fn reset_group_status(
        &self,
        caller: &RequestContext,
        id: &str,
        status: GroupStatus,
    ) -> Result<(), DomainError> {
        let found = self.get_group(caller, id).await?;
        let target = Target::project(&found.project_id);
        self.policy
            .enforce(rules::GROUP_RESET_STATUS, caller, &target)?;
        match self
            .store
            .set_group_status(found.id, status, self.clock.now())
            .await?
        {
            Outcome::Done(()) => Ok(()),
            Outcome::Gone => Err(group_not_found(id)),
            Outcome::Refused(never) => match never {},
        }
    }

    /// Deletes a group; with `delete_volumes`, its volumes too (their data first, then
    /// the group's record). A member that cannot be deleted leaves the group `error`.
    pub async fn delete_group(
        &self,
        caller: &RequestContext,
        id: &str,
        delete_volumes: bool,
    ) -> Result<(), DomainError> {
        let found = self.get_group(caller, id).await?;
        let target = Target::project(&found.project_id);
        self.policy.enforce(rules::GROUP_DELETE, caller, &target)?;
        let now = self.clock.now();
        let members = match self
            .store
            .begin_group_delete(found.id, delete_volumes, now)
            .await?
        {
            Outcome::Done(members) => members,
            Outcome::Gone => return Err(group_not_found(id)),
            Outcome::Refused(refusal) => {
                return Err(GroupError::Invalid(refusal.message(found.id)).into())
            }
        };
        if found.host.is_none() {
            return Ok(());
        }
        // The backend work runs to its end even if the client goes away, so the group
        // never stays `deleting` (as a volume's delete).
        let service = self.clone();
        let token = caller.auth_token.clone();
        crate::origin::spawn(async move {
            service
                .remove_group_members(found.id, members, token.as_deref())
                .await
        })
        .await
        .map_err(|e| DomainError::Interrupted {
            what: "group deletion",
            detail: e.to_string(),
        })?
    }

    /// The background half of a group delete: each member's data and record, then the
    /// group's record; the group is left `error` if a member stays.
    pub(super) async fn remove_group_members(
        &self,
        group: GroupId,
        members: Vec<VolumeId>,
        token: Option<&str>,
    ) -> Result<(), DomainError> {
        for member in members {
            let Some(volume) = self.store.get_volume_brief(member).await? else {
                continue;
            };
            self.remove_from_backend(volume, token).await?;
        }
        let now = self.clock.now();
        if self.store.group_volumes(group).await?.is_empty() {
            self.store.finish_group_delete(group, now).await?;
        } else {
            tracing::warn!(group_id = %group, "a member volume stayed; the group is left in error");
            self.store
                .set_group_status(group, GroupStatus::Error, now)
                .await?;
        }
        Ok(())
    }
}

fn membership_error(refusal: &MembershipRefusal, group: GroupId) -> DomainError {
    GroupError::InvalidMember(refusal.message(group)).into()
}

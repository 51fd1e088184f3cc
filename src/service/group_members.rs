//! The group side of a volume: finding a group the caller may see, and checking and
//! placing a volume that is created in one (on the group's backend, as Cinder's scheduler
//! does), so that `volumes` and `groups` both use this and not each other.

use super::placement::Placement;
use super::volume_sources::Origin;
use super::Service;
use crate::domain::error::GroupError;
use crate::domain::group::{self, Group};
use crate::domain::ids::GroupId;
use crate::domain::quota::QuotaOwner;
use crate::domain::volume::NewVolume;
use crate::domain::volume_type::VolumeType;
use crate::domain::{DomainError, RequestContext};
use crate::policy::{rules, Target};

pub(super) fn group_not_found(id: &str) -> DomainError {
    GroupError::NotFound(id.to_owned()).into()
}

/// Cinder's refusal of a new member when the group is not `available` or `creating`.
pub(super) fn unavailable_for_volumes() -> DomainError {
    GroupError::Invalid(
        "Originating group status must be one of 'available, creating' values".into(),
    )
    .into()
}

impl Service {
    /// A group the caller may see: another project's is "not found" to non-admins.
    pub async fn get_group(&self, caller: &RequestContext, id: &str) -> Result<Group, DomainError> {
        let uuid = GroupId::parse(id).ok_or_else(|| group_not_found(id))?;
        let found = self.store.get_group(uuid).await?;
        let found = found
            .filter(|g| !caller.is_project_scoped() || g.project_id == caller.project_id)
            .ok_or_else(|| group_not_found(id))?;
        self.policy.enforce(
            rules::GROUP_GET,
            caller,
            &Target::project(&found.project_id),
        )?;
        Ok(found)
    }

    /// The group a new volume is created in, checked as Cinder does: visible to the
    /// caller, and allowing `volume_type`.
    pub(super) async fn group_for_new_volume(
        &self,
        caller: &RequestContext,
        id: &str,
        volume_type: &VolumeType,
    ) -> Result<Group, DomainError> {
        let found = self.get_group(caller, id).await?;
        if !found.volume_type_ids.contains(&volume_type.id) {
            return Err(GroupError::InvalidInput(format!(
                "Invalid volume_type provided: {} (requested type must be supported by this \
                 group).",
                volume_type.id
            ))
            .into());
        }
        if !group::accepts_new_volumes(found.status) {
            return Err(unavailable_for_volumes());
        }
        Ok(found)
    }

    /// Records a volume made in `group`: on the group's backend if it passes the
    /// filters (and holds the source, when there is one), else in `error` on none.
    pub(super) async fn record_in_group(
        &self,
        new: &mut NewVolume,
        owner: &QuotaOwner,
        placement: &Placement<'_>,
        origin: Option<&Origin>,
        group: &Group,
    ) -> Result<bool, DomainError> {
        // In a group: on the group's backend, if it passes the filters, or nowhere.
        if let Some(origin) = origin {
            origin.check_zone(placement.availability_zone)?;
        }
        let fits = self.candidates(placement, &[]).await?;
        let backend = fits
            .iter()
            .filter_map(|i| self.backends.get(*i))
            .find(|b| group.host.as_deref() == Some(b.volume_host().as_str()));
        let beside_source = match (origin, backend) {
            (Some(origin), Some(b)) => self
                .backend_of(&origin.volume)
                .is_ok_and(|o| o.service_uuid == b.service_uuid),
            _ => true,
        };
        let backend = backend.filter(|_| beside_source);
        return self.record_on(new, owner, backend).await;
    }
}

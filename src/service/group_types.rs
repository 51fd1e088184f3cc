//! Group types and their specs (`/group_types`, 3.11+), under Cinder's
//! `group:group_types*` rules: anyone lists and shows the public ones; admins make,
//! change and delete them, and see their specs.

use super::Service;
use crate::domain::error::GroupError;
use crate::domain::group_type::{
    GroupSpecs, GroupType, GroupTypeSortKey, GroupTypeUpdate, NewGroupType,
};
use crate::domain::ids::GroupTypeId;
use crate::domain::paging::Page;
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::policy::{rules, Target};
use crate::store::StoreError;

/// A new group type as asked for.
#[derive(Debug, Clone)]
pub struct CreateGroupType {
    pub name: String,
    pub description: Option<String>,
    pub is_public: bool,
    pub group_specs: GroupSpecs,
}

fn not_found(id: &str) -> DomainError {
    GroupError::TypeNotFound(id.to_owned()).into()
}

impl Service {
    fn may_group_types(
        &self,
        caller: &RequestContext,
        rule: &'static str,
    ) -> Result<(), DomainError> {
        self.policy.enforce(rule, caller, &Target::caller(caller))
    }

    /// Whether the caller sees group types' specs (`group:access_group_types_specs`).
    pub fn may_see_group_specs(&self, caller: &RequestContext) -> bool {
        let target = Target::caller(caller);
        self.policy
            .allows(rules::GROUP_TYPE_SHOW_SPECS, caller, &target)
    }

    /// A group type the caller may see: any for admins, public ones for the others (as
    /// Cinder's `group_type_get` filters them).
    pub async fn get_group_type(
        &self,
        caller: &RequestContext,
        id: &str,
    ) -> Result<GroupType, DomainError> {
        if id == "default" {
            // Cinder reads `default_group_type`, unset unless configured: none here.
            return Err(GroupError::NoDefaultType.into());
        }
        let uuid = GroupTypeId::parse(id).ok_or_else(|| not_found(id))?;
        let found = self.store.get_group_type(uuid).await?;
        found
            .filter(|t| t.is_public || caller.is_admin)
            .ok_or_else(|| not_found(id))
    }

    /// One page of group types: admins choose `is_public` (`None`: all), the others see
    /// the public ones.
    pub async fn list_group_types(
        &self,
        caller: &RequestContext,
        is_public: Option<bool>,
        page: &Page<GroupTypeSortKey>,
    ) -> Result<Vec<GroupType>, DomainError> {
        let is_public = if caller.is_admin {
            is_public
        } else {
            Some(true)
        };
        if let Some(marker) = page.marker {
            let found = self.store.get_group_type(marker.into()).await?;
            if found.is_none_or(|t| is_public.is_some_and(|p| p != t.is_public)) {
                return Err(DomainError::MarkerNotFound(marker.to_string()));
            }
        }
        Ok(self.store.list_group_types(is_public, page).await?)
    }

    pub async fn create_group_type(
        &self,
        caller: &RequestContext,
        new: CreateGroupType,
    ) -> Result<GroupType, DomainError> {
        self.may_group_types(caller, rules::GROUP_TYPE_CREATE)?;
        let new = NewGroupType {
            id: GroupTypeId::generate(),
            name: new.name,
            description: new.description,
            is_public: new.is_public,
            group_specs: new.group_specs,
            created_at: self.clock.now(),
        };
        match self.store.create_group_type(&new).await {
            Ok(()) => {}
            Err(StoreError::Conflict(_)) => return Err(GroupError::TypeExists(new.name).into()),
            Err(err) => return Err(err.into()),
        }
        self.store
            .get_group_type(new.id)
            .await?
            .ok_or_else(|| not_found(&new.id.to_string()))
    }

    pub async fn update_group_type(
        &self,
        caller: &RequestContext,
        id: &str,
        update: GroupTypeUpdate,
    ) -> Result<GroupType, DomainError> {
        self.may_group_types(caller, rules::GROUP_TYPE_UPDATE)?;
        update.check().map_err(GroupError::InvalidTypeUpdate)?;
        let uuid = GroupTypeId::parse(id).ok_or_else(|| not_found(id))?;
        let now = self.clock.now();
        match self.store.update_group_type(uuid, &update, now).await {
            Ok(Outcome::Done(())) => {}
            Ok(Outcome::Gone) => return Err(not_found(id)),
            Ok(Outcome::Refused(never)) => match never {},
            Err(StoreError::Conflict(_)) => {
                let name = update.name.unwrap_or_default();
                return Err(GroupError::TypeExists(name).into());
            }
            Err(err) => return Err(err.into()),
        }
        self.store
            .get_group_type(uuid)
            .await?
            .ok_or_else(|| not_found(id))
    }

    pub async fn delete_group_type(
        &self,
        caller: &RequestContext,
        id: &str,
    ) -> Result<(), DomainError> {
        self.may_group_types(caller, rules::GROUP_TYPE_DELETE)?;
        let uuid = GroupTypeId::parse(id).ok_or_else(|| not_found(id))?;
        match self.store.delete_group_type(uuid, self.clock.now()).await? {
            Outcome::Done(()) => Ok(()),
            Outcome::Gone => Err(not_found(id)),
            Outcome::Refused(_) => Err(GroupError::TypeInUse(id.to_owned()).into()),
        }
    }

    /// The specs of a type, under `rule` (Cinder checks the type exists at all, public
    /// or not, for these admin calls).
    async fn group_specs_of(
        &self,
        caller: &RequestContext,
        id: &str,
        rule: &'static str,
    ) -> Result<(GroupTypeId, GroupSpecs), DomainError> {
        self.may_group_types(caller, rule)?;
        let uuid = GroupTypeId::parse(id).ok_or_else(|| not_found(id))?;
        let found = self.store.get_group_type(uuid).await?;
        let found = found.ok_or_else(|| not_found(id))?;
        Ok((uuid, found.group_specs))
    }

    pub async fn list_group_specs(
        &self,
        caller: &RequestContext,
        id: &str,
    ) -> Result<GroupSpecs, DomainError> {
        let rule = rules::GROUP_SPECS_GET_ALL;
        Ok(self.group_specs_of(caller, id, rule).await?.1)
    }

    pub async fn show_group_spec(
        &self,
        caller: &RequestContext,
        id: &str,
        key: &str,
    ) -> Result<Option<String>, DomainError> {
        let (_, mut specs) = self
            .group_specs_of(caller, id, rules::GROUP_SPECS_GET)
            .await?;
        specs.remove(key).ok_or_else(|| {
            let (type_id, key) = (id.to_owned(), key.to_owned());
            GroupError::SpecNotShown { type_id, key }.into()
        })
    }

    /// Adds or replaces specs (`POST`, or `PUT` of `named_key` under `rule`, whose body
    /// must name that key).
    pub async fn set_group_specs(
        &self,
        caller: &RequestContext,
        id: &str,
        specs: &GroupSpecs,
        rule: &'static str,
        named_key: Option<&str>,
    ) -> Result<(), DomainError> {
        let (uuid, _) = self.group_specs_of(caller, id, rule).await?;
        if named_key.is_some_and(|key| !specs.contains_key(key)) {
            return Err(GroupError::SpecBodyMismatch.into());
        }
        match self
            .store
            .set_group_specs(uuid, specs, self.clock.now())
            .await?
        {
            Outcome::Done(()) => Ok(()),
            Outcome::Gone => Err(not_found(id)),
            Outcome::Refused(never) => match never {},
        }
    }

    pub async fn delete_group_spec(
        &self,
        caller: &RequestContext,
        id: &str,
        key: &str,
    ) -> Result<(), DomainError> {
        let rule = rules::GROUP_SPECS_DELETE;
        let (uuid, _) = self.group_specs_of(caller, id, rule).await?;
        match self
            .store
            .delete_group_spec(uuid, key, self.clock.now())
            .await?
        {
            Outcome::Done(()) => Ok(()),
            Outcome::Gone => Err(not_found(id)),
            Outcome::Refused(_) => Err(GroupError::SpecNotFound {
                type_id: id.to_owned(),
                key: key.to_owned(),
            }
            .into()),
        }
    }
}

//! Volume types and extra specs.

use super::Service;
use crate::domain::error::TypeError;
use crate::domain::ids::VolumeTypeId;
use crate::domain::refusal::{
    ExtraSpecsRefusal, SpecRemovalRefusal, TypeAccessRefusal, TypeDeleteRefusal,
};
use crate::domain::volume_type::{
    check_cacheable, check_sharing_specs, ExtraSpecs, InvalidSpec, NewVolumeType, VolumeType,
    VolumeTypeUpdate, USER_VISIBLE_EXTRA_SPECS,
};
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::policy::{rules, Target};
use crate::store::StoreError;

fn type_not_found(id: impl std::fmt::Display) -> DomainError {
    DomainError::VolumeTypeNotFound(id.to_string())
}

fn invalid_spec(spec: InvalidSpec) -> DomainError {
    TypeError::InvalidExtraSpec {
        key: spec.key,
        value: spec.value,
        expected: spec.expected,
    }
    .into()
}

fn type_name_not_found(name: &str) -> DomainError {
    DomainError::VolumeTypeNameNotFound(name.to_owned())
}

fn spec_not_found(type_id: &str, key: &str) -> DomainError {
    DomainError::ExtraSpecNotFound {
        volume_type: type_id.to_owned(),
        key: key.to_owned(),
    }
}

/// A new type as the API received it.
#[derive(Debug, Clone)]
pub struct CreateType {
    pub name: String,
    pub description: Option<String>,
    pub is_public: bool,
    pub extra_specs: ExtraSpecs,
}

/// What a caller may see of a type's specs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecVisibility {
    None,
    UserVisible,
    All,
}

impl SpecVisibility {
    pub fn filter(self, specs: &ExtraSpecs) -> Option<ExtraSpecs> {
        match self {
            SpecVisibility::None => None,
            SpecVisibility::All => Some(specs.clone()),
            SpecVisibility::UserVisible => Some(
                specs
                    .iter()
                    .filter(|(k, _)| USER_VISIBLE_EXTRA_SPECS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
        }
    }
}

impl Service {
    /// A type the caller may see, by id (`default` names the configured default type).
    pub async fn get_volume_type(
        &self,
        caller: &RequestContext,
        id: &str,
    ) -> Result<VolumeType, DomainError> {
        let found = if id == "default" {
            self.default_volume_type(&caller.project_id)
                .await
                .map_err(|e| match e {
                    DomainError::VolumeTypeNameNotFound(_) => type_not_found("default"),
                    other => other,
                })?
        } else {
            let uuid = VolumeTypeId::parse(id).ok_or_else(|| type_not_found(id))?;
            self.visible_type(caller, uuid)
                .await?
                .ok_or_else(|| type_not_found(id))?
        };
        self.policy
            .enforce(rules::TYPE_GET, caller, &Target::caller(caller))?;
        Ok(found)
    }

    async fn visible_type(
        &self,
        caller: &RequestContext,
        id: VolumeTypeId,
    ) -> Result<Option<VolumeType>, DomainError> {
        let found = self.store.get_volume_type(id).await?;
        Ok(found.filter(|t| caller.is_admin || t.visible_to(&caller.project_id)))
    }

    /// Resolves a type the way volume create and retype do: a uuid-looking value is tried
    /// as an id first, then (like everything else) as a name.
    pub async fn resolve_volume_type(
        &self,
        caller: &RequestContext,
        name_or_id: &str,
    ) -> Result<VolumeType, DomainError> {
        let by_id = match VolumeTypeId::parse(name_or_id) {
            Some(id) => self.visible_type(caller, id).await?,
            None => None,
        };
        if let Some(found) = by_id {
            return Ok(found);
        }
        let by_name = self.store.get_volume_type_by_name(name_or_id).await?;
        match by_name.filter(|t| caller.is_admin || t.visible_to(&caller.project_id)) {
            Some(found) => Ok(found),
            None if VolumeTypeId::parse(name_or_id).is_some() => Err(type_not_found(name_or_id)),
            None => Err(type_name_not_found(name_or_id)),
        }
    }

    /// Types the caller may use: public ones and private ones shared with its project;
    /// admins see all, or only public/private ones with `is_public`.
    pub async fn list_volume_types(
        &self,
        caller: &RequestContext,
        is_public: Option<bool>,
    ) -> Result<Vec<VolumeType>, DomainError> {
        self.policy
            .enforce(rules::TYPE_GET_ALL, caller, &Target::caller(caller))?;
        let all = self.store.list_volume_types().await?;
        Ok(all
            .into_iter()
            .filter(|t| {
                if caller.is_admin {
                    is_public.is_none_or(|wanted| t.is_public == wanted)
                } else {
                    t.visible_to(&caller.project_id)
                }
            })
            .collect())
    }

    /// How much of the specs the caller may read.
    pub fn spec_visibility(&self, caller: &RequestContext) -> SpecVisibility {
        let target = Target::caller(caller);
        if !self
            .policy
            .allows(rules::TYPE_ACCESS_EXTRA_SPECS, caller, &target)
        {
            SpecVisibility::None
        } else if self
            .policy
            .allows(rules::EXTRA_SPECS_READ_SENSITIVE, caller, &target)
        {
            SpecVisibility::All
        } else {
            SpecVisibility::UserVisible
        }
    }

    pub fn may_see_qos_specs_id(&self, caller: &RequestContext) -> bool {
        self.policy
            .allows(rules::TYPE_ACCESS_QOS, caller, &Target::caller(caller))
    }

    pub async fn create_volume_type(
        &self,
        caller: &RequestContext,
        new: CreateType,
    ) -> Result<VolumeType, DomainError> {
        self.policy
            .enforce(rules::TYPE_CREATE, caller, &Target::caller(caller))?;
        check_cacheable(&ExtraSpecs::new(), &new.extra_specs)
            .map_err(|_| TypeError::CacheableWithMultiattach)?;
        check_sharing_specs(&new.extra_specs).map_err(invalid_spec)?;
        let id = VolumeTypeId::generate();
        let record = NewVolumeType {
            id,
            name: new.name.clone(),
            description: new.description,
            is_public: new.is_public,
            extra_specs: new.extra_specs,
            created_at: self.clock.now(),
        };
        match self.store.create_volume_type(&record).await {
            Ok(()) => {}
            Err(StoreError::Conflict(_)) => return Err(TypeError::Exists(new.name).into()),
            Err(other) => return Err(other.into()),
        }
        self.store
            .get_volume_type(id)
            .await?
            .ok_or_else(|| type_not_found(id))
    }

    pub async fn update_volume_type(
        &self,
        caller: &RequestContext,
        id: &str,
        update: VolumeTypeUpdate,
    ) -> Result<VolumeType, DomainError> {
        self.policy
            .enforce(rules::TYPE_UPDATE, caller, &Target::caller(caller))?;
        if update.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
            return Err(TypeError::NameEmpty.into());
        }
        if update.name.is_none() && update.description.is_none() && update.is_public.is_none() {
            return Err(TypeError::UpdateEmpty.into());
        }
        let uuid = VolumeTypeId::parse(id).ok_or_else(|| type_not_found(id))?;
        match self
            .store
            .update_volume_type(uuid, &update, self.clock.now())
            .await
        {
            Ok(Outcome::Done(())) => {}
            Ok(_) => return Err(type_not_found(id)),
            Err(StoreError::Conflict(_)) => {
                return Err(TypeError::Exists(update.name.unwrap_or_default()).into())
            }
            Err(other) => return Err(other.into()),
        }
        self.store
            .get_volume_type(uuid)
            .await?
            .ok_or_else(|| type_not_found(id))
    }

    pub async fn delete_volume_type(
        &self,
        caller: &RequestContext,
        id: &str,
    ) -> Result<(), DomainError> {
        self.policy
            .enforce(rules::TYPE_DELETE, caller, &Target::caller(caller))?;
        let uuid = VolumeTypeId::parse(id).ok_or_else(|| type_not_found(id))?;
        let found = self
            .store
            .get_volume_type(uuid)
            .await?
            .ok_or_else(|| type_not_found(id))?;
        if found.name == self.settings.default_volume_type {
            return Err(TypeError::DefaultUndeletable(found.id).into());
        }
        match self
            .store
            .delete_volume_type(uuid, self.clock.now())
            .await?
        {
            Outcome::Done(()) => Ok(()),
            Outcome::Refused(TypeDeleteRefusal::InUse) => Err(TypeError::StillInUse.into()),
            Outcome::Refused(TypeDeleteRefusal::ProjectDefault) => {
                Err(TypeError::DefaultUndeletable(found.id).into())
            }
            Outcome::Gone => Err(type_not_found(id)),
        }
    }

    /// The specs of a type, as much of them as the caller may read.
    pub async fn list_extra_specs(
        &self,
        caller: &RequestContext,
        type_id: &str,
    ) -> Result<ExtraSpecs, DomainError> {
        self.policy
            .enforce(rules::EXTRA_SPECS_INDEX, caller, &Target::caller(caller))?;
        let found = self.get_type_for_specs(caller, type_id).await?;
        Ok(self.readable_specs(caller, &found.extra_specs))
    }

    pub async fn show_extra_spec(
        &self,
        caller: &RequestContext,
        type_id: &str,
        key: &str,
    ) -> Result<Option<String>, DomainError> {
        self.policy
            .enforce(rules::EXTRA_SPECS_SHOW, caller, &Target::caller(caller))?;
        let found = self.get_type_for_specs(caller, type_id).await?;
        self.readable_specs(caller, &found.extra_specs)
            .remove(key)
            .ok_or_else(|| spec_not_found(type_id, key))
    }

    fn readable_specs(&self, caller: &RequestContext, specs: &ExtraSpecs) -> ExtraSpecs {
        let all = self.policy.allows(
            rules::EXTRA_SPECS_READ_SENSITIVE,
            caller,
            &Target::caller(caller),
        );
        let visibility = if all {
            SpecVisibility::All
        } else {
            SpecVisibility::UserVisible
        };
        visibility.filter(specs).unwrap_or_default()
    }

    async fn get_type_for_specs(
        &self,
        caller: &RequestContext,
        type_id: &str,
    ) -> Result<VolumeType, DomainError> {
        let uuid = VolumeTypeId::parse(type_id).ok_or_else(|| type_not_found(type_id))?;
        self.visible_type(caller, uuid)
            .await?
            .ok_or_else(|| type_not_found(type_id))
    }

    /// Adds or replaces specs (`POST .../extra_specs`, or `PUT .../extra_specs/{key}`
    /// with the `named_key`).
    pub async fn set_extra_specs(
        &self,
        caller: &RequestContext,
        type_id: &str,
        specs: ExtraSpecs,
        named_key: Option<&str>,
        rule: &'static str,
    ) -> Result<ExtraSpecs, DomainError> {
        self.policy.enforce(rule, caller, &Target::caller(caller))?;
        let uuid = VolumeTypeId::parse(type_id).ok_or_else(|| type_not_found(type_id))?;
        check_sharing_specs(&specs).map_err(invalid_spec)?;
        match self
            .store
            .set_extra_specs(uuid, &specs, named_key, self.clock.now())
            .await?
        {
            Outcome::Done(()) => Ok(specs),
            Outcome::Refused(ExtraSpecsRefusal::TypeInUse) => Err(TypeError::InUse.into()),
            Outcome::Refused(ExtraSpecsRefusal::CacheableWithMultiattach) => {
                Err(TypeError::CacheableWithMultiattach.into())
            }
            Outcome::Gone => Err(type_not_found(type_id)),
        }
    }

    pub async fn delete_extra_spec(
        &self,
        caller: &RequestContext,
        type_id: &str,
        key: &str,
    ) -> Result<(), DomainError> {
        self.policy
            .enforce(rules::EXTRA_SPECS_DELETE, caller, &Target::caller(caller))?;
        let uuid = VolumeTypeId::parse(type_id).ok_or_else(|| type_not_found(type_id))?;
        match self
            .store
            .delete_extra_spec(uuid, key, self.clock.now())
            .await?
        {
            Outcome::Done(()) => Ok(()),
            Outcome::Refused(SpecRemovalRefusal::TypeInUse) => Err(TypeError::InUse.into()),
            Outcome::Refused(SpecRemovalRefusal::NoSuchKey) => Err(spec_not_found(type_id, key)),
            Outcome::Gone => Err(type_not_found(type_id)),
        }
    }

    /// The projects that may use private type `type_id` (admins).
    pub async fn list_type_access(
        &self,
        caller: &RequestContext,
        type_id: &str,
    ) -> Result<VolumeType, DomainError> {
        self.policy
            .enforce(rules::TYPE_ACCESS_LIST, caller, &Target::caller(caller))?;
        let found = self.get_type_for_specs(caller, type_id).await?;
        if found.is_public {
            return Err(TypeError::AccessOfPublicType { listing: true }.into());
        }
        Ok(found)
    }

    /// `addProjectAccess` (`grant`) or `removeProjectAccess` of a private type.
    pub async fn change_type_access(
        &self,
        caller: &RequestContext,
        type_id: &str,
        project: &str,
        grant: bool,
    ) -> Result<(), DomainError> {
        let rule = if grant {
            rules::TYPE_ACCESS_ADD
        } else {
            rules::TYPE_ACCESS_REMOVE
        };
        self.policy.enforce(rule, caller, &Target::caller(caller))?;
        let found = self.get_type_for_specs(caller, type_id).await?;
        if found.is_public {
            return Err(TypeError::AccessOfPublicType { listing: false }.into());
        }
        let now = self.clock.now();
        let outcome = if grant {
            self.store.add_type_access(found.id, project, now).await?
        } else {
            self.store
                .remove_type_access(found.id, project, now)
                .await?
        };
        let (volume_type, project) = (found.id, project.to_owned());
        match outcome {
            Outcome::Done(()) => Ok(()),
            Outcome::Refused(TypeAccessRefusal::Exists) => Err(TypeError::AccessExists {
                volume_type,
                project,
            }
            .into()),
            Outcome::Refused(TypeAccessRefusal::Missing) => Err(TypeError::AccessNotFound {
                volume_type,
                project,
            }
            .into()),
            Outcome::Gone => Err(type_not_found(type_id)),
        }
    }
}

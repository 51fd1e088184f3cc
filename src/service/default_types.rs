//! Projects' own default volume types (3.62): set, read, list and unset by an admin; a
//! volume made without a type takes its project's before the deployment's.

use super::Service;
use crate::domain::error::TypeError;
use crate::domain::volume_type::{ProjectDefaultType, VolumeType};
use crate::domain::{DomainError, Outcome, RequestContext};
use crate::policy::{rules, Target};

impl Service {
    /// Makes the type named `name_or_id` (any live type: the caller is an admin) the
    /// default of `project`.
    pub async fn set_project_default_type(
        &self,
        caller: &RequestContext,
        project: &str,
        name_or_id: &str,
    ) -> Result<ProjectDefaultType, DomainError> {
        self.policy
            .enforce(rules::DEFAULT_TYPE_SET, caller, &Target::project(project))?;
        let not_a_type = |e| DomainError::from(TypeError::DefaultNotAType(Box::new(e)));
        let found = self
            .resolve_volume_type(caller, name_or_id)
            .await
            .map_err(|e| match e {
                e @ (DomainError::VolumeTypeNotFound(_)
                | DomainError::VolumeTypeNameNotFound(_)) => not_a_type(e),
                other => other,
            })?;
        match self
            .store
            .set_project_default_type(project, found.id, self.clock.now())
            .await?
        {
            Outcome::Done(set) => Ok(set),
            // Deleted between the lookup and the write.
            Outcome::Gone => Err(not_a_type(DomainError::VolumeTypeNotFound(
                name_or_id.to_owned(),
            ))),
            Outcome::Refused(never) => match never {},
        }
    }

    pub async fn get_project_default_type(
        &self,
        caller: &RequestContext,
        project: &str,
    ) -> Result<ProjectDefaultType, DomainError> {
        self.policy
            .enforce(rules::DEFAULT_TYPE_GET, caller, &Target::project(project))?;
        self.store
            .project_default_type(project)
            .await?
            .ok_or_else(|| TypeError::ProjectDefaultNotFound(project.to_owned()).into())
    }

    pub async fn list_project_default_types(
        &self,
        caller: &RequestContext,
    ) -> Result<Vec<ProjectDefaultType>, DomainError> {
        self.policy
            .enforce(rules::DEFAULT_TYPE_GET_ALL, caller, &Target::caller(caller))?;
        Ok(self.store.list_project_default_types().await?)
    }

    /// Removes `project`'s default; one it never had is no error (Cinder's 204 either way).
    pub async fn unset_project_default_type(
        &self,
        caller: &RequestContext,
        project: &str,
    ) -> Result<(), DomainError> {
        self.policy
            .enforce(rules::DEFAULT_TYPE_UNSET, caller, &Target::project(project))?;
        Ok(self.store.unset_project_default_type(project).await?)
    }

    /// The type a volume of `project` made without one gets: the project's own default,
    /// else the deployment's `default_volume_type`.
    pub async fn default_volume_type(&self, project: &str) -> Result<VolumeType, DomainError> {
        if let Some(own) = self.store.project_default_type(project).await? {
            if let Some(found) = self.store.get_volume_type(own.volume_type_id).await? {
                return Ok(found);
            }
        }
        let name = &self.settings.default_volume_type;
        self.store
            .get_volume_type_by_name(name)
            .await?
            .ok_or_else(|| DomainError::VolumeTypeNameNotFound(name.clone()))
    }
}

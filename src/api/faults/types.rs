//! Volume types' faults: Cinder's words for types, their specs, access lists and
//! projects' default types.

use super::super::error::ApiError;
use super::invalid_input;
use crate::domain::error::TypeError;

pub(super) fn fault(error: TypeError) -> ApiError {
    use TypeError as E;
    match error {
        E::Exists(name) => ApiError::Conflict(format!("Volume Type {name} already exists.")),
        E::InUse => ApiError::BadRequest("Volume Type is currently in use.".to_owned()),
        E::StillInUse => ApiError::BadRequest("Target volume type is still in use.".to_owned()),
        E::NameEmpty => ApiError::BadRequest("Volume type name can not be empty.".to_owned()),
        E::UpdateEmpty => ApiError::BadRequest(
            "Specify volume type name, description, is_public or a combination thereof.".to_owned(),
        ),
        E::DefaultUndeletable(id) => ApiError::BadRequest(format!(
            "The volume type {id} is a default volume type and cannot be deleted."
        )),
        E::DefaultNotAType(lookup) => match ApiError::from(*lookup) {
            ApiError::NotFound(text) => ApiError::BadRequest(text),
            other => other,
        },
        E::ProjectDefaultNotFound(project) => {
            ApiError::NotFound(format!("Default type for project {project} not found."))
        }
        E::InvalidExtraSpec {
            key,
            value,
            expected,
        } => invalid_input(format!(
            "extra spec {key} must be {expected}, not {}.",
            value.map_or("null".to_owned(), |v| format!("'{v}'"))
        )),
        E::AccessExists {
            volume_type,
            project,
        } => ApiError::Conflict(format!(
            "Volume type access for {volume_type} / {project} combination already exists."
        )),
        E::AccessNotFound {
            volume_type,
            project,
        } => ApiError::NotFound(format!(
            "Volume type access not found for {volume_type} / {project} combination."
        )),
        E::AccessOfPublicType { listing: true } => {
            ApiError::NotFound("Access list not available for public volume types.".to_owned())
        }
        E::AccessOfPublicType { listing: false } => ApiError::BadRequest(
            "Invalid volume type: Type access modification is not applicable to public \
             volume type."
                .to_owned(),
        ),
        E::CacheableWithMultiattach => {
            ApiError::BadRequest("cacheable cannot be set with multiattach.".to_owned())
        }
    }
}

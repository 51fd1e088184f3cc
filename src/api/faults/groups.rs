//! How group and group type errors look on the wire: Cinder's statuses and texts.

use crate::api::error::ApiError;
use crate::domain::error::GroupError;

pub(super) fn fault(err: GroupError) -> ApiError {
    use GroupError as E;
    match err {
        E::TypeNotFound(id) => ApiError::NotFound(format!("Group type {id} could not be found.")),
        E::TypeNameNotFound(name) => {
            ApiError::NotFound(format!("Group type with name {name} could not be found."))
        }
        E::NoDefaultType => ApiError::NotFound("Default group type can not be found.".into()),
        E::TypeExists(name) => ApiError::Conflict(format!("Group Type {name} already exists.")),
        E::SpecNotShown { type_id, key } => ApiError::NotFound(format!(
            "Group Type {type_id} has no extra spec with key {key}."
        )),
        E::SpecNotFound { type_id, key } => {
            ApiError::NotFound(format!("Group Type {type_id} has no specs with key {key}."))
        }
        E::InvalidTypeUpdate(why) => ApiError::BadRequest(why.to_owned()),
        E::SpecBodyMismatch => ApiError::BadRequest("Request body and URI mismatch".into()),
        E::TypeInUse(id) => ApiError::BadRequest(format!(
            "Group Type {id} deletion is not allowed with groups present with the type."
        )),
        E::NotFound(id) => ApiError::NotFound(format!("Group {id} could not be found.")),
        E::Invalid(reason) => ApiError::BadRequest(format!("Invalid Group: {reason}")),
        E::InvalidMember(reason) => ApiError::BadRequest(format!("Invalid volume: {reason}")),
        E::InvalidStatus(reason) => ApiError::BadRequest(format!("Invalid Group Status: {reason}")),
        E::SnapshotNotFound(id) => {
            ApiError::NotFound(format!("GroupSnapshot {id} could not be found."))
        }
        E::InvalidSnapshot(reason) => {
            ApiError::BadRequest(format!("Invalid GroupSnapshot: {reason}"))
        }
        E::InvalidSnapshotStatus(reason) => {
            ApiError::BadRequest(format!("Invalid GroupSnapshot Status: {reason}"))
        }
        E::InvalidInput(reason) => {
            ApiError::BadRequest(format!("Invalid input received: {reason}"))
        }
    }
}
